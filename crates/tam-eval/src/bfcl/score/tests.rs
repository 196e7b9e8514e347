//! The tricky rules of the scorer, each on hand-made cases.

use super::*;
use serde_json::json;

/// A case of `category` with one function `f` (BFCL doc `props`, `required`) and the
/// answer `answer`.
fn case(category: &str, functions: Value, answer: Value) -> Case {
    let Value::Object(line) = json!({
        "id": "t", "category": category, "messages": [], "tools": [],
        "bfcl_functions": functions, "answer": answer,
    }) else {
        unreachable!()
    };
    Case {
        id: "t".into(),
        category: category.into(),
        line,
    }
}

fn fdoc(name: &str, props: Value, required: Value) -> Value {
    json!({"name": name, "parameters": {"type": "dict", "properties": props, "required": required}})
}

/// A result line whose calls are `(name, arguments text)`.
fn result(calls: &[(&str, &str)]) -> Map<String, Value> {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(n, a)| json!({"name": n, "arguments": a}))
        .collect();
    let Value::Object(m) = json!({"id": "t", "tool_calls": calls, "content": ""}) else {
        unreachable!()
    };
    m
}

fn verdict(c: &Case, calls: &[(&str, &str)]) -> Verdict {
    score_case(c, Some(&result(calls)), false)
}

#[test]
fn strings_are_normalised_on_both_sides() {
    assert_eq!(standardize("April 1, 2024"), "april12024");
    assert_eq!(standardize("New_York-City/NY.*^"), "newyorkcityny");
    assert_eq!(standardize("it's"), "it\"s");
    let c = case(
        "simple",
        json!([fdoc(
            "math.area",
            json!({"city": {"type": "string"}}),
            json!(["city"])
        )]),
        json!([{"math.area": {"city": ["New York, NY"]}}]),
    );
    assert!(verdict(&c, &[("math_area", r#"{"city":"new york ny"}"#)]).valid);
    assert!(verdict(&c, &[("math_area", r#"{"city":"NEW-YORK_NY."}"#)]).valid);
    let v = verdict(&c, &[("math_area", r#"{"city":"Boston"}"#)]);
    assert_eq!(v.error_type, "value_error:string");
    // The name must be the `_` form exactly.
    let v = verdict(&c, &[("math.area", r#"{"city":"New York, NY"}"#)]);
    assert_eq!(v.error_type, "simple_function_checker:wrong_func_name");
    // Lists: string items normalised, order kept.
    let c = case(
        "simple",
        json!([fdoc(
            "f",
            json!({"xs": {"type": "array", "items": {"type": "string"}}}),
            json!([])
        )]),
        json!([{"f": {"xs": [["a b", "C"]]}}]),
    );
    assert!(verdict(&c, &[("f", r#"{"xs":["AB","c"]}"#)]).valid);
    let v = verdict(&c, &[("f", r#"{"xs":["c","ab"]}"#)]);
    assert_eq!(v.error_type, "value_error:list/tuple");
}

#[test]
fn an_int_stands_for_a_float_but_not_the_other_way() {
    let c = case(
        "simple",
        json!([fdoc(
            "f",
            json!({"x": {"type": "float"}, "n": {"type": "integer"}}),
            json!(["x"])
        )]),
        json!([{"f": {"x": [5.0], "n": [3, ""]}}]),
    );
    assert!(verdict(&c, &[("f", r#"{"x":5}"#)]).valid);
    assert!(verdict(&c, &[("f", r#"{"x":5.0,"n":3}"#)]).valid);
    let v = verdict(&c, &[("f", r#"{"x":5.0,"n":3.0}"#)]);
    assert_eq!(v.error_type, "type_error:simple");
    // `true` is not an int.
    let v = verdict(&c, &[("f", r#"{"x":5.0,"n":true}"#)]);
    assert_eq!(v.error_type, "type_error:simple");
    let v = verdict(&c, &[("f", r#"{"x":"5"}"#)]);
    assert_eq!(v.error_type, "type_error:simple");
    // An int answer for a float param: 5.0 is then a "variable", compared as Python does.
    let c = case(
        "simple",
        json!([fdoc("f", json!({"x": {"type": "float"}}), json!([]))]),
        json!([{"f": {"x": [5]}}]),
    );
    assert!(verdict(&c, &[("f", r#"{"x":5.0}"#)]).valid);
    assert!(verdict(&c, &[("f", r#"{"x":5}"#)]).valid);
}

#[test]
fn optional_empty_string_allows_omission_and_nothing_else() {
    let c = case(
        "simple",
        json!([fdoc(
            "f",
            json!({"a": {"type": "integer"}, "unit": {"type": "string"}, "b": {"type": "integer"}}),
            json!(["a"])
        )]),
        json!([{"f": {"a": [1], "unit": ["units", ""], "b": [2]}}]),
    );
    assert!(verdict(&c, &[("f", r#"{"a":1,"b":2}"#)]).valid);
    assert!(verdict(&c, &[("f", r#"{"a":1,"b":2,"unit":"Units"}"#)]).valid);
    // `b` is optional in the schema but the answer needs it.
    let v = verdict(&c, &[("f", r#"{"a":1}"#)]);
    assert_eq!(v.error_type, "simple_function_checker:missing_optional");
    let v = verdict(&c, &[("f", r#"{"b":2}"#)]);
    assert_eq!(v.error_type, "simple_function_checker:missing_required");
    // As in BFCL, an explicit "" matches the optional marker (it is a string option).
    assert!(verdict(&c, &[("f", r#"{"a":1,"b":2,"unit":""}"#)]).valid);
    let v = verdict(&c, &[("f", r#"{"a":1,"b":2,"unit":"meters"}"#)]);
    assert_eq!(v.error_type, "value_error:string");
    let v = verdict(&c, &[("f", r#"{"a":1,"b":2,"extra":0}"#)]);
    assert_eq!(v.error_type, "simple_function_checker:unexpected_param");
    // The first failing parameter in the model's order is reported.
    let v = verdict(&c, &[("f", r#"{"extra":0,"a":9,"b":2}"#)]);
    assert_eq!(v.error_type, "simple_function_checker:unexpected_param");
    let v = verdict(&c, &[("f", r#"{"a":9,"extra":0,"b":2}"#)]);
    assert_eq!(v.error_type, "value_error:others");
    // An optional list param given as [] equals the "" option.
    let c = case(
        "simple",
        json!([fdoc(
            "f",
            json!({"xs": {"type": "array", "items": {"type": "integer"}}}),
            json!([])
        )]),
        json!([{"f": {"xs": [[1, 2], ""]}}]),
    );
    assert!(verdict(&c, &[("f", r#"{"xs":[]}"#)]).valid);
    assert!(verdict(&c, &[("f", r#"{}"#)]).valid);
    assert!(verdict(&c, &[("f", r#"{"xs":[1,2]}"#)]).valid);
    // Items of another type pass the nested check ("" allowed) but not the values.
    let v = verdict(&c, &[("f", r#"{"xs":["1"]}"#)]);
    assert_eq!(v.error_type, "value_error:list/tuple");
}

#[test]
fn dicts_and_lists_of_dicts() {
    let c = case(
        "simple",
        json!([fdoc(
            "f",
            json!({
                "d": {"type": "dict", "properties": {}},
                "ds": {"type": "array", "items": {"type": "dict"}},
            }),
            json!([])
        )]),
        json!([{"f": {
            "d": [{"city": ["Paris"], "unit": ["c", ""]}],
            "ds": [[{"k": [1]}, {"k": [2]}]],
        }}]),
    );
    assert!(
        verdict(
            &c,
            &[("f", r#"{"d":{"city":"paris"},"ds":[{"k":1},{"k":2.0}]}"#)]
        )
        .valid
    );
    let v = verdict(
        &c,
        &[(
            "f",
            r#"{"d":{"city":"Paris","x":1},"ds":[{"k":1},{"k":2}]}"#,
        )],
    );
    assert_eq!(v.error_type, "value_error:dict_key");
    let v = verdict(&c, &[("f", r#"{"d":{"unit":"c"},"ds":[{"k":1},{"k":2}]}"#)]);
    assert_eq!(v.error_type, "value_error:dict_key");
    let v = verdict(
        &c,
        &[("f", r#"{"d":{"city":"Rome"},"ds":[{"k":1},{"k":2}]}"#)],
    );
    assert_eq!(v.error_type, "value_error:dict_value");
    let v = verdict(&c, &[("f", r#"{"d":{"city":"Paris"},"ds":[{"k":1}]}"#)]);
    assert_eq!(v.error_type, "value_error:list_dict_count");
}

#[test]
fn parallel_matching_is_greedy_in_answer_order() {
    let functions = json!([fdoc(
        "f",
        json!({"x": {"type": "integer"}, "y": {"type": "integer"}}),
        json!(["x"])
    )]);
    // Expected #0 accepts both calls; greedy takes call 0 (x=1,y=1), and then
    // expected #1 (x=1, y optional? no: y must be 1) cannot use it.
    let c = case(
        "parallel",
        functions.clone(),
        json!([{"f": {"x": [1], "y": [1, 2]}}, {"f": {"x": [1], "y": [1]}}]),
    );
    let calls = [("f", r#"{"x":1,"y":1}"#), ("f", r#"{"x":1,"y":2}"#)];
    let v = verdict(&c, &calls);
    assert_eq!(
        v.error_type,
        "parallel_function_checker_no_order:cannot_find_match"
    );
    // The other order of the model's calls matches.
    let calls = [("f", r#"{"x":1,"y":2}"#), ("f", r#"{"x":1,"y":1}"#)];
    assert!(verdict(&c, &calls).valid);
    let v = verdict(&c, &calls[..1]);
    assert_eq!(
        v.error_type,
        "parallel_function_checker_no_order:wrong_count"
    );
    // multiple: only the first call is checked, the count must match.
    let c = case("multiple", functions, json!([{"f": {"x": [1], "y": [1]}}]));
    assert!(verdict(&c, &[("f", r#"{"x":1,"y":1}"#)]).valid);
    let v = verdict(&c, &[("f", r#"{"x":1,"y":1}"#), ("f", r#"{"x":1,"y":1}"#)]);
    assert_eq!(v.error_type, "multiple_function_checker:wrong_count");
}

#[test]
fn irrelevance_and_decoding() {
    let c = case(
        "irrelevance",
        json!([fdoc("f", json!({}), json!([]))]),
        Value::Null,
    );
    assert!(verdict(&c, &[]).valid);
    let v = verdict(&c, &[("f", "{}")]);
    assert_eq!(v.error_type, "irrelevance_error:decoder_success");
    // Arguments that are not JSON, or not an object, count as no call ...
    assert!(verdict(&c, &[("f", "{\"x\": ")]).valid);
    assert!(verdict(&c, &[("f", "[1]")]).valid);
    assert!(verdict(&c, &[("f", "{}"), ("f", "oops")]).valid);
    // ... except with --strict-irrelevance.
    let strict = score_case(&c, Some(&result(&[("f", "oops")])), true);
    assert_eq!(strict.error_type, "irrelevance_error:decoder_success");
    // A transport error fails every category.
    let mut r = result(&[]);
    r.insert("error".into(), json!("HTTP 500: boom"));
    assert_eq!(
        score_case(&c, Some(&r), false).error_type,
        "transport_error"
    );

    let c = case(
        "simple",
        json!([fdoc("f", json!({"x": {"type": "integer"}}), json!([]))]),
        json!([{"f": {"x": [1]}}]),
    );
    assert_eq!(verdict(&c, &[]).error_type, "ast_decoder:no_tool_call");
    assert_eq!(
        verdict(&c, &[("f", "{\"x\":")]).error_type,
        "ast_decoder:decoder_failed"
    );
    assert_eq!(
        verdict(&c, &[("f", "5")]).error_type,
        "ast_decoder:decoder_wrong_output_format"
    );
    // Arguments already parsed are taken as they are.
    let Value::Object(r) = json!({"id": "t", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]})
    else {
        unreachable!()
    };
    assert!(score_case(&c, Some(&r), false).valid);
    assert_eq!(score_case(&c, None, false).error_type, "missing_result");
}
