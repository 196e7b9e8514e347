//! Decoded JSON as Python sees it: BFCL's checker compares the values `json.loads` gives, so
//! `true` is a `bool` and not an `int`, `5.0` is a `float`, and `==` / `in` hold
//! `1 == 1.0 == True`.

use serde_json::Value;

use super::report::clip;

/// The Python type `json.loads` gives a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PyType {
    None,
    Bool,
    Int,
    Float,
    Str,
    List,
    Dict,
}

impl PyType {
    pub(super) fn name(self) -> &'static str {
        match self {
            PyType::None => "NoneType",
            PyType::Bool => "bool",
            PyType::Int => "int",
            PyType::Float => "float",
            PyType::Str => "str",
            PyType::List => "list",
            PyType::Dict => "dict",
        }
    }
}

pub(super) fn py_type(v: &Value) -> PyType {
    match v {
        Value::Null => PyType::None,
        Value::Bool(_) => PyType::Bool,
        Value::Number(n) if n.is_f64() => PyType::Float,
        Value::Number(_) => PyType::Int,
        Value::String(_) => PyType::Str,
        Value::Array(_) => PyType::List,
        Value::Object(_) => PyType::Dict,
    }
}

/// BFCL parameter type → the Python type the decoded value must have (`ast_checker.py`).
pub(super) fn python_type(bfcl_type: &str) -> Option<PyType> {
    Some(match bfcl_type {
        "string" | "any" => PyType::Str,
        "integer" => PyType::Int,
        "float" => PyType::Float,
        "boolean" => PyType::Bool,
        "array" | "tuple" => PyType::List,
        "dict" => PyType::Dict,
        _ => return None,
    })
}

/// A number as Python compares it (`bool` is an `int`).
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

pub(super) fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Bool(b) => Some(Num::Int(i128::from(*b))),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            Num::Int(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            Num::Int(i128::from(u))
        } else {
            Num::Float(n.as_f64().unwrap_or(f64::NAN))
        }),
        _ => None,
    }
}

/// Python's `a == b` on decoded JSON.
pub(super) fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| py_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (num(a), num(b)) {
            (Some(Num::Int(x)), Some(Num::Int(y))) => x == y,
            (Some(Num::Float(x)), Some(Num::Float(y))) => x == y,
            (Some(Num::Int(i)), Some(Num::Float(f))) | (Some(Num::Float(f)), Some(Num::Int(i))) => {
                f.is_finite() && f.fract() == 0.0 && f.abs() < 1e38 && f as i128 == i
            }
            _ => false,
        },
    }
}

/// Python's `needle in haystack` (a list: any equal item; a str: a substring; a dict: a
/// key; anything else: false).
pub(super) fn py_in(needle: &Value, haystack: &Value) -> bool {
    match haystack {
        Value::Array(items) => items.iter().any(|x| py_eq(needle, x)),
        Value::String(s) => needle.as_str().is_some_and(|n| s.contains(n)),
        Value::Object(m) => needle.as_str().is_some_and(|k| m.contains_key(k)),
        _ => false,
    }
}

/// What Python's `for x in v` yields (a str: its characters; a dict: its keys).
pub(super) fn py_iter(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.clone(),
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
        _ => Vec::new(),
    }
}

/// Python's truth value of an optional member.
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
    }
}

/// BFCL's string normalisation: drop spaces and `, . / - _ * ^`, lowercase, `'` → `"`.
pub(super) fn standardize(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect();
    kept.to_lowercase().replace('\'', "\"")
}

/// A string normalised, anything else as is.
pub(super) fn norm(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(standardize(s)),
        other => other.clone(),
    }
}

pub(super) fn short(v: &Value) -> String {
    clip(&v.to_string(), 300)
}

/// Python's `json.loads`: JSON, plus the literals `NaN`, `Infinity` and `-Infinity` that
/// Python accepts (and a model could write). JSON has no such numbers, so outside strings
/// they become floats no answer holds: `-Infinity` / `Infinity` the largest finite
/// doubles, `NaN` a third sentinel; each is a `float` that equals no possible answer, as
/// in Python.
pub(super) fn loads(text: &str) -> Result<Value, serde_json::Error> {
    let strict = serde_json::from_str(text);
    if strict.is_ok() || !(text.contains("NaN") || text.contains("Infinity")) {
        return strict;
    }
    let mut out = String::with_capacity(text.len() + 32);
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else {
            let literal = [
                ("-Infinity", "-1.7976931348623157e308"),
                ("Infinity", "1.7976931348623157e308"),
                ("NaN", "1.7976931348623155e308"),
            ]
            .into_iter()
            // `-NaN` is no Python literal.
            .find(|(word, _)| rest.starts_with(word) && !(*word == "NaN" && out.ends_with('-')));
            if let Some((word, number)) = literal {
                out.push_str(number);
                rest = &rest[word.len()..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    serde_json::from_str(&out).or(strict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_equality_and_loads() {
        assert!(py_eq(&json!(1), &json!(1.0)));
        assert!(py_eq(&json!(true), &json!(1)));
        assert!(!py_eq(&json!("1"), &json!(1)));
        assert!(py_eq(&json!([1, {"a": 2.0}]), &json!([1.0, {"a": 2}])));
        assert!(py_in(&json!(""), &json!(["x", ""])));
        assert!(!py_in(&json!(""), &json!([[]])));
        assert_eq!(py_type(&json!(5.0)), PyType::Float);
        assert_eq!(py_type(&json!(5)), PyType::Int);
        assert_eq!(py_type(&json!(true)), PyType::Bool);
        assert_eq!(standardize("April 1, 2024"), "april12024");
        // Python's json.loads takes NaN and ±Infinity; not inside strings, not other words.
        let v = loads(r#"{"a": NaN, "b": -Infinity, "c": "NaN Infinity"}"#).unwrap();
        assert_eq!(py_type(&v["a"]), PyType::Float);
        assert!(v["b"].as_f64().unwrap() < -1e308);
        assert_eq!(v["c"], json!("NaN Infinity"));
        assert!(loads(r#"{"a": NaNa}"#).is_err());
        assert!(loads(r#"{"a": nan}"#).is_err());
        assert!(loads(r#"{"a": -NaN}"#).is_err());
        assert!(loads("{\"a\": ").is_err());
    }
}
