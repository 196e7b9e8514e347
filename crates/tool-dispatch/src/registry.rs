//! The registry of runnable tools (the seeds' `ToolManager`): each tool's definition,
//! compiled for validation, beside what runs it — a service function, a node type wrapped
//! in a one-node workflow, or a workflow payload.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tool_schema::{CompiledTool, Implementation, ToolDefinition, ToolId};

use crate::engine::WorkflowExecutionPayload;
use crate::{Error, IntoToolResult, ToolExecutionResult};

/// What a service tool receives besides its arguments.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id the tool was called by.
    pub tool_id: ToolId,
    /// Cancelled when the call is cancelled or times out. The dispatcher also aborts the
    /// call's task then, so watching the token is only needed to clean up promptly.
    pub cancel: CancellationToken,
}

/// A tool implemented in code.
///
/// The future is `'static` because the dispatcher runs it on its own task (so a panic, a
/// time-out or a cancellation ends only that call).
pub trait Tool: Send + Sync {
    /// Runs the tool with validated, coerced arguments.
    fn call(
        &self,
        args: Map<String, Value>,
        ctx: ToolContext,
    ) -> BoxFuture<'static, ToolExecutionResult>;
}

/// A closure `Fn(args) -> impl Future<Output = impl IntoToolResult>` as a [`Tool`].
struct FnTool<F>(F);

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Map<String, Value>) -> Fut + Send + Sync,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolResult,
{
    fn call(
        &self,
        args: Map<String, Value>,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, ToolExecutionResult> {
        (self.0)(args).map(IntoToolResult::into_tool_result).boxed()
    }
}

/// How a registered tool runs.
#[derive(Clone)]
pub(crate) enum Runner {
    Service(Arc<dyn Tool>),
    /// A one-node workflow; `output_slots` are the node's outputs to return.
    Node {
        node_type: String,
        output_slots: Vec<String>,
    },
    /// The workflow's payload without input values.
    Workflow(Arc<WorkflowExecutionPayload>),
}

/// One registered tool.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<CompiledTool>,
    pub(crate) runner: Runner,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.runner {
            Runner::Service(_) => "service",
            Runner::Node { .. } => "node",
            Runner::Workflow(_) => "workflow",
        };
        f.debug_struct("Entry")
            .field("id", &self.tool.definition().id)
            .field("runs", &kind)
            .finish()
    }
}

/// The functions that implement a plugin's `service` tools, by tool id: `plugin.yaml`
/// says only `type: service`, so the host supplies each one
/// ([`Registry::register_plugin_dir`]).
#[derive(Clone, Default)]
pub struct PluginServices {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl fmt::Debug for PluginServices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.tools.keys()).finish()
    }
}

impl PluginServices {
    /// No services.
    pub fn new() -> Self {
        Self::default()
    }

    /// Supplies `tool` for the service tool `tool_id`, replacing an earlier one.
    #[must_use]
    pub fn with(mut self, tool_id: impl Into<String>, tool: impl Tool + 'static) -> Self {
        self.tools.insert(tool_id.into(), Arc::new(tool));
        self
    }

    /// Supplies an async closure for the service tool `tool_id`, as
    /// [`Registry::register_fn`] takes one.
    #[must_use]
    pub fn with_fn<F, Fut>(self, tool_id: impl Into<String>, f: F) -> Self
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoToolResult,
    {
        self.with(tool_id, FnTool(f))
    }

    /// The tool ids supplied, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

/// Every tool a dispatcher can run, by id.
///
/// Registration compiles the definition's parameter schema once; an id can be registered
/// once. Look-up of an unknown id fails with a did-you-mean suggestion.
///
/// ```
/// use tool_dispatch::{Registry, ToolExecutionResult};
/// use tool_schema::{Implementation, ToolDefinition, ToolId};
/// use serde_json::json;
///
/// let mut registry = Registry::new();
/// let definition = ToolDefinition::new(
///     ToolId::parse("system:get_current_time")?,
///     "The current time",
///     json!({"type": "object", "properties": {}}),
///     Implementation::Service,
/// );
/// registry.register_fn(definition, |_args| async {
///     ToolExecutionResult::query_success(json!("12:00"), "now")
/// })?;
/// assert!(registry.contains("system:get_current_time"));
/// let err = registry.definition("system:get_curent_time").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "Unknown tool ID 'system:get_curent_time', did you mean 'system:get_current_time'?"
/// );
/// # Ok::<(), tool_dispatch::Error>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct Registry {
    /// Keyed by the id's text, so a look-up needs no parsing.
    tools: BTreeMap<String, Entry>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a service tool implemented by `tool`.
    ///
    /// # Errors
    /// [`Error::ImplementationMismatch`] unless the definition's implementation is
    /// `service`; [`Error::DuplicateTool`]; [`Error::Schema`] for an invalid schema.
    pub fn register_service(
        &mut self,
        definition: ToolDefinition,
        tool: impl Tool + 'static,
    ) -> Result<(), Error> {
        if !matches!(definition.implementation, Implementation::Service) {
            return Err(mismatch(&definition, "service"));
        }
        self.insert(definition, Runner::Service(Arc::new(tool)))
    }

    /// Registers a service tool implemented by an async closure over the arguments; what the
    /// future yields is converted with [`IntoToolResult`] (so `()` or `None` becomes the
    /// null result).
    ///
    /// # Errors
    /// As [`register_service`](Self::register_service).
    pub fn register_fn<F, Fut>(&mut self, definition: ToolDefinition, f: F) -> Result<(), Error>
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoToolResult,
    {
        self.register_service(definition, FnTool(f))
    }

    /// Registers a service tool implemented by a blocking function (file or database I/O,
    /// a long computation): each call runs on tokio's blocking thread pool
    /// (`spawn_blocking`), so the time-out and cancellation fire on any runtime, a
    /// current-thread one included. A call that times out is reported at once; its thread
    /// runs on until the function returns (a thread cannot be stopped), and its result is
    /// dropped; dropping the runtime waits for that thread (`Runtime::shutdown_background`
    /// does not). A panic in the function becomes a failure result, as for any tool.
    ///
    /// A plain sync closure registered with [`register_fn`](Self::register_fn) instead
    /// runs on the runtime's own threads: while it blocks, no timer of that thread fires,
    /// so on a current-thread runtime its time-out cannot fire before it returns.
    ///
    /// # Errors
    /// As [`register_service`](Self::register_service).
    pub fn register_blocking_fn<F, R>(
        &mut self,
        definition: ToolDefinition,
        f: F,
    ) -> Result<(), Error>
    where
        F: Fn(Map<String, Value>) -> R + Send + Sync + 'static,
        R: IntoToolResult + Send + 'static,
    {
        let f = Arc::new(f);
        self.register_fn(definition, move |args| {
            let f = Arc::clone(&f);
            async move {
                match tokio::task::spawn_blocking(move || f(args)).await {
                    Ok(result) => result.into_tool_result(),
                    // Hand the panic to the dispatcher's guard, which reports it like any
                    // tool's panic.
                    Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                    Err(_) => crate::ToolExecutionResult::failure(
                        "unknown",
                        "the tool's blocking task was cancelled",
                    ),
                }
            }
        })
    }

    /// Registers a node tool: calls run one node of the definition's `nodeType` through
    /// the execution engine (single-node wrapping). The node's outputs returned are the
    /// properties of the definition's output schema, in order.
    ///
    /// # Errors
    /// [`Error::ImplementationMismatch`] unless the implementation is `node`;
    /// [`Error::DuplicateTool`]; [`Error::Schema`].
    pub fn register_node_tool(&mut self, definition: ToolDefinition) -> Result<(), Error> {
        let Implementation::Node { node_type } = &definition.implementation else {
            return Err(mismatch(&definition, "node"));
        };
        let output_slots = definition
            .output_schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let runner = Runner::Node {
            node_type: node_type.clone(),
            output_slots,
        };
        self.insert(definition, runner)
    }

    /// Registers a workflow tool: calls run `workflow` (the stored workflow JSON: nodes,
    /// edges, interface) through the execution engine with the arguments as interface
    /// inputs.
    ///
    /// # Errors
    /// [`Error::ImplementationMismatch`] unless the implementation is `workflow`;
    /// [`Error::InvalidWorkflow`] when the JSON is not a workflow;
    /// [`Error::DuplicateTool`]; [`Error::Schema`].
    pub fn register_workflow(
        &mut self,
        definition: ToolDefinition,
        workflow: &Value,
    ) -> Result<(), Error> {
        let Implementation::Workflow { workflow_id } = &definition.implementation else {
            return Err(mismatch(&definition, "workflow"));
        };
        let payload = WorkflowExecutionPayload::from_workflow_json(workflow_id, workflow)?;
        self.insert(definition, Runner::Workflow(Arc::new(payload)))
    }

    /// Registers the workflow file at `path` as the tool `workflow:<file stem>`, reading
    /// its definition (tool-schema's workflow loader) and its graph from the one text.
    ///
    /// # Errors
    /// [`Error::Schema`] when the file cannot be read or its definition is invalid (a stem
    /// that could leave the directory included); as
    /// [`register_workflow`](Self::register_workflow) otherwise.
    pub fn register_workflow_file(&mut self, path: &Path) -> Result<(), Error> {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let source = path.display().to_string();
        // Parse the id before touching the file system.
        tool_schema::ToolId::workflow(stem)?;
        let text = std::fs::read_to_string(path).map_err(|source| tool_schema::Error::Io {
            path: path.to_owned(),
            source,
        })?;
        // Parsed once: the definition and the graph the engine runs come from one document.
        let workflow: Value =
            serde_json::from_str(&text).map_err(|e| tool_schema::Error::Syntax {
                file: source.clone(),
                message: e.to_string(),
            })?;
        let definition = tool_schema::load::workflow_from_value(&workflow, stem, &source)?;
        self.register_workflow(definition, &workflow)
    }

    /// Registers every tool of the plugin in directory `dir` at once:
    /// `node` tools as [`register_node_tool`](Self::register_node_tool), `workflow` tools
    /// with the workflow file their `workflowId` names inside `dir`, `service` tools with
    /// the implementation `services` supplies under the tool's id. Ids are `插件名:工具名`,
    /// the namespace being the plugin's `name` (the directory's name when absent). Either
    /// every tool is registered or none is. Returns the ids registered, in manifest order.
    ///
    /// # Errors
    /// [`Error::Schema`] for a manifest or workflow file that cannot be read or is invalid,
    /// a tool outside the plugin's namespace, or a `workflowId` leaving `dir` (`..`, a
    /// symbolic link); [`Error::MissingService`] for a service tool `services` lacks;
    /// [`Error::DuplicateTool`]; as [`register_workflow`](Self::register_workflow).
    pub fn register_plugin_dir(
        &mut self,
        dir: &Path,
        services: &PluginServices,
    ) -> Result<Vec<ToolId>, Error> {
        let plugin = tool_schema::load::plugin_dir(dir)?;
        let mut staged = self.clone();
        let mut ids = Vec::with_capacity(plugin.tools.len());
        for definition in &plugin.tools {
            let id = definition.id.clone();
            match &definition.implementation {
                Implementation::Service => {
                    let tool =
                        services
                            .tools
                            .get(id.as_str())
                            .ok_or_else(|| Error::MissingService {
                                plugin: plugin.name.clone(),
                                tool: id.to_string(),
                            })?;
                    staged.insert(definition.clone(), Runner::Service(Arc::clone(tool)))?;
                }
                Implementation::Node { .. } => staged.register_node_tool(definition.clone())?,
                Implementation::Workflow { .. } => {
                    let workflow = plugin.workflow(&id).ok_or_else(|| Error::InvalidWorkflow {
                        workflow: id.to_string(),
                        reason: "the plugin loader returned no workflow document".to_owned(),
                    })?;
                    staged.register_workflow(definition.clone(), workflow)?;
                }
            }
            ids.push(id);
        }
        *self = staged;
        Ok(ids)
    }

    /// The id of the tool `id_or_name` names: a registered id as it is, else the one tool
    /// whose display name it is (the registration seed lets `availableTools.initial` name a
    /// tool by "ID或名称").
    ///
    /// # Errors
    /// [`Error::AmbiguousTool`] naming every candidate when several tools share the display
    /// name; [`Error::UnknownTool`] with a suggestion among ids and display names when none
    /// matches.
    pub fn resolve(&self, id_or_name: &str) -> Result<&ToolId, Error> {
        if let Some(entry) = self.get(id_or_name) {
            return Ok(&entry.tool.definition().id);
        }
        let mut matches = self
            .definitions()
            .filter(|d| d.display_name.as_deref() == Some(id_or_name));
        match (matches.next(), matches.next()) {
            (Some(only), None) => Ok(&only.id),
            (Some(first), Some(second)) => {
                let candidates = [first, second]
                    .into_iter()
                    .chain(matches)
                    .map(|d| d.id.to_string())
                    .collect();
                Err(Error::AmbiguousTool {
                    name: id_or_name.to_owned(),
                    candidates,
                })
            }
            (None, _) => {
                let names = self
                    .definitions()
                    .flat_map(|d| std::iter::once(d.id.as_str()).chain(d.display_name.as_deref()));
                Err(Error::UnknownTool {
                    id: id_or_name.to_owned(),
                    suggestion: tool_schema::suggest(id_or_name, names).map(str::to_owned),
                })
            }
        }
    }

    fn insert(&mut self, definition: ToolDefinition, runner: Runner) -> Result<(), Error> {
        let id = definition.id.as_str().to_owned();
        if self.tools.contains_key(&id) {
            return Err(Error::DuplicateTool(id));
        }
        let tool = Arc::new(CompiledTool::new(definition)?);
        self.tools.insert(id, Entry { tool, runner });
        Ok(())
    }

    /// Whether `id` is registered.
    pub fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// The definition of `id`.
    ///
    /// # Errors
    /// [`Error::UnknownTool`] with the most similar registered id as suggestion.
    pub fn definition(&self, id: &str) -> Result<&ToolDefinition, Error> {
        self.entry(id).map(|e| e.tool.definition())
    }

    /// Every registered definition, ordered by id.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.values().map(|e| e.tool.definition())
    }

    /// Every registered id, in order.
    pub fn ids(&self) -> impl Iterator<Item = &ToolId> {
        self.tools.values().map(|e| &e.tool.definition().id)
    }

    /// The number of registered tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    fn get(&self, id: &str) -> Option<&Entry> {
        self.tools.get(id)
    }

    pub(crate) fn entry(&self, id: &str) -> Result<&Entry, Error> {
        self.get(id).ok_or_else(|| Error::UnknownTool {
            id: id.to_owned(),
            suggestion: tool_schema::suggest(id, self.tools.keys().map(String::as_str))
                .map(str::to_owned),
        })
    }
}

fn mismatch(definition: &ToolDefinition, expected: &'static str) -> Error {
    Error::ImplementationMismatch {
        id: definition.id.to_string(),
        expected,
    }
}
