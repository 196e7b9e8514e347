//! What the decoder reports, and how each protocol's events become it.

use std::borrow::Cow;

use action_xml::ActionBlock;
use tam_parse::{ByteString, Diagnostic, Span};

use crate::protocol::Protocol;

/// What the [`Decoder`](crate::Decoder) reports, in stream order, for either protocol.
///
/// With feature `serde`, an event serializes as its `tam decode` line (see "Serde" in the
/// crate docs): `Text` as `{"type":"text","text"}`, `Reasoning` as
/// `{"type":"reasoning","text"}`, `ReasoningStart`/`ReasoningEnd` as
/// `{"type":"reasoning_start"|"reasoning_end","span"}`, `TamBlock` and
/// `ActionBlock` as `{"type":"tool_calls","protocol","span","calls":[{"tool","args"}],
/// "diagnostics"}`, `Diagnostic` as `{"type":"diagnostic",…}` with the [`Diagnostic`]'s
/// fields, and the progress events as `block_start`, `command_seen` (with `"protocol":
/// "tam"`), `call_start`, `param_start`, `param_text`, `param_end`, `call_end`, each with
/// its `protocol`. That form is lossy (a text event's span, a block's raw text, call
/// spans and indices are left out), so there is no `Deserialize`: serialize the
/// [`tam_parse::Block`] or [`ActionBlock`] itself for everything.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// Prose outside blocks. Adjacent text events may be split anywhere.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// Its place in the stream.
        span: Span,
    },
    /// A start marker or `<ACTION>` tag: a block is open.
    BlockStart {
        /// The block's protocol.
        protocol: Protocol,
        /// The marker's span.
        span: Span,
    },
    /// A TAM command value closed (for UIs; the [`Event::TamBlock`] is authoritative).
    /// This is TAM's "call begins" event: TAM has no [`Event::CallStart`] because the
    /// tool id is known only when the command value closes, after its parameters may have
    /// streamed, and no [`Event::CallEnd`] because which call a chained key belongs
    /// to is decided at the block's end. Emitted whatever [`Config::param_events`](crate::Config::param_events) says.
    CommandSeen {
        /// Chain number.
        call: u64,
        /// The tool id.
        tool: ByteString,
        /// The command entry's span.
        span: Span,
    },
    /// A closed TAM block.
    TamBlock(tam_parse::Block),
    /// A closed ACTION block.
    ActionBlock(ActionBlock),
    /// A problem outside any block: an unterminated TAM block, invalid UTF-8, an
    /// `<ACTION>` mention in prose (`marker_in_prose`).
    Diagnostic(Diagnostic),
    /// A reasoning section opens ([`Config::reasoning_tags`](crate::Config::reasoning_tags)): `span` covers its open
    /// tag (`<think>`, `<thinking>`).
    ReasoningStart {
        /// The open tag's span.
        span: Span,
    },
    /// Reasoning: the content of a `<think>` section, tags excluded, as early as possible.
    /// Adjacent pieces may be split anywhere. Never decoded into calls: show it apart from
    /// the reply (an OpenAI-style `reasoning_content`).
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
    /// An ACTION call element's start tag is complete ([`action_xml::Event::CallStart`]). TAM reports
    /// [`Event::CommandSeen`] instead.
    CallStart {
        /// The block's protocol (always [`Protocol::Action`]).
        protocol: Protocol,
        /// The call's place in its block, from 0.
        index: usize,
        /// The tool id as written.
        tool: String,
        /// The start tag.
        span: Span,
    },
    /// A parameter's value begins (ACTION [`action_xml::Event::ParamStart`], TAM
    /// [`tam_parse::Event::ParamStart`]); `span` is the open tag (ACTION) or the key (TAM).
    ParamStart {
        /// The block's protocol.
        protocol: Protocol,
        /// The parameter's name as written (TAM: chain suffix not stripped).
        key: Cow<'a, str>,
        /// The start tag (ACTION) or the key (TAM).
        span: Span,
    },
    /// A piece of a parameter's value, borrowed (ACTION [`action_xml::Event::ParamText`], TAM
    /// [`tam_parse::Event::ParamText`]). The pieces of one parameter concatenated are its
    /// final value: exactly the TAM value; for ACTION, the element's decoded content,
    /// whose edges [`ValueEdges`](crate::ValueEdges) trims as the block does.
    ParamText {
        /// The block's protocol.
        protocol: Protocol,
        /// The piece.
        text: Cow<'a, str>,
        /// Where it was written.
        span: Span,
        /// ACTION: the piece is CDATA content (see
        /// [`action_xml::Event::ParamText`]); TAM: always false.
        cdata: bool,
    },
    /// A parameter's value closed ([`action_xml::Event::ParamEnd`], [`tam_parse::Event::ParamEnd`]).
    ParamEnd {
        /// The block's protocol.
        protocol: Protocol,
        /// The whole parameter element (ACTION) or entry, key to close marker (TAM).
        span: Span,
    },
    /// An ACTION call element closed ([`action_xml::Event::CallEnd`]).
    CallEnd {
        /// The block's protocol.
        protocol: Protocol,
        /// The call's place in its block.
        index: usize,
        /// The whole call element.
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
            Event::BlockStart { protocol, span } => Event::BlockStart { protocol, span },
            Event::CommandSeen { call, tool, span } => Event::CommandSeen { call, tool, span },
            Event::TamBlock(b) => Event::TamBlock(b),
            Event::ActionBlock(b) => Event::ActionBlock(b),
            Event::Diagnostic(d) => Event::Diagnostic(d),
            Event::ReasoningStart { span } => Event::ReasoningStart { span },
            Event::Reasoning { text, span } => Event::Reasoning {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::ReasoningEnd { span } => Event::ReasoningEnd { span },
            Event::CallStart {
                protocol,
                index,
                tool,
                span,
            } => Event::CallStart {
                protocol,
                index,
                tool,
                span,
            },
            Event::ParamStart {
                protocol,
                key,
                span,
            } => Event::ParamStart {
                protocol,
                key: Cow::Owned(key.into_owned()),
                span,
            },
            Event::ParamText {
                protocol,
                text,
                span,
                cdata,
            } => Event::ParamText {
                protocol,
                text: Cow::Owned(text.into_owned()),
                span,
                cdata,
            },
            Event::ParamEnd { protocol, span } => Event::ParamEnd { protocol, span },
            Event::CallEnd {
                protocol,
                index,
                span,
            } => Event::CallEnd {
                protocol,
                index,
                span,
            },
        }
    }

    /// Whether this is an argument-streaming event (`CallStart`, `ParamStart`,
    /// `ParamText`, `ParamEnd`, `CallEnd`): for UIs; the closed block is authoritative.
    pub fn is_argument_event(&self) -> bool {
        matches!(
            self,
            Event::CallStart { .. }
                | Event::ParamStart { .. }
                | Event::ParamText { .. }
                | Event::ParamEnd { .. }
                | Event::CallEnd { .. }
        )
    }

    /// The span of the event.
    pub fn span(&self) -> Span {
        match self {
            Event::Text { span, .. }
            | Event::BlockStart { span, .. }
            | Event::CommandSeen { span, .. }
            | Event::CallStart { span, .. }
            | Event::ParamStart { span, .. }
            | Event::ParamText { span, .. }
            | Event::ParamEnd { span, .. }
            | Event::CallEnd { span, .. }
            | Event::ReasoningStart { span }
            | Event::Reasoning { span, .. }
            | Event::ReasoningEnd { span } => *span,
            Event::TamBlock(b) => b.span,
            Event::ActionBlock(b) => b.span,
            Event::Diagnostic(d) => d.span,
        }
    }
}

/// A TAM decoder's event as the decoder reports it. `tam_parse::Event` is
/// exhaustive: a new TAM event is a breaking change that this `match` must learn.
impl<'a> From<tam_parse::Event<'a>> for Event<'a> {
    fn from(event: tam_parse::Event<'a>) -> Event<'a> {
        match event {
            tam_parse::Event::Text { text, span } => Event::Text { text, span },
            tam_parse::Event::BlockStart { span } => Event::BlockStart {
                protocol: Protocol::Tam,
                span,
            },
            tam_parse::Event::CommandSeen { call, tool, span } => {
                Event::CommandSeen { call, tool, span }
            }
            tam_parse::Event::Block(block) => Event::TamBlock(block),
            tam_parse::Event::Diagnostic(d) => Event::Diagnostic(d),
            tam_parse::Event::ParamStart { key, span } => Event::ParamStart {
                protocol: Protocol::Tam,
                key,
                span,
            },
            tam_parse::Event::ParamText { text, span } => Event::ParamText {
                protocol: Protocol::Tam,
                text,
                span,
                cdata: false,
            },
            tam_parse::Event::ParamEnd { span } => Event::ParamEnd {
                protocol: Protocol::Tam,
                span,
            },
            tam_parse::Event::ReasoningStart { span } => Event::ReasoningStart { span },
            tam_parse::Event::Reasoning { text, span } => Event::Reasoning { text, span },
            tam_parse::Event::ReasoningEnd { span } => Event::ReasoningEnd { span },
        }
    }
}

/// An ACTION decoder's event as the decoder reports it.
impl<'a> From<action_xml::Event<'a>> for Event<'a> {
    fn from(event: action_xml::Event<'a>) -> Event<'a> {
        match event {
            action_xml::Event::Text { text, span } => Event::Text { text, span },
            action_xml::Event::BlockStart { span } => Event::BlockStart {
                protocol: Protocol::Action,
                span,
            },
            action_xml::Event::Block(block) => Event::ActionBlock(block),
            action_xml::Event::Diagnostic(d) => Event::Diagnostic(d),
            action_xml::Event::CallStart { index, tool, span } => Event::CallStart {
                protocol: Protocol::Action,
                index,
                tool,
                span,
            },
            action_xml::Event::ParamStart { key, span } => Event::ParamStart {
                protocol: Protocol::Action,
                key,
                span,
            },
            action_xml::Event::ParamText { text, span, cdata } => Event::ParamText {
                protocol: Protocol::Action,
                text,
                span,
                cdata,
            },
            action_xml::Event::ParamEnd { span } => Event::ParamEnd {
                protocol: Protocol::Action,
                span,
            },
            action_xml::Event::CallEnd { index, span } => Event::CallEnd {
                protocol: Protocol::Action,
                index,
                span,
            },
            action_xml::Event::ReasoningStart { span } => Event::ReasoningStart { span },
            action_xml::Event::Reasoning { text, span } => Event::Reasoning { text, span },
            action_xml::Event::ReasoningEnd { span } => Event::ReasoningEnd { span },
        }
    }
}

#[cfg(feature = "serde")]
mod wire {
    //! [`Event`](crate::Event)'s serde form: the `tam decode` line. The line is an
    //! internally tagged enum of borrowed fields; spans, protocols, diagnostics and ACTION
    //! arguments are serialized by their own types' impls. Only the call shape is built
    //! here: a call is `{"tool", "args": {K: V}}`, where TAM values are the
    //! strings under each key as written (chain suffix stripped: [`Param::key`]) and ACTION
    //! values are [`ActionCall::args`].

    use serde::ser::{Serialize, Serializer};
    use tam_parse::{Call, Diagnostic, Param, Span};

    use action_xml::ActionCall;

    use super::Event;
    use crate::protocol::Protocol;

    /// One line.
    #[derive(serde::Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Line<'a> {
        Text {
            text: &'a str,
        },
        Reasoning {
            text: &'a str,
        },
        ReasoningStart {
            span: Span,
        },
        ReasoningEnd {
            span: Span,
        },
        ToolCalls {
            protocol: Protocol,
            span: Span,
            calls: Calls<'a>,
            diagnostics: &'a [Diagnostic],
        },
        Diagnostic(&'a Diagnostic),
        BlockStart {
            protocol: Protocol,
            span: Span,
        },
        CommandSeen {
            protocol: Protocol,
            call: u64,
            tool: &'a str,
            span: Span,
        },
        CallStart {
            protocol: Protocol,
            index: usize,
            tool: &'a str,
            span: Span,
        },
        ParamStart {
            protocol: Protocol,
            key: &'a str,
            span: Span,
        },
        ParamText {
            protocol: Protocol,
            text: &'a str,
            span: Span,
            #[serde(skip_serializing_if = "is_false")]
            cdata: bool,
        },
        ParamEnd {
            protocol: Protocol,
            span: Span,
        },
        CallEnd {
            protocol: Protocol,
            index: usize,
            span: Span,
        },
    }

    fn is_false(b: &bool) -> bool {
        !*b
    }

    /// A block's calls, each as `{"tool", "args"}`.
    enum Calls<'a> {
        Tam(&'a [Call]),
        Action(&'a [ActionCall]),
    }

    #[derive(serde::Serialize)]
    struct CallLine<'a, A> {
        tool: &'a str,
        args: A,
    }

    /// A TAM call's parameters as a map from the key as written to the value.
    struct TamArgs<'a>(&'a [Param]);

    impl Serialize for TamArgs<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_map(self.0.iter().map(|p| (&*p.key, &*p.value)))
        }
    }

    impl Serialize for Calls<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match self {
                Calls::Tam(calls) => serializer.collect_seq(calls.iter().map(|c| CallLine {
                    tool: &c.tool,
                    args: TamArgs(&c.params),
                })),
                Calls::Action(calls) => serializer.collect_seq(calls.iter().map(|c| CallLine {
                    tool: &c.tool,
                    args: &c.args,
                })),
            }
        }
    }

    impl<'a> From<&'a Event<'_>> for Line<'a> {
        fn from(event: &'a Event<'_>) -> Line<'a> {
            match event {
                Event::Text { text, .. } => Line::Text { text },
                Event::Reasoning { text, .. } => Line::Reasoning { text },
                Event::ReasoningStart { span } => Line::ReasoningStart { span: *span },
                Event::ReasoningEnd { span } => Line::ReasoningEnd { span: *span },
                Event::TamBlock(block) => Line::ToolCalls {
                    protocol: Protocol::Tam,
                    span: block.span,
                    calls: Calls::Tam(&block.calls),
                    diagnostics: &block.diagnostics,
                },
                Event::ActionBlock(block) => Line::ToolCalls {
                    protocol: Protocol::Action,
                    span: block.span,
                    calls: Calls::Action(&block.calls),
                    diagnostics: &block.diagnostics,
                },
                Event::Diagnostic(diagnostic) => Line::Diagnostic(diagnostic),
                Event::BlockStart { protocol, span } => Line::BlockStart {
                    protocol: *protocol,
                    span: *span,
                },
                Event::CommandSeen { call, tool, span } => Line::CommandSeen {
                    protocol: Protocol::Tam,
                    call: *call,
                    tool,
                    span: *span,
                },
                Event::CallStart {
                    protocol,
                    index,
                    tool,
                    span,
                } => Line::CallStart {
                    protocol: *protocol,
                    index: *index,
                    tool,
                    span: *span,
                },
                Event::ParamStart {
                    protocol,
                    key,
                    span,
                } => Line::ParamStart {
                    protocol: *protocol,
                    key,
                    span: *span,
                },
                Event::ParamText {
                    protocol,
                    text,
                    span,
                    cdata,
                } => Line::ParamText {
                    protocol: *protocol,
                    text,
                    span: *span,
                    cdata: *cdata,
                },
                Event::ParamEnd { protocol, span } => Line::ParamEnd {
                    protocol: *protocol,
                    span: *span,
                },
                Event::CallEnd {
                    protocol,
                    index,
                    span,
                } => Line::CallEnd {
                    protocol: *protocol,
                    index: *index,
                    span: *span,
                },
            }
        }
    }

    impl Serialize for Event<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            Line::from(self).serialize(serializer)
        }
    }
}
