//! What the TAM decoder reports.

use std::borrow::Cow;

use bytestring::ByteString;

use crate::block::Block;
use crate::diagnostic::{Diagnostic, Span};

/// What the decoder reports, in stream order.
///
/// Text and the argument-streaming events borrow from the delta just fed or from the
/// decoder's buffers; everything else owns its data. [`Event::into_owned`](crate::Event::into_owned) detaches an
/// event from both.
///
/// `BlockStart`, `ParamStart`/`ParamText`/`ParamEnd` and `CommandSeen` are early news for
/// UIs; the [`Event::Block`](crate::Event::Block) is authoritative. A block that never closes yields no block:
/// what was streamed of it is then superseded by its text (or its `unterminated_block`
/// diagnostic).
///
/// With feature `serde`: an object tagged by `"type"` — the variant's name in snake_case
/// (`text`, `block_start`, `param_start`, `param_text`, `param_end`, `command_seen`,
/// `block`, `diagnostic`, `reasoning_start`, `reasoning`, `reasoning_end`) — with the variant's fields, or for `Block` and `Diagnostic` the
/// fields of the [`Block`](crate::Block) or [`Diagnostic`](crate::Diagnostic): `{"type":"text","text":"Hi","span":[0,2]}`.
/// Deserializing gives owned text and keys (`Cow::Owned`), so `Event<'static>` is
/// `DeserializeOwned` (`serde_json::from_reader`, `from_value`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "type", rename_all = "snake_case")
)]
pub enum Event<'a> {
    /// Prose outside blocks. Adjacent text events may be split anywhere.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// Its place in the stream.
        span: Span,
    },
    /// A start marker: a block is open. `span` covers the marker.
    BlockStart {
        /// The start marker's span.
        span: Span,
    },
    /// An entry's value begins (its key and `「始」` were read); `key` is as written.
    ParamStart {
        /// The key, as written (chain suffix not stripped).
        key: Cow<'a, str>,
        /// The key's span.
        span: Span,
    },
    /// A piece of the value being written, borrowed from the block buffer. Pieces may be
    /// split anywhere; consecutive pieces are adjacent in the stream, and the pieces of one
    /// entry concatenated are its value exactly.
    ParamText {
        /// The piece.
        text: Cow<'a, str>,
        /// Its span.
        span: Span,
    },
    /// The value closed; `span` is the whole entry (key to close marker), which is
    /// [`Param::span`](crate::Param::span) of the parameter it becomes.
    ParamEnd {
        /// The entry's span.
        span: Span,
    },
    /// A command value just closed (for UIs; the [`Event::Block`](crate::Event::Block) is authoritative). This
    /// is the "call begins" event: the tool id is known.
    ///
    /// In a block without chain numbers, a key that starts a new call makes
    /// one too: a second `command` when its value closes, a repeated parameter key right
    /// after the key is read, before that value's [`Event::ParamStart`](crate::Event::ParamStart) (`tool` and `span`
    /// are then those of the call it repeats). The `Param*` events of a value belong to the
    /// call of the last `CommandSeen` before them (to call 0 before any), except a command
    /// entry's own, which come just before its `CommandSeen`.
    CommandSeen {
        /// The call's number: [`Call::index`](crate::Call::index) (chain number; 0 for VCP;
        /// in a block without chain numbers, the call's place in the block, from 0).
        call: u64,
        /// The tool id, trimmed.
        tool: ByteString,
        /// The span of the command entry that names the tool:
        /// [`Call::span`](crate::Call::span).
        span: Span,
    },
    /// A closed block, emitted by the feed that delivered the end marker's last byte.
    Block(Block),
    /// A reasoning section opens ([`Config::reasoning_tags`](crate::Config::reasoning_tags)): `span` covers its open tag
    /// (`<think>`, `<thinking>`).
    ReasoningStart {
        /// The open tag's span.
        span: Span,
    },
    /// Reasoning: the content of a `<think>` section, tags excluded, as early as possible.
    /// Adjacent pieces may be split anywhere. Never decoded into calls.
    Reasoning {
        /// The text.
        text: Cow<'a, str>,
        /// Its place in the stream.
        span: Span,
    },
    /// The reasoning section's close tag (a section the stream ends in gets none).
    ReasoningEnd {
        /// The close tag's span.
        span: Span,
    },
    /// A problem outside any block: an unterminated block (with its raw text), a start
    /// marker read as prose (`marker_in_prose`, a warning next to the text it is about), or
    /// invalid UTF-8.
    Diagnostic(Diagnostic),
}

impl Event<'_> {
    /// The event with no borrow left.
    pub fn into_owned(self) -> Event<'static> {
        match self {
            Event::Text { text, span } => Event::Text {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::BlockStart { span } => Event::BlockStart { span },
            Event::ParamStart { key, span } => Event::ParamStart {
                key: Cow::Owned(key.into_owned()),
                span,
            },
            Event::ParamText { text, span } => Event::ParamText {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::ParamEnd { span } => Event::ParamEnd { span },
            Event::CommandSeen { call, tool, span } => Event::CommandSeen { call, tool, span },
            Event::Block(b) => Event::Block(b),
            Event::Diagnostic(d) => Event::Diagnostic(d),
            Event::ReasoningStart { span } => Event::ReasoningStart { span },
            Event::Reasoning { text, span } => Event::Reasoning {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::ReasoningEnd { span } => Event::ReasoningEnd { span },
        }
    }

    /// The span of the event.
    pub fn span(&self) -> Span {
        match self {
            Event::Text { span, .. }
            | Event::BlockStart { span }
            | Event::ParamStart { span, .. }
            | Event::ParamText { span, .. }
            | Event::ParamEnd { span }
            | Event::CommandSeen { span, .. }
            | Event::ReasoningStart { span }
            | Event::Reasoning { span, .. }
            | Event::ReasoningEnd { span } => *span,
            Event::Block(b) => b.span,
            Event::Diagnostic(d) => d.span,
        }
    }
}
