//! The direct reader: calls read from the block body in one pass, without a document,
//! for the plain subset (elements without attributes or prefixes, text, CDATA, references);
//! anything else goes to the tree.

use super::*;
use crate::event::Event;

/// One element of a body read by [`read_direct`], in document order (pre-order); offsets
/// are body offsets.
#[derive(Debug, Clone)]
struct Elem {
    /// The `<` of its start tag.
    start: usize,
    name: Range<usize>,
    /// After its start tag, before its close tag (empty for `<name/>`).
    content: Range<usize>,
    /// After its close tag.
    end: usize,
    /// The index after its subtree: its next sibling's, when it has one.
    next: usize,
    /// The element it is in.
    parent: Option<usize>,
    /// Close tags in it that match nothing ([`flat_tree`] only).
    unmatched: Unmatched,
    /// Its child elements.
    elements: usize,
    /// True when every child element is named `item`.
    all_items: bool,
    /// A text or CDATA child, decoded, is not blank (mixed content when `elements > 0`).
    text: bool,
}

/// What [`read_direct`] read: the calls, and the repairs the pre-scan would have made inside
/// values (`bare_ampersand`, `unescaped_lt`), to report as it would.
pub(crate) struct Direct {
    pub calls: Vec<ActionCall>,
    /// Bare `&`s and `<`s read as text, as the pre-scan counts them (body offsets).
    amp: Tally,
    lt: Tally,
    /// The elements, CDATA sections and references read, for [`Direct::stream_events`].
    elems: Vec<Elem>,
    cdata: Vec<CdataRef>,
    refs: Vec<usize>,
    /// The names of elements never closed in a value (read as text), in body order.
    unclosed: Vec<Range<usize>>,
    /// Where a `<` that may begin a name or `/` was read as text, in body order.
    markup_like: Vec<usize>,
    /// The body's offset in the block's raw text.
    body_start: usize,
}

impl Direct {
    /// The repairs, in the order the pre-scan reports them.
    pub(crate) fn repairs(&self) -> impl Iterator<Item = Repair> + '_ {
        let amp = self.amp.repair(codes::BARE_AMPERSAND, BARE_AMPERSAND);
        let lt = self.lt.repair(codes::UNESCAPED_LT, UNESCAPED_LT);
        amp.into_iter().chain(lt)
    }
}

impl Direct {
    /// The block's argument events — [`Event::CallStart`], [`Event::ParamStart`], the
    /// value's [`Event::ParamText`] pieces, [`Event::ParamEnd`], [`Event::CallEnd`] — from
    /// what this reader found, for a block that closed before anything of it streamed (a
    /// reply fed whole): the events the streamer gives for the same block, once adjacent
    /// pieces are joined (checked in debug builds, see `ActionLayer::block_closed`), without
    /// a second reading of the values. `raw` is the block's raw text, `offsets` its map to
    /// stream spans.
    ///
    /// `false`, with nothing emitted, for the shapes where the streamer's light reading is
    /// not known to agree with this one, which it then reads itself: an element inside a
    /// value named as its parameter or call (in any case), kept or never closed, or a `<`
    /// read as text that begins such a name or a close tag with blanks (`<p, q>`, `</ p>`:
    /// the streamer reads such tags as nesting or as a close, and hands them out as written,
    /// where this reading would read a line end in them as `\n`); and a parameter named as
    /// its call.
    pub(crate) fn stream_events(
        &self,
        raw: &str,
        offsets: &OffsetMap,
        out: &mut dyn FnMut(Event<'_>),
    ) -> bool {
        let body = &raw[self.body_start..];
        let b = body.as_bytes();
        let name = |i: usize| &body[self.elems[i].name.clone()];
        let children = |i: usize| {
            let end = self.elems[i].next;
            std::iter::successors(Some(i + 1).filter(|&c| c < end), move |&c| {
                Some(self.elems[c].next).filter(|&n| n < end)
            })
        };
        let calls = || {
            std::iter::successors(Some(0).filter(|&i| i < self.elems.len()), |&i| {
                Some(self.elems[i].next).filter(|&n| n < self.elems.len())
            })
        };
        for call in calls() {
            let tool = name(call).as_bytes();
            for param in children(call) {
                let key = name(param).as_bytes();
                let named = |n: &str| {
                    let n = n.as_bytes();
                    n.eq_ignore_ascii_case(key) || n.eq_ignore_ascii_case(tool)
                };
                let content = self.elems[param].content.clone();
                let from = self.unclosed.partition_point(|n| n.start < content.start);
                // A `<` read as text that the streamer may read as the parameter's tag or
                // the call's close tag: `<p, q>`, `</ p>`, `</T `.
                let tag_like = |lt: usize| {
                    let closing = b.get(lt + 1) == Some(&b'/');
                    let at = lt + 1 + usize::from(closing);
                    let end = name_end(body, at);
                    (closing && end == at) || named(&body[at..end])
                };
                let lts = self.markup_like.partition_point(|&lt| lt < content.start);
                if key.eq_ignore_ascii_case(tool)
                    || (param + 1..self.elems[param].next).any(|d| named(name(d)))
                    || self.unclosed[from..]
                        .iter()
                        .take_while(|n| n.end <= content.end)
                        .any(|n| named(&body[n.clone()]))
                    || self.markup_like[lts..]
                        .iter()
                        .take_while(|&&lt| lt < content.end)
                        .any(|&lt| tag_like(lt))
                {
                    return false;
                }
            }
        }
        let base = self.body_start;
        let span = |r: Range<usize>| offsets.span(base + r.start..base + r.end);
        // References and line ends are read in order through the whole body.
        let mut refs = self.refs.iter().copied().peekable();
        let mut cdata = self.cdata.iter().peekable();
        let mut crs = memchr::memchr_iter(b'\r', b).peekable();
        for (index, call) in calls().enumerate() {
            let e = &self.elems[call];
            out(Event::CallStart {
                index,
                tool: name(call).to_owned(),
                span: span(e.start..e.content.start),
            });
            for param in children(call) {
                let p = &self.elems[param];
                out(Event::ParamStart {
                    key: Cow::Borrowed(name(param)),
                    span: span(p.start..p.content.start),
                });
                let content = p.content.clone();
                // Text runs between CDATA sections, then each section's content.
                let mut at = content.start;
                loop {
                    while cdata.next_if(|c| c.full.start < at).is_some() {}
                    let section = cdata.next_if(|c| c.full.start < content.end);
                    let text_end = section.map_or(content.end, |c| c.full.start);
                    while refs.next_if(|&r| r < at).is_some() {}
                    while crs.next_if(|&r| r < at).is_some() {}
                    let mut run = at;
                    loop {
                        let r = refs.peek().copied().filter(|&r| r < text_end);
                        let cr = crs.peek().copied().filter(|&c| c < text_end);
                        let take_reference = match (r, cr) {
                            (None, None) => break,
                            (Some(r), Some(cr)) => r < cr,
                            (r, _) => r.is_some(),
                        };
                        let (stop, piece, len) = if take_reference {
                            let r = refs.next().unwrap_or_default();
                            let len = reference_len(b, r).unwrap_or(1);
                            (r, crate::xml_chars::reference_text(&body[r..r + len]), len)
                        } else {
                            let cr = crs.next().unwrap_or_default();
                            let len = if b.get(cr + 1) == Some(&b'\n') { 2 } else { 1 };
                            (cr, Cow::Borrowed("\n"), len)
                        };
                        if stop > run {
                            out(Event::ParamText {
                                text: Cow::Borrowed(&body[run..stop]),
                                span: span(run..stop),
                                cdata: false,
                            });
                        }
                        out(Event::ParamText {
                            text: piece,
                            span: span(stop..stop + len),
                            cdata: false,
                        });
                        run = stop + len;
                    }
                    if text_end > run {
                        out(Event::ParamText {
                            text: Cow::Borrowed(&body[run..text_end]),
                            span: span(run..text_end),
                            cdata: false,
                        });
                    }
                    let Some(section) = section else {
                        break;
                    };
                    if !section.content.is_empty() {
                        out(Event::ParamText {
                            text: Cow::Borrowed(&body[section.content.clone()]),
                            span: span(section.content.clone()),
                            cdata: true,
                        });
                    }
                    at = section.full.end;
                }
                out(Event::ParamEnd {
                    span: span(p.start..p.end),
                });
            }
            out(Event::CallEnd {
                index,
                span: span(e.start..e.end),
            });
        }
        true
    }
}

/// Reads the calls of a block body straight from its text ([`piece_at`]), without a DOM,
/// when the body is within the subset of XML that models write: elements without
/// attributes or prefixes, text, references that need no DTD, CDATA — and, inside values,
/// what code brings in and the pre-scan repairs the same way everywhere: a bare `&`, a `<`
/// that begins no tag (`a < b`, `impl<'a>`, `HashMap<K, V>`), an element never closed in
/// the value (`Vec<String>`: nothing may have been kept inside it), a close tag that
/// matches nothing (`"</div>"`). Those are text, and [`Direct`] counts them as the pre-scan
/// does, in the same order, so the warnings are the same. The values are those
/// [`TreeReader`] reads from roxmltree's tree of the same body (after the pre-scan).
///
/// `None` — the caller then takes the roxmltree path — for anything else: comments,
/// processing instructions, declarations, attributes, a prefixed name, a name starting
/// with `xml`, non-blank text between calls or directly in a call (a `stray_text`
/// warning), an `<ACTION>` call (`nested_action_tag`), a character XML forbids, `]]>` in
/// text, a reference roxmltree would refuse, a tag that does not match (the call's close
/// tag while a parameter is open, `missing_close_tag` or `mismatched_close_tag`, also in
/// another case), a close tag with blanks before the name of an open element (`</ name>`,
/// `noncanonical_tag`), nesting beyond `max_depth` or possibly more than `max_nodes` nodes.
/// Every check is at least as strict as roxmltree's, so a body read here is one roxmltree
/// accepts once the pre-scan repaired it (property-tested against the roxmltree paths,
/// warnings included). `for_events`: what [`Direct::stream_events`] needs is kept too.
pub(crate) fn read_direct(
    raw: &ByteString,
    body: Range<usize>,
    offsets: &OffsetMap,
    max_depth: usize,
    max_nodes: u32,
    for_events: bool,
) -> Option<Direct> {
    let body_start = body.start;
    let body = &raw[body];
    let flat = flat_tree(body, max_depth, max_nodes, for_events)?;
    let reader = DirectReader {
        raw,
        body,
        body_start,
        offsets,
        elems: &flat.elems,
        cdata: &flat.cdata,
        refs: (memchr::memchr(b'\r', body.as_bytes()).is_none()).then_some(&flat.refs[..]),
    };
    let mut calls = Vec::new();
    let mut i = 0;
    while i < flat.elems.len() {
        calls.push(reader.call(i));
        i = flat.elems[i].next;
    }
    Some(Direct {
        calls,
        amp: flat.amp,
        lt: flat.lt,
        elems: flat.elems,
        cdata: flat.cdata,
        refs: flat.refs,
        unclosed: flat.unclosed,
        markup_like: flat.markup_like,
        body_start,
    })
}

/// The number of `<` in `s`, or `None` when `s` holds a character that XML 1.0 forbids (C0
/// controls other than tab, line feed and carriage return; U+FFFE, U+FFFF; surrogates
/// cannot occur in a `str`). One pass over the bytes for both answers.
fn lt_count_if_xml_chars(s: &str) -> Option<usize> {
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
enum Piece {
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
/// [`read_direct`] does not take (a comment, a processing instruction, a start tag with
/// attributes; also for a text piece followed by one). Text runs up to the next markup or
/// reference: a bare `&` and a `<` that begins no tag are text, counted in `amp` and `lt`
/// as they are passed (the pre-scan's repairs, if the text is where it repairs them: the
/// caller checks). Every piece ends at a `>`, a `;`, before a `<` or `&`, or at the end: at
/// a character boundary. `open` is the name of the element open at `at` (empty at the
/// top), `outer` the elements open there. A `<` read as text that [`lt_piece`] had to look
/// at (it may begin a name or `/`: `HashMap<K, V>`, `"</div"`) goes into `markup_like`, if
/// given.
#[allow(clippy::too_many_arguments)]
fn piece_at(
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
fn begins_no_markup(c: u8) -> bool {
    c < 0x80 && !matches!(c, b'/' | b'!' | b'?') && !is_name_start_byte(c)
}

/// A piece and where it ends, and when known already, the piece after it (the tag that
/// ended a text piece) and where that ends.
type Cut = (Piece, usize, Option<(Piece, usize)>);

/// The piece a `<` at `at` begins, read as the pre-scan reads it (`Prescan::markup`,
/// `start_tag`, `close_tag`, regions aside): a start tag of a name, blanks, then `>` or
/// `/>`; a close tag of a name, blanks, then `>`; a CDATA section; or a `<` that begins no
/// tag — not followed by a name (`a < b`, `impl<'a>`, `<=`), a name then something that
/// is neither blanks, `>`, `/>` nor an attribute (`HashMap<String, bool>`), a tag the body
/// ends in. A start tag with attributes, a comment or a processing instruction: `None`;
/// so is a close tag with blanks before its name that the pre-scan may read as an open
/// element's ([`spaced_close_of_open`]). `open` is the name of the element open there
/// (empty at the top): its close tag is told at a glance; `outer` are the elements open.
fn lt_piece(body: &str, at: usize, open: &[u8], outer: OpenElems<'_>) -> Option<(Piece, usize)> {
    const CDATA_OPEN: &[u8] = b"<![CDATA[";
    let b = body.as_bytes();
    let text = Some((Piece::Lt, at + 1));
    let skip_space = |j: usize| space_end(b, j);
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
            let name = name_end(body, at + 2);
            if name == at + 2 {
                if b.get(at + 2).is_some_and(|&c| is_xml_space(c))
                    && spaced_close_of_open(body, at, outer)
                {
                    return None;
                }
                return text;
            }
            let j = skip_space(name);
            match b.get(j) {
                Some(b'>') => Some((Piece::End { name_end: name }, j + 1)),
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
            let mut j = name;
            let mut attributes = false;
            loop {
                let after = skip_space(j);
                let had_space = after > j;
                j = after;
                match b.get(j) {
                    None => return text,
                    Some(b'>') => {
                        let tag = Piece::Start {
                            name_end: name,
                            empty: false,
                        };
                        return (!attributes).then_some((tag, j + 1));
                    }
                    Some(b'/') => {
                        if b.get(j + 1) != Some(&b'>') {
                            return text;
                        }
                        let tag = Piece::Start {
                            name_end: name,
                            empty: true,
                        };
                        return (!attributes).then_some((tag, j + 2));
                    }
                    Some(_) if !had_space => return text,
                    Some(_) => {}
                }
                // An attribute, `name = "value"` (or 'value') without `<` in the value: the
                // tag may still be one.
                let attribute = name_end(body, j);
                if attribute == j {
                    return text;
                }
                j = skip_space(attribute);
                if b.get(j) != Some(&b'=') {
                    return text;
                }
                j = skip_space(j + 1);
                let quote = match b.get(j) {
                    Some(&q @ (b'"' | b'\'')) => q,
                    _ => return text,
                };
                // The value ends at the next quote; a `<` before it, or no quote at all,
                // makes the tag text.
                match memchr::memchr2(quote, b'<', &b[j + 1..]) {
                    Some(len) if b[j + 1 + len] == quote => j += 1 + len + 1,
                    _ => return text,
                }
                attributes = true;
            }
        }
        None => text,
    }
}

/// The elements open where a piece begins: the innermost (`None` at the top), the others
/// through its `parent` links.
#[derive(Debug, Clone, Copy)]
struct OpenElems<'e> {
    elems: &'e [Elem],
    top: Option<usize>,
}

/// True when the `</` at `at` begins a close tag with blanks between `</` and its name
/// (`</ name>`, `</  name >`) whose name is that of an open element, ignoring case: the
/// pre-scan may read it as that element's close tag (warning `noncanonical_tag`), a repair
/// the direct reader leaves to it. Any other is text, as `</ div>` in code is to both.
#[cold]
fn spaced_close_of_open(body: &str, at: usize, outer: OpenElems<'_>) -> bool {
    let b = body.as_bytes();
    let skip_space = |j: usize| space_end(b, j);
    let start = skip_space(at + 2);
    let end = name_end(body, start);
    if end == start || b.get(skip_space(end)) != Some(&b'>') {
        return false;
    }
    let name = &b[start..end];
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
struct Unmatched {
    first: Option<usize>,
    count: usize,
}

impl Unmatched {
    fn add(&mut self, at: usize) {
        self.first.get_or_insert(at);
        self.count += 1;
    }

    /// Counts them in `lt`, after what it holds (the pre-scan escapes them in order).
    fn add_to(&self, lt: &mut Tally) {
        if let Some(first) = self.first {
            lt.add_n(first..first + 1, self.count);
        }
    }
}

/// What [`flat_tree`] makes of a body.
struct Flat {
    elems: Vec<Elem>,
    cdata: Vec<CdataRef>,
    /// Where the references (outside CDATA) begin, in order.
    refs: Vec<usize>,
    /// Bare `&`s and `<`s read as text, in the pre-scan's order.
    amp: Tally,
    lt: Tally,
    /// The names of the elements never closed in a value, read as text (`Vec<String>`;
    /// kept `for_events` only).
    unclosed: Vec<Range<usize>>,
    /// Where a `<` that may begin a name or `/` was read as text, in body order (kept
    /// `for_events` only).
    markup_like: Vec<usize>,
}

/// The element list and CDATA sections of `body`, with the pre-scan's repairs inside values
/// counted, or `None` when it is outside the subset that [`read_direct`] reads.
/// `for_events`: [`Flat::unclosed`] and [`Flat::markup_like`] are kept.
fn flat_tree(body: &str, max_depth: usize, max_nodes: u32, for_events: bool) -> Option<Flat> {
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
fn has_gt(text: &[u8]) -> bool {
    if text.len() <= 32 {
        text.iter().any(|&c| c == b'>')
    } else {
        memchr::memchr(b'>', text).is_some()
    }
}

/// True when `text` holds `]]>`. Text pieces in code are short and have few `>`: each one
/// found is checked for the two `]` before it (no searcher to set up per piece).
fn has_cdata_end(text: &[u8]) -> bool {
    memchr::memchr_iter(b'>', text).any(|i| i >= 2 && text[i - 2..i] == *b"]]")
}

/// `a == b` for short slices (names), without a call to `memcmp`.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// True when the name `n` has a prefix. Names are short: a plain loop, not `memchr`.
#[allow(clippy::manual_contains)]
fn has_colon(n: &[u8]) -> bool {
    n.iter().any(|&c| c == b':')
}

/// True when `reference` (`&…;`, one that needs no DTD) stands for XML whitespace.
fn reference_is_blank(reference: &str) -> bool {
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

/// Objects with more members than this are built by [`DirectReader::sorted_object`]
/// (when the map sorts its keys): up to here a B-tree insert stays within one node.
const SMALL_OBJECT: usize = 11;

/// True when `serde_json::Map` keeps its keys sorted (a `BTreeMap`), false when it keeps
/// them in insertion order (serde_json's `preserve_order` feature, which any crate in the
/// build may turn on). Found out once, by building a map.
fn map_sorts_keys() -> bool {
    static SORTS: OnceLock<bool> = OnceLock::new();
    *SORTS.get_or_init(|| {
        let map: Map<String, Value> = [("b", Value::Null), ("a", Value::Null)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        map.keys().next().is_some_and(|k| k == "a")
    })
}

/// Reads values from the list [`flat_tree`] made, by the rules of [`TreeReader`].
struct DirectReader<'r> {
    /// The block's raw text; `body` is a slice of it.
    raw: &'r ByteString,
    body: &'r str,
    body_start: usize,
    offsets: &'r OffsetMap,
    elems: &'r [Elem],
    cdata: &'r [CdataRef],
    /// Where the references outside CDATA begin, in order; `None` when the body holds a
    /// carriage return (text is then decoded by [`decode_text`], which normalises it).
    refs: Option<&'r [usize]>,
}

impl DirectReader<'_> {
    fn span(&self, r: Range<usize>) -> Span {
        self.offsets
            .span(self.body_start + r.start..self.body_start + r.end)
    }

    fn name(&self, i: usize) -> &str {
        &self.body[self.elems[i].name.clone()]
    }

    /// The indices of the child elements of element `i`.
    fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.elems[i].next;
        std::iter::successors(Some(i + 1).filter(|&c| c < end), move |&c| {
            Some(self.elems[c].next).filter(|&n| n < end)
        })
    }

    fn call(&self, i: usize) -> ActionCall {
        let e = &self.elems[i];
        let mut params = Vec::with_capacity(e.elements);
        params.extend(self.children(i).map(|c| {
            let content = self.elems[c].content.clone();
            ActionParam {
                key: self.raw.slice_ref(self.name(c)),
                content_span: self.span(content.clone()),
                source: self.raw.slice_ref(&self.body[content]),
            }
        }));
        ActionCall {
            params,
            tool: self.name(i).to_owned(),
            args: self.object(i),
            span: self.span(e.start..e.end),
        }
    }

    /// As [`TreeReader::object`]: a repeated name makes an array.
    fn object(&self, i: usize) -> Map<String, Value> {
        if self.elems[i].elements > SMALL_OBJECT && map_sorts_keys() {
            return self.sorted_object(i);
        }
        self.inserted_object(i)
    }

    /// [`DirectReader::object`] by inserting the members one by one.
    fn inserted_object(&self, i: usize) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.elems[i].elements);
        // Keys that repeated, whose value is now the array of their values (rare: a list).
        let mut repeated: HashSet<&str> = HashSet::new();
        for child in self.children(i) {
            let key = self.name(child);
            let value = self.value(child);
            insert_value(&mut map, &mut repeated, key, value);
        }
        map
    }

    /// [`DirectReader::object`] for many members in a map that sorts its keys: the members
    /// sorted by name (stably: a repeated name's values stay in document order, and make
    /// an array), then built in one pass. The same map as inserting them one by one, for
    /// O(n log n) name comparisons and no node splits (a B-tree insert compares with
    /// several keys per level, each a `memcmp` of names that often share a long prefix).
    ///
    /// Each member is sorted as (its name's first 16 bytes read as one big-endian number,
    /// its name, its index): the number orders names as their bytes do and settles most
    /// comparisons without a `memcmp`, and the index — which grows in document order —
    /// makes every key distinct, so an unstable sort keeps a repeated name's elements in
    /// document order.
    fn sorted_object(&self, i: usize) -> Map<String, Value> {
        let mut order: Vec<(u128, &str, usize)> = self
            .children(i)
            .map(|c| {
                let name = self.name(c);
                (name_prefix(name), name, c)
            })
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)).then(a.2.cmp(&b.2)));
        let mut members: Vec<(String, Value)> = Vec::with_capacity(order.len());
        let mut k = 0;
        while k < order.len() {
            let (prefix, name, _) = order[k];
            let run = order[k..]
                .iter()
                .take_while(|o| o.0 == prefix && o.1 == name)
                .count();
            let value = match &order[k..k + run] {
                [one] => self.value(one.2),
                many => Value::Array(many.iter().map(|o| self.value(o.2)).collect()),
            };
            members.push((name.to_owned(), value));
            k += run;
        }
        // Already sorted with unique keys: `BTreeMap::from_iter` sorts in one pass and
        // builds the tree bottom-up.
        members.into_iter().collect()
    }

    /// As [`TreeReader::value`].
    fn value(&self, i: usize) -> Value {
        let e = &self.elems[i];
        if e.elements == 0 || e.text {
            // A leaf, or code with markup: its content as written, read as a leaf.
            return Value::String(self.leaf(e));
        }
        if !e.all_items {
            return Value::Object(self.object(i));
        }
        let mut items = Vec::with_capacity(e.elements);
        items.extend(self.children(i).map(|c| self.value(c)));
        Value::Array(items)
    }

    /// As [`TreeReader::leaf`] and [`TreeReader::inner_text`].
    fn leaf(&self, e: &Elem) -> String {
        let k = self.cdata.partition_point(|c| c.full.start < e.start);
        if e.elements > 0 || self.cdata.get(k).is_some_and(|c| c.full.start < e.end) {
            return cdata_value(self.body, &self.cdata[k..], e.content.clone());
        }
        let text = &self.body[e.content.clone()];
        let mut decoded = match self.refs {
            // No carriage return to normalise: the text as written between the references
            // the reader found (code's bare `&`s are text as written).
            Some(refs) => {
                let from = refs.partition_point(|&r| r < e.content.start);
                let to = refs.partition_point(|&r| r < e.content.end);
                if from == to {
                    return trim_xml(text).to_owned();
                }
                // Blanks before the first reference are trimmed whatever it stands for:
                // passed over here, so that trimming the decoded text seldom moves it.
                let first = refs[from];
                let lead = self.body.as_bytes()[e.content.start..first]
                    .iter()
                    .take_while(|&&c| is_xml_space(c))
                    .count();
                let mut at = e.content.start + lead;
                let mut out = String::with_capacity(e.content.end - at);
                for &r in &refs[from..to] {
                    out.push_str(&self.body[at..r]);
                    let len = reference_len(self.body.as_bytes(), r).unwrap_or(1);
                    push_reference(&mut out, &self.body[r..r + len]);
                    at = r + len;
                }
                out.push_str(&self.body[at..e.content.end]);
                out
            }
            None if memchr::memchr2(b'&', b'\r', text.as_bytes()).is_none() => {
                return trim_xml(text).to_owned();
            }
            None => decode_text(text),
        };
        // Decoded before trimming, as roxmltree's text is: `&#32;` at an edge goes too.
        let start = decoded.len() - decoded.trim_start_matches([' ', '\t', '\n', '\r']).len();
        let end = decoded
            .trim_end_matches([' ', '\t', '\n', '\r'])
            .len()
            .max(start);
        decoded.truncate(end);
        decoded.drain(..start);
        decoded
    }
}

/// The first 16 bytes of `name` as a big-endian number, zeros after a shorter name: two
/// names whose numbers differ compare as the numbers do (a name that is a prefix of the
/// other is the smaller either way); equal numbers say nothing, and the names are compared.
fn name_prefix(name: &str) -> u128 {
    let mut bytes = [0u8; 16];
    let n = name.len().min(16);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    u128::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Names whose 16-byte numbers differ compare as the numbers do.
        #[test]
        fn name_prefix_orders_as_the_names(a in "[a-c_0-9\\x00]{0,20}", b in "[a-c_0-9\\x00]{0,20}") {
            let (pa, pb) = (name_prefix(&a), name_prefix(&b));
            if pa != pb {
                prop_assert_eq!(pa.cmp(&pb), a.cmp(&b));
            }
        }

        /// The sorted build gives the map the one-by-one inserts give, repeated names,
        /// lists and nested objects included, whichever order the map keeps (serde_json's
        /// map equality ignores order).
        #[test]
        fn sorted_object_is_the_inserted_object(
            members in proptest::collection::vec((0usize..16, 0usize..4), 0..40),
        ) {
            let mut body = String::from("<call>");
            for (name, shape) in &members {
                // Names past 16 bytes share their sort number: the names decide.
                let long = if name % 3 == 0 { "a_long_shared_prefix_" } else { "" };
                let key = format!("{long}k{}", name % 13);
                let content = match shape {
                    0 => format!("v{name}"),
                    1 => "<item>a</item><item>b</item>".to_owned(),
                    2 => "<x>1</x><y>2</y>".to_owned(),
                    _ => String::new(),
                };
                body.push_str(&format!("<{key}>{content}</{key}>"));
            }
            body.push_str("</call>");
            let raw = ByteString::from(body.clone());
            let Flat { elems, cdata, .. } =
                flat_tree(&body, 64, 1 << 16, false).expect("a plain body");
            let offsets = OffsetMap::default();
            let reader = DirectReader {
                raw: &raw,
                body: &raw,
                body_start: 0,
                offsets: &offsets,
                elems: &elems,
                cdata: &cdata,
                refs: None,
            };
            prop_assert_eq!(reader.sorted_object(0), reader.inserted_object(0));
        }
    }

    fn pieces(v: &[(bool, &'static str)]) -> String {
        assemble(v.iter().map(|&(c, t)| (c, Cow::Borrowed(t))).collect())
    }

    #[test]
    fn cdata_rule() {
        assert_eq!(
            pieces(&[(false, "\n  "), (true, "\ncode\n  "), (false, "\n")]),
            "code\n"
        );
        assert_eq!(pieces(&[(true, " a ")]), " a ");
        assert_eq!(pieces(&[(true, "a\n b")]), "a\n b");
        assert_eq!(pieces(&[(true, "a]]"), (true, ">b\n\t")]), "a]]>b\n");
        assert_eq!(pieces(&[(true, "\n\n "), (true, "")]), "\n ");
        assert_eq!(pieces(&[(false, " x "), (true, "\ny")]), "x \ny");
    }

    proptest! {
        /// The one-pass check and count agree with the plain definitions.
        #[test]
        fn lt_count_and_xml_chars_in_one_pass(
            text in proptest::collection::vec(
                prop_oneof![
                    Just('<'), Just('\t'), Just('\n'), Just('\r'), Just('\u{1}'),
                    Just('\u{1f}'), Just(' '), Just('a'), Just('\u{FFFE}'), Just('\u{FFFF}'),
                    Just('\u{FFFD}'), Just('，'), Just(']'), Just('>'),
                ],
                0..200,
            ),
        ) {
            let text: String = text.into_iter().collect();
            let xml = text.chars().all(|c| {
                !matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}')
            });
            let want = xml.then(|| text.matches('<').count());
            prop_assert_eq!(lt_count_if_xml_chars(&text), want);
            prop_assert_eq!(has_cdata_end(text.as_bytes()), text.contains("]]>"));
        }
    }

    #[test]
    fn start_tag_ends() {
        assert_eq!(start_tag_end("<a b='>'>x", 0), 9);
        assert_eq!(start_tag_end("<a>", 0), 3);
    }
}
