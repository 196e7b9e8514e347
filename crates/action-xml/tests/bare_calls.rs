//! A call element of an offered tool written without `<ACTION>` (small models drop the
//! wrapper: `<estimate_population><species>pandas</species>…</estimate_population>` as the
//! whole reply, sometimes inside a code fence) is a one-call block with warning
//! `missing_action_wrapper`, when the decoder is given the offered tools' names. Every case
//! is decoded every way (whole, char by char, byte by byte, random splits, every prefix +
//! rest) by the ACTION decoder (the front door's own checks are in the `tam` crate's tests).

mod common;

use action_xml::{Config, Decoder, Event, MAX_BARE_CALL_NAME_BYTES, MAX_BARE_CALL_TOOLS, codes};
use common::ActionTools;
use common::codes as codes_of;
use proptest::prelude::*;
use tam_testkit::decode_all_ways;

const TOOLS: &[&str] = &[
    "estimate_population",
    "get_weather",
    "workflow:summarize_text",
];
const CALL: &str =
    "<estimate_population><species>pandas</species><country>China</country></estimate_population>";

fn action(input: &str) -> Vec<Event<'static>> {
    decode_all_ways(ActionTools(Config::default(), TOOLS), input.as_bytes())
}

/// `(tool, args as JSON, block index)` of every block's calls.
fn calls(events: &[Event<'static>]) -> Vec<(String, serde_json::Value, usize)> {
    common::blocks(events)
        .iter()
        .flat_map(|b| {
            b.calls.iter().map(|c| {
                (
                    c.tool.clone(),
                    serde_json::Value::Object(c.args.clone()),
                    b.index,
                )
            })
        })
        .collect()
}

fn text(events: &[Event<'static>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(text.as_ref()),
            _ => None,
        })
        .collect()
}

/// The input decodes to no call, all of it text, with one `marker_in_prose` warning per
/// element read as prose (`prose` of them).
fn assert_prose(input: &str, prose: usize) {
    let events = action(input);
    assert!(calls(&events).is_empty(), "{input}: {events:?}");
    assert_eq!(text(&events), input);
    let mentions = codes_of(&events)
        .iter()
        .filter(|c| **c == "marker_in_prose")
        .count();
    assert_eq!(mentions, prose, "{input}: {events:?}");
}

#[test]
fn the_whole_reply_as_a_call_element_is_a_call() {
    let events = action(CALL);
    assert_eq!(
        calls(&events),
        [(
            "estimate_population".to_owned(),
            serde_json::json!({"country": "China", "species": "pandas"}),
            0
        )]
    );
    assert_eq!(codes_of(&events), ["missing_action_wrapper"]);
    let block = common::blocks(&events)[0];
    assert_eq!(block.span, tam_parse::Span::new(0, CALL.len()));
    assert_eq!(&*block.raw, CALL);
    let warning = &block.diagnostics[0];
    assert_eq!(warning.code, codes::MISSING_ACTION_WRAPPER);
    assert_eq!(
        warning.span,
        tam_parse::Span::new(0, "<estimate_population>".len())
    );
    // The block's start, its argument events, then the block, as for `<ACTION>`.
    assert!(matches!(events[0], Event::BlockStart { span } if span.len() == 21));
    assert!(
        matches!(&events[1], Event::CallStart { index: 0, tool, .. } if tool == "estimate_population")
    );
    let pieces: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ParamText { text, .. } => Some(text.as_ref()),
            _ => None,
        })
        .collect();
    assert_eq!(pieces, "pandasChina");
    assert!(matches!(events.last(), Some(Event::Block(_))));
}

#[test]
fn prose_before_and_after_stays_text() {
    let input = format!("Let me look it up.\n\n  {CALL}\nObservation: 1.8 billion");
    let events = action(&input);
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(
        text(&events),
        "Let me look it up.\n\n  \nObservation: 1.8 billion"
    );
}

#[test]
fn a_fenced_call_element_is_a_call_with_both_warnings() {
    let input = format!("```xml\n{CALL}\n```\n");
    let events = action(&input);
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(
        codes_of(&events),
        ["fenced_block", "missing_action_wrapper"]
    );
    assert_eq!(text(&events), "```xml\n\n```\n");
    // Only at a line start inside the fence too.
    assert_prose(&format!("```xml {CALL}\n```\n"), 0);
}

#[test]
fn only_offered_names_at_a_line_start_count() {
    // Not offered; a name offered in another case; mid-line; inline code; a `>` line.
    assert_prose("<lookup><q>pandas</q></lookup>", 0);
    assert_prose("<Get_Weather><city>Paris</city></Get_Weather>", 0);
    assert_prose(&format!("I would write {CALL} here."), 0);
    assert_prose(&format!("Never write `{CALL}`"), 0);
    assert_prose(&format!("> {CALL}\n"), 0);
    // A prefixed tool id is matched as written.
    let events = action("<workflow:summarize_text><text>a</text></workflow:summarize_text>");
    assert_eq!(calls(&events)[0].0, "workflow:summarize_text");
    assert!(codes_of(&events).contains(&"missing_action_wrapper"));
}

#[test]
fn a_decoder_without_tool_names_never_applies_the_rule() {
    let events = common::decode(CALL);
    assert!(common::blocks(&events).is_empty());
    assert_eq!(text(&events), CALL);
    assert!(Decoder::default().bare_call_tools().is_empty());
}

#[test]
fn an_element_cut_off_or_never_closed_is_prose() {
    assert_prose("<get_weather><city>Paris</city>", 1);
    assert_prose("<get_weather><city>Par", 1);
    assert_prose("<get_weather>", 1);
    // Cut by a token limit: no repair either.
    let mut decoder = Decoder::new(Config::default()).with_bare_call_tools(TOOLS);
    let mut events = Vec::new();
    decoder.feed("<get_weather><city>Paris</city>", |e| {
        events.push(e.into_owned())
    });
    decoder.finish_cut(|e| events.push(e.into_owned()));
    assert!(calls(&events).is_empty());
    assert_eq!(text(&events), "<get_weather><city>Paris</city>");
    let Event::Diagnostic(d) = &events[0] else {
        panic!("{events:?}")
    };
    assert!(d.message.contains("cut"), "{}", d.message);
}

#[test]
fn an_element_that_does_not_decode_is_prose() {
    // A document type declaration inside: refused, so no call.
    let input = "<get_weather><!DOCTYPE x><city>Paris</city></get_weather>\n";
    assert_prose(input, 1);
    let events = action(input);
    let Some(Event::Diagnostic(d)) = events.first() else {
        panic!("{events:?}")
    };
    assert!(d.message.contains("does not decode"), "{}", d.message);
}

#[test]
fn repairs_apply_as_in_a_block() {
    let events = action("<get_weather><code>if a < b && c</code></get_weather>");
    assert_eq!(
        calls(&events),
        [(
            "get_weather".to_owned(),
            serde_json::json!({"code": "if a < b && c"}),
            0
        )]
    );
    let found = codes_of(&events);
    assert!(found.contains(&"missing_action_wrapper"), "{found:?}");
    assert!(found.contains(&"unescaped_lt"), "{found:?}");
    // CDATA holding the close tag does not end the element.
    let events = action("<get_weather><city><![CDATA[</get_weather>]]></city></get_weather>");
    assert_eq!(
        calls(&events)[0].1,
        serde_json::json!({"city": "</get_weather>"})
    );
}

#[test]
fn several_elements_are_blocks_of_their_own() {
    let input = "<get_weather><city>Paris</city></get_weather>\n<get_weather><city>Rome</city></get_weather>";
    let events = action(input);
    let found = calls(&events);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].2, found[1].2), (0, 1));
    assert!(codes_of(&events).contains(&"extra_action_block"));
    // On the same line the second does not begin a line: text.
    let input = "<get_weather><city>Paris</city></get_weather> <get_weather><city>Rome</city></get_weather>";
    let events = action(input);
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(
        text(&events),
        " <get_weather><city>Rome</city></get_weather>"
    );
    // After an ACTION block, a bare element is the second block.
    let input = format!("<ACTION><get_weather><city>Oslo</city></get_weather></ACTION>\n{CALL}");
    let events = action(&input);
    assert_eq!(calls(&events).len(), 2);
    assert_eq!(calls(&events)[1].2, 1);
}

#[test]
fn inside_a_block_or_reasoning_nothing_changes() {
    let input = "<ACTION>\n<get_weather><city>Paris</city></get_weather>\n</ACTION>";
    let events = action(input);
    assert_eq!(calls(&events).len(), 1);
    assert!(!codes_of(&events).contains(&"missing_action_wrapper"));
    let reasoning = format!("<think>\n{CALL}\n</think>\nDone.");
    let events = decode_all_ways(
        ActionTools(Config::default().with_reasoning_tags(true), TOOLS),
        reasoning.as_bytes(),
    );
    assert!(calls(&events).is_empty());
}

#[test]
fn a_too_large_element_is_dropped_with_an_error_and_no_call() {
    let mut config = Config::default();
    config.max_block_bytes = 40;
    let events = decode_all_ways(ActionTools(config, TOOLS), CALL.as_bytes());
    assert!(calls(&events).is_empty());
    assert_eq!(codes_of(&events), ["block_too_large"]);
}

#[test]
fn argument_events_off_change_nothing_else() {
    let input = format!("A\n{CALL}\nB <get_weather><city>x</city>");
    let run = |on: bool| {
        let mut decoder = Decoder::new(Config::default())
            .with_bare_call_tools(TOOLS)
            .with_param_events(on);
        assert_eq!(decoder.bare_call_tools(), TOOLS);
        let mut events = Vec::new();
        decoder.feed(&input, |e| events.push(e.into_owned()));
        decoder.finish(|e| events.push(e.into_owned()));
        events
    };
    let on: Vec<_> = run(true)
        .into_iter()
        .filter(|e| {
            !matches!(
                e,
                Event::CallStart { .. }
                    | Event::ParamStart { .. }
                    | Event::ParamText { .. }
                    | Event::ParamEnd { .. }
                    | Event::CallEnd { .. }
            )
        })
        .collect();
    assert_eq!(run(false), on);
}

#[test]
fn names_are_bounded_and_checked() {
    let long = "n".repeat(MAX_BARE_CALL_NAME_BYTES + 1);
    let fits = "n".repeat(MAX_BARE_CALL_NAME_BYTES);
    let offered = [
        "get_weather",
        "ACTION",
        "think",
        "bad name",
        "1st",
        long.as_str(),
        fits.as_str(),
        "get_weather",
    ];
    let decoder = Decoder::new(Config::default()).with_bare_call_tools(offered);
    assert_eq!(decoder.bare_call_tools(), ["get_weather", fits.as_str()]);
    let many: Vec<String> = (0..MAX_BARE_CALL_TOOLS + 10)
        .map(|i| format!("t{i}"))
        .collect();
    let decoder = Decoder::default().with_bare_call_tools(&many);
    assert_eq!(decoder.bare_call_tools(), &many[..MAX_BARE_CALL_TOOLS]);
    // The longest name still works, split every way.
    let input = format!("<{fits}><a>1</a></{fits}>");
    let names: &'static [&'static str] =
        Box::leak(vec![&*Box::leak(fits.into_boxed_str())].into_boxed_slice());
    let events = decode_all_ways(ActionTools(Config::default(), names), input.as_bytes());
    assert_eq!(calls(&events).len(), 1);
}

/// Pieces of replies: prose, bare elements (offered or not, closed or not), blocks,
/// fences, quotes.
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

    /// Any mix of the pieces: the same events however split, with and without reasoning
    /// sections, and the text is the input outside the blocks (checked by the kit).
    #[test]
    fn every_split_gives_the_same_events(pieces in prop::collection::vec(piece(), 1..8)) {
        let input: String = pieces.concat();
        decode_all_ways(ActionTools(Config::default(), TOOLS), input.as_bytes());
        decode_all_ways(ActionTools(Config::default().with_reasoning_tags(true), TOOLS), input.as_bytes());
    }
}
