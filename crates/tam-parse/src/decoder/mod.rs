//! The streaming TAM decoder.

use std::borrow::Cow;
use std::ops::Range;

use crate::diagnostic::Span;
use crate::scan::{BlockView, ClosedBlock, Quote, ScanHandler, Scanner};

mod builder;
mod config;
mod event;
mod parser;

use builder::*;
use config::*;
pub use config::{Config, Dialect, ESCAPE_CLOSE, ESCAPE_OPEN, VALUE_CLOSE, VALUE_OPEN};
pub use event::Event;
pub use parser::BlockParser;

/// Connects the scanner to a [`BlockParser`] and to the caller's event callback.
struct Sink<'s, F> {
    parser: &'s mut BlockParser,
    out: &'s mut F,
}

impl<F: FnMut(Event<'_>)> ScanHandler for Sink<'_, F> {
    fn text(&mut self, text: &str, span: Span) {
        (self.out)(Event::Text {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn block_opened(&mut self, _kind: usize, marker: Span) {
        self.parser.block_opened(marker, self.out);
    }

    fn quoted_marker(&mut self, _kind: usize, marker: Span, quote: Quote) {
        self.parser.quoted_marker(marker, quote, self.out);
    }

    fn reasoning_start(&mut self, _tag: &str, span: Span) {
        (self.out)(Event::ReasoningStart { span });
    }

    fn reasoning(&mut self, text: &str, span: Span) {
        (self.out)(Event::Reasoning {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn reasoning_end(&mut self, _tag: &str, span: Span) {
        (self.out)(Event::ReasoningEnd { span });
    }

    fn accept_region(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) -> bool {
        self.parser.accept_region(view, region, marker)
    }

    fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        self.parser.region_opened(view, region, marker);
    }

    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        self.parser.block_progress(view, settled, self.out);
    }

    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        self.parser
            .region_closed(view, region, content, marker, self.out);
    }

    fn block_closed(&mut self, closed: ClosedBlock) {
        self.parser.block_closed(closed, self.out);
    }

    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        self.parser.invalid_utf8(bytes, span, in_block, self.out);
    }
}

/// The streaming TAM decoder. See the [crate documentation](crate).
#[derive(Debug)]
pub struct Decoder {
    scanner: Scanner,
    parser: BlockParser,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Config::default())
    }
}

impl Decoder {
    /// A decoder with `config`.
    pub fn new(config: Config) -> Self {
        Decoder {
            scanner: Scanner::new(config.dialect.grammar(), config.max_block_bytes)
                .with_reasoning(config.reasoning_tags),
            parser: BlockParser::new(config),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.parser.config
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        self.scanner.position()
    }

    /// Bytes held: prose held back (fewer than the start marker's length) or the open
    /// block.
    pub fn buffered(&self) -> usize {
        self.scanner.buffered()
    }

    /// Feeds one text delta; events go to `on_event` as soon as they are decided.
    pub fn feed(&mut self, delta: &str, mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.feed(delta, &mut sink);
    }

    /// Feeds one byte delta. A UTF-8 character may be split across byte deltas; invalid
    /// UTF-8 gets an `invalid_utf8` diagnostic (inside a block, U+FFFD stands in the value).
    pub fn feed_bytes(&mut self, delta: &[u8], mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.feed_bytes(delta, &mut sink);
    }

    /// Ends the stream: emits held-back prose and reports a block left open.
    pub fn finish(mut self, on_event: impl FnMut(Event<'_>)) {
        self.finish_in_place(on_event);
    }

    /// Like [`Decoder::finish`], leaving the decoder ready for a new stream.
    pub fn finish_in_place(&mut self, mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.finish(&mut sink);
    }

    /// Ends a stream that was cut (`finish_reason: "length"`, a transport error): like
    /// [`Decoder::finish`], but no end-of-stream repair applies to a block open at the cut:
    /// it yields no call.
    pub fn finish_cut(mut self, on_event: impl FnMut(Event<'_>)) {
        self.finish_cut_in_place(on_event);
    }

    /// Like [`Decoder::finish_cut`], leaving the decoder ready for a new stream.
    pub fn finish_cut_in_place(&mut self, mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.finish_cut(&mut sink);
    }
}

/// Decodes a whole text at once: the events of feeding it as one delta, then finishing.
pub fn decode(text: &str, config: Config) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut decoder = Decoder::new(config);
    decoder.feed(text, |e| events.push(e.into_owned()));
    decoder.finish(|e| events.push(e.into_owned()));
    events
}
