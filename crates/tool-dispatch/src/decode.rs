//! One face over the protocol decoders the agent loop can use: tam-parse's TAM decoder,
//! action-xml's ACTION decoder, and action-xml's mixed decoder for streams with both.

use std::borrow::Cow;

use serde_json::Value;
use tam_parse::{Diagnostic, Span};

use crate::ToolCall;

/// The tool-call protocol the model writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// TAM blocks (`<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`, or the VCP dialect); keys match
    /// parameters canonically.
    #[default]
    Tam,
    /// `<ACTION>` XML blocks; parameter tags must equal the declared names.
    Action,
    /// Both, in one stream.
    Both,
}

/// The protocol one block was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// A TAM block.
    Tam,
    /// An ACTION block.
    Action,
}

/// A decoder event with the protocol's calls already made protocol-neutral.
pub(crate) enum Decoded<'a> {
    Text(Cow<'a, str>),
    /// A start marker or `<ACTION>` tag: a block of this protocol is open.
    BlockStart {
        kind: BlockKind,
        span: Span,
    },
    Block {
        kind: BlockKind,
        span: Span,
        /// 0 for TAM blocks and the first ACTION block; 1, 2, … for later ACTION blocks.
        index: usize,
        calls: Vec<ToolCall>,
        diagnostics: Vec<Diagnostic>,
    },
    Diagnostic(Diagnostic),
}

pub(crate) enum StreamDecoder {
    Tam(tam_parse::Decoder),
    Action(action_xml::Decoder),
    Both(action_xml::MixedDecoder),
}

impl StreamDecoder {
    pub(crate) fn new(
        protocol: Protocol,
        tam: tam_parse::Config,
        action: action_xml::Config,
    ) -> Self {
        match protocol {
            Protocol::Tam => Self::Tam(tam_parse::Decoder::new(tam)),
            Protocol::Action => Self::Action(action_xml::Decoder::new(action)),
            Protocol::Both => {
                let mut config = action_xml::MixedConfig::default();
                config.tam = tam;
                config.action = action;
                Self::Both(action_xml::MixedDecoder::new(config))
            }
        }
    }

    pub(crate) fn feed(&mut self, delta: &str, out: &mut impl FnMut(Decoded<'_>)) {
        match self {
            Self::Tam(d) => d.feed(delta, |e| route(e.into(), out)),
            Self::Action(d) => d.feed(delta, |e| route(e.into(), out)),
            Self::Both(d) => d.feed(delta, |e| route(e, out)),
        }
    }

    pub(crate) fn finish(self, out: &mut impl FnMut(Decoded<'_>)) {
        match self {
            Self::Tam(d) => d.finish(|e| route(e.into(), out)),
            Self::Action(d) => d.finish(|e| route(e.into(), out)),
            Self::Both(d) => d.finish(|e| route(e, out)),
        }
    }

    /// End of a cut stream (SPEC §5): no repair for a block open at the cut.
    pub(crate) fn finish_cut(self, out: &mut impl FnMut(Decoded<'_>)) {
        match self {
            Self::Tam(d) => d.finish_cut(|e| route(e.into(), out)),
            Self::Action(d) => d.finish_cut(|e| route(e.into(), out)),
            Self::Both(d) => d.finish_cut(|e| route(e, out)),
        }
    }
}

/// Every decoder's events, as the mixed decoder's (action-xml's `From` conversions), made
/// protocol-neutral. `CommandSeen` is not passed on: the closed block is authoritative.
fn route(event: action_xml::MixedEvent<'_>, out: &mut impl FnMut(Decoded<'_>)) {
    match event {
        action_xml::MixedEvent::Text { text, .. } => out(Decoded::Text(text)),
        action_xml::MixedEvent::BlockStart { protocol, span } => out(Decoded::BlockStart {
            kind: match protocol {
                action_xml::Protocol::Tam => BlockKind::Tam,
                action_xml::Protocol::Action => BlockKind::Action,
            },
            span,
        }),
        action_xml::MixedEvent::TamBlock(block) => out(tam_block(block)),
        action_xml::MixedEvent::ActionBlock(block) => out(action_block(block)),
        action_xml::MixedEvent::Diagnostic(d) => out(Decoded::Diagnostic(d)),
        _ => {}
    }
}

/// TAM calls: text values, keys as written (chain suffix stripped), matched canonically.
fn tam_block(block: tam_parse::Block) -> Decoded<'static> {
    let calls = block
        .calls
        .iter()
        .map(|call| {
            let args = call
                .params
                .iter()
                .map(|p| (p.key.to_string(), Value::String(p.value.to_string())))
                .collect();
            ToolCall::canonical(call.tool.to_string(), args)
        })
        .collect();
    Decoded::Block {
        kind: BlockKind::Tam,
        span: block.span,
        index: 0,
        calls,
        diagnostics: block.diagnostics,
    }
}

/// ACTION calls: JSON values, tag names matched exactly.
fn action_block(block: action_xml::ActionBlock) -> Decoded<'static> {
    let calls = block
        .calls
        .into_iter()
        .map(|call| ToolCall::new(call.tool, call.args))
        .collect();
    Decoded::Block {
        kind: BlockKind::Action,
        span: block.span,
        index: block.index,
        calls,
        diagnostics: block.diagnostics,
    }
}
