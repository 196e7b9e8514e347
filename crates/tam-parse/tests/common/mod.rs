//! Shared test helpers: decoding every way (the workspace's `tam-testkit`) and a stable
//! rendering of events for golden files.
#![allow(dead_code)]

use std::fmt::Write as _;

use tam_parse::{Config, Event};

tam_testkit::tam_harness!();
tam_testkit::dump_fns!();

/// Decodes `input` every way (whole, `&str`, char by char, byte by byte, random splits,
/// every prefix + rest: see `tam_testkit::decode_all_ways`) and asserts identical events,
/// tiled spans and text equal to the input under it. Returns the events, adjacent text
/// merged.
pub fn decode_all_ways(input: &[u8], config: Config) -> Vec<Event<'static>> {
    tam_testkit::decode_all_ways(Tam(config), input)
}

/// Like [`decode_all_ways`] for a stream that was cut (`finish_cut`).
pub fn decode_all_ways_cut(input: &[u8], config: Config) -> Vec<Event<'static>> {
    tam_testkit::decode_all_ways(TamCut(config), input)
}

/// Shorthand for text input.
pub fn decode_str(input: &str, config: Config) -> Vec<Event<'static>> {
    decode_all_ways(input.as_bytes(), config)
}

/// A stable text rendering of events, for golden files.
pub fn dump(events: &[Event<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Text { text, span: s } => {
                writeln!(out, "text {} {:?}", span(*s), text).unwrap();
            }
            Event::BlockStart { span: s } => writeln!(out, "block_start {}", span(*s)).unwrap(),
            Event::ParamStart { key, span: s } => {
                writeln!(out, "param_start {} {:?}", span(*s), key).unwrap();
            }
            Event::ParamText { text, span: s } => {
                writeln!(out, "param_text {} {:?}", span(*s), text).unwrap();
            }
            Event::ParamEnd { span: s } => writeln!(out, "param_end {}", span(*s)).unwrap(),
            Event::ReasoningStart { span: s } => {
                writeln!(out, "reasoning_start {}", span(*s)).unwrap();
            }
            Event::Reasoning { text, span: s } => {
                writeln!(out, "reasoning {} {:?}", span(*s), text).unwrap();
            }
            Event::ReasoningEnd { span: s } => {
                writeln!(out, "reasoning_end {}", span(*s)).unwrap();
            }
            Event::CommandSeen {
                call,
                tool,
                span: s,
            } => {
                writeln!(
                    out,
                    "command_seen {} call={call} tool={:?}",
                    span(*s),
                    &**tool
                )
                .unwrap();
            }
            Event::Block(b) => {
                writeln!(out, "block {}", span(b.span)).unwrap();
                for c in &b.calls {
                    writeln!(out, "  call {} {:?} {}", c.index, &*c.tool, span(c.span)).unwrap();
                    for p in &c.params {
                        writeln!(
                            out,
                            "    {:?} ({:?}) = {:?} {}",
                            &*p.key,
                            &*p.canonical,
                            &*p.value,
                            span(p.span)
                        )
                        .unwrap();
                    }
                }
                for d in &b.diagnostics {
                    diagnostic(&mut out, "  ", d);
                }
            }
            Event::Diagnostic(d) => {
                writeln!(
                    out,
                    "diagnostic {} {} {}: {}",
                    d.severity,
                    d.code,
                    span(d.span),
                    d.message
                )
                .unwrap();
                if let Some(raw) = &d.raw {
                    writeln!(out, "  raw {:?}", &**raw).unwrap();
                }
            }
        }
    }
    out
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

/// The blocks in the events.
pub fn blocks<'e>(events: &'e [Event<'static>]) -> Vec<&'e tam_parse::Block> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b),
            _ => None,
        })
        .collect()
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

/// All reasoning, concatenated.
pub fn reasoning(events: &[Event<'static>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Reasoning { text, .. } => Some(&**text),
            _ => None,
        })
        .collect()
}
