//! What a decoded ACTION block is: the block, its calls and their parameters.

use serde_json::{Map, Value};
use tam_parse::{ByteString, Diagnostic, Span};

/// One tool call: an element inside `<ACTION>`.
///
/// With feature `serde`: `{"tool", "args", "span", "params"}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ActionCall {
    /// The tool id: the element's name as written, namespace prefix included
    /// (`workflow:summarize_text`).
    pub tool: String,
    /// The parameters: one entry per child element, in document order. Values are JSON
    /// strings, arrays (`<item>` children, or a repeated name) or objects.
    pub args: Map<String, Value>,
    /// Where the element is in the stream.
    pub span: Span,
    /// Every parameter element as written, in document order (a repeated name once per
    /// element): the exact source of its content, for a consumer that wants the text
    /// where the XML reading gave an object or an array (tool-schema, for a parameter
    /// declared a string).
    pub params: Vec<ActionParam>,
}

/// One parameter element of a call, as written.
///
/// With feature `serde`: `{"key", "content_span", "source"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ActionParam {
    /// The element's name as written (shares the block's raw text: no copy).
    pub key: ByteString,
    /// The stream span of the element's content: after its start tag, before its close
    /// tag (empty for `<key/>`; to the block body's end when the close tag was missing).
    pub content_span: Span,
    /// The content exactly as the model wrote it: markup, entity references, CDATA
    /// sections and comments untouched, no trimming. It shares the block's raw text
    /// ([`ActionBlock::raw`]): no copy.
    pub source: ByteString,
}

impl ActionParam {
    /// Parameter element `key` whose content, at `content_span`, is `source` as written.
    pub fn new(
        key: impl Into<ByteString>,
        content_span: Span,
        source: impl Into<ByteString>,
    ) -> Self {
        ActionParam {
            key: key.into(),
            content_span,
            source: source.into(),
        }
    }
}

impl ActionCall {
    /// A call of `tool` with `args`, its element at `span`, its parameter elements as
    /// written in `params`.
    pub fn new(
        tool: impl Into<String>,
        args: Map<String, Value>,
        span: Span,
        params: Vec<ActionParam>,
    ) -> Self {
        ActionCall {
            tool: tool.into(),
            args,
            span,
            params,
        }
    }

    /// The exact source of parameter `key`'s content (the first element of that name),
    /// see [`ActionParam::source`].
    pub fn source(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|p| &*p.key == key)
            .map(|p| &*p.source)
    }

    /// The parameter `key`, if given.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.args.get(key)
    }

    /// The parameter `key` when it is a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(Value::as_str)
    }
}

/// A closed `<ACTION>` block: its calls in document order and what was wrong with it.
///
/// With feature `serde`: `{"span", "index", "calls", "diagnostics", "raw"}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ActionBlock {
    /// `<ACTION>` to `</ACTION>` inclusive (to the end of the stream when the close tag
    /// never came).
    pub span: Span,
    /// 0 for the first ACTION block of the stream, 1 for the next, … Blocks after the first
    /// carry warning `extra_action_block`.
    pub index: usize,
    /// The calls, in document order (none when the block is unusable).
    pub calls: Vec<ActionCall>,
    /// Warnings (repairs) and errors about this block, in stream order.
    pub diagnostics: Vec<Diagnostic>,
    /// The block's raw text, tags included (empty when it exceeded `max_block_bytes`).
    pub raw: ByteString,
}

impl ActionBlock {
    /// Block number `index` of the stream at `span`, with `calls`, `diagnostics` and its
    /// `raw` text.
    pub fn new(
        span: Span,
        index: usize,
        calls: Vec<ActionCall>,
        diagnostics: Vec<Diagnostic>,
        raw: impl Into<ByteString>,
    ) -> Self {
        ActionBlock {
            span,
            index,
            calls,
            diagnostics,
            raw: raw.into(),
        }
    }

    /// True when some diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The first error, e.g. to tell the model `Malformed XML in ACTION block: …`.
    pub fn first_error(&self) -> Option<&Diagnostic> {
        self.diagnostics.iter().find(|d| d.is_error())
    }
}
