//! Coercion is per argument, and arrays and objects are read from what models
//! write (JSON, Python or JavaScript literals, comma-separated numbers or booleans).

use serde_json::{Map, Value, json};
use tool_schema::{
    CompiledTool, Error, Implementation, KeyMatch, ToolDefinition, ToolId, ValidationErrors,
};

fn tool(parameters: Value) -> CompiledTool {
    CompiledTool::new(ToolDefinition::new(
        ToolId::parse("search").unwrap(),
        "test tool",
        parameters,
        Implementation::Service,
    ))
    .unwrap()
}

fn search() -> CompiledTool {
    tool(json!({
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "integer"}},
            "lower_limit": {"type": "integer"},
            "ratio": {"type": "number"},
            "names": {"type": "array", "items": {"type": "string"}},
            "places": {"type": "array", "items": {"type": "string"}},
            "flags": {"type": "array", "items": {"type": "boolean"}},
            "weights": {"type": "array", "items": {"type": "number"}},
            "options": {"type": "object"},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "people": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                    "required": ["name"]
                }
            },
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "level": {"type": "integer", "enum": [1, 2, 3]},
            "verbose": {"type": "boolean"}
        }
    }))
}

/// TAM gives every value as text.
fn text(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, Value)> {
    pairs
        .iter()
        .map(|(key, value)| (*key, Value::from(*value)))
        .collect()
}

fn ok(pairs: &[(&'static str, &str)]) -> Value {
    match search().coerce(text(pairs), KeyMatch::Canonical) {
        Ok(map) => Value::Object(map),
        Err(errors) => panic!("{errors}"),
    }
}

fn fails(pairs: &[(&'static str, &str)]) -> ValidationErrors {
    match search().coerce(text(pairs), KeyMatch::Canonical) {
        Ok(map) => panic!("accepted: {}", Value::Object(map)),
        Err(errors) => errors,
    }
}

fn messages(errors: &ValidationErrors) -> Vec<String> {
    errors.errors().iter().map(ToString::to_string).collect()
}

#[test]
fn a_comma_list_of_integers_next_to_an_integer_types_both() {
    assert_eq!(
        ok(&[("ids", "3,5"), ("lower_limit", "1")]),
        json!({"ids": [3, 5], "lower_limit": 1})
    );
}

#[test]
fn one_bad_argument_stays_as_written_and_the_others_are_typed() {
    let errors = fails(&[("ids", "3,x"), ("lower_limit", "1"), ("verbose", "TRUE")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'ids[1]' must be an integer, got 'x'"]
    );
    assert_eq!(
        Value::Object(errors.arguments().clone()),
        json!({"ids": "3,x", "lower_limit": 1, "verbose": true})
    );

    // Garbage for a scalar: the same.
    let errors = fails(&[("lower_limit", "lots"), ("ratio", "0.5"), ("ids", "[1, 2]")]);
    assert!(matches!(
        errors.errors(),
        [Error::WrongType { path, expected, .. }] if path == "lower_limit" && expected == "an integer"
    ));
    let (arguments, problems) = errors.into_parts();
    assert_eq!(problems.len(), 1);
    assert_eq!(
        Value::Object(arguments),
        json!({"ids": [1, 2], "lower_limit": "lots", "ratio": 0.5})
    );
}

#[test]
fn an_argument_with_a_bad_item_stays_whole() {
    // Text: the text as written, not a half-typed array.
    let errors = fails(&[("ids", "[1, 'x']"), ("lower_limit", "2")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'ids[1]' must be an integer, got 'x'"]
    );
    assert_eq!(errors.arguments()["ids"], json!("[1, 'x']"));
    assert_eq!(errors.arguments()["lower_limit"], json!(2));
    // A value that came as JSON (ACTION XML): the value as given.
    let errors = search()
        .coerce(
            [("ids", json!(["1", "x"])), ("lower_limit", json!("2"))],
            KeyMatch::Exact,
        )
        .unwrap_err();
    assert_eq!(errors.arguments()["ids"], json!(["1", "x"]));
    assert_eq!(errors.arguments()["lower_limit"], json!(2));
}

#[test]
fn python_and_javascript_lists() {
    assert_eq!(
        ok(&[("names", "['Sam', 'Alice']")])["names"],
        json!(["Sam", "Alice"])
    );
    assert_eq!(
        ok(&[("names", r#"["Sam", 'O\'Brien',]"#)])["names"],
        json!(["Sam", "O'Brien"])
    );
    assert_eq!(ok(&[("ids", "[3, 5]")])["ids"], json!([3, 5]));
    assert_eq!(ok(&[("ids", " [3, 5,] ")])["ids"], json!([3, 5]));
    assert_eq!(ok(&[("ids", "['3', 5.0]")])["ids"], json!([3, 5]));
    assert_eq!(
        ok(&[("flags", "[True, False, true]")])["flags"],
        json!([true, false, true])
    );
    // Items are coerced to their type: numbers to text for strings.
    assert_eq!(ok(&[("names", "[3, 5]")])["names"], json!(["3", "5"]));
    assert_eq!(ok(&[("ids", "[]")])["ids"], json!([]));
}

#[test]
fn comma_lists_for_numbers_and_booleans() {
    for written in ["3,4,5", "3, 4, 5", " 3 ,4,5, "] {
        assert_eq!(
            ok(&[("ids", written)])["ids"],
            json!([3, 4, 5]),
            "{written:?}"
        );
    }
    assert_eq!(
        ok(&[("weights", "0.5, 2, 1e1")])["weights"],
        json!([0.5, 2, 10.0])
    );
    assert_eq!(
        ok(&[("flags", "true, FALSE")])["flags"],
        json!([true, false])
    );
    // One value without a comma is still a one-element array.
    assert_eq!(ok(&[("ids", "7")])["ids"], json!([7]));
    // An empty item is reported on its index.
    assert_eq!(
        messages(&fails(&[("ids", "3,,5")])),
        ["Parameter 'ids[1]' must be an integer, got ''"]
    );
}

#[test]
fn text_with_commas_is_one_string_for_a_string_array() {
    assert_eq!(
        ok(&[("places", "Paris, France")])["places"],
        json!(["Paris, France"])
    );
    assert_eq!(
        ok(&[("places", "['Paris, France', 'Rome']")])["places"],
        json!(["Paris, France", "Rome"])
    );
    // Text that only starts with a bracket is a plain item.
    assert_eq!(
        ok(&[("places", "[draft] Paris")])["places"],
        json!(["[draft] Paris"])
    );
}

#[test]
fn python_objects() {
    assert_eq!(
        ok(&[("options", "{'a': 1, 'b': None}")])["options"],
        json!({"a": 1, "b": null})
    );
    assert_eq!(
        ok(&[("options", "{'on': True, off: False, 'list': [1, 'x',],}")])["options"],
        json!({"on": true, "off": false, "list": [1, "x"]})
    );
    assert_eq!(
        ok(&[("options", r#"{"json": [1, 2]}"#)])["options"],
        json!({"json": [1, 2]})
    );
    // Not an object: reported, with the reason when it was meant as one.
    let errors = fails(&[("options", "{'a': undefined}"), ("lower_limit", "3")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'options' must be an object, got '{'a': undefined}' (unquoted word at byte 6)"]
    );
    assert_eq!(
        Value::Object(errors.arguments().clone()),
        json!({"lower_limit": 3, "options": "{'a': undefined}"})
    );
    assert_eq!(
        messages(&fails(&[("options", "a=1")])),
        ["Parameter 'options' must be an object, got 'a=1'"]
    );
}

#[test]
fn nested_arrays() {
    assert_eq!(
        ok(&[("grid", "[[1, 2], [3]]")])["grid"],
        json!([[1, 2], [3]])
    );
    assert_eq!(
        ok(&[("grid", "[['1', 2], []]")])["grid"],
        json!([[1, 2], []])
    );
    // Items that are text are read in turn: a list of comma lists.
    assert_eq!(
        ok(&[("grid", "['1,2', '3']")])["grid"],
        json!([[1, 2], [3]])
    );
    // One inner list alone.
    assert_eq!(ok(&[("grid", "1, 2")])["grid"], json!([[1, 2]]));
}

#[test]
fn arrays_of_objects() {
    assert_eq!(
        ok(&[(
            "people",
            "[{'name': 'Sam', 'age': '30'}, {\"name\": \"Alice\"}]"
        )])["people"],
        json!([{"name": "Sam", "age": 30}, {"name": "Alice"}])
    );
    // A single object is a one-element array.
    assert_eq!(
        ok(&[("people", "{'name': 'Sam', 'age': 30}")])["people"],
        json!([{"name": "Sam", "age": 30}])
    );
    let errors = fails(&[("people", "[{'age': 3}]"), ("ratio", "2.5")]);
    assert_eq!(
        messages(&errors),
        ["Missing required parameter 'people[0].name'"]
    );
    assert_eq!(errors.arguments()["people"], json!("[{'age': 3}]"));
    assert_eq!(errors.arguments()["ratio"], json!(2.5));
}

#[test]
fn enum_violations_are_per_argument() {
    let errors = fails(&[("mode", "medium"), ("level", "2"), ("lower_limit", "5")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'mode' must be one of 'fast', 'slow', got 'medium'"]
    );
    assert_eq!(
        Value::Object(errors.arguments().clone()),
        json!({"lower_limit": 5, "mode": "medium", "level": 2})
    );
    let errors = fails(&[("mode", "fast"), ("level", "7")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'level' must be one of 1, 2, 3, got 7"]
    );
    // The value as written, not its typed form.
    assert_eq!(errors.arguments()["level"], json!("7"));
    assert_eq!(errors.arguments()["mode"], json!("fast"));
}

/// A quoted literal the enum refuses stays exactly as written, quotes and all, like any
/// reported argument (found by the `schema_coerce` fuzz target: the quotes used to go even
/// when the enum refused the text); one that names a member is that member.
#[test]
fn a_quoted_literal_outside_the_enum_stays_as_written() {
    for written in ["\"medium\"", "'medium'", " \"medium\" "] {
        let errors = fails(&[("mode", written), ("lower_limit", "5")]);
        assert_eq!(
            messages(&errors),
            ["Parameter 'mode' must be one of 'fast', 'slow', got 'medium'"],
            "{written}"
        );
        assert_eq!(errors.arguments()["mode"], json!(written), "{written}");
        assert_eq!(errors.arguments()["lower_limit"], json!(5), "{written}");
    }
    assert_eq!(ok(&[("mode", "\"slow\"")]), json!({"mode": "slow"}));
    // A string and integer property with an empty enum (the fuzzer's input, reduced).
    let tool = tool(json!({
        "type": "object",
        "properties": {"path": {"type": ["integer", "string"], "enum": []}}
    }));
    let errors = tool
        .coerce(vec![("path", json!("\"q\""))], KeyMatch::Canonical)
        .unwrap_err();
    assert_eq!(errors.arguments()["path"], json!("\"q\""));
}

/// Text is read as an enum member only where the declared type takes text: a `number`
/// whose enum lists the string `"true"` (a schema at odds with itself, found by the
/// `schema_coerce` fuzz target) does not turn `True` into that string; the text is
/// reported as not a number and stays as written.
#[test]
fn text_becomes_an_enum_member_only_where_the_type_takes_text() {
    let tool = tool(json!({
        "type": "object",
        "properties": {"path": {"type": "number", "enum": [null, "true"]}}
    }));
    let errors = tool
        .coerce(vec![("path", json!("True"))], KeyMatch::Canonical)
        .unwrap_err();
    assert_eq!(errors.arguments()["path"], json!("True"));
    assert!(
        matches!(errors.errors(), [Error::WrongType { path, .. }] if path == "path"),
        "{:?}",
        errors.errors()
    );
}

#[test]
fn unknown_parameters_are_reported_with_a_suggestion_and_kept() {
    let errors = fails(&[("lower_limt", "3"), ("ids", "1, 2")]);
    assert_eq!(
        messages(&errors),
        ["Unknown parameter 'lower_limt', did you mean 'lower_limit'?"]
    );
    assert_eq!(
        Value::Object(errors.arguments().clone()).to_string(),
        r#"{"ids":[1,2],"lower_limt":"3"}"#
    );
}

#[test]
fn a_parameter_given_twice_keeps_the_first_value() {
    let errors = fails(&[("lowerLimit", "1"), ("lower_limit", "2")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'lower_limit' is given twice, as 'lowerLimit' and as 'lower_limit'"]
    );
    assert_eq!(
        Value::Object(errors.arguments().clone()),
        json!({"lower_limit": 1})
    );
}

#[test]
fn integer_edges() {
    for (written, expected) in [("12.0", json!(12)), ("1e3", json!(1000)), ("-0", json!(0))] {
        assert_eq!(ok(&[("lower_limit", written)])["lower_limit"], expected);
    }
    for written in ["12.5", "1,000", "0x10", "1e400", "twelve", ""] {
        let errors = fails(&[("lower_limit", written)]);
        assert_eq!(
            messages(&errors),
            [format!(
                "Parameter 'lower_limit' must be an integer, got '{written}'"
            )],
        );
        assert_eq!(errors.arguments()["lower_limit"], json!(written));
    }
}

#[test]
fn unreadable_lists_are_reported_with_the_reason() {
    let errors = fails(&[("names", "[Sam, Alice]"), ("lower_limit", "1")]);
    assert_eq!(
        messages(&errors),
        ["Parameter 'names' must be an array, got '[Sam, Alice]' (unquoted word at byte 1)"]
    );
    assert!(matches!(
        &errors.errors()[0],
        Error::UnreadableValue { path, expected, .. } if path == "names" && expected == "an array"
    ));
    assert_eq!(errors.arguments()["names"], json!("[Sam, Alice]"));
    assert_eq!(errors.arguments()["lower_limit"], json!(1));
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_stack_overflow() {
    const DEEP: usize = 10_000;
    let closed = format!("{}{}", "[".repeat(DEEP), "]".repeat(DEEP));
    let open = "[".repeat(DEEP);
    let objects = "{'a': ".repeat(DEEP);
    let python = format!("{}{}", "['x', ".repeat(DEEP), "]".repeat(DEEP));
    for (key, written, at) in [
        ("ids", &closed, "ids"),
        ("ids", &open, "ids"),
        ("names", &open, "names"),
        ("grid", &python, "grid"),
        ("options", &objects, "options"),
        // One object text for an array of objects: its one item is unreadable.
        ("people", &objects, "people[0]"),
    ] {
        let errors = fails(&[(key, written.as_str()), ("lower_limit", "4")]);
        let [Error::UnreadableValue { path, reason, .. }] = errors.errors() else {
            panic!("{key}: {:?}", messages(&errors));
        };
        assert_eq!(path, at);
        assert_eq!(reason, "arrays and objects nested deeper than 64 levels");
        assert_eq!(errors.arguments()[key], json!(written), "{key}");
        assert_eq!(errors.arguments()["lower_limit"], json!(4));
    }
    // Within the limit, deep literals are read.
    let within = format!("{}{}", "[".repeat(40), "]".repeat(40));
    let tool = tool(json!({"type": "object", "properties": {"a": {"type": "array"}}}));
    let out = tool
        .coerce(
            [("a", json!(format!("{}'x'{}", &within[..40], &within[40..])))],
            KeyMatch::Exact,
        )
        .unwrap();
    let mut depth = 0;
    let mut value = &out["a"];
    while let Value::Array(items) = value {
        depth += 1;
        value = &items[0];
    }
    assert_eq!((depth, value), (40, &json!("x")));
}

#[test]
fn the_validator_still_runs_on_fully_typed_arguments() {
    let tool = tool(json!({
        "type": "object",
        "properties": {
            "level": {"type": "integer", "minimum": 1},
            "ids": {"type": "array", "items": {"type": "integer"}}
        }
    }));
    let errors = tool
        .coerce(text(&[("level", "0"), ("ids", "1,2")]), KeyMatch::Exact)
        .unwrap_err();
    assert!(matches!(errors.errors(), [Error::SchemaViolation { path, .. }] if path == "level"));
    // Every argument is typed: the walk found nothing.
    let expected: Map<String, Value> = [
        ("level".to_owned(), json!(0)),
        ("ids".to_owned(), json!([1, 2])),
    ]
    .into_iter()
    .collect();
    assert_eq!(errors.into_arguments(), expected);
}

#[test]
fn lists_written_with_cjk_commas_are_lists() {
    assert_eq!(ok(&[("ids", "3、5")]), json!({"ids": [3, 5]}));
    assert_eq!(ok(&[("ids", "3，4，5，")]), json!({"ids": [3, 4, 5]}));
    assert_eq!(
        ok(&[("flags", "true、false")]),
        json!({"flags": [true, false]})
    );
    // Text items never split: their text may hold any comma.
    assert_eq!(
        ok(&[("names", "Sam、Alice")]),
        json!({"names": ["Sam、Alice"]})
    );
}

#[test]
fn none_or_null_for_an_optional_parameter_leaves_it_out() {
    assert_eq!(
        ok(&[
            ("lower_limit", "3"),
            ("ids", " null "),
            ("verbose", "None"),
            ("ratio", "None")
        ]),
        json!({"lower_limit": 3})
    );
    // A default applies as if the key were not written.
    let with_default = tool(json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "default": 5},
            "order": {"type": "string", "default": "asc"},
            "q": {"type": "string"},
            "n": {"type": "integer"}
        },
        "required": ["q", "n"]
    }));
    let coerce = |pairs: &[(&'static str, &str)]| {
        Value::Object(
            with_default
                .coerce(text(pairs), KeyMatch::Canonical)
                .unwrap_or_else(|e| panic!("{e}")),
        )
    };
    assert_eq!(
        coerce(&[("q", "x"), ("n", "1"), ("count", "None")]),
        json!({"count": 5, "order": "asc", "q": "x", "n": 1})
    );
    // An optional string parameter is left out too (BFCL `multiple_26`, TAM: `mission:
    // None` for "no mission"); a required one keeps the text, a value like any other.
    assert_eq!(
        coerce(&[("q", "None"), ("n", "1"), ("order", "None")]),
        json!({"count": 5, "order": "asc", "q": "None", "n": 1})
    );
    // A required parameter keeps what was written (and is reported).
    let errors = with_default
        .coerce(text(&[("q", "x"), ("n", "None")]), KeyMatch::Canonical)
        .unwrap_err();
    assert!(errors.to_string().contains("None"), "{errors}");
    // A nullable parameter reads null.
    let nullable = tool(json!({
        "type": "object",
        "properties": {"limit": {"type": ["integer", "null"]}}
    }));
    assert_eq!(
        nullable
            .coerce(text(&[("limit", "null")]), KeyMatch::Canonical)
            .unwrap(),
        *json!({"limit": null}).as_object().unwrap()
    );
    // Other text is not the literal: `none` for an integer is refused as written.
    assert!(
        search()
            .coerce(text(&[("lower_limit", "none")]), KeyMatch::Canonical)
            .is_err()
    );
}

#[test]
fn a_quoted_enum_member_is_that_member() {
    assert_eq!(ok(&[("mode", "\"fast\"")]), json!({"mode": "fast"}));
    assert_eq!(ok(&[("mode", "'slow'")]), json!({"mode": "slow"}));
    // Not a member once unquoted: refused (reported, the text without its quotes kept).
    let errors = search()
        .coerce(text(&[("mode", "'medium'")]), KeyMatch::Canonical)
        .unwrap_err();
    assert!(errors.to_string().contains("medium"), "{errors}");
}

/// What the e2e model wrote for BFCL's `park_information` (an array of `enum` strings
/// `Elevation`, `Area`, …), in both protocols: the members in its own case.
#[test]
fn an_enum_member_in_another_case_is_that_member() {
    assert_eq!(ok(&[("mode", "FAST")]), json!({"mode": "fast"}));
    assert_eq!(ok(&[("mode", " Slow ")]), json!({"mode": "slow"}));
    assert_eq!(ok(&[("mode", "'Fast'")]), json!({"mode": "fast"}));
    let tool: ToolDefinition = serde_json::from_value(json!({
        "id": "park_information",
        "parameters": {"type": "object", "properties": {
            "information": {"type": "array", "items": {"type": "string",
                "enum": ["Elevation", "Area", "Location"]}},
            "unit": {"type": "string", "enum": ["Metric", "METRIC"]}}},
        "implementation": {"type": "service"}
    }))
    .unwrap();
    let tool = CompiledTool::new(tool).unwrap();
    let args = [("information", json!(["elevation", "AREA"]))];
    assert_eq!(
        Value::Object(tool.coerce(args, KeyMatch::Exact).unwrap()),
        json!({"information": ["Elevation", "Area"]})
    );
    // Two members that differ only in case: no guess, the text is refused as written.
    let errors = tool
        .coerce([("unit", json!("metric"))], KeyMatch::Exact)
        .unwrap_err();
    assert_eq!(errors.arguments()["unit"], json!("metric"));
    assert_eq!(
        Value::Object(
            tool.coerce([("unit", json!("METRIC"))], KeyMatch::Exact)
                .unwrap()
        ),
        json!({"unit": "METRIC"})
    );
    // Not a member in any case: refused, as before.
    assert!(
        tool.coerce([("unit", json!("km"))], KeyMatch::Exact)
            .is_err()
    );
}

/// What the e2e model wrote in ACTION for arrays of enumerated strings once the tool list
/// named their members (`<data_field>Personal Info, Job History</data_field>`,
/// `<dietary_requirements>vegan, gluten-free</dietary_requirements>`): a comma-separated
/// list of members is those members; text that lists anything else stays one value.
#[test]
fn a_comma_list_of_enum_members_is_those_members() {
    let tool: ToolDefinition = serde_json::from_value(json!({
        "id": "find_restaurants",
        "parameters": {"type": "object", "properties": {
            "diet": {"type": "array", "items": {"type": "string",
                "enum": ["vegan", "gluten-free", "Paris, France", "Rome"]}},
            "places": {"type": "array", "items": {"type": "string"}}}},
        "implementation": {"type": "service"}
    }))
    .unwrap();
    let tool = CompiledTool::new(tool).unwrap();
    let coerce = |key: &'static str, text: &str| {
        tool.coerce([(key, json!(text))], KeyMatch::Exact)
            .map(Value::Object)
    };
    for text in [
        "vegan, gluten-free",
        "vegan,gluten-free,",
        "Vegan，Gluten-Free",
        "\"vegan\", 'gluten-free'",
        " vegan 、 gluten-free ",
    ] {
        assert_eq!(
            coerce("diet", text).unwrap(),
            json!({"diet": ["vegan", "gluten-free"]}),
            "{text:?}"
        );
    }
    // A member that holds a comma is that member, not a list.
    assert_eq!(
        coerce("diet", "Paris, France").unwrap(),
        json!({"diet": ["Paris, France"]})
    );
    assert_eq!(
        coerce("diet", "Paris, France, Rome")
            .unwrap_err()
            .arguments()["diet"],
        json!("Paris, France, Rome"),
        "a part (`Paris`) names no member: one value, refused by the enum"
    );
    // One part that names no member: the text stays one value, refused as written.
    let errors = coerce("diet", "vegan, halal").unwrap_err();
    assert_eq!(errors.arguments()["diet"], json!("vegan, halal"));
    // Free strings are never split.
    assert_eq!(
        coerce("places", "vegan, gluten-free").unwrap(),
        json!({"places": ["vegan, gluten-free"]})
    );
}

/// What the e2e model wrote in TAM for BFCL's `sport_analysis.compare_ppg`:
/// `seasons:「始」"2018-2019", "2019-2020"「末」`, a list of quoted strings without its
/// brackets.
#[test]
fn quoted_strings_without_brackets_are_a_list() {
    assert_eq!(
        ok(&[("names", "\"2018-2019\", \"2019-2020\"")])["names"],
        json!(["2018-2019", "2019-2020"])
    );
    assert_eq!(
        ok(&[("names", " 'Sam', \"Alice\", ")])["names"],
        json!(["Sam", "Alice"])
    );
    // One quoted string, or text that only starts with a quote, is one item.
    assert_eq!(
        ok(&[("names", "'Paris, France'")])["names"],
        json!(["Paris, France"])
    );
    assert_eq!(
        ok(&[("names", "\"Hi\", she said")])["names"],
        json!(["\"Hi\", she said"])
    );
    // Items of another type are read by their own rules, not as quoted strings.
    assert_eq!(ok(&[("ids", "'3', '4'")])["ids"], json!([3, 4]));
}

/// What the e2e model wrote for BFCL's `lawsuits_search` and `flight.book` in ACTION:
/// every string quoted as in Python (`<company_name>'Apple Inc.'</company_name>`).
#[test]
fn a_string_written_as_one_quoted_literal_is_its_text() {
    let lawsuits = tool(json!({
        "type": "object",
        "properties": {
            "company_name": {"type": "string"},
            "location": {"type": "string"},
            "year": {"type": "integer"},
            "case_type": {"type": "string"},
            "direct": {"type": "boolean"},
        },
        "required": ["company_name", "location", "year"]
    }));
    let coerced = lawsuits
        .coerce(
            text(&[
                ("company_name", "'Apple Inc.'"),
                ("location", " \"California\" "),
                ("year", "'2015'"),
                ("case_type", "'civil'"),
                ("direct", "\"True\""),
            ]),
            KeyMatch::Canonical,
        )
        .unwrap();
    assert_eq!(
        Value::Object(coerced),
        json!({"company_name": "Apple Inc.", "location": "California", "year": 2015,
               "case_type": "civil", "direct": true})
    );
    // Text that only starts or ends with a quote, or holds more than one quoted part, or
    // spans lines, stays as written.
    for kept in [
        "'90s music",
        "rock 'n' roll",
        "'rock 'n' roll'",
        "\"a\" and \"b\"",
        "'first line\nsecond line'",
        "Don't",
    ] {
        let coerced = lawsuits
            .coerce(
                text(&[("company_name", kept), ("location", "x"), ("year", "1")]),
                KeyMatch::Canonical,
            )
            .unwrap();
        assert_eq!(coerced["company_name"], json!(kept));
    }
    // Inside an array of strings the items follow the same rule.
    assert_eq!(
        ok(&[("names", "[\"'Sam'\", \"Alice\"]")])["names"],
        json!(["Sam", "Alice"])
    );
}

/// BFCL's `grocery_store.locate_nearby` declares `"default": "True"` for a boolean: the
/// default is coerced once, when the tool is compiled.
#[test]
fn a_default_written_as_text_takes_its_type() {
    let stores = tool(json!({
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "is_24_hours": {"type": "boolean", "default": "True"},
            "limit": {"type": "integer", "default": "10"},
            "diet": {"type": "array", "items": {"type": "string"}, "default": "None"},
            "note": {"type": "string", "default": "null"},
        },
        "required": ["location"]
    }));
    let coerced = stores
        .coerce(
            text(&[("location", "Los Angeles, CA")]),
            KeyMatch::Canonical,
        )
        .unwrap();
    assert_eq!(
        Value::Object(coerced),
        json!({"location": "Los Angeles, CA", "is_24_hours": true, "limit": 10})
    );
    // `"default": "None"` (BFCL `parallel_130`, for an array) is no default: absent stays
    // absent, never `["None"]`. A nullable type takes it as null.
    let nullable = tool(json!({
        "type": "object",
        "properties": {"limit": {"type": ["integer", "null"], "default": "null"}}
    }));
    assert_eq!(
        Value::Object(
            nullable
                .coerce(Vec::<(&str, Value)>::new(), KeyMatch::Canonical)
                .unwrap()
        ),
        json!({"limit": null})
    );
    // A default no rule converts is used as written, and the validator reports it.
    let odd = tool(json!({
        "type": "object",
        "properties": {"limit": {"type": "integer", "default": "ten"}}
    }));
    let errors = odd
        .coerce(Vec::<(&str, Value)>::new(), KeyMatch::Canonical)
        .unwrap_err();
    assert!(errors.to_string().contains("\"ten\""), "{errors}");
}

/// `text_may_change` is what a streaming reader holds on: for any text given to a string
/// parameter, when coercion reads it as something else (a quoted literal's text, or the
/// parameter left out), every prefix of it was held.
#[test]
fn text_may_change_holds_every_prefix_of_text_coercion_changes() {
    use proptest::prelude::*;
    let tool = tool(json!({
        "type": "object",
        "properties": {"q": {"type": "string"}, "note": {"type": "string"}},
        "required": ["q"]
    }));
    let texts = proptest::collection::vec(
        prop_oneof![
            Just("'"),
            Just("\""),
            Just(" "),
            Just("\n"),
            Just("None"),
            Just("null"),
            Just("No"),
            Just("ne"),
            Just("nu"),
            Just("ll"),
            Just("a"),
            Just("é"),
        ],
        0..6,
    )
    .prop_map(|parts| parts.concat());
    let config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(text in texts)| {
        for key in ["q", "note"] {
            let mut arguments = vec![(key, Value::from(text.as_str()))];
            if key != "q" {
                arguments.push(("q", Value::from("x")));
            }
            let coerced = tool
                .coerce(arguments, KeyMatch::Exact)
                .unwrap_or_else(|e| e.into_arguments());
            if coerced.get(key) != Some(&Value::from(text.as_str())) {
                for (at, _) in text.char_indices().chain([(text.len(), ' ')]) {
                    prop_assert!(
                        tool.text_may_change(key, &text[..at]),
                        "{key}: {:?} of {:?} is not held", &text[..at], text
                    );
                }
            }
        }
    });
    assert!(tool.text_may_change("note", " Non"));
    assert!(!tool.text_may_change("note", "Nonsense"));
    assert!(
        !tool.text_may_change("q", "No"),
        "a required parameter keeps None"
    );
    assert!(tool.text_may_change("q", "'No"));
    // Bounded: past `MAX_QUOTED_LEN` bytes a value is never held, and a quoted line that
    // long stays as written.
    let long = format!("'{}'", "a".repeat(tool_schema::MAX_QUOTED_LEN));
    assert!(tool.text_may_change("note", &long[..tool_schema::MAX_QUOTED_LEN]));
    assert!(!tool.text_may_change("note", &long[..tool_schema::MAX_QUOTED_LEN + 1]));
    let coerced = tool
        .coerce(vec![("q", Value::from(long.as_str()))], KeyMatch::Exact)
        .unwrap();
    assert_eq!(coerced["q"], json!(long));
}
