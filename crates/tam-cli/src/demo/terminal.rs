//! How the demo shows an agent run: the model's prose as it streams, each block's calls
//! when the block closes, each call's end and each observation, with colour on a
//! terminal.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{Map, Value};
use tam::Event;
use tool_dispatch::{
    AgentEvent, AgentOutcome, CallOutcome, CallStatus, Protocol, StopReason, ToolCall,
};

/// At most this many characters of an argument value are shown.
const VALUE_PREVIEW_CHARS: usize = 48;

/// A text style, as an ANSI SGR code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Dim,
    Bold,
    Call,
    Good,
    Bad,
    Warn,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Dim => "2",
            Style::Bold => "1",
            Style::Call => "36",
            Style::Good => "32",
            Style::Bad => "31",
            Style::Warn => "33",
        }
    }
}

/// Prints agent events to `out`. The first write error stops the printing and is kept.
#[derive(Debug)]
pub(crate) struct Printer<W: Write> {
    out: W,
    color: bool,
    /// Whether the cursor is at the start of a line.
    at_line_start: bool,
    failure: Option<io::Error>,
}

impl<W: Write> Printer<W> {
    /// A printer to `out`, with ANSI colours when `color`.
    pub(crate) fn new(out: W, color: bool) -> Self {
        Printer {
            out,
            color,
            at_line_start: true,
            failure: None,
        }
    }

    /// The first write error, if any.
    pub(crate) fn into_failure(self) -> Option<io::Error> {
        self.failure
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("\x1b[{}m{text}\x1b[0m", style.code())
        } else {
            text.to_owned()
        }
    }

    /// Writes `text` as it is and flushes, so streamed prose shows at once.
    fn write(&mut self, text: &str) {
        if self.failure.is_some() || text.is_empty() {
            return;
        }
        let written = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
        match written {
            Ok(()) => self.at_line_start = text.ends_with('\n'),
            Err(error) => self.failure = Some(error),
        }
    }

    /// Writes `line` on a line of its own.
    fn line(&mut self, line: &str) {
        if !self.at_line_start {
            self.write("\n");
        }
        self.write(&format!("{line}\n"));
    }

    /// The demo's opening lines.
    pub(crate) fn intro(&mut self, tools: &[String], prompt: &str, tool_list: Option<&str>) {
        let title = self.paint(Style::Bold, "tam demo");
        self.line(&format!(
            "{title}: a scripted model streams token by token; each tool block runs as soon as it closes."
        ));
        let tools = tools.join(", ");
        self.line(&self.paint(Style::Dim, &format!("Tools in scope: {tools}")));
        if let Some(list) = tool_list {
            self.line(&self.paint(Style::Dim, list));
        }
        let user = self.paint(Style::Bold, "User:");
        self.line(&format!("\n{user} {prompt}"));
    }

    /// Prints one event of the run.
    pub(crate) fn event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::RoundStarted { round } => {
                let rule = self.paint(Style::Dim, &format!("── model, round {round} ──"));
                self.line(&format!("\n{rule}"));
            }
            AgentEvent::Decoded(Event::Text { text, .. }) => self.write(&text),
            AgentEvent::BlockClosed {
                kind,
                calls,
                diagnostics,
                executed,
                ..
            } => {
                let protocol = match kind {
                    Protocol::Tam => "TAM",
                    Protocol::Action => "ACTION XML",
                };
                let count = match calls.len() {
                    1 => "1 call".to_owned(),
                    n => format!("{n} calls"),
                };
                self.line(
                    &self.paint(Style::Dim, &format!("  ⚙ {protocol} block closed: {count}")),
                );
                for call in &calls {
                    let shown = format!("    → {}", describe_call(call));
                    self.line(&self.paint(Style::Call, &shown));
                }
                for diagnostic in &diagnostics {
                    let shown = format!(
                        "    ! {} {}: {}",
                        diagnostic.severity, diagnostic.code, diagnostic.message
                    );
                    self.line(&self.paint(Style::Warn, &shown));
                }
                if !executed {
                    self.line(&self.paint(
                        Style::Warn,
                        "    – not run: only the first ACTION block of a reply runs",
                    ));
                }
            }
            AgentEvent::Decoded(Event::Diagnostic(diagnostic)) => {
                let shown = format!(
                    "  ! {} {}: {}",
                    diagnostic.severity, diagnostic.code, diagnostic.message
                );
                self.line(&self.paint(Style::Warn, &shown));
            }
            AgentEvent::CallFinished(outcome) => {
                let (style, shown) = describe_outcome(&outcome);
                self.line(&self.paint(style, &format!("    {shown}")));
            }
            AgentEvent::Observation(observation) => {
                let style = if observation.contains("Error - ") {
                    Style::Bad
                } else {
                    Style::Good
                };
                self.line(&self.paint(style, &format!("    ↳ {observation}")));
            }
            // The demo shows blocks when they close and calls when they finish: a block's
            // start, the argument stream, a call's start and the model's own signals are
            // implied by what follows (the demo's scripted model never cuts or reasons).
            AgentEvent::Decoded(_)
            | AgentEvent::CallStarted { .. }
            | AgentEvent::Reasoning(_)
            | AgentEvent::NativeToolCall(_)
            | AgentEvent::ModelFinished(_)
            | AgentEvent::StreamCut(_) => {}
        }
    }

    /// The closing line.
    pub(crate) fn outro(&mut self, outcome: &AgentOutcome) {
        let refused = outcome
            .calls
            .iter()
            .filter(|call| call.status.is_refusal())
            .count();
        let why = match outcome.stop {
            StopReason::Answer => "the model answered",
            StopReason::ToolExecutionFailed => "the model gave up (TOOL_EXECUTION_FAILED)",
            StopReason::ToolFailed => "a tool failed",
            StopReason::MaxToolCalls => "maxToolCalls was reached",
            StopReason::MaxRounds => "the round limit was reached",
            StopReason::Cancelled => "the run was cancelled",
            _ => "the run ended",
        };
        let summary = format!(
            "── done: {why} after {} rounds; {} calls, {refused} refused ──",
            outcome.rounds,
            outcome.calls.len()
        );
        self.line(&format!("\n{}", self.paint(Style::Dim, &summary)));
    }
}

/// `tool(key="value", …)`, values cut to [`VALUE_PREVIEW_CHARS`].
fn describe_call(call: &ToolCall) -> String {
    let mut shown = format!("{}(", call.tool);
    write_args(&mut shown, &call.args);
    shown.push(')');
    shown
}

fn write_args(out: &mut String, args: &Map<String, Value>) {
    for (index, (key, value)) in args.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        let _ = match value {
            Value::String(text) => write!(out, "{key}={:?}", cut(text)),
            other @ (Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::Array(_)
            | Value::Object(_)) => write!(out, "{key}={}", cut(&other.to_string())),
        };
    }
}

/// `text`, or its first [`VALUE_PREVIEW_CHARS`] characters and `…`.
fn cut(text: &str) -> String {
    match text.char_indices().nth(VALUE_PREVIEW_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// How a finished call is shown.
fn describe_outcome(outcome: &CallOutcome) -> (Style, String) {
    let tool = &outcome.tool;
    match &outcome.status {
        CallStatus::Completed if outcome.is_success() => (
            Style::Good,
            format!(
                "✓ {tool} ran in {:.1} ms",
                outcome.elapsed.as_secs_f64() * 1000.0
            ),
        ),
        CallStatus::Completed => (Style::Bad, format!("✗ {tool} ran and failed")),
        CallStatus::InvalidParameters => {
            (Style::Bad, format!("✗ {tool} refused: invalid parameters"))
        }
        CallStatus::OutOfScope => (
            Style::Bad,
            format!("✗ {tool} refused: not in the agent's scope"),
        ),
        CallStatus::UnknownTool { .. } => (Style::Bad, format!("✗ {tool} refused: unknown tool")),
        CallStatus::LimitReached { max } => (
            Style::Bad,
            format!("✗ {tool} refused: maxToolCalls ({max}) used up"),
        ),
        CallStatus::Skipped => (
            Style::Warn,
            format!("– {tool} skipped: an earlier call of the chain failed"),
        ),
        CallStatus::TimedOut(after) => (
            Style::Bad,
            format!("✗ {tool} timed out after {} ms", after.as_millis()),
        ),
        CallStatus::Panicked(message) => (Style::Bad, format!("✗ {tool} panicked: {message}")),
        CallStatus::Cancelled => (Style::Bad, format!("✗ {tool} cancelled")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn text(text: &str, at: usize) -> AgentEvent {
        AgentEvent::Decoded(Event::Text {
            text: text.to_owned().into(),
            span: tam::Span::new(at, at + text.len()),
        })
    }

    use super::*;

    fn printed(events: Vec<AgentEvent>, color: bool) -> String {
        let mut printer = Printer::new(Vec::new(), color);
        for event in events {
            printer.event(event);
        }
        String::from_utf8(printer.out).unwrap()
    }

    #[test]
    fn calls_start_on_their_own_line_after_streamed_prose() {
        let Value::Object(args) = json!({"path": "a".repeat(60), "n": 3}) else {
            unreachable!()
        };
        let text = printed(
            vec![
                text("Let me", 0),
                text(" look.", 6),
                AgentEvent::BlockClosed {
                    kind: Protocol::Action,
                    span: tam::Span::new(0, 1),
                    calls: vec![ToolCall::new("Read", args)],
                    diagnostics: Vec::new(),
                    executed: true,
                },
                AgentEvent::Observation("Observation: Error - nope".to_owned()),
            ],
            false,
        );
        let expected_value = format!("{}…", "a".repeat(VALUE_PREVIEW_CHARS));
        assert_eq!(
            text,
            format!(
                "Let me look.\n  ⚙ ACTION XML block closed: 1 call\n    → Read(path={expected_value:?}, n=3)\n    ↳ Observation: Error - nope\n"
            )
        );
    }

    #[test]
    fn colour_is_only_added_when_asked() {
        let event = || {
            AgentEvent::Observation(
                "Observation: Tool X executed successfully. Result: 1".to_owned(),
            )
        };
        assert!(!printed(vec![event()], false).contains('\x1b'));
        assert!(printed(vec![event()], true).starts_with("\x1b[32m"));
    }
}
