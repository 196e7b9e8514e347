//! Both protocols in one stream: TAM blocks (tam-parse) and ACTION blocks, found by one
//! scanner whose grammar has both syntaxes.

use tam_parse::BlockParser;
use tam_parse::drive::{Driver, Layer};
use tam_parse::scan::{ScanHandler, Scanner};

use crate::config::{BareCallTools, block_syntax};
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
    driver: Driver<Mixed>,
}

/// Both layers of the mixed decoder, and the kind of the block open.
#[derive(Debug)]
pub(crate) struct Mixed {
    tam: BlockParser,
    action: ActionLayer,
    open_kind: Option<usize>,
    cursor: StreamCursor,
    param_events: bool,
    /// The settings it was made with.
    config: MixedConfig,
}

impl Layer for Mixed {
    type Event<'e> = MixedEvent<'e>;

    #[inline]
    fn handler<'s, F: FnMut(MixedEvent<'_>)>(
        &'s mut self,
        delta: &'s [u8],
        out: &'s mut F,
    ) -> impl ScanHandler + 's {
        // Off, neither layer computes argument events; this filter is what guarantees it.
        let param_events = self.param_events;
        MixedSink {
            tam: &mut self.tam,
            action: &mut self.action,
            open_kind: &mut self.open_kind,
            cursor: &self.cursor,
            delta,
            out: move |e: MixedEvent<'_>| {
                if param_events || !e.is_argument_event() {
                    out(e)
                }
            },
        }
    }

    #[inline]
    fn delta_done(&mut self, delta: &[u8]) {
        self.cursor.finish_delta(delta);
    }

    #[inline]
    fn stream_done(&mut self) {
        self.action.reset();
        self.open_kind = None;
        self.cursor = StreamCursor::default();
    }
}

impl Default for MixedDecoder {
    fn default() -> Self {
        MixedDecoder::new(MixedConfig::default())
    }
}

impl MixedDecoder {
    /// A decoder with `config`.
    pub fn new(config: MixedConfig) -> Self {
        Self::build(config, BareCallTools::default())
    }

    /// This decoder reading a call element of one of `tools` written without `<ACTION>`
    /// as a one-call ACTION block (warning `missing_action_wrapper`): pass the names of
    /// the tools offered to the model. The rules are [`Decoder::with_bare_call_tools`](crate::Decoder::with_bare_call_tools)'s.
    /// No names (the default): every call element outside `<ACTION>` is prose. Call it
    /// before the first `feed`.
    pub fn with_bare_call_tools<S: AsRef<str>>(self, tools: impl IntoIterator<Item = S>) -> Self {
        Self::build(self.driver.layer().config, BareCallTools::new(tools))
    }

    /// The tool names whose call elements count without `<ACTION>` (see
    /// [`MixedDecoder::with_bare_call_tools`]).
    pub fn bare_call_tools(&self) -> &[String] {
        self.driver.layer().action.bare().names()
    }

    fn build(config: MixedConfig, bare: BareCallTools) -> Self {
        let limit = config.action.max_block_bytes;
        let mut tam = config.tam;
        tam.max_block_bytes = limit;
        tam.param_events = config.param_events;
        let grammar = if bare.is_empty() {
            mixed_grammar(tam.dialect)
        } else {
            bare.grammar(vec![tam.dialect.block_syntax(), block_syntax()])
        };
        let scanner = Scanner::new(grammar, limit).with_reasoning(config.reasoning_tags);
        let mixed = Mixed {
            tam: BlockParser::new(tam),
            action: ActionLayer::new(config.action, config.param_events).with_bare(bare, 2),
            open_kind: None,
            cursor: StreamCursor::default(),
            param_events: config.param_events,
            config,
        };
        MixedDecoder {
            driver: Driver::new(scanner, mixed),
        }
    }

    /// Whether argument events are emitted ([`MixedConfig::param_events`](crate::MixedConfig::param_events)).
    pub fn param_events(&self) -> bool {
        self.driver.layer().param_events
    }

    tam_parse::decoder_methods!(driver, MixedEvent);
}
