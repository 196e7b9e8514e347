//! Marker patterns: exact bytes or XML-like tags, matched at one position (full,
//! partial at the end of the input, or no match).

/// Longest pattern the scanner accepts, in bytes (blanks included for tags).
pub const MAX_PATTERN_LEN: usize = 64;

/// Blanks allowed at each blank position of a [`Pattern::tag`].
pub(super) const TAG_MAX_BLANKS: usize = 8;

/// What a [`Pattern`] matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PatternKind {
    /// These bytes, exactly.
    Exact(Box<[u8]>),
    /// `<` blanks [`/` blanks] NAME blanks `>`, NAME ASCII case-insensitive (stored lowercase).
    Tag { name: Box<[u8]>, closing: bool },
}

/// A marker the scanner looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub(super) kind: PatternKind,
    pub(super) line_start: bool,
}

/// Result of matching a pattern at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MatchAt {
    /// Matched, this many bytes long.
    Full(usize),
    /// The input ended while the pattern could still match.
    Partial,
    /// Cannot match here.
    No,
}

pub(super) fn is_blank(b: u8) -> bool {
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
    /// the block body). A block's start marker made so opens a block only where it begins
    /// a prose line (blanks before it aside), inside a code fence or not, however the
    /// stream was split; elsewhere it is prose (no quoted-marker report).
    pub fn at_line_start(mut self) -> Self {
        self.line_start = true;
        self
    }

    pub(super) fn first_byte(&self) -> u8 {
        match &self.kind {
            PatternKind::Exact(b) => b[0],
            PatternKind::Tag { .. } => b'<',
        }
    }

    /// Upper bound on the length of a match.
    pub(super) fn max_len(&self) -> usize {
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
    pub(super) fn mark_second_bytes(&self, table: &mut [bool; 256]) {
        match &self.kind {
            PatternKind::Exact(b) if b.len() > 1 => table[usize::from(b[1])] = true,
            PatternKind::Exact(_) => table.fill(true),
            PatternKind::Tag { .. } => {
                // Blanks, or what may come after them.
                table[usize::from(b' ')] = true;
                table[usize::from(b'\t')] = true;
                self.mark_after_blanks(table);
            }
        }
    }

    /// For a tag, marks the bytes that may follow `<` and one or more blanks (`/` of a
    /// close tag, the name's first letter, `>` of an empty name) and says `true`. Exact
    /// bytes whose second is not a blank never match there: nothing to mark, `true`; with
    /// a blank second (or none) they cannot say: `false`.
    pub(super) fn mark_after_blanks(&self, table: &mut [bool; 256]) -> bool {
        match &self.kind {
            PatternKind::Exact(b) => b.get(1).is_some_and(|&s| !is_blank(s)),
            PatternKind::Tag { name, closing } => {
                if *closing {
                    table[usize::from(b'/')] = true;
                } else if let Some(&c) = name.first() {
                    table[usize::from(c.to_ascii_lowercase())] = true;
                    table[usize::from(c.to_ascii_uppercase())] = true;
                } else {
                    table[usize::from(b'>')] = true;
                }
                true
            }
        }
    }

    /// Marks the bytes that may follow the first byte and then `second` in a match
    /// (every byte when the pattern cannot tell, or never has `second` there).
    pub(super) fn mark_third_bytes(&self, second: u8, table: &mut [bool; 256]) {
        match &self.kind {
            PatternKind::Exact(b) => match b.get(1..3) {
                Some(&[s, t]) if s == second => table[usize::from(t)] = true,
                Some(_) => {}
                None => table.fill(true),
            },
            PatternKind::Tag { .. } if is_blank(second) => table.fill(true),
            PatternKind::Tag { name, closing } => {
                let mark = |table: &mut [bool; 256], c: u8| {
                    table[usize::from(c.to_ascii_lowercase())] = true;
                    table[usize::from(c.to_ascii_uppercase())] = true;
                };
                let end_of_name = |table: &mut [bool; 256]| {
                    table[usize::from(b' ')] = true;
                    table[usize::from(b'\t')] = true;
                    table[usize::from(b'>')] = true;
                };
                if *closing {
                    // `</` then blanks or the name.
                    if second == b'/' {
                        table[usize::from(b' ')] = true;
                        table[usize::from(b'\t')] = true;
                        match name.first() {
                            Some(&c) => mark(table, c),
                            None => table[usize::from(b'>')] = true,
                        }
                    }
                } else if name
                    .first()
                    .is_some_and(|c| c.eq_ignore_ascii_case(&second))
                {
                    // `<` and the name's first letter: its second letter, or the name ends.
                    match name.get(1) {
                        Some(&c) => mark(table, c),
                        None => end_of_name(table),
                    }
                } else if name.is_empty() && second == b'>' {
                    table.fill(true);
                }
            }
        }
    }

    pub(super) fn exact_bytes(&self) -> Option<&[u8]> {
        match &self.kind {
            PatternKind::Exact(b) if !self.line_start => Some(b),
            PatternKind::Exact(_) | PatternKind::Tag { .. } => None,
        }
    }

    /// Matches the pattern at the start of `hay`.
    pub(super) fn match_at(&self, hay: &[u8]) -> MatchAt {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_patterns_match_full_partial_or_not() {
        let p = Pattern::exact("「末」");
        assert_eq!(p.match_at("「末」x".as_bytes()), MatchAt::Full(9));
        assert_eq!(p.match_at(&"「末」".as_bytes()[..4]), MatchAt::Partial);
        assert_eq!(p.match_at("「始」".as_bytes()), MatchAt::No);
        assert_eq!(p.max_len(), 9);
        assert_eq!(p.first_byte(), "「".as_bytes()[0]);
    }

    #[test]
    fn tags_are_case_insensitive_with_bounded_blanks() {
        let open = Pattern::tag("Action");
        assert_eq!(open.match_at(b"<ACTION>"), MatchAt::Full(8));
        assert_eq!(open.match_at(b"< action\t>"), MatchAt::Full(10));
        assert_eq!(open.match_at(b"<act"), MatchAt::Partial);
        assert_eq!(open.match_at(b"<actions>"), MatchAt::No);
        assert_eq!(open.match_at(b"<         action>"), MatchAt::No);
        let close = Pattern::closing_tag("action");
        assert_eq!(close.match_at(b"</ Action >"), MatchAt::Full(11));
        assert_eq!(close.match_at(b"<action>"), MatchAt::No);
        assert!(close.max_len() <= MAX_PATTERN_LEN);
    }

    #[test]
    fn second_byte_tables() {
        let mut t = [false; 256];
        Pattern::tag("a").mark_second_bytes(&mut t);
        assert!(t[usize::from(b'a')] && t[usize::from(b'A')] && t[usize::from(b' ')]);
        assert!(!t[usize::from(b'/')]);
        let mut t = [false; 256];
        Pattern::exact("#").mark_second_bytes(&mut t);
        assert!(
            t.iter().all(|&b| b),
            "a one-byte pattern accepts any next byte"
        );
        assert_eq!(Pattern::exact("#").at_line_start().exact_bytes(), None);
    }
}
