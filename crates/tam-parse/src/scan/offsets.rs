//! The map from block-buffer offsets to stream offsets.

use std::ops::Range;

use crate::diagnostic::Span;

/// Maps offsets in a block buffer to stream offsets.
///
/// The two differ only after invalid UTF-8 inside a block, whose bytes are replaced by
/// U+FFFD in the buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetMap {
    base: usize,
    pub(super) anchors: Vec<(usize, usize)>,
}

impl OffsetMap {
    pub(super) fn new(base: usize) -> Self {
        OffsetMap {
            base,
            anchors: Vec::new(),
        }
    }

    /// The stream offset of buffer offset `off`.
    pub fn stream(&self, off: usize) -> usize {
        match self.anchors.iter().rev().find(|(b, _)| *b <= off) {
            Some(&(b, s)) => s + (off - b),
            None => self.base + off,
        }
    }

    /// The stream span of buffer range `r`.
    pub fn span(&self, r: Range<usize>) -> Span {
        Span::new(self.stream(r.start), self.stream(r.end))
    }

    /// The buffer offset of stream offset `off` (the inverse of [`OffsetMap::stream`] for
    /// offsets that are not inside invalid UTF-8 bytes; for the first of such bytes it is
    /// where their U+FFFD begins).
    pub fn buffer(&self, off: usize) -> usize {
        match self.anchors.iter().rev().find(|(_, s)| *s <= off) {
            Some(&(b, s)) => b + (off - s),
            None => off.saturating_sub(self.base),
        }
    }

    /// Forget the first `n` buffer bytes (they were dropped).
    pub(super) fn drop_front(&mut self, n: usize) {
        let s = self.stream(n);
        self.anchors.retain(|(b, _)| *b > n);
        for a in &mut self.anchors {
            a.0 -= n;
        }
        self.base = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_shift_after_replaced_bytes() {
        // A block at stream offset 100: 5 bytes, then one invalid byte (U+FFFD, 3 bytes in
        // the buffer), then more.
        let mut m = OffsetMap::new(100);
        m.anchors.push((8, 106));
        assert_eq!(m.stream(4), 104);
        assert_eq!(m.stream(8), 106);
        assert_eq!(m.stream(10), 108);
        assert_eq!(m.span(2..10), Span::new(102, 108));
        assert_eq!(m.buffer(104), 4);
        assert_eq!(
            m.buffer(105),
            5,
            "the invalid byte maps to where its U+FFFD begins"
        );
        assert_eq!(m.buffer(108), 10);
        m.drop_front(8);
        assert_eq!(m.stream(0), 106);
        assert_eq!(m.stream(2), 108);
    }
}
