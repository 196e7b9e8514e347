//! Validation and coercion of one six-parameter call (tool-schema's `CompiledTool::coerce`).
//!
//! `tam_text_canonical` is the TAM path: every value is text and keys are matched
//! canonically. Its baseline, `typed_json_exact`, gives the same arguments already typed
//! with declared keys, so coercion has nothing to convert: the ratio is the cost of
//! reading text and matching keys canonically.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tool_schema::{CompiledTool, Implementation, KeyMatch, ToolDefinition, ToolId};

fn tool() -> CompiledTool {
    let parameters = json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute path."},
            "line": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "dry_run": {"type": "boolean", "default": false},
            "mode": {"type": "string", "enum": ["replace", "insert", "delete"]},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["file_path", "line", "mode"]
    });
    let definition = ToolDefinition::new(
        ToolId::parse("FileOperator.ApplyEdit").unwrap(),
        "Edits a file.",
        parameters,
        Implementation::Service,
    );
    CompiledTool::new(definition).unwrap()
}

/// The call as a TAM block delivers it: text values, keys as the model spelt them.
fn tam_arguments() -> Vec<(&'static str, Value)> {
    [
        ("filePath", "/src/main.rs"),
        ("LINE", "42"),
        ("ratio", "0.75"),
        ("dry-run", "true"),
        ("mode", "replace"),
        ("tags", r#"["refactor", "safe"]"#),
    ]
    .into_iter()
    .map(|(key, value)| (key, Value::String(value.to_owned())))
    .collect()
}

fn typed_arguments() -> Map<String, Value> {
    let arguments = json!({
        "file_path": "/src/main.rs",
        "line": 42,
        "ratio": 0.75,
        "dry_run": true,
        "mode": "replace",
        "tags": ["refactor", "safe"]
    });
    arguments.as_object().unwrap().clone()
}

fn validate(c: &mut Criterion) {
    let tool = tool();
    let tam = tam_arguments();
    let typed = typed_arguments();
    // Both inputs must be accepted and agree, or the figures mean nothing.
    assert_eq!(
        tool.coerce(tam.clone(), KeyMatch::Canonical).unwrap(),
        tool.coerce(typed.clone(), KeyMatch::Exact).unwrap()
    );

    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Elements(1));
    group.bench_function("tam_text_canonical", |b| {
        b.iter_batched(
            || tam.clone(),
            |arguments| tool.coerce(black_box(arguments), KeyMatch::Canonical),
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("typed_json_exact", |b| {
        b.iter_batched(
            || typed.clone(),
            |arguments| tool.coerce(black_box(arguments), KeyMatch::Exact),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);
