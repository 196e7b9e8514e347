//! Both protocols in one stream: TAM blocks (tam-parse) and ACTION blocks, found by one
//! scanner whose grammar has both syntaxes.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use tam_parse::scan::{BlockView, ClosedBlock, Grammar, Quote, ScanHandler, Scanner};
use tam_parse::{BlockParser, ByteString, Diagnostic, Dialect, Span};

use crate::call::ActionBlock;
use crate::config::{Config, block_syntax};
use crate::decoder::{ActionLayer, invalid_utf8, quoted_tag};
use crate::event::Event;
use crate::position::StreamCursor;
use crate::protocol::{Protocol, ProtocolChoice};

/// Block kind of TAM blocks in the mixed grammar.
const KIND_TAM: usize = 0;

/// Settings of a [`MixedDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MixedConfig {
    /// TAM settings: dialect and per-block limits (`max_calls`, `max_key_len`). Its
    /// `param_events` is overridden by [`MixedConfig::param_events`].
    pub tam: tam_parse::Config,
    /// ACTION settings. Its `max_block_bytes` is the block size limit of both protocols
    /// (the scanner has one).
    pub action: Config,
    /// Stream arguments for both protocols: [`MixedEvent::CallStart`],
    /// [`MixedEvent::ParamStart`], [`MixedEvent::ParamText`], [`MixedEvent::ParamEnd`] and
    /// [`MixedEvent::CallEnd`] while blocks are written. Off, none of them is emitted.
    /// Default: `true` (measured cost: see the crate docs, "Both protocols in one
    /// stream").
    pub param_events: bool,
    /// Which protocol(s) an `tam::Decoder` looks for. Default:
    /// [`ProtocolChoice::Auto`]. [`MixedDecoder`] ignores it: it always reads both.
    pub protocol: ProtocolChoice,
    /// Read `<think>` … `</think>` and `<thinking>` … `</thinking>` sections as reasoning
    /// ([`MixedEvent::ReasoningStart`], [`MixedEvent::Reasoning`],
    /// [`MixedEvent::ReasoningEnd`]) for every protocol choice, never as calls (SPEC §2.2):
    /// the open tag counts where it is the first non-blank text of a prose line outside a
    /// code fence (models write it at the very start of the reply, sometimes after blank
    /// lines), and the section runs to its matching close tag or to the end of the stream.
    /// Overrides `tam.reasoning_tags` and `action.reasoning_tags`. Default: `true`: the
    /// front door is what `tam decode`, `tam serve` and the agent read a model's reply
    /// with, and all of them must keep reasoning apart from calls.
    pub reasoning_tags: bool,
}

impl Default for MixedConfig {
    fn default() -> Self {
        MixedConfig {
            tam: tam_parse::Config::default(),
            action: Config::default(),
            param_events: true,
            protocol: ProtocolChoice::default(),
            reasoning_tags: true,
        }
    }
}

impl MixedConfig {
    /// The defaults for `protocol`.
    pub fn for_protocol(protocol: ProtocolChoice) -> Self {
        MixedConfig {
            protocol,
            ..MixedConfig::default()
        }
    }

    /// These settings with argument streaming ([`MixedConfig::param_events`]) on or off.
    pub fn with_param_events(mut self, on: bool) -> Self {
        self.param_events = on;
        self
    }

    /// These settings with reasoning sections ([`MixedConfig::reasoning_tags`]) on or off.
    pub fn with_reasoning_tags(mut self, on: bool) -> Self {
        self.reasoning_tags = on;
        self
    }
}

/// What a [`MixedDecoder`] (and the `tam::Decoder`) reports, in
/// stream order.
///
/// With feature `serde`, an event serializes as its `tam decode` line (SPEC §6; see
/// "Serde" in the crate docs): `Text` as `{"type":"text","text"}`, `Reasoning` as
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
pub enum MixedEvent<'a> {
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
    /// A TAM command value closed (for UIs; the [`MixedEvent::TamBlock`] is authoritative).
    /// This is TAM's "call begins" event: TAM has no [`MixedEvent::CallStart`] because the
    /// tool id is known only when the command value closes, after its parameters may have
    /// streamed, and no [`MixedEvent::CallEnd`] because which call a chained key belongs
    /// to is decided at the block's end. Emitted whatever [`MixedConfig::param_events`] says.
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
    /// A reasoning section opens ([`MixedConfig::reasoning_tags`]): `span` covers its open
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
    /// An ACTION call element's start tag is complete ([`Event::CallStart`]). TAM reports
    /// [`MixedEvent::CommandSeen`] instead.
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
    /// A parameter's value begins (ACTION [`Event::ParamStart`], TAM
    /// [`tam_parse::Event::ParamStart`]); `span` is the open tag (ACTION) or the key (TAM).
    ParamStart {
        /// The block's protocol.
        protocol: Protocol,
        /// The parameter's name as written (TAM: chain suffix not stripped).
        key: Cow<'a, str>,
        /// The start tag (ACTION) or the key (TAM).
        span: Span,
    },
    /// A piece of a parameter's value, borrowed (ACTION [`Event::ParamText`], TAM
    /// [`tam_parse::Event::ParamText`]). The pieces of one parameter concatenated are its
    /// final value: exactly the TAM value, and the ACTION element's decoded text content.
    ParamText {
        /// The block's protocol.
        protocol: Protocol,
        /// The piece.
        text: Cow<'a, str>,
        /// Where it was written.
        span: Span,
    },
    /// A parameter's value closed ([`Event::ParamEnd`], [`tam_parse::Event::ParamEnd`]).
    ParamEnd {
        /// The block's protocol.
        protocol: Protocol,
        /// The whole parameter element (ACTION) or entry, key to close marker (TAM).
        span: Span,
    },
    /// An ACTION call element closed ([`Event::CallEnd`]).
    CallEnd {
        /// The block's protocol.
        protocol: Protocol,
        /// The call's place in its block.
        index: usize,
        /// The whole call element.
        span: Span,
    },
}

impl MixedEvent<'_> {
    /// The event with no borrow left.
    pub fn into_owned(self) -> MixedEvent<'static> {
        match self {
            MixedEvent::Text { text, span } => MixedEvent::Text {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            MixedEvent::BlockStart { protocol, span } => MixedEvent::BlockStart { protocol, span },
            MixedEvent::CommandSeen { call, tool, span } => {
                MixedEvent::CommandSeen { call, tool, span }
            }
            MixedEvent::TamBlock(b) => MixedEvent::TamBlock(b),
            MixedEvent::ActionBlock(b) => MixedEvent::ActionBlock(b),
            MixedEvent::Diagnostic(d) => MixedEvent::Diagnostic(d),
            MixedEvent::ReasoningStart { span } => MixedEvent::ReasoningStart { span },
            MixedEvent::Reasoning { text, span } => MixedEvent::Reasoning {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            MixedEvent::ReasoningEnd { span } => MixedEvent::ReasoningEnd { span },
            MixedEvent::CallStart {
                protocol,
                index,
                tool,
                span,
            } => MixedEvent::CallStart {
                protocol,
                index,
                tool,
                span,
            },
            MixedEvent::ParamStart {
                protocol,
                key,
                span,
            } => MixedEvent::ParamStart {
                protocol,
                key: Cow::Owned(key.into_owned()),
                span,
            },
            MixedEvent::ParamText {
                protocol,
                text,
                span,
            } => MixedEvent::ParamText {
                protocol,
                text: Cow::Owned(text.into_owned()),
                span,
            },
            MixedEvent::ParamEnd { protocol, span } => MixedEvent::ParamEnd { protocol, span },
            MixedEvent::CallEnd {
                protocol,
                index,
                span,
            } => MixedEvent::CallEnd {
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
            MixedEvent::CallStart { .. }
                | MixedEvent::ParamStart { .. }
                | MixedEvent::ParamText { .. }
                | MixedEvent::ParamEnd { .. }
                | MixedEvent::CallEnd { .. }
        )
    }

    /// The span of the event.
    pub fn span(&self) -> Span {
        match self {
            MixedEvent::Text { span, .. }
            | MixedEvent::BlockStart { span, .. }
            | MixedEvent::CommandSeen { span, .. }
            | MixedEvent::CallStart { span, .. }
            | MixedEvent::ParamStart { span, .. }
            | MixedEvent::ParamText { span, .. }
            | MixedEvent::ParamEnd { span, .. }
            | MixedEvent::CallEnd { span, .. }
            | MixedEvent::ReasoningStart { span }
            | MixedEvent::Reasoning { span, .. }
            | MixedEvent::ReasoningEnd { span } => *span,
            MixedEvent::TamBlock(b) => b.span,
            MixedEvent::ActionBlock(b) => b.span,
            MixedEvent::Diagnostic(d) => d.span,
        }
    }
}

/// The grammar with TAM blocks of `dialect` as kind 0 and ACTION blocks as kind 1 (built
/// once per dialect and process).
pub fn mixed_grammar(dialect: Dialect) -> Arc<Grammar> {
    static TAM: OnceLock<Arc<Grammar>> = OnceLock::new();
    static VCP: OnceLock<Arc<Grammar>> = OnceLock::new();
    let cell = match dialect {
        Dialect::Tam => &TAM,
        Dialect::Vcp => &VCP,
    };
    Arc::clone(cell.get_or_init(|| {
        Grammar::new(vec![dialect.block_syntax(), block_syntax()])
            .expect("the mixed grammar is valid")
    }))
}

/// Turns TAM events into mixed ones.
fn forward_tam<'a, F: FnMut(MixedEvent<'_>)>(
    out: &'a mut F,
) -> impl FnMut(tam_parse::Event<'_>) + 'a {
    move |event| out(MixedEvent::from(event))
}

/// A TAM decoder's event as the mixed decoder reports it. `tam_parse::Event` is
/// exhaustive: a new TAM event is a breaking change that this `match` must learn.
impl<'a> From<tam_parse::Event<'a>> for MixedEvent<'a> {
    fn from(event: tam_parse::Event<'a>) -> MixedEvent<'a> {
        match event {
            tam_parse::Event::Text { text, span } => MixedEvent::Text { text, span },
            tam_parse::Event::BlockStart { span } => MixedEvent::BlockStart {
                protocol: Protocol::Tam,
                span,
            },
            tam_parse::Event::CommandSeen { call, tool, span } => {
                MixedEvent::CommandSeen { call, tool, span }
            }
            tam_parse::Event::Block(block) => MixedEvent::TamBlock(block),
            tam_parse::Event::Diagnostic(d) => MixedEvent::Diagnostic(d),
            tam_parse::Event::ParamStart { key, span } => MixedEvent::ParamStart {
                protocol: Protocol::Tam,
                key,
                span,
            },
            tam_parse::Event::ParamText { text, span } => MixedEvent::ParamText {
                protocol: Protocol::Tam,
                text,
                span,
            },
            tam_parse::Event::ParamEnd { span } => MixedEvent::ParamEnd {
                protocol: Protocol::Tam,
                span,
            },
            tam_parse::Event::ReasoningStart { span } => MixedEvent::ReasoningStart { span },
            tam_parse::Event::Reasoning { text, span } => MixedEvent::Reasoning { text, span },
            tam_parse::Event::ReasoningEnd { span } => MixedEvent::ReasoningEnd { span },
        }
    }
}

/// An ACTION decoder's event as the mixed decoder reports it.
impl<'a> From<Event<'a>> for MixedEvent<'a> {
    fn from(event: Event<'a>) -> MixedEvent<'a> {
        match event {
            Event::Text { text, span } => MixedEvent::Text { text, span },
            Event::BlockStart { span } => MixedEvent::BlockStart {
                protocol: Protocol::Action,
                span,
            },
            Event::Block(block) => MixedEvent::ActionBlock(block),
            Event::Diagnostic(d) => MixedEvent::Diagnostic(d),
            Event::CallStart { index, tool, span } => MixedEvent::CallStart {
                protocol: Protocol::Action,
                index,
                tool,
                span,
            },
            Event::ParamStart { key, span } => MixedEvent::ParamStart {
                protocol: Protocol::Action,
                key,
                span,
            },
            Event::ParamText { text, span } => MixedEvent::ParamText {
                protocol: Protocol::Action,
                text,
                span,
            },
            Event::ParamEnd { span } => MixedEvent::ParamEnd {
                protocol: Protocol::Action,
                span,
            },
            Event::CallEnd { index, span } => MixedEvent::CallEnd {
                protocol: Protocol::Action,
                index,
                span,
            },
            Event::ReasoningStart { span } => MixedEvent::ReasoningStart { span },
            Event::Reasoning { text, span } => MixedEvent::Reasoning { text, span },
            Event::ReasoningEnd { span } => MixedEvent::ReasoningEnd { span },
        }
    }
}

/// `out`, without argument events unless `param_events` (off, neither layer computes them;
/// the filter is what guarantees it).
fn filter<F: FnMut(MixedEvent<'_>)>(param_events: bool, mut out: F) -> impl FnMut(MixedEvent<'_>) {
    move |event| {
        if param_events || !event.is_argument_event() {
            out(event);
        }
    }
}

struct MixedSink<'s, F> {
    tam: &'s mut BlockParser,
    action: &'s mut ActionLayer,
    open_kind: &'s mut Option<usize>,
    cursor: &'s StreamCursor,
    delta: &'s [u8],
    out: &'s mut F,
}

impl<F: FnMut(MixedEvent<'_>)> ScanHandler for MixedSink<'_, F> {
    fn text(&mut self, text: &str, span: Span) {
        (self.out)(MixedEvent::Text {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn quoted_marker(&mut self, kind: usize, marker: Span, quote: Quote) {
        if kind == KIND_TAM {
            self.tam
                .quoted_marker(marker, quote, &mut forward_tam(self.out));
        } else {
            (self.out)(MixedEvent::Diagnostic(quoted_tag(marker, quote)));
        }
    }

    fn reasoning_start(&mut self, _tag: &str, span: Span) {
        (self.out)(MixedEvent::ReasoningStart { span });
    }

    fn reasoning(&mut self, text: &str, span: Span) {
        (self.out)(MixedEvent::Reasoning {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn reasoning_end(&mut self, _tag: &str, span: Span) {
        (self.out)(MixedEvent::ReasoningEnd { span });
    }

    fn block_opened(&mut self, kind: usize, marker: Span) {
        *self.open_kind = Some(kind);
        if kind == KIND_TAM {
            self.tam.block_opened(marker, &mut forward_tam(self.out));
        } else {
            let start = self.cursor.at(self.delta, marker.start);
            self.action.block_opened(marker, start);
            (self.out)(MixedEvent::BlockStart {
                protocol: Protocol::Action,
                span: marker,
            });
        }
    }

    fn accept_region(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) -> bool {
        view.kind() != KIND_TAM || self.tam.accept_region(view, region, marker)
    }

    fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        if view.kind() == KIND_TAM {
            self.tam.region_opened(view, region, marker);
        } else {
            self.action.region_opened(region, marker);
        }
    }

    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        if view.kind() == KIND_TAM {
            self.tam
                .block_progress(view, settled, &mut forward_tam(self.out));
        } else {
            let out = &mut *self.out;
            self.action
                .progress(view, settled, &mut |e: Event<'_>| out(MixedEvent::from(e)));
        }
    }

    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        if view.kind() == KIND_TAM {
            self.tam
                .region_closed(view, region, content, marker, &mut forward_tam(self.out));
        } else {
            self.action.region_closed(content, marker);
        }
    }

    fn block_closed(&mut self, closed: ClosedBlock) {
        *self.open_kind = None;
        if closed.kind == KIND_TAM {
            self.tam.block_closed(closed, &mut forward_tam(self.out));
        } else {
            let out = &mut *self.out;
            self.action
                .block_closed(&closed, &mut |e: Event<'_>| out(MixedEvent::from(e)));
        }
    }

    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        match (in_block, *self.open_kind) {
            (true, Some(KIND_TAM)) => {
                self.tam
                    .invalid_utf8(bytes, span, true, &mut forward_tam(self.out));
            }
            (true, _) => self.action.invalid_utf8_in_block(invalid_utf8(bytes, span)),
            (false, _) => {
                (self.out)(MixedEvent::Diagnostic(invalid_utf8(bytes, span)));
            }
        }
    }
}

/// A streaming decoder for output that may hold TAM blocks and ACTION blocks, in any
/// order: one scanner, one pass, the events of both protocols in stream order.
///
/// ```
/// use action_xml::{MixedConfig, MixedDecoder, MixedEvent};
///
/// let mut decoder = MixedDecoder::new(MixedConfig::default());
/// let mut tools = Vec::new();
/// let mut on_event = |e: MixedEvent<'_>| match e {
///     MixedEvent::TamBlock(b) => tools.extend(b.calls.iter().map(|c| c.tool.to_string())),
///     MixedEvent::ActionBlock(b) => tools.extend(b.calls.iter().map(|c| c.tool.clone())),
///     _ => {}
/// };
/// decoder.feed("<|[REQUEST_TOOL]|>command:「始」A「末」<|[END_TOOL]|>", &mut on_event);
/// decoder.feed("<ACTION><B/></ACTION>", &mut on_event);
/// decoder.finish(&mut on_event);
/// assert_eq!(tools, ["A", "B"]);
/// ```
#[derive(Debug)]
pub struct MixedDecoder {
    scanner: Scanner,
    tam: BlockParser,
    action: ActionLayer,
    open_kind: Option<usize>,
    cursor: StreamCursor,
    param_events: bool,
}

impl Default for MixedDecoder {
    fn default() -> Self {
        MixedDecoder::new(MixedConfig::default())
    }
}

impl MixedDecoder {
    /// A decoder with `config`.
    pub fn new(config: MixedConfig) -> Self {
        let limit = config.action.max_block_bytes;
        let mut tam = config.tam;
        tam.max_block_bytes = limit;
        tam.param_events = config.param_events;
        MixedDecoder {
            scanner: Scanner::new(mixed_grammar(tam.dialect), limit)
                .with_reasoning(config.reasoning_tags),
            tam: BlockParser::new(tam),
            action: ActionLayer::new(config.action, config.param_events),
            open_kind: None,
            cursor: StreamCursor::default(),
            param_events: config.param_events,
        }
    }

    /// Whether argument events are emitted ([`MixedConfig::param_events`]).
    pub fn param_events(&self) -> bool {
        self.param_events
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        self.scanner.position()
    }

    /// Bytes held: prose held back (a possible marker prefix) or the open block.
    pub fn buffered(&self) -> usize {
        self.scanner.buffered()
    }

    /// The scanner and a sink for one delta, borrowed apart.
    fn parts<'s, F>(
        &'s mut self,
        delta: &'s [u8],
        out: &'s mut F,
    ) -> (&'s mut Scanner, MixedSink<'s, F>) {
        let sink = MixedSink {
            tam: &mut self.tam,
            action: &mut self.action,
            open_kind: &mut self.open_kind,
            cursor: &self.cursor,
            delta,
            out,
        };
        (&mut self.scanner, sink)
    }

    /// Feeds one text delta; events go to `on_event` as soon as they are decided.
    pub fn feed(&mut self, delta: &str, on_event: impl FnMut(MixedEvent<'_>)) {
        let mut on_event = filter(self.param_events, on_event);
        let (scanner, mut sink) = self.parts(delta.as_bytes(), &mut on_event);
        scanner.feed(delta, &mut sink);
        self.cursor.finish_delta(delta.as_bytes());
    }

    /// Feeds one byte delta (a UTF-8 character may be split across deltas).
    pub fn feed_bytes(&mut self, delta: &[u8], on_event: impl FnMut(MixedEvent<'_>)) {
        let mut on_event = filter(self.param_events, on_event);
        let (scanner, mut sink) = self.parts(delta, &mut on_event);
        scanner.feed_bytes(delta, &mut sink);
        self.cursor.finish_delta(delta);
    }

    /// Ends the stream: emits held-back prose and closes a block left open.
    pub fn finish(mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        self.finish_in_place(on_event);
    }

    /// Like [`MixedDecoder::finish`], leaving the decoder ready for a new stream.
    pub fn finish_in_place(&mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        let mut on_event = filter(self.param_events, on_event);
        let (scanner, mut sink) = self.parts(&[], &mut on_event);
        scanner.finish(&mut sink);
        self.action.reset();
        self.open_kind = None;
        self.cursor = StreamCursor::default();
    }

    /// Ends a stream that was cut (`finish_reason: "length"`, a transport error): like
    /// [`MixedDecoder::finish`], but no end-of-stream repair applies to a block open at the
    /// cut (SPEC §5): it yields no call.
    pub fn finish_cut(mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        self.finish_cut_in_place(on_event);
    }

    /// Like [`MixedDecoder::finish_cut`], leaving the decoder ready for a new stream.
    pub fn finish_cut_in_place(&mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        let mut on_event = filter(self.param_events, on_event);
        let (scanner, mut sink) = self.parts(&[], &mut on_event);
        scanner.finish_cut(&mut sink);
        self.action.reset();
        self.open_kind = None;
        self.cursor = StreamCursor::default();
    }
}

#[cfg(feature = "serde")]
mod wire {
    //! [`MixedEvent`]'s serde form: the `tam decode` line of SPEC §6. The line is an
    //! internally tagged enum of borrowed fields; spans, protocols, diagnostics and ACTION
    //! arguments are serialized by their own types' impls. Only the call shape is built
    //! here: SPEC §6 lists a call as `{"tool", "args": {K: V}}`, where TAM values are the
    //! strings under each key as written (chain suffix stripped: [`Param::key`]) and ACTION
    //! values are [`ActionCall::args`].

    use serde::ser::{Serialize, Serializer};
    use tam_parse::{Call, Diagnostic, Param, Span};

    use super::MixedEvent;
    use crate::call::ActionCall;
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

    impl<'a> From<&'a MixedEvent<'_>> for Line<'a> {
        fn from(event: &'a MixedEvent<'_>) -> Line<'a> {
            match event {
                MixedEvent::Text { text, .. } => Line::Text { text },
                MixedEvent::Reasoning { text, .. } => Line::Reasoning { text },
                MixedEvent::ReasoningStart { span } => Line::ReasoningStart { span: *span },
                MixedEvent::ReasoningEnd { span } => Line::ReasoningEnd { span: *span },
                MixedEvent::TamBlock(block) => Line::ToolCalls {
                    protocol: Protocol::Tam,
                    span: block.span,
                    calls: Calls::Tam(&block.calls),
                    diagnostics: &block.diagnostics,
                },
                MixedEvent::ActionBlock(block) => Line::ToolCalls {
                    protocol: Protocol::Action,
                    span: block.span,
                    calls: Calls::Action(&block.calls),
                    diagnostics: &block.diagnostics,
                },
                MixedEvent::Diagnostic(diagnostic) => Line::Diagnostic(diagnostic),
                MixedEvent::BlockStart { protocol, span } => Line::BlockStart {
                    protocol: *protocol,
                    span: *span,
                },
                MixedEvent::CommandSeen { call, tool, span } => Line::CommandSeen {
                    protocol: Protocol::Tam,
                    call: *call,
                    tool,
                    span: *span,
                },
                MixedEvent::CallStart {
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
                MixedEvent::ParamStart {
                    protocol,
                    key,
                    span,
                } => Line::ParamStart {
                    protocol: *protocol,
                    key,
                    span: *span,
                },
                MixedEvent::ParamText {
                    protocol,
                    text,
                    span,
                } => Line::ParamText {
                    protocol: *protocol,
                    text,
                    span: *span,
                },
                MixedEvent::ParamEnd { protocol, span } => Line::ParamEnd {
                    protocol: *protocol,
                    span: *span,
                },
                MixedEvent::CallEnd {
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

    impl Serialize for MixedEvent<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            Line::from(self).serialize(serializer)
        }
    }
}
