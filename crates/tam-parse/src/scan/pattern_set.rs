//! Pattern sets: the patterns that may act in one scanner state, with the fastest way
//! to find their candidates (`memmem`, `memchr`, a byte table).

use memchr::memmem;

use super::line::{LineFloor, is_line_start};
use super::pattern::{MatchAt, Pattern, TAG_MAX_BLANKS, is_blank};
use super::stops::{STOP_BLOCK, block_mask_of, mask_at, mask_stops, memchr_of, tail_mask};

/// What happens when a pattern of a [`PatternSet`] matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Open(usize),
    Close,
    Restart,
    EnterRegion(usize),
    LeaveRegion,
    /// A reasoning open tag (index into [`THINK_TAGS`](super::grammar::THINK_TAGS)).
    Think(usize),
    /// A reasoning close tag (same index).
    ThinkEnd(usize),
}

/// How candidates are found.
#[derive(Debug, Clone)]
enum Finder {
    /// One exact pattern: memmem for full matches, then a look at the tail.
    Memmem(Box<memmem::Finder<'static>>),
    /// One, two or three first bytes, each with its [`Look`] for the long tails' way. The
    /// looks are here, not in a field of their own, so that [`PatternSet`]'s size stays as
    /// it was: the scanner's per-delta code indexes its sets by it, and 16 bytes more cost
    /// an instruction per delta (measured in 30- and 1-code-point deltas).
    One(u8, Box<Look>),
    Two(u8, u8, Box<[Look; 2]>),
    Three(u8, u8, u8, Box<[Look; 3]>),
    Table(Box<[bool; 256]>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    Match {
        at: usize,
        len: usize,
        action: Action,
    },
    /// A pattern may begin at `at` but the input ended first.
    Partial {
        at: usize,
    },
    None,
}

#[derive(Debug, Clone)]
pub(super) struct PatternSet {
    patterns: Vec<(Pattern, Action)>,
    finder: Finder,
    /// Per first byte and one of the few second bytes it allows, the bytes that may come
    /// third: a close tag `</x>` in an ACTION body passes the second look (`</`), not this
    /// one (`</ACTION>` needs an `a` or a blank third).
    third: Box<[(u8, u8, [bool; 256])]>,
    /// Per first byte whose patterns all read blanks after it as a tag does (`< /ACTION>`),
    /// the bytes that may come once those blanks are passed: `a < b` in code passes the
    /// second look (a blank) and the third (a blank may be followed by more), not this one.
    after_blanks: Box<[(u8, [bool; 256])]>,
    /// Per byte, 1 + the index in `quick` of its look, 0 when no pattern begins with it.
    slot: [u8; 256],
    /// The looks [`PatternSet::rejects`] makes before [`PatternSet::try_at`], per distinct
    /// first byte: the bytes that may follow it (most candidates, every `<` of code in an
    /// XML body, are rejected by this one table look-up), and where it has one, its table
    /// after one blank.
    quick: Box<[Quick]>,
}

/// The second-byte look of one first byte, and its look past one blank (`a < b`).
#[derive(Debug, Clone)]
struct Quick {
    second: [bool; 256],
    after_blank: Option<Box<[bool; 256]>>,
}

/// [`Quick`]'s looks as [`PatternSet::find_long`] makes them, for a candidate of one first
/// byte: the byte after it tells with one table look whether a pattern may match, and
/// whether the byte after a blank must be looked at (`a < b` in code). [`Quick`] stays as
/// it is for the short tails' way ([`PatternSet::rejects`]).
#[derive(Debug, Clone)]
struct Look {
    /// Per byte after the first: [`REJECT`], [`KEEP`] or [`BLANK`].
    second: [u8; 256],
    /// Per byte after the first and one blank: may a pattern match (a blank: yes, the
    /// patterns tell).
    after_blank: [bool; 256],
}

/// [`Look::second`]: no pattern matches with this byte second.
const REJECT: u8 = 0;
/// [`Look::second`]: a pattern may match; [`PatternSet::try_at`] tells.
const KEEP: u8 = 1;
/// [`Look::second`]: a blank; the byte after it tells ([`Look::after_blank`]).
const BLANK: u8 = 2;

impl Look {
    /// No look rejects a candidate: the patterns tell.
    fn keep_all() -> Self {
        Look {
            second: [KEEP; 256],
            after_blank: [true; 256],
        }
    }

    fn new(q: &Quick) -> Self {
        let mut look = Look {
            second: [REJECT; 256],
            after_blank: [true; 256],
        };
        for b in 0..=255u8 {
            let i = usize::from(b);
            look.second[i] = match (q.second[i], &q.after_blank) {
                (false, _) => REJECT,
                (true, Some(_)) if is_blank(b) => BLANK,
                (true, _) => KEEP,
            };
            if let Some(table) = &q.after_blank {
                look.after_blank[i] = is_blank(b) || table[i];
            }
        }
        look
    }

    /// [`PatternSet::rejects`]: false when `hay` ends before a byte it needs.
    #[inline(always)]
    fn rejects(&self, hay: &[u8], at: usize) -> bool {
        match hay.get(at + 1).map(|&b| self.second[usize::from(b)]) {
            Some(REJECT) => true,
            Some(BLANK) => hay
                .get(at + 2)
                .is_some_and(|&b| !self.after_blank[usize::from(b)]),
            _ => false,
        }
    }

    /// [`Look::rejects`] at `window[i]`, the window holding two bytes after it.
    #[inline(always)]
    fn rejects_in<const W: usize>(&self, window: &[u8; W], i: usize) -> bool {
        match self.second[usize::from(window[i + 1])] {
            REJECT => true,
            BLANK => !self.after_blank[usize::from(window[i + 2])],
            _ => false,
        }
    }
}

/// The length from which [`PatternSet::find`] takes candidates from 64-byte blocks' bits
/// ([`PatternSet::find_long`]) instead of `memchr`.
const LONG_TAIL: usize = 256;

/// From this length up to 64 bytes, [`PatternSet::find`] takes a tail's candidates from
/// one mask ([`tail_mask`]) instead of `memchr`; below it, `memchr`'s one call costs less.
const WINDOW_TAIL: usize = 16;

/// Third-byte tables are built for a first byte only when it allows at most this many
/// second bytes.
const MAX_THIRD_TABLES: usize = 8;

impl PatternSet {
    pub(super) fn new(patterns: Vec<(Pattern, Action)>) -> Self {
        let mut firsts: Vec<u8> = patterns.iter().map(|(p, _)| p.first_byte()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let mut second: Vec<(u8, [bool; 256])> = Vec::new();
        for (p, _) in &patterns {
            let first = p.first_byte();
            let i = match second.iter().position(|(f, _)| *f == first) {
                Some(i) => i,
                None => {
                    second.push((first, [false; 256]));
                    second.len() - 1
                }
            };
            p.mark_second_bytes(&mut second[i].1);
        }
        let mut third: Vec<(u8, u8, [bool; 256])> = Vec::new();
        for (first, seconds) in &second {
            let allowed: Vec<u8> = (0..=255u8).filter(|&b| seconds[usize::from(b)]).collect();
            if allowed.len() > MAX_THIRD_TABLES {
                continue;
            }
            for s in allowed {
                let mut table = [false; 256];
                for (p, _) in patterns.iter().filter(|(p, _)| p.first_byte() == *first) {
                    p.mark_third_bytes(s, &mut table);
                }
                third.push((*first, s, table));
            }
        }
        let mut after_blanks: Vec<(u8, [bool; 256])> = Vec::new();
        for (first, _) in &second {
            let mut table = [false; 256];
            let all_tags = patterns
                .iter()
                .filter(|(p, _)| p.first_byte() == *first)
                .all(|(p, _)| p.mark_after_blanks(&mut table));
            if all_tags {
                after_blanks.push((*first, table));
            }
        }
        let mut slot = [0u8; 256];
        let quick: Vec<Quick> = second
            .iter()
            .enumerate()
            .map(|(i, (first, table))| {
                slot[usize::from(*first)] = u8::try_from(i + 1).unwrap_or(0);
                Quick {
                    second: *table,
                    after_blank: after_blanks
                        .iter()
                        .find(|(f, _)| f == first)
                        .map(|(_, t)| Box::new(*t)),
                }
            })
            .collect();
        // A first byte's [`Look`]: its [`Quick`]'s (every first byte has one).
        let look = |b: u8| {
            let i = usize::from(slot[usize::from(b)]).checked_sub(1);
            i.and_then(|i| quick.get(i))
                .map_or_else(Look::keep_all, Look::new)
        };
        let finder = match (patterns.as_slice(), firsts.as_slice()) {
            ([(p, _)], _) if p.exact_bytes().is_some() => Finder::Memmem(Box::new(
                memmem::Finder::new(p.exact_bytes().unwrap()).into_owned(),
            )),
            (_, [a]) => Finder::One(*a, Box::new(look(*a))),
            (_, [a, b]) => Finder::Two(*a, *b, Box::new([look(*a), look(*b)])),
            (_, [a, b, c]) => Finder::Three(*a, *b, *c, Box::new([look(*a), look(*b), look(*c)])),
            _ => {
                let mut t = Box::new([false; 256]);
                for b in firsts {
                    t[usize::from(b)] = true;
                }
                Finder::Table(t)
            }
        };
        PatternSet {
            patterns,
            finder,
            slot,
            quick: quick.into_boxed_slice(),
            third: third.into_boxed_slice(),
            after_blanks: after_blanks.into_boxed_slice(),
        }
    }

    /// True when no pattern can match at candidate `at`, by the looks that reject most
    /// candidates (every `<` of code in an XML body): the byte after it, or the byte after
    /// one blank (`a < b`). Inline, before the full [`PatternSet::try_at`]; a candidate
    /// it keeps may still be rejected there.
    #[inline(always)]
    fn rejects(&self, hay: &[u8], at: usize) -> bool {
        let Some(&next) = hay.get(at + 1) else {
            return false;
        };
        let slot = usize::from(self.slot[usize::from(hay[at])]);
        let Some(q) = slot.checked_sub(1).and_then(|i| self.quick.get(i)) else {
            return false;
        };
        if !q.second[usize::from(next)] {
            return true;
        }
        if is_blank(next)
            && let Some(table) = &q.after_blank
            && let Some(&after) = hay.get(at + 2)
            && !is_blank(after)
        {
            return !table[usize::from(after)];
        }
        false
    }

    /// Decides what happens at candidate `at`: the longest full match unless some pattern
    /// is still partial (then wait, unless at end of stream).
    fn try_at(&self, hay: &[u8], at: usize, eof: bool, lf: LineFloor) -> Option<Found> {
        // The second-byte look is [`PatternSet::rejects`]'s, made before.
        if let Some(&after) = hay.get(at + 2)
            && let Some((.., table)) = self
                .third
                .iter()
                .find(|(f, s, _)| *f == hay[at] && *s == hay[at + 1])
            && !table[usize::from(after)]
        {
            return None;
        }
        if let Some(&next) = hay.get(at + 1)
            && is_blank(next)
            && let Some((_, table)) = self.after_blanks.iter().find(|(f, _)| *f == hay[at])
        {
            // The first byte after at most `TAG_MAX_BLANKS` blanks (a blank past them: no
            // tag matches); the input ending first leaves it to the patterns.
            let rest = &hay[at + 1..];
            let n = rest
                .iter()
                .take(TAG_MAX_BLANKS + 1)
                .position(|&b| !is_blank(b));
            match n {
                Some(n) if !table[usize::from(rest[n])] => return None,
                None if rest.len() > TAG_MAX_BLANKS => return None,
                _ => {}
            }
        }
        let mut best: Option<(usize, Action)> = None;
        let mut partial = false;
        for (p, action) in &self.patterns {
            if p.first_byte() != hay[at] {
                continue;
            }
            match p.match_at(&hay[at..]) {
                MatchAt::Full(len) => {
                    if p.line_start && !is_line_start(hay, at, lf) {
                        continue;
                    }
                    if best.is_none_or(|(l, _)| len > l) {
                        best = Some((len, *action));
                    }
                }
                MatchAt::Partial if !eof && (!p.line_start || is_line_start(hay, at, lf)) => {
                    partial = true;
                }
                MatchAt::Partial | MatchAt::No => {}
            }
        }
        if partial {
            Some(Found::Partial { at })
        } else {
            best.map(|(len, action)| Found::Match { at, len, action })
        }
    }

    /// Finds the first match or undecidable candidate in `hay[from..]`.
    pub(super) fn find(&self, hay: &[u8], from: usize, eof: bool, lf: LineFloor) -> Found {
        let tail = &hay[from..];
        match &self.finder {
            Finder::Memmem(finder) => {
                if let Some(i) = finder.find(tail) {
                    let (_, action) = self.patterns[0];
                    return Found::Match {
                        at: from + i,
                        len: finder.needle().len(),
                        action,
                    };
                }
                if eof {
                    return Found::None;
                }
                let needle = finder.needle();
                let start = tail.len().saturating_sub(needle.len() - 1);
                for i in start..tail.len() {
                    if needle.starts_with(&tail[i..]) {
                        return Found::Partial { at: from + i };
                    }
                }
                Found::None
            }
            // A long tail (a reply fed whole, a large delta) has candidates every few words
            // in code (every `<` of an XML body), where a `memchr` per candidate costs more
            // than the look that rejects it: [`PatternSet::find_long`] takes them from a bit
            // per byte, 128 bytes at a time. A short one (a token-sized delta) keeps
            // `memchr`, whose one call costs less than a block's bits.
            //
            // From a token-sized delta's tail of 16 bytes (30 code points of code) up to 64,
            // the candidates come from one mask of the last 64 bytes ([`tail_mask`]):
            // code's `<`s would cost a `memchr` each. A shorter tail keeps `memchr`, and is
            // told by one look at its length, as before.
            Finder::One(a, _) if tail.len() < WINDOW_TAIL => {
                self.find_candidates(hay, from, eof, lf, memchr::memchr_iter(*a, tail))
            }
            Finder::Two(a, b, _) if tail.len() < WINDOW_TAIL => {
                self.find_candidates(hay, from, eof, lf, memchr::memchr2_iter(*a, *b, tail))
            }
            Finder::Three(a, b, c, _) if tail.len() < WINDOW_TAIL => {
                self.find_candidates(hay, from, eof, lf, memchr::memchr3_iter(*a, *b, *c, tail))
            }
            Finder::One(a, _) if tail.len() < LONG_TAIL => {
                self.find_by_mask(hay, from, eof, lf, tail_mask(hay, from, [*a]))
            }
            Finder::Two(a, b, _) if tail.len() < LONG_TAIL => {
                self.find_by_mask(hay, from, eof, lf, tail_mask(hay, from, [*a, *b]))
            }
            Finder::Three(a, b, c, _) if tail.len() < LONG_TAIL => {
                self.find_by_mask(hay, from, eof, lf, tail_mask(hay, from, [*a, *b, *c]))
            }
            Finder::One(..) | Finder::Two(..) | Finder::Three(..) => {
                self.find_long(hay, from, eof, lf)
            }
            Finder::Table(t) => self.find_candidates(
                hay,
                from,
                eof,
                lf,
                tail.iter()
                    .enumerate()
                    .filter(|(_, b)| t[usize::from(**b)])
                    .map(|(i, _)| i),
            ),
        }
    }

    /// [`PatternSet::find`] in a tail of [`WINDOW_TAIL`] bytes up to [`LONG_TAIL`], its
    /// candidates' bits in `mask` when it fits in 64 bytes ([`tail_mask`]): none, the
    /// common case, is told here; the candidates' look and a longer tail's `memchr` are
    /// out of line, so that [`PatternSet::find`] stays as small as it was.
    #[inline(always)]
    fn find_by_mask(
        &self,
        hay: &[u8],
        from: usize,
        eof: bool,
        lf: LineFloor,
        mask: Option<u64>,
    ) -> Found {
        match mask {
            Some(0) => Found::None,
            Some(mask) => self.find_in_mask(hay, from, eof, lf, mask),
            None => self.find_in_tail(hay, from, eof, lf),
        }
    }

    /// The candidates of a short tail's mask, each first looked at with [`Look`]'s tables
    /// (as [`PatternSet::find_long`] does): with one needle (ACTION's `<`), nothing is
    /// looked up per candidate, and a candidate the byte after rejects (code's `<T`, `a <
    /// b`) costs a few instructions.
    #[inline(always)]
    fn find_in_mask(&self, hay: &[u8], from: usize, eof: bool, lf: LineFloor, mask: u64) -> Found {
        match &self.finder {
            Finder::One(_, look) => self.find_masked(hay, from, eof, lf, mask, |_| look),
            Finder::Two(a, _, looks) => {
                let [for_a, for_b] = &**looks;
                self.find_masked(hay, from, eof, lf, mask, |first| {
                    if first == *a { for_a } else { for_b }
                })
            }
            Finder::Three(a, b, _, looks) => {
                let [for_a, for_b, for_c] = &**looks;
                self.find_masked(hay, from, eof, lf, mask, |first| {
                    if first == *a {
                        for_a
                    } else if first == *b {
                        for_b
                    } else {
                        for_c
                    }
                })
            }
            Finder::Memmem(_) | Finder::Table(_) => {
                self.find_outlined(hay, from, eof, lf, mask_stops(mask))
            }
        }
    }

    /// [`PatternSet::find_in_mask`]'s loop, `look_of` the looks of a candidate's first
    /// byte; `mask`'s bit `i` is a candidate at `from + i`.
    #[inline(always)]
    fn find_masked<'s>(
        &'s self,
        hay: &[u8],
        from: usize,
        eof: bool,
        lf: LineFloor,
        mut mask: u64,
        look_of: impl Fn(u8) -> &'s Look,
    ) -> Found {
        while mask != 0 {
            let at = from + mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if look_of(hay[at]).rejects(hay, at) {
                continue;
            }
            if let Some(found) = self.try_at(hay, at, eof, lf) {
                return found;
            }
        }
        Found::None
    }

    /// A tail longer than 64 bytes, shorter than [`LONG_TAIL`]: `memchr`.
    fn find_in_tail(&self, hay: &[u8], from: usize, eof: bool, lf: LineFloor) -> Found {
        let tail = &hay[from..];
        match &self.finder {
            Finder::One(a, _) => {
                self.find_outlined(hay, from, eof, lf, memchr::memchr_iter(*a, tail))
            }
            Finder::Two(a, b, _) => {
                self.find_outlined(hay, from, eof, lf, memchr::memchr2_iter(*a, *b, tail))
            }
            Finder::Three(a, b, c, _) => {
                self.find_outlined(hay, from, eof, lf, memchr::memchr3_iter(*a, *b, *c, tail))
            }
            Finder::Memmem(_) | Finder::Table(_) => Found::None,
        }
    }

    /// [`PatternSet::find`] in a long tail (a reply fed whole), where code has a candidate
    /// every few words (every `<` of an XML body): the candidates of 128 bytes at a time
    /// are taken from their bits (two 64-byte masks, [`block_mask_of`]) in a loop of its
    /// own, a few instructions each, and most are rejected by [`Look`]'s table looks (the
    /// byte after; after a blank, the byte after that) read from the window without a
    /// bound check. The looks come with the finder's needles: with one (ACTION's `<`),
    /// nothing is looked up per candidate. 128 bytes without a candidate mean sparse ones
    /// (prose, code without markup): the next is `memchr`'s, and the next blocks begin
    /// there. Out of line, as [`PatternSet::find_outlined`] is, so that
    /// [`PatternSet::find`]'s short-tail paths stay as they are.
    #[inline(never)]
    fn find_long(&self, hay: &[u8], from: usize, eof: bool, lf: LineFloor) -> Found {
        match &self.finder {
            Finder::One(a, look) => self.find_blocks(hay, from, eof, lf, [*a], |_| look),
            Finder::Two(a, b, looks) => {
                let [for_a, for_b] = &**looks;
                self.find_blocks(hay, from, eof, lf, [*a, *b], |first| {
                    if first == *a { for_a } else { for_b }
                })
            }
            Finder::Three(a, b, c, looks) => {
                let [for_a, for_b, for_c] = &**looks;
                self.find_blocks(hay, from, eof, lf, [*a, *b, *c], |first| {
                    if first == *a {
                        for_a
                    } else if first == *b {
                        for_b
                    } else {
                        for_c
                    }
                })
            }
            Finder::Memmem(_) | Finder::Table(_) => Found::None,
        }
    }

    /// [`PatternSet::find_long`]'s loop, `look_of` the looks of a candidate's first byte.
    #[inline(always)]
    fn find_blocks<'s, const N: usize>(
        &'s self,
        hay: &[u8],
        from: usize,
        eof: bool,
        lf: LineFloor,
        needles: [u8; N],
        look_of: impl Fn(u8) -> &'s Look,
    ) -> Found {
        /// Two blocks and the two bytes after them that [`Look::rejects_in`] reads.
        const WINDOW: usize = 2 * STOP_BLOCK + 2;
        let mut base = from;
        while let Some(window) = hay.get(base..).and_then(|w| w.first_chunk::<WINDOW>()) {
            let low = block_mask_of(&window[..STOP_BLOCK], needles);
            let high = block_mask_of(&window[STOP_BLOCK..2 * STOP_BLOCK], needles);
            if low | high == 0 {
                // Sparse: no candidate in 128 bytes; the next is `memchr`'s, and the next
                // blocks begin there.
                base += 2 * STOP_BLOCK;
                match memchr_of(&hay[base..], needles) {
                    Some(i) => base += i,
                    None => return Found::None,
                }
                continue;
            }
            for (offset, mut mask) in [(0, low), (STOP_BLOCK, high)] {
                while mask != 0 {
                    let i = offset + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    if look_of(window[i]).rejects_in(window, i) {
                        continue;
                    }
                    if let Some(found) = self.try_at(hay, base + i, eof, lf) {
                        return found;
                    }
                }
            }
            base += 2 * STOP_BLOCK;
        }
        // The last bytes, fewer than a window: a mask per 64 bytes.
        while base < hay.len() {
            let mut mask = mask_at(hay, base, needles);
            while mask != 0 {
                let at = base + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if look_of(hay[at]).rejects(hay, at) {
                    continue;
                }
                if let Some(found) = self.try_at(hay, at, eof, lf) {
                    return found;
                }
            }
            base += STOP_BLOCK;
        }
        Found::None
    }

    /// [`PatternSet::find_candidates`] out of line, one function per kind of candidates.
    #[inline(never)]
    fn find_outlined(
        &self,
        hay: &[u8],
        from: usize,
        eof: bool,
        lf: LineFloor,
        candidates: impl Iterator<Item = usize>,
    ) -> Found {
        self.find_candidates(hay, from, eof, lf, candidates)
    }

    /// Inline where it is called: in [`PatternSet::find`] for the short tails' way, which
    /// runs once per delta, and in [`PatternSet::find_outlined`].
    #[inline(always)]
    fn find_candidates(
        &self,
        hay: &[u8],
        from: usize,
        eof: bool,
        lf: LineFloor,
        candidates: impl Iterator<Item = usize>,
    ) -> Found {
        for i in candidates {
            if self.rejects(hay, from + i) {
                continue;
            }
            if let Some(found) = self.try_at(hay, from + i, eof, lf) {
                return found;
            }
        }
        Found::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LF: LineFloor = LineFloor {
        floor: 0,
        floor_is_line_start: true,
    };

    impl PatternSet {
        /// This set without its byte looks: every candidate goes to the patterns.
        fn without_looks(&self) -> Self {
            let keep = Look::keep_all;
            let mut plain = self.clone();
            plain.third = Box::new([]);
            plain.after_blanks = Box::new([]);
            plain.slot = [0; 256];
            plain.quick = Box::new([]);
            plain.finder = match plain.finder {
                Finder::One(a, _) => Finder::One(a, Box::new(keep())),
                Finder::Two(a, b, _) => Finder::Two(a, b, Box::new([keep(), keep()])),
                Finder::Three(a, b, c, _) => {
                    Finder::Three(a, b, c, Box::new([keep(), keep(), keep()]))
                }
                other => other,
            };
            plain
        }
    }

    #[test]
    fn one_exact_pattern_uses_memmem_and_reports_a_partial_tail() {
        let set = PatternSet::new(vec![(Pattern::exact("<|[END_TOOL]|>"), Action::Close)]);
        assert!(matches!(set.finder, Finder::Memmem(_)));
        let hay = b"ab<|[END_TOOL]|>";
        assert_eq!(
            set.find(hay, 0, false, LF),
            Found::Match {
                at: 2,
                len: 14,
                action: Action::Close
            }
        );
        assert_eq!(set.find(b"ab<|[EN", 0, false, LF), Found::Partial { at: 2 });
        assert_eq!(set.find(b"ab<|[EN", 0, true, LF), Found::None);
    }

    #[test]
    fn the_longest_match_wins_and_partials_wait() {
        let set = PatternSet::new(vec![
            (Pattern::exact("「始」"), Action::EnterRegion(0)),
            (Pattern::exact("「始ESCAPE」"), Action::EnterRegion(1)),
            (Pattern::exact("#").at_line_start(), Action::EnterRegion(2)),
        ]);
        assert!(matches!(set.finder, Finder::Two(..)));
        let hay = "x「始ESCAPE」".as_bytes();
        assert_eq!(
            set.find(hay, 0, false, LF),
            Found::Match {
                at: 1,
                len: 15,
                action: Action::EnterRegion(1)
            }
        );
        // `「始` may still become either opener: wait, unless at the end of the stream.
        let hay = "a「始".as_bytes();
        assert_eq!(set.find(hay, 0, false, LF), Found::Partial { at: 1 });
        assert_eq!(set.find(hay, 0, true, LF), Found::None);
        assert!(matches!(
            set.find("「始」".as_bytes(), 0, false, LF),
            Found::Match {
                action: Action::EnterRegion(0),
                ..
            }
        ));
        // `#` only at line start.
        assert_eq!(set.find(b"a # b", 0, false, LF), Found::None);
        assert!(matches!(
            set.find(b"a\n  # b", 0, false, LF),
            Found::Match { at: 4, .. }
        ));
    }

    /// A long tail, whose candidates come a block at a time ([`PatternSet::find_long`]),
    /// gives what `memchr`'s candidates give: code's `<`s and `&`s by the hundred before a
    /// close tag, or none.
    #[test]
    fn long_tails_find_what_memchr_finds() {
        use proptest::prelude::*;
        const PIECES: &[&str] = &[
            "a < b",
            "Vec<u8>",
            "&&",
            "&amp;",
            "x",
            "        ",
            "\n",
            "</",
            "</action >",
            "<ACTION>",
            "< /ACTION>",
            "「始」",
            "<![CDATA[",
            "---",
        ];
        let sets = [
            vec![(Pattern::closing_tag("ACTION"), Action::Close)],
            vec![
                (Pattern::closing_tag("ACTION"), Action::Close),
                (Pattern::exact("「始」"), Action::EnterRegion(0)),
            ],
            vec![
                (Pattern::closing_tag("ACTION"), Action::Close),
                (Pattern::exact("「始」"), Action::EnterRegion(0)),
                (Pattern::exact("&amp;"), Action::EnterRegion(1)),
            ],
        ];
        proptest!(ProptestConfig::with_cases(500), |(
            parts in prop::collection::vec(prop::sample::select(PIECES), 0..160),
            which in 0usize..3,
            eof: bool,
            from_frac in 0usize..100,
        )| {
            let set = PatternSet::new(sets[which].clone());
            let hay = parts.concat();
            let hay = hay.as_bytes();
            let from = hay.len() * from_frac / 100;
            let tail = &hay[from..];
            let by_memchr = match &set.finder {
                Finder::One(a, _) => set.find_candidates(hay, from, eof, LF, memchr::memchr_iter(*a, tail)),
                Finder::Two(a, b, _) => set.find_candidates(hay, from, eof, LF, memchr::memchr2_iter(*a, *b, tail)),
                Finder::Three(a, b, c, _) => set.find_candidates(hay, from, eof, LF, memchr::memchr3_iter(*a, *b, *c, tail)),
                other => panic!("{other:?}"),
            };
            prop_assert_eq!(set.find(hay, from, eof, LF), by_memchr);
        });
    }

    /// In a long haystack (256 bytes and more) of dense candidates — code's `<`s before
    /// blanks, `/`, names, `=`, `'`, matches and near-matches across the 64-byte blocks'
    /// edges, a match or a partial one in the last bytes — [`PatternSet::find`] gives what
    /// a look at every byte gives: each candidate in order, decided by the patterns alone
    /// (no table looks), from any offset, at the end of the stream or not, for one, two,
    /// three or more first bytes.
    #[test]
    fn long_tails_are_every_candidate_in_order() {
        use proptest::prelude::*;
        let patterns = || {
            vec![
                (Pattern::closing_tag("ACTION"), Action::Close),
                (Pattern::tag("ACTION"), Action::Restart),
                (Pattern::closing_tag(""), Action::Restart),
                (Pattern::exact("<![CDATA["), Action::EnterRegion(0)),
                (Pattern::exact("<!--"), Action::EnterRegion(1)),
                (Pattern::exact("「始」"), Action::EnterRegion(2)),
                (Pattern::exact("&amp;"), Action::EnterRegion(3)),
                (Pattern::exact("#").at_line_start(), Action::EnterRegion(4)),
            ]
        };
        const PIECES: &[&str] = &[
            "a < b",
            "a <b",
            "a <\tb",
            "Vec<u8>",
            "x <= y",
            "impl<'a>",
            "<<",
            "< /",
            "</x>",
            "</ a",
            "<A",
            "< a",
            "<!",
            "<!-",
            "</ACTION>",
            "< / action >",
            "<ACTION>",
            "<![CDATA[",
            "<!--",
            "「始」",
            "「",
            "&amp;",
            "&&",
            "\n# ",
            "#",
            " ",
            "\n",
            "x",
            "let v = 1;",
        ];
        const ENDS: &[&str] = &[
            "",
            "<",
            "</",
            "</ACT",
            "</ACTION",
            "< ",
            "<  /",
            "<!",
            "<![CD",
            "<!-",
            "「",
            "「始",
            "&am",
            "\n#",
            "</ACTION>",
            "a < b",
        ];
        fn naive(set: &PatternSet, hay: &[u8], from: usize, eof: bool) -> Found {
            let plain = set.without_looks();
            (from..hay.len())
                .filter(|&at| set.patterns.iter().any(|(p, _)| p.first_byte() == hay[at]))
                .find_map(|at| plain.try_at(hay, at, eof, LF))
                .unwrap_or(Found::None)
        }
        proptest!(ProptestConfig::with_cases(1000), |(
            parts in prop::collection::vec(prop::sample::select(PIECES), 30..220),
            end in prop::sample::select(ENDS),
            pad in 0usize..70,
            subset in 1usize..256,
            eof: bool,
            froms in prop::collection::vec(0usize..1000, 1..5),
        )| {
            let chosen: Vec<(Pattern, Action)> = patterns()
                .into_iter()
                .enumerate()
                .filter(|(i, _)| subset & (1 << i) != 0)
                .map(|(_, p)| p)
                .collect();
            let set = PatternSet::new(chosen);
            let mut hay = "y".repeat(pad);
            hay.push_str(&parts.concat());
            hay.push_str(end);
            let hay = hay.as_bytes();
            for from in froms.into_iter().chain([0]) {
                let from = from.min(hay.len());
                prop_assert_eq!(
                    set.find(hay, from, eof, LF),
                    naive(&set, hay, from, eof),
                    "{:?} from {} eof {}", String::from_utf8_lossy(hay), from, eof
                );
            }
        });
    }

    /// The second- and third-byte looks (and [`PatternSet::rejects`], their inline first
    /// part) only skip candidates that cannot match: with them
    /// or without them, `find` gives the same answer on any haystack, at the end of the
    /// stream or not.
    #[test]
    fn byte_looks_never_skip_a_match() {
        use proptest::prelude::*;
        let patterns = || {
            vec![
                (Pattern::closing_tag("ACTION"), Action::Close),
                (Pattern::tag("ACTION"), Action::Open(0)),
                (Pattern::tag("a"), Action::Open(1)),
                (Pattern::closing_tag(""), Action::Restart),
                (Pattern::exact("<![CDATA["), Action::EnterRegion(0)),
                (Pattern::exact("<!--"), Action::EnterRegion(1)),
                (Pattern::exact("< x"), Action::EnterRegion(4)),
                (Pattern::exact("<|[END_TOOL]|>"), Action::LeaveRegion),
                (Pattern::exact("「始」"), Action::EnterRegion(2)),
                (Pattern::exact("<>").at_line_start(), Action::EnterRegion(3)),
            ]
        };
        const PIECES: &[&str] = &[
            "<",
            "/",
            " ",
            "\t",
            "        ",
            "a",
            "A",
            "ction",
            "CTION",
            ">",
            "!",
            "[CDATA[",
            "--",
            "|[",
            "END_TOOL]|>",
            "「",
            "始",
            "」",
            "\n",
            "x",
            "<ACTION>",
            "</action >",
        ];
        proptest!(ProptestConfig::with_cases(3000), |(
            parts in prop::collection::vec(prop::sample::select(PIECES), 0..16),
            subset in 1usize..1024,
            eof: bool,
        )| {
            let chosen: Vec<(Pattern, Action)> = patterns()
                .into_iter()
                .enumerate()
                .filter(|(i, _)| subset & (1 << i) != 0)
                .map(|(_, p)| p)
                .collect();
            let hay = parts.concat();
            let fast = PatternSet::new(chosen);
            let plain = fast.without_looks();
            for from in 0..=hay.len() {
                prop_assert_eq!(
                    fast.find(hay.as_bytes(), from, eof, LF),
                    plain.find(hay.as_bytes(), from, eof, LF),
                    "{:?} from {}", hay, from
                );
            }
        });
    }
}
