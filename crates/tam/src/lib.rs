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
//! # A model's turn ends at its call
//!
//! [`turn`] has what a client needs so the model stops after its block instead of
//! inventing the result: the stop sequences to send, and how to close the block of a reply
//! the server stopped at one.
//!
//! # Crate features
//!
//! * `serde` — `Serialize` for every type the decoder reports (an [`Event`] serializes as
//!   its `tam decode` line), `Deserialize` for the owned ones.
//! * `preserve_order` — ACTION arguments keep their keys in the order written.
//! * `stream` — [`stream::EventStream`], a `Stream` of events over a stream of deltas.
//! * `codec` — [`codec::Codec`], a `tokio_util` codec: bytes in, events out.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod decoder;
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

pub use decoder::Decoder;

/// What the [`Decoder`] reports, in stream order, for either protocol (action-xml's
/// `MixedEvent`).
pub use action_xml::MixedEvent as Event;

/// The decoder's settings: which protocol(s), each protocol's limits, argument events,
/// reasoning sections (action-xml's `MixedConfig`).
pub use action_xml::MixedConfig as Config;

/// The protocol a block is written in ([`Protocol::Tam`] or [`Protocol::Action`]), and
/// which protocol(s) a [`Decoder`] looks for ([`ProtocolChoice::Tam`],
/// [`ProtocolChoice::Action`], or [`ProtocolChoice::Auto`] for both in one stream). Both
/// parse from their names (`tam`, `action`; the choice also `auto` or `both`), any case.
pub use action_xml::{Protocol, ProtocolChoice};

/// A closed TAM block, one of its calls, one of a call's parameters.
pub use tam_parse::{Block as TamBlock, Call as TamCall, Param as TamParam};

/// A closed ACTION block, one of its calls, one of a call's parameters.
pub use action_xml::{ActionBlock, ActionCall, ActionParam};

/// The edge rules of an ACTION string value applied to its [`Event::ParamText`] pieces
/// as they stream (pieces of a TAM value are the value as they are).
pub use action_xml::ValueEdges;

pub use action_xml::UnknownProtocol;
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
