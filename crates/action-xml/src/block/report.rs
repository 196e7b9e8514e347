//! What a block's reading reports: prose mentions, cut blocks, repairs, and XML errors
//! placed at their line and column in the model's output.

use std::borrow::Cow;

use tam_parse::scan::{BlockEnd, ClosedBlock};
use tam_parse::{ByteString, Diagnostic, Span};

use super::{CANONICAL_CLOSE, Where};
use crate::call::{ActionBlock, ActionCall};
use crate::codes;
use crate::config::Config;
use crate::prescan::{Prepared, Repair};
use crate::tree::TreeReader;

/// Warning `marker_in_prose` for a block read as a mention of `<ACTION>` in prose
/// (`message` says what makes it one): an empty span at the tag.
pub(super) fn prose_mention(closed: &ClosedBlock, message: &'static str) -> Diagnostic {
    Diagnostic::warning(
        codes::MARKER_IN_PROSE,
        Span::new(closed.span.start, closed.span.start),
        message,
    )
}

/// `text` for a message: at most 40 characters, `…` where it was shortened.
pub(super) fn shortened(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(40) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => Cow::Borrowed(text),
    }
}

/// Error `unterminated_block`: the stream ended before `</ACTION>`, inside `what`; the
/// block yields no call.
pub(super) fn unterminated(closed: &ClosedBlock, what: &str) -> Diagnostic {
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
pub(super) fn finish_block(
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

pub(super) fn parsing_options<'i>(config: &Config) -> roxmltree::ParsingOptions<'i> {
    roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: config.max_nodes,
        ..roxmltree::ParsingOptions::default()
    }
}

/// The calls of a parsed document.
pub(super) fn read_calls(
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

pub(super) fn element_list(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("<{n}>")).collect();
    names.join(", ")
}

/// The warning for a block the stream ended in, naming the elements that were closed.
pub(super) fn missing_close(closed: &ClosedBlock, auto_closed: &[String]) -> Diagnostic {
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

pub(super) fn finish(
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
pub(super) fn parse_prepared(
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
pub(super) fn report_repairs(
    repairs: impl Iterator<Item = Repair>,
    here: &Where<'_>,
    diags: &mut Vec<Diagnostic>,
) {
    for r in repairs {
        diags.push(Diagnostic::warning(r.code, here.body_span(r.at), r.message));
    }
}

/// The diagnostic for a document roxmltree rejected.
pub(super) fn xml_error(
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
pub(super) fn doc_offset(doc: &str, row: usize, col: usize) -> usize {
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
