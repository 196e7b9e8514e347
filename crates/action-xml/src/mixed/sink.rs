//! The scanner's callbacks, routed to the TAM block parser or the ACTION layer by the
//! block's kind.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use tam_parse::scan::{BlockView, ClosedBlock, Grammar, Quote, ScanHandler};
use tam_parse::{BlockParser, Dialect, Span};

use crate::config::block_syntax;
use crate::decoder::{ActionLayer, invalid_utf8, quoted_tag};
use crate::event::Event;
use crate::position::StreamCursor;

use super::*;

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
pub(super) fn forward_tam<'a, F: FnMut(MixedEvent<'_>)>(
    out: &'a mut F,
) -> impl FnMut(tam_parse::Event<'_>) + 'a {
    move |event| out(MixedEvent::from(event))
}

pub(super) struct MixedSink<'s, F> {
    pub(super) tam: &'s mut BlockParser,
    pub(super) action: &'s mut ActionLayer,
    pub(super) open_kind: &'s mut Option<usize>,
    pub(super) cursor: &'s StreamCursor,
    pub(super) delta: &'s [u8],
    pub(super) out: F,
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
                .quoted_marker(marker, quote, &mut forward_tam(&mut self.out));
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
            self.tam
                .block_opened(marker, &mut forward_tam(&mut self.out));
        } else {
            let start = self.cursor.at(self.delta, marker.start);
            let out = &mut self.out;
            self.action
                .block_opened(kind, marker, start, &mut |e: Event<'_>| {
                    out(MixedEvent::from(e))
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
                .block_progress(view, settled, &mut forward_tam(&mut self.out));
        } else {
            let out = &mut self.out;
            self.action
                .progress(view, settled, &mut |e: Event<'_>| out(MixedEvent::from(e)));
        }
    }

    fn block_closing(&mut self, view: &BlockView<'_>, settled: usize) {
        if view.kind() == KIND_TAM {
            self.block_progress(view, settled);
        } else {
            let out = &mut self.out;
            self.action
                .closing(view, settled, &mut |e: Event<'_>| out(MixedEvent::from(e)));
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
            let out = &mut self.out;
            self.action
                .block_closed(&closed, &mut |e: Event<'_>| out(MixedEvent::from(e)));
        }
    }

    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        match (in_block, *self.open_kind) {
            (true, Some(KIND_TAM)) => {
                self.tam
                    .invalid_utf8(bytes, span, true, &mut forward_tam(&mut self.out));
            }
            (true, _) => self.action.invalid_utf8_in_block(invalid_utf8(bytes, span)),
            (false, _) => {
                (self.out)(MixedEvent::Diagnostic(invalid_utf8(bytes, span)));
            }
        }
    }
}
