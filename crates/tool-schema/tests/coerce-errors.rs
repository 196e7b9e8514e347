//! Argument errors: each kind, its message, and several collected in one call.

use serde_json::{Value, json};
use tool_schema::{CompiledTool, Error, Implementation, KeyMatch, ToolDefinition, ToolId};

fn compile(id: &str, parameters: Value) -> Result<CompiledTool, Error> {
    CompiledTool::new(ToolDefinition::new(
        ToolId::parse(id).unwrap(),
        "",
        parameters,
        Implementation::Service,
    ))
}

fn tool(parameters: Value) -> CompiledTool {
    compile("GetPlayerInfo", parameters).unwrap()
}

fn player_tool() -> CompiledTool {
    tool(json!({
        "type": "object",
        "properties": {
            "player_id": {"type": "string"},
            "level": {"type": "integer", "minimum": 1, "maximum": 100},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "verbose": {"type": "boolean"},
            "settings": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "zoom": {"type": "integer"}},
                "required": ["city"]
            },
            "ids": {"type": "array", "items": {"type": "integer"}},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"}
        },
        "required": ["player_id"]
    }))
}

/// The messages of a failing call, one per problem.
fn messages(arguments: Vec<(&str, Value)>, keys: KeyMatch) -> Vec<String> {
    let errors = player_tool().coerce(arguments, keys).unwrap_err();
    assert_eq!(errors.tool().as_str(), "GetPlayerInfo");
    errors.errors().iter().map(ToString::to_string).collect()
}

fn only_message(arguments: Vec<(&str, Value)>) -> String {
    let mut all = messages(arguments, KeyMatch::Canonical);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

fn with_player(mut arguments: Vec<(&'static str, Value)>) -> Vec<(&'static str, Value)> {
    arguments.insert(0, ("player_id", json!("p1")));
    arguments
}

#[test]
fn unknown_parameter_suggests_the_closest_declared_name() {
    // Same canonical key (exact mode only: canonical mode would accept it).
    assert_eq!(
        messages(
            with_player(vec![("Verbose", json!("true"))]),
            KeyMatch::Exact
        ),
        ["Unknown parameter 'Verbose', did you mean 'verbose'?"]
    );
    // A typo.
    assert_eq!(
        only_message(with_player(vec![("levle", json!("3"))])),
        "Unknown parameter 'levle', did you mean 'level'?"
    );
    // Nothing close.
    assert_eq!(
        only_message(with_player(vec![("colour_scheme", json!("dark"))])),
        "Unknown parameter 'colour_scheme'"
    );
    // Nested keys name their path, and so does the suggestion.
    assert_eq!(
        only_message(with_player(vec![(
            "settings",
            json!(r#"{"city": "x", "zom": 2}"#)
        )])),
        "Unknown parameter 'settings.zom', did you mean 'settings.zoom'?"
    );
}

#[test]
fn unknown_parameter_error_carries_the_suggestion() {
    let errors = player_tool()
        .coerce([("playerId", json!("p"))], KeyMatch::Exact)
        .unwrap_err();
    assert!(matches!(
        &errors.errors()[0],
        Error::UnknownParameter { path, suggestion: Some(s) } if path == "playerId" && s == "player_id"
    ));
}

#[test]
fn missing_required_parameter_is_named() {
    assert_eq!(
        only_message(vec![("level", json!("3"))]),
        "Missing required parameter 'player_id'"
    );
    assert_eq!(
        only_message(with_player(vec![("settings", json!({"zoom": 1}))])),
        "Missing required parameter 'settings.city'"
    );
}

#[test]
fn a_parameter_given_twice_is_reported() {
    assert_eq!(
        only_message(with_player(vec![
            ("mode", json!("fast")),
            ("MODE", json!("slow"))
        ])),
        "Parameter 'mode' is given twice, as 'mode' and as 'MODE'"
    );
    // In exact mode, only the same key repeated.
    assert_eq!(
        messages(
            with_player(vec![("mode", json!("fast")), ("mode", json!("slow"))]),
            KeyMatch::Exact
        ),
        ["Parameter 'mode' is given twice, as 'mode' and as 'mode'"]
    );
}

#[test]
fn wrong_types_show_the_expected_type_and_the_value() {
    for (key, value, expected) in [
        (
            "level",
            json!("twelve"),
            "Parameter 'level' must be an integer, got 'twelve'",
        ),
        (
            "level",
            json!("12.5"),
            "Parameter 'level' must be an integer, got '12.5'",
        ),
        (
            "level",
            json!(12.5),
            "Parameter 'level' must be an integer, got 12.5",
        ),
        (
            "level",
            json!(""),
            "Parameter 'level' must be an integer, got ''",
        ),
        (
            "verbose",
            json!("yes"),
            "Parameter 'verbose' must be a boolean, got 'yes'",
        ),
        (
            "settings",
            json!("{not json"),
            "Parameter 'settings' must be an object, got '{not json'",
        ),
        (
            "settings",
            json!("[1]"),
            "Parameter 'settings' must be an object, got '[1]'",
        ),
        (
            "settings",
            json!([1]),
            "Parameter 'settings' must be an object, got an array",
        ),
        (
            "player_id",
            json!({"a": 1}),
            "Parameter 'player_id' must be a string, got an object",
        ),
        (
            "ids",
            json!("x"),
            "Parameter 'ids[0]' must be an integer, got 'x'",
        ),
    ] {
        let mut arguments = vec![(key, value)];
        if key != "player_id" {
            arguments = with_player(arguments);
        }
        assert_eq!(only_message(arguments), expected, "{key}");
    }
}

#[test]
fn long_values_are_cut_in_messages() {
    let long = "x".repeat(200);
    let message = only_message(with_player(vec![("level", json!(long))]));
    assert_eq!(
        message,
        format!(
            "Parameter 'level' must be an integer, got '{}…'",
            "x".repeat(60)
        )
    );
}

#[test]
fn values_outside_the_enum_list_the_allowed_ones() {
    assert_eq!(
        only_message(with_player(vec![("mode", json!("medium"))])),
        "Parameter 'mode' must be one of 'fast', 'slow', got 'medium'"
    );
}

#[test]
fn other_schema_rules_are_checked_by_the_validator() {
    let errors = player_tool()
        .coerce(
            with_player(vec![("level", json!("300")), ("code", json!("abc"))]),
            KeyMatch::Canonical,
        )
        .unwrap_err();
    let paths: Vec<&str> = errors
        .errors()
        .iter()
        .map(|error| match error {
            Error::SchemaViolation { path, .. } => path.as_str(),
            other => panic!("expected SchemaViolation, got {other:?}"),
        })
        .collect();
    assert_eq!(paths, ["level", "code"]);
    let line = errors.to_string();
    assert!(
        line.starts_with("Invalid parameters for GetPlayerInfo: Parameter 'level' is invalid: 300"),
        "{line}"
    );
    assert!(line.contains("; Parameter 'code' is invalid: "), "{line}");
}

#[test]
fn nested_validator_errors_name_the_nested_path() {
    let tool = tool(json!({
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 10}}}}
        }
    }));
    let errors = tool
        .coerce(
            [("files", json!(r#"[{"size": 1}, {"size": "50"}]"#))],
            KeyMatch::Canonical,
        )
        .unwrap_err();
    assert!(
        matches!(&errors.errors()[0], Error::SchemaViolation { path, .. } if path == "files[1].size"),
        "{errors:?}"
    );
}

#[test]
fn every_problem_of_a_call_is_reported_in_order() {
    let all = messages(
        vec![
            ("playerId", json!("p1")),
            ("level", json!("high")),
            ("mode", json!("medium")),
            ("mystery", json!("?")),
        ],
        KeyMatch::Exact,
    );
    assert_eq!(
        all,
        [
            "Unknown parameter 'playerId', did you mean 'player_id'?",
            "Unknown parameter 'mystery'",
            "Parameter 'level' must be an integer, got 'high'",
            "Parameter 'mode' must be one of 'fast', 'slow', got 'medium'",
        ]
    );
}

#[test]
fn the_one_line_rendering_joins_problems() {
    let errors = player_tool()
        .coerce([("level", json!("x"))], KeyMatch::Canonical)
        .unwrap_err();
    assert_eq!(
        errors.to_string(),
        "Invalid parameters for GetPlayerInfo: Missing required parameter 'player_id'; \
         Parameter 'level' must be an integer, got 'x'"
    );
    assert_eq!(errors.into_errors().len(), 2);
}

#[test]
fn schemas_that_cannot_be_compiled_are_rejected() {
    let compile = |parameters: Value| compile("t", parameters).unwrap_err().to_string();
    assert_eq!(
        compile(json!("object")),
        "invalid parameter schema for t: the parameter schema must be a JSON object"
    );
    assert_eq!(
        compile(json!({"type": "string"})),
        "invalid parameter schema for t: the parameter schema must have type 'object', not 'string'"
    );
    let invalid = compile(json!({"type": "object", "properties": {"a": {"type": 5}}}));
    assert!(
        invalid.starts_with("invalid parameter schema for t: "),
        "{invalid}"
    );
    // Remote references are never fetched: without jsonschema's resolver features the
    // schema does not compile.
    let remote = compile(
        json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}}),
    );
    assert!(
        remote.starts_with("invalid parameter schema for t: "),
        "{remote}"
    );
    let file =
        compile(json!({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}));
    assert!(
        file.starts_with("invalid parameter schema for t: "),
        "{file}"
    );
}
