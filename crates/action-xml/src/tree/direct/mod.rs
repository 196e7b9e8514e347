//! The direct reader: calls read from the block body in one pass, without a document,
//! for the plain subset (elements without attributes or prefixes, text, CDATA, references);
//! anything else goes to the tree.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::ByteString;
use tam_parse::scan::OffsetMap;

use crate::call::ActionCall;
use crate::codes;
use crate::event::Event;
use crate::prescan::{BARE_AMPERSAND, CdataRef, Repair, Tally, UNESCAPED_LT};
use crate::xml_chars::{name_end, reference_len};

mod flat;
mod lexer;
mod values;

use flat::flat_tree;
use lexer::Unmatched;
use values::DirectReader;

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

/// Reads the calls of a block body straight from its text ([`piece_at`](lexer::piece_at)), without a DOM,
/// when the body is within the subset of XML that models write: elements without
/// attributes or prefixes, text, references that need no DTD, CDATA — and, inside values,
/// what code brings in and the pre-scan repairs the same way everywhere: a bare `&`, a `<`
/// that begins no tag (`a < b`, `impl<'a>`, `HashMap<K, V>`), an element never closed in
/// the value (`Vec<String>`: nothing may have been kept inside it), a close tag that
/// matches nothing (`"</div>"`). Those are text, and [`Direct`] counts them as the pre-scan
/// does, in the same order, so the warnings are the same. The values are those
/// [`TreeReader`](super::TreeReader) reads from roxmltree's tree of the same body (after the pre-scan).
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

#[cfg(test)]
mod tests {
    use super::flat::{Flat, has_cdata_end};
    use super::lexer::lt_count_if_xml_chars;
    use super::values::name_prefix;
    use super::*;
    use crate::tree::start_tag_end;
    use crate::value::assemble;
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
