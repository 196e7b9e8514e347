//! The output of `tam decode`: one JSON object per line, flushed per event.
//!
//! ```text
//! {"type":"text","text":"I'll read it.\n"}
//! {"type":"tool_calls","protocol":"tam","span":[14,95],"calls":[{"tool":"File.Read","args":{"path":"/tmp/a"}}],"diagnostics":[]}
//! {"type":"diagnostic","severity":"error","code":"unterminated_block","message":"…","span":[96,130]}
//! ```
//!
//! Each line is the event's own serde form: `tam::Event` serializes as its
//! `tam decode` line (feature `serde` of action-xml; spans, protocols and diagnostics by their
//! own impls, the call shape `{"tool","args"}` built there from the blocks' calls). This
//! module only chooses which events get a line and whether diagnostics keep `raw`:
//!
//! * an empty text event writes nothing; text events that touch are one line, written
//!   when something else is or when the delta is done (not one line per event: a model
//!   repeating a quoted marker would get a line per marker); reasoning (a `<think>`
//!   section of the reply) is `{"type":"reasoning","text":S}`, written like text;
//! * without `--progress`, `block_start`, `reasoning_start`, `reasoning_end` (each with
//!   its `span`: the tags), `command_seen` and the argument lines
//!   (`call_start`, `param_start`, `param_text`, `param_end`, `call_end`) are not written;
//!   with it they are, each with its `protocol` (`command_seen`: `call`, `tool`, `span`;
//!   `call_start`: `index`, `tool`, `span`; `param_start`: `key`, `span`; `param_text`:
//!   `text`, `span`; `param_end`: `span`; `call_end`: `index`, `span`);
//! * a diagnostic's `raw` (the model's text it is about: an unterminated block, stray
//!   text, an orphan entry) is written only with `--with-raw`. Without it, an event whose
//!   diagnostics carry `raw` is written from a copy without it (only such events are
//!   copied: the common line is serialized straight from the decoder's event);
//! * at most [`PER_CODE`] diagnostics of one code are written per stream, on their own
//!   lines and inside `tool_calls` lines alike: a model that repeats a marker thousands of
//!   times would otherwise get a warning line for each (15 times the size of its text).
//!   At the end, one `diagnostics_suppressed` warning per code says how many more there
//!   were. Text and blocks are never left out.

use std::collections::BTreeMap;
use std::io::{self, Write};

use tam::{Code, Diagnostic, Span};

/// Diagnostics of one code written per stream, at most.
pub(crate) const PER_CODE: usize = 16;

/// The warning that counts the diagnostics of a code left out.
const DIAGNOSTICS_SUPPRESSED: Code = Code::new("diagnostics_suppressed");

/// What to write besides text, tool calls and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extras {
    /// Write `block_start`, `command_seen` and the argument lines.
    pub progress: bool,
    /// Write a diagnostic's `raw` text when it has one.
    pub raw: bool,
}

/// Writes decoder events as JSON lines to `out`, flushing after each line.
#[derive(Debug)]
pub(crate) struct NdjsonWriter<W: Write> {
    out: W,
    extras: Extras,
    /// Per code: diagnostics seen, and the span of the last one left out.
    seen: BTreeMap<Code, (usize, Span)>,
    /// Text (or, when true, reasoning) not written yet: adjacent pieces decided by one
    /// delta are one line.
    pending: Option<(bool, String, Span)>,
}

impl<W: Write> NdjsonWriter<W> {
    /// A writer to `out` (give it a buffered writer: each line is written whole, then
    /// flushed).
    pub(crate) fn new(out: W, extras: Extras) -> Self {
        NdjsonWriter {
            out,
            extras,
            seen: BTreeMap::new(),
            pending: None,
        }
    }

    /// Writes the line of `event`, if it has one, and flushes.
    pub(crate) fn write_event(&mut self, event: &tam::Event<'_>) -> io::Result<()> {
        let written = match event {
            tam::Event::Text { text, .. } | tam::Event::Reasoning { text, .. } => !text.is_empty(),
            tam::Event::TamBlock(_) | tam::Event::ActionBlock(_) | tam::Event::Diagnostic(_) => {
                true
            }
            tam::Event::BlockStart { .. }
            | tam::Event::ReasoningStart { .. }
            | tam::Event::ReasoningEnd { .. }
            | tam::Event::CommandSeen { .. }
            | tam::Event::CallStart { .. }
            | tam::Event::ParamStart { .. }
            | tam::Event::ParamText { .. }
            | tam::Event::ParamEnd { .. }
            | tam::Event::CallEnd { .. } => self.extras.progress,
        };
        if !written {
            return Ok(());
        }
        if let tam::Event::Text { text, span } | tam::Event::Reasoning { text, span } = event {
            let reasoning = matches!(event, tam::Event::Reasoning { .. });
            match &mut self.pending {
                Some((r, pending, at)) if *r == reasoning && at.end == span.start => {
                    pending.push_str(text);
                    at.end = span.end;
                    return Ok(());
                }
                _ => {
                    self.flush_text()?;
                    self.pending = Some((reasoning, text.to_string(), *span));
                    return Ok(());
                }
            }
        }
        if let tam::Event::Diagnostic(d) = event
            && !self.keep(d)
        {
            return Ok(());
        }
        self.flush_text()?;
        let over = match event {
            tam::Event::Diagnostic(_) => false,
            tam::Event::TamBlock(b) => b.diagnostics.iter().fold(false, |o, d| !self.keep(d) | o),
            tam::Event::ActionBlock(b) => {
                b.diagnostics.iter().fold(false, |o, d| !self.keep(d) | o)
            }
            tam::Event::Text { .. }
            | tam::Event::BlockStart { .. }
            | tam::Event::CommandSeen { .. }
            | tam::Event::ReasoningStart { .. }
            | tam::Event::Reasoning { .. }
            | tam::Event::ReasoningEnd { .. }
            | tam::Event::CallStart { .. }
            | tam::Event::ParamStart { .. }
            | tam::Event::ParamText { .. }
            | tam::Event::ParamEnd { .. }
            | tam::Event::CallEnd { .. } => false,
        };
        match self.without_raw(event, over) {
            Some(copy) => self.write_line(&copy),
            None => self.write_line(event),
        }
    }

    /// Writes the text held (call it when a delta is done: text is written once per
    /// delta at the latest).
    pub(crate) fn flush_text(&mut self) -> io::Result<()> {
        let Some((reasoning, text, span)) = self.pending.take() else {
            return Ok(());
        };
        let text = std::borrow::Cow::Owned(text);
        if reasoning {
            self.write_line(&tam::Event::Reasoning { text, span })
        } else {
            self.write_line(&tam::Event::Text { text, span })
        }
    }

    /// Counts `d`; false when its code has had [`PER_CODE`] lines already.
    fn keep(&mut self, d: &Diagnostic) -> bool {
        let (count, last) = self.seen.entry(d.code).or_insert((0, d.span));
        *count += 1;
        if *count > PER_CODE {
            *last = d.span;
            return false;
        }
        true
    }

    /// Ends the stream's output: one `diagnostics_suppressed` warning per code that had
    /// more than [`PER_CODE`] diagnostics.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.flush_text()?;
        let seen = std::mem::take(&mut self.seen);
        for (code, (count, last)) in seen.into_iter().filter(|(_, (n, _))| *n > PER_CODE) {
            let note = Diagnostic::warning(
                DIAGNOSTICS_SUPPRESSED,
                last,
                format!(
                    "{} more '{}' diagnostics were not written (at most {PER_CODE} of one code are); the last at this span",
                    count - PER_CODE,
                    code.as_str()
                ),
            );
            self.write_line(&tam::Event::Diagnostic(note))?;
        }
        Ok(())
    }

    /// Writes a diagnostic about the input itself (a malformed SSE or delta line) and
    /// flushes.
    pub(crate) fn write_diagnostic(&mut self, diagnostic: &Diagnostic) -> io::Result<()> {
        self.write_event(&tam::Event::Diagnostic(diagnostic.clone()))
    }

    /// A copy of `event` without its diagnostics' `raw` (when it has one and `--with-raw`
    /// was not given) and, when `over`, without the diagnostics whose code is past
    /// [`PER_CODE`]; `None` when `event` is written as it is.
    fn without_raw(&self, event: &tam::Event<'_>, over: bool) -> Option<tam::Event<'static>> {
        let keep_raw = self.extras.raw;
        if keep_raw && !over {
            return None;
        }
        let seen = &self.seen;
        let changes = |diagnostics: &[Diagnostic]| {
            over || (!keep_raw && diagnostics.iter().any(|d| d.raw.is_some()))
        };
        let strip = |diagnostics: &mut Vec<Diagnostic>| {
            if over {
                // The first PER_CODE of a code were written; this block's are past them
                // when the count (which includes this block's) is over.
                let mut left: BTreeMap<Code, usize> = BTreeMap::new();
                for d in diagnostics.iter() {
                    *left.entry(d.code).or_default() += 1;
                }
                diagnostics.retain(|d| {
                    let total = seen.get(&d.code).map_or(0, |s| s.0);
                    let n = left.get_mut(&d.code).expect("counted above");
                    // This one is number `total - n + 1` of its code.
                    let number = total + 1 - *n;
                    *n -= 1;
                    number <= PER_CODE
                });
            }
            if !keep_raw {
                for diagnostic in diagnostics {
                    diagnostic.raw = None;
                }
            }
        };
        match event {
            tam::Event::Diagnostic(diagnostic) if !keep_raw && diagnostic.raw.is_some() => {
                let mut copy = diagnostic.clone();
                copy.raw = None;
                Some(tam::Event::Diagnostic(copy))
            }
            tam::Event::TamBlock(block) if changes(&block.diagnostics) => {
                let mut copy = block.clone();
                strip(&mut copy.diagnostics);
                Some(tam::Event::TamBlock(copy))
            }
            tam::Event::ActionBlock(block) if changes(&block.diagnostics) => {
                let mut copy = block.clone();
                strip(&mut copy.diagnostics);
                Some(tam::Event::ActionBlock(copy))
            }
            tam::Event::Text { .. }
            | tam::Event::Reasoning { .. }
            | tam::Event::ReasoningStart { .. }
            | tam::Event::ReasoningEnd { .. }
            | tam::Event::TamBlock(_)
            | tam::Event::ActionBlock(_)
            | tam::Event::Diagnostic(_)
            | tam::Event::BlockStart { .. }
            | tam::Event::CommandSeen { .. }
            | tam::Event::CallStart { .. }
            | tam::Event::ParamStart { .. }
            | tam::Event::ParamText { .. }
            | tam::Event::ParamEnd { .. }
            | tam::Event::CallEnd { .. } => None,
        }
    }

    fn write_line(&mut self, event: &tam::Event<'_>) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, event)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::Value;
    use tam::Protocol;
    use tam::Span;

    use super::*;

    fn lines(extras: Extras, events: &[tam::Event<'_>]) -> Vec<Value> {
        let mut writer = NdjsonWriter::new(Vec::new(), extras);
        for event in events {
            writer.write_event(event).unwrap();
        }
        String::from_utf8(writer.out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn block_progress_is_written_only_when_asked() {
        let events = [
            tam::Event::BlockStart {
                protocol: Protocol::Action,
                span: Span::new(3, 11),
            },
            tam::Event::CommandSeen {
                call: 2,
                tool: "File.Read".into(),
                span: Span::new(20, 40),
            },
            tam::Event::CallStart {
                protocol: Protocol::Action,
                index: 0,
                tool: "write".into(),
                span: Span::new(41, 48),
            },
            tam::Event::ParamStart {
                protocol: Protocol::Tam,
                key: Cow::Borrowed("path"),
                span: Span::new(49, 53),
            },
            tam::Event::ParamText {
                protocol: Protocol::Tam,
                text: Cow::Borrowed("a\"b"),
                span: Span::new(63, 66),
                cdata: false,
            },
            tam::Event::ParamEnd {
                protocol: Protocol::Tam,
                span: Span::new(49, 75),
            },
            tam::Event::CallEnd {
                protocol: Protocol::Action,
                index: 0,
                span: Span::new(41, 90),
            },
        ];
        assert!(lines(Extras::default(), &events).is_empty());
        let progress = Extras {
            progress: true,
            raw: false,
        };
        assert_eq!(
            lines(progress, &events),
            [
                serde_json::json!({"type": "block_start", "protocol": "action", "span": [3, 11]}),
                serde_json::json!({"type": "command_seen", "protocol": "tam", "call": 2, "tool": "File.Read", "span": [20, 40]}),
                serde_json::json!({"type": "call_start", "protocol": "action", "index": 0, "tool": "write", "span": [41, 48]}),
                serde_json::json!({"type": "param_start", "protocol": "tam", "key": "path", "span": [49, 53]}),
                serde_json::json!({"type": "param_text", "protocol": "tam", "text": "a\"b", "span": [63, 66]}),
                serde_json::json!({"type": "param_end", "protocol": "tam", "span": [49, 75]}),
                serde_json::json!({"type": "call_end", "protocol": "action", "index": 0, "span": [41, 90]}),
            ]
        );
    }

    #[test]
    fn empty_text_writes_nothing_and_raw_needs_its_flag() {
        let diagnostic = Diagnostic::error(
            tam::Code::UNTERMINATED_BLOCK,
            Span::new(0, 9),
            "never closed",
        )
        .with_raw("<|[REQUE");
        let events = [
            tam::Event::Text {
                text: Cow::Borrowed(""),
                span: Span::new(0, 0),
            },
            tam::Event::Diagnostic(diagnostic),
        ];
        let plain = lines(Extras::default(), &events);
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].get("raw"), None);
        let with_raw = lines(
            Extras {
                progress: false,
                raw: true,
            },
            &events,
        );
        assert_eq!(with_raw[0]["raw"], "<|[REQUE");
    }

    #[test]
    fn a_blocks_diagnostics_keep_raw_only_with_its_flag() {
        let orphan = Diagnostic::error(
            tam::Code::ORPHAN_PARAMETER,
            Span::new(40, 60),
            "parameter 'x9' belongs to no call",
        )
        .with_raw("x9:「始」1「末」");
        let call = tam::TamCall::new(
            0,
            "File.Read",
            vec![tam::TamParam::new("file_path", "/a", Span::new(20, 39))],
            Span::new(0, 19),
        );
        let block = tam::TamBlock::new(Span::new(0, 80), vec![call], vec![orphan], "…");
        let events = [tam::Event::TamBlock(block)];
        let mut writer = NdjsonWriter::new(Vec::new(), Extras::default());
        writer.write_event(&events[0]).unwrap();
        assert_eq!(
            String::from_utf8(writer.out).unwrap(),
            concat!(
                r#"{"type":"tool_calls","protocol":"tam","span":[0,80],"#,
                r#""calls":[{"tool":"File.Read","args":{"file_path":"/a"}}],"#,
                r#""diagnostics":[{"severity":"error","code":"orphan_parameter","#,
                r#""message":"parameter 'x9' belongs to no call","span":[40,60]}]}"#,
                "\n"
            )
        );
        let with_raw = lines(
            Extras {
                progress: false,
                raw: true,
            },
            &events,
        );
        assert_eq!(with_raw[0]["diagnostics"][0]["raw"], "x9:「始」1「末」");
    }
}
