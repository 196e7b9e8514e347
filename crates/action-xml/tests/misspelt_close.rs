//! Close tags models get wrong (SPEC §3 repairs).
//!
//! * A misspelt close tag (`mismatched_close_tag`): a real model writes a parameter's
//!   value, closes it with another element's tag, and goes on with the call. Recorded from
//!   Qwen2.5-Coder-1.5B-Instruct on BFCL (`simple_python_380`, `multiple_160`,
//!   `parallel_multiple_170`, ACTION through `tam serve`): before the repair each block
//!   was malformed, and no call ran.
//! * A close tag with blanks between `</` and its name (`</ name>`, `noncanonical_tag`):
//!   recorded from Qwen2.5-Coder-1.5B through `tam serve`. Before the repair the block was
//!   malformed, and the first call's arguments had streamed for a call that never ran.

mod common;

use action_xml::{ActionBlock, Config, Event, ValueEdges, codes};
use proptest::prelude::*;
use serde_json::json;
use tam_testkit::{Action, Harness};

/// The one block of `input`, decoded every way (whole, char by char, every prefix, random
/// splits: the same events each time).
fn block(input: &str) -> ActionBlock {
    let events = common::decode(input);
    let blocks = common::blocks(&events);
    assert_eq!(blocks.len(), 1);
    blocks[0].clone()
}

fn warned(block: &ActionBlock) -> usize {
    block
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::MISMATCHED_CLOSE_TAG)
        .count()
}

#[test]
fn a_value_closed_by_another_parameters_tag_ends_there() {
    let b = block(
        "<ACTION>\n<hotel_booking><location>New York</location><room_type>single</room_type><duration>3</duration><start_date>March 10th, 2023</room_type><preferences><item>pet friendly</item></preferences></hotel_booking>\n</ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(
        serde_json::Value::Object(b.calls[0].args.clone()),
        json!({"location": "New York", "room_type": "single", "duration": "3",
               "start_date": "March 10th, 2023", "preferences": ["pet friendly"]})
    );
    assert_eq!(b.calls[0].source("start_date"), Some("March 10th, 2023"));
}

#[test]
fn a_misspelt_close_tag_then_the_calls_close_tag() {
    let b = block(
        "<ACTION>\n<create_player_profile><player_name>DragonSlayer</player_name><class_type>Warrior</class_type><starting_level>5</class_type></create_player_profile>\n<concert_find_nearby><location>New York, NY</location><genre>Rock</genre></concert_find_nearby>\n</ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 1);
    let tools: Vec<&str> = b.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["create_player_profile", "concert_find_nearby"]);
    assert_eq!(b.calls[0].get_str("starting_level"), Some("5"));
}

#[test]
fn text_after_the_misspelt_tag_is_stray_text_of_the_call() {
    let b = block(
        "<ACTION>\n<get_sculpture_info><artist_name>James Plensa</detail>true</get_sculpture_info>\n</ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(b.calls[0].get_str("artist_name"), Some("James Plensa"));
    assert!(b.diagnostics.iter().any(|d| d.code == codes::STRAY_TEXT));
}

/// Code with a close tag that matches nothing, in a value that closes properly: text, as
/// before (`unescaped_lt`), no `mismatched_close_tag`.
#[test]
fn an_unmatched_close_tag_in_a_value_that_closes_is_text() {
    let b = block(
        "<ACTION><write_file><path>a.js</path><content>let s = \"</div>\";</content></write_file></ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 0);
    assert_eq!(b.calls[0].get_str("content"), Some("let s = \"</div>\";"));
}

/// Two close tags that match nothing, then the call's: which one was meant is a guess, so
/// no repair; the block stays malformed and nothing runs.
#[test]
fn two_unmatched_close_tags_are_no_repair() {
    let b = block("<ACTION><t><a>x</b>y</c></t></ACTION>");
    assert!(b.calls.is_empty());
    assert_eq!(warned(&b), 0);
    assert!(b.diagnostics.iter().any(|d| d.code == codes::MALFORMED_XML));
}

/// A block the stream ended in without `</ACTION>`: the repair applies the same, and the
/// call, closed, runs (the missing `</ACTION>` repair).
#[test]
fn the_repair_applies_at_the_end_of_the_stream() {
    let b = block("<ACTION><t><a>x</b></t>");
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(b.calls[0].get_str("a"), Some("x"));
}

/// The reply as the model wrote it: the first call closed by `</ soccer_scores_get_scores>`.
const SPACED_REPLY: &str = "<ACTION>\n<soccer_scores_get_scores><team>Manchester United</team><league>English Premier League</league><rounds>5</rounds></ soccer_scores_get_scores>\n<basketball_scores_get_scores><team>Los Angeles Lakers</team><league>NBA</league><rounds>7</rounds></basketball_scores_get_scores>\n</ACTION>";

/// A call as it streamed: its index, tool, the parameters that ended (key, pieces through
/// [`ValueEdges`]), and whether the call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Streamed {
    index: usize,
    tool: String,
    params: Vec<(String, String)>,
    ended: bool,
}

/// The calls that streamed in `events`.
fn streamed(events: &[Event<'static>]) -> Vec<Streamed> {
    let mut calls: Vec<Streamed> = Vec::new();
    let mut param: Option<(String, String, ValueEdges)> = None;
    for e in events {
        match e {
            Event::CallStart { index, tool, .. } => calls.push(Streamed {
                index: *index,
                tool: tool.clone(),
                params: Vec::new(),
                ended: false,
            }),
            Event::ParamStart { key, .. } => {
                param = Some((key.to_string(), String::new(), ValueEdges::new()));
            }
            Event::ParamText { text, span, cdata } => {
                if let Some((_, value, edges)) = &mut param {
                    edges.push(text, *span, *cdata, value);
                }
            }
            Event::ParamEnd { .. } => {
                if let (Some((key, mut value, mut edges)), Some(call)) =
                    (param.take(), calls.last_mut())
                {
                    edges.finish(&mut value);
                    call.params.push((key, value));
                }
            }
            Event::CallEnd { index, .. } => {
                let call = calls.last_mut().expect("a call ends after it starts");
                assert_eq!(call.index, *index);
                call.ended = true;
            }
            _ => {}
        }
    }
    calls
}

/// The calls of `block` as they would have streamed: every one ended, string values.
fn as_streamed(block: &ActionBlock) -> Vec<Streamed> {
    block
        .calls
        .iter()
        .enumerate()
        .map(|(index, c)| Streamed {
            index,
            tool: c.tool.clone(),
            params: c
                .args
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("a string value").to_owned()))
                .collect(),
            ended: true,
        })
        .collect()
}

fn noncanonical(block: &ActionBlock) -> usize {
    block
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::NONCANONICAL_TAG)
        .count()
}

/// The reply from the model, fed whole, char by char, byte by byte, in random splits and
/// cut at every prefix: two calls with their arguments, one `noncanonical_tag` warning, and
/// the arguments that streamed are those of the calls that run (the first call ends at
/// `</ soccer_scores_get_scores>`; the second starts after it).
#[test]
fn a_close_tag_with_blanks_before_its_name_closes_its_call() {
    let events = common::decode(SPACED_REPLY);
    assert_eq!(common::codes(&events), ["noncanonical_tag"]);
    let b = block(SPACED_REPLY);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(noncanonical(&b), 1);
    let tools: Vec<&str> = b.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(
        tools,
        ["soccer_scores_get_scores", "basketball_scores_get_scores"]
    );
    assert_eq!(
        serde_json::Value::Object(b.calls[0].args.clone()),
        json!({"team": "Manchester United", "league": "English Premier League", "rounds": "5"})
    );
    assert_eq!(
        serde_json::Value::Object(b.calls[1].args.clone()),
        json!({"team": "Los Angeles Lakers", "league": "NBA", "rounds": "7"})
    );
    // The warning points at the tag as written.
    let d = b
        .diagnostics
        .iter()
        .find(|d| d.code == codes::NONCANONICAL_TAG)
        .unwrap();
    let tag = "</ soccer_scores_get_scores>";
    let at = SPACED_REPLY.find(tag).unwrap();
    assert_eq!((d.span.start, d.span.end), (at, at + tag.len()));
    assert_eq!(b.calls[0].span.end, at + tag.len());
    // What streamed is what runs: no call streamed that does not.
    assert_eq!(streamed(&events), as_streamed(&b));
    let call_end = events
        .iter()
        .find_map(|e| match e {
            Event::CallEnd { index: 0, span } => Some(*span),
            _ => None,
        })
        .unwrap();
    assert_eq!(call_end.end, at + tag.len());
}

/// A parameter's close tag with blanks, and blanks before its `>`: it closes the
/// parameter, which streams and ends.
#[test]
fn a_parameters_close_tag_with_blanks_closes_it() {
    let input =
        "<ACTION><get_weather><city>Paris</ city><unit>C</\t unit >\n</get_weather></ACTION>";
    let events = common::decode(input);
    let b = block(input);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(
        serde_json::Value::Object(b.calls[0].args.clone()),
        json!({"city": "Paris", "unit": "C"})
    );
    // Two tags repaired, one warning with the count.
    assert_eq!(noncanonical(&b), 1);
    assert!(
        b.diagnostics[0].message.ends_with("(2 times)"),
        "{:?}",
        b.diagnostics
    );
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// `</ Soccer_Scores_Get_Scores>` closes `<soccer_scores_get_scores>`, as the case repair
/// reads `</Soccer_Scores_Get_Scores>`: one warning for the tag, the call streams and ends.
#[test]
fn a_close_tag_with_blanks_may_differ_in_case() {
    let input = SPACED_REPLY.replace(
        "</ soccer_scores_get_scores>",
        "</ Soccer_Scores_Get_Scores >",
    );
    let events = common::decode(&input);
    assert_eq!(common::codes(&events), ["noncanonical_tag"]);
    let b = block(&input);
    assert_eq!(b.calls.len(), 2);
    assert_eq!(b.calls[0].tool, "soccer_scores_get_scores");
    assert_eq!(b.calls[0].get_str("rounds"), Some("5"));
    assert_eq!(streamed(&events), as_streamed(&b));
    // The same for a parameter.
    let input = "<ACTION><t><team>Lakers</ TEAM></t></ACTION>";
    let events = common::decode(input);
    let b = block(input);
    assert_eq!(noncanonical(&b), 1);
    assert_eq!(b.calls[0].get_str("team"), Some("Lakers"));
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// Inside a value of code, `</` and blanks that close no open element are text, as
/// before the repair: `</ div>` matches nothing, `if a </ b {}` begins no tag, and in a
/// CDATA section even the parameter's own name is text.
#[test]
fn a_close_tag_with_blanks_that_closes_nothing_is_text() {
    for (value, want, lt) in [
        ("let s = \"</ div>\";", "let s = \"</ div>\";", true),
        ("if a </ b {}", "if a </ b {}", true),
        ("x </\n", "x </", true),
        (
            "<![CDATA[if a </ content> b {}]]>",
            "if a </ content> b {}",
            false,
        ),
    ] {
        let input = format!(
            "<ACTION><write_file><path>a.rs</path><content>{value}</content></write_file></ACTION>"
        );
        let events = common::decode(&input);
        let b = block(&input);
        assert!(!b.has_errors(), "{input}: {:?}", b.diagnostics);
        assert_eq!(noncanonical(&b), 0, "{input}");
        assert_eq!(b.calls[0].get_str("content"), Some(want), "{input}");
        let warned_lt = b.diagnostics.iter().any(|d| d.code == codes::UNESCAPED_LT);
        assert_eq!(warned_lt, lt, "{input}: {:?}", b.diagnostics);
        assert_eq!(streamed(&events), as_streamed(&b), "{input}");
    }
}

/// In a value, `</ name>` closes the element it names as `</name>` does: the elements
/// opened after it and never closed (`Vec<String>`) are text.
#[test]
fn a_close_tag_with_blanks_closes_its_element_past_unclosed_ones() {
    let input =
        "<ACTION><write_file><content>let v: Vec<String> = x;</ content></write_file></ACTION>";
    let events = common::decode(input);
    let b = block(input);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(noncanonical(&b), 1);
    assert_eq!(
        b.calls[0].get_str("content"),
        Some("let v: Vec<String> = x;")
    );
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// The stream ends inside the close tag with blanks (`</ `, `</ soccer_sc`, the name
/// without its `>`): the call the model did not finish never ends, and the block runs no
/// call (`unterminated_block`).
#[test]
fn a_reply_cut_inside_a_close_tag_with_blanks_runs_no_call() {
    let tag = "</ soccer_scores_get_scores>";
    let at = SPACED_REPLY.find(tag).unwrap();
    for cut in ["</ ", "</ soccer_sc", "</ soccer_scores_get_scores"] {
        let input = &SPACED_REPLY[..at + cut.len()];
        let events = common::decode(input);
        let b = block(input);
        assert!(b.calls.is_empty(), "{input}");
        assert!(
            b.diagnostics
                .iter()
                .any(|d| d.code == codes::UNTERMINATED_BLOCK),
            "{input}: {:?}",
            b.diagnostics
        );
        let calls = streamed(&events);
        assert_eq!(calls.len(), 1, "{input}");
        assert!(!calls[0].ended, "{input}");
    }
    // Cut anywhere in the tag (fed whole, then one byte at a time): the same.
    for end in at..at + tag.len() {
        let input = &SPACED_REPLY[..end];
        for pieces in [vec![input], input.split_inclusive(|_| true).collect()] {
            let events = Action(Config::default()).run_str(pieces);
            assert!(
                !events
                    .iter()
                    .any(|e| matches!(e, Event::CallEnd { index: 0, .. })),
                "{input}"
            );
            let blocks = common::blocks(&events);
            assert!(blocks[0].calls.is_empty(), "{input}");
        }
    }
    // The stream ends right after the tag: the call closed, and runs (`</ACTION>` missing).
    let input = &SPACED_REPLY[..at + tag.len()];
    let events = common::decode(input);
    let b = block(input);
    assert_eq!(b.calls.len(), 1);
    assert!(
        b.diagnostics
            .iter()
            .any(|d| d.code == codes::MISSING_CLOSE_TAG)
    );
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// The block's own close tag with blanks after `</` closes it (the scanner's
/// `noncanonical_tag`), after a call closed the same way.
#[test]
fn the_blocks_close_tag_with_blanks_closes_the_block() {
    let input = SPACED_REPLY.replace("\n</ACTION>", "\n</ ACTION>");
    let events = common::decode(&input);
    let b = block(&input);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(b.calls.len(), 2);
    assert_eq!(noncanonical(&b), 2);
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// Values for [`spaced_close_tags_stream_what_runs`]: (as written, as read, plain: no `<`
/// outside CDATA, so a close tag of another case closes it too).
const VALUES: &[(&str, &str, bool)] = &[
    ("Manchester United", "Manchester United", true),
    ("5", "5", true),
    ("", "", true),
    (" a &amp; b ", "a & b", true),
    ("if a </ b {}", "if a </ b {}", false),
    ("s = \"</ div>\";", "s = \"</ div>\";", false),
    ("Vec<String> x", "Vec<String> x", false),
    ("<![CDATA[x </ v> y]]>", "x </ v> y", true),
    ("a </\n b", "a </\n b", false),
];

/// How a close tag of `name` is written: `</name>` or with blanks, and maybe in another
/// case.
fn close_tag(name: &str, style: usize, plain: bool) -> String {
    match style {
        0 => format!("</{name}>"),
        1 => format!("</ {name}>"),
        2 => format!("</  {name} >"),
        3 => format!("</\t\n{name}>"),
        _ if plain => format!("</ {}>", name.to_ascii_uppercase()),
        _ => format!("</ {name}>"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Calls whose close tags are written with blanks before the name (and in another
    /// case), values of code among them: the block runs the calls as written, and what
    /// streamed — fed whole, one char or byte at a time, in random splits, cut at every
    /// prefix — is those calls, each ended, with their values.
    #[test]
    fn spaced_close_tags_stream_what_runs(
        calls in prop::collection::vec(
            (
                prop::sample::select(vec!["soccer_scores_get_scores", "t", "v"]),
                0usize..5,
                prop::collection::vec((prop::sample::select(VALUES), 0usize..5), 0..3),
            ),
            1..4,
        ),
    ) {
        let keys = ["team", "v", "content"];
        let mut input = String::from("Calling.\n<ACTION>\n");
        let mut want = Vec::new();
        for (index, (tool, style, params)) in calls.iter().enumerate() {
            input.push_str(&format!("<{tool}>"));
            let mut read = Vec::new();
            for (key, ((value, value_read, plain), style)) in keys.iter().zip(params) {
                input.push_str(&format!("<{key}>{value}{}", close_tag(key, *style, *plain)));
                read.push((key.to_string(), value_read.to_string()));
            }
            input.push_str(&close_tag(tool, *style, true));
            input.push('\n');
            want.push(Streamed { index, tool: tool.to_string(), params: read, ended: true });
        }
        input.push_str("</ACTION>\nDone.");
        let events = common::decode(&input);
        let blocks = common::blocks(&events);
        prop_assert_eq!(blocks.len(), 1);
        prop_assert!(!blocks[0].has_errors(), "{}: {:?}", input, blocks[0].diagnostics);
        prop_assert_eq!(&as_streamed(blocks[0]), &want, "{}", input);
        prop_assert_eq!(&streamed(&events), &want, "{}", input);
    }
}
