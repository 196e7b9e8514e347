//! The output of `tam decode`: one JSON object per line (SPEC §6), flushed per event.
//!
//! ```text
//! {"type":"text","text":"I'll read it.\n"}
//! {"type":"tool_calls","protocol":"tam","span":[14,95],"calls":[{"tool":"File.Read","args":{"path":"/tmp/a"}}],"diagnostics":[]}
//! {"type":"diagnostic","severity":"error","code":"unterminated_block","message":"…","span":[96,130]}
//! ```
//!
//! Two more types exist behind `--progress`: `block_start` (`protocol`, `span`) when a start
//! marker or `<ACTION>` tag is seen, and `command_seen` (`protocol`, `call`, `tool`,
//! `span`) when a TAM command value closes, and the argument lines: `call_start`
//! (`protocol`, `index`, `tool`, `span`), `param_start` (`protocol`, `key`, `span`),
//! `param_text` (`protocol`, `text`, `span`), `param_end` and `call_end` (`protocol`,
//! `index` for `call_end`, `span`). With `--with-raw`, a diagnostic that carries
//! the model's text (an unterminated block, stray text, an orphan entry) has it as `raw`.

use std::io::{self, Write};

use action_xml::{MixedEvent, Protocol};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use tam_parse::{Diagnostic, Param, Span};

/// What to write besides the three SPEC types.
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
}

/// One output line.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Text {
        text: &'a str,
    },
    ToolCalls {
        protocol: &'static str,
        span: [usize; 2],
        calls: Vec<CallLine<'a>>,
        diagnostics: Vec<DiagnosticLine<'a>>,
    },
    Diagnostic(DiagnosticLine<'a>),
    BlockStart {
        protocol: &'static str,
        span: [usize; 2],
    },
    CommandSeen {
        protocol: &'static str,
        call: u64,
        tool: &'a str,
        span: [usize; 2],
    },
    CallStart {
        protocol: &'static str,
        index: usize,
        tool: &'a str,
        span: [usize; 2],
    },
    ParamStart {
        protocol: &'static str,
        key: &'a str,
        span: [usize; 2],
    },
    ParamText {
        protocol: &'static str,
        text: &'a str,
        span: [usize; 2],
    },
    ParamEnd {
        protocol: &'static str,
        span: [usize; 2],
    },
    CallEnd {
        protocol: &'static str,
        index: usize,
        span: [usize; 2],
    },
}

#[derive(Serialize)]
struct CallLine<'a> {
    tool: &'a str,
    args: Args<'a>,
}

/// A call's arguments: TAM values are strings under the key as written (chain suffix
/// stripped); ACTION values are JSON strings, arrays or objects.
enum Args<'a> {
    Tam(&'a [Param]),
    Action(&'a Map<String, Value>),
}

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Args::Tam(params) => {
                let mut map = serializer.serialize_map(Some(params.len()))?;
                for param in *params {
                    map.serialize_entry(&*param.key, &*param.value)?;
                }
                map.end()
            }
            Args::Action(args) => args.serialize(serializer),
        }
    }
}

#[derive(Serialize)]
struct DiagnosticLine<'a> {
    severity: &'static str,
    code: &'static str,
    message: &'a str,
    span: [usize; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
}

fn span(span: Span) -> [usize; 2] {
    [span.start, span.end]
}

impl<W: Write> NdjsonWriter<W> {
    /// A writer to `out` (give it a buffered writer: each line is written whole, then
    /// flushed).
    pub(crate) fn new(out: W, extras: Extras) -> Self {
        NdjsonWriter { out, extras }
    }

    /// Writes the line of `event`, if it has one, and flushes.
    pub(crate) fn write_event(&mut self, event: &MixedEvent<'_>) -> io::Result<()> {
        let line = match event {
            MixedEvent::Text { text, .. } if text.is_empty() => return Ok(()),
            MixedEvent::Text { text, .. } => Line::Text { text },
            MixedEvent::TamBlock(block) => self.tool_calls_line(
                Protocol::Tam,
                block.span,
                block.calls.iter().map(|call| CallLine {
                    tool: &call.tool,
                    args: Args::Tam(&call.params),
                }),
                &block.diagnostics,
            ),
            MixedEvent::ActionBlock(block) => self.tool_calls_line(
                Protocol::Action,
                block.span,
                block.calls.iter().map(|call| CallLine {
                    tool: &call.tool,
                    args: Args::Action(&call.args),
                }),
                &block.diagnostics,
            ),
            MixedEvent::Diagnostic(diagnostic) => {
                Line::Diagnostic(self.diagnostic_line(diagnostic))
            }
            MixedEvent::BlockStart { protocol, span: at } if self.extras.progress => {
                Line::BlockStart {
                    protocol: protocol.as_str(),
                    span: span(*at),
                }
            }
            MixedEvent::CommandSeen {
                call,
                tool,
                span: at,
            } if self.extras.progress => Line::CommandSeen {
                protocol: Protocol::Tam.as_str(),
                call: *call,
                tool,
                span: span(*at),
            },
            _ if !self.extras.progress => return Ok(()),
            MixedEvent::CallStart {
                protocol,
                index,
                tool,
                span: at,
            } => Line::CallStart {
                protocol: protocol.as_str(),
                index: *index,
                tool,
                span: span(*at),
            },
            MixedEvent::ParamStart {
                protocol,
                key,
                span: at,
            } => Line::ParamStart {
                protocol: protocol.as_str(),
                key,
                span: span(*at),
            },
            MixedEvent::ParamText {
                protocol,
                text,
                span: at,
            } => Line::ParamText {
                protocol: protocol.as_str(),
                text,
                span: span(*at),
            },
            MixedEvent::ParamEnd { protocol, span: at } => Line::ParamEnd {
                protocol: protocol.as_str(),
                span: span(*at),
            },
            MixedEvent::CallEnd {
                protocol,
                index,
                span: at,
            } => Line::CallEnd {
                protocol: protocol.as_str(),
                index: *index,
                span: span(*at),
            },
            _ => return Ok(()),
        };
        self.write_line(&line)
    }

    /// Writes a diagnostic about the input itself (a malformed SSE or delta line) and
    /// flushes.
    pub(crate) fn write_diagnostic(&mut self, diagnostic: &Diagnostic) -> io::Result<()> {
        let line = Line::Diagnostic(self.diagnostic_line(diagnostic));
        self.write_line(&line)
    }

    fn tool_calls_line<'a>(
        &self,
        protocol: Protocol,
        block_span: Span,
        calls: impl Iterator<Item = CallLine<'a>>,
        diagnostics: &'a [Diagnostic],
    ) -> Line<'a> {
        Line::ToolCalls {
            protocol: protocol.as_str(),
            span: span(block_span),
            calls: calls.collect(),
            diagnostics: self.diagnostic_lines(diagnostics),
        }
    }

    fn diagnostic_lines<'a>(&self, diagnostics: &'a [Diagnostic]) -> Vec<DiagnosticLine<'a>> {
        diagnostics
            .iter()
            .map(|d| self.diagnostic_line(d))
            .collect()
    }

    fn diagnostic_line<'a>(&self, diagnostic: &'a Diagnostic) -> DiagnosticLine<'a> {
        DiagnosticLine {
            severity: diagnostic.severity.as_str(),
            code: diagnostic.code.as_str(),
            message: &diagnostic.message,
            span: span(diagnostic.span),
            raw: diagnostic.raw.as_deref().filter(|_| self.extras.raw),
        }
    }

    fn write_line(&mut self, line: &Line<'_>) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn lines(extras: Extras, events: &[MixedEvent<'_>]) -> Vec<Value> {
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
            MixedEvent::BlockStart {
                protocol: Protocol::Action,
                span: Span::new(3, 11),
            },
            MixedEvent::CommandSeen {
                call: 2,
                tool: "File.Read".into(),
                span: Span::new(20, 40),
            },
            MixedEvent::CallStart {
                protocol: Protocol::Action,
                index: 0,
                tool: "write".into(),
                span: Span::new(41, 48),
            },
            MixedEvent::ParamStart {
                protocol: Protocol::Tam,
                key: Cow::Borrowed("path"),
                span: Span::new(49, 53),
            },
            MixedEvent::ParamText {
                protocol: Protocol::Tam,
                text: Cow::Borrowed("a\"b"),
                span: Span::new(63, 66),
            },
            MixedEvent::ParamEnd {
                protocol: Protocol::Tam,
                span: Span::new(49, 75),
            },
            MixedEvent::CallEnd {
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
            tam_parse::Code::UNTERMINATED_BLOCK,
            Span::new(0, 9),
            "never closed",
        )
        .with_raw("<|[REQUE");
        let events = [
            MixedEvent::Text {
                text: Cow::Borrowed(""),
                span: Span::new(0, 0),
            },
            MixedEvent::Diagnostic(diagnostic),
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
}
