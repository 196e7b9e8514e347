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

/// Characters in `bytes`, which hold no line feed: bytes that are not UTF-8 continuation
/// bytes.
fn count_chars(bytes: &[u8]) -> usize {
    let mut cursor = Cursor::default();
    cursor.advance_words(bytes);
    cursor.column_chars
}

/// The number of bytes whose high bit is set in `mask` (a mask of high bits only).
fn high_bits(mask: u64) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    ((mask >> 7).wrapping_mul(ONES) >> 56) as usize
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
            self.advance_words(bytes);
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

    /// [`Cursor::advance`] eight bytes at a time: in each `u64` word, the high bit of each
    /// byte that is a line feed, and of each byte that begins a character (is not
    /// 10xxxxxx), counted by one multiplication; after a word's last line feed, the
    /// column is the characters above it.
    fn advance_words(&mut self, bytes: &[u8]) {
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let load = |word: &[u8]| u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let n = bytes.len();
        if n < 8 {
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
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.advance_word(load(word), HIGHS);
        }
        let rest = words.remainder().len();
        if rest > 0 {
            // The last eight bytes again, of which only the top `rest` are new.
            let valid = HIGHS & (!0u64 << (8 * (8 - rest)));
            self.advance_word(load(&bytes[n - 8..]), valid);
        }
    }

    /// [`Cursor::advance_words`] past the bytes of `x` whose high bit is in `valid`.
    #[inline(always)]
    fn advance_word(&mut self, x: u64, valid: u64) {
        const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
        const LF: u64 = 0x0A0A_0A0A_0A0A_0A0A;
        let y = x ^ LF;
        // The high bit of each byte of `y` or of its low seven bits: not zero.
        let lf = !(((y & LOW7) + LOW7) | y) & valid;
        let chars = !(x & !(x << 1)) & valid;
        if lf == 0 {
            self.column_chars += high_bits(chars);
        } else {
            self.newlines += high_bits(lf);
            let last = 63 - lf.leading_zeros();
            let after = if last == 63 {
                0
            } else {
                chars & (!0u64 << (last + 1))
            };
            self.column_chars = high_bits(after);
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
