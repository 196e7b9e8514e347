//! How the streamer's events reach the caller: borrowed pieces of one kind that touch are
//! joined.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::Span;

use crate::event::Event;

/// Hands the streamer's events to the caller, joining borrowed pieces of one kind (text,
/// or one CDATA section's content) that touch: a `<` that is text (`Vec<String>`, `a < b`,
/// the tags of an object parameter's children) or a bare `&` does not cut the text around
/// it into three pieces (fewer events, the same text and spans once adjacent pieces are
/// joined).
pub(super) struct Emit<'b, 'o> {
    pub(super) buf: &'b str,
    pub(super) span: &'o dyn Fn(Range<usize>) -> Span,
    pub(super) out: &'o mut dyn FnMut(Event<'_>),
    /// Borrowed text not handed out yet, and whether it is CDATA content.
    pub(super) pending: Option<(Range<usize>, bool)>,
}

impl Emit<'_, '_> {
    /// The stream span of buffer range `r`.
    pub(super) fn span(&self, r: Range<usize>) -> Span {
        (self.span)(r)
    }

    /// A piece of text borrowed from the buffer (nothing for an empty range).
    pub(super) fn text(&mut self, r: Range<usize>) {
        self.piece(r, false);
    }

    /// A piece of a CDATA section's content borrowed from the buffer.
    pub(super) fn cdata(&mut self, r: Range<usize>) {
        self.piece(r, true);
    }

    pub(super) fn piece(&mut self, r: Range<usize>, cdata: bool) {
        if r.start >= r.end {
            return;
        }
        match &mut self.pending {
            Some((p, kind)) if p.end == r.start && *kind == cdata => p.end = r.end,
            _ => {
                self.flush();
                self.pending = Some((r, cdata));
            }
        }
    }

    /// Any other event: the pending text goes first.
    pub(super) fn event(&mut self, e: Event<'_>) {
        self.flush();
        (self.out)(e);
    }

    pub(super) fn flush(&mut self) {
        if let Some((r, cdata)) = self.pending.take() {
            (self.out)(Event::ParamText {
                text: Cow::Borrowed(&self.buf[r.clone()]),
                span: (self.span)(r),
                cdata,
            });
        }
    }
}
