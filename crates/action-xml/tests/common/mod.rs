//! Shared test helpers: the workspace's `tam-testkit` (every input fed whole, char by
//! char, byte by byte, in random splits and as every prefix + rest, all giving the same
//! events, adjacent text merged; spans of text, block and top-level diagnostic events
//! tiling `[0, n)`), ACTION shorthands, and a stable rendering of events for golden files.
#![allow(dead_code)]

use std::fmt::Write as _;

use action_xml::{ActionBlock, Config, Diagnostic, Event, MixedEvent, Span};
use tam_testkit::{Action, decode_all_ways};

/// Shorthand: ACTION decoding of text with the default config, every way.
pub fn decode(input: &str) -> Vec<Event<'static>> {
    decode_all_ways(Action(Config::default()), input.as_bytes())
}

/// The blocks in the events.
pub fn blocks<'e>(events: &'e [Event<'static>]) -> Vec<&'e ActionBlock> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b),
            _ => None,
        })
        .collect()
}

/// All diagnostic codes in the events, blocks' included, in order.
pub fn codes(events: &[Event<'static>]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::Block(b) => out.extend(b.diagnostics.iter().map(|d| d.code.as_str())),
            Event::Diagnostic(d) => out.push(d.code.as_str()),
            _ => {}
        }
    }
    out
}

/// All text, concatenated.
pub fn text(events: &[Event<'static>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(&**text),
            _ => None,
        })
        .collect()
}

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
            if c.get_str(&p.key) != Some(p.source.as_str()) {
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

/// A stable text rendering of ACTION events, for golden files.
pub fn dump(events: &[Event<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Text { text, span: s } => writeln!(out, "text {} {:?}", span(*s), text).unwrap(),
            Event::BlockStart { span: s } => writeln!(out, "block_start {}", span(*s)).unwrap(),
            Event::Block(b) => dump_action_block(&mut out, b),
            Event::Diagnostic(d) => dump_diagnostic(&mut out, "diagnostic ", d),
            other => writeln!(out, "{other:?}").unwrap(),
        }
    }
    out
}

/// A stable text rendering of mixed events, for golden files.
pub fn dump_mixed(events: &[MixedEvent<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            MixedEvent::Text { text, span: s } => {
                writeln!(out, "text {} {:?}", span(*s), text).unwrap()
            }
            MixedEvent::BlockStart { protocol, span: s } => {
                writeln!(out, "block_start {} {}", protocol.as_str(), span(*s)).unwrap()
            }
            MixedEvent::CommandSeen {
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
            MixedEvent::TamBlock(b) => {
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
            MixedEvent::ActionBlock(b) => {
                out.push_str("action_");
                dump_action_block(&mut out, b);
            }
            MixedEvent::Diagnostic(d) => dump_diagnostic(&mut out, "diagnostic ", d),
            other => writeln!(out, "{other:?}").unwrap(),
        }
    }
    out
}
