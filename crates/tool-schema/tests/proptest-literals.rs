//! Properties of per-argument coercion and the array and object readers:
//! - any text, for a parameter of any type, never panics, and each argument comes back
//!   either typed (nothing reported inside it) or exactly as written (something was);
//! - a value written as a Python literal, or (numbers and booleans) as a comma-separated
//!   list, reads back as itself; JSON text is covered by `proptest-text-roundtrip.rs`.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
use tool_schema::{CompiledTool, Error, Implementation, KeyMatch, ToolDefinition, ToolId};

fn tool(parameters: Value) -> CompiledTool {
    CompiledTool::new(ToolDefinition::new(
        ToolId::parse("test:literals").unwrap(),
        "",
        parameters,
        Implementation::Service,
    ))
    .unwrap()
}

fn every_type() -> CompiledTool {
    tool(json!({
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "o": {"type": "object"},
            "ai": {"type": "array", "items": {"type": "integer"}},
            "as": {"type": "array", "items": {"type": "string"}},
            "ao": {"type": "array", "items": {
                "type": "object", "properties": {"x": {"type": "integer"}}
            }},
            "aa": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "e": {"enum": [1, "one", true]}
        }
    }))
}

fn is_integer(value: &Value) -> bool {
    value.is_i64() || value.is_u64()
}

/// Whether `value` is what the parameter `key` of [`every_type`] declares.
fn typed(key: &str, value: &Value) -> bool {
    let all =
        |check: &dyn Fn(&Value) -> bool| value.as_array().is_some_and(|a| a.iter().all(check));
    match key {
        "s" => value.is_string(),
        "i" => is_integer(value),
        "n" => value.is_number(),
        "b" => value.is_boolean(),
        "o" => value.is_object(),
        "ai" => all(&is_integer),
        "as" => all(&Value::is_string),
        "ao" => all(&|item| {
            item.as_object()
                .is_some_and(|members| members.get("x").is_none_or(is_integer))
        }),
        "aa" => all(&|item| {
            item.as_array()
                .is_some_and(|a| a.iter().all(Value::is_number))
        }),
        "e" => [json!(1), json!("one"), json!(true)].contains(value),
        _ => false,
    }
}

fn path(error: &Error) -> Option<&str> {
    match error {
        Error::WrongType { path, .. }
        | Error::UnreadableValue { path, .. }
        | Error::NotInEnum { path, .. }
        | Error::UnknownParameter { path, .. }
        | Error::MissingParameter { path }
        | Error::DuplicateParameter { path, .. } => Some(path),
        _ => None,
    }
}

fn within(path: &str, key: &str) -> bool {
    path.strip_prefix(key)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Text for one value in Python literal style, with a trailing comma now and then.
fn python(value: &Value, trailing: bool) -> String {
    let comma = if trailing { ", " } else { "" };
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) if items.is_empty() => "[]".to_owned(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|item| python(item, trailing)).collect();
            format!("[{}{comma}]", items.join(", "))
        }
        Value::Object(members) if members.is_empty() => "{}".to_owned(),
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(key, value)| {
                    format!(
                        "{}: {}",
                        python(&Value::from(key.as_str()), false),
                        python(value, trailing)
                    )
                })
                .collect();
            format!("{{{}{comma}}}", members.join(", "))
        }
    }
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        Just(Value::Null),
    ]
}

/// Any JSON value, a few levels deep.
fn any_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,6}", inner, 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Text a model might write: arbitrary, or made of the readers' own characters.
fn model_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\[\\]{}'\",:. 0-9a-zA-Z\\\\+-]{0,40}",
        "[\\[{]{0,100}[0-9a-z', ]{0,8}[\\]}]{0,100}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_text_is_typed_or_kept_as_written(text in model_text(), wrap in 0..4usize) {
        let text = match wrap {
            0 => text,
            1 => format!("[{text}]"),
            2 => format!("{{{text}}}"),
            _ => format!("['{text}']"),
        };
        let tool = every_type();
        let keys = ["s", "i", "n", "b", "o", "ai", "as", "ao", "aa", "e"];
        let arguments: Vec<(&str, Value)> =
            keys.iter().map(|key| (*key, Value::from(text.as_str()))).collect();
        let (coerced, errors) = match tool.coerce(arguments, KeyMatch::Canonical) {
            Ok(coerced) => (coerced, Vec::new()),
            Err(errors) => {
                let _ = errors.to_string();
                errors.into_parts()
            }
        };
        for key in keys {
            let reported = errors.iter().filter_map(path).any(|path| within(path, key));
            let value = &coerced[key];
            if reported {
                prop_assert_eq!(value, &Value::from(text.as_str()), "{}", key);
            } else {
                prop_assert!(typed(key, value), "{key}: {value}");
            }
        }
    }

    #[test]
    fn python_literals_read_back(value in any_value(), trailing in any::<bool>()) {
        let tool = tool(json!({
            "type": "object",
            "properties": {"a": {"type": "array"}, "o": {"type": "object"}}
        }));
        let array = Value::Array(vec![value.clone()]);
        let mut arguments = vec![("a", Value::from(python(&array, trailing)))];
        if value.is_object() {
            arguments.push(("o", Value::from(python(&value, trailing))));
        }
        let coerced = tool.coerce(arguments, KeyMatch::Exact);
        prop_assert!(coerced.is_ok(), "{}", coerced.unwrap_err());
        let coerced = coerced.unwrap();
        prop_assert_eq!(&coerced["a"], &array);
        if value.is_object() {
            prop_assert_eq!(&coerced["o"], &value);
        }
    }

    #[test]
    fn comma_lists_read_back(
        integers in prop::collection::vec(any::<i64>(), 1..6),
        numbers in prop::collection::vec(
            any::<f64>().prop_filter("finite", |f| f.is_finite()), 1..6),
        booleans in prop::collection::vec(any::<bool>(), 1..6),
        spaced in any::<bool>(),
    ) {
        let tool = tool(json!({
            "type": "object",
            "properties": {
                "i": {"type": "array", "items": {"type": "integer"}},
                "n": {"type": "array", "items": {"type": "number"}},
                "b": {"type": "array", "items": {"type": "boolean"}}
            }
        }));
        let separator = if spaced { ", " } else { "," };
        let list = |values: &Value| {
            values.as_array().unwrap().iter().map(Value::to_string).collect::<Vec<_>>().join(separator)
        };
        let expected = json!({"i": integers, "n": numbers, "b": booleans});
        let arguments: Vec<(&str, Value)> = ["i", "n", "b"]
            .into_iter()
            .map(|key| (key, Value::from(list(&expected[key]))))
            .collect();
        let coerced = tool.coerce(arguments, KeyMatch::Exact);
        prop_assert!(coerced.is_ok(), "{}", coerced.unwrap_err());
        prop_assert_eq!(Value::Object(coerced.unwrap()), expected);
    }
}
