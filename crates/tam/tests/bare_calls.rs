//! A call element of an offered tool written without `<ACTION>` (small models drop the
//! wrapper: `<estimate_population><species>pandas</species>…</estimate_population>` as the
//! whole reply, sometimes inside a code fence) is a one-call block with warning
//! `missing_action_wrapper`, when the decoder is given the offered tools' names. Every case
//! is decoded every way (whole, char by char, byte by byte, random splits, every prefix +
//! rest) by the decoder of both protocols (the ACTION decoder's own checks are in
//! action-xml's tests).

mod common;

use action_xml::MAX_BARE_CALL_TOOLS;
use common::FrontTools;
use proptest::prelude::*;
use tam::{Config, Decoder, Event};
use tam_testkit::decode_all_ways;

const TOOLS: &[&str] = &[
    "estimate_population",
    "get_weather",
    "workflow:summarize_text",
];
const CALL: &str =
    "<estimate_population><species>pandas</species><country>China</country></estimate_population>";

fn mixed(input: &str) -> Vec<Event<'static>> {
    decode_all_ways(FrontTools(Config::default(), TOOLS), input.as_bytes())
}

fn mixed_tools(events: &[Event<'static>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ActionBlock(b) => Some(b.calls.iter().map(|c| c.tool.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The input decodes to no call.
fn assert_prose(input: &str) {
    assert!(mixed_tools(&mixed(input)).is_empty(), "{input}");
}

#[test]
fn the_whole_reply_as_a_call_element_is_a_call() {
    assert_eq!(mixed_tools(&mixed(CALL)), ["estimate_population"]);
}

#[test]
fn prose_before_and_after_stays_text() {
    let tam = "<|[REQUEST_TOOL]|>command:「始」ListFiles「末」<|[END_TOOL]|>";
    let both = format!("{tam}\n{CALL}");
    let events = mixed(&both);
    assert_eq!(mixed_tools(&events), ["estimate_population"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TamBlock(b) if b.calls[0].tool == "ListFiles"))
    );
}

#[test]
fn a_fenced_call_element_is_a_call_with_both_warnings() {
    let input = format!("```xml\n{CALL}\n```\n");
    assert_eq!(mixed_tools(&mixed(&input)), ["estimate_population"]);
    // Only at a line start inside the fence too.
    assert_prose(&format!("```xml {CALL}\n```\n"));
}

#[test]
fn only_offered_names_at_a_line_start_count() {
    // Not offered; a name offered in another case; mid-line; inline code; a `>` line.
    assert_prose("<lookup><q>pandas</q></lookup>");
    assert_prose("<Get_Weather><city>Paris</city></Get_Weather>");
    assert_prose(&format!("I would write {CALL} here."));
    assert_prose(&format!("Never write `{CALL}`"));
    assert_prose(&format!("> {CALL}\n"));
}

#[test]
fn a_decoder_without_tool_names_never_applies_the_rule() {
    let mut decoder = Decoder::new(Config::default());
    let mut seen = Vec::new();
    decoder.feed(CALL, |e| seen.push(e.into_owned()));
    decoder.finish(|e| seen.push(e.into_owned()));
    assert!(mixed_tools(&seen).is_empty());
    assert!(Decoder::default().bare_call_tools().is_empty());
}

#[test]
fn an_element_cut_off_or_never_closed_is_prose() {
    assert_prose("<get_weather><city>Paris</city>");
    assert_prose("<get_weather><city>Par");
    assert_prose("<get_weather>");
}

#[test]
fn an_element_that_does_not_decode_is_prose() {
    // A document type declaration inside: refused, so no call.
    assert_prose("<get_weather><!DOCTYPE x><city>Paris</city></get_weather>\n");
}

#[test]
fn inside_a_block_or_reasoning_nothing_changes() {
    let reasoning = format!("<think>\n{CALL}\n</think>\nDone.");
    let events = mixed(&reasoning);
    assert!(mixed_tools(&events).is_empty());
}

#[test]
fn names_are_bounded_and_checked() {
    let many: Vec<String> = (0..MAX_BARE_CALL_TOOLS + 10)
        .map(|i| format!("t{i}"))
        .collect();
    let decoder = Decoder::default().with_bare_call_tools(&many);
    assert_eq!(decoder.bare_call_tools(), &many[..MAX_BARE_CALL_TOOLS]);
}

/// Pieces of replies: prose, bare elements (offered or not, closed or not), blocks of both
/// protocols, fences, quotes.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "Let me check.",
        "\n",
        "  ",
        " ",
        "`",
        "> ",
        "```\n",
        "<get_weather><city>Paris</city></get_weather>",
        "<get_weather><city>Par",
        "</get_weather>",
        "<lookup><q>x</q></lookup>",
        "<estimate_population><species>pandas</species></estimate_population>",
        "<ACTION><get_weather><city>Rome</city></get_weather></ACTION>",
        "<![CDATA[</get_weather>]]>",
        "<think>",
        "</think>",
        "<|[REQUEST_TOOL]|>command:「始」T「末」<|[END_TOOL]|>",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any mix of the pieces: the same events however split, and the text is the input
    /// outside the blocks (checked by the kit).
    #[test]
    fn every_split_gives_the_same_events(pieces in prop::collection::vec(piece(), 1..8)) {
        let input: String = pieces.concat();
        decode_all_ways(FrontTools(Config::default(), TOOLS), input.as_bytes());
    }
}
