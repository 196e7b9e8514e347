//! Block syntaxes and their compiled form, the [`Grammar`] shared by scanners.

use std::sync::Arc;

use memchr::memmem;

use super::pattern::{MAX_PATTERN_LEN, Pattern, PatternKind};
use super::pattern_set::{Action, PatternSet};

/// The names of the reasoning tags, `<think>` … `</think>` and `<thinking>` …
/// `</thinking>` (matched like [`Pattern::tag`]: ASCII case-insensitive, blanks allowed
/// inside the tag).
pub const THINK_TAGS: [&str; 2] = ["think", "thinking"];

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
    /// open block was never closed: it is closed as [`BlockEnd::Restart`](super::BlockEnd::Restart) and a new one
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

#[derive(Debug)]
pub(super) struct SyntaxSets {
    pub(super) body: PatternSet,
    pub(super) regions: Vec<(PatternSet, bool)>,
}

/// Compiled block syntaxes, shared by every scanner made from it.
#[derive(Debug)]
pub struct Grammar {
    pub(super) syntaxes: Vec<BlockSyntax>,
    pub(super) outside: PatternSet,
    /// `outside` and the reasoning open tags.
    pub(super) outside_think: PatternSet,
    /// The reasoning close tags.
    pub(super) think_close: PatternSet,
    /// The first bytes of the start patterns: a short delta without any is prose at once.
    pub(super) starts: [bool; 256],
    pub(super) sets: Vec<SyntaxSets>,
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
        let starts: Vec<(Pattern, Action)> = syntaxes
            .iter()
            .enumerate()
            .map(|(k, s)| (s.start.clone(), Action::Open(k)))
            .collect();
        let outside = PatternSet::new(starts.clone());
        let mut with_think = starts;
        with_think.extend(
            THINK_TAGS
                .iter()
                .enumerate()
                .map(|(i, t)| (Pattern::tag(t), Action::Think(i))),
        );
        let outside_think = PatternSet::new(with_think);
        let think_close = PatternSet::new(
            THINK_TAGS
                .iter()
                .enumerate()
                .map(|(i, t)| (Pattern::closing_tag(t), Action::ThinkEnd(i)))
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
            outside_think,
            think_close,
            starts,
            sets,
        }))
    }

    /// The block syntaxes, by kind.
    pub fn syntaxes(&self) -> &[BlockSyntax] {
        &self.syntaxes
    }
}
