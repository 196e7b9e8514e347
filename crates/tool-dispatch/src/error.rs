//! The crate's error type.

use crate::BoxError;

/// Everything that can go wrong in this crate. Tool failures are not errors: they become
/// failure [`ToolExecutionResult`](crate::ToolExecutionResult)s and observations; these are
/// the errors of setting things up (registries, scopes, workflows) and of the model stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// JSON a tool returned is not a `ToolExecutionResult`.
    #[error("invalid tool result: {0}")]
    InvalidResult(String),
    /// A workflow payload or stored workflow lacks the expected shape.
    #[error("invalid workflow {workflow}: {reason}")]
    InvalidWorkflow {
        /// The workflow id (`<inline>` for a payload built in memory).
        workflow: String,
        /// What is wrong.
        reason: String,
    },
    /// The workflow's edges form a cycle.
    #[error("workflow {workflow} has a cycle through nodes {}", nodes.join(", "))]
    WorkflowCycle {
        /// The workflow id.
        workflow: String,
        /// The nodes that could not be ordered (those on or after a cycle).
        nodes: Vec<String>,
    },
    /// No node function is registered for a node's type.
    #[error(
        "workflow {workflow}: node {node_id} has type {node_type}, which the engine cannot run"
    )]
    UnknownNodeType {
        /// The workflow id.
        workflow: String,
        /// The node.
        node_id: String,
        /// Its type.
        node_type: String,
    },
    /// A node function returned an error.
    #[error("workflow {workflow}: node {node_id} ({node_type}) failed: {message}")]
    NodeFailed {
        /// The workflow id.
        workflow: String,
        /// The node.
        node_id: String,
        /// Its type.
        node_type: String,
        /// The node's error.
        message: String,
    },
    /// A call or scope names a tool the registry lacks. Worded for the model, as the
    /// ACTION seed's observations are.
    #[error(
        "Unknown tool ID '{id}'{}",
        suggestion.as_ref().map(|s| format!(", did you mean '{s}'?")).unwrap_or_default()
    )]
    UnknownTool {
        /// The id as written.
        id: String,
        /// The most similar id available.
        suggestion: Option<String>,
    },
    /// A display name that several registered tools share (`availableTools.initial` may
    /// name a tool by id or by display name).
    #[error("the tool name '{name}' is ambiguous: it is the display name of {}", candidates.join(", "))]
    AmbiguousTool {
        /// The name as written.
        name: String,
        /// The ids of every tool with that display name, in order.
        candidates: Vec<String>,
    },
    /// A plugin `service` tool for which the caller supplied no implementation.
    #[error("plugin {plugin}: no service implementation was supplied for tool '{tool}'")]
    MissingService {
        /// The plugin's name.
        plugin: String,
        /// The tool id.
        tool: String,
    },
    /// A tool id registered twice.
    #[error("tool '{0}' is already registered")]
    DuplicateTool(String),
    /// A definition registered through the wrong method (a node tool as a service, …).
    #[error("tool '{id}' cannot be registered as a {expected} tool: its definition says otherwise")]
    ImplementationMismatch {
        /// The tool.
        id: String,
        /// The implementation the method registers.
        expected: &'static str,
    },
    /// Loading or compiling a definition failed (boxed: the schema crate's error is large).
    #[error(transparent)]
    Schema(Box<tool_schema::Error>),
    /// The language model's stream failed.
    #[error("language model stream failed: {0}")]
    Model(#[source] BoxError),
}

impl From<tool_schema::Error> for Error {
    fn from(e: tool_schema::Error) -> Self {
        Error::Schema(Box::new(e))
    }
}
