//! Byte searches for stops that come every few words: [`find3`] for a short look,
//! [`Stops`] for a loop over a block's worth.

/// The first `a`, `b` or `c` in `hay[from..]` (`None` also when `from` is past the end).
/// Made for short gaps: text between stops is short in code (a `<` or `&` every few
/// words), and a token-sized delta is a few words, where `memchr`'s set-up costs more than
/// the search. The first 32 bytes are looked at eight at a time in a `u64`; a tail of
/// fewer than eight is the haystack's last eight bytes shifted past what was looked at
/// (one at a time only in a haystack shorter than eight); then `memchr3` takes over.
#[inline]
pub fn find3(hay: &[u8], from: usize, a: u8, b: u8, c: u8) -> Option<usize> {
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut at = from;
    for _ in 0..4 {
        let Some(word) = hay.get(at..at + 8) else {
            if at >= hay.len() {
                return None;
            }
            let Some(last) = hay.len().checked_sub(8) else {
                return hay[at..]
                    .iter()
                    .position(|&x| x == a || x == b || x == c)
                    .map(|i| at + i);
            };
            // The last eight bytes, those before `at` shifted out: the bytes shifted in at
            // the top are no match (their bits are masked off; a borrow only runs upward,
            // so they change nothing below them).
            let skip = 8 * (at - last) as u32;
            let x = u64::from_le_bytes(hay[last..].try_into().unwrap_or([0; 8])) >> skip;
            let zero = matches3(x, a, b, c) & (HIGHS >> skip);
            return (zero != 0).then(|| at + (zero.trailing_zeros() / 8) as usize);
        };
        let x = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let zero = matches3(x, a, b, c);
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr::memchr3(a, b, c, hay.get(at..)?).map(|i| at + i)
}

/// The high bit of each byte of `x` that is `a`, `b` or `c`, exact up to the lowest one
/// (above a match, a borrow may set a bit that is none).
#[inline(always)]
fn matches3(x: u64, a: u8, b: u8, c: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let (xa, xb, xc) = (
        x ^ (ONES * u64::from(a)),
        x ^ (ONES * u64::from(b)),
        x ^ (ONES * u64::from(c)),
    );
    ((xa.wrapping_sub(ONES) & !xa) | (xb.wrapping_sub(ONES) & !xb) | (xc.wrapping_sub(ONES) & !xc))
        & HIGHS
}

/// Where any of up to three bytes occur in a haystack, found from any offset on, for a
/// loop that stops at most of them and goes on: code's `<` and `&`, one every few words, in
/// an XML value (action-xml's streamer and block reader).
///
/// [`find3`] starts a search at every stop: a few instructions per word of text, and
/// `memchr`'s set-up past 32 bytes. `Stops` reads 64 bytes at a time into a bit per byte
/// (16-byte vectors: SSE2 on x86_64, NEON on aarch64, through `wide`) and takes the stops
/// of a block from its bits: dense stops cost a few instructions each. A block without a
/// stop means sparse ones (prose, or code without markup): the rest is `memchr`'s (one,
/// two or three needles). Fewer than 64 bytes left: [`find3`].
///
/// Not for a search that looks at a few bytes per call (a token-sized delta): there the
/// mask costs more than it saves. The block scanner's own look for markers keeps `memchr`
/// for that reason (on token-sized deltas the masks cost 0.5–2.5 % more instructions on
/// plain code: `docs/design.md`, "Stops: a bit per byte"); for a long tail (a reply fed
/// whole) it has a loop of its own over the same 64-byte masks, which takes each block's
/// candidates from its bits without a call per candidate.
///
/// ```
/// use tam_parse::scan::Stops;
///
/// let code = b"let v: Vec<u8> = a.iter().filter(|x| **x < 3 && ok).collect();";
/// let mut stops = Stops::new(code, b'<', b'&', b'&');
/// let mut at = 0;
/// let mut found = Vec::new();
/// while let Some(i) = stops.next(at) {
///     found.push(code[i]);
///     at = i + 1;
/// }
/// assert_eq!(found, b"<<&&");
/// ```
#[derive(Debug, Clone)]
pub struct Stops<'h> {
    hay: &'h [u8],
    needles: [u8; 3],
    /// The offset of the block whose bits are in `mask` (`usize::MAX`: none).
    base: usize,
    /// Bit `i` set: `hay[base + i]` is one of the needles.
    mask: u64,
}

/// The bytes one [`Stops`] mask covers.
pub(super) const STOP_BLOCK: usize = 64;

impl<'h> Stops<'h> {
    /// The stops of `hay`: bytes `a`, `b` or `c` (repeat one for fewer needles).
    #[inline]
    pub fn new(hay: &'h [u8], a: u8, b: u8, c: u8) -> Self {
        Stops {
            hay,
            needles: [a, b, c],
            base: usize::MAX,
            mask: 0,
        }
    }

    /// The first stop at or after `from`: what [`find3`] finds.
    #[inline]
    pub fn next(&mut self, from: usize) -> Option<usize> {
        let mut from = from;
        if let Some(offset) = from.checked_sub(self.base)
            && offset < STOP_BLOCK
        {
            let ahead = self.mask & (u64::MAX << offset);
            if ahead != 0 {
                return Some(self.base + ahead.trailing_zeros() as usize);
            }
            from = self.base + STOP_BLOCK;
        }
        let [a, b, c] = self.needles;
        let Some(block) = self.hay.get(from..).and_then(|rest| rest.get(..STOP_BLOCK)) else {
            // Fewer than 64 bytes left: the short search.
            return find3(self.hay, from, a, b, c);
        };
        let mask = block_mask(block, self.needles);
        if mask == 0 {
            // Sparse: no stop in 64 bytes.
            self.base = usize::MAX;
            let at = from + STOP_BLOCK;
            let rest = &self.hay[at..];
            let found = if a == b && b == c {
                memchr::memchr(a, rest)
            } else if b == c {
                memchr::memchr2(a, b, rest)
            } else {
                memchr::memchr3(a, b, c, rest)
            };
            return found.map(|i| at + i);
        }
        self.base = from;
        self.mask = mask;
        Some(from + mask.trailing_zeros() as usize)
    }

    /// The first stop at or after `from` that `keep` keeps: `keep` is given every stop
    /// from there on, in order, until it returns `true`, and does its own bookkeeping for
    /// the ones it passes over. What a loop of [`Stops::next`] finds, for a caller that
    /// decides most stops at a glance (code's `a < b`, `&&` in an XML value): the stops of
    /// a block are taken from its bits in one loop, without a call or a block look each.
    ///
    /// ```
    /// use tam_parse::scan::Stops;
    ///
    /// let code = b"if a < b && c<T> { x }";
    /// let mut stops = Stops::new(code, b'<', b'&', b'&');
    /// let mut passed = 0;
    /// // Only a `<` followed by a letter is kept.
    /// let kept = stops.next_kept(0, |i| {
    ///     let keep = code[i] == b'<' && code.get(i + 1).is_some_and(u8::is_ascii_alphabetic);
    ///     passed += usize::from(!keep);
    ///     keep
    /// });
    /// assert_eq!(kept, Some(13));
    /// assert_eq!(passed, 3);
    /// ```
    #[inline]
    pub fn next_kept(&mut self, from: usize, mut keep: impl FnMut(usize) -> bool) -> Option<usize> {
        let mut from = from;
        loop {
            if let Some(offset) = from.checked_sub(self.base)
                && offset < STOP_BLOCK
            {
                let mut ahead = self.mask & (u64::MAX << offset);
                while ahead != 0 {
                    let at = self.base + ahead.trailing_zeros() as usize;
                    if keep(at) {
                        return Some(at);
                    }
                    ahead &= ahead - 1;
                }
                from = self.base + STOP_BLOCK;
            }
            let at = self.next(from)?;
            if keep(at) {
                return Some(at);
            }
            from = at + 1;
        }
    }
}

/// The needles (up to three) in a short tail, `hay[from..]` of 1 to 64 bytes in a
/// haystack of at least 64: bit `i` set when `hay[from + i]` is one — one mask of the
/// haystack's last 64 bytes, shifted past `from`. A fixed cost, then a few instructions per
/// stop (a loop over its bits): for a look at a token-sized delta that may hold several
/// stops, where a `memchr` per stop costs its set-up each time. `None` when the tail or the
/// haystack does not fit.
#[inline(always)]
pub fn tail_mask<const N: usize>(hay: &[u8], from: usize, needles: [u8; N]) -> Option<u64> {
    let base = hay.len().checked_sub(STOP_BLOCK)?;
    let skip = from.checked_sub(base)?;
    let block = hay.get(base..)?;
    block_mask_of(block, needles).checked_shr(skip as u32)
}

/// The needles (up to three) of `hay[from..]`, whose first 64 bytes or fewer are
/// looked at: bit `i` set when `hay[from + i]` is one. A whole block ([`block_mask_of`]);
/// fewer than 64 bytes left, one mask of the haystack's last 64 ([`tail_mask`]), or the
/// bytes one at a time in a haystack shorter than 64.
#[inline]
pub(super) fn mask_at<const N: usize>(hay: &[u8], from: usize, needles: [u8; N]) -> u64 {
    if let Some(block) = hay.get(from..).and_then(|rest| rest.get(..STOP_BLOCK)) {
        return block_mask_of(block, needles);
    }
    if let Some(mask) = tail_mask(hay, from, needles) {
        return mask;
    }
    hay.get(from..)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter(|(_, b)| needles.contains(b))
        .fold(0, |mask, (i, _)| mask | 1 << i)
}

/// The first of up to three `needles` in `hay`: `memchr`, `memchr2` or `memchr3`.
#[inline(always)]
pub(super) fn memchr_of<const N: usize>(hay: &[u8], needles: [u8; N]) -> Option<usize> {
    match needles.as_slice() {
        [] => None,
        [a] => memchr::memchr(*a, hay),
        [a, b] => memchr::memchr2(*a, *b, hay),
        [a, b, c] => memchr::memchr3(*a, *b, *c, hay),
        _ => hay.iter().position(|b| needles.contains(b)),
    }
}

/// The offsets of the bits set in `mask`, in order.
#[inline]
pub(super) fn mask_stops(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(i)
    })
}

/// [`block_mask`] for any number of needles, each compared once.
#[inline]
pub(super) fn block_mask_of<const N: usize>(block: &[u8], needles: [u8; N]) -> u64 {
    use wide::u8x16;
    let needles = needles.map(|n| u8x16::new([n; 16]));
    let mut mask = 0u64;
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(lane);
        let v = u8x16::new(bytes);
        let hit = needles
            .iter()
            .fold(u8x16::new([0; 16]), |hit, &n| hit | v.cmp_eq(n));
        mask |= u64::from(hit.move_mask() as u16) << (16 * k);
    }
    mask
}

/// Bit `i` of the result is set when `block[i]` is one of `needles` (`block` is 64 bytes).
#[inline]
fn block_mask(block: &[u8], needles: [u8; 3]) -> u64 {
    use wide::u8x16;
    let [a, b, c] = needles.map(|n| u8x16::new([n; 16]));
    let mut mask = 0u64;
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(lane);
        let v = u8x16::new(bytes);
        let hit = v.cmp_eq(a) | v.cmp_eq(b) | v.cmp_eq(c);
        // One bit per lane, the low 16 bits of the result.
        mask |= u64::from(hit.move_mask() as u16) << (16 * k);
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// [`tail_mask`] finds what `memchr3` finds in a tail of 1 to 64 bytes of a
        /// haystack of at least 64, and declines anything else.
        #[test]
        fn tail_masks_are_memchr3(
            hay in proptest::collection::vec(proptest::sample::select(vec![b'a', b'<', b'&', b'\r', 0x80, b'x', 0]), 0..140),
            from in 0usize..150,
        ) {
            let got = tail_mask(&hay, from, [b'<', b'&', b'\r']).map(|m| mask_stops(m).map(|i| from + i).collect::<Vec<_>>());
            let fits = hay.len() >= 64 && from < hay.len() && hay.len() - from <= 64;
            let want = fits.then(|| memchr::memchr3_iter(b'<', b'&', b'\r', &hay[from..]).map(|i| from + i).collect::<Vec<_>>());
            proptest::prop_assert_eq!(got, want);
        }

        /// [`find3`] finds what `memchr3` finds, from anywhere.
        #[test]
        fn find3_is_memchr3(
            hay in proptest::collection::vec(proptest::sample::select(vec![b'a', b'<', b'&', b'\r', 0x80, b'x', 0, 1]), 0..80),
            from in 0usize..90,
        ) {
            let want = hay.get(from..).and_then(|h| memchr::memchr3(b'<', b'&', b'\r', h)).map(|i| from + i);
            proptest::prop_assert_eq!(find3(&hay, from, b'<', b'&', b'\r'), want);
        }

        /// [`find3`] with any needles, the zero byte among them (the tail's shifted-in
        /// bytes are zeros), finds what `memchr3` finds.
        #[test]
        fn find3_with_any_needles_is_memchr3(
            hay in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 2, 0x7f, 0x80, 0xff]), 0..40),
            needles in proptest::array::uniform3(proptest::sample::select(vec![0u8, 1, 2, 0x7f, 0x80, 0xff])),
            from in 0usize..45,
        ) {
            let [a, b, c] = needles;
            let want = hay.get(from..).and_then(|h| memchr::memchr3(a, b, c, h)).map(|i| from + i);
            proptest::prop_assert_eq!(find3(&hay, from, a, b, c), want);
        }

        /// [`Stops`] finds what `memchr3` finds, from any offset on, in any order of
        /// offsets (a loop over a value goes forward; a new look may start anywhere).
        #[test]
        fn stops_are_memchr3(
            hay in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'<', b'&', b'\r', 0x80, b'x', b'x', b'x']),
                0..400,
            ),
            froms in proptest::collection::vec(0usize..420, 1..40),
        ) {
            let mut stops = Stops::new(&hay, b'<', b'&', b'\r');
            for from in froms {
                let want = hay.get(from..).and_then(|h| memchr::memchr3(b'<', b'&', b'\r', h)).map(|i| from + i);
                proptest::prop_assert_eq!(stops.next(from), want, "from {}", from);
            }
            // And as a loop over every stop.
            let mut stops = Stops::new(&hay, b'<', b'&', b'\r');
            let mut seen = Vec::new();
            let mut at = 0;
            while let Some(i) = stops.next(at) {
                seen.push(i);
                at = i + 1;
            }
            let want: Vec<usize> = memchr::memchr3_iter(b'<', b'&', b'\r', &hay).collect();
            proptest::prop_assert_eq!(seen, want);
        }

    }
}
