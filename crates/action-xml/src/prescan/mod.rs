//! The pre-scan: one iterative pass over a block body, before roxmltree sees it.
//!
//! It enforces the depth limit (with an explicit stack, so 100 000 nested elements cost a
//! counter, not the call stack), rejects DTDs, repairs the mistakes models make (bare `&`,
//! `<` in code, undeclared prefixes, unclosed elements, a stream cut short) and writes the
//! document roxmltree parses: the body, edited, inside a wrapper root element that declares
//! the undeclared prefixes. Every edit is recorded so that positions in the document map
//! back to the body.
//!
//! CDATA sections and comments are not searched again: the block scanner reported them as
//! regions (their content is skipped in one step).

use std::borrow::Cow;
use std::ops::Range;

use memchr::memchr;
use tam_parse::Code;

mod pass;
use pass::ASCII_NAME_START;
pub(crate) use pass::prescan;

/// A CDATA section or comment the scanner found, in body offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegionRef {
    pub kind: RegionKind,
    /// Opener to closer, inclusive (to the body end when unclosed).
    pub full: Range<usize>,
    /// What is between opener and closer.
    pub content: Range<usize>,
    /// False when the stream ended inside it.
    pub closed: bool,
}

/// What a region is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegionKind {
    Cdata,
    Comment,
}

/// A CDATA section in document offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CdataRef {
    pub full: Range<usize>,
    pub content: Range<usize>,
}

/// A repair made, as a warning to report: `at` is a body range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repair {
    pub code: Code,
    pub at: Range<usize>,
    pub message: String,
}

/// What stops the pre-scan: the block cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A `<!DOCTYPE`, `<!ENTITY`, … at this body offset.
    Dtd(usize),
    /// An element deeper than the limit begins at this body offset.
    TooDeep(usize),
}

/// Maps document offsets to body offsets and back.
#[derive(Debug, Clone, Default)]
pub(crate) struct DocMap {
    /// `(doc, body)` pairs at every edit boundary, both ascending.
    anchors: Vec<(usize, usize)>,
    body_len: usize,
}

impl DocMap {
    /// The body offset of document offset `doc` (text inserted by a repair maps to where
    /// it was inserted).
    pub(crate) fn body(&self, doc: usize) -> usize {
        let i = self.anchors.partition_point(|&(d, _)| d <= doc);
        if i == 0 {
            return 0;
        }
        let (d, b) = self.anchors[i - 1];
        let limit = self.anchors.get(i).map_or(self.body_len, |&(_, nb)| nb);
        (b + (doc - d)).min(limit)
    }

    /// The document offset of body offset `body` (not inside deleted text); text inserted
    /// at `body` comes after it.
    fn doc(&self, body: usize) -> usize {
        let i = self.anchors.partition_point(|&(_, b)| b < body);
        match self.anchors.get(i) {
            Some(&(d, b)) if b == body => d,
            _ if i == 0 => 0,
            _ => {
                let (d, b) = self.anchors[i - 1];
                d + (body - b)
            }
        }
    }
}

/// The document for roxmltree and what the pre-scan learnt.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// `<ACTION xmlns:p="urn:undeclared:p" …>` + edited body + closers + `</ACTION>`.
    pub doc: String,
    pub map: DocMap,
    /// CDATA sections, in document order.
    pub cdata: Vec<CdataRef>,
    /// Repairs to report, in the order made.
    pub repairs: Vec<Repair>,
    /// Elements closed at the end of the body because their close tags were missing,
    /// innermost first.
    pub auto_closed: Vec<String>,
    /// Call elements that closed (or were empty elements) in the body as written.
    pub closed_calls: usize,
    /// True when a call element was still open at the end of the body.
    pub open_call: bool,
    /// Where a block the stream ended in ends inside an element's start or close tag
    /// (`…</write_file><delete_all`, `</get_wea`): the stream was cut mid-call
    /// ([`pass::cuts_element_tag`]).
    pub cut_tag: Option<Range<usize>>,
}

#[derive(Debug)]
struct Edit {
    at: usize,
    delete: usize,
    insert: Cow<'static, str>,
}

#[derive(Debug, Clone)]
struct Open {
    lt: usize,
    name: Range<usize>,
    /// Close tags inside it that match no open element: text if the element closes
    /// properly (`<code>s = "</div>"</code>`), else the first place roxmltree rejects.
    unmatched: Vec<usize>,
    /// Levels of kept elements below it so far (0: none), and where the deepest of them
    /// starts: elements that turn out to be text count no level.
    height: usize,
    deepest: usize,
}

/// A repair counted per block: one warning with the first place and the count.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    first: Option<Range<usize>>,
    count: usize,
}

impl Tally {
    pub(crate) fn add(&mut self, at: Range<usize>) {
        self.first.get_or_insert(at);
        self.count += 1;
    }

    /// Adds `n` repairs, the first of them at `at`.
    pub(crate) fn add_n(&mut self, at: Range<usize>, n: usize) {
        if n > 0 {
            self.first.get_or_insert(at);
            self.count += n;
        }
    }

    /// The repair to report, if any was made: at the first place, with the count.
    pub(crate) fn repair(&self, code: Code, what: &str) -> Option<Repair> {
        let first = self.first.clone()?;
        let times = if self.count == 1 {
            String::new()
        } else {
            format!(" ({} times)", self.count)
        };
        Some(Repair {
            code,
            at: first,
            message: format!("{what}{times}"),
        })
    }
}

/// What the warning for a bare `&` says.
pub(crate) const BARE_AMPERSAND: &str = "bare '&' read as '&amp;'";
/// What the warning for a `<` read as text says.
pub(crate) const UNESCAPED_LT: &str = "'<' that begins no element read as text";

/// Depth of parameter values: a `<` is read as text only inside an element this deep (a
/// call is depth 1, its parameters depth 2), where values hold code.
pub(crate) const VALUE_DEPTH: usize = 2;

/// The document for a body that needs no repair, when one quick look can tell: every `<`
/// outside CDATA begins a start tag without quotes or a close tag, there is no comment,
/// processing instruction or declaration, and the nesting stays within `max_depth`.
///
/// roxmltree then either accepts the document — and [`prescan`] would have changed
/// nothing, since each of its repairs is of something roxmltree rejects — or rejects it,
/// and the caller runs [`prescan`]. Well-formed output, the common case, is looked at once
/// for `<` and once more by roxmltree.
pub(crate) fn clean_document(
    body: &str,
    regions: &[RegionRef],
    max_depth: usize,
) -> Option<Prepared> {
    if regions.iter().any(|r| r.kind == RegionKind::Comment) {
        return None;
    }
    let b = body.as_bytes();
    let mut depth = 0usize;
    let mut pos = 0;
    let mut next_region = regions.iter().peekable();
    while let Some(off) = memchr(b'<', &b[pos..]) {
        let i = pos + off;
        if let Some(r) = next_region.next_if(|r| r.full.start == i) {
            pos = r.full.end;
            continue;
        }
        match b.get(i + 1) {
            Some(b'/') => {
                depth = depth.checked_sub(1)?;
                pos = i + 2;
            }
            Some(&c) if c >= 0x80 || ASCII_NAME_START.contains(&c) || c.is_ascii_alphabetic() => {
                // Tags are short: a plain loop beats a vectorised search here.
                let mut j = i + 2;
                loop {
                    match *b.get(j)? {
                        b'>' => break,
                        // Quotes may hide a `>` or `/>`: only the full pre-scan can tell.
                        b'"' | b'\'' | b'<' => return None,
                        _ => j += 1,
                    }
                }
                if depth >= max_depth {
                    return None;
                }
                if b[j - 1] != b'/' {
                    depth += 1;
                }
                pos = j + 1;
            }
            _ => return None,
        }
    }
    const OPEN: &str = "<ACTION>";
    let mut doc = String::with_capacity(body.len() + 2 * OPEN.len() + 1);
    doc.push_str(OPEN);
    doc.push_str(body);
    doc.push_str("</ACTION>");
    let shift = OPEN.len();
    let cdata = regions
        .iter()
        .map(|r| CdataRef {
            full: r.full.start + shift..r.full.end + shift,
            content: r.content.start + shift..r.content.end + shift,
        })
        .collect();
    Some(Prepared {
        doc,
        map: DocMap {
            anchors: vec![(shift, 0)],
            body_len: body.len(),
        },
        cdata,
        repairs: Vec::new(),
        auto_closed: Vec::new(),
        closed_calls: 0,
        open_call: false,
        cut_tag: None,
    })
}

/// ASCII bytes other than letters that may begin a name.
#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str) -> Prepared {
        prescan(body, &[], false, 64, &[]).unwrap()
    }

    fn inner(p: &Prepared) -> &str {
        let start = p.doc.find('>').unwrap() + 1;
        &p.doc[start..p.doc.len() - "</ACTION>".len()]
    }

    #[test]
    fn leaves_valid_xml_alone() {
        let p = run("<t><a>x &amp; y</a><b/></t>");
        assert_eq!(inner(&p), "<t><a>x &amp; y</a><b/></t>");
        assert!(p.repairs.is_empty());
    }

    #[test]
    fn escapes_bare_ampersand_and_stray_lt() {
        let p = run("<t><c>a && b < c</c></t>");
        assert_eq!(inner(&p), "<t><c>a &amp;&amp; b &lt; c</c></t>");
        let codes: Vec<_> = p.repairs.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, ["bare_ampersand", "unescaped_lt"]);
        assert_eq!(p.repairs[0].message, "bare '&' read as '&amp;' (2 times)");
        // At call level a stray `<` is structure gone wrong, left for the parser.
        let p = run("<t>< c>x</c></t>");
        assert_eq!(inner(&p), "<t>< c>x</c></t>");
        assert!(p.repairs.is_empty());
    }

    #[test]
    fn unclosed_inner_tag_becomes_text() {
        let p = run("<t><c>Vec<String> x</c></t>");
        assert_eq!(inner(&p), "<t><c>Vec&lt;String> x</c></t>");
    }

    #[test]
    fn unmatched_close_tag_is_text_only_if_its_element_closes() {
        let p = run("<t><c>s = \"</div>\";</c></t>");
        assert_eq!(inner(&p), "<t><c>s = \"&lt;/div>\";</c></t>");
        // `</b>` is a typo here: the call closes while `<a>` is open, so it was `</a>`.
        let p = run("<t><a>1</b></t>");
        assert_eq!(inner(&p), "<t><a>1</a></t>");
        let codes: Vec<_> = p.repairs.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, ["mismatched_close_tag"]);
        // Two that match nothing: no guess, left for roxmltree to reject.
        let p = run("<t><a>1</b>2</c></t>");
        assert_eq!(inner(&p), "<t><a>1</b>2</c></t>");
    }

    #[test]
    fn calls_close_tag_ends_the_parameter_left_open() {
        let p = run("<t><a>1</a><b>2</t><u><c>Vec<T> x</U>");
        assert_eq!(
            inner(&p),
            "<t><a>1</a><b>2</b></t><u><c>Vec&lt;T> x</c></u>"
        );
        let codes: Vec<_> = p.repairs.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(
            codes,
            [
                "unescaped_lt",
                "noncanonical_tag",
                "missing_close_tag",
                "missing_close_tag"
            ]
        );
        assert_eq!(
            p.repairs[2].message,
            "<b> not closed before </t>; closed there"
        );
        assert_eq!(p.repairs[2].at, 15..19);
        assert_eq!(
            p.repairs[3].message,
            "<c> not closed before </u>; closed there"
        );
        assert_eq!(p.closed_calls, 2);
        assert!(p.auto_closed.is_empty() && !p.open_call);
        // The inserted close tag maps to where the call's close tag begins.
        let at = p.doc.find("</b>").unwrap();
        assert_eq!(p.map.body(at), 15);
        assert_eq!(p.map.body(at + "</b>".len()), 15);
        // Spaced: the blanks go, the parameter's close tag comes before.
        let p = run("<t><a>1</ t>");
        assert_eq!(inner(&p), "<t><a>1</a></t>");
        // Not a repair: a close tag in the parameter that matched nothing (one: the
        // misspelt repair; two: a guess, left for roxmltree), or a call never closed.
        let p = run("<t><a>1</b>2</c></t>");
        assert_eq!(inner(&p), "<t><a>1</b>2</c></t>");
        let p = run("<t><a>1</b></t>");
        assert_eq!(inner(&p), "<t><a>1</a></t>");
        let p = run("<t><a>1");
        assert_eq!(p.auto_closed, ["a", "t"]);
        assert!(p.open_call);
    }

    #[test]
    fn close_tag_with_blanks_before_its_name_closes_its_element() {
        let p = run("<t><a>1</ a><b>2</\t\nB ></  t>");
        assert_eq!(inner(&p), "<t><a>1</a><b>2</b ></t>");
        let codes: Vec<_> = p.repairs.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, ["noncanonical_tag"]);
        assert_eq!(p.repairs[0].at, 7..12);
        assert!(p.repairs[0].message.ends_with("(3 times)"));
        assert!(p.auto_closed.is_empty());
        // Body offsets map back across the dropped blanks.
        let b = "<t><a>1</ a>";
        assert_eq!(p.map.body(p.map.doc(b.len())), b.len());
        // In a value, one that closes no open element is text, as `<` that begins no tag.
        let p = run("<t><c>x </ d> y </ z</c></t>");
        assert_eq!(inner(&p), "<t><c>x &lt;/ d> y &lt;/ z</c></t>");
        let codes: Vec<_> = p.repairs.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, ["unescaped_lt"]);
        // Nothing open: left as written, for roxmltree to reject.
        let p = run("<t/></ t>");
        assert_eq!(inner(&p), "<t/></ t>");
    }

    #[test]
    fn closes_open_elements_and_declares_prefixes() {
        let p = run("<w:tool><p>x</p>");
        assert!(p.doc.starts_with("<ACTION xmlns:w=\"urn:undeclared:w\">"));
        assert!(p.doc.ends_with("<p>x</p></w:tool></ACTION>"));
        assert_eq!(p.auto_closed, ["w:tool"]);
    }

    #[test]
    fn depth_is_checked_without_recursion() {
        let deep = "<a>".repeat(100_000);
        assert_eq!(
            prescan(&deep, &[], false, 64, &[]).unwrap_err(),
            Refusal::TooDeep(3 * (100_000 - 1))
        );
    }

    #[test]
    fn dtd_is_refused() {
        assert_eq!(
            prescan("<!DOCTYPE x [<!ENTITY a 'b'>]><t/>", &[], false, 64, &[]).unwrap_err(),
            Refusal::Dtd(0)
        );
    }

    #[test]
    fn doc_map_round_trips_offsets() {
        let p = run("<t>a & b</t>");
        // "<ACTION>" is 8 bytes; '&' at body 5 is followed by the inserted "amp;".
        assert_eq!(p.map.body(8 + 5), 5);
        assert_eq!(p.map.body(8 + 7), 6);
        assert_eq!(p.map.body(8 + 10), 6);
        assert_eq!(p.map.body(8 + 11), 7);
        assert_eq!(p.map.doc(7), 8 + 11);
        assert_eq!(p.map.doc(6), 8 + 6);
        // Closers inserted at the body end come after the body's end.
        let p = run("<t>");
        assert_eq!(p.map.doc(3), 8 + 3);
    }
}
