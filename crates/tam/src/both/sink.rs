//! The scanner's callbacks, routed to the TAM block parser or the ACTION layer by the
//! block's kind.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use action_xml::{ActionLayer, block_syntax};
use tam_parse::scan::{BlockView, ClosedBlock, Grammar, Quote, ScanHandler};
use tam_parse::{BlockParser, Dialect, Span};

use super::KIND_TAM;
use crate::event::Event;

/// The scanner grammar of both protocols: TAM blocks of `dialect` as block kind 0
/// ([`Dialect::block_syntax`]) and ACTION blocks as kind 1
/// ([`action_xml::block_syntax`]), built once per dialect and process. What the
/// [`Decoder`](crate::Decoder) scans with for [`ProtocolChoice::Auto`](crate::ProtocolChoice::Auto)
/// (without call elements written outside `<ACTION>`).
pub fn grammar(dialect: Dialect) -> Arc<Grammar> {
    static TAM: OnceLock<Arc<Grammar>> = OnceLock::new();
    static VCP: OnceLock<Arc<Grammar>> = OnceLock::new();
    let cell = match dialect {
        Dialect::Tam => &TAM,
        Dialect::Vcp => &VCP,
    };
    Arc::clone(cell.get_or_init(|| {
        Grammar::new(vec![dialect.block_syntax(), block_syntax()])
            .expect("the grammar of both protocols is valid")
    }))
}

/// Turns TAM events into the decoder's.
fn forward_tam<'a, F: FnMut(Event<'_>)>(out: &'a mut F) -> impl FnMut(tam_parse::Event<'_>) + 'a {
    move |event| out(Event::from(event))
}

/// Turns ACTION events into the decoder's.
fn forward_action<'a, F: FnMut(Event<'_>)>(
    out: &'a mut F,
) -> impl FnMut(action_xml::Event<'_>) + 'a {
    move |event| out(Event::from(event))
}

/// The scanner's callbacks for one delta, routed to the TAM block parser or the ACTION
/// layer by the block's kind.
pub(super) struct BothSink<'s, F> {
    pub(super) tam: &'s mut BlockParser,
    pub(super) action: &'s mut ActionLayer,
    pub(super) open_kind: &'s mut Option<usize>,
    pub(super) delta: &'s [u8],
    pub(super) out: F,
}

impl<F: FnMut(Event<'_>)> ScanHandler for BothSink<'_, F> {
    fn text(&mut self, text: &str, span: Span) {
        (self.out)(Event::Text {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn quoted_marker(&mut self, kind: usize, marker: Span, quote: Quote) {
        if kind == KIND_TAM {
            self.tam
                .quoted_marker(marker, quote, &mut forward_tam(&mut self.out));
        } else {
            self.action
                .quoted_marker(marker, quote, &mut forward_action(&mut self.out));
        }
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

    fn block_opened(&mut self, kind: usize, marker: Span) {
        *self.open_kind = Some(kind);
        if kind == KIND_TAM {
            self.tam
                .block_opened(marker, &mut forward_tam(&mut self.out));
        } else {
            self.action
                .block_opened(kind, marker, self.delta, &mut forward_action(&mut self.out));
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
                .block_progress(view, settled, &mut forward_tam(&mut self.out));
        } else {
            self.action
                .block_progress(view, settled, &mut forward_action(&mut self.out));
        }
    }

    fn block_closing(&mut self, view: &BlockView<'_>, settled: usize) {
        if view.kind() == KIND_TAM {
            self.block_progress(view, settled);
        } else {
            self.action
                .block_closing(view, settled, &mut forward_action(&mut self.out));
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
            self.tam.region_closed(
                view,
                region,
                content,
                marker,
                &mut forward_tam(&mut self.out),
            );
        } else {
            self.action.region_closed(content, marker);
        }
    }

    fn block_closed(&mut self, closed: ClosedBlock) {
        *self.open_kind = None;
        if closed.kind == KIND_TAM {
            self.tam
                .block_closed(closed, &mut forward_tam(&mut self.out));
        } else {
            self.action
                .block_closed(&closed, &mut forward_action(&mut self.out));
        }
    }

    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        match (in_block, *self.open_kind) {
            (true, Some(KIND_TAM)) => {
                self.tam
                    .invalid_utf8(bytes, span, true, &mut forward_tam(&mut self.out));
            }
            (in_block, _) => {
                self.action
                    .invalid_utf8(bytes, span, in_block, &mut forward_action(&mut self.out));
            }
        }
    }
}
