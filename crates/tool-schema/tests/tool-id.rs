//! Tool ids: parsing, display, serde, and the workflow directory boundary.

use std::path::Path;

use tool_schema::{Error, Implementation, ToolDefinition, ToolId};

#[test]
fn ids_parse_and_display_as_written() {
    for (text, namespace, name) in [
        (
            "workflow:summarize_text",
            Some("workflow"),
            "summarize_text",
        ),
        (
            "system:get_current_time",
            Some("system"),
            "get_current_time",
        ),
        ("kb:Query", Some("kb"), "Query"),
        (
            "my-awesome-plugin:magic_node_tool",
            Some("my-awesome-plugin"),
            "magic_node_tool",
        ),
        ("FileOperator.ApplyEdit", None, "FileOperator.ApplyEdit"),
        ("检索", None, "检索"),
    ] {
        let id: ToolId = text.parse().unwrap();
        assert_eq!(id.namespace(), namespace, "{text}");
        assert_eq!(id.name(), name, "{text}");
        assert_eq!(id.to_string(), text);
        assert_eq!(id.as_str(), text);
    }
    assert_eq!(
        ToolId::new("kb", "Query").unwrap(),
        ToolId::parse("kb:Query").unwrap()
    );
}

#[test]
fn workflow_ids_expose_their_workflow_id_and_file() {
    let id = ToolId::workflow("summarize_text").unwrap();
    assert_eq!(id.as_str(), "workflow:summarize_text");
    assert_eq!(id.workflow_id(), Some("summarize_text"));
    assert_eq!(
        id.workflow_file(Path::new("/srv/workflows")),
        Some(Path::new("/srv/workflows/summarize_text.json").to_owned())
    );
    let kb = ToolId::parse("kb:Query").unwrap();
    assert_eq!(kb.workflow_id(), None);
    assert_eq!(kb.workflow_file(Path::new("/srv/workflows")), None);
}

fn rejection(text: &str) -> &'static str {
    match ToolId::parse(text) {
        Err(Error::InvalidToolId { id, reason }) => {
            assert_eq!(id, text);
            reason
        }
        other => panic!("{text:?} should be rejected, got {other:?}"),
    }
}

#[test]
fn workflow_ids_that_could_leave_the_directory_are_rejected() {
    assert_eq!(
        rejection("workflow:../secrets"),
        "a workflow id cannot contain '..'"
    );
    assert_eq!(
        rejection("workflow:a..b"),
        "a workflow id cannot contain '..'"
    );
    assert_eq!(
        rejection("workflow:skills/greet"),
        "a workflow id cannot contain '/'"
    );
    assert_eq!(
        rejection("workflow:/etc/passwd"),
        "a workflow id cannot contain '/'"
    );
    assert_eq!(
        rejection("workflow:..\\x"),
        "a workflow id cannot contain '..'"
    );
    assert_eq!(
        rejection("workflow:a\\b"),
        "a workflow id cannot contain '\\'"
    );
    assert_eq!(
        rejection("workflow:C:x"),
        "a workflow id cannot contain ':' (a drive or a second namespace)"
    );
    assert_eq!(rejection("workflow:."), "a workflow id cannot be '.'");
    assert_eq!(
        rejection("workflow:"),
        "a workflow id cannot be empty or contain an empty path segment"
    );
    // Other namespaces do not name files, so only the general rules apply.
    assert!(ToolId::parse("files:a/b").is_ok());
}

#[test]
fn malformed_ids_are_rejected_with_a_reason() {
    assert_eq!(rejection(""), "the id is empty");
    assert_eq!(rejection(":name"), "the namespace before ':' is empty");
    assert_eq!(rejection("kb:"), "the name after ':' is empty");
    assert_eq!(
        rejection(" kb:Query"),
        "an id cannot contain whitespace or control characters"
    );
    assert_eq!(
        rejection("my plugin:x"),
        "an id cannot contain whitespace or control characters"
    );
    assert_eq!(
        rejection("bad/ns:x"),
        "a namespace may only contain ASCII letters, digits, '_', '-' and '.'"
    );
    let error = ToolId::parse("workflow:../x").unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid tool id 'workflow:../x': a workflow id cannot contain '..'"
    );
}

#[test]
fn ids_serialize_as_strings_and_are_checked_when_read() {
    let id = ToolId::parse("kb:Query").unwrap();
    assert_eq!(serde_json::to_string(&id).unwrap(), r#""kb:Query""#);
    assert_eq!(serde_json::from_str::<ToolId>(r#""kb:Query""#).unwrap(), id);
    let error = serde_json::from_str::<ToolId>(r#""workflow:../x""#).unwrap_err();
    assert!(error.to_string().contains("cannot contain '..'"), "{error}");
}

#[test]
fn definitions_round_trip_through_serde() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tools.json"),
    )
    .unwrap();
    let tools: Vec<ToolDefinition> = serde_json::from_str(&text).unwrap();
    assert_eq!(tools.len(), 6);
    assert_eq!(tools[0].implementation, Implementation::Service);
    assert_eq!(
        tools[4].implementation,
        Implementation::Workflow {
            workflow_id: "skills/npc_greet_player_skill".into()
        }
    );
    let written = serde_json::to_value(&tools).unwrap();
    assert_eq!(
        written,
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    );
    let node = serde_json::json!({
        "id": "core:TextMerge",
        "implementation": {"type": "node", "nodeType": "core:TextMerge"}
    });
    let definition: ToolDefinition = serde_json::from_value(node).unwrap();
    assert_eq!(definition.description, "");
    assert_eq!(definition.parameters, tool_schema::empty_parameters());
    assert_eq!(
        serde_json::to_value(&definition.implementation).unwrap(),
        serde_json::json!({"type": "node", "nodeType": "core:TextMerge"})
    );
}

#[test]
fn workflow_implementations_are_checked_when_read() {
    let read = |workflow_id: &str| {
        serde_json::from_value::<Implementation>(
            serde_json::json!({"type": "workflow", "workflowId": workflow_id}),
        )
    };
    assert!(read("workflows/my_complex_workflow.json").is_ok());
    let error = read("../outside.json").unwrap_err().to_string();
    assert!(
        error.contains("workflowId '../outside.json': a workflow id cannot contain '..'"),
        "{error}"
    );
    assert!(read("C:\\x.json").is_err());
}
