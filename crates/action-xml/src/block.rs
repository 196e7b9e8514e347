//! ACTION blocks and their calls, and how a closed block becomes them: pre-scan and
//! repairs, roxmltree, then the tree to calls.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::scan::{BlockEnd, ClosedBlock};
use tam_parse::{ByteString, Diagnostic, Span};

use crate::call::{ActionBlock, ActionCall};
use crate::codes;
use crate::config::Config;
use crate::fence::fences_in_body;
use crate::position::Cursor;
use crate::prescan::{Prepared, Refusal, RegionRef, Repair, clean_document, prescan};
use crate::stream::start_tag_at;
use crate::tree::{TreeReader, read_direct};

/// What was learnt about a block while it was open.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpenBlock {
    /// Line and column where the block starts.
    pub start: Cursor,
    /// CDATA sections and comments, in raw offsets.
    pub regions: Vec<RegionRef>,
    /// The region open now: its kind and where its opener starts.
    pub open_region: Option<(crate::prescan::RegionKind, usize)>,
    /// Invalid UTF-8 inside the block.
    pub diagnostics: Vec<Diagnostic>,
}

/// Deepest nesting ever accepted, whatever the configuration says: values are built
/// recursively, and this keeps the recursion far from any stack limit.
const DEPTH_CAP: usize = 256;

const CANONICAL_OPEN: &str = "<ACTION>";
const CANONICAL_CLOSE: &str = "</ACTION>";

/// Everything needed to turn body positions into stream spans and line/column.
struct Where<'c> {
    closed: &'c ClosedBlock,
    start: Cursor,
}

impl Where<'_> {
    fn raw_span(&self, r: Range<usize>) -> Span {
        self.closed.offsets.span(r)
    }

    fn body_span(&self, r: Range<usize>) -> Span {
        let b = self.closed.body.start;
        self.raw_span(b + r.start..b + r.end)
    }

    /// The span of the character at body offset `at` (empty at the end), and its line and
    /// column in the model's output.
    fn point(&self, at: usize) -> (Span, crate::LineColumn) {
        let raw = &self.closed.raw;
        let mut r = (self.closed.body.start + at).min(raw.len());
        while !raw.is_char_boundary(r) {
            r -= 1;
        }
        let len = raw[r..].chars().next().map_or(0, char::len_utf8);
        let lc = self.start.after(&raw.as_bytes()[..r]).line_column();
        (self.raw_span(r..r + len), lc)
    }
}

/// What a block the scanner closed turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Built {
    /// An ACTION block.
    Block(ActionBlock),
    /// A mention of `<ACTION>` in prose: a block that never closed and holds no call, or
    /// a closed one with no element in it. Its bytes are text; the diagnostic is warning
    /// `marker_in_prose`.
    Prose(Diagnostic),
}

impl Built {
    #[cfg(test)]
    fn block(self) -> ActionBlock {
        match self {
            Built::Block(b) => b,
            Built::Prose(d) => panic!("prose mention: {d:?}"),
        }
    }
}

/// Builds the [`ActionBlock`] of a block the scanner closed.
pub(crate) fn build_block(
    closed: &ClosedBlock,
    open: OpenBlock,
    index: usize,
    config: &Config,
) -> Built {
    build_block_with(closed, open, index, config, Paths::ALL, None)
}

/// [`build_block`] for a block nothing of which has streamed yet: when its body is read
/// directly, its argument events go to `events` (`Direct::stream_events`)
/// before the block is returned, and the second value is `true`; else nothing goes there
/// and the caller streams the block itself.
pub(crate) fn build_block_streaming(
    closed: &ClosedBlock,
    open: OpenBlock,
    index: usize,
    config: &Config,
    events: &mut dyn FnMut(crate::Event<'_>),
) -> (Built, bool) {
    let mut streamed = false;
    let built = build_block_with(
        closed,
        open,
        index,
        config,
        Paths::ALL,
        Some((events, &mut streamed)),
    );
    (built, streamed)
}

/// Where [`build_block_streaming`] sends the argument events of a block read directly, and
/// the flag it sets when it did.
type StreamTo<'e> = (&'e mut dyn FnMut(crate::Event<'_>), &'e mut bool);

/// Which ways of reading a closed, well-formed body [`build_block_with`] may try before the
/// full pre-scan (all of them but in tests that check the ways agree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Paths {
    /// [`read_direct`]: the plain-subset tokenizer, values built without a DOM.
    direct: bool,
    /// [`clean_document`] and roxmltree on the body as it is.
    clean: bool,
}

impl Paths {
    const ALL: Paths = Paths {
        direct: true,
        clean: true,
    };
}

/// True when the first thing in `body` (blanks and a leading code fence line aside) is an
/// element's start tag.
fn starts_with_element(body: &str, fences: &[Range<usize>]) -> bool {
    let mut at = body.len() - body.trim_start_matches([' ', '\t', '\n', '\r']).len();
    if let Some(f) = fences.first()
        && f.start <= at
        && f.end > at
    {
        at = f.end;
        at += body[at..].len() - body[at..].trim_start_matches([' ', '\t', '\n', '\r']).len();
    }
    let rest = &body.as_bytes()[at..];
    rest.first() == Some(&b'<')
        && rest
            .get(1)
            .is_some_and(|&c| c >= 0x80 || c == b'_' || c.is_ascii_alphabetic())
}

/// True when the body of `closed` holds an element, as far as a closed block's reading
/// goes: it begins with one ([`starts_with_element`], the rule the streamer applies, so a
/// block whose calls may have streamed is always one), or a start tag complete as the
/// pre-scan reads it (`<name>`, `<name/>`, attributes with quoted values) stands anywhere
/// in it outside CDATA sections and comments (`regions`, in raw offsets). A closed block
/// without one is a prose mention. The common case, a body that begins with its first
/// call, is told by its first bytes.
fn holds_element(closed: &ClosedBlock, fences: &[Range<usize>], regions: &[RegionRef]) -> bool {
    let raw: &str = &closed.raw;
    let body = closed.body.clone();
    if starts_with_element(&raw[body.clone()], fences) {
        return true;
    }
    let b = &raw.as_bytes()[..body.end];
    let mut regions = regions.iter().peekable();
    let mut at = body.start;
    while let Some(lt) = memchr::memchr(b'<', &b[at..]).map(|i| at + i) {
        while regions.next_if(|r| r.full.end <= lt).is_some() {}
        if let Some(r) = regions.peek().filter(|r| r.full.start <= lt) {
            at = r.full.end.max(lt + 1);
            continue;
        }
        if start_tag_at(raw, lt, body.end).is_some() {
            return true;
        }
        at = lt + 1;
    }
    false
}

/// [`build_block`]; `paths` says which fast ways to read a body as it is are tried before
/// the full pre-scan, in order: [`read_direct`], then [`clean_document`] and roxmltree.
fn build_block_with(
    closed: &ClosedBlock,
    open: OpenBlock,
    index: usize,
    config: &Config,
    paths: Paths,
    events: Option<StreamTo<'_>>,
) -> Built {
    let mut diags = open.diagnostics;
    let at_eof = matches!(closed.end, BlockEnd::Eof | BlockEnd::Cut);
    let cut = closed.end == BlockEnd::Cut;
    let here = Where {
        closed,
        start: open.start,
    };
    if let Some(fence) = closed.fence {
        diags.push(Diagnostic::warning(
            codes::FENCED_BLOCK,
            fence,
            "ACTION block inside a fenced code block: read as a call",
        ));
    }
    if index > 0 {
        diags.push(Diagnostic::warning(
            codes::EXTRA_ACTION_BLOCK,
            closed.span,
            format!(
                "ACTION block {} of this output: only the first block runs by default",
                index + 1
            ),
        ));
    }
    if closed.dropped > 0 {
        if at_eof {
            diags.push(unterminated(closed, "a block larger than the limit"));
        }
        diags.push(Diagnostic::error(
            codes::BLOCK_TOO_LARGE,
            closed.span,
            format!(
                "ACTION block of {} bytes exceeds the limit of {}; its content was dropped",
                closed.span.len(),
                config.max_block_bytes
            ),
        ));
        return Built::Block(finish(closed, index, Vec::new(), diags, ByteString::new()));
    }
    let raw = &closed.raw;
    let body_range = closed.body.clone();
    let body = &raw[body_range.clone()];
    if &raw[..body_range.start] != CANONICAL_OPEN {
        diags.push(Diagnostic::warning(
            codes::NONCANONICAL_TAG,
            here.raw_span(0..body_range.start),
            format!(
                "open tag '{}' should be written {CANONICAL_OPEN}",
                &raw[..body_range.start]
            ),
        ));
    }
    if !at_eof && &raw[body_range.end..] != CANONICAL_CLOSE {
        diags.push(Diagnostic::warning(
            codes::NONCANONICAL_TAG,
            here.raw_span(body_range.end..raw.len()),
            format!(
                "close tag '{}' should be written {CANONICAL_CLOSE}",
                &raw[body_range.end..]
            ),
        ));
    }
    let (first_fence, last_fence) = fences_in_body(body);
    let fences: Vec<Range<usize>> = first_fence.into_iter().chain(last_fence).collect();
    if let Some(f) = fences.first() {
        diags.push(Diagnostic::warning(
            codes::CODE_FENCE,
            here.body_span(f.clone()),
            "markdown code fence inside the ACTION block ignored",
        ));
    }
    if !at_eof && !holds_element(closed, &fences, &open.regions) {
        // `Write <ACTION> to start a block and </ACTION> to end it.`: two tags in prose.
        return Built::Prose(prose_mention(
            closed,
            "an <ACTION> tag and its close tag with no element between them hold no tool call: read as prose",
        ));
    }
    let max_depth = config.max_depth.min(DEPTH_CAP);
    let closed_clean = !at_eof && fences.is_empty();
    // The common case first: a well-formed body in the plain subset is read straight from
    // its text, with no copy of the body and no DOM (the decoder's cost
    // over roxmltree alone).
    if paths.direct
        && closed_clean
        && let Some(direct) = read_direct(
            raw,
            body_range.clone(),
            &closed.offsets,
            max_depth,
            config.max_nodes,
            events.is_some(),
        )
    {
        report_repairs(direct.repairs(), &here, &mut diags);
        if let Some((events, streamed)) = events {
            *streamed = direct.stream_events(raw, &closed.offsets, events);
        }
        return Built::Block(finish_block(
            closed,
            index,
            direct.calls,
            diags,
            raw.clone(),
        ));
    }
    let regions: Vec<RegionRef> = open
        .regions
        .iter()
        .map(|r| RegionRef {
            kind: r.kind,
            full: r.full.start - body_range.start..r.full.end - body_range.start,
            content: r.content.start - body_range.start..r.content.end - body_range.start,
            closed: r.closed,
        })
        .collect();
    if paths.clean
        && closed_clean
        && let Some(clean) = clean_document(body, &regions, max_depth)
        && let Ok(document) =
            roxmltree::Document::parse_with_options(&clean.doc, parsing_options(config))
    {
        let calls = read_calls(&clean, &document, &here, &mut diags);
        return Built::Block(finish_block(closed, index, calls, diags, raw.clone()));
    }
    let prepared = prescan(body, &regions, at_eof, max_depth, &fences);
    if at_eof {
        // A block the stream ended in is prose when its body does not begin
        // with an element (`an <ACTION> block with a tag such as <X> inside`) or holds no
        // element at all; otherwise it runs only when every call in it closed, the body
        // does not end inside an element's tag and the stream was not cut. A tag the body
        // ends in (`…</write_file><delete_all`) is a call being written when the stream
        // ended, as much as a call element left open one byte later.
        let (closed_calls, open_call, cut_tag) = match &prepared {
            Ok(p) => (p.closed_calls, p.open_call, p.cut_tag.clone()),
            Err(_) => (0, true, None),
        };
        if !starts_with_element(body, &fences)
            || (closed_calls == 0 && !open_call && cut_tag.is_none())
        {
            return Built::Prose(prose_mention(
                closed,
                "an <ACTION> tag that never closed and holds no tool call: read as prose",
            ));
        }
        let cut_tag = cut_tag.map(|t| {
            format!(
                "the tag '{}', cut off (a tool call the model was still writing)",
                shortened(&body[t])
            )
        });
        let why = if open_call {
            Some("a tool call the model did not finish")
        } else if let Some(tag) = &cut_tag {
            Some(tag.as_str())
        } else if cut {
            Some("a block the stream was cut in (no repair applies to a cut stream)")
        } else {
            None
        };
        if let Some(why) = why {
            diags.push(unterminated(closed, why).with_raw(raw.clone()));
            return Built::Block(finish(closed, index, Vec::new(), diags, raw.clone()));
        }
    }
    let calls = match prepared {
        Err(Refusal::Dtd(at)) => {
            let (span, lc) = here.point(at);
            diags.push(
                Diagnostic::error(
                    codes::MALFORMED_XML,
                    span,
                    format!("document type declarations are not allowed (no DTD, no entity expansion) at {lc}"),
                )
                .with_raw(raw.clone()),
            );
            Vec::new()
        }
        Err(Refusal::TooDeep(at)) => {
            let (span, lc) = here.point(at);
            diags.push(
                Diagnostic::error(
                    codes::NESTING_TOO_DEEP,
                    span,
                    format!("elements nested deeper than {max_depth} levels at {lc}"),
                )
                .with_raw(raw.clone()),
            );
            Vec::new()
        }
        Ok(prepared) => parse_prepared(&prepared, &here, config, at_eof, &mut diags),
    };
    Built::Block(finish_block(closed, index, calls, diags, raw.clone()))
}

/// Warning `marker_in_prose` for a block read as a mention of `<ACTION>` in prose
/// (`message` says what makes it one): an empty span at the tag.
fn prose_mention(closed: &ClosedBlock, message: &'static str) -> Diagnostic {
    Diagnostic::warning(
        codes::MARKER_IN_PROSE,
        Span::new(closed.span.start, closed.span.start),
        message,
    )
}

/// `text` for a message: at most 40 characters, `…` where it was shortened.
fn shortened(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(40) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => Cow::Borrowed(text),
    }
}

/// Error `unterminated_block`: the stream ended before `</ACTION>`, inside `what`; the
/// block yields no call.
fn unterminated(closed: &ClosedBlock, what: &str) -> Diagnostic {
    let how = if closed.end == BlockEnd::Cut {
        "the stream was cut"
    } else {
        "the stream ended"
    };
    Diagnostic::error(
        codes::UNTERMINATED_BLOCK,
        Span::new(closed.span.end, closed.span.end),
        format!("{how} before </ACTION>, in {what}; no call of this block runs"),
    )
}

/// Ends a block that was parsed: warns when it has no call.
fn finish_block(
    closed: &ClosedBlock,
    index: usize,
    calls: Vec<ActionCall>,
    mut diags: Vec<Diagnostic>,
    raw: ByteString,
) -> ActionBlock {
    if calls.is_empty() && !diags.iter().any(Diagnostic::is_error) {
        diags.push(Diagnostic::warning(
            codes::EMPTY_BLOCK,
            closed.span,
            "ACTION block contains no tool call",
        ));
    }
    finish(closed, index, calls, diags, raw)
}

fn parsing_options<'i>(config: &Config) -> roxmltree::ParsingOptions<'i> {
    roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: config.max_nodes,
        ..roxmltree::ParsingOptions::default()
    }
}

/// The calls of a parsed document.
fn read_calls(
    prepared: &Prepared,
    document: &roxmltree::Document<'_>,
    here: &Where<'_>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<ActionCall> {
    let mut reader = TreeReader {
        prepared,
        body_start: here.closed.body.start,
        body: &here.closed.raw[here.closed.body.clone()],
        raw: &here.closed.raw,
        offsets: &here.closed.offsets,
        diagnostics: diags,
    };
    reader.calls(document.root_element())
}

fn element_list(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("<{n}>")).collect();
    names.join(", ")
}

/// The warning for a block the stream ended in, naming the elements that were closed.
fn missing_close(closed: &ClosedBlock, auto_closed: &[String]) -> Diagnostic {
    let message = if auto_closed.is_empty() {
        "the stream ended before </ACTION>; the block was parsed as received".to_owned()
    } else {
        format!(
            "the stream ended before </ACTION>, inside {}; the block was parsed as received and those elements closed",
            element_list(auto_closed)
        )
    };
    Diagnostic::warning(
        codes::MISSING_CLOSE_TAG,
        Span::new(closed.span.end, closed.span.end),
        message,
    )
}

fn finish(
    closed: &ClosedBlock,
    index: usize,
    calls: Vec<ActionCall>,
    mut diagnostics: Vec<Diagnostic>,
    raw: ByteString,
) -> ActionBlock {
    diagnostics.sort_by_key(|d| d.span.start);
    ActionBlock {
        span: closed.span,
        index,
        calls,
        diagnostics,
        raw,
    }
}

/// Reports the pre-scan's repairs, parses the document and reads the calls.
fn parse_prepared(
    prepared: &Prepared,
    here: &Where<'_>,
    config: &Config,
    at_eof: bool,
    diags: &mut Vec<Diagnostic>,
) -> Vec<ActionCall> {
    report_repairs(prepared.repairs.iter().cloned(), here, diags);
    let mut auto_closed: &[String] = &prepared.auto_closed;
    if let [inner @ .., outer] = auto_closed
        && outer.eq_ignore_ascii_case("ACTION")
    {
        // A nested <ACTION> (reported as such) closed by the block's own close tag.
        auto_closed = inner;
    }
    if at_eof {
        diags.push(missing_close(here.closed, auto_closed));
    } else if !auto_closed.is_empty() {
        let body_len = here.closed.body.len();
        diags.push(Diagnostic::warning(
            codes::MISSING_CLOSE_TAG,
            here.body_span(body_len..body_len),
            format!(
                "{} not closed before </ACTION>; closed there",
                element_list(auto_closed)
            ),
        ));
    }
    match roxmltree::Document::parse_with_options(&prepared.doc, parsing_options(config)) {
        Ok(document) => read_calls(prepared, &document, here, diags),
        Err(e) => {
            diags.push(xml_error(&e, prepared, here, config));
            Vec::new()
        }
    }
}

/// The pre-scan's repairs as warnings.
fn report_repairs(
    repairs: impl Iterator<Item = Repair>,
    here: &Where<'_>,
    diags: &mut Vec<Diagnostic>,
) {
    for r in repairs {
        diags.push(Diagnostic::warning(r.code, here.body_span(r.at), r.message));
    }
}

/// The diagnostic for a document roxmltree rejected.
fn xml_error(
    e: &roxmltree::Error,
    prepared: &Prepared,
    here: &Where<'_>,
    config: &Config,
) -> Diagnostic {
    use roxmltree::Error as E;
    let raw = here.closed.raw.clone();
    if matches!(e, E::NodesLimitReached) {
        return Diagnostic::error(
            codes::TOO_MANY_NODES,
            here.closed.span,
            format!("ACTION block has more than {} XML nodes", config.max_nodes),
        )
        .with_raw(raw);
    }
    let doc = prepared.doc.as_str();
    let positional = !matches!(
        e,
        E::NoRootNode
            | E::UnclosedRootNode
            | E::DtdDetected
            | E::AttributesLimitReached
            | E::NamespacesLimitReached
            | E::UnexpectedEndOfStream
    );
    let doc_at = if positional {
        let pos = e.pos();
        doc_offset(doc, pos.row as usize, pos.col as usize)
    } else {
        doc.len() - CANONICAL_CLOSE.len()
    };
    let detail = e.to_string().replace(&format!(" at {}", e.pos()), "");
    let (span, lc) = here.point(prepared.map.body(doc_at));
    Diagnostic::error(codes::MALFORMED_XML, span, format!("{detail} at {lc}")).with_raw(raw)
}

/// The byte offset of 1-based `row` and `col` (in characters) in `doc`.
fn doc_offset(doc: &str, row: usize, col: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..row {
        match memchr::memchr(b'\n', &doc.as_bytes()[line_start..]) {
            Some(i) => line_start += i + 1,
            None => break,
        }
    }
    doc[line_start..]
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(doc.len(), |(i, _)| line_start + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::grammar;
    use crate::prescan::RegionKind;
    use proptest::prelude::*;
    use tam_parse::scan::{BlockView, ScanHandler, Scanner};

    /// Builds every block three ways: the direct reader alone, the clean document and
    /// roxmltree alone, and the full pre-scan; records whether the direct reader read it.
    #[derive(Default)]
    struct BothWays {
        open: OpenBlock,
        pending: Option<usize>,
        pairs: Vec<(Built, Built)>,
        clean: Vec<Built>,
        direct_read: Vec<bool>,
    }

    const DIRECT: Paths = Paths {
        direct: true,
        clean: false,
    };
    const CLEAN: Paths = Paths {
        direct: false,
        clean: true,
    };
    const FULL: Paths = Paths {
        direct: false,
        clean: false,
    };

    impl BothWays {
        /// Scans `input` whole, building each block the three ways.
        fn scan(input: &str) -> BothWays {
            let mut handler = BothWays::default();
            let mut scanner = Scanner::new(grammar(), 1 << 20);
            scanner.feed(input, &mut handler);
            scanner.finish(&mut handler);
            handler
        }
    }

    impl ScanHandler for BothWays {
        fn text(&mut self, _: &str, _: Span) {}

        fn region_opened(&mut self, _: &BlockView<'_>, _: usize, marker: Range<usize>) {
            self.pending = Some(marker.start);
        }

        fn region_closed(
            &mut self,
            _: &BlockView<'_>,
            region: usize,
            content: Range<usize>,
            marker: Range<usize>,
        ) {
            if let Some(start) = self.pending.take() {
                self.open.regions.push(RegionRef {
                    kind: if region == 0 {
                        RegionKind::Cdata
                    } else {
                        RegionKind::Comment
                    },
                    full: start..marker.end,
                    content,
                    closed: true,
                });
            }
        }

        fn block_closed(&mut self, closed: ClosedBlock) {
            let open = std::mem::take(&mut self.open);
            let config = Config::default();
            self.direct_read.push(
                closed.end == BlockEnd::Marker
                    && read_direct(
                        &closed.raw,
                        closed.body.clone(),
                        &closed.offsets,
                        64,
                        1 << 16,
                        false,
                    )
                    .is_some(),
            );
            let fast = build_block_with(&closed, open.clone(), 0, &config, DIRECT, None);
            let clean = build_block_with(&closed, open.clone(), 0, &config, CLEAN, None);
            let full = build_block_with(&closed, open, 0, &config, FULL, None);
            self.clean.push(clean);
            self.pairs.push((fast, full));
        }
    }

    const PIECES: &[&str] = &[
        "<ACTION>",
        "</ACTION>",
        "<t>",
        "</t>",
        "<a>",
        "</a>",
        "<A>",
        "<item>",
        "</item>",
        "<p:x>",
        "</p:x>",
        "<e/>",
        "<e />",
        "<a b='1'>",
        "<a b=\"&\">",
        "<![CDATA[",
        "]]>",
        "]]",
        "<!--",
        "-->",
        "x",
        "中",
        "&",
        "&amp;",
        "&#0;",
        "&#x41;",
        "&lol;",
        "<",
        ">",
        "</",
        "\n",
        " ",
        "<?pi?>",
        "<!DOCTYPE x>",
        "```xml\n",
        "<x:y:z>",
        "<1>",
        "</ t>",
        "<t >",
        "</t >",
        "<_a>",
        "</_a>",
        "&#32;",
        "\r\n",
        "<xmlns>",
        "</xmlns>",
        "<xml>",
        "\u{FEFF}",
        "\u{1}",
        "\u{FFFE}",
        "&#0065;",
        "<item/>",
        "<t\n>",
        "</t\n>",
        "<t/ >",
        "<a>x<b>y</b></a>",
        "<>",
        "</>",
        "<t<a>",
        "<a x='>'>",
        "<![cdata[",
        "<![CDATA[]]>",
        "&lt;&gt;",
        "&#x20;",
        "/>",
    ];

    /// Well-formed bodies, which the fast path takes.
    fn element() -> impl Strategy<Value = String> {
        let name = prop::sample::select(vec!["t", "a", "item", "p:x", "名", "_b"]);
        let text = prop::sample::select(vec![
            "x",
            "中",
            "&amp;",
            " ",
            "\n",
            "<![CDATA[a<b]]>",
            "&#x41;",
            "",
        ]);
        (name.clone(), text)
            .prop_map(|(n, t)| format!("<{n}>{t}</{n}>"))
            .prop_recursive(4, 32, 4, move |inner| {
                (
                    name.clone(),
                    prop::collection::vec(inner, 0..4),
                    prop::bool::ANY,
                )
                    .prop_map(|(n, children, empty)| {
                        if empty && children.is_empty() {
                            format!("<{n}/>")
                        } else {
                            format!("<{n}>{}</{n}>", children.concat())
                        }
                    })
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// On well-formed bodies the fast path applies and agrees with the full pre-scan.
        #[test]
        fn fast_path_takes_well_formed_bodies(elements in prop::collection::vec(element(), 0..4)) {
            let body = elements.concat().replace("p:x", "x");
            let regions: Vec<RegionRef> = Vec::new();
            let has_cdata = body.contains("<![CDATA[");
            let clean = clean_document(&body, &regions, 64);
            // Without CDATA (whose regions the scanner would report) the body is clean.
            prop_assert!(has_cdata || clean.is_some(), "{}", body);
            let input = format!("<ACTION>{body}</ACTION>");
            let handler = BothWays::scan(&input);
            let (fast, full) = &handler.pairs[0];
            prop_assert_eq!(fast, full, "{}", input);
            if elements.is_empty() {
                // No element between the tags: a mention of them in prose.
                prop_assert!(matches!(fast, Built::Prose(_)), "{:?}", fast);
            } else {
                let fast = fast.clone().block();
                prop_assert!(!fast.has_errors(), "{:?}", fast.diagnostics);
            }
        }

        /// The fast path never changes the result: it applies only where the full pre-scan
        /// would change nothing.
        #[test]
        fn fast_path_agrees_with_the_full_pre_scan(
            parts in prop::collection::vec(prop::sample::select(PIECES), 0..30)
        ) {
            let input = format!("<ACTION>{}</ACTION>", parts.concat());
            let handler = BothWays::scan(&input);
            for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
                prop_assert_eq!(fast, full, "{}", input);
                prop_assert_eq!(clean, full, "{}", input);
            }
        }

        /// Calls as models write them (text with references and line ends, CDATA, code
        /// with markup, lists, repeated names, objects) are read by the direct reader, and
        /// its result is the roxmltree paths' to the byte.
        #[test]
        fn direct_reader_reads_what_models_write(
            calls in prop::collection::vec(call(), 0..4),
            between in prop::sample::select(vec!["", "\n", "\r\n  ", " \t"]),
        ) {
            let input = format!("<ACTION>{between}{}{between}</ACTION>", calls.join(between));
            let handler = BothWays::scan(&input);
            prop_assert!(handler.direct_read[0], "not read directly: {}", input);
            let (fast, full) = &handler.pairs[0];
            prop_assert_eq!(fast, full, "{}", input);
            prop_assert_eq!(&handler.clean[0], full, "{}", input);
            if calls.is_empty() {
                // No element between the tags: a mention of them in prose.
                prop_assert!(matches!(fast, Built::Prose(_)), "{:?}", fast);
            } else {
                prop_assert!(!fast.clone().block().has_errors());
            }
        }

        /// Whatever the direct reader reads, the full path reads without any diagnostic
        /// of its body but the repairs inside values that the direct reader makes itself
        /// (`bare_ampersand`, `unescaped_lt`) and `empty_block`: the direct reader takes
        /// no body that needs another repair or a warning. (`fenced_block` is about where
        /// the block stands, a code fence in the prose before it, not about its body.)
        #[test]
        fn direct_reader_takes_only_bodies_without_other_diagnostics(
            parts in prop::collection::vec(prop::sample::select(PIECES), 0..30)
        ) {
            let input = format!("<ACTION>{}</ACTION>", parts.concat());
            let handler = BothWays::scan(&input);
            for ((_, full), direct) in handler.pairs.iter().zip(&handler.direct_read) {
                if *direct && let Built::Block(b) = full {
                    prop_assert!(
                        b.diagnostics.iter().all(|d| [
                            codes::EMPTY_BLOCK,
                            codes::FENCED_BLOCK,
                            codes::BARE_AMPERSAND,
                            codes::UNESCAPED_LT,
                        ]
                        .contains(&d.code)),
                        "{}: {:?}", input, b.diagnostics
                    );
                }
            }
        }
    }

    /// Pieces of code values: text the pre-scan repairs (`<` that begins no tag, a bare
    /// `&`, elements never closed, close tags that match nothing) beside tags that are
    /// elements, references, CDATA and the odd thing the direct reader leaves to the full
    /// path.
    const CODE: &[&str] = &[
        "a < b",
        "&&",
        "&mut x",
        "&amp;",
        "&#60;",
        "Vec<T>",
        "Vec<String>",
        "<T>",
        "</T>",
        "<t>",
        "</t>",
        "<b>x</b>",
        "<br/>",
        "<br />",
        "<br/ >",
        "</div>",
        "</ div>",
        "</div x>",
        "HashMap<K, V>",
        "impl<'a>",
        "<<=",
        "<=",
        "<",
        "&",
        "<item>",
        "</item>",
        "<a b='1'>",
        "<a b='<'>",
        "<a b>",
        "<a b=1>",
        "<a b='1' c>",
        "<p:x>",
        "</p:x>",
        "<xml>",
        "<![CDATA[a<b]]>",
        "<!x",
        "<!-",
        "<?",
        "<!-- c -->",
        "]]>",
        "]]",
        ">",
        "x",
        " ",
        "\n",
        "中",
        "<v>",
        "</v>",
        "</V>",
        "<ACTION>",
        "</c>",
        "<c>",
    ];

    /// The pieces of [`CODE`] the direct reader takes (most of what models write).
    const CODE_TAKEN: &[&str] = &[
        "a < b",
        "&&",
        "&amp;",
        "Vec<T>",
        "<T>",
        "</T>",
        "<t>",
        "</t>",
        "<b>x</b>",
        "<br/>",
        "</div>",
        "</ div>",
        "HashMap<K, V>",
        "impl<'a>",
        "<",
        "&",
        "<item>",
        "</item>",
        "<a b>",
        "<![CDATA[a<b]]>",
        "<!x",
        "x",
        " ",
        "\n",
        "<v>",
        "</v>",
        "</c>",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Values full of code: whatever the direct reader takes, it reads as the full
        /// pre-scan and roxmltree do, warnings (`bare_ampersand`, `unescaped_lt`: the first
        /// place, the count) included.
        #[test]
        fn direct_reader_agrees_on_code_values(
            pieces in prop::bool::ANY.prop_flat_map(|taken| {
                let pieces = prop::sample::select(if taken { CODE_TAKEN } else { CODE });
                prop::collection::vec(prop::collection::vec(pieces, 0..12), 1..4)
            }),
            depth in 0usize..2,
        ) {
            let values = pieces;
            let params: String = values
                .iter()
                .map(|v| {
                    let v = v.concat();
                    if depth == 0 { format!("<v>{v}</v>") } else { format!("<o><v>{v}</v></o>") }
                })
                .collect();
            let input = format!("<ACTION><c>{params}</c></ACTION>");
            let handler = BothWays::scan(&input);
            for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
                prop_assert_eq!(fast, full, "{}", input);
                prop_assert_eq!(clean, full, "{}", input);
            }
        }
    }

    /// Close tags with blanks between `</` and the name, of the elements open (the call
    /// `c`, the parameters `v`, the object `o`), in another case or of nothing open, beside
    /// [`CODE`].
    const SPACED: &[&str] = &[
        "</ v>",
        "</  v >",
        "</\tV>",
        "</ o>",
        "</ O\n>",
        "</ c>",
        "</ C>",
        "</ T>",
        "</ div>",
        "</ ",
        "</\n",
        "</ v",
        "<![CDATA[</ v>]]>",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Close tags with blanks before the name (the pre-scan's `noncanonical_tag` where
        /// they close an open element, text where they close nothing): whatever the direct
        /// reader takes, it reads as the full pre-scan and roxmltree do.
        #[test]
        fn direct_reader_agrees_on_close_tags_with_blanks(
            values in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![prop::sample::select(CODE), prop::sample::select(SPACED)],
                    0..10,
                ),
                1..4,
            ),
            closes in prop::collection::vec(prop::sample::select(&["</v>", "</ v>", "</ V >"][..]), 4),
            depth in 0usize..2,
            call_close in prop::sample::select(&["</c>", "</ c>", "</\tC>"][..]),
        ) {
            let params: String = values
                .iter()
                .zip(&closes)
                .map(|(v, close)| {
                    let v = v.concat();
                    let o_close = close.replace('v', "o").replace('V', "O");
                    if depth == 0 { format!("<v>{v}{close}") } else { format!("<o><v>{v}{close}{o_close}") }
                })
                .collect();
            let input = format!("<ACTION><c>{params}{call_close}</ACTION>");
            let handler = BothWays::scan(&input);
            for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
                prop_assert_eq!(fast, full, "{}", input);
                prop_assert_eq!(clean, full, "{}", input);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Parameters left open before their call's close tag (the pre-scan's
        /// `missing_close_tag`, where no close tag inside matched nothing), the call's close
        /// tag as written, with blanks or in another case, values of code with close tags of
        /// the call inside: whatever the direct reader takes, it reads as the full pre-scan
        /// and roxmltree do.
        #[test]
        fn direct_reader_agrees_on_parameters_left_open(
            values in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        prop::sample::select(CODE),
                        prop::sample::select(SPACED),
                        prop::sample::select(&["</C>", "<c>", "</ c >", "<c/>"][..]),
                    ],
                    0..8,
                ),
                1..4,
            ),
            closed in prop::collection::vec(prop::bool::ANY, 4),
            depth in 0usize..2,
            call_close in prop::sample::select(&["</c>", "</ c>", "</C>", "</\tC >"][..]),
        ) {
            let params: String = values
                .iter()
                .zip(&closed)
                .map(|(v, closed)| {
                    let v = v.concat();
                    let close = if *closed { "</v>" } else { "" };
                    if depth == 0 { format!("<v>{v}{close}") } else { format!("<o><v>{v}{close}</o>") }
                })
                .collect();
            let input = format!("<ACTION><c>{params}{call_close}</ACTION>");
            let handler = BothWays::scan(&input);
            for ((fast, full), clean) in handler.pairs.iter().zip(&handler.clean) {
                prop_assert_eq!(fast, full, "{}", input);
                prop_assert_eq!(clean, full, "{}", input);
            }
        }
    }

    #[test]
    fn direct_reader_takes_code() {
        for value in [
            "fn f(a: &str) -> bool { a.len() < 3 && b > 0 }",
            "let v: Vec<usize> = Vec::with_capacity(8); // Vec<u8> &amp; &lt;",
            "let m: HashMap<String, bool> = HashMap::new(); impl<'a> X<'a> {}",
            "x <<= 2; y &= 0xff; if b[i] < b'<' { n += 1; }",
            "s = \"</div>\"; Box<dyn Fn(&T) -> Option<&U>>",
            // Elements never closed cost no depth: more of them than `max_depth` (64).
            &"let v: Vec<u8> = x;\n".repeat(100),
        ] {
            let input = format!(
                "<ACTION><write_to_file><path>a.rs</path><content>\n{value}</content></write_to_file></ACTION>"
            );
            let handler = BothWays::scan(&input);
            assert!(handler.direct_read[0], "not read directly: {input}");
            let (fast, full) = &handler.pairs[0];
            assert_eq!(fast, full, "{input}");
            let block = fast.clone().block();
            let want = value.trim().replace("&amp;", "&").replace("&lt;", "<");
            assert_eq!(block.calls[0].get_str("content"), Some(want.as_str()));
        }
    }

    /// One call element with parameters as models write them.
    fn call() -> impl Strategy<Value = String> {
        let tool = prop::sample::select(vec!["read_file", "ApplyProjectDiff", "名前", "t"]);
        let key = prop::sample::select(vec!["path", "content", "a", "item", "mode"]);
        let value = prop::sample::select(vec![
            "",
            "src/main.rs",
            "  spaced  ",
            "a &lt; b &amp;&amp; c &gt; d",
            "&#32;edge&#x20;",
            "&#xD;&#10;x",
            "line\r\nnext\rlast",
            "<![CDATA[\nfn main() { if a < b && c > d {} }\n    ]]>",
            "\n  <![CDATA[x]]>  <![CDATA[ y ]]>\n",
            "let s = <b>x</b>;",
            "return <div>{x}</div>;",
            "<item>a</item><item>b &amp; c</item>",
            "\n  <item>a</item>\n  <item/>\n",
            "<mode>x</mode><mode>y</mode><mode>z</mode>",
            "<k><item>1</item></k><k>2</k><k>3</k>",
            "<o><p>1</p><q><![CDATA[2]]></q></o>",
            // Code, which the pre-scan repairs the same way everywhere.
            "if a < b && c > d { x(&y) }",
            "let v: Vec<String> = HashMap<K, V>::new();",
            "impl<'a> Iterator for S<'a> { a <<= 2; b &= c; }",
            "s = \"</div>\"; t = \"<br/ >\";",
            "for i in 0..n { if b[i] < b'<' { c += 1; } } // &amp; &lt;",
            "<e/>",
            "中文 ＦＦ",
            "&#0065;&#x4E2D;",
        ]);
        let param = (key, value).prop_map(|(k, v)| {
            if v.is_empty() {
                format!("<{k}/>")
            } else {
                format!("<{k}>{v}</{k}>")
            }
        });
        (tool, prop::collection::vec(param, 0..5), prop::bool::ANY).prop_map(
            |(tool, params, spaced)| {
                let sep = if spaced { "\n  " } else { "" };
                format!("<{tool}>{sep}{}{sep}</{tool}>", params.join(sep))
            },
        )
    }

    #[test]
    fn doc_offsets_count_characters() {
        assert_eq!(doc_offset("ab\n文字x", 2, 3), 3 + 6);
        assert_eq!(doc_offset("ab", 1, 1), 0);
        assert_eq!(doc_offset("ab", 5, 9), 2);
    }
}
