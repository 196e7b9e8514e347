//! The streaming TAM decoder.

use std::borrow::Cow;
use std::ops::Range;

use crate::diagnostic::Span;
use crate::drive::{Driver, Layer};
use crate::scan::{BlockView, ClosedBlock, Quote, ScanHandler, Scanner};

mod builder;
mod config;
mod event;
mod parser;

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

/// The TAM layer: the block parser reads the blocks the scanner finds.
impl Layer for BlockParser {
    type Event<'e> = Event<'e>;

    #[inline]
    fn handler<'s, F: FnMut(Event<'_>)>(
        &'s mut self,
        _delta: &'s [u8],
        out: &'s mut F,
    ) -> impl ScanHandler + 's {
        Sink { parser: self, out }
    }
}

/// The streaming TAM decoder. See the [crate documentation](crate).
#[derive(Debug)]
pub struct Decoder {
    driver: Driver<BlockParser>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Config::default())
    }
}

impl Decoder {
    /// A decoder with `config`.
    pub fn new(config: Config) -> Self {
        let scanner = Scanner::new(config.dialect.grammar(), config.max_block_bytes)
            .with_reasoning(config.reasoning_tags);
        Decoder {
            driver: Driver::new(scanner, BlockParser::new(config)),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.driver.layer().config
    }

    crate::decoder_methods!(driver, Event);
}

/// Decodes a whole text at once: the events of feeding it as one delta, then finishing.
pub fn decode(text: &str, config: Config) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut decoder = Decoder::new(config);
    decoder.feed(text, |e| events.push(e.into_owned()));
    decoder.finish(|e| events.push(e.into_owned()));
    events
}
