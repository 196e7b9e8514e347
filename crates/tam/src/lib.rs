//! Turn a language model's streamed text into tool calls.
//!
//! Models without native function calling (or whose users prefer a text protocol) write
//! their tool calls into their prose. This crate is the one streaming decoder for the two
//! text protocols of the family, and the one event type:
//!
//! * **TAM** — `<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>` blocks of `key:「始」value「末」`
//!   entries (`command` names the tool; `command1`, `command2`, … chain calls), and its
//!   VCP-compatible dialect;
//! * **ACTION XML** — `<ACTION><ToolId><param>…</param></ToolId></ACTION>` after the
//!   model's explanation, with nested, list and CDATA parameters.
//!
//! Feed the model's output as it streams, in deltas of any size; [`Event`]s come out as
//! soon as they are decided: prose as [`Event::Text`], reasoning (`<think>…</think>`) as
//! [`Event::Reasoning`], each closed block with its calls ([`Event::TamBlock`],
//! [`Event::ActionBlock`]), arguments while they are written ([`Event::ParamText`] …),
//! and every repair or problem as a [`Diagnostic`] with a stable [`Code`].
//!
//! ```
//! use tam::{Config, Decoder, Event};
//!
//! let mut decoder = Decoder::new(Config::default()); // TAM and ACTION, auto
//! let mut text = String::new();
//! let mut calls = Vec::new();
//! let mut on_event = |event: Event<'_>| match event {
//!     Event::Text { text: t, .. } => text.push_str(&t),
//!     Event::TamBlock(block) => calls.extend(block.calls.iter().map(|c| c.tool.to_string())),
//!     Event::ActionBlock(block) => calls.extend(block.calls.iter().map(|c| c.tool.clone())),
//!     _ => {}
//! };
//! for delta in ["Checking.\n<|[REQUEST_TOOL]|>command:「始」Get", "Weather「末」city:「始」Paris「末」<|[END_TOOL]|>"] {
//!     decoder.feed(delta, &mut on_event);
//! }
//! decoder.finish(&mut on_event);
//! assert_eq!(text, "Checking.\n");
//! assert_eq!(calls, ["GetWeather"]);
//! ```
//!
//! # The rules every consumer relies on
//!
//! * **Split-invariant.** The events of a stream are the same whatever its split into
//!   deltas (text events may be split differently; joined, they are the same text).
//! * **Nothing is dropped.** Every byte the model wrote is text, reasoning, part of a
//!   block, or inside a diagnostic.
//! * **A call the model did not finish never runs.** End a reply the server cut (token
//!   limit, transport error) with [`Decoder::finish_cut`]: a block open at the cut gives no
//!   call. [`Decoder::finish`] applies the protocols' end-of-stream repairs.
//! * **Quoted calls are prose.** A marker inside inline code (an unclosed backtick run
//!   earlier on its line) or on a `>` quote line is text with a `marker_in_prose` warning;
//!   a block inside a fenced code block is a call with a `fenced_block` warning.
//! * **Reasoning never calls.** With [`Config::reasoning_tags`] (default on), a `<think>`
//!   or `<thinking>` section opening a prose line is reasoning to its close tag.
//! * **Bounded memory.** A block is held until it closes, at most
//!   `max_block_bytes` (1 MiB by default, [`Config::action`]; TAM alone: [`Config::tam`]);
//!   a longer one is reported as a diagnostic and its bytes as text.
//! * **No panic on any input**, no I/O, no async: bring your own transport.
//!
//! # Which crate do I need
//!
//! | you want | crate |
//! |---|---|
//! | tool calls out of a model's text, either protocol | `tam-rs` (this one, imported as `tam`) |
//! | TAM alone, its codec and `Stream` adapters, rendering TAM | [`tam_parse`] |
//! | ACTION XML alone, its one-shot parser and renderer | [`action_xml`] |
//! | JSON Schema, prompts and argument coercion for your tools | `tool-schema` |
//! | a streaming model client and SSE reader | `tam-model` |
//! | running the calls: registry, scopes, dispatch, the agent loop | `tool-dispatch` |
//! | an OpenAI-compatible proxy giving native tool calls to any model | `tam-proxy` |
//!
//! The protocol crates are re-exported ([`tam_parse`], [`action_xml`]) for their settings
//! ([`Config::tam`] is a [`tam_parse::Config`], [`Config::action`] an
//! [`action_xml::Config`]) and for users who need one protocol's internals.
//!
//! # Both protocols in one stream
//!
//! With [`ProtocolChoice::Auto`] (the default of [`Config`]) the [`Decoder`] runs this
//! crate's own engine: one scanner whose [`grammar`] holds the TAM syntax (block kind 0)
//! and the ACTION syntax (kind 1), one pass over the stream, TAM blocks read by
//! tam-parse's [`tam_parse::BlockParser`] and ACTION blocks by action-xml's
//! [`action_xml::ActionLayer`], the events of both in stream order. (For
//! [`ProtocolChoice::Tam`] and [`ProtocolChoice::Action`] it runs the protocol crate's own
//! decoder.) Rules of the stream of both:
//!
//! * Argument events of both protocols flow through [`Event::CallStart`],
//!   [`Event::ParamStart`], [`Event::ParamText`], [`Event::ParamEnd`] and
//!   [`Event::CallEnd`], each with its `protocol`. TAM keeps [`Event::CommandSeen`] as its
//!   "call begins" (the tool id is known only when the command value closes; `command`
//!   itself streams as a parameter first) and has no `CallStart`/`CallEnd` (chained keys
//!   join their call at the block's end).
//! * One switch, [`Config::param_events`], turns argument streaming on or off for both
//!   protocols; it is **on** by default. Cost measured with `cargo bench -p
//!   tam-benches --bench tam_decode -- --quick one_delta` (64 KiB of prose with a block
//!   every ~400 bytes in one delta, TAM decoder, off vs on), on a shared 2-core machine:
//!   1 MiB 25.96 vs 26.59 ms, 2 MiB 46.15 vs 46.99 ms, 4 MiB 95.80 vs 89.23 ms, 8 MiB
//!   87.48 vs 137.05 ms (the 8 MiB "off" figure is below the 4 MiB one: the machine was
//!   loaded; the 1–4 MiB pairs differ by less than the noise). The decoder streams by
//!   default; `tam decode` turns it on only with `--progress`. Off, the ACTION layer does
//!   not read blocks while they are written at all (its streamer never runs).
//! * One block size limit for both, `action.max_block_bytes` ([`Config::action`]): the
//!   scanner has one.
//!
//! # A model's turn ends at its call
//!
//! [`turn`] has what a client needs so the model stops after its block instead of
//! inventing the result: the stop sequences to send, and how to close the block of a reply
//! the server stopped at one.
//!
//! # Serde
//!
//! With feature `serde`, an [`Event`] serializes as its `tam decode` line (see [`Event`]
//! for every form), [`Protocol`] as `"tam"` or `"action"`, [`ProtocolChoice`] as `"tam"`,
//! `"action"` or `"auto"` (read back as its `FromStr` reads it); blocks, calls, spans and
//! diagnostics as the protocol crates serialize them.
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use tam::{Config, Decoder, Event};
//!
//! let mut lines = Vec::new();
//! let mut on_event = |e: Event<'_>| {
//!     if !e.is_argument_event() {
//!         lines.push(serde_json::to_string(&e).unwrap());
//!     }
//! };
//! let mut decoder = Decoder::new(Config::default());
//! decoder.feed("Hi <ACTION><read><path>a</path></read></ACTION>", &mut on_event);
//! decoder.finish(&mut on_event);
//! assert_eq!(lines, [
//!     r#"{"type":"text","text":"Hi "}"#,
//!     r#"{"type":"block_start","protocol":"action","span":[3,11]}"#,
//!     r#"{"type":"tool_calls","protocol":"action","span":[3,47],"calls":[{"tool":"read","args":{"path":"a"}}],"diagnostics":[]}"#,
//! ]);
//! # }
//! ```
//!
//! Decisions: [`Event`] is what `tam decode` prints, and `tam decode` already fixes a JSON
//! form for it: `tam decode` writes `serde_json::to_string(&event)` (less `raw` unless
//! asked, less progress lines unless asked). That form drops what a line does not show (a
//! text event's span, a block's raw text, a call's span and index, ACTION parameter
//! sources), so [`Event`] has no `Deserialize`; [`action_xml::Event`] and
//! [`tam_parse::Event`] keep every field and round-trip.
//!
//! # Crate features
//!
//! * `serde` — `Serialize` for every type the decoder reports (an [`Event`] serializes as
//!   its `tam decode` line, see "Serde"), `Deserialize` for the owned ones.
//! * `preserve_order` — ACTION arguments keep their keys in the order written.
//! * `stream` — [`stream::EventStream`], a `Stream` of events over a stream of deltas.
//! * `codec` — [`codec::Codec`], a `tokio_util` codec: bytes in, events out.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod both;
mod config;
mod decoder;
mod event;
mod protocol;
pub mod turn;

/// A `futures_core::Stream` of owned [`Event`]s over a stream of text deltas (feature
/// `stream`).
///
/// async-openai, genai and rig deliver a model's output as a stream of chunks: map each
/// chunk to its text (and stop at a transport error: then end the decoder with
/// [`Decoder::finish_cut`] yourself), then wrap the deltas:
///
/// ```
/// # futures_util::FutureExt::now_or_never(async {
/// use futures_util::{StreamExt, stream};
/// use tam::stream::EventStream;
/// use tam::{Config, Decoder, Event};
///
/// let deltas = stream::iter(["<ACTION><Ping><n>1</n></Pi", "ng></ACTION>"]);
/// let events: Vec<Event<'static>> =
///     EventStream::with_decoder(deltas, Decoder::new(Config::default())).collect().await;
/// assert!(matches!(events.last(), Some(Event::ActionBlock(b)) if b.calls[0].tool == "Ping"));
/// # }).unwrap();
/// ```
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
pub mod stream {
    /// A stream of the front door's owned events over a stream of text deltas: build it
    /// with `EventStream::with_decoder(deltas, tam::Decoder::new(config))`.
    pub type EventStream<S> = tam_parse::stream::EventStream<S, crate::Decoder>;
}

/// A `tokio_util::codec::Decoder` over the front door: bytes in (a socket, a child's
/// stdout), owned [`Event`]s out (feature `codec`). Build it with
/// `Codec::with_decoder(tam::Decoder::new(config))`; `decode_eof` ends the decoder
/// normally.
#[cfg(feature = "codec")]
#[cfg_attr(docsrs, doc(cfg(feature = "codec")))]
pub mod codec {
    /// The codec over [`Decoder`](crate::Decoder).
    pub type Codec = tam_parse::codec::Codec<crate::Decoder>;
}

pub use action_xml;
pub use tam_parse;

pub use both::grammar;
pub use config::Config;
pub use decoder::Decoder;
pub use event::Event;
pub use protocol::{Protocol, ProtocolChoice, UnknownProtocol};

/// A closed TAM block, one of its calls, one of a call's parameters.
pub use tam_parse::{Block as TamBlock, Call as TamCall, Param as TamParam};

/// A closed ACTION block, one of its calls, one of a call's parameters.
pub use action_xml::{ActionBlock, ActionCall, ActionParam};

/// The edge rules of an ACTION string value applied to its [`Event::ParamText`] pieces
/// as they stream (pieces of a TAM value are the value as they are).
pub use action_xml::ValueEdges;

pub use tam_parse::{ByteString, Code, Diagnostic, Dialect, Severity, Span, StreamDecoder};

/// Decodes a whole reply at once: the events of feeding it as one delta, then finishing.
///
/// ```
/// let events = tam::decode("<ACTION><Ping/></ACTION>", tam::Config::default());
/// assert!(matches!(&events[..], [tam::Event::BlockStart { .. }, .., tam::Event::ActionBlock(b)] if b.calls[0].tool == "Ping"));
/// ```
pub fn decode(text: &str, config: Config) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut decoder = Decoder::new(config);
    decoder.feed(text, |e| events.push(e.into_owned()));
    decoder.finish(|e| events.push(e.into_owned()));
    events
}

/// This crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
