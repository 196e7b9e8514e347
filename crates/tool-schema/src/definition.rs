//! What a tool is: id, descriptions, parameter schema and implementation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ToolId;
use crate::id::check_workflow_reference;

/// One tool as the model sees it and as a dispatcher runs it.
///
/// Serde reads and writes it in camelCase (`displayName`, `outputSchema`,
/// `implementation: {"type": "node", "nodeType": …}`); optional fields are left out when
/// absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The id the model calls the tool by.
    pub id: ToolId,
    /// A human-friendly name (the workflow's or node's display name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the tool does and when to use it; empty when the source gave none.
    #[serde(default)]
    pub description: String,
    /// A JSON Schema of `"type": "object"` describing the arguments.
    #[serde(default = "empty_parameters")]
    pub parameters: Value,
    /// A JSON Schema of the result, when the source declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// How the tool is run.
    pub implementation: Implementation,
}

impl ToolDefinition {
    /// A definition made in code. `parameters` should be a JSON Schema object; it is checked
    /// when the tool is compiled ([`crate::CompiledTool::new`]).
    pub fn new(
        id: ToolId,
        description: impl Into<String>,
        parameters: Value,
        implementation: Implementation,
    ) -> ToolDefinition {
        ToolDefinition {
            id,
            display_name: None,
            description: description.into(),
            parameters,
            output_schema: None,
            implementation,
        }
    }

    /// Sets the display name.
    #[must_use]
    pub fn with_display_name(mut self, display_name: impl Into<String>) -> ToolDefinition {
        self.display_name = Some(display_name.into());
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn with_output_schema(mut self, output_schema: Value) -> ToolDefinition {
        self.output_schema = Some(output_schema);
        self
    }

    /// Whether the tool is a *skill* in the ACTION XML sense: a workflow execution rather
    /// than a direct function call.
    pub fn is_skill(&self) -> bool {
        matches!(self.implementation, Implementation::Workflow { .. })
    }
}

/// How a tool is run (`plugin.yaml`'s `implementation.type`).
///
/// Reading a `workflow` implementation checks its `workflowId` as the plugin loader does:
/// relative, without `..`, `\` or empty segments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    try_from = "UncheckedImplementation"
)]
pub enum Implementation {
    /// A function the host registers under the tool id.
    Service,
    /// A single node wrapped in a one-node workflow.
    Node {
        /// The node's `fullType` (`my-plugin:MagicNode`).
        node_type: String,
    },
    /// A workflow run by the execution engine.
    Workflow {
        /// The workflow's id: a file stem for `workflow:` tools, or a path relative to the
        /// plugin for plugin tools (`workflows/my_complex_workflow.json`); never absolute
        /// and never containing `..` or `\`.
        workflow_id: String,
    },
}

/// [`Implementation`] as read, before its workflow id is checked.
#[derive(Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum UncheckedImplementation {
    Service,
    Node { node_type: String },
    Workflow { workflow_id: String },
}

impl TryFrom<UncheckedImplementation> for Implementation {
    type Error = String;

    fn try_from(unchecked: UncheckedImplementation) -> Result<Implementation, String> {
        Ok(match unchecked {
            UncheckedImplementation::Service => Implementation::Service,
            UncheckedImplementation::Node { node_type } => Implementation::Node { node_type },
            UncheckedImplementation::Workflow { workflow_id } => {
                check_workflow_reference(&workflow_id, true)
                    .map_err(|reason| format!("workflowId '{workflow_id}': {reason}"))?;
                Implementation::Workflow { workflow_id }
            }
        })
    }
}

/// `{"type": "object", "properties": {}}`: no parameters.
pub fn empty_parameters() -> Value {
    json!({"type": "object", "properties": Map::new()})
}
