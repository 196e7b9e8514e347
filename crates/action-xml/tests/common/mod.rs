//! Shared test helpers: the workspace's `tam-testkit` (every input fed whole, char by
//! char, byte by byte, in random splits and as every prefix + rest, all giving the same
//! events, adjacent text merged; spans of text, block and top-level diagnostic events
//! tiling `[0, n)`), ACTION shorthands, and a stable rendering of events for golden files.
#![allow(dead_code)]

use std::fmt::Write as _;

use action_xml::{ActionBlock, Config, Event};
use tam_testkit::decode_all_ways;

tam_testkit::action_harness!();
tam_testkit::dump_fns!(action);

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

/// A stable text rendering of ACTION events, for golden files.
pub fn dump(events: &[Event<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Text { text, span: s } => writeln!(out, "text {} {:?}", span(*s), text).unwrap(),
            Event::BlockStart { span: s } => writeln!(out, "block_start {}", span(*s)).unwrap(),
            Event::Block(b) => action_block(&mut out, b),
            Event::Diagnostic(d) => diagnostic(&mut out, "diagnostic ", d),
            Event::CallStart {
                index,
                tool,
                span: s,
            } => writeln!(out, "call_start {} {index} {tool:?}", span(*s)).unwrap(),
            Event::ParamStart { key, span: s } => {
                writeln!(out, "  param_start {} {key:?}", span(*s)).unwrap()
            }
            Event::ParamText {
                text,
                span: s,
                cdata,
            } => {
                let kind = if *cdata { "cdata" } else { "param_text" };
                writeln!(out, "    {kind} {} {text:?}", span(*s)).unwrap()
            }
            Event::ParamEnd { span: s } => writeln!(out, "  param_end {}", span(*s)).unwrap(),
            Event::CallEnd { index, span: s } => {
                writeln!(out, "call_end {} {index}", span(*s)).unwrap()
            }
            Event::ReasoningStart { span: s } => {
                writeln!(out, "reasoning_start {}", span(*s)).unwrap()
            }
            Event::Reasoning { text, span: s } => {
                writeln!(out, "reasoning {} {text:?}", span(*s)).unwrap()
            }
            Event::ReasoningEnd { span: s } => writeln!(out, "reasoning_end {}", span(*s)).unwrap(),
        }
    }
    out
}

/// True for the argument-streaming events.
pub fn is_streamed(e: &Event<'_>) -> bool {
    matches!(
        e,
        Event::CallStart { .. }
            | Event::ParamStart { .. }
            | Event::ParamText { .. }
            | Event::ParamEnd { .. }
            | Event::CallEnd { .. }
    )
}

/// The ACTION harness without argument-streaming events, for a test that compares only
/// what runs. (Streamed events no longer depend on the split, even for a block that
/// exceeds `max_block_bytes`: the split tests use [`Action`] with every limit.)
#[derive(Clone, Copy, Debug)]
pub struct ActionNoStream(pub Config);

impl tam_testkit::Harness for ActionNoStream {
    type Event = Event<'static>;

    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
        let mut v = Action(self.0).run_str(deltas);
        v.retain(|e| !is_streamed(e));
        tam_testkit::normalize::<Action>(v)
    }

    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
        let mut v = Action(self.0).run_bytes(deltas);
        v.retain(|e| !is_streamed(e));
        tam_testkit::normalize::<Action>(v)
    }

    tam_testkit::same_events_as!(Action);
}
