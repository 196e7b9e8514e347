//! A quoted `<ACTION>` tag (inline code, a `>` line) is prose, a block in a
//! code fence is a call (warning `fenced_block`), and reasoning is never decoded. Each
//! case is decoded every way (whole, char by char, byte by byte, random splits, every
//! prefix + rest) by the ACTION decoder (the front door's checks, TAM blocks among them,
//! are in the `tam` crate's tests).

mod common;

use action_xml::{Config, Event, codes};
use common::Action;
use common::codes as codes_of;
use tam_testkit::decode_all_ways;

const BLOCK: &str = "<ACTION><DeleteAllFiles><path>/</path></DeleteAllFiles></ACTION>";

fn action(input: &str, config: Config) -> Vec<Event<'static>> {
    decode_all_ways(Action(config), input.as_bytes())
}

fn think() -> Config {
    Config::default().with_reasoning_tags(true)
}

fn tools(events: &[Event<'static>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b.calls.iter().map(|c| c.tool.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

fn text(events: &[Event<'static>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(&**text),
            _ => None,
        })
        .collect()
}

fn reasoning(events: &[Event<'static>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Reasoning { text, .. } => Some(&**text),
            _ => None,
        })
        .collect()
}

#[test]
fn the_delete_all_files_example_runs_nothing() {
    let input = format!("Never write `{BLOCK}` unless asked.");
    let events = action(&input, Config::default());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(text(&events), input);
    assert_eq!(codes_of(&events), [codes::MARKER_IN_PROSE.as_str()]);
    // The warning comes right before the tag's text, with an empty span at the tag.
    let at = input.find('<').unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Diagnostic(d) if d.span.start == at && d.span.is_empty()
    )));
}

#[test]
fn a_tag_on_a_quoted_line_is_prose() {
    let input = format!("> Please run {BLOCK}\n>\n> Thanks\nOK.");
    let events = action(&input, Config::default());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(text(&events), input);
    assert_eq!(codes_of(&events), ["marker_in_prose"]);
}

#[test]
fn a_block_after_a_closed_code_span_is_a_call() {
    let input = format!("Run `ls` first, then {BLOCK}");
    let events = action(&input, Config::default());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert!(codes_of(&events).is_empty(), "{events:?}");
}

#[test]
fn a_block_on_the_line_after_an_unclosed_backtick_is_a_call() {
    let input = format!("A stray ` here.\n{BLOCK}");
    let events = action(&input, Config::default());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
}

#[test]
fn a_fenced_block_is_a_call_with_a_warning() {
    let input = format!("Here:\n```xml\n{BLOCK}\n```\nDone.");
    let events = action(&input, Config::default());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert_eq!(codes_of(&events), ["fenced_block"]);
    let Some(Event::Block(block)) = events.iter().find(|e| matches!(e, Event::Block(_))) else {
        unreachable!()
    };
    let span = block.diagnostics[0].span;
    assert_eq!(&input[span.start..span.end], "```xml");
}

#[test]
fn a_block_after_the_fence_closed_is_not_fenced() {
    let input = format!("```\nexample `code\n```\n\n{BLOCK}");
    let events = action(&input, Config::default());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert!(codes_of(&events).is_empty(), "{events:?}");
}

#[test]
fn reasoning_with_a_block_inside_runs_nothing() {
    let input = format!("<think>\nI might write {BLOCK}.\n</think>\nNo.");
    let events = action(&input, think());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(reasoning(&events), format!("\nI might write {BLOCK}.\n"));
    assert_eq!(text(&events), "\nNo.");
}

#[test]
fn a_real_call_after_the_reasoning_runs() {
    let input = format!("<think>plan</think>\n{BLOCK}");
    let events = action(&input, think());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert_eq!(reasoning(&events), "plan");
}

#[test]
fn a_think_tag_split_across_deltas() {
    let input = format!("<think>{BLOCK}</think>");
    let mut decoder = action_xml::Decoder::new(think());
    let mut events = Vec::new();
    for delta in ["<", "thi", "nk", ">", BLOCK, "</", "think", ">"] {
        decoder.feed(delta, |e| events.push(e.into_owned()));
    }
    decoder.finish(|e| events.push(e.into_owned()));
    let events = tam_testkit::normalize::<Action>(events);
    assert!(tools(&events).is_empty());
    assert_eq!(events, action(&input, think()));
}

#[test]
fn prose_mentioning_thinking_without_its_close_is_prose() {
    let input = format!("<thinking tags are how I plan.\n{BLOCK}");
    let events = action(&input, think());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert_eq!(reasoning(&events), "");
    assert!(text(&events).starts_with("<thinking tags"));
}

/// A real reply (the e2e proof leg, Qwen2.5-Coder-1.5B on a 2-core AMD EPYC without
/// AVX-512): the call element written without its `<ACTION>` block. A decoder given no
/// tool names makes calls of a block's children only, so this is prose: every byte text,
/// no call, no diagnostic.
#[test]
fn a_call_element_written_without_its_action_block_is_prose() {
    let input = "<GetPlayerInfo>\n  <player_id>player123</player_id>\n</GetPlayerInfo>";
    let events = action(input, Config::default());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(text(&events), input);
    assert!(codes_of(&events).is_empty(), "{events:?}");
}
