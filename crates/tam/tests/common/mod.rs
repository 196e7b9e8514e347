//! Shared test helpers: a stable rendering of the decoder's events for golden files.
#![allow(dead_code)]

use std::fmt::Write as _;

use tam::{ActionBlock, Diagnostic, Event, Span};

fn span(s: Span) -> String {
    format!("{}..{}", s.start, s.end)
}

fn dump_diagnostic(out: &mut String, indent: &str, d: &Diagnostic) {
    writeln!(
        out,
        "{indent}{} {} {}: {}",
        d.severity,
        d.code,
        span(d.span),
        d.message
    )
    .unwrap();
    if let Some(raw) = &d.raw {
        writeln!(out, "{indent}  raw {:?}", &**raw).unwrap();
    }
}

fn dump_action_block(out: &mut String, b: &ActionBlock) {
    writeln!(out, "block {} index={}", span(b.span), b.index).unwrap();
    for c in &b.calls {
        writeln!(out, "  call {:?} {}", c.tool, span(c.span)).unwrap();
        writeln!(
            out,
            "    args {}",
            serde_json::Value::Object(c.args.clone())
        )
        .unwrap();
        // A parameter's exact source, where it is not simply its string value.
        for p in &c.params {
            if c.get_str(&p.key) != Some(&*p.source) {
                writeln!(
                    out,
                    "    source {:?} {} {:?}",
                    p.key,
                    span(p.content_span),
                    p.source
                )
                .unwrap();
            }
        }
    }
    for d in &b.diagnostics {
        dump_diagnostic(out, "  ", d);
    }
}

/// A stable text rendering of the decoder's events, for golden files.
pub fn dump(events: &[Event<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Text { text, span: s } => writeln!(out, "text {} {:?}", span(*s), text).unwrap(),
            Event::ReasoningStart { span: s } => {
                writeln!(out, "reasoning_start {}", span(*s)).unwrap()
            }
            Event::Reasoning { text, span: s } => {
                writeln!(out, "reasoning {} {text:?}", span(*s)).unwrap()
            }
            Event::ReasoningEnd { span: s } => writeln!(out, "reasoning_end {}", span(*s)).unwrap(),
            Event::BlockStart { protocol, span: s } => {
                writeln!(out, "block_start {} {}", protocol.as_str(), span(*s)).unwrap()
            }
            Event::CommandSeen {
                call,
                tool,
                span: s,
            } => writeln!(
                out,
                "command_seen {} call={call} tool={:?}",
                span(*s),
                &**tool
            )
            .unwrap(),
            Event::TamBlock(b) => {
                writeln!(out, "tam_block {}", span(b.span)).unwrap();
                for c in &b.calls {
                    writeln!(out, "  call {} {:?} {}", c.index, &*c.tool, span(c.span)).unwrap();
                    for p in &c.params {
                        writeln!(out, "    {:?} = {:?}", &*p.key, &*p.value).unwrap();
                    }
                }
                for d in &b.diagnostics {
                    dump_diagnostic(&mut out, "  ", d);
                }
            }
            Event::ActionBlock(b) => {
                out.push_str("action_");
                dump_action_block(&mut out, b);
            }
            Event::Diagnostic(d) => dump_diagnostic(&mut out, "diagnostic ", d),
            Event::CallStart {
                protocol,
                index,
                tool,
                span: s,
            } => writeln!(
                out,
                "call_start {} {} {index} {tool:?}",
                protocol.as_str(),
                span(*s)
            )
            .unwrap(),
            Event::ParamStart {
                protocol,
                key,
                span: s,
            } => writeln!(
                out,
                "  param_start {} {} {key:?}",
                protocol.as_str(),
                span(*s)
            )
            .unwrap(),
            Event::ParamText {
                protocol,
                text,
                span: s,
                cdata,
            } => writeln!(
                out,
                "    {} {} {} {text:?}",
                if *cdata { "cdata" } else { "param_text" },
                protocol.as_str(),
                span(*s)
            )
            .unwrap(),
            Event::ParamEnd { protocol, span: s } => {
                writeln!(out, "  param_end {} {}", protocol.as_str(), span(*s)).unwrap()
            }
            Event::CallEnd {
                protocol,
                index,
                span: s,
            } => writeln!(out, "call_end {} {} {index}", protocol.as_str(), span(*s)).unwrap(),
        }
    }
    out
}
