//! What the ACTION decoder reports.

use std::borrow::Cow;

use tam_parse::{Diagnostic, Span};

use crate::call::ActionBlock;

/// What the decoder reports, in stream order.
///
/// Text borrows from the delta just fed (or from the decoder, for prose it held back);
/// everything else owns its data. [`Event::into_owned`] detaches an event from both.
///
/// With feature `serde`: an object tagged by `"type"` — the variant's name in snake_case
/// (`text`, `block_start`, `block`, `diagnostic`, `call_start`, `param_start`,
/// `param_text`, `param_end`, `call_end`, `reasoning_start`, `reasoning`, `reasoning_end`)
/// — with the variant's fields, or for `Block` and
/// `Diagnostic` the fields of the [`ActionBlock`] or [`Diagnostic`], as tam-parse's
/// events. Deserializing gives owned text and keys, so `Event<'static>` is
/// `DeserializeOwned`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "type", rename_all = "snake_case")
)]
pub enum Event<'a> {
    /// Prose outside blocks: the response text before the first block, trailing text
    /// after it. Adjacent text events may be split anywhere.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// Its place in the stream.
        span: Span,
    },
    /// An `<ACTION>` tag: a block is open. `span` covers the tag.
    BlockStart {
        /// The open tag's span.
        span: Span,
    },
    /// A closed block, emitted by the feed that delivered `</ACTION>` (or by `finish`
    /// when the close tag never came).
    Block(ActionBlock),
    /// A problem outside any block (invalid UTF-8), or warning `marker_in_prose` before
    /// the text of an `<ACTION>` mention or of a quoted `<ACTION>` tag.
    Diagnostic(Diagnostic),
    /// A reasoning section opens ([`Config::reasoning_tags`](crate::Config::reasoning_tags)):
    /// `span` covers its open tag (`<think>`, `<thinking>`).
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
    /// A call element's start tag is complete (argument streaming, see below): `index`
    /// counts the calls of the block from 0, `tool` is the element's name as written,
    /// `span` the start tag.
    CallStart {
        /// The call's place in its block, from 0.
        index: usize,
        /// The tool id as written.
        tool: String,
        /// The start tag.
        span: Span,
    },
    /// A parameter element's start tag is complete: `key` as written, `span` the tag.
    ParamStart {
        /// The parameter's name.
        key: Cow<'a, str>,
        /// The start tag.
        span: Span,
    },
    /// A piece of the parameter's content as it arrives: as written, markup included,
    /// references decoded, CDATA unwrapped, comments dropped (see "Arguments that
    /// stream" in the crate docs). Borrowed unless it is a decoded reference.
    ParamText {
        /// The piece.
        text: Cow<'a, str>,
        /// Where it was written (a decoded reference: the reference).
        span: Span,
        /// The piece is (part of) a CDATA section's content, whose edges follow their own
        /// rule: [`crate::ValueEdges`] turns the pieces of a string value into the value.
        /// Pieces of one section touch (each `span` ends where the next begins); two
        /// sections never do.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "std::ops::Not::not")
        )]
        cdata: bool,
    },
    /// The parameter element closed: `span` is the whole element.
    ParamEnd {
        /// The element, start tag to close tag.
        span: Span,
    },
    /// The call element closed: `span` is the whole element. The [`Event::Block`] that
    /// follows is what runs.
    CallEnd {
        /// The call's place in its block.
        index: usize,
        /// The element, start tag to close tag.
        span: Span,
    },
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
            Event::Block(b) => Event::Block(b),
            Event::Diagnostic(d) => Event::Diagnostic(d),
            Event::CallStart { index, tool, span } => Event::CallStart { index, tool, span },
            Event::ParamStart { key, span } => Event::ParamStart {
                key: Cow::Owned(key.into_owned()),
                span,
            },
            Event::ParamText { text, span, cdata } => Event::ParamText {
                text: Cow::Owned(text.into_owned()),
                span,
                cdata,
            },
            Event::ParamEnd { span } => Event::ParamEnd { span },
            Event::CallEnd { index, span } => Event::CallEnd { index, span },
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
            | Event::CallStart { span, .. }
            | Event::ParamStart { span, .. }
            | Event::ParamText { span, .. }
            | Event::ParamEnd { span }
            | Event::CallEnd { span, .. }
            | Event::ReasoningStart { span }
            | Event::Reasoning { span, .. }
            | Event::ReasoningEnd { span } => *span,
            Event::Block(b) => b.span,
            Event::Diagnostic(d) => d.span,
        }
    }
}
