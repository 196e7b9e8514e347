//! The flat list of elements the direct reader builds from a body in one pass, and the
//! checks that send a body to the tree instead.

use std::ops::Range;

use tam_parse::scan::Stops;

use super::Elem;
use super::lexer::{OpenElems, Piece, Unmatched, lt_count_if_xml_chars, piece_at};
use crate::prescan::{CdataRef, Tally, VALUE_DEPTH};
use crate::xml_chars::is_blank;

/// What [`flat_tree`] makes of a body.
pub(super) struct Flat {
    pub(super) elems: Vec<Elem>,
    pub(super) cdata: Vec<CdataRef>,
    /// Where the references (outside CDATA) begin, in order.
    pub(super) refs: Vec<usize>,
    /// Bare `&`s and `<`s read as text, in the pre-scan's order.
    pub(super) amp: Tally,
    pub(super) lt: Tally,
    /// The names of the elements never closed in a value, read as text (`Vec<String>`;
    /// kept `for_events` only).
    pub(super) unclosed: Vec<Range<usize>>,
    /// Where a `<` that may begin a name or `/` was read as text, in body order (kept
    /// `for_events` only).
    pub(super) markup_like: Vec<usize>,
}

/// The element list and CDATA sections of `body`, with the pre-scan's repairs inside values
/// counted, or `None` when it is outside the subset that [`read_direct`](super::read_direct) reads.
/// `for_events`: [`Flat::unclosed`] and [`Flat::markup_like`] are kept.
pub(super) fn flat_tree(
    body: &str,
    max_depth: usize,
    max_nodes: u32,
    for_events: bool,
) -> Option<Flat> {
    if body.starts_with('\u{FEFF}') {
        // A leading byte order mark is text to roxmltree.
        return None;
    }
    // A character XML forbids (anywhere: in text, CDATA or a tag) is roxmltree's error to
    // report.
    let tags = lt_count_if_xml_chars(body)?;
    let bytes = body.as_bytes();
    // Whether `]]>` occurs in the body at all (a CDATA section's end, most often), found
    // at the first text piece with a `>`: when it does not, no text piece needs the look.
    let mut cdata_ends: Option<bool> = None;
    // About one element per two `<` of markup (a start and a close tag): one allocation, no
    // growth (code's `<`s make it larger than needed, not smaller).
    let mut elems: Vec<Elem> = Vec::with_capacity(tags / 2 + 1);
    let mut cdata: Vec<CdataRef> = Vec::new();
    let mut refs: Vec<usize> = Vec::new();
    // The innermost open element and how many are open (parents are linked in `elems`).
    let mut open: Option<usize> = None;
    let mut depth = 0usize;
    // The name of `open` (empty at the top).
    let mut open_name = 0..0;
    let (mut amp, mut lt) = (Tally::default(), Tally::default());
    let mut unclosed: Vec<Range<usize>> = Vec::new();
    let mut markup_like: Vec<usize> = Vec::new();
    // Nodes roxmltree would make, counted high: the root, `<ACTION>`, every element and
    // every text piece (roxmltree merges adjacent ones), plus one.
    let mut nodes = 3usize;
    // The tag that ended the last text piece, read already.
    let mut known: Option<(Piece, usize)> = None;
    // The `<`s and `&`s of text, a block of 64 bytes at a time where they are dense.
    let mut stops = Stops::new(bytes, b'<', b'&', b'&');
    let mut pos = 0usize;
    while pos < bytes.len() {
        let (piece, end) = match known.take() {
            Some(tag) => tag,
            None => {
                let outer = OpenElems {
                    elems: &elems,
                    top: open,
                };
                let open = &bytes[open_name.clone()];
                let (piece, end, next) = piece_at(
                    body,
                    pos,
                    open,
                    outer,
                    &mut amp,
                    &mut lt,
                    &mut stops,
                    for_events.then_some(&mut markup_like),
                )?;
                known = next;
                (piece, end)
            }
        };
        let raw = body.get(pos..end)?;
        let at = pos;
        pos = end;
        nodes += 1;
        // A piece of text that is not blank, for its parent.
        let mut text = false;
        match piece {
            Piece::Start { name_end, empty } => {
                let name = at + 1..name_end;
                let n = &bytes[name.clone()];
                // An element never closed in a value costs no depth (the pre-scan's rule):
                // the depth of an element is checked when it is kept, at its close tag.
                if has_colon(n)
                    || n.get(..3).is_some_and(|p| p.eq_ignore_ascii_case(b"xml"))
                    || (empty && depth >= max_depth)
                {
                    return None;
                }
                if let Some(parent) = open {
                    let p = &mut elems[parent];
                    p.elements += 1;
                    p.all_items &= n == b"item";
                } else if n.eq_ignore_ascii_case(b"ACTION") {
                    return None;
                }
                let index = elems.len();
                elems.push(Elem {
                    start: at,
                    name,
                    content: end..end,
                    end,
                    next: index + 1,
                    parent: open,
                    elements: 0,
                    all_items: true,
                    text: false,
                    unmatched: Unmatched::default(),
                });
                if !empty {
                    open = Some(index);
                    open_name = elems[index].name.clone();
                    depth += 1;
                }
            }
            Piece::End { name_end } => {
                let name = &bytes[at + 2..name_end];
                // Nothing open: roxmltree's error.
                let top = open?;
                let top_name = &bytes[elems[top].name.clone()];
                if top_name != name {
                    if top_name.eq_ignore_ascii_case(name) {
                        // `noncanonical_tag`: the full pre-scan's.
                        return None;
                    }
                    // The innermost open element of that name, and how many are above it.
                    let mut above = 1;
                    let mut named = elems[top].parent;
                    while let Some(i) = named
                        && &bytes[elems[i].name.clone()] != name
                    {
                        above += 1;
                        named = elems[i].parent;
                    }
                    match named {
                        // Inside a value (it is not the call).
                        Some(kept) if elems[kept].parent.is_some() => {
                            // The elements opened after it were never closed: text
                            // (`Vec<String>`), their unmatched close tags too. Taken only when
                            // nothing was kept inside them (they are the last elements read,
                            // each in the one before).
                            if elems.len() - (kept + 1) != above {
                                return None;
                            }
                            for e in &elems[kept + 1..] {
                                lt.add(e.start..e.start + 1);
                                e.unmatched.add_to(&mut lt);
                                if for_events {
                                    unclosed.push(e.name.clone());
                                }
                            }
                            elems.truncate(kept + 1);
                            depth -= above;
                            let e = &mut elems[kept];
                            e.elements = 0;
                            e.all_items = true;
                            e.text = true;
                            open = Some(kept);
                        }
                        // An element left open in a call or between calls: structure gone
                        // wrong, roxmltree's error.
                        Some(_) => return None,
                        None => {
                            // A close tag that matches nothing: text if the element it is in
                            // closes properly (inside a value).
                            if depth < VALUE_DEPTH {
                                return None;
                            }
                            // The call's close tag in another case: the pre-scan may read
                            // it as the call's, closing the parameter left open there
                            // (`missing_close_tag`), a repair left to it.
                            let mut call = top;
                            while let Some(parent) = elems[call].parent {
                                call = parent;
                            }
                            if bytes[elems[call].name.clone()].eq_ignore_ascii_case(name) {
                                return None;
                            }
                            let e = &mut elems[top];
                            e.unmatched.add(at);
                            e.text = true;
                            continue;
                        }
                    }
                }
                // Every element it is in is kept too (or the read gave up): its depth is
                // the number open.
                if depth > max_depth {
                    return None;
                }
                let index = open?;
                let next = elems.len();
                let e = &mut elems[index];
                e.unmatched.add_to(&mut lt);
                e.content.end = at;
                e.end = end;
                e.next = next;
                open = e.parent;
                depth -= 1;
                open_name = open.map_or(0..0, |p| elems[p].name.clone());
            }
            Piece::Text => {
                text = !is_blank(raw);
                // `]]>` in text is roxmltree's error (it ends CDATA sections only). Once the
                // body is known to hold none, no piece needs a look for `>`.
                if text
                    && cdata_ends != Some(false)
                    && has_gt(raw.as_bytes())
                    && *cdata_ends
                        .get_or_insert_with(|| memchr::memmem::find(bytes, b"]]>").is_some())
                    && has_cdata_end(raw.as_bytes())
                {
                    return None;
                }
            }
            Piece::Reference => {
                // A reference to a blank (`&#32;`) is blank.
                text = !reference_is_blank(raw);
                refs.push(at);
            }
            Piece::CData => {
                let content = at + "<![CDATA[".len()..end.checked_sub("]]>".len())?;
                text = !is_blank(body.get(content.clone())?);
                cdata.push(CdataRef {
                    full: at..end,
                    content,
                });
            }
            // [`piece_at`] makes a text `<` part of a text piece.
            Piece::Lt => return None,
        }
        if text {
            match open {
                // Text between calls or beside a call's parameters: `stray_text`.
                Some(parent) if depth >= VALUE_DEPTH => elems[parent].text = true,
                _ => return None,
            }
        }
    }
    if open.is_some() || nodes > max_nodes as usize {
        return None;
    }
    // An element left open around one dropped before it is dropped after it.
    unclosed.sort_unstable_by_key(|n| n.start);
    Some(Flat {
        elems,
        cdata,
        refs,
        amp,
        lt,
        unclosed,
        markup_like,
    })
}

/// True when `text` holds a `>`: a look at each byte of a short piece (code's), memchr for
/// a long one.
#[allow(clippy::manual_contains)]
pub(super) fn has_gt(text: &[u8]) -> bool {
    if text.len() <= 32 {
        text.iter().any(|&c| c == b'>')
    } else {
        memchr::memchr(b'>', text).is_some()
    }
}

/// True when `text` holds `]]>`. Text pieces in code are short and have few `>`: each one
/// found is checked for the two `]` before it (no searcher to set up per piece).
pub(super) fn has_cdata_end(text: &[u8]) -> bool {
    memchr::memchr_iter(b'>', text).any(|i| i >= 2 && text[i - 2..i] == *b"]]")
}

/// `a == b` for short slices (names), without a call to `memcmp`.
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// True when the name `n` has a prefix. Names are short: a plain loop, not `memchr`.
#[allow(clippy::manual_contains)]
pub(super) fn has_colon(n: &[u8]) -> bool {
    n.iter().any(|&c| c == b':')
}

/// True when `reference` (`&…;`, one that needs no DTD) stands for XML whitespace.
pub(super) fn reference_is_blank(reference: &str) -> bool {
    let Some(number) = reference
        .strip_prefix("&#")
        .and_then(|r| r.strip_suffix(';'))
    else {
        return false;
    };
    let value = match number.strip_prefix('x') {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => number.parse(),
    };
    matches!(value, Ok(0x20 | 0x9 | 0xA | 0xD))
}
