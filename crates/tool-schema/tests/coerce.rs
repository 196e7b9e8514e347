//! Argument coercion: every rule, in both key-matching modes.

use serde_json::{Map, Value, json};
use tool_schema::{CompiledTool, Implementation, KeyMatch, ToolDefinition, ToolId};

fn tool(id: &str, parameters: Value) -> CompiledTool {
    CompiledTool::new(ToolDefinition::new(
        ToolId::parse(id).unwrap(),
        "test tool",
        parameters,
        Implementation::Service,
    ))
    .unwrap()
}

/// TAM delivers every value as text.
fn text_args<'a>(pairs: &[(&'a str, &str)]) -> Vec<(&'a str, Value)> {
    pairs
        .iter()
        .map(|(key, value)| (*key, Value::String((*value).to_owned())))
        .collect()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn scalars() -> CompiledTool {
    tool(
        "test:scalars",
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "label": {"type": "string"},
                "maybe": {"type": ["integer", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "numbers": {"type": "array", "items": {"type": "integer"}},
                "options": {"type": "object"}
            }
        }),
    )
}

fn coerce_one(tool: &CompiledTool, key: &str, value: Value) -> Value {
    let mut out = tool.coerce([(key, value)], KeyMatch::Exact).unwrap();
    out.remove(key).unwrap()
}

#[test]
fn text_becomes_integer_when_exact() {
    let tool = scalars();
    for (text, expected) in [
        ("12", json!(12)),
        (" 12\n", json!(12)),
        ("-7", json!(-7)),
        ("+7", json!(7)),
        ("12.0", json!(12)),
        ("1e3", json!(1000)),
        ("18446744073709551615", json!(u64::MAX)),
    ] {
        assert_eq!(
            coerce_one(&tool, "count", json!(text)),
            expected,
            "{text:?}"
        );
    }
    // A whole float from JSON becomes an integer too.
    assert_eq!(coerce_one(&tool, "count", json!(4.0)), json!(4));
}

#[test]
fn text_becomes_number() {
    let tool = scalars();
    assert_eq!(coerce_one(&tool, "ratio", json!("3.5")), json!(3.5));
    assert_eq!(coerce_one(&tool, "ratio", json!("3")), json!(3));
    assert_eq!(coerce_one(&tool, "ratio", json!("-2.5e-3")), json!(-0.0025));
    assert_eq!(coerce_one(&tool, "ratio", json!(2)), json!(2));
}

#[test]
fn text_becomes_boolean_in_any_case() {
    let tool = scalars();
    for (text, expected) in [
        ("true", true),
        ("false", false),
        ("TRUE", true),
        (" False ", false),
    ] {
        assert_eq!(
            coerce_one(&tool, "flag", json!(text)),
            json!(expected),
            "{text:?}"
        );
    }
}

#[test]
fn text_becomes_null_for_a_nullable_type() {
    let tool = scalars();
    assert_eq!(coerce_one(&tool, "maybe", json!("null")), Value::Null);
    assert_eq!(coerce_one(&tool, "maybe", json!("5")), json!(5));
}

#[test]
fn scalars_become_text_for_string_parameters() {
    let tool = scalars();
    assert_eq!(coerce_one(&tool, "label", json!(12)), json!("12"));
    assert_eq!(coerce_one(&tool, "label", json!(true)), json!("true"));
    // Text is never trimmed or reinterpreted for a string parameter.
    assert_eq!(coerce_one(&tool, "label", json!(" 12 ")), json!(" 12 "));
}

#[test]
fn json_text_becomes_object_or_array() {
    let tool = scalars();
    assert_eq!(
        coerce_one(&tool, "options", json!(r#" {"a": [1, 2]} "#)),
        json!({"a": [1, 2]})
    );
    assert_eq!(
        coerce_one(&tool, "tags", json!(r#"["x", "y"]"#)),
        json!(["x", "y"])
    );
    // Items are coerced after parsing.
    assert_eq!(
        coerce_one(&tool, "numbers", json!(r#"["1", 2]"#)),
        json!([1, 2])
    );
}

#[test]
fn a_single_value_becomes_a_one_element_array() {
    let tool = scalars();
    assert_eq!(coerce_one(&tool, "tags", json!("solo")), json!(["solo"]));
    assert_eq!(coerce_one(&tool, "numbers", json!("7")), json!([7]));
    assert_eq!(coerce_one(&tool, "numbers", json!(7)), json!([7]));
    // Text that only looks like JSON is still one element.
    assert_eq!(
        coerce_one(&tool, "tags", json!("[not json")),
        json!(["[not json"])
    );
}

#[test]
fn canonical_keys_match_case_underscore_and_dash_insensitively() {
    let tool = tool(
        "FileOperator.ApplyEdit",
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "search_string": {"type": "string"},
                "replace_string": {"type": "string"}
            },
            "required": ["file_path", "search_string", "replace_string"]
        }),
    );
    let out = tool
        .coerce(
            text_args(&[
                ("replaceString", "new"),
                ("FILE-PATH", "/a.js"),
                ("search_string", "old"),
            ]),
            KeyMatch::Canonical,
        )
        .unwrap();
    // Declared names, in declaration order.
    assert_eq!(
        Value::Object(out).to_string(),
        r#"{"file_path":"/a.js","search_string":"old","replace_string":"new"}"#
    );
}

#[test]
fn exact_keys_reject_other_spellings_with_the_seed_message() {
    let tool = tool(
        "GetPlayerInfo",
        json!({
            "type": "object",
            "properties": {"player_id": {"type": "string"}},
            "required": ["player_id"]
        }),
    );
    let errors = tool
        .coerce([("playerId", json!("player123"))], KeyMatch::Exact)
        .unwrap_err();
    assert_eq!(
        errors.to_string(),
        "Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean \
         'player_id'?"
    );
    // The same call in canonical mode (TAM) is accepted.
    let out = tool
        .coerce([("playerId", json!("player123"))], KeyMatch::Canonical)
        .unwrap();
    assert_eq!(out["player_id"], json!("player123"));
    // And the corrected call passes in exact mode.
    assert!(
        tool.coerce([("player_id", json!("player123"))], KeyMatch::Exact)
            .is_ok()
    );
}

#[test]
fn enum_values_are_checked_after_coercion() {
    let tool = tool(
        "workflow:summarize_text",
        json!({
            "type": "object",
            "properties": {
                "summary_length": {"type": "string", "enum": ["简短", "中等", "详细"]},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "untyped": {"enum": [1, true, "x"]}
            }
        }),
    );
    let out = tool
        .coerce(
            text_args(&[
                ("summary_length", "详细"),
                ("level", "2"),
                ("untyped", "true"),
            ]),
            KeyMatch::Canonical,
        )
        .unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"summary_length": "详细", "level": 2, "untyped": true})
    );
    let out = tool
        .coerce(text_args(&[("untyped", "x")]), KeyMatch::Canonical)
        .unwrap();
    assert_eq!(out["untyped"], json!("x"));
}

#[test]
fn defaults_fill_absent_parameters_at_every_level() {
    let tool = tool(
        "test:defaults",
        json!({
            "type": "object",
            "properties": {
                "strength": {"type": "number", "default": 0.7},
                "target": {"type": "string"},
                "style": {
                    "type": "object",
                    "properties": {"color": {"type": "string", "default": "red"}, "size": {"type": "integer"}}
                }
            },
            "required": ["strength", "target"]
        }),
    );
    let out = tool
        .coerce(
            text_args(&[("target", "door"), ("style", r#"{"size": "3"}"#)]),
            KeyMatch::Canonical,
        )
        .unwrap();
    // A required parameter with a default is satisfied by the default.
    assert_eq!(
        Value::Object(out),
        json!({"strength": 0.7, "target": "door", "style": {"color": "red", "size": 3}})
    );
    // An absent optional parameter without a default stays absent.
    let out = tool
        .coerce(text_args(&[("target", "door")]), KeyMatch::Exact)
        .unwrap();
    assert!(!out.contains_key("style"));
}

#[test]
fn nested_objects_and_arrays_are_coerced_recursively() {
    let tool = tool(
        "read_file",
        json!({
            "type": "object",
            "properties": {
                "args": {
                    "type": "object",
                    "properties": {
                        "file": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
                                "required": ["path"]
                            }
                        }
                    }
                }
            }
        }),
    );
    // ACTION XML with one <file> gives an object where the schema wants an array.
    let single = object(json!({"args": {"file": {"path": "src/app.ts", "line": "10"}}}));
    let out = tool.coerce(single, KeyMatch::Exact).unwrap();
    assert_eq!(
        out["args"],
        json!({"file": [{"path": "src/app.ts", "line": 10}]})
    );
    // Two <file>s give an array already.
    let two = object(json!({"args": {"file": [{"path": "a"}, {"path": "b", "line": "2"}]}}));
    let out = tool.coerce(two, KeyMatch::Exact).unwrap();
    assert_eq!(
        out["args"],
        json!({"file": [{"path": "a"}, {"path": "b", "line": 2}]})
    );
}

#[test]
fn additional_properties_decide_undeclared_keys() {
    let open = tool("test:open", json!({"type": "object"}));
    let out = open
        .coerce(
            text_args(&[("command2", "x"), ("anything", "y")]),
            KeyMatch::Canonical,
        )
        .unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"command2": "x", "anything": "y"})
    );

    let typed_extra = tool(
        "test:extra",
        json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": {"type": "integer"}
        }),
    );
    let out = typed_extra
        .coerce(
            text_args(&[("name", "n"), ("n1", "1"), ("n2", "2")]),
            KeyMatch::Canonical,
        )
        .unwrap();
    assert_eq!(Value::Object(out), json!({"name": "n", "n1": 1, "n2": 2}));

    let kept = tool(
        "test:kept",
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true}),
    );
    let out = kept
        .coerce(text_args(&[("b", "2"), ("a", "1")]), KeyMatch::Exact)
        .unwrap();
    assert_eq!(Value::Object(out).to_string(), r#"{"a":1,"b":"2"}"#);
}

#[test]
fn both_input_forms_are_accepted() {
    let tool = scalars();
    let from_map = tool
        .coerce(object(json!({"count": "3"})), KeyMatch::Exact)
        .unwrap();
    let from_owned = tool
        .coerce(vec![("count".to_owned(), json!("3"))], KeyMatch::Exact)
        .unwrap();
    let from_borrowed = tool
        .coerce([("count", json!("3"))], KeyMatch::Exact)
        .unwrap();
    assert_eq!(from_map, from_owned);
    assert_eq!(from_map, from_borrowed);
    assert_eq!(from_map["count"], json!(3));
}

#[test]
fn compiled_tools_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledTool>();
    let tool = std::sync::Arc::new(scalars());
    let handles: Vec<_> = (0..2)
        .map(|n| {
            let tool = tool.clone();
            std::thread::spawn(move || {
                tool.coerce([("count", json!(n.to_string()))], KeyMatch::Exact)
            })
        })
        .collect();
    for (n, handle) in handles.into_iter().enumerate() {
        assert_eq!(handle.join().unwrap().unwrap()["count"], json!(n));
    }
}
