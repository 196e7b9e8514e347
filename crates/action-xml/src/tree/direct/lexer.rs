//! The direct reader's lexer: the piece a byte of the body begins (text, a reference, a
//! start or close tag, CDATA), read as the pre-scan reads it; tags through the lexer the
//! streamer shares ([`crate::tags`]).

use tam_parse::scan::Stops;

use super::Elem;
use super::flat::same;
use crate::prescan::Tally;
use crate::tags::{close_tag_at, start_tag_at};
use crate::xml_chars::{
    is_name_start_byte, is_xml_space, may_begin_reference, name_end, reference_len, space_end,
};

/// The number of `<` in `s`, or `None` when `s` holds a character that XML 1.0 forbids (C0
/// controls other than tab, line feed and carriage return; U+FFFE, U+FFFF; surrogates
/// cannot occur in a `str`). One pass over the bytes for both answers.
pub(super) fn lt_count_if_xml_chars(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    // Per 64-byte chunk, branch-free and in byte lanes, so that the compiler vectorises
    // it: a forbidden control byte anywhere, and the `<`s (at most 64, a byte holds them).
    let mut bad = false;
    let mut lts = 0usize;
    let mut chunks = b.chunks_exact(64);
    for chunk in &mut chunks {
        let (mut c_bad, mut c_lt) = (0u8, 0u8);
        for &c in chunk {
            c_bad |= u8::from(c < 0x20)
                & u8::from(c != b'\t')
                & u8::from(c != b'\n')
                & u8::from(c != b'\r');
            c_lt += u8::from(c == b'<');
        }
        bad |= c_bad != 0;
        lts += usize::from(c_lt);
    }
    for &c in chunks.remainder() {
        bad |= c < 0x20 && !is_xml_space(c);
        lts += usize::from(c == b'<');
    }
    // U+FFFE and U+FFFF are EF BF BE and EF BF BF.
    let nonchar = memchr::memchr_iter(0xEF, b)
        .any(|i| b.get(i + 1) == Some(&0xBF) && matches!(b.get(i + 2), Some(0xBE | 0xBF)));
    (!bad && !nonchar).then_some(lts)
}

/// One markup or text piece of a body, as [`piece_at`] cuts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// `<name>` or `<name/>` (`empty`), blanks allowed before the `>`: the name ends at
    /// `name_end`.
    Start { name_end: usize, empty: bool },
    /// `</name>`, blanks allowed before the `>`.
    End { name_end: usize },
    /// Text up to the next markup or reference (or the end).
    Text,
    /// An entity or character reference that needs no DTD ([`reference_len`]).
    Reference,
    /// `<![CDATA[` … `]]>`.
    CData,
    /// A `<` that begins no tag: text ([`lt_piece`] only; [`piece_at`] makes it part of
    /// a [`Piece::Text`]).
    Lt,
}

/// The piece of `body` that begins at `at` and where it ends, or `None` for what
/// [`read_direct`](super::read_direct) does not take (a comment, a processing instruction, a start tag with
/// attributes; also for a text piece followed by one). Text runs up to the next markup or
/// reference: a bare `&` and a `<` that begins no tag are text, counted in `amp` and `lt`
/// as they are passed (the pre-scan's repairs, if the text is where it repairs them: the
/// caller checks). Every piece ends at a `>`, a `;`, before a `<` or `&`, or at the end: at
/// a character boundary. `open` is the name of the element open at `at` (empty at the
/// top), `outer` the elements open there. A `<` read as text that [`lt_piece`] had to look
/// at (it may begin a name or `/`: `HashMap<K, V>`, `"</div"`) goes into `markup_like`, if
/// given.
#[allow(clippy::too_many_arguments)]
pub(super) fn piece_at(
    body: &str,
    at: usize,
    open: &[u8],
    outer: OpenElems<'_>,
    amp: &mut Tally,
    lt: &mut Tally,
    stops: &mut Stops<'_>,
    mut markup_like: Option<&mut Vec<usize>>,
) -> Option<Cut> {
    let b = body.as_bytes();
    match b[at] {
        b'&' => {
            if let Some(len) = reference_len(b, at) {
                return Some((Piece::Reference, at + len, None));
            }
        }
        b'<' => match lt_piece(body, at, open, outer)? {
            (Piece::Lt, _) => markup_like.iter_mut().for_each(|m| m.push(at)),
            (tag, end) => return Some((tag, end, None)),
        },
        _ => {}
    }
    let mut end = at;
    loop {
        // `b[end]` is text: a bare `&`, a `<` that begins no tag, or any other byte.
        match b[end] {
            b'&' => amp.add(end..end + 1),
            b'<' => lt.add(end..end + 1),
            _ => {}
        }
        // The stops that are text at a glance (code's `&&`, `&str`, `a < b`, `<=`) are
        // counted as they are passed; the others are looked at below.
        let kept = stops.next_kept(end + 1, |i| {
            let next = b.get(i + 1).copied();
            if b[i] == b'&' {
                if may_begin_reference(next) {
                    return true;
                }
                amp.add(i..i + 1);
            } else {
                if !next.is_some_and(begins_no_markup) {
                    return true;
                }
                lt.add(i..i + 1);
            }
            false
        });
        let Some(next) = kept else {
            return Some((Piece::Text, b.len(), None));
        };
        if b[next] == b'&' {
            if reference_len(b, next).is_some() {
                return Some((Piece::Text, next, None));
            }
        } else if !b.get(next + 1).copied().is_some_and(begins_no_markup) {
            match lt_piece(body, next, open, outer)? {
                (Piece::Lt, _) => markup_like.iter_mut().for_each(|m| m.push(next)),
                tag => return Some((Piece::Text, next, Some(tag))),
            }
        }
        end = next;
    }
}

/// True when a `<` followed by `c` is text whatever comes after: `c` is ASCII and begins
/// neither a name nor `/`, `!` or `?` (code's `a < b`, `<=`, `<<`, `impl<'a>`, `b'<'`), as
/// [`lt_piece`] would find, without the call.
#[inline(always)]
pub(super) fn begins_no_markup(c: u8) -> bool {
    c < 0x80 && !matches!(c, b'/' | b'!' | b'?') && !is_name_start_byte(c)
}

/// A piece and where it ends, and when known already, the piece after it (the tag that
/// ended a text piece) and where that ends.
pub(super) type Cut = (Piece, usize, Option<(Piece, usize)>);

/// The piece a `<` at `at` begins, read as the pre-scan reads it (`Prescan::markup`,
/// `start_tag`, `close_tag`, regions aside): a start tag of a name, blanks, then `>` or
/// `/>`; a close tag of a name, blanks, then `>`; a CDATA section; or a `<` that begins no
/// tag — not followed by a name (`a < b`, `impl<'a>`, `<=`), a name then something that
/// is neither blanks, `>`, `/>` nor an attribute (`HashMap<String, bool>`), a tag the body
/// ends in. A start tag with attributes, a comment or a processing instruction: `None`;
/// so is a close tag with blanks before its name that the pre-scan may read as an open
/// element's ([`spaced_close_of_open`]). `open` is the name of the element open there
/// (empty at the top): its close tag is told at a glance; `outer` are the elements open.
pub(super) fn lt_piece(
    body: &str,
    at: usize,
    open: &[u8],
    outer: OpenElems<'_>,
) -> Option<(Piece, usize)> {
    const CDATA_OPEN: &[u8] = b"<![CDATA[";
    let b = body.as_bytes();
    let text = Some((Piece::Lt, at + 1));
    match b.get(at + 1) {
        Some(b'!') => {
            if b[at..].starts_with(CDATA_OPEN) {
                let content = at + CDATA_OPEN.len();
                let close = memchr::memmem::find(&b[content..], b"]]>")?;
                return Some((Piece::CData, content + close + 3));
            }
            // A comment is a region the pre-scan drops; anything else is text.
            (!b[at..].starts_with(b"<!--")).then_some((Piece::Lt, at + 1))
        }
        Some(b'?') => None,
        Some(b'/') => {
            // The close tag of the element open, the common case: its name was read at its
            // start tag (a name is followed by no name character, and `>` is none).
            let end = at + 2 + open.len();
            if !open.is_empty() && b.get(end) == Some(&b'>') && same(&b[at + 2..end], open) {
                return Some((Piece::End { name_end: end }, end + 1));
            }
            match close_tag_at(body, at, body.len()) {
                Some((name, false, end)) => Some((Piece::End { name_end: name.end }, end)),
                Some((name, true, _)) if names_open(b, &b[name.clone()], outer) => None,
                _ => text,
            }
        }
        Some(_) => {
            let name = name_end(body, at + 1);
            if name == at + 1 {
                return text;
            }
            if b.get(name) == Some(&b'>') {
                // `<name>`, the common case.
                let tag = Piece::Start {
                    name_end: name,
                    empty: false,
                };
                return Some((tag, name + 1));
            }
            // Blanks, `/>` or attributes: the shared lexer; a tag with attributes goes
            // to the tree.
            match start_tag_at(body, at, body.len()) {
                Some((name, empty, end)) => {
                    let attributes = !matches!(b.get(space_end(b, name.end)), Some(b'>' | b'/'));
                    let tag = Piece::Start {
                        name_end: name.end,
                        empty,
                    };
                    (!attributes).then_some((tag, end))
                }
                None => text,
            }
        }
        None => text,
    }
}

/// The elements open where a piece begins: the innermost (`None` at the top), the others
/// through its `parent` links.
#[derive(Debug, Clone, Copy)]
pub(super) struct OpenElems<'e> {
    pub(super) elems: &'e [Elem],
    pub(super) top: Option<usize>,
}

/// True when `name` (of a close tag with blanks between `</` and its name: `</ name>`,
/// `</  name >`) is that of an open element, ignoring case: the pre-scan may read it as
/// that element's close tag (warning `noncanonical_tag`), a repair the direct reader leaves
/// to it. Any other is text, as `</ div>` in code is to both.
#[cold]
pub(super) fn names_open(b: &[u8], name: &[u8], outer: OpenElems<'_>) -> bool {
    let mut open = outer.top;
    while let Some(i) = open {
        let e = &outer.elems[i];
        if b[e.name.clone()].eq_ignore_ascii_case(name) {
            return true;
        }
        open = e.parent;
    }
    false
}

/// The close tags inside an element that match no open element (text, once it closes
/// properly, or when it turns out to be text itself): the first one and how many.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Unmatched {
    pub(super) first: Option<usize>,
    pub(super) count: usize,
}

impl Unmatched {
    pub(super) fn add(&mut self, at: usize) {
        self.first.get_or_insert(at);
        self.count += 1;
    }

    /// Counts them in `lt`, after what it holds (the pre-scan escapes them in order).
    pub(super) fn add_to(&self, lt: &mut Tally) {
        if let Some(first) = self.first {
            lt.add_n(first..first + 1, self.count);
        }
    }
}
