//! Line and column of stream offsets, for error messages about the model's output.
//!
//! Lines are counted over the whole stream (prose and blocks alike), so a position inside
//! a block is where the model wrote it. Both are 1-based; a column counts characters (a
//! CJK character is one column), and every byte that does not continue a UTF-8 sequence
//! counts as one.

use std::fmt;

/// A 1-based line and column in the model's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineColumn {
    /// Line number, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl fmt::Display for LineColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

impl LineColumn {
    /// The line and column of byte offset `offset` in `text` (clamped to its length).
    pub fn of(text: &str, offset: usize) -> LineColumn {
        let mut cursor = Cursor::default();
        cursor.advance(&text.as_bytes()[..offset.min(text.len())]);
        cursor.line_column()
    }
}

/// The line/column state after some bytes: newlines seen and characters since the last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cursor {
    newlines: usize,
    column_chars: usize,
}

/// Characters in `bytes`: bytes that are not UTF-8 continuation bytes.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

impl Cursor {
    /// Moves past `bytes`.
    pub(crate) fn advance(&mut self, bytes: &[u8]) {
        match memchr::memrchr(b'\n', bytes) {
            Some(last) => {
                self.newlines += memchr::memchr_iter(b'\n', bytes).count();
                self.column_chars = count_chars(&bytes[last + 1..]);
            }
            None => self.column_chars += count_chars(bytes),
        }
    }

    /// The cursor after `bytes`.
    pub(crate) fn after(mut self, bytes: &[u8]) -> Cursor {
        self.advance(bytes);
        self
    }

    /// The cursor `n` ASCII characters back on the same line.
    pub(crate) fn back_on_line(mut self, n: usize) -> Cursor {
        self.column_chars = self.column_chars.saturating_sub(n);
        self
    }

    pub(crate) fn line_column(&self) -> LineColumn {
        LineColumn {
            line: self.newlines + 1,
            column: self.column_chars + 1,
        }
    }
}

/// Tracks the cursor over every byte fed, so that a block can learn where it starts even
/// when its start marker arrived split over deltas.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamCursor {
    /// The cursor at the start of the delta being fed.
    at_delta: Cursor,
    /// Stream offset of the start of the delta being fed.
    delta_start: usize,
    /// The last position asked for in the delta being fed (bytes into the delta, cursor
    /// there): the next question about a later offset starts from it, so that asking for
    /// every block of one delta costs one pass over the delta, not one per block.
    last: std::cell::Cell<(usize, Cursor)>,
    /// Bytes of deltas looked at to answer [`StreamCursor::at`], over the stream (a test
    /// checks that it stays within the stream's length: one pass, whatever the number of
    /// blocks in a delta).
    scanned: std::cell::Cell<usize>,
}

impl StreamCursor {
    /// The cursor at stream offset `offset`, which lies in `delta` (fed from
    /// `self.delta_start`) or at most a start marker's length before it. Start markers are
    /// ASCII without line breaks, so the bytes held back before the delta are on the line
    /// of its start.
    pub(crate) fn at(&self, delta: &[u8], offset: usize) -> Cursor {
        if offset >= self.delta_start {
            let n = (offset - self.delta_start).min(delta.len());
            let (from, cursor) = match self.last.get() {
                (from, cursor) if from <= n => (from, cursor),
                _ => (0, self.at_delta),
            };
            let cursor = cursor.after(&delta[from..n]);
            self.scanned.set(self.scanned.get() + (n - from));
            self.last.set((n, cursor));
            cursor
        } else {
            self.at_delta.back_on_line(self.delta_start - offset)
        }
    }

    /// Bytes looked at by [`StreamCursor::at`] so far.
    #[cfg(test)]
    pub(crate) fn scanned(&self) -> usize {
        self.scanned.get()
    }

    /// Moves past a delta of `delta.len()` bytes (after the scanner has seen it).
    pub(crate) fn finish_delta(&mut self, delta: &[u8]) {
        self.at_delta.advance(delta);
        self.delta_start += delta.len();
        self.last.set((0, self.at_delta));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_characters() {
        assert_eq!(
            LineColumn::of("ab\ncd", 4),
            LineColumn { line: 2, column: 2 }
        );
        assert_eq!(
            LineColumn::of("文字x", "文字".len()),
            LineColumn { line: 1, column: 3 }
        );
        assert_eq!(LineColumn::of("", 5), LineColumn { line: 1, column: 1 });
    }

    #[test]
    fn stream_cursor_looks_back_over_held_marker() {
        let mut s = StreamCursor::default();
        s.finish_delta(b"x\nab<AC");
        // The marker began at offset 4, two bytes into the held-back "<AC".
        let c = s.at(b"TION>", 4);
        assert_eq!(c.line_column(), LineColumn { line: 2, column: 3 });
        let c = s.at(b"TION>", 9);
        assert_eq!(c.line_column(), LineColumn { line: 2, column: 8 });
    }
}
