//! Feature `serde`: the JSON forms of the protocol names, and streams of both protocols
//! decoded every way and serialized — each event as its `tam decode` line.
#![cfg(feature = "serde")]

mod common;

use std::borrow::Cow;

use common::Front;
use serde_json::{Value, json};
use tam::{Code, Config, Event, Protocol, ProtocolChoice, Span};
use tam_testkit::{decode_all_ways, round_trip};

/// The span of the first `needle` in `haystack`.
fn span_of(haystack: &str, needle: &str) -> [usize; 2] {
    let start = haystack
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the input"));
    [start, start + needle.len()]
}

#[test]
fn choices_and_positions_have_their_json_forms() {
    round_trip(&Protocol::Tam, json!("tam"));
    round_trip(&Protocol::Action, json!("action"));
    for choice in ProtocolChoice::ALL {
        round_trip(&choice, json!(choice.as_str()));
    }
    // Read as the CLI flag is read.
    let auto: ProtocolChoice = serde_json::from_str("\"Both\"").unwrap();
    assert_eq!(auto, ProtocolChoice::Auto);
    let action: ProtocolChoice = serde_json::from_str("\" ACTION \"").unwrap();
    assert_eq!(action, ProtocolChoice::Action);
    let error = serde_json::from_str::<ProtocolChoice>("\"xml\"").unwrap_err();
    assert!(error.to_string().contains("unknown protocol"), "{error}");
    assert!(serde_json::from_str::<Protocol>("\"auto\"").is_err());
}

#[test]
fn borrowed_events_serialize_as_owned_ones() {
    let delta = String::from("<p>x</p> & y");
    let borrowed = action_xml::Event::ParamText {
        text: Cow::Borrowed(&delta[..]),
        span: Span::new(40, 52),
        cdata: false,
    };
    let mixed = Event::from(borrowed);
    assert_eq!(
        serde_json::to_value(&mixed).unwrap(),
        json!({"type": "param_text", "protocol": "action", "text": "<p>x</p> & y", "span": [40, 52]})
    );
    assert_eq!(
        serde_json::to_string(&mixed).unwrap(),
        serde_json::to_string(&mixed.clone().into_owned()).unwrap()
    );
}

/// Both protocols in one stream: a chained TAM block, an ACTION block, a block cut at the
/// token limit.
const MIXED: &str = "Plan:\n<|[REQUEST_TOOL]|>\ncommand1:「始」File.Read「末」\nfilePath1:「始」/a「末」\n\
command2:「始」Shell.Run「末」\ncmd_2:「始」ls -l && echo <x>「末」\n<|[END_TOOL]|>\n\
<ACTION><Publish><tags><item>x</item></tags><note> hi </note></Publish></ACTION>\n\
<|[REQUEST_TOOL]|>\ncommand:「始」File.Write「末」\ncontent:「始」fn main() {";

#[test]
fn mixed_events_serialize_as_the_tam_decode_lines() {
    let config = Config::default().with_param_events(false);
    let events = decode_all_ways(Front(config), MIXED.as_bytes());
    let lines: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let tam = [
        MIXED.find("<|[REQUEST_TOOL]|>").unwrap(),
        span_of(MIXED, "<|[END_TOOL]|>")[1],
    ];
    let action = [
        MIXED.find("<ACTION>").unwrap(),
        span_of(MIXED, "</ACTION>")[1],
    ];
    let cut = MIXED.rfind("<|[REQUEST_TOOL]|>").unwrap();
    let Some(Event::Diagnostic(unterminated)) = events.last() else {
        panic!("the cut block is not a diagnostic: {events:?}");
    };
    assert_eq!(unterminated.code, Code::UNTERMINATED_BLOCK);
    assert_eq!(
        lines,
        [
            json!({"type": "text", "text": "Plan:\n"}),
            json!({"type": "block_start", "protocol": "tam", "span": span_of(MIXED, "<|[REQUEST_TOOL]|>")}),
            json!({"type": "command_seen", "protocol": "tam", "call": 1, "tool": "File.Read", "span": span_of(MIXED, "command1:「始」File.Read「末」")}),
            json!({"type": "command_seen", "protocol": "tam", "call": 2, "tool": "Shell.Run", "span": span_of(MIXED, "command2:「始」Shell.Run「末」")}),
            json!({
                "type": "tool_calls",
                "protocol": "tam",
                "span": tam,
                "calls": [
                    {"tool": "File.Read", "args": {"filePath": "/a"}},
                    {"tool": "Shell.Run", "args": {"cmd": "ls -l && echo <x>"}}
                ],
                "diagnostics": []
            }),
            json!({"type": "text", "text": "\n"}),
            json!({"type": "block_start", "protocol": "action", "span": span_of(MIXED, "<ACTION>")}),
            json!({
                "type": "tool_calls",
                "protocol": "action",
                "span": action,
                "calls": [{"tool": "Publish", "args": {"tags": ["x"], "note": "hi"}}],
                "diagnostics": []
            }),
            json!({"type": "text", "text": "\n"}),
            json!({"type": "block_start", "protocol": "tam", "span": [cut, cut + "<|[REQUEST_TOOL]|>".len()]}),
            json!({"type": "command_seen", "protocol": "tam", "call": 0, "tool": "File.Write", "span": span_of(MIXED, "command:「始」File.Write「末」")}),
            json!({
                "type": "diagnostic",
                "severity": "error",
                "code": "unterminated_block",
                "message": unterminated.message,
                "span": [cut, MIXED.len()],
                "raw": &MIXED[cut..]
            }),
        ]
    );
    // The key order of a `tam decode` line, as written.
    let text = serde_json::to_string(&events[4]).unwrap();
    assert_eq!(
        text,
        format!(
            r#"{{"type":"tool_calls","protocol":"tam","span":[{},{}],"calls":[{{"tool":"File.Read","args":{{"filePath":"/a"}}}},{{"tool":"Shell.Run","args":{{"cmd":"ls -l && echo <x>"}}}}],"diagnostics":[]}}"#,
            tam[0], tam[1]
        )
    );
}

#[test]
fn mixed_argument_events_carry_their_protocol() {
    let input = "<|[REQUEST_TOOL]|>command:「始」A「末」x:「始」1「末」<|[END_TOOL]|><ACTION><B><y>2</y></B></ACTION>";
    let events = decode_all_ways(Front(Config::default()), input.as_bytes());
    let lines: Vec<Value> = events
        .iter()
        .filter(|e| e.is_argument_event())
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let b = [input.find("<B>").unwrap(), span_of(input, "</B>")[1]];
    assert_eq!(
        lines,
        [
            json!({"type": "param_start", "protocol": "tam", "key": "command", "span": span_of(input, "command")}),
            json!({"type": "param_text", "protocol": "tam", "text": "A", "span": span_of(input, "A")}),
            json!({"type": "param_end", "protocol": "tam", "span": span_of(input, "command:「始」A「末」")}),
            json!({"type": "param_start", "protocol": "tam", "key": "x", "span": span_of(input, "x")}),
            json!({"type": "param_text", "protocol": "tam", "text": "1", "span": span_of(input, "1")}),
            json!({"type": "param_end", "protocol": "tam", "span": span_of(input, "x:「始」1「末」")}),
            json!({"type": "call_start", "protocol": "action", "index": 0, "tool": "B", "span": span_of(input, "<B>")}),
            json!({"type": "param_start", "protocol": "action", "key": "y", "span": span_of(input, "<y>")}),
            json!({"type": "param_text", "protocol": "action", "text": "2", "span": span_of(input, "2")}),
            json!({"type": "param_end", "protocol": "action", "span": span_of(input, "<y>2</y>")}),
            json!({"type": "call_end", "protocol": "action", "index": 0, "span": b}),
        ]
    );
}

#[test]
fn the_readme_line_is_what_the_block_serializes_to() {
    let events = decode_all_ways(
        Front(Config::default()),
        b"<ACTION><read><path>a</path></read></ACTION>",
    );
    let lines: Vec<String> = events
        .iter()
        .filter(|e| matches!(e, Event::ActionBlock(_)))
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            r#"{"type":"tool_calls","protocol":"action","span":[0,44],"calls":[{"tool":"read","args":{"path":"a"}}],"diagnostics":[]}"#
        ]
    );
}

#[test]
fn reasoning_serializes_as_its_tam_decode_lines() {
    let input = "<think>plan <ACTION><X/></ACTION></think>\nok";
    let events = decode_all_ways(Front(Config::default()), input.as_bytes());
    let lines: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"type": "reasoning_start", "span": [0, 7]}),
            json!({"type": "reasoning", "text": "plan <ACTION><X/></ACTION>"}),
            json!({"type": "reasoning_end", "span": span_of(input, "</think>")}),
            json!({"type": "text", "text": "\nok"}),
        ]
    );
}
