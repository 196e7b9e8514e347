//! Feature `serde`: the JSON forms of the decoder's types, round trips of the owned ones,
//! borrowed events, and a real-shaped stream decoded every way and serialized.
#![cfg(feature = "serde")]

mod common;

use std::borrow::Cow;

use serde_json::json;
use tam_parse::{
    Block, ByteString, Call, Code, Config, Diagnostic, Dialect, Event, Param, Severity, Span,
};
use tam_testkit::round_trip;

/// The span of the first `needle` in `haystack`.
fn span_of(haystack: &str, needle: &str) -> Span {
    let start = haystack
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the input"));
    Span::new(start, start + needle.len())
}

#[test]
fn plain_values_have_their_json_forms() {
    round_trip(&Span::new(3, 9), json!([3, 9]));
    round_trip(&Severity::Warning, json!("warning"));
    round_trip(&Severity::Error, json!("error"));
    round_trip(&Dialect::Tam, json!("tam"));
    round_trip(&Dialect::Vcp, json!("vcp"));
    round_trip(&ByteString::from("a「末」\"b"), json!("a「末」\"b"));
    assert_eq!(
        serde_json::to_value(Code::MISSING_COMMAND).unwrap(),
        json!("missing_command")
    );
    let code: Code = serde_json::from_str("\"bare_brackets\"").unwrap();
    assert_eq!(code, Code::BARE_BRACKETS);
    // A code of another crate (action-xml's) reads back as the same name.
    let other: Code = serde_json::from_str("\"malformed_xml\"").unwrap();
    assert_eq!(other.as_str(), "malformed_xml");
}

#[test]
fn malformed_values_are_refused_not_panicked_on() {
    for bad in [
        "[9, 3]",
        "[1]",
        "[1, 2, 3]",
        "{\"start\": 1}",
        "\"1..2\"",
        "[-1, 2]",
    ] {
        assert!(
            serde_json::from_str::<Span>(bad).is_err(),
            "span {bad} accepted"
        );
    }
    for bad in ["\"Stray Text\"", "\"\"", "7", "\"a-b\""] {
        assert!(
            serde_json::from_str::<Code>(bad).is_err(),
            "code {bad} accepted"
        );
    }
    assert!(serde_json::from_str::<Severity>("\"fatal\"").is_err());
    assert!(serde_json::from_str::<Dialect>("\"Tam\"").is_err());
    // A diagnostic without its span, an event of no known type.
    assert!(
        serde_json::from_str::<Diagnostic>(
            r#"{"severity":"error","code":"stray_text","message":"m"}"#
        )
        .is_err()
    );
    assert!(serde_json::from_str::<Event<'_>>(r#"{"type":"tool_calls","span":[0,1]}"#).is_err());
}

#[test]
fn diagnostics_leave_out_an_absent_raw() {
    let plain = Diagnostic::warning(Code::STRAY_TEXT, Span::new(4, 7), "stray text 'abc'");
    round_trip(
        &plain,
        json!({"severity": "warning", "code": "stray_text", "message": "stray text 'abc'", "span": [4, 7]}),
    );
    let with_raw = Diagnostic::error(Code::UNTERMINATED_BLOCK, Span::new(0, 30), "never closed")
        .with_raw("<|[REQUEST_TOOL]|>command:「始」A");
    round_trip(
        &with_raw,
        json!({
            "severity": "error",
            "code": "unterminated_block",
            "message": "never closed",
            "span": [0, 30],
            "raw": "<|[REQUEST_TOOL]|>command:「始」A"
        }),
    );
}

#[test]
fn calls_and_blocks_built_with_their_constructors_round_trip() {
    let param = Param::new("file_Path", "src/main.rs", Span::new(40, 70));
    assert_eq!(&*param.canonical, "filepath");
    round_trip(
        &param,
        json!({"key": "file_Path", "canonical": "filepath", "value": "src/main.rs", "span": [40, 70]}),
    );
    let call = Call::new(2, "File.Read", vec![param.clone()], Span::new(18, 39));
    assert_eq!(call.get("file-path"), Some("src/main.rs"));
    let call_json = json!({
        "index": 2,
        "tool": "File.Read",
        "params": [{"key": "file_Path", "canonical": "filepath", "value": "src/main.rs", "span": [40, 70]}],
        "span": [18, 39]
    });
    round_trip(&call, call_json.clone());
    let block = Block::new(
        Span::new(0, 90),
        vec![call],
        vec![Diagnostic::warning(
            Code::STRAY_TEXT,
            Span::new(71, 74),
            "stray",
        )],
        "<|[REQUEST_TOOL]|>…<|[END_TOOL]|>",
    );
    round_trip(
        &block,
        json!({
            "span": [0, 90],
            "calls": [call_json],
            "diagnostics": [{"severity": "warning", "code": "stray_text", "message": "stray", "span": [71, 74]}],
            "raw": "<|[REQUEST_TOOL]|>…<|[END_TOOL]|>"
        }),
    );
    // Deserialized, the strings are plain buffers: slicing them still works.
    let back: Block = serde_json::from_value(serde_json::to_value(&block).unwrap()).unwrap();
    assert_eq!(back.calls[0].get("filepath"), Some("src/main.rs"));
    assert!(!back.has_errors());
}

#[test]
fn borrowed_events_serialize_as_owned_ones_and_read_back_owned() {
    let input = String::from("Hi <b>&amp;</b>");
    let borrowed = Event::Text {
        text: Cow::Borrowed(&input[..]),
        span: Span::new(0, input.len()),
    };
    let expected = json!({"type": "text", "text": "Hi <b>&amp;</b>", "span": [0, 15]});
    assert_eq!(serde_json::to_value(&borrowed).unwrap(), expected);
    assert_eq!(
        serde_json::to_string(&borrowed).unwrap(),
        serde_json::to_string(&borrowed.clone().into_owned()).unwrap()
    );

    // Read back, text and keys are owned (`Event<'static>` is `DeserializeOwned`), escapes
    // decoded, whatever the JSON text's lifetime.
    let read = |json: String| -> Event<'static> { serde_json::from_str(&json).unwrap() };
    let piece = read(String::from(
        r#"{"type":"param_text","text":"fn main() { a < b && c }","span":[5,29]}"#,
    ));
    assert!(matches!(
        &piece,
        Event::ParamText { text: Cow::Owned(text), span }
            if text == "fn main() { a < b && c }" && *span == Span::new(5, 29)
    ));
    let key = read(String::from(
        r#"{"type":"param_start","key":"a\"b\n","span":[0,4]}"#,
    ));
    assert_eq!(
        key,
        Event::ParamStart {
            key: Cow::Borrowed("a\"b\n"),
            span: Span::new(0, 4)
        }
    );
    let from_reader: Event<'static> =
        serde_json::from_reader(&br#"{"type":"text","text":"short","span":[0,5]}"#[..]).unwrap();
    assert_eq!(from_reader.span(), Span::new(0, 5));
}

#[test]
fn every_event_kind_has_its_tag() {
    let events = [
        (
            Event::BlockStart {
                span: Span::new(1, 19),
            },
            json!({"type": "block_start", "span": [1, 19]}),
        ),
        (
            Event::ParamEnd {
                span: Span::new(20, 40),
            },
            json!({"type": "param_end", "span": [20, 40]}),
        ),
        (
            Event::ReasoningStart {
                span: Span::new(0, 7),
            },
            json!({"type": "reasoning_start", "span": [0, 7]}),
        ),
        (
            Event::Reasoning {
                text: Cow::Borrowed("plan"),
                span: Span::new(7, 11),
            },
            json!({"type": "reasoning", "text": "plan", "span": [7, 11]}),
        ),
        (
            Event::ReasoningEnd {
                span: Span::new(11, 19),
            },
            json!({"type": "reasoning_end", "span": [11, 19]}),
        ),
        (
            Event::CommandSeen {
                call: 3,
                tool: ByteString::from("Shell.Run"),
                span: Span::new(41, 70),
            },
            json!({"type": "command_seen", "call": 3, "tool": "Shell.Run", "span": [41, 70]}),
        ),
        (
            Event::Diagnostic(Diagnostic::error(
                Code::INVALID_UTF8,
                Span::new(2, 3),
                "invalid UTF-8 bytes [ff]",
            )),
            json!({"type": "diagnostic", "severity": "error", "code": "invalid_utf8", "message": "invalid UTF-8 bytes [ff]", "span": [2, 3]}),
        ),
    ];
    for (event, expected) in events {
        round_trip(&event, expected);
    }
}

/// Chained calls, a comment, code with `<`, `&`, `&&` and quotes, prose around the block.
const CHAINED: &str = "Reading it first, then testing.\n<|[REQUEST_TOOL]|>\n# step 1\n\
command1:「始」File.Read「末」\nfile_path1:「始」src/main.rs「末」\n\
command2:「始」Shell.Run「末」\ncmd2:「始」cargo test -- <name> && echo \"ok\" | tee a&b「末」\n\
<|[END_TOOL]|>\nDone.";

#[test]
fn a_decoded_stream_serializes_to_the_expected_json_however_it_is_split() {
    // Argument events off: the serde forms of the other events.
    let events = common::decode_str(CHAINED, Config::default().with_param_events(false));
    let block_start = CHAINED.find("<|[REQUEST_TOOL]|>").unwrap();
    let block_end = CHAINED.find("<|[END_TOOL]|>").unwrap() + "<|[END_TOOL]|>".len();
    let command1 = span_of(CHAINED, "command1:「始」File.Read「末」");
    let path1 = span_of(CHAINED, "file_path1:「始」src/main.rs「末」");
    let command2 = span_of(CHAINED, "command2:「始」Shell.Run「末」");
    let cmd2 = span_of(
        CHAINED,
        "cmd2:「始」cargo test -- <name> && echo \"ok\" | tee a&b「末」",
    );
    let expected = json!([
        {"type": "text", "text": "Reading it first, then testing.\n", "span": [0, block_start]},
        {"type": "block_start", "span": [block_start, block_start + "<|[REQUEST_TOOL]|>".len()]},
        {"type": "command_seen", "call": 1, "tool": "File.Read", "span": command1},
        {"type": "command_seen", "call": 2, "tool": "Shell.Run", "span": command2},
        {
            "type": "block",
            "span": [block_start, block_end],
            "calls": [
                {
                    "index": 1,
                    "tool": "File.Read",
                    "params": [{"key": "file_path", "canonical": "filepath", "value": "src/main.rs", "span": path1}],
                    "span": command1
                },
                {
                    "index": 2,
                    "tool": "Shell.Run",
                    "params": [{"key": "cmd", "canonical": "cmd", "value": "cargo test -- <name> && echo \"ok\" | tee a&b", "span": cmd2}],
                    "span": command2
                }
            ],
            "diagnostics": [],
            "raw": &CHAINED[block_start..block_end]
        },
        {"type": "text", "text": "\nDone.", "span": [block_end, CHAINED.len()]}
    ]);
    assert_eq!(serde_json::to_value(&events).unwrap(), expected);
    // And back: the JSON of every way of feeding reads back as the same events.
    let back: Vec<Event<'static>> = serde_json::from_value(expected).unwrap();
    assert_eq!(back, events);
}

#[test]
fn a_cut_stream_serializes_its_unterminated_block_with_the_raw_text() {
    // A reply cut at the token limit inside a value: no call, the model's text kept.
    let input = "Writing it.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Write「末」\ncontent:「始」fn main() {\n    if a < b {";
    let events =
        common::decode_all_ways_cut(input.as_bytes(), Config::default().with_param_events(false));
    let block_start = input.find("<|[").unwrap();
    assert!(
        !events.iter().any(|e| matches!(e, Event::Block(_))),
        "a call the model did not finish never runs: {events:?}"
    );
    let Some(Event::Diagnostic(diagnostic)) = events.last() else {
        panic!("no diagnostic last: {events:?}");
    };
    let command = span_of(input, "command:「始」File.Write「末」");
    let expected = json!([
        {"type": "text", "text": "Writing it.\n", "span": [0, block_start]},
        {"type": "block_start", "span": [block_start, block_start + "<|[REQUEST_TOOL]|>".len()]},
        {"type": "command_seen", "call": 0, "tool": "File.Write", "span": command},
        {
            "type": "diagnostic",
            "severity": "error",
            "code": "unterminated_block",
            "message": diagnostic.message,
            "span": [block_start, input.len()],
            "raw": &input[block_start..]
        }
    ]);
    assert_eq!(serde_json::to_value(&events).unwrap(), expected);
}
