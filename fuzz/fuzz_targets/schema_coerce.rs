//! Coercion of arbitrary arguments against arbitrary parameter schemas: compiling the
//! schema and coercing must never panic, whatever either holds, and every error must
//! print. Coercion is per argument, and that is checked too: an argument whose key is a
//! declared property comes back either exactly as written (when a problem was reported at
//! or inside it) or with a type its property's `type` allows (when none was).
//!
//! Input layout: `[flags] [rest …]`. Flag bit 0 picks [`KeyMatch::Exact`] (else
//! canonical). With flag bit 1 set, `rest` is JSON text: a schema followed by the
//! arguments (an object, or an array of `[key, value]` pairs to repeat a key); the seeds
//! are of that form. Without it, `rest` drives a generator of schemas built from the
//! keywords coercion reads (`type`, `properties`, `required`, `additionalProperties`,
//! `enum`, `items`, `default`) and a few it leaves to the validator, and of arguments
//! that are mostly the text a model writes: numbers, booleans, JSON, Python and
//! JavaScript literals (`['a', 'b',]`, `{'k': None}`), comma-separated lists, and
//! brackets nested far past the readers' depth limit.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};
use tool_schema::{
    CompiledTool, Error, Implementation, KeyMatch, ToolDefinition, ToolId, canonical_key,
};

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
    "3,5",
    "3, 4, 5",
    "3, 4, 5,",
    "3,,5",
    "true, FALSE",
    "Paris, France",
    "[3, 5]",
    "[3, 5,]",
    "['Sam', 'Alice']",
    "[True, False, None]",
    "[[1, 2], [3]]",
    "[{'name': 'x', 'age': '3'}]",
    "{'a': 1, 'b': None}",
    "{'a': [1, 'x',], b: True,}",
    "{a: undefined}",
    "[Sam, Alice]",
    "['it\\'s', \"q\"]",
    "['\\x41\\u00e9\\ud83d\\ude00']",
    "[1e400]",
    "[draft] notes",
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

/// Text in the styles models write arrays and objects in, well formed or not.
fn literal(u: &mut Unstructured<'_>, depth: u32) -> Result<String> {
    let kinds = if depth == 0 { 5 } else { 8 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 => u.int_in_range(-3i64..=20)?.to_string(),
        1 => number(u)?.to_string(),
        2 => pick(
            u,
            &["True", "False", "None", "true", "null", "undefined", "NaN"],
        )?
        .to_owned(),
        3 => {
            let quote = if u.arbitrary()? { '\'' } else { '"' };
            let body: String = u.arbitrary()?;
            let escape = pick(u, &["", "\\'", "\\n", "\\x4", "\\u00e9", "\\ud83d", "\\"])?;
            let close = if u.ratio(7, 8)? {
                quote.to_string()
            } else {
                String::new()
            };
            format!("{quote}{body}{escape}{close}")
        }
        4 => u.arbitrary()?,
        5 => pick(u, TEXTS)?.to_owned(),
        6 => {
            // A list: bracketed or not, with `,` or `, `, maybe a trailing comma.
            let n = u.int_in_range(0..=4)?;
            let items = (0..n)
                .map(|_| literal(u, depth - 1))
                .collect::<Result<Vec<_>>>()?;
            let separator = if u.arbitrary()? { "," } else { ", " };
            let trailing = if u.ratio(1, 4)? { "," } else { "" };
            let list = items.join(separator);
            match u.int_in_range(0..=3)? {
                0 => format!("{list}{trailing}"),
                1 => format!("[{list}{trailing}"),
                _ => format!("[{list}{trailing}]"),
            }
        }
        7 => {
            let n = u.int_in_range(0..=3)?;
            let mut members = Vec::new();
            for _ in 0..n {
                let key = name(u)?;
                let key = match u.int_in_range(0..=2)? {
                    0 => format!("'{key}'"),
                    1 => format!("\"{key}\""),
                    _ => key,
                };
                members.push(format!("{key}: {}", literal(u, depth - 1)?));
            }
            let trailing = if u.ratio(1, 4)? { "," } else { "" };
            let close = if u.ratio(7, 8)? { "}" } else { "" };
            format!("{{{}{trailing}{close}", members.join(", "))
        }
        _ => {
            // Nesting past the readers' limits (64 levels, serde_json's 128).
            let levels = usize::from(u.arbitrary::<u16>()? % 2_000);
            let open = pick(u, &["[", "{'a': ", "['x', ", "[{'a': "])?;
            let close = match open {
                "[" => "]",
                "{'a': " => "}",
                "['x', " => "]",
                _ => "}]",
            };
            let inner = pick(u, &["", "1", "'x'"])?;
            let closing = if u.arbitrary()? {
                close.repeat(levels)
            } else {
                String::new()
            };
            format!("{}{inner}{closing}", open.repeat(levels))
        }
    })
}

fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 => Value::from(pick(u, TEXTS)?),
        1 => Value::String(literal(u, 3)?),
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
    let definition = ToolDefinition::new(id, "fuzzed", parameters.clone(), Implementation::Service);
    let tool = match CompiledTool::new(definition) {
        Ok(tool) => tool,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let (coerced, errors) = match tool.coerce(args.clone(), keys) {
        Ok(coerced) => (coerced, Vec::new()),
        Err(errors) => {
            let _ = errors.to_string();
            errors.into_parts()
        }
    };
    let _ = Value::Object(coerced.clone()).to_string();
    check_per_argument(&parameters, &args, &coerced, &errors);
}

/// Where a problem the coercion walk reports sits; `None` for the validator's findings,
/// which come only when every argument was typed.
fn walk_path(error: &Error) -> Option<&str> {
    match error {
        Error::WrongType { path, .. }
        | Error::UnreadableValue { path, .. }
        | Error::NotInEnum { path, .. }
        | Error::UnknownParameter { path, .. }
        | Error::MissingParameter { path, .. }
        | Error::DuplicateParameter { path, .. } => Some(path),
        _ => None,
    }
}

/// Whether `value` has one of the JSON Schema `type`s in `types` (a name or a list).
fn has_type(types: &Value, value: &Value) -> bool {
    let one = |name: &str| match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    };
    match types {
        Value::String(name) => one(name),
        Value::Array(names) if !names.is_empty() => names.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

/// Per-argument coercion: each argument whose key is exactly a declared property is
/// either exactly as written (something was reported at or inside it), left out (the text
/// `None` or `null` for an optional property), or of a declared type (nothing was). Checked only where paths cannot be confused: no repeated key (even
/// canonically) and no `.` or `[` in any key or property name.
fn check_per_argument(
    parameters: &Value,
    args: &[(String, Value)],
    coerced: &Map<String, Value>,
    errors: &[Error],
) {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return;
    };
    let plain = |key: &str| !key.contains(['.', '[']);
    if !(args.iter().all(|(key, _)| plain(key.as_str()))
        && properties.keys().all(|key| plain(key.as_str())))
    {
        return;
    }
    let mut canonical: Vec<String> = args.iter().map(|(key, _)| canonical_key(key)).collect();
    canonical.sort();
    canonical.dedup();
    if canonical.len() != args.len() {
        return;
    }
    for (key, written) in args {
        let Some(property) = properties.get(key) else {
            continue;
        };
        let reported = errors.iter().filter_map(walk_path).any(|path| {
            path.strip_prefix(key.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        });
        let value = coerced.get(key);
        if reported {
            assert_eq!(
                value,
                Some(written),
                "'{key}' reported but not left as written"
            );
        } else {
            // `None` or `null` written for an optional property that does not take null
            // leaves it out (its default, if any, takes its place).
            let says_absent = matches!(written, Value::String(text) if matches!(text.trim(), "None" | "null"))
                && !parameters
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|required| required.iter().any(|name| name == key.as_str()));
            if says_absent && value.is_none_or(|v| Some(v) == property.get("default")) {
                continue;
            }
            let value = value.unwrap_or_else(|| panic!("'{key}' typed but missing"));
            if let Some(types) = property.get("type") {
                assert!(
                    has_type(types, value),
                    "'{key}' typed as {value}, not {types}"
                );
            }
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
