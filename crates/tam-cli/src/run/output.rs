//! What `tam run` prints: the agent's events as text for a person (prose on standard
//! output as it streams, reasoning dimmed on standard error) or as one JSON object per
//! line (`--json`), each flushed at once.

use std::io::{self, IsTerminal, Write};

use serde_json::{Value, json};
use tam::{Diagnostic, Event};
use tool_dispatch::{
    AgentEvent, AgentOutcome, CallOutcome, CallStatus, Error, Protocol, StopReason, StreamCut,
    ToolCall,
};

/// The printer of one run; keeps the first write error.
pub(crate) struct Output {
    json: bool,
    out: io::Stdout,
    failure: Option<io::Error>,
    /// Standard error is mid-line in reasoning.
    in_reasoning: bool,
    /// Reasoning is dimmed (standard error is a terminal and NO_COLOR is unset).
    dim: bool,
}

impl Output {
    pub(crate) fn new(json: bool) -> Self {
        Output {
            json,
            out: io::stdout(),
            failure: None,
            in_reasoning: false,
            dim: io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// Prints one event.
    pub(crate) fn event(&mut self, event: &AgentEvent) {
        if self.json {
            if let Some(line) = event_json(event) {
                self.line(&line.to_string());
            }
            return;
        }
        if !matches!(event, AgentEvent::Reasoning(_)) && self.in_reasoning {
            eprintln!("{}", if self.dim { "\x1b[0m" } else { "" });
            self.in_reasoning = false;
        }
        match event {
            AgentEvent::Decoded(Event::Text { text, .. }) => self.write(text),
            AgentEvent::Reasoning(text) => {
                if !self.in_reasoning {
                    if self.dim {
                        eprint!("\x1b[2m");
                    }
                    self.in_reasoning = true;
                }
                eprint!("{text}");
            }
            AgentEvent::BlockClosed {
                kind,
                calls,
                executed,
                ..
            } => {
                let protocol = match kind {
                    Protocol::Tam => "TAM",
                    Protocol::Action => "ACTION",
                };
                let state = if *executed { "" } else { " (not run)" };
                self.line(&format!(
                    "\n⚙ {protocol} block closed: {} call(s){state}",
                    calls.len()
                ));
            }
            AgentEvent::CallStarted { tool, args } => {
                let call = ToolCall::new(tool.clone(), args.clone());
                self.line(&format!("→ {}({})", call.tool, Value::Object(call.args)));
            }
            AgentEvent::CallFinished(outcome) => self.line(&format!(
                "  {} {} ({:?})",
                if outcome.is_success() { "✓" } else { "✗" },
                outcome.tool,
                outcome.status
            )),
            AgentEvent::Observation(text) => self.line(&format!("  ↳ {text}")),
            AgentEvent::Decoded(Event::Diagnostic(d)) => {
                self.line(&format!("\n! {} {}: {}", d.severity, d.code, d.message));
            }
            AgentEvent::NativeToolCall(chunk) => {
                if let Some(name) = &chunk.name {
                    self.line(&format!("\n! native tool call {name} (not run)"));
                }
            }
            AgentEvent::StreamCut(cut) => {
                self.line(&format!("\n! the reply was cut: {}", cut_text(cut)))
            }
            AgentEvent::RoundStarted { round } if *round > 1 => self.line(""),
            // Not shown: the first round's start, a block's start (its close is), the
            // argument stream (off in `tam run`) and the finish reason (a cut is shown).
            AgentEvent::RoundStarted { .. }
            | AgentEvent::Decoded(_)
            | AgentEvent::ModelFinished(_) => {}
        }
    }

    /// The last line: why the run ended.
    pub(crate) fn done(&mut self, outcome: &AgentOutcome) {
        if self.json {
            let line = json!({
                "type": "done",
                "stop": stop_name(outcome.stop),
                "rounds": outcome.rounds,
                "calls": outcome.calls.len(),
                "answer": outcome.answer,
            });
            self.line(&line.to_string());
        } else {
            self.line("");
        }
    }

    /// The run failed (the model's stream).
    pub(crate) fn failed(&mut self, error: &Error) {
        if self.json {
            let line = json!({"type": "error", "message": error.to_string()});
            self.line(&line.to_string());
        } else {
            self.line("");
        }
    }

    /// The first write error, if any.
    pub(crate) fn finish(self) -> Result<(), crate::error::CliError> {
        match self.failure {
            Some(error) => Err(crate::error::CliError::Write(error)),
            None => Ok(()),
        }
    }

    fn write(&mut self, text: &str) {
        if self.failure.is_none() {
            let mut out = self.out.lock();
            if let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                self.failure = Some(error);
            }
        }
    }

    fn line(&mut self, text: &str) {
        self.write(&format!("{text}\n"));
    }
}

fn cut_text(cut: &StreamCut) -> String {
    match cut {
        StreamCut::Length => "token limit (finish_reason: length)".to_owned(),
        StreamCut::Transport(message) => format!("transport error: {message}"),
    }
}

fn stop_name(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Answer => "answer",
        StopReason::ToolExecutionFailed => "tool_execution_failed",
        StopReason::ToolFailed => "tool_failed",
        StopReason::MaxToolCalls => "max_tool_calls",
        StopReason::MaxRounds => "max_rounds",
        StopReason::Cancelled => "cancelled",
        StopReason::Truncated => "truncated",
    }
}

fn protocol_name(kind: Protocol) -> &'static str {
    match kind {
        Protocol::Tam => "tam",
        Protocol::Action => "action",
    }
}

fn diagnostic_json(d: &Diagnostic) -> Value {
    json!({
        "severity": d.severity.to_string(),
        "code": d.code.as_str(),
        "message": d.message,
        "span": [d.span.start, d.span.end],
    })
}

fn call_json(call: &ToolCall) -> Value {
    json!({"tool": call.tool, "args": call.args})
}

fn status_name(outcome: &CallOutcome) -> &'static str {
    match outcome.status {
        CallStatus::Completed => "completed",
        CallStatus::OutOfScope => "out_of_scope",
        CallStatus::UnknownTool { .. } => "unknown_tool",
        CallStatus::InvalidParameters => "invalid_parameters",
        CallStatus::LimitReached { .. } => "limit_reached",
        CallStatus::Skipped => "skipped",
        CallStatus::TimedOut(_) => "timed_out",
        CallStatus::Panicked(_) => "panicked",
        CallStatus::Cancelled => "cancelled",
    }
}

/// The JSON line of an event (`None` for kinds this version does not know).
fn event_json(event: &AgentEvent) -> Option<Value> {
    Some(match event {
        AgentEvent::RoundStarted { round } => json!({"type": "round_started", "round": round}),
        AgentEvent::Decoded(Event::Text { text, .. }) => json!({"type": "text", "text": text}),
        AgentEvent::Reasoning(text) => json!({"type": "reasoning", "text": text}),
        AgentEvent::Decoded(Event::BlockStart { protocol, span }) => json!({
            "type": "block_started",
            "protocol": protocol_name(*protocol),
            "span": [span.start, span.end],
        }),
        AgentEvent::BlockClosed {
            kind,
            span,
            calls,
            diagnostics,
            executed,
        } => json!({
            "type": "block_closed",
            "protocol": protocol_name(*kind),
            "span": [span.start, span.end],
            "calls": calls.iter().map(call_json).collect::<Vec<_>>(),
            "diagnostics": diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
            "executed": executed,
        }),
        AgentEvent::Decoded(Event::Diagnostic(d)) => {
            let mut line = diagnostic_json(d);
            line["type"] = json!("diagnostic");
            line
        }
        AgentEvent::CallStarted { tool, args } => {
            json!({"type": "call_started", "tool": tool, "args": args})
        }
        AgentEvent::CallFinished(outcome) => json!({
            "type": "call_finished",
            "tool": outcome.tool,
            "status": status_name(outcome),
            "result": outcome.result,
            "elapsed_ms": outcome.elapsed.as_secs_f64() * 1000.0,
        }),
        AgentEvent::Observation(text) => json!({"type": "observation", "text": text}),
        AgentEvent::NativeToolCall(chunk) => json!({
            "type": "native_tool_call",
            "index": chunk.index,
            "id": chunk.id,
            "name": chunk.name,
            "arguments": chunk.arguments,
        }),
        AgentEvent::ModelFinished(reason) => {
            json!({"type": "model_finished", "finish_reason": reason.as_str()})
        }
        AgentEvent::StreamCut(cut) => match cut {
            StreamCut::Length => json!({"type": "stream_cut", "reason": "length"}),
            StreamCut::Transport(message) => {
                json!({"type": "stream_cut", "reason": "transport", "message": message})
            }
        },
        // Argument streaming is off in `tam run` (the calls are printed when their block
        // closes); closed blocks and reasoning come as their own agent events.
        AgentEvent::Decoded(_) => return None,
    })
}
