//! The block scanner: finds marker-delimited blocks in a stream of text deltas.
//!
//! This is the one scanner of the workspace. [`crate::Decoder`] runs it with the TAM
//! grammar; `action-xml` runs it with `<ACTION>` … `</ACTION>` and CDATA/comment regions;
//! a client that wants both protocols in one stream gives one [`Grammar`] both syntaxes.
//!
//! A [`Grammar`] lists block syntaxes. Each has a start and an end [`Pattern`] and
//! [`Region`]s: spans inside a block (TAM values, XML CDATA sections, comments) in which
//! the block's markers are ordinary content — or, for regions with
//! [`Region::block_markers_inside`], in which only the other regions' openers are.
//!
//! The [`Scanner`] reports to a [`ScanHandler`]:
//! * prose outside blocks, borrowed from the delta, as early as possible: only bytes that may
//!   still begin a start marker are held back (fewer than the longest start pattern);
//! * each block's opening, each region's opening and closing (with offsets into the block
//!   buffer), and the block's closing with its raw text as one [`ByteString`] that the
//!   protocol layer slices without copying;
//! * bytes that are not UTF-8 ([`Scanner::feed_bytes`]).
//!
//! Complexity: every byte is looked at a bounded number of times — the searches resume
//! where they stopped (the resume point is kept on the struct), and a candidate marker
//! position that could not be decided at the end of a delta is re-examined once more,
//! which costs at most the pattern length. Searches use `memchr`/`memmem`.
//!
//! Memory: outside blocks the scanner holds at most 63 bytes; inside a block it holds the
//! block (up to `max_block_bytes` plus one chunk of input); past the limit it keeps only
//! the bytes of an undecided marker and counts the rest as dropped.

use std::ops::Range;
use std::sync::Arc;

use bytestring::ByteString;
use memchr::memmem;

use crate::diagnostic::Span;

/// Longest pattern the scanner accepts, in bytes (blanks included for tags).
pub const MAX_PATTERN_LEN: usize = 64;

/// Blanks allowed at each blank position of a [`Pattern::tag`].
const TAG_MAX_BLANKS: usize = 8;

/// What a [`Pattern`] matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternKind {
    /// These bytes, exactly.
    Exact(Box<[u8]>),
    /// `<` blanks [`/` blanks] NAME blanks `>`, NAME ASCII case-insensitive (stored lowercase).
    Tag { name: Box<[u8]>, closing: bool },
}

/// A marker the scanner looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    kind: PatternKind,
    line_start: bool,
}

/// Result of matching a pattern at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchAt {
    /// Matched, this many bytes long.
    Full(usize),
    /// The input ended while the pattern could still match.
    Partial,
    /// Cannot match here.
    No,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

impl Pattern {
    /// Exactly the bytes of `marker` (byte-exact match).
    pub fn exact(marker: &str) -> Self {
        Pattern {
            kind: PatternKind::Exact(marker.as_bytes().into()),
            line_start: false,
        }
    }

    /// An opening XML-like tag `<name>`: ASCII case-insensitive, with up to 8 blanks after
    /// `<` and before `>` (`<ACTION>`, `<action >`, `< Action>`).
    pub fn tag(name: &str) -> Self {
        Pattern {
            kind: PatternKind::Tag {
                name: name.to_ascii_lowercase().into_bytes().into(),
                closing: false,
            },
            line_start: false,
        }
    }

    /// A closing tag `</name>`, matched like [`Pattern::tag`] (blanks also after `/`).
    pub fn closing_tag(name: &str) -> Self {
        Pattern {
            kind: PatternKind::Tag {
                name: name.to_ascii_lowercase().into_bytes().into(),
                closing: true,
            },
            line_start: false,
        }
    }

    /// The same pattern, matching only where it is the first non-blank text of a line (or of
    /// the block body).
    pub fn at_line_start(mut self) -> Self {
        self.line_start = true;
        self
    }

    fn first_byte(&self) -> u8 {
        match &self.kind {
            PatternKind::Exact(b) => b[0],
            PatternKind::Tag { .. } => b'<',
        }
    }

    /// Upper bound on the length of a match.
    fn max_len(&self) -> usize {
        match &self.kind {
            PatternKind::Exact(b) => b.len(),
            PatternKind::Tag { name, closing } => {
                2 + name.len()
                    + usize::from(*closing)
                    + TAG_MAX_BLANKS * (2 + usize::from(*closing))
            }
        }
    }

    /// Marks the bytes that may follow the first byte of a match.
    fn mark_second_bytes(&self, table: &mut [bool; 256]) {
        match &self.kind {
            PatternKind::Exact(b) if b.len() > 1 => table[usize::from(b[1])] = true,
            PatternKind::Exact(_) => table.fill(true),
            PatternKind::Tag { name, closing } => {
                table[usize::from(b' ')] = true;
                table[usize::from(b'\t')] = true;
                if *closing {
                    table[usize::from(b'/')] = true;
                } else if let Some(&c) = name.first() {
                    table[usize::from(c.to_ascii_lowercase())] = true;
                    table[usize::from(c.to_ascii_uppercase())] = true;
                } else {
                    table[usize::from(b'>')] = true;
                }
            }
        }
    }

    fn exact_bytes(&self) -> Option<&[u8]> {
        match &self.kind {
            PatternKind::Exact(b) if !self.line_start => Some(b),
            _ => None,
        }
    }

    /// Matches the pattern at the start of `hay`.
    fn match_at(&self, hay: &[u8]) -> MatchAt {
        match &self.kind {
            PatternKind::Exact(pat) => {
                let n = pat.len().min(hay.len());
                if hay[..n] != pat[..n] {
                    MatchAt::No
                } else if n == pat.len() {
                    MatchAt::Full(n)
                } else {
                    MatchAt::Partial
                }
            }
            PatternKind::Tag { name, closing } => match_tag(name, *closing, hay),
        }
    }
}

fn match_tag(name: &[u8], closing: bool, hay: &[u8]) -> MatchAt {
    let mut i = 0;
    let expect = |i: &mut usize, want: u8| -> Option<MatchAt> {
        match hay.get(*i) {
            None => Some(MatchAt::Partial),
            Some(&b) if b.to_ascii_lowercase() == want => {
                *i += 1;
                None
            }
            Some(_) => Some(MatchAt::No),
        }
    };
    let blanks = |i: &mut usize| -> Option<MatchAt> {
        let mut n = 0;
        while let Some(&b) = hay.get(*i) {
            if !is_blank(b) {
                return None;
            }
            n += 1;
            if n > TAG_MAX_BLANKS {
                return Some(MatchAt::No);
            }
            *i += 1;
        }
        Some(MatchAt::Partial)
    };
    if let Some(r) = expect(&mut i, b'<') {
        return r;
    }
    if let Some(r) = blanks(&mut i) {
        return r;
    }
    if closing {
        if let Some(r) = expect(&mut i, b'/') {
            return r;
        }
        if let Some(r) = blanks(&mut i) {
            return r;
        }
    }
    for &c in name {
        if let Some(r) = expect(&mut i, c) {
            return r;
        }
    }
    if let Some(r) = blanks(&mut i) {
        return r;
    }
    if let Some(r) = expect(&mut i, b'>') {
        return r;
    }
    MatchAt::Full(i)
}

/// A region inside a block: from `open` to `close`.
#[derive(Debug, Clone)]
pub struct Region {
    /// What opens the region.
    pub open: Pattern,
    /// What closes it.
    pub close: Pattern,
    /// When true the block's end and start markers still act inside the region (a line
    /// comment); when false they are content (a TAM value, a CDATA section).
    pub block_markers_inside: bool,
}

/// One kind of block.
#[derive(Debug, Clone)]
pub struct BlockSyntax {
    /// The start marker.
    pub start: Pattern,
    /// The end marker.
    pub end: Pattern,
    /// Regions inside the block body, tried in order at one position (put longer openers
    /// that share a prefix with shorter ones first).
    pub regions: Vec<Region>,
    /// When true, this kind's start marker inside an open block (outside regions) means the
    /// open block was never closed: it is closed as [`BlockEnd::Restart`] and a new one
    /// begins. When false the start marker is body text.
    pub restart_on_start: bool,
}

/// An invalid grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrammarError {
    /// A pattern is empty.
    EmptyPattern,
    /// A pattern is longer than [`MAX_PATTERN_LEN`].
    PatternTooLong(usize),
    /// A pattern's first byte is not the first byte of a UTF-8 character.
    NotCharStart,
    /// No block syntax was given.
    NoSyntax,
    /// A pattern contains U+FFFD, which stands for invalid UTF-8 in block buffers.
    ContainsReplacementChar,
}

impl std::fmt::Display for GrammarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrammarError::EmptyPattern => f.write_str("empty marker pattern"),
            GrammarError::PatternTooLong(n) => {
                write!(f, "marker pattern of {n} bytes exceeds {MAX_PATTERN_LEN}")
            }
            GrammarError::NotCharStart => {
                f.write_str("marker pattern does not begin with a UTF-8 character")
            }
            GrammarError::NoSyntax => f.write_str("grammar without any block syntax"),
            GrammarError::ContainsReplacementChar => f.write_str("marker pattern contains U+FFFD"),
        }
    }
}

impl std::error::Error for GrammarError {}

/// What happens when a pattern of a [`PatternSet`] matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Open(usize),
    Close,
    Restart,
    EnterRegion(usize),
    LeaveRegion,
}

/// How candidates are found.
#[derive(Debug, Clone)]
enum Finder {
    /// One exact pattern: memmem for full matches, then a look at the tail.
    Memmem(Box<memmem::Finder<'static>>),
    One(u8),
    Two(u8, u8),
    Three(u8, u8, u8),
    Table(Box<[bool; 256]>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
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

/// Where a line begins, for [`Pattern::at_line_start`]: bytes of `hay` before `floor` are
/// not looked at, and `floor_is_line_start` says whether `floor` begins a line.
#[derive(Debug, Clone, Copy)]
struct LineFloor {
    floor: usize,
    floor_is_line_start: bool,
}

fn is_line_start(hay: &[u8], at: usize, lf: LineFloor) -> bool {
    let mut i = at;
    while i > lf.floor {
        match hay[i - 1] {
            b'\n' => return true,
            b' ' | b'\t' | b'\r' => i -= 1,
            _ => return false,
        }
    }
    lf.floor_is_line_start
}

#[derive(Debug, Clone)]
struct PatternSet {
    patterns: Vec<(Pattern, Action)>,
    finder: Finder,
    /// Per distinct first byte, the bytes that may follow it: most candidates (every `<` in
    /// an XML body) are rejected by one table look-up.
    second: Box<[(u8, [bool; 256])]>,
}

impl PatternSet {
    fn new(patterns: Vec<(Pattern, Action)>) -> Self {
        let mut firsts: Vec<u8> = patterns.iter().map(|(p, _)| p.first_byte()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let finder = match (patterns.as_slice(), firsts.as_slice()) {
            ([(p, _)], _) if p.exact_bytes().is_some() => Finder::Memmem(Box::new(
                memmem::Finder::new(p.exact_bytes().unwrap()).into_owned(),
            )),
            (_, [a]) => Finder::One(*a),
            (_, [a, b]) => Finder::Two(*a, *b),
            (_, [a, b, c]) => Finder::Three(*a, *b, *c),
            _ => {
                let mut t = Box::new([false; 256]);
                for b in firsts {
                    t[usize::from(b)] = true;
                }
                Finder::Table(t)
            }
        };
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
        PatternSet {
            patterns,
            finder,
            second: second.into_boxed_slice(),
        }
    }

    /// Decides what happens at candidate `at`: the longest full match unless some pattern
    /// is still partial (then wait, unless at end of stream).
    fn try_at(&self, hay: &[u8], at: usize, eof: bool, lf: LineFloor) -> Option<Found> {
        if let Some(&next) = hay.get(at + 1)
            && let Some((_, table)) = self.second.iter().find(|(f, _)| *f == hay[at])
            && !table[usize::from(next)]
        {
            return None;
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
                _ => {}
            }
        }
        if partial {
            Some(Found::Partial { at })
        } else {
            best.map(|(len, action)| Found::Match { at, len, action })
        }
    }

    /// Finds the first match or undecidable candidate in `hay[from..]`.
    fn find(&self, hay: &[u8], from: usize, eof: bool, lf: LineFloor) -> Found {
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
            Finder::One(a) => {
                self.find_candidates(hay, from, eof, lf, memchr::memchr_iter(*a, tail))
            }
            Finder::Two(a, b) => {
                self.find_candidates(hay, from, eof, lf, memchr::memchr2_iter(*a, *b, tail))
            }
            Finder::Three(a, b, c) => {
                self.find_candidates(hay, from, eof, lf, memchr::memchr3_iter(*a, *b, *c, tail))
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

    fn find_candidates(
        &self,
        hay: &[u8],
        from: usize,
        eof: bool,
        lf: LineFloor,
        candidates: impl Iterator<Item = usize>,
    ) -> Found {
        for i in candidates {
            if let Some(found) = self.try_at(hay, from + i, eof, lf) {
                return found;
            }
        }
        Found::None
    }
}

#[derive(Debug)]
struct SyntaxSets {
    body: PatternSet,
    regions: Vec<(PatternSet, bool)>,
}

/// Compiled block syntaxes, shared by every scanner made from it.
#[derive(Debug)]
pub struct Grammar {
    syntaxes: Vec<BlockSyntax>,
    outside: PatternSet,
    /// The first bytes of the start patterns: a short delta without any is prose at once.
    starts: [bool; 256],
    sets: Vec<SyntaxSets>,
}

impl Grammar {
    /// Compiles `syntaxes`; block kinds are their indices.
    pub fn new(syntaxes: Vec<BlockSyntax>) -> Result<Arc<Grammar>, GrammarError> {
        if syntaxes.is_empty() {
            return Err(GrammarError::NoSyntax);
        }
        for s in &syntaxes {
            let mut all = vec![&s.start, &s.end];
            for r in &s.regions {
                all.push(&r.open);
                all.push(&r.close);
            }
            for p in all {
                if let PatternKind::Exact(b) = &p.kind {
                    if b.is_empty() {
                        return Err(GrammarError::EmptyPattern);
                    }
                    if (0x80..0xC0).contains(&b[0]) {
                        return Err(GrammarError::NotCharStart);
                    }
                    if memmem::find(b, "\u{FFFD}".as_bytes()).is_some() {
                        return Err(GrammarError::ContainsReplacementChar);
                    }
                }
                if p.max_len() > MAX_PATTERN_LEN {
                    return Err(GrammarError::PatternTooLong(p.max_len()));
                }
            }
        }
        let outside = PatternSet::new(
            syntaxes
                .iter()
                .enumerate()
                .map(|(k, s)| (s.start.clone(), Action::Open(k)))
                .collect(),
        );
        let sets = syntaxes
            .iter()
            .map(|s| {
                let mut body = vec![(s.end.clone(), Action::Close)];
                if s.restart_on_start {
                    body.push((s.start.clone(), Action::Restart));
                }
                for (r, region) in s.regions.iter().enumerate() {
                    body.push((region.open.clone(), Action::EnterRegion(r)));
                }
                let regions = s
                    .regions
                    .iter()
                    .map(|region| {
                        let mut pats = vec![(region.close.clone(), Action::LeaveRegion)];
                        if region.block_markers_inside {
                            pats.push((s.end.clone(), Action::Close));
                            if s.restart_on_start {
                                pats.push((s.start.clone(), Action::Restart));
                            }
                        }
                        (PatternSet::new(pats), region.block_markers_inside)
                    })
                    .collect();
                SyntaxSets {
                    body: PatternSet::new(body),
                    regions,
                }
            })
            .collect();
        let mut starts = [false; 256];
        for s in &syntaxes {
            starts[usize::from(s.start.first_byte())] = true;
        }
        Ok(Arc::new(Grammar {
            syntaxes,
            outside,
            starts,
            sets,
        }))
    }

    /// The block syntaxes, by kind.
    pub fn syntaxes(&self) -> &[BlockSyntax] {
        &self.syntaxes
    }
}

/// How a block ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEnd {
    /// Its end marker.
    Marker,
    /// Another start marker of its kind (see [`BlockSyntax::restart_on_start`]).
    Restart,
    /// End of stream ([`Scanner::finish`]): the stream ended normally.
    Eof,
    /// End of a stream that was cut ([`Scanner::finish_cut`]): a token limit, a transport
    /// error. Protocol layers apply no end-of-stream repair to such a block (SPEC §5).
    Cut,
}

/// A block as the scanner hands it over when it ends.
#[derive(Debug, Clone)]
pub struct ClosedBlock {
    /// Block kind (index in the grammar).
    pub kind: usize,
    /// How it ended.
    pub end: BlockEnd,
    /// Stream span of the whole block, start marker to end marker inclusive (to the
    /// restart marker or end of stream, exclusive, when unterminated).
    pub span: Span,
    /// The raw text of the block, as received (invalid UTF-8 replaced by U+FFFD); empty
    /// when the block overflowed.
    pub raw: ByteString,
    /// The body inside `raw`: after the start marker, before the end marker.
    pub body: Range<usize>,
    /// The region open at end of stream, with the offset in `raw` where its content
    /// begins.
    pub open_region: Option<(usize, usize)>,
    /// Bytes dropped because the block exceeded `max_block_bytes`: the whole block (0 when
    /// it did not exceed it). Region events are reported only for regions that end within
    /// the limit, so what is reported never depends on how the input was split.
    pub dropped: usize,
    /// Maps offsets in `raw` to stream offsets (needed only after invalid UTF-8).
    pub offsets: OffsetMap,
}

/// Maps offsets in a block buffer to stream offsets.
///
/// The two differ only after invalid UTF-8 inside a block, whose bytes are replaced by
/// U+FFFD in the buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetMap {
    base: usize,
    anchors: Vec<(usize, usize)>,
}

impl OffsetMap {
    fn new(base: usize) -> Self {
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
    fn drop_front(&mut self, n: usize) {
        let s = self.stream(n);
        self.anchors.retain(|(b, _)| *b > n);
        for a in &mut self.anchors {
            a.0 -= n;
        }
        self.base = s;
    }
}

/// Receives what the scanner finds. Every method has a do-nothing default except
/// [`ScanHandler::text`] and [`ScanHandler::block_closed`].
pub trait ScanHandler {
    /// Prose outside blocks, in order; `span` is its place in the stream.
    fn text(&mut self, text: &str, span: Span);

    /// A block of `kind` opened; `marker` spans its start marker.
    fn block_opened(&mut self, kind: usize, marker: Span) {
        let _ = (kind, marker);
    }

    /// A region opened inside the current block. `view.buf()[marker]` is its opener; its
    /// content begins at `marker.end`. Not reported once the block has overflowed.
    fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        let _ = (view, region, marker);
    }

    /// Whether the region opener at `view.buf()[marker]` opens a region. Returning `false`
    /// leaves the opener as ordinary block content (scanning goes on after it in the body),
    /// so a protocol can refuse an opener that is out of place (a TAM `「始」` with no key
    /// before it). The decision may look only at `view.buf()[..marker.end]`, which keeps it
    /// independent of how the input was split. Not asked once the block has overflowed.
    /// Default: `true`.
    fn accept_region(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) -> bool {
        let _ = (view, region, marker);
        true
    }

    /// Progress inside the open block: `view.buf()[..settled]` is decided (no marker
    /// candidate in it is still undecided) and every region event up to `settled` has been
    /// reported. Called after each push of bytes into the block, so a protocol layer can
    /// stream what it has read (argument values as the model writes them). `settled` never
    /// decreases within one block and never exceeds `max_block_bytes`, so everything below
    /// it is reported whatever the splitting. Not called after the push in which the block
    /// overflowed. Default: nothing.
    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        let _ = (view, settled);
    }

    /// A region closed: `content` and `marker` (its closer) are ranges of `view.buf()`.
    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        let _ = (view, region, content, marker);
    }

    /// The current block ended.
    fn block_closed(&mut self, block: ClosedBlock);

    /// Bytes that are not UTF-8. Outside a block they appear nowhere else; inside a block
    /// the buffer holds U+FFFD in their place.
    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        let _ = (bytes, span, in_block);
    }
}

/// Read access to the current block buffer, for [`ScanHandler`] callbacks.
#[derive(Debug)]
pub struct BlockView<'a> {
    buf: &'a str,
    offsets: &'a OffsetMap,
    kind: usize,
}

impl<'a> BlockView<'a> {
    /// A view of `buf` (a block buffer or a [`ClosedBlock::raw`]) for protocol layers that
    /// replay region events, e.g. when recovering a block at end of stream.
    pub fn new(buf: &'a str, offsets: &'a OffsetMap, kind: usize) -> Self {
        BlockView { buf, offsets, kind }
    }

    /// The block's bytes received so far, start marker included.
    pub fn buf(&self) -> &'a str {
        self.buf
    }

    /// The stream offset of buffer offset `off`.
    pub fn stream(&self, off: usize) -> usize {
        self.offsets.stream(off)
    }

    /// The stream span of buffer range `r`.
    pub fn span(&self, r: Range<usize>) -> Span {
        self.offsets.span(r)
    }

    /// The block kind.
    pub fn kind(&self) -> usize {
        self.kind
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Outside,
    Body {
        kind: usize,
    },
    Region {
        kind: usize,
        region: usize,
        content_start: usize,
    },
}

/// The streaming block scanner. See the [module documentation](self).
#[derive(Debug)]
pub struct Scanner {
    grammar: Arc<Grammar>,
    max_block_bytes: usize,
    state: State,
    /// Stream offset of the next byte the scanner will read.
    pos: usize,
    /// Outside: the held-back bytes that may begin a start marker. Inside: the block.
    buf: String,
    /// Inside: where the next search starts in `buf`.
    scan_from: usize,
    /// Inside: where the body starts (line-start floor).
    floor: LineFloor,
    offsets: OffsetMap,
    block_start: usize,
    body_start: usize,
    overflow: bool,
    /// Size of the last block, to size the next block's buffer in one allocation.
    last_block_len: usize,
    /// How much of a delta the next push into the open block takes.
    next_push: usize,
    utf8_pending: [u8; 4],
    utf8_pending_len: u8,
}

impl Scanner {
    /// A scanner for `grammar`; a block larger than `max_block_bytes` has its bytes dropped
    /// (see [`ClosedBlock::dropped`]).
    pub fn new(grammar: Arc<Grammar>, max_block_bytes: usize) -> Self {
        Scanner {
            grammar,
            max_block_bytes,
            state: State::Outside,
            pos: 0,
            buf: String::new(),
            scan_from: 0,
            floor: LineFloor {
                floor: 0,
                floor_is_line_start: true,
            },
            offsets: OffsetMap::default(),
            block_start: 0,
            body_start: 0,
            overflow: false,
            last_block_len: 0,
            next_push: FIRST_PUSH,
            utf8_pending: [0; 4],
            utf8_pending_len: 0,
        }
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        self.pos + usize::from(self.utf8_pending_len)
    }

    /// True while a block is open.
    pub fn in_block(&self) -> bool {
        self.state != State::Outside
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.grammar
    }

    /// Bytes currently held (held-back prose or the open block).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feeds a delta of text.
    pub fn feed(&mut self, delta: &str, h: &mut impl ScanHandler) {
        if self.utf8_pending_len > 0 {
            // A &str delta cannot complete a character split across byte deltas.
            self.flush_pending_utf8(h);
        }
        self.feed_str(delta, h);
    }

    /// Feeds a delta of bytes; a UTF-8 character may be split across deltas (up to 3 bytes
    /// are held back), and invalid sequences are reported through
    /// [`ScanHandler::invalid_utf8`], exactly as `std::str::from_utf8` delimits them on the
    /// whole stream (so the events do not depend on where the deltas split).
    pub fn feed_bytes(&mut self, mut delta: &[u8], h: &mut impl ScanHandler) {
        while self.utf8_pending_len > 0 {
            let Some((&b, rest)) = delta.split_first() else {
                return;
            };
            let have = usize::from(self.utf8_pending_len);
            let mut tmp = [0u8; 4];
            tmp[..have].copy_from_slice(&self.utf8_pending[..have]);
            tmp[have] = b;
            match std::str::from_utf8(&tmp[..=have]) {
                Ok(s) => {
                    self.utf8_pending_len = 0;
                    self.feed_str(s, h);
                    delta = rest;
                }
                Err(e) if e.error_len().is_none() => {
                    self.utf8_pending[have] = b;
                    self.utf8_pending_len += 1;
                    delta = rest;
                }
                Err(_) => {
                    // The pending bytes were the longest valid prefix; `b` starts afresh.
                    self.flush_pending_utf8(h);
                }
            }
        }
        loop {
            match std::str::from_utf8(delta) {
                Ok(s) => {
                    self.feed_str(s, h);
                    return;
                }
                Err(e) => {
                    let (valid, rest) = delta.split_at(e.valid_up_to());
                    if let Ok(valid) = std::str::from_utf8(valid) {
                        self.feed_str(valid, h);
                    }
                    match e.error_len() {
                        Some(n) => {
                            self.invalid(&rest[..n], h);
                            delta = &rest[n..];
                        }
                        None => {
                            self.utf8_pending[..rest.len()].copy_from_slice(rest);
                            self.utf8_pending_len = rest.len() as u8;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: held-back prose is emitted and an open block is closed as
    /// [`BlockEnd::Eof`]. The scanner is then ready for a new stream (positions restart at 0).
    pub fn finish(&mut self, h: &mut impl ScanHandler) {
        self.finish_as(BlockEnd::Eof, h);
    }

    /// Like [`Scanner::finish`] for a stream that was cut (a token limit, a transport
    /// error): an open block is closed as [`BlockEnd::Cut`].
    pub fn finish_cut(&mut self, h: &mut impl ScanHandler) {
        self.finish_as(BlockEnd::Cut, h);
    }

    fn finish_as(&mut self, how: BlockEnd, h: &mut impl ScanHandler) {
        self.flush_pending_utf8(h);
        loop {
            let kind = match self.state {
                State::Outside => {
                    self.flush_held(h);
                    break;
                }
                State::Body { kind } | State::Region { kind, .. } => kind,
            };
            // Decide what is left with the end-of-stream rule (a partial marker is no marker).
            match self.scan_block(h, true) {
                Some(closed) => {
                    let tail = self.buf.split_off(closed.end);
                    self.pos = closed.stream_end;
                    self.close_block(kind, BlockEnd::Marker, closed.body_end, closed.end, None, h);
                    self.feed_str(&tail, h);
                }
                None => {
                    let open_region = match self.state {
                        State::Region {
                            region,
                            content_start,
                            ..
                        } => Some((region, content_start)),
                        _ => None,
                    };
                    let len = self.buf.len();
                    self.close_block(kind, how, len, len, open_region, h);
                }
            }
        }
        *self = Scanner::new(Arc::clone(&self.grammar), self.max_block_bytes);
    }

    fn flush_pending_utf8(&mut self, h: &mut impl ScanHandler) {
        if self.utf8_pending_len > 0 {
            let bad = self.utf8_pending;
            let n = usize::from(self.utf8_pending_len);
            self.utf8_pending_len = 0;
            self.invalid(&bad[..n], h);
        }
    }

    fn invalid(&mut self, bytes: &[u8], h: &mut impl ScanHandler) {
        let span = Span::new(self.pos, self.pos + bytes.len());
        if self.state == State::Outside {
            // No marker contains invalid UTF-8: what was held back is prose.
            self.flush_held(h);
            h.invalid_utf8(bytes, span, false);
            self.pos = span.end;
            return;
        }
        if !self.overflow {
            self.buf.push('\u{FFFD}');
        }
        self.offsets.anchors.push((self.buf.len(), span.end));
        self.pos = span.end;
        h.invalid_utf8(bytes, span, true);
        // A partial marker before the replacement is now decided; keep memory bounded.
        let was_overflow = self.overflow;
        if let Some(closed) = self.scan_block(h, false) {
            let kind = self.kind();
            self.close_block(kind, BlockEnd::Marker, closed.body_end, closed.end, None, h);
        } else {
            self.report_progress(was_overflow, h);
            self.check_overflow();
        }
    }

    /// Calls [`ScanHandler::block_progress`] after a push into the open block, unless the
    /// block had overflowed before it. `settled` is capped at `max_block_bytes` (moved back
    /// to a character boundary), so what is reported does not depend on how the input was
    /// split even for a block that overflows in this push.
    fn report_progress(&mut self, was_overflow: bool, h: &mut impl ScanHandler) {
        if was_overflow || self.state == State::Outside {
            return;
        }
        let mut settled = self.scan_from.min(self.max_block_bytes).min(self.buf.len());
        while !self.buf.is_char_boundary(settled) {
            settled -= 1;
        }
        let view = BlockView {
            buf: &self.buf,
            offsets: &self.offsets,
            kind: self.kind(),
        };
        h.block_progress(&view, settled);
    }

    fn kind(&self) -> usize {
        match self.state {
            State::Body { kind } | State::Region { kind, .. } => kind,
            State::Outside => 0,
        }
    }

    /// Emits held-back bytes as prose.
    fn flush_held(&mut self, h: &mut impl ScanHandler) {
        if self.state == State::Outside && !self.buf.is_empty() {
            let start = self.pos - self.buf.len();
            h.text(&self.buf, Span::new(start, self.pos));
            self.buf.clear();
        }
    }

    fn feed_str(&mut self, delta: &str, h: &mut impl ScanHandler) {
        let mut d = delta;
        while !d.is_empty() {
            d = if self.state == State::Outside {
                self.feed_outside(d, h)
            } else {
                self.feed_inside(d, h)
            };
        }
    }

    /// Consumes prose from `d` until a block opens; returns the unconsumed rest.
    fn feed_outside<'d>(&mut self, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
        let p0 = self.pos;
        // Token-sized prose deltas: one pass over a few bytes decides them.
        if self.buf.is_empty()
            && d.len() <= 64
            && !d.bytes().any(|b| self.grammar.starts[usize::from(b)])
        {
            h.text(d, Span::new(p0, p0 + d.len()));
            self.pos = p0 + d.len();
            return "";
        }
        let grammar = Arc::clone(&self.grammar);
        let set = &grammar.outside;
        let lf = LineFloor {
            floor: 0,
            floor_is_line_start: true,
        };
        if !self.buf.is_empty() {
            // Resolve the held-back bytes with the head of `d`. Patterns are at most
            // MAX_PATTERN_LEN long, so a window of that much of `d` decides every candidate
            // that begins in the held bytes.
            let held = self.buf.len();
            let mut window = [0u8; 2 * MAX_PATTERN_LEN];
            window[..held].copy_from_slice(self.buf.as_bytes());
            let take = d.len().min(MAX_PATTERN_LEN);
            window[held..held + take].copy_from_slice(&d.as_bytes()[..take]);
            let held_start = p0 - held;
            match set.find(&window[..held + take], 0, false, lf) {
                Found::Match { at, len, action } if at < held => {
                    let Action::Open(kind) = action else {
                        unreachable!("outside patterns open blocks")
                    };
                    let used = at + len - held;
                    if at > 0 {
                        h.text(&self.buf[..at], Span::new(held_start, held_start + at));
                    }
                    self.buf.drain(..at);
                    self.buf.push_str(&d[..used]);
                    self.pos = p0 + used;
                    self.open_block(kind, held_start + at, h);
                    return &d[used..];
                }
                Found::Partial { at } if at < held => {
                    // Only possible when all of `d` is in the window.
                    if at > 0 {
                        h.text(&self.buf[..at], Span::new(held_start, held_start + at));
                        self.buf.drain(..at);
                    }
                    self.buf.push_str(d);
                    self.pos = p0 + d.len();
                    return "";
                }
                _ => {
                    h.text(&self.buf, Span::new(held_start, p0));
                    self.buf.clear();
                }
            }
        }
        match set.find(d.as_bytes(), 0, false, lf) {
            Found::Match { at, len, action } => {
                let Action::Open(kind) = action else {
                    unreachable!("outside patterns open blocks")
                };
                if at > 0 {
                    h.text(&d[..at], Span::new(p0, p0 + at));
                }
                self.buf.push_str(&d[at..at + len]);
                self.pos = p0 + at + len;
                self.open_block(kind, p0 + at, h);
                &d[at + len..]
            }
            Found::Partial { at } => {
                if at > 0 {
                    h.text(&d[..at], Span::new(p0, p0 + at));
                }
                self.buf.push_str(&d[at..]);
                self.pos = p0 + d.len();
                ""
            }
            Found::None => {
                h.text(d, Span::new(p0, p0 + d.len()));
                self.pos = p0 + d.len();
                ""
            }
        }
    }

    /// `buf` holds exactly the start marker, which ends at `self.pos`.
    fn open_block(&mut self, kind: usize, start: usize, h: &mut impl ScanHandler) {
        self.buf
            .reserve(self.last_block_len.min(self.max_block_bytes) + MAX_PATTERN_LEN);
        self.state = State::Body { kind };
        self.next_push = FIRST_PUSH;
        self.block_start = start;
        self.body_start = self.buf.len();
        self.scan_from = self.buf.len();
        self.floor = LineFloor {
            floor: self.buf.len(),
            floor_is_line_start: true,
        };
        self.offsets = OffsetMap::new(start);
        self.overflow = false;
        h.block_opened(kind, Span::new(start, start + self.buf.len()));
    }

    /// Consumes block bytes from `d` until the block closes; returns the unconsumed rest.
    fn feed_inside<'d>(&mut self, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
        // Push in chunks so that the buffer never grows far past the limit.
        // The push grows geometrically from FIRST_PUSH: bytes copied past the end marker
        // (given back below) stay within twice the block's own size, so a large delta
        // holding many blocks is still copied O(1) times per byte.
        let room = if self.overflow {
            0
        } else {
            (self.max_block_bytes + MAX_PATTERN_LEN).saturating_sub(self.buf.len())
        }
        .max(CHUNK);
        let mut n = d.len().min(room).min(self.next_push);
        self.next_push = (self.next_push * 2).min(CHUNK);
        while !d.is_char_boundary(n) {
            n += 1;
        }
        let p0 = self.pos;
        self.buf.push_str(&d[..n]);
        self.pos = p0 + n;
        let kind_before = self.kind();
        let was_overflow = self.overflow;
        if let Some(closed) = self.scan_block(h, false) {
            // The bytes after the end marker came from this chunk: give them back.
            let used = closed.stream_end - p0;
            self.pos = closed.stream_end;
            let kind = self.kind();
            debug_assert_eq!(kind, kind_before);
            self.close_block(kind, BlockEnd::Marker, closed.body_end, closed.end, None, h);
            return &d[used..];
        }
        self.report_progress(was_overflow, h);
        self.check_overflow();
        &d[n..]
    }

    /// Past the limit, keeps only the undecided tail of the buffer. Nothing is dropped while
    /// the undecided tail begins within the limit (a restart there would end a block that
    /// is not too large, whose raw text is kept); the buffer is then at most the limit plus
    /// one pattern.
    fn check_overflow(&mut self) {
        if !self.overflow && self.scan_from <= self.max_block_bytes {
            return;
        }
        self.overflow = true;
        if self.scan_from == 0 {
            return;
        }
        let cut = self.scan_from;
        let floor_is_line_start = is_line_start(self.buf.as_bytes(), cut, self.floor);
        self.buf.drain(..cut);
        self.offsets.drop_front(cut);
        self.scan_from = 0;
        self.floor = LineFloor {
            floor: 0,
            floor_is_line_start,
        };
        if let State::Region {
            kind,
            region,
            content_start,
        } = self.state
        {
            self.state = State::Region {
                kind,
                region,
                content_start: content_start.saturating_sub(cut),
            };
        }
    }

    /// Runs the block state machine over `buf[scan_from..]`, following restarts. Returns
    /// where the block's end marker ends when it was found; the caller closes the block.
    fn scan_block(&mut self, h: &mut impl ScanHandler, eof: bool) -> Option<MarkerClose> {
        let grammar = Arc::clone(&self.grammar);
        loop {
            let (kind, set) = match self.state {
                State::Outside => return None,
                State::Body { kind } => (kind, &grammar.sets[kind].body),
                State::Region { kind, region, .. } => (kind, &grammar.sets[kind].regions[region].0),
            };
            match set.find(self.buf.as_bytes(), self.scan_from, eof, self.floor) {
                Found::None => {
                    self.scan_from = self.buf.len();
                    return None;
                }
                Found::Partial { at } => {
                    self.scan_from = at;
                    return None;
                }
                Found::Match { at, len, action } => match action {
                    Action::Close => {
                        return Some(MarkerClose {
                            body_end: at,
                            end: at + len,
                            stream_end: self.offsets.stream(at + len),
                        });
                    }
                    Action::Restart => {
                        self.close_block(kind, BlockEnd::Restart, at, at, None, h);
                    }
                    Action::EnterRegion(region) => {
                        if self.within_limit(at + len) {
                            let view = BlockView {
                                buf: &self.buf,
                                offsets: &self.offsets,
                                kind,
                            };
                            if !h.accept_region(&view, region, at..at + len) {
                                self.scan_from = at + len;
                                continue;
                            }
                        }
                        self.state = State::Region {
                            kind,
                            region,
                            content_start: at + len,
                        };
                        self.scan_from = at + len;
                        if self.within_limit(at + len) {
                            let view = BlockView {
                                buf: &self.buf,
                                offsets: &self.offsets,
                                kind,
                            };
                            h.region_opened(&view, region, at..at + len);
                        }
                    }
                    Action::LeaveRegion => {
                        let State::Region {
                            region,
                            content_start,
                            ..
                        } = self.state
                        else {
                            unreachable!("leaving a region from inside one")
                        };
                        self.state = State::Body { kind };
                        self.scan_from = at + len;
                        if self.within_limit(at + len) {
                            let view = BlockView {
                                buf: &self.buf,
                                offsets: &self.offsets,
                                kind,
                            };
                            h.region_closed(&view, region, content_start..at, at..at + len);
                        }
                    }
                    Action::Open(_) => unreachable!("open is only an outside action"),
                },
            }
        }
    }

    /// True when a block buffer offset lies within `max_block_bytes`. Whether a region event
    /// is reported and whether a block is too large depend on offsets only, never on how the
    /// input was split into deltas.
    fn within_limit(&self, end: usize) -> bool {
        !self.overflow && end <= self.max_block_bytes
    }

    /// Hands the block over, the buffer truncated at `end`. For a restart, `buf[end..]`
    /// (the new start marker and what followed it) becomes the new block.
    fn close_block(
        &mut self,
        kind: usize,
        how: BlockEnd,
        body_end: usize,
        end: usize,
        open_region: Option<(usize, usize)>,
        h: &mut impl ScanHandler,
    ) {
        let stream_end = self.offsets.stream(end);
        let span = Span::new(self.block_start, stream_end);
        let mut buf = std::mem::take(&mut self.buf);
        let rest = (how == BlockEnd::Restart).then(|| buf.split_off(end));
        let mut offsets = std::mem::take(&mut self.offsets);
        let rest_offsets = rest.as_ref().map(|_| {
            let mut o = offsets.clone();
            o.drop_front(end);
            o
        });
        let too_large = !self.within_limit(end);
        self.last_block_len = end;
        let (raw, body) = if too_large {
            (ByteString::new(), 0..0)
        } else {
            buf.truncate(end);
            // The raw text outlives the scanner inside the events: do not let it pin much
            // more memory than it holds.
            if buf.capacity() > 2 * buf.len() + MAX_PATTERN_LEN {
                buf.shrink_to_fit();
            }
            (
                ByteString::from(buf),
                self.body_start.min(body_end)..body_end,
            )
        };
        if too_large {
            offsets = OffsetMap::new(span.end);
        }
        let dropped = if too_large { span.len() } else { 0 };
        self.state = State::Outside;
        self.overflow = false;
        h.block_closed(ClosedBlock {
            kind,
            end: how,
            span,
            raw,
            body,
            open_region,
            dropped,
            offsets,
        });
        if let (Some(mut rest), Some(rest_offsets)) = (rest, rest_offsets) {
            let MatchAt::Full(marker_len) =
                self.grammar.syntaxes[kind].start.match_at(rest.as_bytes())
            else {
                unreachable!("the restart marker was matched")
            };
            let tail = rest.split_off(marker_len);
            self.buf = rest;
            self.open_block(kind, stream_end, h);
            self.offsets = rest_offsets;
            self.buf.push_str(&tail);
        }
    }
}

/// Where an end marker was found in the block buffer.
#[derive(Debug, Clone, Copy)]
struct MarkerClose {
    body_end: usize,
    end: usize,
    stream_end: usize,
}

/// Input is pushed into an open block at most this much at a time once it is near its
/// limit, which bounds memory to `max_block_bytes + CHUNK`.
const CHUNK: usize = 64 * 1024;

/// The first push into a newly opened block.
const FIRST_PUSH: usize = 256;
