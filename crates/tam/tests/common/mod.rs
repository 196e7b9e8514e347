//! Shared test helpers: the harnesses of the three decoders (the workspace's `tam-testkit`)
//! and a stable rendering of the decoder's events for golden files.
#![allow(dead_code)]

use std::fmt::Write as _;

use tam::Event;

tam_testkit::tam_harness!();
tam_testkit::action_harness!();
tam_testkit::front_harness!();
tam_testkit::dump_fns!(action);

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
                    diagnostic(&mut out, "  ", d);
                }
            }
            Event::ActionBlock(b) => {
                out.push_str("action_");
                action_block(&mut out, b);
            }
            Event::Diagnostic(d) => diagnostic(&mut out, "diagnostic ", d),
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
