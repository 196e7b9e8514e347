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

/// Up to this many bytes, [`Cursor::advance`] looks at them one by one.
const TINY: usize = 8;

/// Up to this many bytes, [`Cursor::advance`] counts without `memchr` (whose set-up
/// costs more than a short count).
const SHORT: usize = 256;

/// Characters in `bytes`: bytes that are not UTF-8 continuation bytes.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.chunks(SHORT).map(|b| count_short(b).1).sum()
}

/// Line feeds and characters in `bytes` (at most [`SHORT`] of them), eight bytes at a
/// time: each byte of a `u64` word says 0 or 1, and the words are summed byte by byte (no
/// byte sum can pass 255 within [`SHORT`] bytes), then across.
fn count_short(bytes: &[u8]) -> (usize, usize) {
    debug_assert!(bytes.len() <= SHORT);
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const LF: u64 = 0x0A0A_0A0A_0A0A_0A0A;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let (mut lf_bytes, mut continuation) = (0u64, 0u64);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let y = x ^ LF;
        // The high bit of each byte of `y` or of its low seven bits: the byte is not zero.
        let nonzero = ((y & LOW7) + LOW7) | y;
        lf_bytes += (!nonzero >> 7) & ONES;
        // A continuation byte is 10xxxxxx: bit 7 set, bit 6 clear.
        continuation += ((x & !(x << 1)) >> 7) & ONES;
    }
    let across = |sums: u64| {
        let pairs = (sums & 0x00FF_00FF_00FF_00FF) + ((sums >> 8) & 0x00FF_00FF_00FF_00FF);
        (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize
    };
    let (mut newlines, mut continued) = (across(lf_bytes), across(continuation));
    for &b in words.remainder() {
        newlines += usize::from(b == b'\n');
        continued += usize::from((b as i8) < -0x40);
    }
    (newlines, bytes.len() - continued)
}

impl Cursor {
    /// Moves past `bytes`.
    #[inline]
    pub(crate) fn advance(&mut self, bytes: &[u8]) {
        if bytes.len() <= TINY {
            // A token or two: a plain pass costs less than setting up any search.
            for &b in bytes {
                if b == b'\n' {
                    self.newlines += 1;
                    self.column_chars = 0;
                } else {
                    self.column_chars += usize::from((b as i8) >= -0x40);
                }
            }
            return;
        }
        self.advance_more(bytes);
    }

    /// [`Cursor::advance`] past more than [`TINY`] bytes.
    #[inline(never)]
    fn advance_more(&mut self, bytes: &[u8]) {
        if bytes.len() <= SHORT {
            // Token-sized: line breaks and characters counted eight bytes at a time, and a
            // look back for the last line break only when there is one.
            let (newlines, chars) = count_short(bytes);
            if newlines == 0 {
                self.column_chars += chars;
            } else {
                let last = bytes.iter().rposition(|&b| b == b'\n').unwrap_or(0);
                self.newlines += newlines;
                self.column_chars = count_chars(&bytes[last + 1..]);
            }
            return;
        }
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
    /// The last position asked for in the delta being fed (the delta's `delta_start`,
    /// bytes into the delta, cursor there): the next question about a later offset in the
    /// same delta starts from it, so that asking for every block of one delta costs one
    /// pass over the delta, not one per block. (A question in a later delta, whose
    /// `delta_start` is larger, starts from the delta's start.)
    last: std::cell::Cell<(usize, usize, Cursor)>,
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
                (start, from, cursor) if start == self.delta_start && from <= n => (from, cursor),
                _ => (0, self.at_delta),
            };
            let cursor = cursor.after(&delta[from..n]);
            self.scanned.set(self.scanned.get() + (n - from));
            self.last.set((self.delta_start, n, cursor));
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
    #[inline]
    pub(crate) fn finish_delta(&mut self, delta: &[u8]) {
        self.at_delta.advance(delta);
        self.delta_start += delta.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Every way [`Cursor::advance`] counts (byte by byte, short counts, `memchr`)
        /// gives the cursor a plain walk over the bytes gives, however they are cut.
        #[test]
        fn advance_counts_as_a_plain_walk(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'\n', 0xE4, 0xB8, 0xAD, 0xFF, b' ']),
                0..700,
            ),
            cut in 0usize..700,
        ) {
            let mut plain = Cursor::default();
            for &b in &bytes {
                if b == b'\n' {
                    plain.newlines += 1;
                    plain.column_chars = 0;
                } else if (b as i8) >= -0x40 {
                    plain.column_chars += 1;
                }
            }
            let cut = cut.min(bytes.len());
            let (a, b) = bytes.split_at(cut);
            proptest::prop_assert_eq!(Cursor::default().after(&bytes), plain);
            proptest::prop_assert_eq!(Cursor::default().after(a).after(b), plain);
        }
    }

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
