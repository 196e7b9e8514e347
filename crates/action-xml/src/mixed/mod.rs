//! Both protocols in one stream: TAM blocks (tam-parse) and ACTION blocks, found by one
//! scanner whose grammar has both syntaxes.

use tam_parse::BlockParser;
use tam_parse::scan::Scanner;

use crate::decoder::ActionLayer;
use crate::position::StreamCursor;

mod config;
mod event;
mod sink;

pub use config::MixedConfig;
pub use event::MixedEvent;
pub use sink::mixed_grammar;
use sink::*;

/// Block kind of TAM blocks in the mixed grammar.
const KIND_TAM: usize = 0;

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

    /// Whether argument events are emitted ([`MixedConfig::param_events`](crate::MixedConfig::param_events)).
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

    /// Like [`MixedDecoder::finish`](crate::MixedDecoder::finish), leaving the decoder ready for a new stream.
    pub fn finish_in_place(&mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        let mut on_event = filter(self.param_events, on_event);
        let (scanner, mut sink) = self.parts(&[], &mut on_event);
        scanner.finish(&mut sink);
        self.action.reset();
        self.open_kind = None;
        self.cursor = StreamCursor::default();
    }

    /// Ends a stream that was cut (`finish_reason: "length"`, a transport error): like
    /// [`MixedDecoder::finish`](crate::MixedDecoder::finish), but no end-of-stream repair applies to a block open at the
    /// cut: it yields no call.
    pub fn finish_cut(mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        self.finish_cut_in_place(on_event);
    }

    /// Like [`MixedDecoder::finish_cut`](crate::MixedDecoder::finish_cut), leaving the decoder ready for a new stream.
    pub fn finish_cut_in_place(&mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        let mut on_event = filter(self.param_events, on_event);
        let (scanner, mut sink) = self.parts(&[], &mut on_event);
        scanner.finish_cut(&mut sink);
        self.action.reset();
        self.open_kind = None;
        self.cursor = StreamCursor::default();
    }
}
