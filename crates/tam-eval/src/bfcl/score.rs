//! BFCL's AST checking rules over OpenAI-style tool calls: the one scorer of `tam-eval e2e
//! --bfcl` and of `tam-eval bfcl-score CASES RESULTS` ([`super::report`]).
//!
//! The rules are those of BFCL's `ast_checker.py`, with the decode, format and irrelevance
//! steps of its OpenAI function-calling handler and evaluation runner; every verdict
//! carries BFCL's error type. The decoded JSON is judged with Python's semantics, since
//! that is what BFCL compares: `true` is a `bool` and not an `int`, `5.0` is a `float`,
//! and `==` / `in` treat `1 == 1.0 == True`. Where BFCL would crash on a malformed case or
//! result line, this scorer fails the case (`unsupported_schema`) or reports the line.
//! `tests/bfcl_golden.rs` holds the verdict expected of every rule, on hand-made cases.
//!
//! A case line: `{"id", "category", "messages", "tools", "answer", "bfcl_functions", …}`;
//! a result line: `{"id", "tool_calls": [{"name", "arguments"}], "content", "error"?, …}`,
//! `arguments` a JSON text or an object.

use serde_json::{Map, Value, json};

use super::python::{
    PyType, loads, norm, py_eq, py_in, py_iter, py_type, python_type, short, standardize, truthy,
};
use super::report::{Case, clip};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub(crate) valid: bool,
    pub(crate) error_type: String,
    pub(crate) error: String,
}

fn ok() -> Verdict {
    Verdict {
        valid: true,
        error_type: String::new(),
        error: String::new(),
    }
}

fn fail(error_type: &str, error: impl Into<String>) -> Verdict {
    Verdict {
        valid: false,
        error_type: error_type.to_owned(),
        error: error.into(),
    }
}

// ---- type check (BFCL type_checker) ------------------------------------------------------

/// The type of the first possible answer that is not `""` (the optional marker).
fn answer_type(options: &Value) -> Option<PyType> {
    py_iter(options)
        .iter()
        .find(|o| o.as_str() != Some(""))
        .map(py_type)
}

/// Returns the verdict and whether the value is a "variable": its type differs from the
/// schema's but matches the possible answers' type, so it is compared exactly.
fn check_type(
    param: &str,
    value: &Value,
    options: &Value,
    expected: PyType,
    nested: Option<PyType>,
) -> (Verdict, bool) {
    let opt_type = answer_type(options);
    let is_variable = opt_type.is_some_and(|t| t != expected);
    if py_type(value) == expected {
        let Some(nested) = nested else {
            return (ok(), is_variable);
        };
        for item in py_iter(options) {
            // A possible answer that is not a list ("" for optional) accepts any items.
            let items_ok = match (&item, value) {
                (Value::Array(_), Value::Array(values)) => values
                    .iter()
                    .all(|v| check_type(param, v, &item, nested, None).0.valid),
                _ => true,
            };
            if items_ok {
                return (ok(), is_variable);
            }
        }
        return (
            fail(
                "type_error:nested",
                format!(
                    "nested type check failed for {param:?}: want items of {}, got {}",
                    nested.name(),
                    short(value)
                ),
            ),
            false,
        );
    }
    if opt_type.is_some_and(|t| py_type(value) == t) {
        return (ok(), true);
    }
    (
        fail(
            "type_error:simple",
            format!(
                "incorrect type for {param:?}: want {}, got {} ({})",
                expected.name(),
                py_type(value).name(),
                short(value)
            ),
        ),
        false,
    )
}

// ---- value checks (BFCL string_checker, list_checker, dict_checker, list_dict_checker) ----

fn check_string(param: &str, value: &str, options: &Value) -> Verdict {
    let got = standardize(value);
    let found = py_iter(options)
        .iter()
        .filter_map(Value::as_str)
        .any(|o| standardize(o) == got);
    if found {
        ok()
    } else {
        fail(
            "value_error:string",
            format!(
                "invalid value for {param:?}: {value:?}; want one of {} (normalised)",
                short(options)
            ),
        )
    }
}

fn check_list(param: &str, value: &[Value], options: &Value) -> Verdict {
    let got = Value::Array(value.iter().map(norm).collect());
    // Each option is iterated as BFCL does, so the optional marker "" becomes [].
    let found = py_iter(options)
        .iter()
        .any(|opt| py_eq(&got, &Value::Array(py_iter(opt).iter().map(norm).collect())));
    if found {
        ok()
    } else {
        fail(
            "value_error:list/tuple",
            format!(
                "invalid value for {param:?}: {}; want one of {}",
                short(&Value::Array(value.to_vec())),
                short(options)
            ),
        )
    }
}

fn check_dict(param: &str, value: &Value, options: &[Value]) -> Verdict {
    let mut verdict = fail(
        "dict_checker:unclear",
        format!("no usable possible answer for {param:?}"),
    );
    let Value::Object(value) = value else {
        // BFCL would raise here; only reachable inside a list.
        return fail(
            "value_error:dict_key",
            format!("{param:?}: item {} is not an object", short(value)),
        );
    };
    for opt in options {
        if opt.as_str() == Some("") {
            continue;
        }
        verdict = ok();
        for (key, v) in value {
            let allowed = match opt {
                Value::Object(m) if m.contains_key(key) => &m[key],
                _ => {
                    verdict = fail(
                        "value_error:dict_key",
                        format!("{param:?}: unexpected key {key:?}"),
                    );
                    break;
                }
            };
            let wanted: Vec<Value> = py_iter(allowed).iter().map(norm).collect();
            if !wanted.iter().any(|w| py_eq(&norm(v), w)) {
                verdict = fail(
                    "value_error:dict_value",
                    format!(
                        "{param:?}: invalid value for key {key:?}: {}; want one of {}",
                        short(v),
                        short(&Value::Array(wanted))
                    ),
                );
                break;
            }
        }
        if verdict.valid
            && let Value::Object(m) = opt
        {
            for (key, wanted) in m {
                if !value.contains_key(key) && !py_in(&json!(""), wanted) {
                    verdict = fail(
                        "value_error:dict_key",
                        format!("{param:?}: missing key {key:?}"),
                    );
                    break;
                }
            }
        }
        if verdict.valid {
            return ok();
        }
    }
    verdict
}

fn check_list_of_dicts(param: &str, value: &[Value], options: &Value) -> Verdict {
    let mut verdict = fail(
        "list_dict_checker:unclear",
        format!("no usable possible answer for {param:?}"),
    );
    for opt in py_iter(options) {
        let items = py_iter(&opt);
        if value.len() != items.len() {
            verdict = fail(
                "value_error:list_dict_count",
                format!(
                    "{param:?}: {} objects in the list, want {}",
                    value.len(),
                    items.len()
                ),
            );
            continue;
        }
        verdict = ok();
        for (v, o) in value.iter().zip(items) {
            verdict = check_dict(param, v, &[o]);
            if !verdict.valid {
                break;
            }
        }
        if verdict.valid {
            return ok();
        }
    }
    verdict
}

// ---- one call against one expected call (BFCL simple_function_checker) -------------------

/// A decoded call: the name and its arguments object.
type Call = (String, Map<String, Value>);

/// The first key of an answer entry `{bfcl_name: {param: options}}`.
fn first_key(v: &Value) -> Option<&str> {
    v.as_object()?.keys().next().map(String::as_str)
}

/// `fdoc`: the BFCL function doc; `expected`: `{bfcl_name: {param: options}}`.
fn check_call(fdoc: &Value, call: &Call, expected: &Value) -> Verdict {
    let Some(options) = expected
        .as_object()
        .and_then(|m| m.values().next())
        .and_then(Value::as_object)
    else {
        return fail(
            "unsupported_schema",
            format!(
                "answer entry {} is not {{name: {{param: values}}}}",
                short(expected)
            ),
        );
    };
    let (Some(fname), Some(props)) = (
        fdoc.get("name").and_then(Value::as_str),
        fdoc.get("parameters")
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object),
    ) else {
        return fail(
            "unsupported_schema",
            "a function doc without a name or parameters.properties",
        );
    };
    let name = fname.replace('.', "_");
    if call.0 != name {
        return fail(
            "simple_function_checker:wrong_func_name",
            format!("want function {name:?}, got {:?}", call.0),
        );
    }
    let params = &call.1;
    let required = fdoc
        .get("parameters")
        .and_then(|p| p.get("required"))
        .map(py_iter)
        .unwrap_or_default();
    for p in &required {
        if !p.as_str().is_some_and(|p| params.contains_key(p)) {
            return fail(
                "simple_function_checker:missing_required",
                format!("missing required parameter {}", short(p)),
            );
        }
    }
    for (p, value) in params {
        if !props.contains_key(p) || !options.contains_key(p) {
            return fail(
                "simple_function_checker:unexpected_param",
                format!("unexpected parameter {p:?}"),
            );
        }
        let schema = &props[p];
        let type_name = schema.get("type").and_then(Value::as_str);
        let Some(expected_type) = type_name.and_then(python_type) else {
            return fail(
                "unsupported_schema",
                format!(
                    "{p:?}: BFCL has no Python type for {:?}",
                    schema.get("type")
                ),
            );
        };
        let mut nested = None;
        if matches!(type_name, Some("array" | "tuple")) {
            nested = schema
                .get("items")
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str)
                .and_then(python_type);
            if nested.is_none() {
                return fail(
                    "unsupported_schema",
                    format!("{p:?}: BFCL has no Python type for its items"),
                );
            }
        }
        let value = match value {
            // BFCL lets an int stand for a float (top level only).
            Value::Number(n) if type_name == Some("float") && !n.is_f64() => {
                n.as_f64().map_or(Value::Null, Value::from)
            }
            other => other.clone(),
        };
        let opts = &options[p];
        let (verdict, is_variable) = check_type(p, &value, opts, expected_type, nested);
        if !verdict.valid {
            return verdict;
        }
        if !is_variable {
            let verdict = match (&value, expected_type) {
                (_, PyType::Dict) => Some(check_dict(p, &value, &py_iter(opts))),
                (Value::Array(items), PyType::List) if nested == Some(PyType::Dict) => {
                    Some(check_list_of_dicts(p, items, opts))
                }
                (Value::String(s), PyType::Str) => Some(check_string(p, s, opts)),
                (Value::Array(items), PyType::List) => Some(check_list(p, items, opts)),
                _ => None,
            };
            if let Some(verdict) = verdict {
                if !verdict.valid {
                    return verdict;
                }
                continue;
            }
        }
        if !py_in(&value, opts) {
            return fail(
                "value_error:others",
                format!(
                    "invalid value for {p:?}: {}; want one of {}",
                    short(&value),
                    short(opts)
                ),
            );
        }
    }
    for (p, opts) in options {
        if !params.contains_key(p) && !py_in(&json!(""), opts) {
            return fail(
                "simple_function_checker:missing_optional",
                format!("parameter {p:?} not given and not optional in the answer"),
            );
        }
    }
    ok()
}

fn find_doc<'a>(fdocs: &'a [Value], name: &str) -> Option<&'a Value> {
    fdocs
        .iter()
        .find(|f| f.get("name").and_then(Value::as_str) == Some(name))
}

/// BFCL's ast_checker for the simple, multiple, parallel and parallel_multiple categories.
fn check_calls(case: &Case, calls: &[Call]) -> Verdict {
    let empty = Vec::new();
    let fdocs = case
        .line
        .get("bfcl_functions")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let Some(answer) = case.line.get("answer").and_then(Value::as_array) else {
        return fail("unsupported_schema", "the case has no answer");
    };
    let no_doc = |expected: &Value| {
        fail(
            "unsupported_schema",
            format!("no function doc for the answer {}", short(expected)),
        )
    };
    let category = case.category.as_str();
    if category.contains("parallel") {
        if calls.len() != answer.len() {
            return fail(
                "parallel_function_checker_no_order:wrong_count",
                format!("{} calls, want {}", calls.len(), answer.len()),
            );
        }
        let mut matched = vec![false; calls.len()];
        for (i, expected) in answer.iter().enumerate() {
            let Some(fdoc) = first_key(expected).and_then(|n| find_doc(fdocs, n)) else {
                return no_doc(expected);
            };
            let mut why = Vec::new();
            let mut found = false;
            for (j, call) in calls.iter().enumerate() {
                if matched[j] {
                    continue;
                }
                let verdict = check_call(fdoc, call, expected);
                if verdict.valid {
                    // Greedy: the first match wins, no backtracking (as BFCL).
                    matched[j] = true;
                    found = true;
                    break;
                }
                why.push(format!(
                    "call {j}: {}: {}",
                    verdict.error_type, verdict.error
                ));
            }
            if !found {
                return fail(
                    "parallel_function_checker_no_order:cannot_find_match",
                    format!(
                        "no call matches expected #{i} {}; {}",
                        short(expected),
                        why.join(" | ")
                    ),
                );
            }
        }
        return ok();
    }
    if category.contains("multiple") {
        if calls.len() != answer.len() {
            return fail(
                "multiple_function_checker:wrong_count",
                format!("{} calls, want {}", calls.len(), answer.len()),
            );
        }
        let expected = &answer[0];
        let Some(fdoc) = first_key(expected).and_then(|n| find_doc(fdocs, n)) else {
            return no_doc(expected);
        };
        return check_call(fdoc, &calls[0], expected);
    }
    if calls.len() != 1 {
        return fail(
            "simple_function_checker:wrong_count",
            format!("{} calls, want 1", calls.len()),
        );
    }
    match (fdocs.first(), answer.first()) {
        (Some(fdoc), Some(expected)) => check_call(fdoc, &calls[0], expected),
        _ => fail("unsupported_schema", "no function doc or no answer"),
    }
}

// ---- decoding a result line (BFCL OpenAI FC handler decode_ast) ---------------------------

/// How a result line's tool calls decode.
#[derive(Debug, PartialEq)]
enum Decoded {
    /// At least one call, every one's arguments a JSON object.
    Calls(Vec<Call>),
    /// No tool call (the model answered in text).
    None,
    /// Some call's arguments are not JSON (or missing).
    DecodeError(String),
    /// Some call's arguments are JSON but not an object.
    BadFormat(String),
}

fn decode(result: &Map<String, Value>) -> Decoded {
    let raw = result.get("tool_calls");
    if !truthy(raw) {
        return Decoded::None;
    }
    let Some(Value::Array(raw)) = raw else {
        return Decoded::DecodeError(format!(
            "tool_calls is not a list: {}",
            short(raw.unwrap_or(&Value::Null))
        ));
    };
    let mut calls = Vec::new();
    for tc in raw {
        let Value::Object(tc) = tc else {
            return Decoded::DecodeError(format!(
                "a tool call that is not an object: {}",
                short(tc)
            ));
        };
        let name = match tc.get("name") {
            Some(Value::String(s)) => s.clone(),
            Some(v) if truthy(Some(v)) => v.to_string(),
            _ => String::new(),
        };
        let args = match tc.get("arguments") {
            Some(Value::String(text)) => match loads(text) {
                Ok(v) => v,
                Err(e) => {
                    return Decoded::DecodeError(format!(
                        "arguments of {name:?} are not JSON ({e}): {:?}",
                        clip(text, 300)
                    ));
                }
            },
            None | Some(Value::Null) => {
                return Decoded::DecodeError(format!("call {name:?} has no arguments"));
            }
            Some(other) => other.clone(),
        };
        calls.push((name, args));
    }
    let mut out = Vec::new();
    for (name, args) in calls {
        match args {
            Value::Object(m) => out.push((name, m)),
            other => {
                return Decoded::BadFormat(format!(
                    "arguments of {name:?} are not a JSON object: {}",
                    short(&other)
                ));
            }
        }
    }
    Decoded::Calls(out)
}

/// The verdict on one case. `result` is `None` when the results have no line for it.
pub(crate) fn score_case(
    case: &Case,
    result: Option<&Map<String, Value>>,
    strict_irrelevance: bool,
) -> Verdict {
    let Some(result) = result else {
        return fail("missing_result", "no result line for this id");
    };
    if truthy(result.get("error")) {
        let error = match &result["error"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return fail("transport_error", error);
    }
    let decoded = decode(result);
    if case.category == "irrelevance" {
        // BFCL: correct unless the output decodes into at least one call, so a call whose
        // arguments are not a JSON object counts as "no call" there.
        let called = if strict_irrelevance {
            truthy(result.get("tool_calls"))
        } else {
            matches!(decoded, Decoded::Calls(_))
        };
        if called {
            return fail(
                "irrelevance_error:decoder_success",
                format!(
                    "called a tool when none fits: {}",
                    short(result.get("tool_calls").unwrap_or(&Value::Null))
                ),
            );
        }
        return ok();
    }
    match decoded {
        Decoded::None => fail(
            "ast_decoder:no_tool_call",
            format!(
                "no tool call; content: {:?}",
                clip(
                    result.get("content").and_then(Value::as_str).unwrap_or(""),
                    200
                )
            ),
        ),
        Decoded::DecodeError(msg) => fail("ast_decoder:decoder_failed", msg),
        Decoded::BadFormat(msg) => fail("ast_decoder:decoder_wrong_output_format", msg),
        Decoded::Calls(calls) => check_calls(case, &calls),
    }
}

#[cfg(test)]
mod tests;
