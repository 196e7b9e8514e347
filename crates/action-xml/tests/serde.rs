//! Feature `serde`: the JSON forms of the ACTION decoder's types, round trips of the owned
//! ones, and real-shaped streams decoded every way and serialized.
#![cfg(feature = "serde")]

mod common;

use std::borrow::Cow;

use action_xml::{
    ActionBlock, ActionCall, ActionParam, Diagnostic, Event, LineColumn, Parsed, Span, parse,
};
use serde_json::{Map, Value, json};
use tam_testkit::round_trip;

/// The span of the first `needle` in `haystack`.
fn span_of(haystack: &str, needle: &str) -> [usize; 2] {
    let start = haystack
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the input"));
    [start, start + needle.len()]
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn positions_have_their_json_forms() {
    round_trip(
        &LineColumn { line: 3, column: 9 },
        json!({"line": 3, "column": 9}),
    );
}

#[test]
fn calls_and_blocks_built_with_their_constructors_round_trip() {
    let param = ActionParam::new("content", Span::new(30, 52), "a &lt; b<![CDATA[&]]>");
    round_trip(
        &param,
        json!({"key": "content", "content_span": [30, 52], "source": "a &lt; b<![CDATA[&]]>"}),
    );
    let args = object(json!({"content": "a < b&", "tags": ["x", "y"], "opts": {"mode": "w"}}));
    let call = ActionCall::new("workflow:write", args, Span::new(8, 80), vec![param]);
    assert_eq!(call.source("content"), Some("a &lt; b<![CDATA[&]]>"));
    let call_json = json!({
        "tool": "workflow:write",
        "args": {"content": "a < b&", "tags": ["x", "y"], "opts": {"mode": "w"}},
        "span": [8, 80],
        "params": [{"key": "content", "content_span": [30, 52], "source": "a &lt; b<![CDATA[&]]>"}]
    });
    round_trip(&call, call_json.clone());
    let diagnostic = Diagnostic::warning(
        action_xml::codes::EXTRA_ACTION_BLOCK,
        Span::new(0, 8),
        "a second block",
    );
    let block = ActionBlock::new(
        Span::new(0, 90),
        1,
        vec![call],
        vec![diagnostic],
        "<ACTION>…</ACTION>",
    );
    round_trip(
        &block,
        json!({
            "span": [0, 90],
            "index": 1,
            "calls": [call_json],
            "diagnostics": [{"severity": "warning", "code": "extra_action_block", "message": "a second block", "span": [0, 8]}],
            "raw": "<ACTION>…</ACTION>"
        }),
    );
    // An action-xml code reads back as the same code.
    let back: ActionBlock = serde_json::from_value(serde_json::to_value(&block).unwrap()).unwrap();
    assert_eq!(
        back.diagnostics[0].code,
        action_xml::codes::EXTRA_ACTION_BLOCK
    );
    assert!(!back.has_errors());
}

#[test]
fn borrowed_events_serialize_as_owned_ones() {
    let delta = String::from("<p>x</p> & y");
    let borrowed = Event::ParamText {
        text: Cow::Borrowed(&delta[..]),
        span: Span::new(40, 52),
        cdata: false,
    };
    let expected = json!({"type": "param_text", "text": "<p>x</p> & y", "span": [40, 52]});
    assert_eq!(serde_json::to_value(&borrowed).unwrap(), expected);
    let owned = borrowed.clone().into_owned();
    assert_eq!(
        serde_json::to_string(&borrowed).unwrap(),
        serde_json::to_string(&owned).unwrap()
    );
    let back: Event<'static> = serde_json::from_value(expected).unwrap();
    assert_eq!(back, owned);
}

/// A real-shaped reply: prose, a block with code in CDATA (`<`, `&`, generics), an array
/// parameter with an entity, a namespaced tool, trailing prose.
const REPLY: &str = "Let me write it.\n<ACTION>\n  <write_file>\n    <path>src/lib.rs</path>\n    \
<content><![CDATA[fn f<T: Clone>(a: &T) -> bool { a < b && c }]]></content>\n  </write_file>\n  \
<workflow:tag><tags><item>a</item><item>b &amp; c</item></tags></workflow:tag>\n</ACTION>\nDone.";

#[test]
fn a_decoded_stream_serializes_to_the_expected_json_however_it_is_split() {
    let events = common::decode(REPLY);
    let open = span_of(REPLY, "<ACTION>");
    let close = span_of(REPLY, "</ACTION>");
    let write = [
        REPLY.find("<write_file>").unwrap(),
        span_of(REPLY, "</write_file>")[1],
    ];
    let tag = [
        REPLY.find("<workflow:tag>").unwrap(),
        span_of(REPLY, "</workflow:tag>")[1],
    ];
    let path = span_of(REPLY, "<path>src/lib.rs</path>");
    let path_content = span_of(REPLY, "src/lib.rs");
    let code = "fn f<T: Clone>(a: &T) -> bool { a < b && c }";
    let content = [
        REPLY.find("<content>").unwrap(),
        span_of(REPLY, "</content>")[1],
    ];
    let content_source = [
        content[0] + "<content>".len(),
        content[1] - "</content>".len(),
    ];
    let tags = [REPLY.find("<tags>").unwrap(), span_of(REPLY, "</tags>")[1]];
    let tags_source = [tags[0] + "<tags>".len(), tags[1] - "</tags>".len()];
    let expected = json!([
        {"type": "text", "text": "Let me write it.\n", "span": [0, open[0]]},
        {"type": "block_start", "span": open},
        {"type": "call_start", "index": 0, "tool": "write_file", "span": span_of(REPLY, "<write_file>")},
        {"type": "param_start", "key": "path", "span": span_of(REPLY, "<path>")},
        {"type": "param_text", "text": "src/lib.rs", "span": path_content},
        {"type": "param_end", "span": path},
        {"type": "param_start", "key": "content", "span": span_of(REPLY, "<content>")},
        {"type": "param_text", "text": code, "span": span_of(REPLY, code), "cdata": true},
        {"type": "param_end", "span": content},
        {"type": "call_end", "index": 0, "span": write},
        {"type": "call_start", "index": 1, "tool": "workflow:tag", "span": span_of(REPLY, "<workflow:tag>")},
        {"type": "param_start", "key": "tags", "span": span_of(REPLY, "<tags>")},
        {"type": "param_text", "text": "<item>a</item><item>b & c</item>", "span": tags_source},
        {"type": "param_end", "span": tags},
        {"type": "call_end", "index": 1, "span": tag},
        {
            "type": "block",
            "span": [open[0], close[1]],
            "index": 0,
            "calls": [
                {
                    "tool": "write_file",
                    "args": {"path": "src/lib.rs", "content": code},
                    "span": write,
                    "params": [
                        {"key": "path", "content_span": path_content, "source": "src/lib.rs"},
                        {"key": "content", "content_span": content_source, "source": &REPLY[content_source[0]..content_source[1]]}
                    ]
                },
                {
                    "tool": "workflow:tag",
                    "args": {"tags": ["a", "b & c"]},
                    "span": tag,
                    "params": [{"key": "tags", "content_span": tags_source, "source": "<item>a</item><item>b &amp; c</item>"}]
                }
            ],
            "diagnostics": [{
                "severity": "warning",
                "code": "undeclared_prefix",
                "message": "namespace prefix 'workflow' is not declared; names keep it as written",
                "span": span_of(REPLY, "workflow")
            }],
            "raw": &REPLY[open[0]..close[1]]
        },
        {"type": "text", "text": "\nDone.", "span": [close[1], REPLY.len()]}
    ]);
    assert_eq!(serde_json::to_value(&events).unwrap(), expected);
    let back: Vec<Event<'static>> = serde_json::from_value(expected).unwrap();
    assert_eq!(back, events);

    // The one-shot form of the same reply.
    let parsed = parse(REPLY);
    let json = serde_json::to_value(&parsed).unwrap();
    assert_eq!(json["response_text"], "Let me write it.");
    assert_eq!(json["trailing_text"], "Done.");
    assert_eq!(json["calls"][1]["args"], json!({"tags": ["a", "b & c"]}));
    let back: Parsed = serde_json::from_value(json).unwrap();
    assert_eq!(back, parsed);
}

#[test]
fn reasoning_serializes_as_its_tam_decode_lines() {
    // The ACTION decoder's event: its fields, span included, and back (the front door's
    // `tam decode` lines are checked in the `tam` crate's tests).
    let event = action_xml::Event::Reasoning {
        text: "plan".into(),
        span: tam_parse::Span::new(7, 11),
    };
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(
        json,
        json!({"type": "reasoning", "text": "plan", "span": [7, 11]})
    );
    let back: action_xml::Event<'static> = serde_json::from_value(json).unwrap();
    assert_eq!(back, event);
}
