//! The pre-scan's one pass: the state it keeps and how it reads tags, text and regions.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use memchr::{memchr, memchr3, memmem};
use tam_parse::Code;

use super::{
    BARE_AMPERSAND, CdataRef, DocMap, Edit, Open, Prepared, Refusal, RegionKind, RegionRef, Repair,
    Tally, UNESCAPED_LT, VALUE_DEPTH,
};
use crate::codes;
use crate::xml_chars::{is_xml_space, name_end, reference_len, space_end};

/// How a tag parse ended.
enum Tag {
    /// A well-formed tag ending at this offset.
    Done { end: usize, empty: bool },
    /// Not a tag.
    Malformed,
    /// The body ended inside it.
    Incomplete,
}

/// What a close tag does to the open elements ([`Prescan::closes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// It closes the innermost open element.
    Top,
    /// It closes the innermost open element, whose name it matches only ignoring case
    /// (`noncanonical_tag`).
    TopIgnoringCase,
    /// Inside a value, it closes the open element at this stack index; those opened after it
    /// were text.
    Outer(usize),
    /// The call's close tag while one parameter is open that holds one close tag matching
    /// nothing: that one was the parameter's, misspelt (`mismatched_close_tag`).
    Misspelt,
    /// The call's close tag (its name as written, or in another case) while one parameter
    /// is open, inside which no close tag matched nothing: the parameter, never closed,
    /// ends there (`missing_close_tag`); the elements opened in it and never closed were
    /// text.
    ParamLeftOpen,
    /// It matches the element at this stack index, but elements left open in a call or
    /// between calls are no text: roxmltree rejects it.
    Unwound(usize),
    /// It matches no open element (nothing is open, or no element of its name).
    Nothing,
}

impl Close {
    /// True when it closes an element (a repair included): where `</name>` is accepted.
    fn closes(self) -> bool {
        matches!(
            self,
            Close::Top
                | Close::TopIgnoringCase
                | Close::Outer(_)
                | Close::Misspelt
                | Close::ParamLeftOpen
        )
    }
}

const DTD_KEYWORDS: [&[u8]; 5] = [
    b"!DOCTYPE",
    b"!ENTITY",
    b"!ELEMENT",
    b"!ATTLIST",
    b"!NOTATION",
];

pub(super) struct Prescan<'a> {
    body: &'a str,
    bytes: &'a [u8],
    regions: &'a [RegionRef],
    next_region: usize,
    at_eof: bool,
    max_depth: usize,
    stack: Vec<Open>,
    edits: Vec<Edit>,
    cdata: Vec<(Range<usize>, Range<usize>, bool)>,
    /// Prefix → first use, for prefixes of accepted elements and attributes.
    used_prefixes: HashMap<&'a str, usize>,
    declared_prefixes: HashSet<&'a str>,
    amp: Tally,
    lt: Tally,
    gt: Tally,
    case: Tally,
    /// Close tags with blanks before their name (`</ name>`) read as `</name>`.
    spaced: Tally,
    /// Misspelt close tags read as their parameter's (`mismatched_close_tag`).
    misspelt: Tally,
    /// Parameters closed at their call's close tag (`missing_close_tag`), one warning each.
    left_open: Vec<Repair>,
    truncated_tag: Option<Range<usize>>,
    /// The body ends inside this element's start or close tag ([`cuts_element_tag`]).
    cut_tag: Option<Range<usize>>,
    /// Call elements closed so far.
    closed_calls: usize,
    /// The first element nested deeper than `max_depth` that was kept as an element.
    too_deep: Option<usize>,
}

/// Runs the pre-scan over `body` (with the scanner's `regions`, in body offsets and
/// order). `at_eof` says the block was cut short by the end of the stream; `deleted` are
/// ranges to drop (code fence lines).
pub(crate) fn prescan(
    body: &str,
    regions: &[RegionRef],
    at_eof: bool,
    max_depth: usize,
    deleted: &[Range<usize>],
) -> Result<Prepared, Refusal> {
    let mut p = Prescan {
        body,
        bytes: body.as_bytes(),
        regions,
        next_region: 0,
        at_eof,
        max_depth,
        stack: Vec::new(),
        edits: deleted
            .iter()
            .map(|r| Edit {
                at: r.start,
                delete: r.len(),
                insert: Cow::Borrowed(""),
            })
            .collect(),
        cdata: Vec::new(),
        used_prefixes: HashMap::new(),
        declared_prefixes: HashSet::new(),
        amp: Tally::default(),
        lt: Tally::default(),
        gt: Tally::default(),
        case: Tally::default(),
        spaced: Tally::default(),
        misspelt: Tally::default(),
        left_open: Vec::new(),
        truncated_tag: None,
        cut_tag: None,
        closed_calls: 0,
        too_deep: None,
    };
    p.walk()?;
    p.finish()
}

pub(super) const ASCII_NAME_START: [u8; 2] = [b'_', b':'];

impl<'a> Prescan<'a> {
    fn edit(&mut self, at: usize, delete: usize, insert: impl Into<Cow<'static, str>>) {
        self.edits.push(Edit {
            at,
            delete,
            insert: insert.into(),
        });
    }

    fn walk(&mut self) -> Result<(), Refusal> {
        let b = self.bytes;
        let mut pos = 0;
        while let Some(off) = memchr3(b'<', b'&', b'>', &b[pos..]) {
            let i = pos + off;
            pos = match b[i] {
                b'&' => {
                    self.ampersand(i);
                    i + 1
                }
                b'>' => {
                    if i >= 2 && &b[i - 2..i] == b"]]" {
                        self.edit(i, 1, "&gt;");
                        self.gt.add(i..i + 1);
                    }
                    i + 1
                }
                _ => self.markup(i)?,
            };
        }
        Ok(())
    }

    fn ampersand(&mut self, i: usize) {
        if reference_len(self.bytes, i).is_none() {
            self.edit(i + 1, 0, "amp;");
            self.amp.add(i..i + 1);
        }
    }

    /// A `<` at `i`: a region, a tag, or text. Returns where to go on.
    fn markup(&mut self, i: usize) -> Result<usize, Refusal> {
        while self
            .regions
            .get(self.next_region)
            .is_some_and(|r| r.full.start < i)
        {
            self.next_region += 1;
        }
        if let Some(r) = self
            .regions
            .get(self.next_region)
            .filter(|r| r.full.start == i)
        {
            self.next_region += 1;
            match r.kind {
                RegionKind::Cdata => {
                    self.cdata
                        .push((r.full.clone(), r.content.clone(), r.closed));
                    if !r.closed {
                        self.edit(self.bytes.len(), 0, "]]>");
                    }
                }
                RegionKind::Comment => self.edit(r.full.start, r.full.len(), ""),
            }
            return Ok(r.full.end);
        }
        let b = self.bytes;
        let result = match b.get(i + 1) {
            Some(b'!') => {
                let rest = &b[i + 1..];
                if self.stack.is_empty() && DTD_KEYWORDS.iter().any(|k| rest.starts_with(k)) {
                    // Inside an element it is text (an HTML snippet); here it declares a DTD.
                    return Err(Refusal::Dtd(i));
                }
                let partial_opener = |opener: &[u8]| opener.starts_with(rest);
                if partial_opener(b"!--") || partial_opener(b"![CDATA[") {
                    Tag::Incomplete
                } else {
                    Tag::Malformed
                }
            }
            Some(b'?') => match memmem::find(&b[i + 2..], b"?>") {
                Some(e) => {
                    // A processing instruction (an XML declaration, say) means nothing here.
                    let end = i + 2 + e + 2;
                    self.edit(i, end - i, "");
                    return Ok(end);
                }
                None => Tag::Incomplete,
            },
            Some(b'/') => return self.close_tag(i),
            Some(_) if name_end(self.body, i + 1) > i + 1 => return self.start_tag(i),
            None => Tag::Incomplete,
            Some(_) => Tag::Malformed,
        };
        Ok(self.not_a_tag(i, result))
    }

    /// What to do with a `<` at `i` that begins no tag.
    fn not_a_tag(&mut self, i: usize, how: Tag) -> usize {
        if matches!(how, Tag::Incomplete) && self.at_eof {
            // The stream ended inside this tag: drop the fragment. A cut element tag means
            // the stream was cut mid-call ([`Prepared::cut_tag`]).
            if cuts_element_tag(&self.bytes[i..]) {
                self.cut_tag = Some(i..self.bytes.len());
            }
            self.edit(i, self.bytes.len() - i, "");
            self.truncated_tag = Some(i..self.bytes.len());
            return self.bytes.len();
        }
        if self.stack.len() >= VALUE_DEPTH {
            self.escape_lt(i);
        }
        // Between calls or parameters the `<` is structure gone wrong: it is left for
        // roxmltree to reject with its position.
        i + 1
    }

    fn skip_space(&self, j: usize) -> usize {
        space_end(self.bytes, j)
    }

    fn start_tag(&mut self, i: usize) -> Result<usize, Refusal> {
        let body = self.body;
        let b = self.bytes;
        let name = i + 1..name_end(body, i + 1);
        let mut j = name.end;
        let mut attr_edits: Vec<usize> = Vec::new();
        let mut attr_prefixes: Vec<(&'a str, usize)> = Vec::new();
        let mut declared: Vec<&'a str> = Vec::new();
        let how = loop {
            let after_space = self.skip_space(j);
            let had_space = after_space > j;
            j = after_space;
            match b.get(j) {
                None => break Tag::Incomplete,
                Some(b'>') => {
                    break Tag::Done {
                        end: j + 1,
                        empty: false,
                    };
                }
                Some(b'/') => match b.get(j + 1) {
                    Some(b'>') => {
                        break Tag::Done {
                            end: j + 2,
                            empty: true,
                        };
                    }
                    None => break Tag::Incomplete,
                    Some(_) => break Tag::Malformed,
                },
                Some(_) if !had_space => break Tag::Malformed,
                Some(_) => {}
            }
            // An attribute: name = "value" or 'value'.
            let an_end = name_end(body, j);
            if an_end == j {
                break Tag::Malformed;
            }
            let attr_start = j;
            let attr_name = &body[j..an_end];
            j = self.skip_space(an_end);
            match b.get(j) {
                Some(b'=') => {}
                None => break Tag::Incomplete,
                Some(_) => break Tag::Malformed,
            }
            j = self.skip_space(j + 1);
            let quote = match b.get(j) {
                Some(&q @ (b'"' | b'\'')) => q,
                None => break Tag::Incomplete,
                Some(_) => break Tag::Malformed,
            };
            let Some(len) = memchr(quote, &b[j + 1..]) else {
                break Tag::Incomplete;
            };
            let value = j + 1..j + 1 + len;
            if memchr(b'<', &b[value.clone()]).is_some() {
                break Tag::Malformed;
            }
            let mut at = value.start;
            while let Some(k) = memchr(b'&', &b[at..value.end]) {
                if reference_len(&b[..value.end], at + k).is_none() {
                    attr_edits.push(at + k);
                }
                at += k + 1;
            }
            if let Some(p) = attr_name.strip_prefix("xmlns:") {
                declared.push(p);
            } else if let Some((p, _)) = attr_name.split_once(':') {
                attr_prefixes.push((p, attr_start));
            }
            j = value.end + 1;
        };
        let (end, empty) = match how {
            Tag::Done { end, empty } => (end, empty),
            other @ (Tag::Malformed | Tag::Incomplete) => return Ok(self.not_a_tag(i, other)),
        };
        for at in attr_edits {
            self.ampersand(at);
        }
        self.declared_prefixes.extend(declared);
        for (p, at) in attr_prefixes {
            self.use_prefix(p, at);
        }
        if self.stack.len() < VALUE_DEPTH && self.stack.len() >= self.max_depth {
            return Err(Refusal::TooDeep(i));
        }
        if empty {
            let depth = self.stack.len() + 1;
            self.kept(depth, &body[name.clone()]);
            self.rise(1, i);
            self.accept(name);
        } else {
            self.stack.push(Open {
                lt: i,
                name,
                unmatched: Vec::new(),
                height: 0,
                deepest: i,
            });
        }
        Ok(end)
    }

    fn close_tag(&mut self, i: usize) -> Result<usize, Refusal> {
        let body = self.body;
        let b = self.bytes;
        let start = i + 2;
        let end_name = name_end(body, start);
        if end_name == start
            && b.get(start).is_some_and(|&c| is_xml_space(c))
            && let Some(end) = self.spaced_close_tag(i)
        {
            return Ok(end);
        }
        let how = if end_name == start {
            // `</`, blanks and perhaps a name up to the end of the body (`</`, `</ ACTI`):
            // the body ended inside the tag.
            let name_start = self.skip_space(start);
            if self.skip_space(name_end(body, name_start)) >= b.len() {
                Tag::Incomplete
            } else {
                Tag::Malformed
            }
        } else {
            let j = self.skip_space(end_name);
            match b.get(j) {
                Some(b'>') => Tag::Done {
                    end: j + 1,
                    empty: false,
                },
                None => Tag::Incomplete,
                Some(_) => Tag::Malformed,
            }
        };
        let Tag::Done { end, .. } = how else {
            return Ok(self.not_a_tag(i, how));
        };
        let close = self.closes(&body[start..end_name]);
        self.close(close, i, start..end_name, end, false);
        Ok(end)
    }

    /// A close tag with blanks between `</` and its name (`</ name>`, `</  name >`), a
    /// mistake models make: read as `</name>` (warning `noncanonical_tag`) where `</name>`
    /// would close an open element ([`Close::closes`]), the blanks dropped. Returns where to
    /// go on, or `None` when it is no such tag: then it is what it was before this repair
    /// (a `<` that begins no tag).
    fn spaced_close_tag(&mut self, i: usize) -> Option<usize> {
        let start = self.skip_space(i + 2);
        let end_name = name_end(self.body, start);
        if end_name == start {
            return None;
        }
        let j = self.skip_space(end_name);
        if self.bytes.get(j) != Some(&b'>') {
            return None;
        }
        let close = self.closes(&self.body[start..end_name]);
        if !close.closes() {
            return None;
        }
        self.edit(i + 2, start - (i + 2), "");
        self.spaced.add(i..j + 1);
        self.close(close, i, start..end_name, j + 1, true);
        Some(j + 1)
    }

    /// What a close tag of `name` does to the open elements.
    fn closes(&self, name: &str) -> Close {
        let body = self.body;
        let Some(top) = self.stack.last() else {
            return Close::Nothing;
        };
        let top_name = &body[top.name.clone()];
        if top_name == name {
            return Close::Top;
        }
        if top_name.eq_ignore_ascii_case(name) {
            return Close::TopIgnoringCase;
        }
        match self
            .stack
            .iter()
            .rposition(|o| &body[o.name.clone()] == name)
        {
            Some(k) if k + 1 >= VALUE_DEPTH => Close::Outer(k),
            Some(k) if self.stack.len() == k + 2 && self.stack[k + 1].unmatched.len() == 1 => {
                Close::Misspelt
            }
            Some(0) if self.param_left_open() => Close::ParamLeftOpen,
            Some(k) => Close::Unwound(k),
            None if self.param_left_open()
                && body[self.stack[0].name.clone()].eq_ignore_ascii_case(name) =>
            {
                Close::ParamLeftOpen
            }
            None => Close::Nothing,
        }
    }

    /// True when a call is open (not a nested `<ACTION>`: the call is at the bottom of the
    /// stack, its parameters above it at [`VALUE_DEPTH`]), and inside it a parameter, and
    /// no close tag inside the parameter matched nothing (with one, the call's close tag is
    /// [`Close::Misspelt`]; with more, which was meant is a guess): the call's close tag
    /// then ends the parameter ([`Close::ParamLeftOpen`]).
    fn param_left_open(&self) -> bool {
        let [call, param, ..] = self.stack.as_slice() else {
            return false;
        };
        !self.body[call.name.clone()].eq_ignore_ascii_case("ACTION")
            && param.unmatched.is_empty()
            && self.stack[2..].iter().all(|o| o.unmatched.is_empty())
    }

    /// A close tag at `i`, its name at `name`, ending at `end`, does what [`Prescan::closes`]
    /// found; `spaced`: it was written `</ name>` (already reported).
    fn close(&mut self, close: Close, i: usize, name: Range<usize>, end: usize, spaced: bool) {
        let body = self.body;
        match close {
            Close::Top => self.close_top(),
            Close::TopIgnoringCase => {
                let top_name = self.stack.last().map_or("", |top| &body[top.name.clone()]);
                self.edit(name.start, name.len(), top_name.to_owned());
                if !spaced {
                    self.case.add(i..end);
                }
                self.close_top();
            }
            Close::Outer(k) => {
                // The elements opened after it were never closed: they were text (`Vec<String>`),
                // and cost no depth; what was kept inside them counts for the element closed.
                let (mut height, mut deepest) = (0, 0);
                for open in self.stack.split_off(k + 1) {
                    self.escape_lt(open.lt);
                    for at in open.unmatched {
                        self.escape_lt(at);
                    }
                    if open.height > height {
                        (height, deepest) = (open.height, open.deepest);
                    }
                }
                self.rise(height, deepest);
                self.close_top();
            }
            Close::Misspelt => {
                // The call closes while one parameter is open, and that parameter holds one
                // close tag that matched nothing: a misspelt close tag (`<date>March
                // 10</room>`), which closed the parameter. What follows it is the call's.
                let Some(param) = self.stack.last_mut() else {
                    return;
                };
                let misspelt = param.unmatched.pop().unwrap_or(i);
                let own = body[param.name.clone()].to_owned();
                let written = misspelt + 2..name_end(body, misspelt + 2);
                self.misspelt.add(misspelt..written.end);
                self.edit(written.start, written.len(), own);
                self.close_top();
                self.close_top();
            }
            Close::ParamLeftOpen => {
                // `<call><p>100</call>`: the parameter ends where its call does (its close
                // tag is inserted there); the elements opened in it and never closed were
                // text (`Vec<T>`), as at the parameter's own close tag. Then the tag closes
                // the call, as written or in another case.
                let call = body[self.stack[0].name.clone()].to_owned();
                let param = body[self.stack[1].name.clone()].to_owned();
                self.left_open.push(Repair {
                    code: codes::MISSING_CLOSE_TAG,
                    at: i..end,
                    message: format!("<{param}> not closed before </{call}>; closed there"),
                });
                self.edit(i, 0, format!("</{param}>"));
                self.close(Close::Outer(1), i, name.clone(), end, spaced);
                let close = self.closes(&body[name.clone()]);
                self.close(close, i, name, end, spaced);
            }
            Close::Unwound(k) => {
                // An element left open directly in a call or between calls is structure
                // gone wrong, not code: left for roxmltree to reject.
                self.stack.truncate(k);
            }
            Close::Nothing => {
                // Inside a value, a close tag that matches nothing is text if the element it
                // is in closes properly; elsewhere it is left for roxmltree to reject.
                if self.stack.len() >= VALUE_DEPTH
                    && let Some(top) = self.stack.last_mut()
                {
                    top.unmatched.push(i);
                }
            }
        }
    }

    /// The top element closed properly: its unmatched close tags were text.
    fn close_top(&mut self) {
        if let Some(open) = self.stack.pop() {
            for at in open.unmatched {
                self.escape_lt(at);
            }
            let depth = self.stack.len() + 1;
            self.kept(depth, &self.body[open.name.clone()]);
            let deepest = if open.height == 0 {
                open.lt
            } else {
                open.deepest
            };
            self.rise(open.height + 1, deepest);
            self.accept(open.name);
        }
    }

    /// A subtree of kept elements `height` levels high, whose deepest element starts at
    /// `deepest`, ends inside the top of the stack (or at the top level, where the depth
    /// limit is checked).
    fn rise(&mut self, height: usize, deepest: usize) {
        match self.stack.last_mut() {
            Some(parent) => {
                if height > parent.height {
                    parent.height = height;
                    parent.deepest = deepest;
                }
            }
            None => {
                if height > self.max_depth && self.too_deep.is_none() {
                    self.too_deep = Some(deepest);
                }
            }
        }
    }

    /// An element `name` at `depth` (1 for a call) is kept as an element: count calls.
    /// (Inside a value, an element's depth is known only when its ancestors are decided —
    /// one never closed there is text and costs no depth — so the limit is checked on
    /// heights of kept subtrees, in [`Prescan::rise`].)
    fn kept(&mut self, depth: usize, name: &str) {
        let in_nested_action = self
            .stack
            .first()
            .is_some_and(|o| self.body[o.name.clone()].eq_ignore_ascii_case("ACTION"));
        let call_depth = if in_nested_action { 2 } else { 1 };
        if depth == call_depth && !(depth == 1 && name.eq_ignore_ascii_case("ACTION")) {
            self.closed_calls += 1;
        }
    }

    fn escape_lt(&mut self, at: usize) {
        self.edit(at, 1, "&lt;");
        self.lt.add(at..at + 1);
    }

    /// An element is kept: note its prefix.
    fn accept(&mut self, name: Range<usize>) {
        let body = self.body;
        if let Some((p, _)) = body[name.clone()].split_once(':') {
            self.use_prefix(p, name.start);
        }
    }

    fn use_prefix(&mut self, prefix: &'a str, at: usize) {
        if !prefix.is_empty() && prefix != "xml" && prefix != "xmlns" {
            self.used_prefixes.entry(prefix).or_insert(at);
        }
    }

    fn finish(mut self) -> Result<Prepared, Refusal> {
        let body = self.body;
        let len = body.len();
        let mut auto_closed = Vec::new();
        let closed_calls = self.closed_calls;
        let open_call = match self.stack.as_slice() {
            [] => false,
            [first, rest @ ..] => {
                !body[first.name.clone()].eq_ignore_ascii_case("ACTION") || !rest.is_empty()
            }
        };
        while let Some(open) = self.stack.last() {
            let name = &body[open.name.clone()];
            self.edit(len, 0, format!("</{name}>"));
            auto_closed.push(name.to_owned());
            self.close_top();
        }
        let mut repairs = Vec::new();
        let mut tally = |t: &Tally, code: Code, what: &str| {
            repairs.extend(t.repair(code, what));
        };
        tally(&self.amp, codes::BARE_AMPERSAND, BARE_AMPERSAND);
        tally(&self.lt, codes::UNESCAPED_LT, UNESCAPED_LT);
        tally(
            &self.gt,
            codes::UNESCAPED_GT,
            "']]>' outside CDATA: '>' read as '&gt;'",
        );
        tally(
            &self.case,
            codes::NONCANONICAL_TAG,
            "close tag matches its element only ignoring case",
        );
        tally(
            &self.spaced,
            codes::NONCANONICAL_TAG,
            "close tag with blanks between '</' and its name read as '</name>'",
        );
        tally(
            &self.misspelt,
            codes::MISMATCHED_CLOSE_TAG,
            "a parameter's close tag never came before its call's: the close tag in it that matched no element was read as its own",
        );
        repairs.append(&mut self.left_open);
        let mut undeclared: Vec<(&str, usize)> = self
            .used_prefixes
            .iter()
            .filter(|(p, _)| !self.declared_prefixes.contains(*p))
            .map(|(p, at)| (*p, *at))
            .collect();
        undeclared.sort_by_key(|&(p, at)| (at, p));
        let mut doc = String::with_capacity(len + 64 + 48 * undeclared.len());
        doc.push_str("<ACTION");
        for &(p, at) in &undeclared {
            doc.push_str(" xmlns:");
            doc.push_str(p);
            doc.push_str("=\"urn:undeclared:");
            doc.push_str(p);
            doc.push('"');
            repairs.push(Repair {
                code: codes::UNDECLARED_PREFIX,
                at: at..at + p.len(),
                message: format!(
                    "namespace prefix '{p}' is not declared; names keep it as written"
                ),
            });
        }
        doc.push('>');
        self.edits.sort_by_key(|e| e.at);
        let mut anchors = Vec::with_capacity(2 * self.edits.len() + 1);
        anchors.push((doc.len(), 0));
        let mut at = 0;
        for e in &self.edits {
            if e.at < at {
                // Overlapping edits cannot be made; the pre-scan never makes them.
                continue;
            }
            doc.push_str(&body[at..e.at]);
            anchors.push((doc.len(), e.at));
            doc.push_str(&e.insert);
            at = e.at + e.delete;
            anchors.push((doc.len(), at));
        }
        doc.push_str(&body[at..]);
        doc.push_str("</ACTION>");
        let map = DocMap {
            anchors,
            body_len: len,
        };
        let cdata = self
            .cdata
            .iter()
            .map(|(full, content, closed)| {
                let content = map.doc(content.start)..map.doc(content.end);
                let full_end = if *closed {
                    map.doc(full.end)
                } else {
                    content.end + 3
                };
                CdataRef {
                    full: map.doc(full.start)..full_end,
                    content,
                }
            })
            .collect();
        if let Some(t) = self.truncated_tag {
            repairs.push(Repair {
                code: codes::MISSING_CLOSE_TAG,
                at: t,
                message: "the stream ended inside a tag; the fragment was dropped".to_owned(),
            });
        }
        if let Some(at) = self.too_deep {
            return Err(Refusal::TooDeep(at));
        }
        Ok(Prepared {
            doc,
            map,
            cdata,
            repairs,
            auto_closed,
            closed_calls,
            open_call,
            cut_tag: self.cut_tag,
        })
    }
}

/// True when `fragment`, a `<` and what follows it up to the end of a stream that ended
/// inside a tag, is an element's start or close tag cut off: a lone `<`, `<` and a name
/// (attributes may follow, `<delete_all a="x`), or `</` and anything but the beginning of
/// the block's own close tag. The stream then ended while the model wrote a call — the
/// next one's start tag, or a close tag of the one open — so no call of the block may run.
///
/// Not such a fragment: the beginning of `</ACTION>` (`</`, `</AC`, `</ action`; ASCII
/// case-insensitive, blanks as the block's close tag allows them): the calls were written
/// and the block was being closed, as when `</ACTION>` is missing altogether; and the
/// beginning of a comment, a CDATA section or a processing instruction (`<!-`, `<![CD`,
/// `<?x`), which begin no call.
pub(crate) fn cuts_element_tag(fragment: &[u8]) -> bool {
    match fragment {
        [b'<'] => true,
        [b'<', b'!' | b'?', ..] => false,
        [b'<', b'/', rest @ ..] => !begins_block_close(rest),
        [b'<', ..] => true,
        _ => false,
    }
}

/// True when `rest`, what follows `</` up to the end of the stream, may still become the
/// block's close tag: blanks, a prefix of the name `ACTION` in any case, then blanks once
/// the name is whole.
fn begins_block_close(rest: &[u8]) -> bool {
    const NAME: &[u8] = b"action";
    // The scanner's tags allow up to 8 blanks at each place.
    let blanks = |s: &[u8]| s.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    let before = blanks(rest);
    let rest = &rest[before..];
    let n = rest.len().min(NAME.len());
    if before > 8 || !rest[..n].eq_ignore_ascii_case(&NAME[..n]) {
        return false;
    }
    let after = &rest[n..];
    after.is_empty() || (n == NAME.len() && blanks(after) == after.len() && after.len() <= 8)
}
