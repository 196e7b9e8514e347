//! Loaders: workflow JSON, node definitions, plugin.yaml, agent_profile.json.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tool_schema::load::{
    AgentProfile, nodes_from_path, nodes_from_str, plugin_from_path, plugin_from_str,
    workflow_from_dir, workflow_from_path, workflow_from_str, workflow_from_value,
};
use tool_schema::{Error, Implementation, ToolId};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

fn read_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(path)).unwrap()).unwrap()
}

/// The field and reason of an `InvalidField` error, or a panic naming what came instead.
fn invalid_field(error: Error) -> (String, String) {
    match error {
        Error::InvalidField { field, reason, .. } => (field, reason),
        other => panic!("expected InvalidField, got {other:?}"),
    }
}

#[test]
fn summarize_text_gives_the_seed_schema() {
    let tool = workflow_from_path(&fixture("workflows/summarize_text.json")).unwrap();
    // The generated schema of the workflow tool design, plus the `default` a node's
    // `config.default` gives.
    let expected = read_json("workflows/summarize_text.tool.json");
    let generated = json!({
        "name": tool.id,
        "description": tool.description,
        "parameters": tool.parameters,
    });
    assert_eq!(generated, expected);
    // Key order matters to a prompt reader: compare the text too.
    assert_eq!(
        serde_json::to_string(&generated).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    assert_eq!(
        tool.implementation,
        Implementation::Workflow {
            workflow_id: "summarize_text".into()
        }
    );
    assert_eq!(
        tool.output_schema,
        Some(json!({
            "type": "object",
            "properties": {"summary_result": {"type": "string", "description": "生成的摘要文本。"}}
        }))
    );
    assert!(tool.is_skill());
}

#[test]
fn every_data_flow_type_maps_and_suggestions_need_combo_option() {
    let text = std::fs::read_to_string(fixture("workflows/all_types.json")).unwrap();
    let tool = workflow_from_str(&text, "all_types", "all_types.json").unwrap();
    assert_eq!(tool.display_name.as_deref(), Some("All data flow types"));
    assert_eq!(
        tool.parameters,
        json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "i": {"type": "integer", "default": 3},
                "f": {"type": "number"},
                "b": {"type": "boolean"},
                "o": {"type": "object"},
                "a": {"type": "array"},
                "w": {},
                "n": {"type": "integer", "enum": [1, 2, 3]},
                "hint": {"type": "string"}
            },
            "required": ["s"]
        })
    );
    assert_eq!(tool.output_schema, None);
}

#[test]
fn a_parsed_workflow_document_gives_the_same_tool_as_its_text() {
    let text = std::fs::read_to_string(fixture("workflows/all_types.json")).unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    let from_value = workflow_from_value(&document, "all_types", "all_types.json").unwrap();
    let from_text = workflow_from_str(&text, "all_types", "all_types.json").unwrap();
    assert_eq!(from_value.parameters, from_text.parameters);
    assert_eq!(from_value.id, from_text.id);
    assert_eq!(from_value.display_name, from_text.display_name);
    // The id is checked first, whatever the document.
    assert!(matches!(
        workflow_from_value(&document, "../up", "x.json"),
        Err(Error::InvalidToolId { .. })
    ));
    // A document that is not an object names the source.
    let error = workflow_from_value(&json!([1]), "w", "w.json").unwrap_err();
    assert!(error.to_string().contains("w.json"), "{error}");
}

#[test]
fn workflow_without_inputs_has_no_parameters() {
    let tool = workflow_from_str(r#"{"description": "Now."}"#, "now", "now.json").unwrap();
    assert_eq!(tool.parameters, json!({"type": "object", "properties": {}}));
    assert_eq!(tool.id.as_str(), "workflow:now");
}

#[test]
fn unsupported_data_flow_type_names_file_field_and_reason() {
    let error = workflow_from_path(&fixture("workflows/bad_type.json")).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("bad_type.json"), "{message}");
    let (field, reason) = invalid_field(error);
    assert_eq!(field, "interfaceInputs.picture.dataFlowType");
    assert!(reason.contains("'IMAGE_BLOB'"), "{reason}");
}

#[test]
fn workflow_field_errors_name_the_field() {
    let cases = [
        (
            r#"{"description": 3}"#,
            "description",
            "expected a string, found a number",
        ),
        (
            r#"{"interfaceInputs": []}"#,
            "interfaceInputs",
            "expected an object, found an array",
        ),
        (
            r#"{"interfaceInputs": {"x": 1}}"#,
            "interfaceInputs.x",
            "expected an object, found a number",
        ),
        (
            r#"{"interfaceInputs": {"x": {}}}"#,
            "interfaceInputs.x.dataFlowType",
            "missing required field",
        ),
        (
            r#"{"interfaceInputs": {"x": {"dataFlowType": "STRING", "required": "yes"}}}"#,
            "interfaceInputs.x.required",
            "expected true or false, found a string",
        ),
        (
            r#"{"interfaceInputs": {"x": {"dataFlowType": "STRING", "matchCategories": ["ComboOption"],
                "config": {"suggestions": [{"label": "no value"}]}}}}"#,
            "interfaceInputs.x.config.suggestions[0]",
            "a suggestion needs a 'value'",
        ),
        (r#"[1]"#, "(document)", "expected an object, found an array"),
    ];
    for (text, expected_field, expected_reason) in cases {
        let error = workflow_from_str(text, "w", "w.json").unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("w.json: {expected_field}: {expected_reason}"),
            "{text}"
        );
    }
}

#[test]
fn workflow_syntax_error_names_the_file_and_position() {
    let error = workflow_from_str("{\n  \"description\": }", "w", "w.json").unwrap_err();
    assert!(matches!(error, Error::Syntax { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with("w.json: ") && message.contains("line 2"),
        "{message}"
    );
}

#[test]
fn workflow_ids_cannot_leave_the_workflow_directory() {
    for bad in [
        "../secrets",
        "a/b",
        "a\\b",
        "/etc/passwd",
        "",
        "C:x",
        "..",
        ".",
    ] {
        let error = workflow_from_str("{}", bad, "x.json").unwrap_err();
        assert!(
            matches!(error, Error::InvalidToolId { .. }),
            "{bad}: {error:?}"
        );
    }
    let dir = fixture("workflows");
    let tool = workflow_from_dir(&dir, &ToolId::parse("workflow:summarize_text").unwrap()).unwrap();
    assert_eq!(tool.id.as_str(), "workflow:summarize_text");
    let not_workflow = ToolId::parse("kb:summarize_text").unwrap();
    let error = workflow_from_dir(&dir, &not_workflow).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid tool id 'kb:summarize_text': expected a 'workflow:' id"
    );
}

#[test]
fn missing_workflow_file_is_an_io_error_with_the_path() {
    let dir = fixture("workflows");
    let error =
        workflow_from_dir(&dir, &ToolId::workflow("no_such_workflow").unwrap()).unwrap_err();
    match &error {
        Error::Io { path, .. } => assert_eq!(path, &dir.join("no_such_workflow.json")),
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(error.to_string().contains("no_such_workflow.json"));
}

#[test]
fn node_definitions_become_single_node_tools() {
    let tools = nodes_from_path(&fixture("nodes/nodes.json")).unwrap();
    assert_eq!(tools.len(), 2);
    let merge = &tools[0];
    assert_eq!(merge.id.as_str(), "core:TextMerge");
    assert_eq!(merge.display_name.as_deref(), Some("Text merge"));
    assert_eq!(
        merge.implementation,
        Implementation::Node {
            node_type: "core:TextMerge".into()
        }
    );
    assert_eq!(merge.parameters["required"], json!(["first", "second"]));
    assert_eq!(
        merge.parameters["properties"]["separator"]["default"],
        json!("\n")
    );
    assert!(merge.output_schema.is_some());
    assert_eq!(
        tools[1].parameters["properties"]["a"],
        json!({"type": "number"})
    );
    assert!(!merge.is_skill());

    let single = nodes_from_str(r#"{"fullType": "x:Y", "inputs": {}}"#, "single.json").unwrap();
    assert_eq!(single.len(), 1);
}

#[test]
fn node_errors_name_the_field() {
    let (field, reason) = invalid_field(
        nodes_from_str(r#"[{"fullType": "a:B"}, {"inputs": {}}]"#, "n.json").unwrap_err(),
    );
    assert_eq!(
        (field.as_str(), reason.as_str()),
        ("[1].fullType", "missing required field")
    );
    let (field, reason) =
        invalid_field(nodes_from_str(r#"{"fullType": "bad id"}"#, "n.json").unwrap_err());
    assert_eq!(field, "fullType");
    assert!(reason.contains("whitespace"), "{reason}");
    let (field, _) = invalid_field(nodes_from_str("[3]", "n.json").unwrap_err());
    assert_eq!(field, "[0]");
}

#[test]
fn plugin_yaml_tools_of_every_implementation() {
    let tools = plugin_from_path(&fixture("plugins/my-awesome-plugin/plugin.yaml")).unwrap();
    let ids: Vec<&str> = tools.iter().map(|tool| tool.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "my-awesome-plugin:magic_node_tool",
            "my-awesome-plugin:complex_workflow_tool",
            "my-awesome-plugin:clock"
        ]
    );
    let magic = &tools[0];
    assert_eq!(magic.display_name.as_deref(), Some("神奇节点工具"));
    assert_eq!(
        magic.implementation,
        Implementation::Node {
            node_type: "my-awesome-plugin:MagicNode".into()
        }
    );
    // The seed's `defaultValue` is read as JSON Schema's `default`.
    assert_eq!(
        magic.parameters["properties"]["strength"],
        json!({"type": "number", "description": "魔法强度", "default": 0.7})
    );
    assert_eq!(magic.parameters["required"], json!(["strength", "target"]));
    // `parameters:` with only a comment under it is YAML null: no parameters.
    assert_eq!(
        tools[1].parameters,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        tools[1].implementation,
        Implementation::Workflow {
            workflow_id: "workflows/my_complex_workflow.json".into()
        }
    );
    assert_eq!(tools[2].implementation, Implementation::Service);
    assert_eq!(
        tools[2].output_schema,
        Some(json!({"type": "object", "properties": {"time": {"type": "string"}}}))
    );
}

#[test]
fn plugin_yaml_with_a_bad_field_names_the_field() {
    let error = plugin_from_path(&fixture("plugins/broken/plugin.yaml")).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("broken/plugin.yaml:10: tools[1].implementation.type: "),
        "{message}"
    );
    assert!(matches!(error, Error::InvalidField { line: Some(10), .. }));
    let (field, reason) = invalid_field(error);
    assert_eq!(field, "tools[1].implementation.type");
    assert_eq!(
        reason,
        "unknown implementation type 'nod' (expected node, workflow or service)"
    );
}

fn plugin_error(yaml: &str) -> (String, String) {
    invalid_field(plugin_from_str(yaml, "plugin.yaml").unwrap_err())
}

#[test]
fn plugin_yaml_field_errors_carry_the_line() {
    let line = |yaml: &str| match plugin_from_str(yaml, "plugin.yaml").unwrap_err() {
        Error::InvalidField { line, .. } => line,
        other => panic!("expected InvalidField, got {other:?}"),
    };
    let service = "implementation: {type: service}";
    // The field's own line.
    assert_eq!(
        line(&format!(
            "tools:\n  - id: p:t\n    {service}\n  - id: p:t\n    {service}"
        )),
        Some(4)
    );
    assert_eq!(
        line("name: p\ntools:\n  - id: p:t\n    implementation:\n      type: rocket"),
        Some(5)
    );
    // A missing field: where the object that lacks it is.
    assert_eq!(line("\n\ntools:\n  - id: p:t"), Some(4));
    // A root that is not a mapping.
    assert_eq!(line("- a\n- b"), Some(1));
    // JSON formats have no positions.
    let error = workflow_from_str("{\"interfaceInputs\": 3}", "w", "w.json").unwrap_err();
    assert!(
        matches!(error, Error::InvalidField { line: None, .. }),
        "{error:?}"
    );
}

#[test]
fn plugin_yaml_field_errors() {
    let service = "implementation: {type: service}";
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!("tools:\n  - id: p:t\n    descripton: x\n    {service}"),
            "tools[0].descripton",
            "unknown field, did you mean 'description'?",
        ),
        (
            format!("tools:\n  - description: x\n    {service}"),
            "tools[0].id",
            "missing required field",
        ),
        (
            format!("tools:\n  - id: bare_name\n    {service}"),
            "tools[0].id",
            "a plugin tool id needs a namespace: 'plugin:bare_name'",
        ),
        (
            format!("name: mine\ntools:\n  - id: other:t\n    {service}"),
            "tools[0].id",
            "the namespace 'other' differs from the plugin name 'mine'",
        ),
        (
            format!("tools:\n  - id: p:t\n    {service}\n  - id: p:t\n    {service}"),
            "tools[1].id",
            "tool id 'p:t' is already declared by tools[0]",
        ),
        (
            "tools:\n  - id: p:t\n    implementation: {type: node}".to_owned(),
            "tools[0].implementation.nodeType",
            "missing required field",
        ),
        (
            "tools:\n  - id: p:t\n    implementation: {type: workflow, workflowId: ../../etc/passwd}"
                .to_owned(),
            "tools[0].implementation.workflowId",
            "a workflow id cannot contain '..'",
        ),
        (
            "tools:\n  - id: p:t\n    implementation: {type: workflow, workflowId: /abs.json}".to_owned(),
            "tools[0].implementation.workflowId",
            "a workflow id cannot be an absolute path",
        ),
        (
            "tools:\n  - id: p:t\n    implementation: {type: service, nodeType: x}".to_owned(),
            "tools[0].implementation.nodeType",
            "unknown field (known fields: type)",
        ),
        ("tools:\n  - id: p:t".to_owned(), "tools[0].implementation", "missing required field"),
        (
            format!("tools:\n  - id: p:t\n    parameters: [a, b]\n    {service}"),
            "tools[0].parameters",
            "expected an object, found an array",
        ),
        (
            format!("tools:\n  - id: p:t\n    parameters: {{type: string}}\n    {service}"),
            "tools[0].parameters.type",
            "a tool's parameters must be of type 'object', not \"string\"",
        ),
        ("tools: {id: p:t}".to_owned(), "tools", "expected an array, found an object"),
        ("tools:\n  - 3".to_owned(), "tools[0]", "expected an object, found a number"),
    ];
    for (yaml, expected_field, expected_reason) in cases {
        let (field, reason) = plugin_error(&yaml);
        assert_eq!(field, expected_field, "{yaml}");
        assert!(reason.starts_with(expected_reason), "{yaml}\n{reason}");
    }
}

#[test]
fn plugin_parameters_must_be_a_valid_json_schema() {
    let (field, reason) = plugin_error(
        "tools:\n  - id: p:t\n    parameters: {type: object, properties: {n: {type: integr}}}\n    implementation: {type: service}",
    );
    assert_eq!(field, "tools[0].parameters");
    assert!(
        reason.starts_with("not a valid JSON Schema at /properties/n/type: "),
        "{reason}"
    );
}

#[test]
fn plugin_yaml_syntax_error_and_empty_file() {
    let error = plugin_from_str("tools: [\n  - id: x", "plugin.yaml").unwrap_err();
    assert!(matches!(error, Error::Syntax { .. }), "{error:?}");
    assert!(error.to_string().starts_with("plugin.yaml: "));
    assert!(plugin_from_str("", "plugin.yaml").unwrap().is_empty());
    assert!(
        plugin_from_str("name: x\nversion: 2", "plugin.yaml")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn agent_profile_reads_the_inventory_and_keeps_other_fields() {
    let profile = AgentProfile::from_path(&fixture("agent_profile.json")).unwrap();
    let ids: Vec<&str> = profile
        .tool_ids_inventory
        .iter()
        .map(ToolId::as_str)
        .collect();
    assert_eq!(
        ids,
        [
            "system:get_current_time",
            "kb:Query",
            "workflow:summarize_text",
            "workflow:generate_image_from_prompt"
        ]
    );
    assert_eq!(profile.other["name"], json!("City guard"));
    assert_eq!(
        profile.other["initial_private_state"],
        json!({"mood": "calm"})
    );
    assert!(!profile.other.contains_key("tool_ids_inventory"));
    // Serde round trip keeps every field.
    let written = serde_json::to_value(&profile).unwrap();
    assert_eq!(written, read_json("agent_profile.json"));
    let reread: AgentProfile = serde_json::from_value(written).unwrap();
    assert_eq!(reread, profile);
}

#[test]
fn agent_profile_errors_name_the_inventory_entry() {
    let (field, reason) = invalid_field(
        AgentProfile::from_str(
            r#"{"tool_ids_inventory": ["kb:Query", "workflow:../x"]}"#,
            "a.json",
        )
        .unwrap_err(),
    );
    assert_eq!(field, "tool_ids_inventory[1]");
    assert_eq!(
        reason,
        "invalid tool id 'workflow:../x': a workflow id cannot contain '..'"
    );
    let (field, reason) = invalid_field(
        AgentProfile::from_str(r#"{"tool_ids_inventory": [7]}"#, "a.json").unwrap_err(),
    );
    assert_eq!(
        (field.as_str(), reason.as_str()),
        (
            "tool_ids_inventory[0]",
            "expected a tool id string, found a number"
        )
    );
    let empty = AgentProfile::from_str(r#"{"name": "x"}"#, "a.json").unwrap();
    assert!(empty.tool_ids_inventory.is_empty());
}

#[test]
fn unreadable_path_is_an_io_error() {
    let missing = fixture("no/such/plugin.yaml");
    for error in [
        plugin_from_path(&missing).unwrap_err(),
        nodes_from_path(&missing).unwrap_err(),
        AgentProfile::from_path(&missing).unwrap_err(),
    ] {
        assert!(
            matches!(&error, Error::Io { path, .. } if path == &missing),
            "{error:?}"
        );
    }
}
