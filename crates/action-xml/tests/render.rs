//! The renderer: exact output for the common shapes, CDATA where a value needs it, names
//! checked, and round trips of the values that are hard to carry.

use action_xml::{RenderError, parse, render_action, render_call};
use serde_json::{Map, Value, json};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn round_trip(tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
    let text = render_action([(tool, args)]).unwrap();
    let out = parse(&text);
    assert!(
        out.diagnostics
            .iter()
            .all(|d| d.code.as_str() == "undeclared_prefix"),
        "{text}\n{:?}",
        out.diagnostics
    );
    assert_eq!(out.calls.len(), 1, "{text}");
    assert_eq!(out.calls[0].tool, tool);
    out.calls[0].args.clone()
}

#[test]
fn renders_a_block() {
    let args = object(json!({
        "path": "src/app.ts",
        "files": ["a", "b"],
        "options": {"mode": "fast", "depth": 2},
    }));
    let text = render_action([("read_file", &args)]).unwrap();
    assert_eq!(
        text,
        "<ACTION>\n  <read_file>\n    <path>src/app.ts</path>\n    <files>\n      <item>a</item>\n      <item>b</item>\n    </files>\n    <options>\n      <mode>fast</mode>\n      <depth>2</depth>\n    </options>\n  </read_file>\n</ACTION>\n"
    );
}

#[test]
fn values_that_need_cdata_round_trip() {
    let args = object(json!({
        "code": "if a < b && c > d { x }",
        "diff": "\n--- a\n+++ b\n  indented\n",
        "end": "]]>",
        "nested_end": "a]]>b]]>c",
        "blank": "   ",
        "tail": "line\n   ",
        "crlf": "\r\nwin\r\n",
        "lone_cr": "a\rb",
        "cjk": "中文 🙂 <标签>",
        "empty": "",
        "tags": "<ACTION></ACTION>",
    }));
    assert_eq!(round_trip("write_file", &args), args);
}

#[test]
fn nested_arrays_and_objects_round_trip() {
    let args = object(json!({
        "matrix": [["1", "2"], ["3"]],
        "records": [{"id": "a", "tags": ["x"]}, {"id": "b", "item": "i", "other": "o"}],
        "deep": {"a": {"b": {"c": ["d"]}}},
        "item": "a call-level key may be named item",
    }));
    assert_eq!(round_trip("workflow:summarize_text", &args), args);
}

#[test]
fn scalars_read_back_as_strings() {
    let args = object(json!({"n": 12, "f": 1.5, "t": true, "z": null, "e": [], "o": {}}));
    let back = round_trip("t", &args);
    assert_eq!(
        Value::Object(back),
        json!({"n": "12", "f": "1.5", "t": "true", "z": "", "e": "", "o": ""})
    );
}

#[test]
fn render_call_alone() {
    let args = object(json!({"q": "Tom & Jerry"}));
    assert_eq!(
        render_call("search", &args).unwrap(),
        "<search>\n  <q><![CDATA[Tom & Jerry]]></q>\n</search>\n"
    );
    assert_eq!(
        render_call("ping", &Map::new()).unwrap(),
        "<ping>\n</ping>\n"
    );
}

#[test]
fn names_that_are_not_xml_names_are_refused() {
    let args = object(json!({"file path": "x"}));
    let err = render_call("read_file", &args).unwrap_err();
    assert_eq!(err, RenderError::InvalidName("file path".into()));
    assert_eq!(err.to_string(), "'file path' is not an XML name");
    assert!(matches!(
        render_call("workflows/skills/x.json", &Map::new()),
        Err(RenderError::InvalidName(_))
    ));
    let args = object(json!({"list": {"item": "x"}}));
    assert_eq!(
        render_call("t", &args),
        Err(RenderError::AmbiguousItemObject("list".into()))
    );
    let args = object(json!({"bell": "\u{7}"}));
    assert!(matches!(
        render_call("t", &args),
        Err(RenderError::UnrepresentableChar { ch: '\u{7}', .. })
    ));
}

#[test]
fn several_calls_in_one_block() {
    let a = object(json!({"x": "1"}));
    let b = object(json!({"y": "2"}));
    let out = parse(&render_action([("first", &a), ("second", &b)]).unwrap());
    let tools: Vec<_> = out.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["first", "second"]);
}
