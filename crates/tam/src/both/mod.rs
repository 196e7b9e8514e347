//! Both protocols in one stream: TAM blocks (tam-parse's [`BlockParser`]) and ACTION blocks
//! (action-xml's [`ActionLayer`]), found by one scanner whose grammar has both syntaxes.

use action_xml::{ActionLayer, BareCallTools};
use tam_parse::BlockParser;
use tam_parse::drive::{Driver, Layer};
use tam_parse::scan::{ScanHandler, Scanner};

use crate::config::Config;
use crate::event::Event;

mod sink;

use sink::BothSink;
pub use sink::grammar;

/// Block kind of TAM blocks in the grammar of both protocols.
const KIND_TAM: usize = 0;

/// Block kind of ACTION blocks in the grammar of both protocols; call elements written
/// without `<ACTION>` follow it.
const KIND_ACTION: usize = 1;

/// Both layers of the decoder, and the kind of the block open.
#[derive(Debug)]
pub(crate) struct Both {
    tam: BlockParser,
    action: ActionLayer,
    open_kind: Option<usize>,
    param_events: bool,
    /// The settings it was made with.
    config: Config,
}

impl Layer for Both {
    type Event<'e> = Event<'e>;

    #[inline]
    fn handler<'s, F: FnMut(Event<'_>)>(
        &'s mut self,
        delta: &'s [u8],
        out: &'s mut F,
    ) -> impl ScanHandler + 's {
        // Off, neither layer computes argument events; this filter is what guarantees it.
        let param_events = self.param_events;
        BothSink {
            tam: &mut self.tam,
            action: &mut self.action,
            open_kind: &mut self.open_kind,
            delta,
            out: move |e: Event<'_>| {
                if param_events || !e.is_argument_event() {
                    out(e)
                }
            },
        }
    }

    #[inline]
    fn delta_done(&mut self, delta: &[u8]) {
        self.action.delta_done(delta);
    }

    #[inline]
    fn stream_done(&mut self) {
        self.action.reset();
        self.open_kind = None;
    }
}

impl Both {
    /// The scanner and layers for `config`, reading call elements of `bare`'s names
    /// without `<ACTION>`: one scanner, one pass, the events of both protocols in stream
    /// order. Its `protocol` is not looked at: it always reads both.
    pub(crate) fn driver(config: Config, bare: BareCallTools) -> Driver<Both> {
        let limit = config.action.max_block_bytes;
        let mut tam = config.tam;
        tam.max_block_bytes = limit;
        tam.param_events = config.param_events;
        let grammar = if bare.is_empty() {
            grammar(tam.dialect)
        } else {
            bare.grammar(vec![tam.dialect.block_syntax(), action_xml::block_syntax()])
        };
        let scanner = Scanner::new(grammar, limit).with_reasoning(config.reasoning_tags);
        let both = Both {
            tam: BlockParser::new(tam),
            action: ActionLayer::new(config.action, config.param_events)
                .with_bare_call_tools(bare, KIND_ACTION + 1),
            open_kind: None,
            param_events: config.param_events,
            config,
        };
        Driver::new(scanner, both)
    }

    /// The settings it was made with.
    pub(crate) fn config(&self) -> Config {
        self.config
    }

    /// The tool names whose call elements count without `<ACTION>`.
    pub(crate) fn bare_call_tools(&self) -> &[String] {
        self.action.bare_call_tools().names()
    }
}
