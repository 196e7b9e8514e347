//! ACTION blocks and their calls, and how a closed block becomes them: pre-scan and
//! repairs, roxmltree, then the tree to calls.

use std::ops::Range;

use tam_parse::scan::{BlockEnd, ClosedBlock};
use tam_parse::{ByteString, Diagnostic, Span};

use crate::call::ActionBlock;
use crate::codes;
use crate::config::Config;
use crate::fence::fences_in_body;
use crate::position::Cursor;
use crate::prescan::{Refusal, RegionRef, clean_document, prescan};
use crate::tags::start_tag_at;
use crate::tree::read_direct;
use crate::xml_chars::trim_xml_start;

mod report;
#[cfg(test)]
mod tests;

use report::{
    finish, finish_block, parse_prepared, parsing_options, prose_mention, read_calls,
    report_repairs, shortened, unterminated,
};

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
    /// The block is a call element written without `<ACTION>`: the raw text is the
    /// element, and the body given is all of it.
    pub bare: bool,
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
    let mut at = body.len() - trim_xml_start(body).len();
    if let Some(f) = fences.first()
        && f.start <= at
        && f.end > at
    {
        at = f.end;
        at += body[at..].len() - trim_xml_start(&body[at..]).len();
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
            if open.bare {
                "call element without <ACTION> inside a fenced code block: read as a call"
            } else {
                "ACTION block inside a fenced code block: read as a call"
            },
        ));
    }
    if open.bare {
        let tag = closed.raw.find('>').map_or(0, |i| i + 1);
        diags.push(Diagnostic::warning(
            codes::MISSING_ACTION_WRAPPER,
            closed.offsets.span(0..tag),
            format!(
                "call element '{}' written without <ACTION> around it: read as a one-call ACTION block",
                &closed.raw[..tag]
            ),
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
    if !open.bare && &raw[..body_range.start] != CANONICAL_OPEN {
        diags.push(Diagnostic::warning(
            codes::NONCANONICAL_TAG,
            here.raw_span(0..body_range.start),
            format!(
                "open tag '{}' should be written {CANONICAL_OPEN}",
                &raw[..body_range.start]
            ),
        ));
    }
    if !open.bare && !at_eof && &raw[body_range.end..] != CANONICAL_CLOSE {
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
