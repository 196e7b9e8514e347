//! The seeds' remaining rows (issue 15), each test named after the seed section it follows.

use std::path::PathBuf;

use serde_json::json;
use tool_schema::load::{workflow_from_path, workflow_from_str};
use tool_schema::{Error, Implementation};

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// ACTION seed §7.1: a skill is a workflow whose `WorkflowDefinition` names its parameters
/// `inputInterface`.
#[test]
fn action_seed_7_1_skill_input_interface() {
    let skill = workflow_from_path(&fixture("skills/skill_greet_player.json")).unwrap();
    assert_eq!(skill.id.as_str(), "workflow:skill_greet_player");
    assert!(skill.is_skill());
    assert_eq!(skill.display_name.as_deref(), Some("Greet player"));
    assert_eq!(
        skill.parameters,
        json!({
            "type": "object",
            "properties": {
                "player_id": {"type": "string", "description": "The ID of the player to greet."},
                "greeting_context": {
                    "type": "string",
                    "description": "Additional context for the greeting.",
                    "enum": ["first_encounter", "quest_reminder"]
                }
            },
            "required": ["player_id"]
        })
    );
    assert_eq!(
        skill.output_schema,
        Some(json!({"type": "object", "properties": {"greeting": {"type": "string"}}}))
    );
    assert_eq!(
        skill.implementation,
        Implementation::Workflow {
            workflow_id: "skill_greet_player".into()
        }
    );
}

#[test]
fn action_seed_7_1_both_interface_spellings_is_an_error() {
    let both = r#"{"interfaceInputs": {}, "inputInterface": {"x": {"dataFlowType": "STRING"}}}"#;
    let Error::InvalidField { field, reason, .. } =
        workflow_from_str(both, "w", "w.json").unwrap_err()
    else {
        panic!("expected a field error");
    };
    assert_eq!(field, "inputInterface");
    assert!(reason.contains("same interface"), "{reason}");
    // Field errors inside name the spelling the file used.
    let bad = r#"{"inputInterface": {"x": {"dataFlowType": "PICTURE"}}}"#;
    let Error::InvalidField { field, .. } = workflow_from_str(bad, "w", "w.json").unwrap_err()
    else {
        panic!("expected a field error");
    };
    assert_eq!(field, "inputInterface.x.dataFlowType");
}
