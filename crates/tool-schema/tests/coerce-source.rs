//! A declared-string parameter takes the raw source text where the XML reading gave an
//! object or an array (docs/protocol/action-xml.md §5).

use std::collections::HashMap;

use serde_json::{Value, json};
use tool_schema::{CompiledTool, Implementation, KeyMatch, ToolDefinition, ToolId};

fn write_file() -> CompiledTool {
    CompiledTool::new(ToolDefinition::new(
        ToolId::parse("write_file").unwrap(),
        "Writes a file.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"},
                "options": {"type": "object"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "maybe": {"type": ["string", "object"]}
            },
            "required": ["path", "content"]
        }),
        Implementation::Service,
    ))
    .unwrap()
}

/// What an ACTION call would hand over: the XML reading and the raw element text.
struct Call {
    args: Vec<(&'static str, Value)>,
    raw: HashMap<&'static str, &'static str>,
}

fn call() -> Call {
    Call {
        args: vec![
            ("path", json!("src/main.rs")),
            // `<content>let s = "<b>x</b>";</content>` with balanced tags: the reading
            // saw `{"b": "x"}`.
            ("content", json!({"b": "x"})),
            ("options", json!({"mode": "overwrite"})),
        ],
        raw: HashMap::from([
            ("path", "src/main.rs"),
            ("content", "<b>x</b>"),
            ("options", "<mode>overwrite</mode>"),
        ]),
    }
}

#[test]
fn declared_string_takes_the_raw_text_of_an_object_value() {
    let tool = write_file();
    let call = call();
    let coerced = tool
        .coerce_with_source(call.args.clone(), KeyMatch::Exact, |key| {
            call.raw.get(key).copied()
        })
        .unwrap();
    assert_eq!(
        Value::Object(coerced),
        json!({"path": "src/main.rs", "content": "<b>x</b>", "options": {"mode": "overwrite"}})
    );
}

#[test]
fn code_with_tags_arrives_whole() {
    let tool = write_file();
    let source = "let s = \"<b>x</b>\";";
    let args = vec![
        ("path", json!("a.rs")),
        ("content", json!([{"b": "x"}, {"b": "y"}])),
    ];
    let coerced = tool
        .coerce_with_source(args, KeyMatch::Exact, |key| {
            (key == "content").then_some(source)
        })
        .unwrap();
    assert_eq!(coerced["content"], json!(source));
}

#[test]
fn canonical_keys_reach_the_source_as_written() {
    let tool = write_file();
    let seen = std::cell::RefCell::new(Vec::new());
    let args = vec![("PATH", json!("a")), ("Content", json!({"b": "x"}))];
    let coerced = tool
        .coerce_with_source(args, KeyMatch::Canonical, |key| {
            seen.borrow_mut().push(key.to_owned());
            Some("<b>x</b>")
        })
        .unwrap();
    assert_eq!(coerced["content"], json!("<b>x</b>"));
    // Only the object value for a string parameter asked for its text.
    assert_eq!(*seen.borrow(), ["Content"]);
}

#[test]
fn without_source_text_the_object_is_still_the_wrong_type() {
    let tool = write_file();
    let call = call();
    let with_none = tool
        .coerce_with_source(call.args.clone(), KeyMatch::Exact, |_| None)
        .unwrap_err();
    let plain = tool.coerce(call.args, KeyMatch::Exact).unwrap_err();
    assert_eq!(with_none.to_string(), plain.to_string());
    assert_eq!(
        plain.to_string(),
        "Invalid parameters for write_file: Parameter 'content' must be a string, got an object"
    );
}

#[test]
fn parameters_that_accept_objects_or_arrays_keep_the_reading() {
    let tool = write_file();
    let args = vec![
        ("path", json!("a")),
        ("content", json!("plain")),
        ("tags", json!(["x", "y"])),
        ("maybe", json!({"k": "v"})),
    ];
    let coerced = tool
        .coerce_with_source(args, KeyMatch::Exact, |_| Some("RAW"))
        .unwrap();
    assert_eq!(coerced["content"], json!("plain"));
    assert_eq!(coerced["maybe"], json!({"k": "v"}));
    assert_eq!(coerced["tags"], json!(["x", "y"]));
}
