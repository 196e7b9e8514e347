//! Streaming decoder for `<ACTION>` XML tool calls in LLM output, with a one-shot parser,
//! a renderer, and the ACTION layer ([`ActionLayer`]) for decoders that scan other
//! protocols too. Blocks are found by tam-parse's shared block scanner. A well-formed body in the plain subset models write
//! is read straight by a tokenizer of that subset, without a DOM; any other is parsed by
//! roxmltree, after
//! a pre-scan that enforces limits and repairs the mistakes models make.
//!
//! # Example
//!
//! ```
//! use action_xml::{Config, Decoder, Event};
//!
//! let mut decoder = Decoder::new(Config::default());
//! let mut text = String::new();
//! let mut calls = Vec::new();
//! for delta in ["Let me check.\n<ACT", "ION>\n  <ReadWorldStateTool>\n    <path>env.weather</path>\n",
//!               "    <tags><item>a</item><item>b &amp; c</item></tags>\n  </ReadWorldStateTool>\n</ACTION>"] {
//!     decoder.feed(delta, |event| match event {
//!         Event::Text { text: t, .. } => text.push_str(&t),
//!         Event::Block(block) => calls.extend(block.calls),
//!         _ => {}
//!     });
//! }
//! decoder.finish(|_| {});
//!
//! assert_eq!(text, "Let me check.\n");
//! assert_eq!(calls[0].tool, "ReadWorldStateTool");
//! assert_eq!(calls[0].get_str("path"), Some("env.weather"));
//! assert_eq!(calls[0].args["tags"], serde_json::json!(["a", "b & c"]));
//! ```
//!
//! # Which reader runs when
//!
//! Four readers look at a block's bytes; each exists for one job. The streamer and the
//! direct reader tell a tag from text with one lexer (`tags.rs`: a start or close tag at
//! a `<`, taken as the pre-scan takes it), so the two never disagree on where a tag is;
//! all readers share the character classes of `xml_chars.rs`, where the XML whitespace set
//! is stated once.
//!
//! | reader | runs | why |
//! |---|---|---|
//! | the scanner (tam-parse) | on every byte of the stream | finds `<ACTION>` … `</ACTION>` (and, given tool names, the call elements written without it), CDATA and comments, the prose context (inline code, `>` lines, fences) and reasoning; holds the open block |
//! | the streamer (`stream/`) | while a block is open, on what each delta settled, when argument events are on | reports calls and value pieces as the model writes them; a light reading, never what runs |
//! | the direct reader (`tree/direct/`) | when a block closes, first | reads a well-formed body in the plain subset in one pass, without a DOM, and — for a block nothing of which streamed — gives its argument events too, so it is read once |
//! | the pre-scan (`prescan/`) and roxmltree (`tree/`) | when the direct reader refuses the body | roxmltree alone for a body that needs no repair; else the pre-scan enforces the depth limit iteratively and repairs what models get wrong, and roxmltree parses the result; the tree gives the calls and the positions of errors |
//!
//! A block's reading (`block/`) picks among the last two and turns what they found into
//! the [`ActionBlock`] or a prose mention (`block/report.rs`: mentions, cut blocks,
//! repairs, XML errors at their line and column). The layer ([`ActionLayer`], `decoder.rs`)
//! connects the scanner's callbacks to the streamer and the block reading.
//!
//! # The protocol
//!
//! * `<ACTION>` … `</ACTION>`, ASCII case-insensitive, blanks allowed inside the tags
//!   (`noncanonical_tag` warns). Prose before the first block is the response text and
//!   streams out as [`Event::Text`] as it arrives; prose after it is trailing text. A
//!   `</ACTION>` inside a CDATA section or a comment does not close the block.
//! * Each child element of ACTION is one [`ActionCall`], in document order; the tool id is
//!   the tag name as written, prefix included (`workflow:summarize_text` parses although
//!   the prefix is undeclared). A parameter without child elements is a string (entities
//!   decoded, trimmed of XML whitespace); one holding CDATA is the CDATA text verbatim,
//!   except a line break right after `<![CDATA[` and the blanks after the last line break
//!   before `]]>`. Children all named `item` make an array; other children an object, a
//!   repeated name an array. A parameter whose content mixes non-blank text with child
//!   elements is code or markup (`let s = "<b>x</b>";`, JSX, HTML): a **string**, its
//!   inner text as written (markup kept, entity references decoded, trimmed as a leaf).
//!   Inside a value a `<` that opens an element never closed there (`Vec<String>`,
//!   `a < b`, `HashMap<String, bool>`) is text and costs no depth. Attributes are ignored (`ignored_attribute`), non-blank text
//!   between calls too (`stray_text`).
//! * Every block is reported; the second and later carry `extra_action_block` (by default
//!   only the first runs). A block's calls come out of the very `feed` that delivers
//!   `</ACTION>`.
//! * An `<ACTION>` element directly inside a block means the block's own `<ACTION>` was a
//!   mention in prose (`I will write an <ACTION> block:`) and the real block followed: its
//!   children are read as the calls (`nested_action_tag`). An `<ACTION>` inside a value is
//!   text like any other unclosed tag there.
//!
//! # Repairs
//!
//! Each repair is a warning with a stable code ([`codes`]): a bare `&`, or an entity
//! reference that would need a DTD (`bare_ampersand`); a `<` inside a parameter value that
//! begins no element, as in `<code>if a < b</code>`, an element left unclosed when its
//! parent closes (`Vec<String>`) or a close tag that matches nothing in a value that then
//! closes properly (`unescaped_lt`); a parameter whose close tag never came before its
//! call's, holding one close tag that matched nothing: that misspelt tag closed it
//! (`<date>March 10</room>`, `mismatched_close_tag`); `]]>` in text (`unescaped_gt`); undeclared namespace
//! prefixes (`undeclared_prefix`); a missing `</ACTION>` at the end of the stream when
//! every call element in the block closed and no tag was cut off (see "A block the stream
//! ended in"), or elements left open at the end of a closed
//! block (`missing_close_tag`: what arrived is parsed), or a parameter never closed before
//! its call's close tag, holding no close tag that matched nothing: it ends there
//! (`<days>100</get_effect>`, `missing_close_tag`); markdown code fence lines inside the block (`code_fence`); `<action>`,
//! `< ACTION >`, close tags that match only ignoring case, and close tags with blanks
//! between `</` and the name (`</ get_weather>`: read as `</get_weather>` where that closes
//! an open element, text elsewhere) (`noncanonical_tag`).
//! Comments and processing instructions are dropped. A `<` problem between calls or
//! directly inside a call is structure gone wrong, not code, and is not repaired.
//!
//! # Quoted tags, fenced blocks, reasoning
//!
//! tam-parse's scanner tracks the markdown of the prose (see its crate docs, "Quoted
//! markers, fenced blocks, reasoning"), for ACTION tags as for TAM markers:
//!
//! * An `<ACTION>` tag inside inline code (an unclosed run of backticks earlier on its
//!   line) or on a line whose first non-blank character is `>` is **quoted**: warning
//!   `marker_in_prose` (an empty span at the tag, as for a prose mention), then the tag as
//!   [`Event::Text`]; what follows streams as text, `</ACTION>` included, until another,
//!   unquoted tag. "Never write `` `<ACTION><DeleteAllFiles><path>/</path></DeleteAllFiles></ACTION>` ``
//!   unless asked" is text and nothing runs.
//! * A block inside a fenced code block (a line of 3+ backticks or tildes, indented at most
//!   3 columns, up to a closing line of at least as many) **is** a call, with warning
//!   `fenced_block` (span: the fence's opening line). This replaces the former
//!   `code_fence` warning for a fence line right before the block: the scanner knows
//!   whether a fence is open, so a fence that closed before the block no longer counts.
//!   `code_fence` remains for fence lines inside the block's body, which the parser drops.
//! * With [`Config::reasoning_tags`] (off for [`Decoder`], on by default for the front door
//!   `tam::Decoder` through its `tam::Config::reasoning_tags`), a `<think>` or
//!   `<thinking>` tag that is the first non-blank text of a prose line outside a fence opens
//!   a reasoning section up to its matching close tag or the end of the stream:
//!   [`Event::ReasoningStart`], [`Event::Reasoning`] pieces (borrowed, as early as
//!   possible), [`Event::ReasoningEnd`]. Nothing in it is decoded.
//!
//! # A block the stream ended in
//!
//! * A block that never closes and whose body does not begin with an element (blanks and
//!   a code fence line aside), or holds no element at all, is a **prose mention** (`I
//!   write an <ACTION> block with a tag such as <DeleteAllFiles> inside it.`): warning
//!   `marker_in_prose` (an empty span at the tag), then its bytes as [`Event::Text`] with
//!   their spans. It is not a block: it takes no block index and nothing of it runs. Its
//!   [`Event::BlockStart`] was already reported (the tag was seen before the stream ended).
//! * A block that never closes with a call element still open (`<ACTION><write_to_file>
//!   <path>a.rs</path><content>fn main() {`): no call, error `unterminated_block` with
//!   the block's raw text. A call the model did not finish never runs.
//! * The same when the stream ends inside an element's tag (`…</write_file><delete_all`,
//!   `<delete_all a="x`, `</get_wea`): a lone `<`, `<` and a name, or `</` and anything but
//!   the beginning of `</ACTION>`. The model was writing a call — the next one's start
//!   tag, or a close tag — and one byte later (`<delete_all>` complete) its element would be
//!   open: the block yields no call either way (`unterminated_block`, naming the tag). The
//!   first call, complete as it stands, does not run alone: what the model meant by the
//!   block was cut. The beginning of `</ACTION>` itself (`</`, `</ACTI`, `</ action`) is
//!   not such a tag (the calls were written and the block was being closed), nor is the
//!   beginning of a comment, a CDATA section or a processing instruction (`<!-`, `<?x`),
//!   blanks, or text (`stray_text`): those end as below.
//! * [`Decoder::finish`] with every call element closed and only `</ACTION>` missing: the
//!   `missing_close_tag` repair, the calls run.
//! * [`Decoder::finish_cut`] (a token limit, a transport error): no repair at all; a
//!   block open at the cut yields no call (`unterminated_block`, saying the stream was
//!   cut), prose mentions aside.
//!
//! # A closed block without an element
//!
//! A block that closes with no element between its tags — only text, blanks, comments,
//! CDATA, a close tag, a `<` that begins no tag (`Write <ACTION> to start a block and
//! </ACTION> to end it.`, `<ACTION></ACTION>`, `<ACTION>  </ACTION>`) — is a prose
//! mention too, as one that never closes: warning `marker_in_prose` (an empty span at the
//! tag), then its bytes, tags included, as one [`Event::Text`] after its
//! [`Event::BlockStart`]. It takes no block index (the next real block is still the first,
//! the one that runs) and nothing of it runs or streams. A model that writes both tags in a
//! sentence is talking about the protocol, and its words belong in the reply, not in a
//! diagnostic.
//!
//! An element is a body that begins with one (blanks and a code fence line aside: the
//! rule argument streaming applies, so a block whose calls may have streamed is never
//! prose), or a complete start tag anywhere in it outside CDATA and comments (`<name>`,
//! `<name/>`, attributes with quoted values). A body that holds one stays a block, as
//! before: `<ACTION>Use <read_file/> now</ACTION>` is a call of `read_file` with
//! `stray_text`, and a body whose only elements are no calls — a nested `<ACTION/>` — is a
//! block without calls, warning `empty_block`.
//!
//! What cannot be repaired is error `malformed_xml`: the message ends with the line and
//! column (1-based, columns in characters) in the model's whole output, prose included
//! (`… at line 3, column 9`), so that a dispatcher can say `Malformed XML in ACTION block:
//! …`; the diagnostic's span points at the spot and it carries the block's raw text. Such a
//! block has no calls. Well-formed blocks, the common case, skip the repairing pre-scan (see
//! "How a closed block is read" under Decisions).
//!
//! # A call element without `<ACTION>`
//!
//! Small models drop the wrapper and write the call element alone
//! (`<estimate_population><species>pandas</species></estimate_population>` as the whole
//! reply, sometimes inside a code fence). A decoder given the offered tools' names
//! ([`Decoder::with_bare_call_tools`], [`ActionLayer::with_bare_call_tools`], the front
//! door's `tam::Decoder::with_bare_call_tools`) reads such an element as a one-call block,
//! with warning `missing_action_wrapper` (span: its start tag). The rules:
//!
//! * **Names.** Only the names given, matched exactly as written (a tool id is the tag name
//!   as written, as in a block): `<Get_Weather>` is not `get_weather`. Names that cannot be
//!   read so are left out: not an XML element name with at most one colon, `ACTION` or a
//!   reasoning tag in any case, longer than [`MAX_BARE_CALL_NAME_BYTES`] (61: the close tag
//!   is one scanner marker of at most 64 bytes), a repeat, or past the first
//!   [`MAX_BARE_CALL_TOOLS`] (256: each name is one start marker the scanner tries at a
//!   `<` that opens a prose line). [`Decoder::bare_call_tools`] says which were kept.
//! * **Where.** The start tag `<name>` (exactly so: no blanks, no attributes; `<name/>` is
//!   not one) must be the first non-blank text of a prose line, inside a code fence or not
//!   (a fenced one also gets `fenced_block`, as a fenced block does). So it is never in
//!   inline code or on a `>` line (both need other text before it on the line), never in
//!   reasoning, and never inside a block (there it is a call of the block already). These
//!   are the places where an `<ACTION>` tag would open a block, narrowed to line starts:
//!   a tool's tag in the middle of a sentence is the model talking about the tool.
//! * **What counts.** The element must close (`</name>` outside CDATA and comments, as
//!   `</ACTION>` closes a block) and decode to its one call with no error: the block's
//!   reader reads it, its repairs apply with their warnings. Then come
//!   [`Event::BlockStart`], the call's argument events, and the [`Event::Block`], all from
//!   the feed that delivered the close tag: an element is not known to be a call before it
//!   closes, so nothing of it streams while it is written. It takes a block index as a
//!   block does: after another block it carries `extra_action_block`.
//! * **What does not.** An element the stream ended or was cut in, or one that does not
//!   decode (a DTD, a mismatched structure the repairs cannot mend): warning
//!   `marker_in_prose` (empty span at the tag, the message says why), then its bytes as
//!   text, as an `<ACTION>` mention is. An element larger than `max_block_bytes`: error
//!   `block_too_large`, its bytes dropped, no call. None of these is a block.
//! * **Several in a row.** Each element that opens a line is a block of its own; the
//!   second and later carry `extra_action_block` (a consumer that ends the turn at the
//!   first call never reads them). An element right after another on the same line does
//!   not open a line: text.
//! * **Text after it** is trailing text, as after a block; the turn ends at the element's
//!   close tag for a consumer that ends it at a block.
//! * **Limits and work.** The element is held by the scanner as a block is (up to
//!   `max_block_bytes`); outside blocks the scanner holds at most 63 bytes of a possible
//!   start tag. A decoder without names builds the grammar it always did.
//!
//! //! # Arguments that stream
//!
//! While a block is being written the decoder reports [`Event::CallStart`] (a call
//! element's start tag is complete: index in the block, tool), [`Event::ParamStart`],
//! [`Event::ParamText`] pieces, [`Event::ParamEnd`] and [`Event::CallEnd`]; then the
//! [`Event::Block`], which alone is authoritative (what runs). The pieces of a parameter
//! are its content **as written, markup included**, entity and character references
//! decoded (a decoded reference is a piece of its own), CDATA content verbatim without its
//! markers (such pieces are flagged `cdata`), comments dropped, line ends in text read as
//! XML reads them (`\r\n` and a lone `\r` are `\n`; CDATA keeps its own as written):
//! through [`ValueEdges`], which applies the edge rules above as the pieces arrive, they
//! are a string value; code with tags is its code, and an object or array parameter
//! streams its child elements' markup (its value is in the block). Inside a value only the parameter's own tags count (`<p>` in
//! `<p>` nests). Other text is borrowed from the block buffer (no allocation per delta);
//! the buffer is read once, left to right, whatever the deltas (O(n) per block).
//! A call or parameter the block ends inside gets no end event. A block whose body does
//! not begin with an element (blanks and a code fence line aside: prose, a comment, CDATA,
//! a close tag, …) streams nothing, closed or not: that is the rule that makes a block the
//! stream ends in a prose mention (`marker_in_prose`), applied to the same bytes, so a
//! mention never streams a call, and a block can be told from a mention by the first bytes
//! of its body alone. (A body that begins with an element whose tags the parser then
//! refuses, `<ACTION><t a>` at the end of the stream, holds no call and is prose too; its
//! light reading may have streamed.) A block that exceeds `max_block_bytes` streams what lies within the
//! limit (the scanner reports `buf[..max_block_bytes]` as settled at the overflowing
//! push), then its [`Event::Block`] with `block_too_large` and no call. Every streamed
//! event is the same whatever the deltas (property-tested with tiny limits too).
//!
//! # What is borrowed, what is held back
//!
//! [`Event::Text`] borrows from the delta just fed, or from the decoder for prose it held
//! back: only a possible `<ACTION` prefix (at most 23 bytes; with reasoning tags, a
//! possible `<thinking>` tag or, inside reasoning, its close tag: at most 34) plus, for
//! byte deltas, an
//! incomplete UTF-8 character. A block is copied once into the scanner's buffer and parsed
//! when it closes; [`ActionBlock`]s own their data.
//!
//! # Input safety
//!
//! Limits are [`Config`] fields with documented defaults: `max_block_bytes` (1 MiB; past it
//! the block's bytes are dropped as they arrive and it is reported with
//! `block_too_large`), `max_depth` (64, checked by an iterative pre-scan before anything
//! recurses, so 100 000 nested elements cost a counter, not the stack: `nesting_too_deep`)
//! and `max_nodes` (65 536, roxmltree's node limit: `too_many_nodes`). DTDs are refused
//! and no entity is ever expanded beyond the five predefined ones and character
//! references. No input makes the decoder panic (property-tested on arbitrary bytes), and
//! no `unsafe` code is used (`#![forbid(unsafe_code)]`).
//!
//! # One shot, and back
//!
//! [`parse`] gathers the events of a whole output into a [`Parsed`] (response text, the
//! first block's calls, trailing text, every diagnostic and block). [`render_call`] and
//! [`render_action`] write calls as ACTION XML that parses back to the same values, with
//! CDATA where a value needs it; names that are not XML names are refused
//! ([`RenderError`]).
//!
//! # The ACTION layer in another decoder
//!
//! [`ActionLayer`] is the ACTION half of [`Decoder`]: the reader of `<ACTION>` blocks on
//! top of the scanner, as [`tam_parse::BlockParser`] is for TAM blocks. A decoder whose
//! scanner grammar holds other syntaxes next to [`block_syntax`] forwards the callbacks of
//! ACTION blocks to it and gets this crate's [`Event`]s for them. The `tam` crate's
//! decoder reads TAM and ACTION in one stream so; use that crate unless you need the layer
//! directly.
//!
//! # Costs and decisions
//!
//! * Argument events ([`Event::CallStart`] … [`Event::CallEnd`]) are on by default;
//!   [`Decoder::with_param_events`] turns them off, and [`parse`] does (it drops those
//!   events). Off, the ACTION layer does not read blocks while they are written at all (its
//!   streamer never runs).
//! * How a closed block is read (the decoder's cost over roxmltree alone). First
//!   the direct reader: a tokenizer of the plain subset walks the body once (`memchr` to
//!   the next `<`, `&` or `>`), building a flat list of elements (no DOM, no copy of the
//!   body), then the values are built from it by the same rules as from roxmltree's tree.
//!   An object of more than 11 members, when `serde_json::Map` sorts its keys (found out
//!   once at run time: `preserve_order` may be on through any crate), is built from its
//!   members sorted by name — most comparisons settled by one integer comparison of the
//!   names' first 16 bytes, the document index breaking ties so a repeated name's values
//!   keep their order — in one bulk build; a property test proves it the map that
//!   inserting the members one by one gives.
//!   It takes only the plain subset: elements without attributes or prefixes, text, CDATA,
//!   references that need no DTD — and, inside values, the code the pre-scan repairs the
//!   same way everywhere (a bare `&`, a `<` that begins no tag, an element never closed in
//!   its value, a close tag that matches nothing), read as the pre-scan reads it and
//!   reported with the same `bare_ampersand` / `unescaped_lt` warnings; anything else
//!   (comments, processing instructions, declarations, attributes, a prefix, text that
//!   would be `stray_text`, a nested `<ACTION>`, a character XML forbids, `]]>` in text, a
//!   bad reference, a mismatched tag, too deep, maybe too many nodes) falls back, so every
//!   check is at least as strict as roxmltree's and nothing it reads carries another
//!   diagnostic. (Before, code with `<` in a value took the pre-scan and roxmltree: 86 % of
//!   the instructions of a 173 KB `write_to_file` fed whole.) Second, a body that needs no
//!   repair (one look for `<`) goes to roxmltree as written; last, the repairing pre-scan
//!   and roxmltree. Property tests build every block all three ways and compare the
//!   results, and check that the direct reader takes every call shape models write. The
//!   first version of this reader used quick-xml 0.38's pull parser; for a subset whose
//!   every piece is one `memchr` away and that refuses everything else, a general XML
//!   tokenizer cost more than it gave (its events were 16 % of a typical block's
//!   instructions, and the copy of each returned event was the hottest spot of a time
//!   profile), so the dependency went: 12 % fewer instructions per block
//!   (`docs/design.md`, "ACTION's direct reader").
//! * While arguments stream, the text pieces of a value are joined where they touch: a `<`
//!   that is text inside a value (`Vec<String>`, a child element's tag in an object
//!   parameter) or a bare `&` no longer cuts the text around it into separate events. The
//!   joined text and spans are what they were; there are fewer events.
//! * Code in a value has a `<` or `&` every few words, and the streamer and the direct
//!   reader each stop at every one (is it the parameter's own tag? a reference? a kept
//!   element?). Both take their stops from [`tam_parse::scan::Stops`]: 64 bytes at a time
//!   into a bit per byte, a few instructions per stop, where a search started at each stop
//!   cost tens. A 64 KiB value of code fed whole: 24 % fewer instructions
//!   (`docs/design.md`, "Stops: a bit per byte").
//! * An `&` cut by a delta's end waits for the next delta only when what arrived after it
//!   begins a reference the block's reader takes (`lt`, `gt`, `amp`, `apos`, `quot`, `#`
//!   digits, `#x` hex digits): code's `&mut` or `&str` streams at once. A stop that waits
//!   is handled without the streamer's general loop. In 4-code-point deltas the 64 KiB
//!   value of code runs within 1.19× of plain code (1.27× before).
//! * A block that closes before anything of it streamed — a reply fed whole, a delta
//!   holding the whole block, each block of a delta holding many — is read once, not twice:
//!   its argument events come from the direct reader's reading of the closed block (the
//!   elements, CDATA sections and references it found), in the streamer's order and with
//!   its pieces (once adjacent pieces are joined, the same events as any other split), and
//!   the streamer never runs. The shapes where the streamer's light reading differs (a
//!   value holding an element named as its parameter or call, kept or never closed, or a
//!   `<` read as text that begins such a name, `<p, q>`) and every block the direct reader
//!   does not take are streamed by the streamer as before. Debug builds (the tests,
//!   the fuzz targets) check the two readings against each other on every such block. For
//!   this, the scanner reports a block's progress once per delta rather than per internal
//!   push, and its last progress before a close through
//!   [`tam_parse::scan::ScanHandler::block_closing`]. The 64 KiB value of code fed whole
//!   with argument events on: 19 % fewer instructions (`docs/design.md`, "A closed block
//!   is read once").
//!
//! # Serde
//!
//! With feature `serde`, every type a decoder reports is `serde::Serialize`, and the owned
//! ones are `serde::Deserialize` too (a JSON round trip gives back an equal value):
//!
//! | type | form |
//! |---|---|
//! | [`ActionBlock`] | `{"span", "index", "calls", "diagnostics", "raw"}` |
//! | [`ActionCall`] | `{"tool", "args", "span", "params"}` (`args` as `serde_json` writes it) |
//! | [`ActionParam`] | `{"key", "content_span", "source"}` |
//! | [`Event`] | `{"type": "text" \| "block_start" \| "block" \| "diagnostic" \| "call_start" \| "param_start" \| "param_text" \| "param_end" \| "call_end", …}`: the variant's fields, or the block's or diagnostic's |
//! | [`Parsed`] | `{"response_text", "calls", "trailing_text", "diagnostics", "blocks"}` |
//! | [`LineColumn`] | `{"line", "column"}` |
//!
//! Spans, diagnostics and TAM blocks are tam-parse's (feature `tam-parse/serde`, which
//! this one turns on): a span is `[start, end]`, a diagnostic `{"severity", "code",
//! "message", "span", "raw"?}`.
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use action_xml::{Config, Decoder, Event};
//!
//! let mut events = Vec::new();
//! let mut decoder = Decoder::new(Config::default());
//! decoder.feed("Hi <ACTION><read><path>a</path></read></ACTION>", |e| events.push(e.into_owned()));
//! decoder.finish(|e| events.push(e.into_owned()));
//! for event in &events {
//!     let json = serde_json::to_string(event).unwrap();
//!     assert_eq!(&serde_json::from_str::<Event<'static>>(&json).unwrap(), event);
//! }
//! # }
//! ```
//!
//! Decisions:
//!
//! * [`Event`] keeps every field and round-trips. The front door's event (`tam::Event`)
//!   serializes as its `tam decode` line instead, a lossy form with no `Deserialize`.
//! * `args` is a `serde_json::Map`: its key order is the order written only with
//!   `serde_json/preserve_order` (this crate's `preserve_order` feature).
//!
//! # Crate features
//!
//! * `serde` — `Serialize` / `Deserialize` for the types above (see "Serde").
//! * `preserve_order` — JSON object keys (call arguments) in the order written
//!   (`serde_json/preserve_order`); without it `serde_json::Map` sorts them.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
// docs.rs (nightly, `--cfg docsrs`) marks items behind a feature; stable builds ignore it.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod block;
mod call;
pub mod codes;
mod config;
mod decoder;
mod drive;
mod event;
mod fence;
mod parsed;
mod position;
mod prescan;
mod render;
mod stream;
mod tags;
mod tree;
mod value;
mod xml_chars;

pub use call::{ActionBlock, ActionCall, ActionParam};
pub use config::{
    BareCallTools, Config, MAX_BARE_CALL_NAME_BYTES, MAX_BARE_CALL_TOOLS, block_syntax, grammar,
};
pub use decoder::{ActionLayer, Decoder};
pub use event::Event;
pub use parsed::{Parsed, parse, parse_with};
pub use position::LineColumn;
pub use render::{RenderError, is_element_name, render_action, render_call};
pub use tam_parse::{ByteString, Code, Diagnostic, Severity, Span};
pub use value::ValueEdges;

/// This crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// [`LineColumn`]'s serde form, `{"line", "column"}` (the type's own module belongs to the
/// position code; its fields are its whole definition, so a remote derive mirrors it).
#[cfg(feature = "serde")]
mod line_column_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::LineColumn;

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "LineColumn")]
    struct Def {
        line: usize,
        column: usize,
    }

    impl Serialize for LineColumn {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            Def::serialize(self, serializer)
        }
    }

    impl<'de> Deserialize<'de> for LineColumn {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            Def::deserialize(deserializer)
        }
    }
}
