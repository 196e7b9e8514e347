//! Coercion of arbitrary arguments against arbitrary parameter schemas: compiling the
//! schema and coercing must never panic, whatever either holds, and every error must
//! print.
//!
//! Input layout: `[flags] [rest …]`. Flag bit 0 picks [`KeyMatch::Exact`] (else
//! canonical). With flag bit 1 set, `rest` is JSON text: a schema followed by the
//! arguments (an object, or an array of `[key, value]` pairs to repeat a key); the seeds
//! are of that form. Without it, `rest` drives a generator of schemas built from the
//! keywords coercion reads (`type`, `properties`, `required`, `additionalProperties`,
//! `enum`, `items`, `default`) and a few it leaves to the validator, and of arguments
//! that are mostly the text a model writes.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};
use tool_schema::{CompiledTool, Implementation, KeyMatch, ToolDefinition, ToolId};

const NAMES: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "FILE-PATH",
    "count",
    "max_words",
    "tags",
    "item",
    "a",
    "A",
    "x-y",
    "",
    "文件",
    "default",
];
const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "object", "array", "null", "any",
];
const TEXTS: &[&str] = &[
    "12",
    " 12 ",
    "12.0",
    "1e3",
    "-0",
    "1e400",
    "9223372036854775808",
    "-9223372036854775809",
    "0x10",
    "3.5",
    "true",
    "FALSE",
    "True",
    "null",
    "NaN",
    "[1,2]",
    "[",
    "{\"a\":1}",
    "{}",
    "[]",
    "\"q\"",
    "",
    " ",
    "abc",
    "a,b",
    "文字",
];
const PATTERNS: &[&str] = &["^a", "[0-9]+", "(a|b)*c", "\\d{2,}", "^$", "(", "\\p{Han}"];

fn pick<'a>(u: &mut Unstructured<'_>, list: &[&'a str]) -> Result<&'a str> {
    u.choose(list).copied()
}

fn name(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 8)? {
        u.arbitrary()
    } else {
        Ok(pick(u, NAMES)?.to_owned())
    }
}

fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Value::from(u.int_in_range(-3i64..=20)?),
        1 => Value::from(u.arbitrary::<i64>()?),
        2 => Value::from(u.arbitrary::<u64>()?),
        _ => Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
    })
}

fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 | 1 => Value::from(pick(u, TEXTS)?),
        2 => Value::String(u.arbitrary()?),
        3 => number(u)?,
        4 => Value::Bool(u.arbitrary()?),
        5 => Value::Null,
        6 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array((0..n).map(|_| value(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let mut m = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                m.insert(name(u)?, value(u, depth - 1)?);
            }
            Value::Object(m)
        }
    })
}

fn schema(u: &mut Unstructured<'_>, depth: u32, root: bool) -> Result<Value> {
    let mut s = Map::new();
    let type_kind = if root {
        u.int_in_range(0..=9)?
    } else {
        u.int_in_range(0..=3)?
    };
    match type_kind {
        0 => {}
        1 | 2 => {
            s.insert("type".into(), Value::from(pick(u, TYPES)?));
        }
        3 => {
            let n = u.int_in_range(1..=3)?;
            let types: Vec<Value> = (0..n)
                .map(|_| pick(u, TYPES).map(Value::from))
                .collect::<Result<_>>()?;
            s.insert("type".into(), Value::Array(types));
        }
        _ => {
            s.insert("type".into(), Value::from("object"));
        }
    }
    if depth > 0 && (root || u.ratio(1, 3)?) {
        let mut props = Map::new();
        for _ in 0..u.int_in_range(0..=4)? {
            props.insert(name(u)?, schema(u, depth - 1, false)?);
        }
        if u.ratio(1, 2)? {
            let mut required: Vec<Value> = props
                .keys()
                .filter(|_| u.ratio(1, 2).unwrap_or(false))
                .map(|k| Value::from(k.as_str()))
                .collect();
            if u.ratio(1, 6)? {
                required.push(Value::from(name(u)?));
            }
            s.insert("required".into(), Value::Array(required));
        }
        s.insert("properties".into(), Value::Object(props));
        match u.int_in_range(0..=4)? {
            0 => {
                s.insert("additionalProperties".into(), Value::Bool(true));
            }
            1 => {
                s.insert("additionalProperties".into(), Value::Bool(false));
            }
            2 => {
                s.insert("additionalProperties".into(), schema(u, depth - 1, false)?);
            }
            _ => {}
        }
    }
    if depth > 0 && u.ratio(1, 4)? {
        s.insert("items".into(), schema(u, depth - 1, false)?);
    }
    if u.ratio(1, 5)? {
        let n = u.int_in_range(0..=4)?;
        let values: Vec<Value> = (0..n).map(|_| value(u, 1)).collect::<Result<_>>()?;
        s.insert("enum".into(), Value::Array(values));
    }
    if u.ratio(1, 5)? {
        s.insert("default".into(), value(u, 2)?);
    }
    if u.ratio(1, 8)? {
        let keyword = pick(
            u,
            &["minimum", "maximum", "minLength", "maxItems", "multipleOf"],
        )?;
        s.insert(keyword.into(), number(u)?);
    }
    if u.ratio(1, 10)? {
        s.insert("pattern".into(), Value::from(pick(u, PATTERNS)?));
    }
    if u.ratio(1, 12)? {
        s.insert("const".into(), value(u, 1)?);
    }
    if depth > 0 && u.ratio(1, 12)? {
        let keyword = pick(u, &["anyOf", "oneOf", "allOf"])?;
        let n = u.int_in_range(1..=2)?;
        let branches: Vec<Value> = (0..n)
            .map(|_| schema(u, depth - 1, false))
            .collect::<Result<_>>()?;
        s.insert(keyword.into(), Value::Array(branches));
    }
    if u.ratio(1, 16)? {
        s.insert(name(u)?, value(u, 1)?);
    }
    Ok(Value::Object(s))
}

fn arguments(u: &mut Unstructured<'_>) -> Result<Vec<(String, Value)>> {
    let n = u.int_in_range(0..=6)?;
    (0..n).map(|_| Ok((name(u)?, value(u, 2)?))).collect()
}

/// Arguments from JSON: an object's members, or `[key, value]` pairs.
fn json_arguments(v: Value) -> Vec<(String, Value)> {
    match v {
        Value::Object(m) => m.into_iter().collect(),
        Value::Array(items) => items
            .into_iter()
            .filter_map(|pair| match pair {
                Value::Array(mut kv) if kv.len() == 2 => {
                    let v = kv.pop()?;
                    let k = kv.pop()?;
                    Some((k.as_str()?.to_owned(), v))
                }
                _ => None,
            })
            .collect(),
        other => vec![("value".to_owned(), other)],
    }
}

fn run(parameters: Value, args: Vec<(String, Value)>, keys: KeyMatch) {
    let id = ToolId::parse("fuzz:tool").expect("a valid id");
    let definition = ToolDefinition::new(id, "fuzzed", parameters, Implementation::Service);
    let tool = match CompiledTool::new(definition) {
        Ok(tool) => tool,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    match tool.coerce(args, keys) {
        Ok(coerced) => {
            let _ = Value::Object(coerced).to_string();
        }
        Err(errors) => {
            let _ = errors.to_string();
        }
    }
}

fuzz_target!(|raw: &[u8]| {
    let Some((&flags, rest)) = raw.split_first() else {
        return;
    };
    let keys = if flags & 1 != 0 {
        KeyMatch::Exact
    } else {
        KeyMatch::Canonical
    };
    if flags & 2 != 0 {
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
        let Some(Ok(parameters)) = values.next() else {
            return;
        };
        let args = match values.next() {
            Some(Ok(v)) => json_arguments(v),
            _ => Vec::new(),
        };
        run(parameters, args, keys);
    } else {
        let mut u = Unstructured::new(rest);
        let Ok(parameters) = schema(&mut u, 3, true) else {
            return;
        };
        let Ok(args) = arguments(&mut u) else { return };
        run(parameters, args, keys);
    }
});
