//! Property: any value valid for a generated schema, written as text the way TAM delivers
//! it, coerces back to itself.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value, json};
use tool_schema::{CompiledTool, Implementation, KeyMatch, ToolDefinition, ToolId};

/// A parameter schema and a strategy for values valid under it.
#[derive(Debug, Clone)]
enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    Enum(Vec<Value>),
    Array(Box<Kind>),
    Object(Vec<(String, Kind)>),
}

fn kind() -> impl Strategy<Value = Kind> {
    let leaf = prop_oneof![
        Just(Kind::String),
        Just(Kind::Integer),
        Just(Kind::Number),
        Just(Kind::Boolean),
        prop::collection::vec(
            prop_oneof![
                any::<i32>().prop_map(Value::from),
                "[a-z]{1,6}".prop_map(Value::from)
            ],
            1..4
        )
        .prop_map(|mut values| {
            values.sort_by_key(Value::to_string);
            values.dedup();
            Kind::Enum(values)
        }),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|item| Kind::Array(Box::new(item))),
            members(inner, 4),
        ]
    })
}

/// Object members whose names are distinct, even canonically (`a_b` and `ab` are one key).
fn members(kind: impl Strategy<Value = Kind>, max: usize) -> impl Strategy<Value = Kind> {
    prop::collection::vec(("[a-z][a-z_]{0,7}", kind), 1..max).prop_map(|members| {
        let mut seen = Vec::new();
        Kind::Object(
            members
                .into_iter()
                .filter(|(name, _)| {
                    let canonical = tool_schema::canonical_key(name);
                    let fresh = !seen.contains(&canonical);
                    seen.push(canonical);
                    fresh
                })
                .collect(),
        )
    })
}

fn schema(kind: &Kind) -> Value {
    match kind {
        Kind::String => json!({"type": "string"}),
        Kind::Integer => json!({"type": "integer"}),
        Kind::Number => json!({"type": "number"}),
        Kind::Boolean => json!({"type": "boolean"}),
        Kind::Enum(values) => json!({"enum": values}),
        Kind::Array(item) => json!({"type": "array", "items": schema(item)}),
        Kind::Object(members) => {
            let properties: Map<String, Value> = members
                .iter()
                .map(|(name, kind)| (name.clone(), schema(kind)))
                .collect();
            let required: Vec<&String> = members.iter().map(|(name, _)| name).collect();
            json!({"type": "object", "properties": properties, "required": required})
        }
    }
}

fn value(kind: &Kind) -> BoxedStrategy<Value> {
    match kind {
        // Text that is one quoted literal (`'a'`) is read as the text between its quotes
        // (a model quoting a string), so it is not a value that comes back as itself.
        Kind::String => any::<String>()
            .prop_filter("not one quoted literal", |text| {
                tool_schema::quoted_text(text).is_none()
            })
            .prop_map(Value::from)
            .boxed(),
        Kind::Integer => any::<i64>().prop_map(Value::from).boxed(),
        Kind::Number => prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
        ]
        .boxed(),
        Kind::Boolean => any::<bool>().prop_map(Value::from).boxed(),
        Kind::Enum(values) => prop::sample::select(values.clone()).boxed(),
        Kind::Array(item) => prop::collection::vec(value(item), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        Kind::Object(members) => {
            let names: Vec<String> = members.iter().map(|(name, _)| name.clone()).collect();
            let values: Vec<BoxedStrategy<Value>> =
                members.iter().map(|(_, kind)| value(kind)).collect();
            values
                .prop_map(move |values| Value::Object(names.iter().cloned().zip(values).collect()))
                .boxed()
        }
    }
}

/// A parameter schema and arguments valid for it.
fn call() -> impl Strategy<Value = (Value, Value)> {
    members(kind(), 7).prop_flat_map(|parameters| (Just(schema(&parameters)), value(&parameters)))
}

/// How TAM delivers a value: strings verbatim, everything else as JSON text.
fn as_text(value: &Value) -> Value {
    match value {
        Value::String(_) => value.clone(),
        other => Value::String(other.to_string()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn text_arguments_coerce_back_to_their_values((parameters, arguments) in call()) {
        let Value::Object(arguments) = arguments else {
            panic!("an object kind gives an object");
        };
        let tool = CompiledTool::new(ToolDefinition::new(
            ToolId::parse("test:roundtrip").unwrap(),
            "",
            parameters,
            Implementation::Service,
        ))
        .unwrap();
        let text: Vec<(&str, Value)> =
            arguments.iter().map(|(key, value)| (key.as_str(), as_text(value))).collect();
        let coerced = tool.coerce(text, KeyMatch::Canonical);
        prop_assert!(coerced.is_ok(), "{}", coerced.unwrap_err());
        prop_assert_eq!(Value::Object(coerced.unwrap()), Value::Object(arguments.clone()));
        // Typed JSON values (OpenAI-style) pass through unchanged in exact mode too.
        let typed = tool.coerce(arguments.clone(), KeyMatch::Exact).unwrap();
        prop_assert_eq!(typed, arguments);
    }
}
