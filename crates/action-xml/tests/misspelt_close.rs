//! Close tags models get wrong (the repairs of docs/protocol/action-xml.md §6).
//!
//! * A misspelt close tag (`mismatched_close_tag`): a real model writes a parameter's
//!   value, closes it with another element's tag, and goes on with the call. Recorded from
//!   Qwen2.5-Coder-1.5B-Instruct on BFCL (`simple_python_380`, `multiple_160`,
//!   `parallel_multiple_170`, ACTION through `tam serve`): before the repair each block
//!   was malformed, and no call ran.
//! * A close tag with blanks between `</` and its name (`</ name>`, `noncanonical_tag`):
//!   recorded from Qwen2.5-Coder-1.5B through `tam serve`. Before the repair the block was
//!   malformed, and the first call's arguments had streamed for a call that never ran.
//! * A parameter never closed before its call's close tag (`missing_close_tag`): recorded
//!   from Qwen2.5-Coder-1.5B on BFCL (`irrelevance_120`). Before the repair the block was
//!   malformed, and two of the call's arguments had streamed for a call that never ran.

mod common;

use action_xml::{ActionBlock, Config, Event, ValueEdges, codes};
use common::Action;
use proptest::prelude::*;
use serde_json::json;
use tam_testkit::Harness;

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

/// The reply as the model wrote it: `<drinking_duration>` never closed before
/// `</caffeine_effect>`.
const LEFT_OPEN_REPLY: &str = "<ACTION>\n<caffeine_effect><caffeine_content>200</caffeine_content><drinking_frequency>daily</drinking_frequency><drinking_duration>100</caffeine_effect>\n</ACTION>";

fn left_open(block: &ActionBlock) -> Vec<&str> {
    block
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::MISSING_CLOSE_TAG)
        .map(|d| d.message.as_str())
        .collect()
}

/// The reply from the model, fed whole, char by char, byte by byte, in random splits and
/// cut at every prefix: the parameter ends at the call's close tag, the call runs with its
/// three arguments and one `missing_close_tag` warning, and what streamed is that call,
/// ended, every parameter with its value.
#[test]
fn a_parameter_left_open_ends_at_its_calls_close_tag() {
    let events = common::decode(LEFT_OPEN_REPLY);
    assert_eq!(common::codes(&events), ["missing_close_tag"]);
    let b = block(LEFT_OPEN_REPLY);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(b.calls[0].tool, "caffeine_effect");
    assert_eq!(
        serde_json::Value::Object(b.calls[0].args.clone()),
        json!({"caffeine_content": "200", "drinking_frequency": "daily", "drinking_duration": "100"})
    );
    assert_eq!(
        left_open(&b),
        ["<drinking_duration> not closed before </caffeine_effect>; closed there"]
    );
    // The warning points at the call's close tag; the parameter's content ends before it.
    let tag = "</caffeine_effect>";
    let at = LEFT_OPEN_REPLY.find(tag).unwrap();
    let d = &b.diagnostics[0];
    assert_eq!((d.span.start, d.span.end), (at, at + tag.len()));
    assert_eq!(b.calls[0].source("drinking_duration"), Some("100"));
    let param = b.calls[0]
        .params
        .iter()
        .find(|p| p.key == "drinking_duration")
        .unwrap();
    assert_eq!(param.content_span.end, at);
    assert_eq!(b.calls[0].span.end, at + tag.len());
    // What streamed is what runs.
    let calls = streamed(&events);
    assert_eq!(calls, as_streamed(&b));
    assert_eq!(calls[0].params.len(), 3);
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ParamEnd { span } => Some(span.end),
            Event::CallEnd { span, .. } => Some(span.end),
            _ => None,
        })
        .collect();
    let param_ends =
        |key: &str| LEFT_OPEN_REPLY.find(&format!("</{key}>")).unwrap() + key.len() + 3;
    assert_eq!(
        ends,
        [
            param_ends("caffeine_content"),
            param_ends("drinking_frequency"),
            at,
            at + tag.len()
        ]
    );
}

/// Code in the parameter left open: the elements opened in it and never closed
/// (`Vec<T>`) are text, as at the parameter's own close tag; the call's close tag may be
/// written with blanks or in another case (`noncanonical_tag` too).
#[test]
fn a_value_of_code_left_open_ends_at_its_calls_close_tag() {
    for close in [
        "</write_to_file>",
        "</ write_to_file >",
        "</Write_To_File>",
        "</\tWRITE_TO_FILE>",
    ] {
        let input = format!(
            "<ACTION><write_to_file><path>a.rs</path><content>fn f() -> Vec<T> {{}}{close}</ACTION>"
        );
        let events = common::decode(&input);
        let b = block(&input);
        assert!(!b.has_errors(), "{input}: {:?}", b.diagnostics);
        assert_eq!(b.calls.len(), 1, "{input}");
        assert_eq!(b.calls[0].get_str("path"), Some("a.rs"));
        assert_eq!(
            b.calls[0].get_str("content"),
            Some("fn f() -> Vec<T> {}"),
            "{input}"
        );
        assert_eq!(
            left_open(&b),
            ["<content> not closed before </write_to_file>; closed there"],
            "{input}"
        );
        assert!(b.diagnostics.iter().any(|d| d.code == codes::UNESCAPED_LT));
        assert_eq!(
            noncanonical(&b),
            usize::from(close != "</write_to_file>"),
            "{input}"
        );
        assert_eq!(streamed(&events), as_streamed(&b), "{input}");
    }
}

/// The reply cut anywhere before `</caffeine_effect>` is complete (fed whole and one byte
/// at a time): the call the model did not finish never ends and never runs; cut right
/// after it, the call closed and runs (`</ACTION>` missing), as it streamed.
#[test]
fn a_reply_cut_before_the_calls_close_tag_runs_no_call() {
    let tag = "</caffeine_effect>";
    let at = LEFT_OPEN_REPLY.find(tag).unwrap();
    let body = LEFT_OPEN_REPLY.find("<caffeine_effect>").unwrap();
    for end in body..at + tag.len() {
        let input = &LEFT_OPEN_REPLY[..end];
        for pieces in [vec![input], input.split_inclusive(|_| true).collect()] {
            let events = Action(Config::default()).run_str(pieces);
            assert!(
                !events.iter().any(|e| matches!(e, Event::CallEnd { .. })),
                "{input}"
            );
            let blocks = common::blocks(&events);
            assert!(blocks.iter().all(|b| b.calls.is_empty()), "{input}");
        }
    }
    // Inside the tag, every way: the same.
    for end in at..at + tag.len() {
        let input = &LEFT_OPEN_REPLY[..end];
        let events = common::decode(input);
        assert!(block(input).calls.is_empty(), "{input}");
        assert!(
            !events.iter().any(|e| matches!(e, Event::CallEnd { .. })),
            "{input}"
        );
    }
    let input = &LEFT_OPEN_REPLY[..at + tag.len()];
    let events = common::decode(input);
    let b = block(input);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(b.calls[0].get_str("drinking_duration"), Some("100"));
    assert_eq!(left_open(&b).len(), 2, "{:?}", b.diagnostics);
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// In a CDATA section the call's close tag is text; after it, the call's close tag ends
/// the parameter still open, CDATA content and all.
#[test]
fn the_calls_close_tag_in_cdata_is_text() {
    let input = "<ACTION><caffeine_effect><drinking_duration><![CDATA[100</caffeine_effect>]]></drinking_duration></caffeine_effect></ACTION>";
    let events = common::decode(input);
    let b = block(input);
    assert!(b.diagnostics.is_empty(), "{:?}", b.diagnostics);
    assert_eq!(
        b.calls[0].get_str("drinking_duration"),
        Some("100</caffeine_effect>")
    );
    assert_eq!(streamed(&events), as_streamed(&b));
    let input = "<ACTION><caffeine_effect><drinking_duration><![CDATA[1</caffeine_effect>]]>00</caffeine_effect></ACTION>";
    let events = common::decode(input);
    let b = block(input);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(left_open(&b).len(), 1);
    assert_eq!(
        b.calls[0].get_str("drinking_duration"),
        Some("1</caffeine_effect>00")
    );
    assert_eq!(streamed(&events), as_streamed(&b));
}

/// What the repair leaves as it was: a value that holds a close tag of another name and
/// closes properly is text; one that holds a close tag matching nothing when the call
/// closes is the misspelt tag repair (one) or malformed (two); an element of the call's
/// name inside a value closes there, not the call.
#[test]
fn other_close_tags_in_a_value_stay_as_they_were() {
    let input = "<ACTION><caffeine_effect><drinking_duration>100</other_name> days</drinking_duration></caffeine_effect></ACTION>";
    let events = common::decode(input);
    let b = block(input);
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert!(left_open(&b).is_empty());
    assert_eq!(
        b.calls[0].get_str("drinking_duration"),
        Some("100</other_name> days")
    );
    assert_eq!(streamed(&events), as_streamed(&b));
    // One close tag that matched nothing: it was the parameter's, misspelt.
    let b = block(
        "<ACTION><caffeine_effect><drinking_duration>100</other_name></caffeine_effect></ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert!(left_open(&b).is_empty());
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls[0].get_str("drinking_duration"), Some("100"));
    // Two: no guess.
    let b = block(
        "<ACTION><caffeine_effect><drinking_duration>100</a> x</b></caffeine_effect></ACTION>",
    );
    assert!(b.calls.is_empty());
    assert!(b.diagnostics.iter().any(|d| d.code == codes::MALFORMED_XML));
    // An element of the call's name in a value: its close tag is its own.
    for value in ["x <c>y</c> z", "x <c >y</c> z <c/>", "x <c>a <c>b</c></c>"] {
        let input = format!("<ACTION><c><p>{value}</p></c></ACTION>");
        let events = common::decode(&input);
        let b = block(&input);
        assert!(!b.has_errors(), "{input}: {:?}", b.diagnostics);
        assert!(left_open(&b).is_empty(), "{input}");
        assert_eq!(b.calls[0].get_str("p"), Some(value), "{input}");
        assert_eq!(streamed(&events), as_streamed(&b), "{input}");
        // Left open, the call's close tag after it ends the parameter.
        let input = format!("<ACTION><c><p>{value}</c></ACTION>");
        let events = common::decode(&input);
        let b = block(&input);
        assert!(!b.has_errors(), "{input}: {:?}", b.diagnostics);
        assert_eq!(left_open(&b).len(), 1, "{input}");
        assert_eq!(b.calls[0].get_str("p"), Some(value), "{input}");
        assert_eq!(streamed(&events), as_streamed(&b), "{input}");
    }
}

/// A parameter left open after the `</ACTION>` or at the end of the stream: the rules
/// before this repair (closed at `</ACTION>` and run; a call the model did not finish
/// never runs).
#[test]
fn a_parameter_left_open_at_the_end_of_the_block_is_as_before() {
    let b = block("<ACTION><t><a>1</ACTION>");
    assert_eq!(b.calls.len(), 1);
    assert_eq!(
        left_open(&b),
        ["<a>, <t> not closed before </ACTION>; closed there"]
    );
    let b = block("<ACTION><t><a>1");
    assert!(b.calls.is_empty());
    assert!(
        b.diagnostics
            .iter()
            .any(|d| d.code == codes::UNTERMINATED_BLOCK)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Calls whose last parameter is left open (its value of code or not), closed by the
    /// call's close tag as written, with blanks or in another case, beside calls closed
    /// properly: the block runs the calls as written, one `missing_close_tag` per call
    /// left open, and what streamed — fed whole, one char or byte at a time, in random
    /// splits, cut at every prefix — is those calls, each ended, with their values.
    #[test]
    fn parameters_left_open_stream_what_runs(
        calls in prop::collection::vec(
            (
                prop::sample::select(vec!["caffeine_effect", "t", "w"]),
                0usize..6,
                prop::collection::vec(prop::sample::select(VALUES), 1..4),
                prop::bool::ANY,
            ),
            1..4,
        ),
    ) {
        let keys = ["team", "v", "content"];
        let mut input = String::from("Calling.\n<ACTION>\n");
        let mut want = Vec::new();
        let mut open = 0;
        for (index, (tool, style, values, leave_open)) in calls.iter().enumerate() {
            input.push_str(&format!("<{tool}>"));
            let mut read = Vec::new();
            for (i, (key, (value, value_read, _))) in keys.iter().zip(values).enumerate() {
                input.push_str(&format!("<{key}>{value}"));
                if !(*leave_open && i + 1 == values.len()) {
                    input.push_str(&format!("</{key}>"));
                }
                read.push((key.to_string(), value_read.to_string()));
            }
            open += usize::from(*leave_open);
            // `</T>`: the case repair.
            let close = if *style == 5 {
                format!("</{}>", tool.to_ascii_uppercase())
            } else {
                close_tag(tool, *style, true)
            };
            input.push_str(&close);
            input.push('\n');
            want.push(Streamed { index, tool: tool.to_string(), params: read, ended: true });
        }
        input.push_str("</ACTION>\nDone.");
        let events = common::decode(&input);
        let blocks = common::blocks(&events);
        prop_assert_eq!(blocks.len(), 1);
        prop_assert!(!blocks[0].has_errors(), "{}: {:?}", input, blocks[0].diagnostics);
        prop_assert_eq!(left_open(blocks[0]).len(), open, "{}: {:?}", input, blocks[0].diagnostics);
        prop_assert_eq!(&as_streamed(blocks[0]), &want, "{}", input);
        prop_assert_eq!(&streamed(&events), &want, "{}", input);
    }
}

/// Pieces of values for [`a_call_ends_in_the_stream_only_as_it_runs`]: code, tags of the
/// call (`c`), of the parameters (`p`, `q`) and of other elements, in CDATA or not.
const PIECES: &[&str] = &[
    "x",
    " ",
    "Vec<T>",
    "a < b",
    "&amp;",
    "</c>",
    "<c>",
    "</C>",
    "</ c>",
    "</ C >",
    "<c/>",
    "<c a='1'>",
    "</x>",
    "<x>",
    "</ x>",
    "</p>",
    "<p>",
    "</q>",
    "<![CDATA[</c>]]>",
    "<!-- </c> -->",
    "</t>",
];

/// `value` with its close tags as the block's value holds them when the repairs rewrote
/// them inside the value (`</ x>`, `</X>` closing `<x>`: `</x>`): blanks after `</` gone,
/// ASCII lower case.
fn as_repaired(value: &str) -> String {
    let mut out = value.to_ascii_lowercase();
    while let Some(at) = out.find("</ ") {
        out.remove(at + 2);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Values full of the call's tags and others, parameters closed or left open, the
    /// call's close tag in its forms: in a block without errors, when the call ends in the
    /// stream (fed whole, one char or byte at a time, in random splits, cut at every
    /// prefix), it is the block's first call, with the parameters that streamed and, for
    /// string values, their values: the stream never ends the call where the block reads
    /// it otherwise. Left aside: what comes after a call's close tag may still make the
    /// block malformed, and no call runs (the stream cannot wait for it); the misspelt
    /// close tag repair (`mismatched_close_tag`) reads a value up to a tag that streamed
    /// as text (the stream cannot take it back); the calls the rest of the input makes
    /// after the first closed; and a parameter named as its call (`<c>` after `</p>`), whose
    /// close tag and the call's are one to the streamer.
    #[test]
    fn a_call_ends_in_the_stream_only_as_it_runs(
        values in prop::collection::vec(
            (prop::collection::vec(prop::sample::select(PIECES), 0..6), prop::bool::ANY),
            1..3,
        ),
        call_close in prop::sample::select(&["</c>", "</ c>", "</C>", "</ C >"][..]),
    ) {
        let mut input = String::from("<ACTION><c>");
        for ((pieces, closed), key) in values.iter().zip(["p", "q"]) {
            input.push_str(&format!("<{key}>{}", pieces.concat()));
            if *closed {
                input.push_str(&format!("</{key}>"));
            }
        }
        input.push_str(call_close);
        input.push_str("</ACTION>");
        let events = common::decode(&input);
        let blocks = common::blocks(&events);
        prop_assert_eq!(blocks.len(), 1);
        if blocks[0].has_errors() || warned(blocks[0]) > 0 {
            return Ok(());
        }
        let ours = |c: &&Streamed| c.params.iter().all(|(k, _)| k == "p" || k == "q");
        let calls = streamed(&events);
        for call in calls.iter().filter(|c| c.ended && c.index == 0).filter(ours) {
            let ran = blocks[0].calls.get(call.index);
            prop_assert!(ran.is_some(), "{}: {:?}", input, blocks[0].diagnostics);
            let ran = ran.unwrap();
            prop_assert_eq!(&ran.tool, &call.tool);
            let keys: Vec<&str> = ran.args.keys().map(String::as_str).collect();
            // A key written twice is one argument (a list).
            let mut streamed_keys: Vec<&str> = Vec::new();
            for (key, _) in &call.params {
                if !streamed_keys.contains(&key.as_str()) {
                    streamed_keys.push(key);
                }
            }
            prop_assert_eq!(keys, streamed_keys, "{}", input);
            for (key, value) in &call.params {
                if let Some(s) = ran.get_str(key) {
                    prop_assert_eq!(as_repaired(s), as_repaired(value), "{}: {}", input, key);
                }
            }
        }
    }
}
