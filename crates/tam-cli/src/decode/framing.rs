//! The line-framed input modes: `--input deltas` (one JSON string per line) and
//! `--input sse` (an OpenAI `chat.completions` server-sent-event stream).
//!
//! Problems with the framing itself are reported as diagnostic lines whose span is the
//! empty span at the decoded-content offset where they occurred, and reading goes on:
//!
//! | code | severity | when |
//! |---|---|---|
//! | `malformed_delta` | error | a `deltas` line that is not a JSON string (skipped) |
//! | `malformed_sse` | error | an SSE event whose data is not JSON, or whose `choices[0].delta.content` is neither a string nor null (skipped) |
//! | `stream_error` | error | an SSE event carrying an `error` object: the server gave up |
//! | `invalid_utf8` | error | a `deltas` line or an SSE event with bytes that are not UTF-8 (read with U+FFFD in their place) |
//! | `line_too_long` | error | a `deltas` line longer than 8 MiB (skipped) |
//! | `sse_event_too_large` | error | an SSE event (or line) over 8 MiB (skipped up to its blank line) |
//!
//! An SSE line that is neither a comment nor a known field is ignored, as the standard says.

use std::io::{self, Write};

use tam::{Code, Severity};

use tam_model::chunk::{ChunkError, read_chunk};
use tam_model::sse::{SseConfig, SseError, SseEvent, SseReader};
use tam_model::{FinishReason, ModelItem};

use super::Pipeline;
use super::lines::{Flow, Line, MAX_LINE_BYTES};

/// A `deltas` or `sse` line that could not be used.
const MALFORMED_DELTA: Code = Code::new("malformed_delta");
/// An SSE line or event that could not be used.
const MALFORMED_SSE: Code = Code::new("malformed_sse");
/// An SSE event carrying an `error` object.
const STREAM_ERROR: Code = Code::new("stream_error");
/// A line over the length limit.
const LINE_TOO_LONG: Code = Code::new("line_too_long");

/// At most this many characters of a bad line are quoted in a diagnostic.
const PREVIEW_CHARS: usize = 60;

fn preview(text: &str) -> String {
    tam::tam_parse::preview(text, PREVIEW_CHARS)
}

/// The text of a line: the bytes themselves when they are UTF-8, else a lossy copy after
/// an `invalid_utf8` diagnostic.
fn line_text<'a, W: Write>(
    pipeline: &mut Pipeline<W>,
    number: usize,
    bytes: &'a [u8],
) -> io::Result<std::borrow::Cow<'a, str>> {
    let text = String::from_utf8_lossy(bytes);
    if matches!(text, std::borrow::Cow::Owned(_)) {
        pipeline.report(
            Severity::Error,
            Code::INVALID_UTF8,
            format!("input line {number} is not valid UTF-8; it was read with U+FFFD in place of the bad bytes"),
        )?;
    }
    Ok(text)
}

fn report_too_long<W: Write>(
    pipeline: &mut Pipeline<W>,
    number: usize,
    limit: usize,
) -> io::Result<()> {
    pipeline.report(
        Severity::Error,
        LINE_TOO_LONG,
        format!("input line {number} is longer than {limit} bytes and was skipped"),
    )
}

/// `--input deltas`: each line is one delta written as a JSON string; blank lines are
/// ignored.
pub(crate) fn delta_line<W: Write>(pipeline: &mut Pipeline<W>, line: Line<'_>) -> io::Result<Flow> {
    let (number, bytes) = match line {
        Line::Complete { number, bytes } => (number, bytes),
        Line::TooLong { number, limit } => {
            report_too_long(pipeline, number, limit)?;
            return Ok(Flow::Continue);
        }
    };
    let text = line_text(pipeline, number, bytes)?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(Flow::Continue);
    }
    match serde_json::from_str::<String>(text) {
        Ok(delta) => pipeline.feed_text(&delta)?,
        Err(error) => pipeline.report(
            Severity::Error,
            MALFORMED_DELTA,
            format!(
                "input line {number} is not a JSON string ({error}); it was skipped: '{}'",
                preview(text)
            ),
        )?,
    }
    Ok(Flow::Continue)
}

/// `--input sse`: the event stream, read by tool-dispatch's [`SseReader`] (the WHATWG
/// event-stream rules: CR, LF or CRLF line ends, `data:` lines joined by `\n`, comments and
/// other fields ignored, a byte order mark skipped, an event over 8 MiB reported as
/// `sse_event_too_large` and skipped up to its blank line).
///
/// An event's data is a `chat.completions.chunk`: the content delta of its choice with
/// `index` 0 (the first choice when none says) is fed to the decoder; chunks without
/// content (the role chunk, the finish chunk, usage) are skipped. `data: [DONE]` ends the
/// input: nothing after it is read. At the end of the input an event without its blank
/// line is still dispatched (the standard would drop it; a file often lacks the last one).
#[derive(Debug)]
pub(crate) struct SseEvents {
    reader: SseReader,
    /// Events of the last read, handed over in order.
    ready: Vec<Result<SseEvent, SseError>>,
}

impl Default for SseEvents {
    fn default() -> Self {
        SseEvents {
            reader: SseReader::new(SseConfig::default().with_max_event_bytes(MAX_LINE_BYTES)),
            ready: Vec::new(),
        }
    }
}

impl SseEvents {
    /// Reads one chunk of the input.
    pub(crate) fn push<W: Write>(
        &mut self,
        pipeline: &mut Pipeline<W>,
        chunk: &[u8],
    ) -> io::Result<Flow> {
        let mut ready = std::mem::take(&mut self.ready);
        self.reader.feed(chunk, |item| ready.push(item));
        let mut flow = Flow::Continue;
        for item in ready.drain(..) {
            flow = match item {
                Ok(event) => dispatch(pipeline, &event)?,
                Err(error) => {
                    pipeline.report(Severity::Error, Code::new(error.code()), error.to_string())?;
                    Flow::Continue
                }
            };
            if flow == Flow::Stop {
                break;
            }
        }
        ready.clear();
        self.ready = ready;
        Ok(flow)
    }

    /// Ends the input: dispatches an event that had no blank line after it.
    pub(crate) fn finish<W: Write>(self, pipeline: &mut Pipeline<W>) -> io::Result<Flow> {
        match self.reader.finish() {
            Some(event) => dispatch(pipeline, &event),
            None => Ok(Flow::Continue),
        }
    }
}

/// Feeds one event's content delta, or reports why it has none.
fn dispatch<W: Write>(pipeline: &mut Pipeline<W>, event: &SseEvent) -> io::Result<Flow> {
    let number = event.line;
    if event.invalid_utf8 {
        pipeline.report(
            Severity::Error,
            Code::INVALID_UTF8,
            format!("the SSE event at input line {number} is not valid UTF-8; it was read with U+FFFD in place of the bad bytes"),
        )?;
    }
    let data = &event.data;
    if data.trim() == "[DONE]" {
        return Ok(Flow::Stop);
    }
    let chunk = match read_chunk(data) {
        Ok(chunk) => chunk,
        Err(ChunkError::Server(message)) => {
            pipeline.report(
                Severity::Error,
                STREAM_ERROR,
                format!("the stream reported an error at input line {number}: {message}"),
            )?;
            // The model's reply broke off there: a block open at the end is cut.
            pipeline.mark_cut();
            return Ok(Flow::Continue);
        }
        Err(ChunkError::NotJson(error)) => {
            pipeline.report(
                Severity::Error,
                MALFORMED_SSE,
                format!(
                    "the data of the SSE event at input line {number} is not JSON ({error}); it was skipped: '{}'",
                    preview(data)
                ),
            )?;
            return Ok(Flow::Continue);
        }
        Err(other) => {
            pipeline.report(
                Severity::Error,
                MALFORMED_SSE,
                format!("the SSE event at input line {number} was skipped: {other}"),
            )?;
            return Ok(Flow::Continue);
        }
    };
    if let Some(found) = chunk.bad_content {
        pipeline.report(
            Severity::Error,
            MALFORMED_SSE,
            format!(
                "in the SSE event at input line {number}, choices[0].delta.content is {found}, not a string; the event was skipped"
            ),
        )?;
    }
    let mut cut_at_limit = false;
    for item in chunk.items {
        match item {
            ModelItem::Text(content) => pipeline.feed_text(&content)?,
            ModelItem::Finish(FinishReason::Length) => cut_at_limit = true,
            // Reasoning, native tool calls, other finishes and usage are not the reply's
            // text: `tam decode` reads only the text.
            ModelItem::Reasoning(_)
            | ModelItem::ToolCallChunk(_)
            | ModelItem::Finish(_)
            | ModelItem::StopSequence(_)
            | ModelItem::Usage(_) => {}
        }
    }
    if cut_at_limit {
        // Cut at the token limit: a block open at the end yields no call.
        pipeline.mark_cut();
    }
    Ok(Flow::Continue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_cut_at_a_character() {
        let long = "é".repeat(PREVIEW_CHARS + 5);
        let shown = preview(&long);
        assert_eq!(shown.chars().count(), PREVIEW_CHARS + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(preview("short"), "short");
    }
}
