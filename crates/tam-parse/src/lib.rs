//! Zero-copy streaming decoder for TAM (Tavern Action Manifest) tool calls in LLM output,
//! and the block scanner every protocol of the workspace shares.
//!
//! Feed the model's output as it arrives — `&str` deltas or `&[u8]` deltas of any size —
//! and get prose back as [`Event::Text`] and each `<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`
//! block as an [`Event::Block`] of [`Call`]s, from the very `feed` that delivers the end
//! marker's last byte.
//!
//! # Example
//!
//! ```
//! use tam_parse::{Config, Decoder, Event};
//!
//! let mut decoder = Decoder::new(Config::default());
//! let mut calls = Vec::new();
//! let mut text = String::new();
//! for delta in ["I'll read it.\n<|[REQUEST", "_TOOL]|>\ncommand:「始」File.Read「末」\n",
//!               "path:「始」/tmp/a.txt「末」\n<|[END_TOOL]|>", " Done."] {
//!     decoder.feed(delta, |event| match event {
//!         Event::Text { text: t, .. } => text.push_str(&t),
//!         Event::Block(block) => calls.extend(block.calls),
//!         _ => {}
//!     });
//! }
//! decoder.finish(|event| if let Event::Text { text: t, .. } = event { text.push_str(&t) });
//!
//! assert_eq!(text, "I'll read it.\n Done.");
//! assert_eq!(&*calls[0].tool, "File.Read");
//! assert_eq!(calls[0].get("path"), Some("/tmp/a.txt"));
//! ```
//!
//! # The protocol
//!
//! Entries `key:「始」value「末」` (or `「始ESCAPE」…「末ESCAPE」` for a value that
//! contains `「末」`), `#` comment lines, chained calls `command1`, `command2`, … with
//! suffixed parameters, keys matched by their canonical form (lowercase, `_` and `-`
//! removed). [`Dialect::Vcp`] reads VCPToolBox's `<<<[TOOL_REQUEST]>>>` blocks. Every
//! problem is a [`Diagnostic`] with a stable [`Code`]; nothing the model wrote is dropped
//! silently: it is text, part of a call, or inside a diagnostic.
//!
//! # How a block becomes calls
//!
//! * **Chained** — some key canonicalises to `command<digits>`: `commandN` opens call N,
//!   a key ending in the digits of an existing call belongs to it (suffix stripped), the
//!   rest to call 0 (an unsuffixed `command`) or error `orphan_parameter`; calls run in
//!   ascending number. A key given twice in one call: the last value wins, warning
//!   `duplicate_parameter`.
//! * **Without chain numbers** — calls follow one another in the order written. Models
//!   list several calls of one tool by repeating keys, so a repeated key starts a new
//!   call, with warning `implicit_call` (span: the key):
//!   ```text
//!   command:「始」spotify_play「末」   call 0: spotify_play
//!   artist:「始」Taylor Swift「末」    call 0
//!   duration:「始」20「末」            call 0
//!   artist:「始」Maroon 5「末」        artist again: call 1, spotify_play again
//!   duration:「始」15「末」            call 1
//!   command:「始」clock「末」          a second command: call 2, clock
//!   ```
//!   - a `command` after the first starts a call of the tool it names;
//!   - a parameter key the current call already has (compared canonically: `filePath`,
//!     `file_path` and `FILEPATH` are one key) starts another call of the current call's
//!     tool; the new call's [`Call::span`] is then the command entry of the call it
//!     repeats;
//!   - parameters written before the first `command` belong to the first call (the call
//!     that command names); a key given twice there has no tool to repeat yet, so the
//!     last value wins, warning `duplicate_parameter`;
//!   - [`Call::index`] is the call's place in the block, from 0.
//!
//!   The decoder knows no schema. A reader that does may read a repeat back: tool-dispatch's
//!   `ToolCall::from_tam_block_with` (used by `tam run` and `tam serve`) takes a call
//!   started by a repeated key whose every value is one more item of a parameter the tool
//!   declares an array (`information:「始」Elevation「末」`, then `information:「始」Area「末」`)
//!   as those items of the call before it, as ACTION reads an element written twice.
//!
//!   No key, once read, is read again to decide this: each key is hashed by its canonical
//!   form when it is read and looked up among the current call's keys (O(1) per entry), so
//!   [`Event::CommandSeen`] announces a new call before its first value streams.
//! * **VCP** — one call per block, named by `tool_name`; every other key is a parameter;
//!   a key given twice: the last wins, `duplicate_parameter`.
//!
//! In every form, a blank command drops its call (`empty_command`, also for the calls that
//! repeat it), and a block without any command has no calls (`missing_command`).
//!
//! # Blocks that never close, cut streams, what small models write
//!
//! * A block that never closes (end of stream, [`Decoder::finish_cut`], or a second start
//!   marker) yields **no call**, ever. Without a complete entry it was a
//!   marker mentioned in prose: its bytes, marker included, come out as [`Event::Text`] in
//!   stream order, then a warning `marker_in_prose` (span: the marker). With one, it is
//!   error `unterminated_block` carrying its raw text. [`Event::BlockStart`] (and any
//!   streamed argument) came before and is superseded.
//! * A block that closes but holds **no entry at all** (markers around prose: "write
//!   `<|[REQUEST_TOOL]|>` then your entries, then `<|[END_TOOL]|>`", an empty block, a line
//!   like `tool: get_weather` without values) is prose the same way: its text, then
//!   `marker_in_prose`. A block with any entry stays a block (with `missing_command` when
//!   none names the tool).
//! * The end-of-stream recovery (`missing_value_close`) applies at [`Decoder::finish`]
//!   only, never at [`Decoder::finish_cut`] (no repair on a cut stream).
//! * A `「始」`/`「始ESCAPE」` with no key before it opens no value: it is stray text
//!   (`stray_text`), and the end marker after it still closes the block.
//! * Bare brackets: `KEY:「VALUE」` (no `始`/`末`) inside a block is read as that value,
//!   which runs to the last `」` before the end of the line, warning `bare_brackets`.
//!   Never across a line break, never outside a block.
//!
//! # Quoted markers, fenced blocks, reasoning
//!
//! Models quote markers and show examples; only a marker the model *uses* opens a block
//!. The scanner tracks where in the markdown of the prose it is, in a few
//! counters (O(1) state, the same whatever the deltas — a backtick, a `>`, a fence or a
//! `<think>` tag may be split anywhere):
//!
//! * **Inline code.** A run of `n` backticks opens a code span that the next run of
//!   exactly `n` backticks on the same line closes; a line break ends it. A start marker
//!   inside an open span is prose: warning `marker_in_prose` (span: the marker), then the
//!   marker as [`Event::Text`], and everything after it streams as text, so the quoted
//!   block is text from its marker to its end marker (an end marker outside a block is
//!   prose). "Never write `` `<|[REQUEST_TOOL]|>…<|[END_TOOL]|>` `` unless asked" runs
//!   nothing.
//! * **`>` lines.** A line whose first non-blank character is `>` (an email, a message the
//!   user pasted) is quoted: a start marker on it is prose, as above.
//! * **Code fences.** A line whose first non-blank text, indented by at most 3 columns (a
//!   tab counts 4), is a run of 3 or more backticks or tildes opens a fenced code block; a
//!   line of at least as many of the same character, then blanks only, closes it. A block
//!   inside a fence **is** a call (models wrap real calls in fences far more often than they
//!   show examples), with warning `fenced_block` first in its diagnostics (span: the fence's
//!   opening line, to the block when the block is on that line). Inside a fence there is no
//!   inline code and no `>` quotation.
//! * **Reasoning** ([`Config::reasoning_tags`], opt-in here; action-xml's front door turns
//!   it on). A `<think>` or `<thinking>` tag (ASCII case-insensitive, blanks allowed inside)
//!   that is the first non-blank text of a prose line outside a code fence opens a reasoning
//!   section, up to its matching close tag (`</think>`, `</thinking>`) or the end of the
//!   stream: [`Event::ReasoningStart`] (the tag), [`Event::Reasoning`] pieces (its content,
//!   borrowed, as early as possible: only a possible close tag is held back) and
//!   [`Event::ReasoningEnd`] (the close tag; none when the stream ends inside). Markers in
//!   reasoning open nothing. The tag must begin a line because that is where models write
//!   it — at the very start of the reply, sometimes after blank lines — while a `<think>`
//!   in the middle of a sentence is prose about the tag; so is `<thinking` without its `>`.
//!
//! A block or a reasoning section ends the line's inline code and quotation (what follows
//! it on the line is mid-line text); an open fence stays open across blocks. The prose
//! context is read only outside blocks: a restart marker inside an unclosed TAM block
//! opens the next block whatever the prose around it.
//!
//! # Argument streaming
//!
//! With [`Config::param_events`] on (the default), [`Event::ParamStart`] (key as written), [`Event::ParamText`] pieces and
//! [`Event::ParamEnd`] (span = the entry = [`Param::span`]) report each entry while it is
//! written; [`Event::CommandSeen`] is the "call begins" event. Pieces borrow the block
//! buffer (no allocation per delta) and, concatenated, equal the entry's value exactly.
//! In a block without chain numbers a value belongs to the call of the last
//! `CommandSeen` before its `ParamStart` (call 0 before any): a call started by a repeated
//! key is announced before that key's `ParamStart`, identically however the stream is
//! split. TAM has no call-end event: which call a chained key belongs to is decided at the
//! block end, and the [`Event::Block`] is authoritative — also over the calls announced
//! while a block was read as one without chain numbers and a `commandN` came later.
//!
//! # Decisions
//!
//! * A value is streamed as it is decided, holding back what may still begin `「末」` (or
//!   `「末ESCAPE」`) **and** what the end-of-stream recovery could still cut from it: from
//!   the first end marker inside the value on, a tail that may begin an end marker, and
//!   the blanks before either. So pieces never have to be taken back, even when the
//!   stream ends inside the value. At most `max_block_bytes` of a block is streamed.
//! * A bare-bracket value's entry is reported (its `Param*` events in one go) when the
//!   text around it is read: at the next value's opener or at the block end.
//! * `KEY:「末」` is a close marker out of place, not a bare value `末` (stray text).
//! * A bare value ends at the end of its segment too: the next accepted value opener or
//!   the end marker, even mid-line.
//! * Entries dropped for a long key count as complete entries (the block that never closes
//!   is then `unterminated_block`, not prose).
//! * In a block that never closes and is given back as prose, invalid UTF-8 stays where it
//!   was: text pieces around `invalid_utf8` diagnostics, which tile the stream.
//! * Argument streaming is on by default ([`Config::param_events`]), as in action-xml and
//!   the front door: one default for the switch in every crate. A consumer that wants
//!   whole blocks only turns it off and pays nothing for it.
//!
//! # What is borrowed, what is held back
//!
//! * [`Event::Text`] borrows from the delta just fed — or from the decoder for prose that
//!   was held back. After each delta the decoder holds back only bytes that may still begin
//!   a start marker (fewer than its length: 17 bytes for TAM, 19 for VCP; with
//!   [`Config::reasoning_tags`], also a possible `<thinking>` tag, and inside reasoning a
//!   possible close tag: at most 34 bytes, as tags allow blanks) plus, for byte
//!   deltas, an incomplete UTF-8 character (at most 3 bytes).
//! * A block's bytes are copied once, into one buffer; on close it becomes a
//!   [`bytes::Bytes`]-backed [`bytestring::ByteString`] and every tool id, key and value is
//!   a slice of it: no copy per value. [`Block`]s own their data and may outlive the
//!   decoder (spawn the calls while the stream goes on).
//! * No allocation per delta: events are passed to a callback. Allocations happen per block
//!   (its buffer, its calls) and per diagnostic.
//!
//! # Limits ([`Config`])
//!
//! | limit | default | past it |
//! |---|---|---|
//! | `max_block_bytes` | 1 MiB | error `block_too_large`; the block's bytes are dropped up to its end marker; memory stays under the limit + 64 KiB |
//! | `max_calls` | 64 | error `too_many_calls`; later calls dropped |
//! | `max_key_len` | 128 bytes | error `key_too_long`; the entry is dropped (kept in the diagnostic) |
//!
//! [`Config::param_events`] (default `true`) turns argument streaming off,
//! [`Config::reasoning_tags`] (default `false`) reasoning sections.
//!
//! An idle decoder is at most 256 bytes (a test checks `size_of::<Decoder>()`) plus its
//! buffer, which is empty until prose is held back or a block opens.
//!
//! # Complexity
//!
//! O(n) in the stream length whatever the delta sizes: the scanner keeps its resume point
//! on the struct, and a marker candidate undecided at the end of a delta is looked at again
//! at most once more per delta, for at most the marker's length. Searches are
//! `memchr`/`memmem`. Inside a block, the text between values is read once more to find
//! keys (and each key once more to hash its canonical form), and each value once more to
//! check for a stray `「始」` (and, while it streams, once to find an end marker in it). Many blocks in one delta stay O(n): a block's pushes
//! grow geometrically from 256 bytes, so bytes copied past its end marker stay within
//! twice its size (the test `many_blocks_in_one_delta_cost_the_same_per_block` checks the
//! bytes allocated per block for 1 to 1000 blocks in one delta).
//!
//! # Input safety
//!
//! No input makes the decoder panic (fuzzed; any panic is a critical bug), and no `unsafe`
//! code is used (`#![forbid(unsafe_code)]`).
//!
//! # The shared scanner
//!
//! [`scan`] holds the block scanner: configurable start/end [`scan::Pattern`]s (exact, or
//! XML-like tags matched case-insensitively with blanks) and [`scan::Region`]s inside
//! blocks where markers are content. `action-xml` builds on it; a [`scan::Grammar`] with
//! several syntaxes scans several protocols in one stream.
//!
//! # Serde
//!
//! With feature `serde`, every type a decoder reports is `serde::Serialize`, and the owned
//! ones are `serde::Deserialize` too (a JSON round trip gives back an equal value). The
//! forms are what a JSON consumer reads, and `tam decode`'s lines are built
//! from them:
//!
//! | type | form |
//! |---|---|
//! | [`Span`] | `[start, end]` (refused when `start > end`) |
//! | [`Severity`] | `"warning"` or `"error"` |
//! | [`Code`] | its name, `"stray_text"` |
//! | [`Diagnostic`] | `{"severity", "code", "message", "span", "raw"}`, `raw` left out when there is none |
//! | [`Param`] | `{"key", "canonical", "value", "span"}` |
//! | [`Call`] | `{"index", "tool", "params", "span"}` |
//! | [`Block`] | `{"span", "calls", "diagnostics", "raw"}` |
//! | [`Event`] | `{"type": "text" \| "block_start" \| "param_start" \| "param_text" \| "param_end" \| "command_seen" \| "block" \| "diagnostic", …}`: the variant's fields, or the block's or diagnostic's |
//! | [`Dialect`] | `"tam"` or `"vcp"` |
//! | [`ByteString`] | a string |
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use tam_parse::{Config, Event, decode};
//!
//! let events = decode("Hi <|[REQUEST_TOOL]|>command:「始」Now「末」<|[END_TOOL]|>", Config::default());
//! assert_eq!(
//!     serde_json::to_string(&events[0]).unwrap(),
//!     r#"{"type":"text","text":"Hi ","span":[0,3]}"#
//! );
//! let Some(Event::Block(block)) = events.last() else { panic!("no block") };
//! assert_eq!(
//!     serde_json::to_value(&block.calls[0]).unwrap(),
//!     serde_json::json!({"index": 0, "tool": "Now", "params": [], "span": [21, 50]})
//! );
//! let back: Vec<Event<'static>> =
//!     serde_json::from_str(&serde_json::to_string(&events).unwrap()).unwrap();
//! assert_eq!(back, events);
//! # }
//! ```
//!
//! Decisions:
//!
//! * A [`ByteString`] is a JSON string. It is UTF-8 by construction: invalid UTF-8 never
//!   reaches a value, key or raw text (a block's buffer holds U+FFFD in its place; the
//!   bytes themselves are written in hex in the `invalid_utf8` diagnostic's message).
//!   Deserializing copies the string into a new buffer; the zero-copy slicing of the
//!   block buffer is a property of decoding, not of the wire form.
//! * [`Event`] deserializes too, into owned text and keys (`Cow::Owned`): borrowing from
//!   the JSON input would make `Event<'static>` unreadable with `from_reader` or
//!   `from_value` (it would not be `DeserializeOwned`), and a consumer that reads events
//!   back usually keeps them. Serializing a borrowed event writes exactly what its
//!   [`Event::into_owned`] writes.
//! * [`Code`] holds a `&'static str`: a name that is not one of this crate's is interned
//!   once per process (at most 1024 names of at most 64 bytes; see [`Code`]).
//!
//! # Crate features
//!
//! * `serde` — `Serialize` / `Deserialize` for the types above (see "Serde").
//! * `codec` — [`codec::TamCodec`], a `tokio_util::codec::Decoder` (bytes in, owned
//!   events out).
//! * `stream` — [`stream::EventStream`], a `futures_core::Stream` of owned events over a
//!   stream of text deltas (the shape async-openai, genai and ollama-rs deliver).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
// docs.rs (nightly, `--cfg docsrs`) marks items behind a feature; stable builds ignore it.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod block;
#[cfg(feature = "codec")]
pub mod codec;
mod decoder;
mod diagnostic;
pub mod drive;
mod entry;
mod render;
pub mod scan;
#[cfg(feature = "stream")]
pub mod stream;

pub use block::{Block, Call, Param};
pub use bytestring::ByteString;
pub use decoder::{
    BlockParser, Config, Decoder, Dialect, ESCAPE_CLOSE, ESCAPE_OPEN, Event, VALUE_CLOSE,
    VALUE_OPEN, decode,
};
pub use diagnostic::{Code, Diagnostic, Severity, Span, preview};
pub use drive::StreamDecoder;
pub use entry::canonical_key;
pub use render::{RenderError, render_block, render_call};

/// This crate's README example, compiled and run as a doctest (the workspace README's
/// run in tam-testkit: it is not part of this package).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
