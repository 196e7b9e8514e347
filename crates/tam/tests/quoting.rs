//! A quoted `<ACTION>` tag or TAM marker (inline code, a `>` line) is prose, a block in a
//! code fence is a call (warning `fenced_block`), and reasoning is never decoded — in the
//! decoder, which reads `<think>` sections by default. Each case is decoded every way
//! (whole, char by char, byte by byte, random splits, every prefix + rest).

mod common;

use action_xml::codes;
use common::Front;
use tam::{Config, Event, ProtocolChoice};
use tam_testkit::decode_all_ways;

const BLOCK: &str = "<ACTION><DeleteAllFiles><path>/</path></DeleteAllFiles></ACTION>";
const TAM: &str = "<|[REQUEST_TOOL]|>command:「始」ListFiles「末」<|[END_TOOL]|>";

fn mixed(input: &str, config: Config) -> Vec<Event<'static>> {
    decode_all_ways(Front(config), input.as_bytes())
}

fn mixed_tools(events: &[Event<'static>]) -> Vec<String> {
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::ActionBlock(b) => out.extend(b.calls.iter().map(|c| c.tool.clone())),
            Event::TamBlock(b) => out.extend(b.calls.iter().map(|c| c.tool.to_string())),
            _ => {}
        }
    }
    out
}

#[test]
fn the_delete_all_files_example_runs_nothing() {
    let input = format!("Never write `{BLOCK}` unless asked.");
    // Every protocol choice that reads ACTION.
    for protocol in [ProtocolChoice::Auto, ProtocolChoice::Action] {
        let events = mixed(&input, Config::for_protocol(protocol));
        assert!(mixed_tools(&events).is_empty(), "{events:?}");
    }
}

#[test]
fn a_tag_on_a_quoted_line_is_prose() {
    // Both protocols in one stream: a quoted TAM block, a quoted ACTION block.
    let input = format!("> {TAM}\n> {BLOCK}\n");
    let events = mixed(&input, Config::default());
    assert!(mixed_tools(&events).is_empty(), "{events:?}");
}

#[test]
fn a_block_on_the_line_after_an_unclosed_backtick_is_a_call() {
    let events = mixed(&format!("A stray ` here.\n{TAM}"), Config::default());
    assert_eq!(mixed_tools(&events), ["ListFiles"]);
}

#[test]
fn a_fenced_block_is_a_call_with_a_warning() {
    // A TAM block in a fence, in the stream of both protocols.
    let input = format!("~~~\n{TAM}\n~~~\n");
    let events = mixed(&input, Config::default());
    assert_eq!(mixed_tools(&events), ["ListFiles"]);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TamBlock(b) if b.diagnostics.iter().any(|d| d.code == codes::FENCED_BLOCK)
    )));
}

#[test]
fn reasoning_with_a_block_inside_runs_nothing() {
    let input = format!("<think>\nI might write {BLOCK}.\n</think>\nNo.");
    let events = mixed(&input, Config::default());
    assert!(mixed_tools(&events).is_empty(), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, Event::Reasoning { .. })));
    // Off, the decoder decodes it (opt-out).
    let events = mixed(&input, Config::default().with_reasoning_tags(false));
    assert_eq!(mixed_tools(&events), ["DeleteAllFiles"]);
}

#[test]
fn an_unclosed_reasoning_is_reasoning_to_the_end() {
    let input = format!("<thinking>\n{BLOCK}\n{TAM}");
    let events = mixed(&input, Config::default());
    assert!(mixed_tools(&events).is_empty(), "{events:?}");
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Reasoning { text, .. } => Some(&**text),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, format!("\n{BLOCK}\n{TAM}"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ReasoningEnd { .. }))
    );
}

#[test]
fn a_real_call_after_the_reasoning_runs() {
    let input = format!("\n <think>plan</think>{TAM}");
    let events = mixed(&input, Config::for_protocol(ProtocolChoice::Tam));
    assert_eq!(mixed_tools(&events), ["ListFiles"]);
}

/// A real reply (the e2e proof leg, Qwen2.5-Coder-1.5B on a 2-core AMD EPYC without
/// AVX-512): the call element written without its `<ACTION>` block. A decoder given no
/// tool names makes calls of a block's children only, so this is prose: no call, for
/// every protocol choice that reads ACTION, as in the ACTION decoder.
#[test]
fn a_call_element_written_without_its_action_block_is_prose() {
    let input = "<GetPlayerInfo>\n  <player_id>player123</player_id>\n</GetPlayerInfo>";
    for protocol in [ProtocolChoice::Auto, ProtocolChoice::Action] {
        let events = mixed(input, Config::for_protocol(protocol));
        assert!(mixed_tools(&events).is_empty(), "{events:?}");
    }
}
