//! Running calls: scope → look-up → validation and coercion → execution under a time-out,
//! cancellation and panic guard → one [`ToolExecutionResult`] per call.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;

use crate::engine::{
    ExecutionEngine, InterfaceOutputs, WorkflowExecutionPayload, collapse_outputs,
};
use crate::registry::{Entry, Runner, ToolContext};
use crate::result::operation_type;
use crate::{Error, Registry, Scope, ToolCall, ToolExecutionResult};

/// Default of [`DispatchConfig::timeout`]: 30 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What happens to the rest of a chain after a call returns `success: false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChainPolicy {
    /// Later calls are skipped (never run) and reported as skipped. The default, as in the
    /// result seed: a failure stops the workflow.
    #[default]
    StopAtFirstFailure,
    /// Every call runs whatever the earlier ones returned.
    RunAll,
}

/// Limits and policies of a [`Dispatcher`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatchConfig {
    /// Longest one call may run before it is aborted and fails. Default: 30 s
    /// ([`DEFAULT_TIMEOUT`]); `None`: no limit.
    pub timeout: Option<Duration>,
    /// What a failure does to the rest of a chain. Default: stop at the first failure.
    pub chain_policy: ChainPolicy,
}

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            timeout: Some(DEFAULT_TIMEOUT),
            chain_policy: ChainPolicy::default(),
        }
    }
}

/// How a call ended. Every status but [`Completed`](Self::Completed) comes with a failure
/// result made by the dispatcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallStatus {
    /// The tool ran and returned (its result may still say `success: false`).
    Completed,
    /// Refused before running: the tool is outside the caller's scope.
    OutOfScope,
    /// Refused before running: no such tool.
    UnknownTool {
        /// The most similar id the caller may use.
        suggestion: Option<String>,
    },
    /// Refused before running: the arguments do not fit the tool's schema.
    InvalidParameters,
    /// Refused before running: the LLM node's `maxToolCalls` was used up.
    LimitReached {
        /// The limit.
        max: usize,
    },
    /// Not run because an earlier call of the chain failed.
    Skipped,
    /// Aborted after running longer than the time-out.
    TimedOut(Duration),
    /// The tool panicked; the message of the panic.
    Panicked(String),
    /// Aborted (or never started) because the call was cancelled.
    Cancelled,
}

impl CallStatus {
    /// Whether the call was refused before its tool could start: out of scope, unknown,
    /// invalid parameters, over the limit, or skipped.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::OutOfScope
                | Self::UnknownTool { .. }
                | Self::InvalidParameters
                | Self::LimitReached { .. }
                | Self::Skipped
        )
    }
}

/// The end of one call: its status, the unified result and the time it took.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallOutcome {
    /// The tool id as the call wrote it.
    pub tool: String,
    /// How the call ended.
    pub status: CallStatus,
    /// The result handed back to the caller; `success: false` for every status but a
    /// successful [`CallStatus::Completed`].
    pub result: ToolExecutionResult,
    /// Wall time from the start of dispatch to the result.
    pub elapsed: Duration,
}

impl CallOutcome {
    fn refused(tool: &str, status: CallStatus, message: impl Into<String>) -> Self {
        Self {
            tool: tool.to_owned(),
            status,
            result: ToolExecutionResult::failure(operation_type::UNKNOWN, message),
            elapsed: Duration::ZERO,
        }
    }

    /// Whether the result says `success: true`.
    pub fn is_success(&self) -> bool {
        self.result.success
    }
}

/// Calls remaining for one LLM node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallBudget {
    pub(crate) max: usize,
    pub(crate) used: usize,
}

/// What a chain reports while it runs.
pub(crate) enum ChainEvent<'a> {
    Started(&'a ToolCall),
    Finished(&'a CallOutcome),
}

/// Runs tool calls: the one entry point for every caller (agent loop, UI, scripts).
///
/// Cheap to clone: clones share the registry and the engine.
///
/// ```
/// use tool_dispatch::{Dispatcher, Registry, Scope, ToolCall, ToolExecutionResult};
/// use tool_dispatch::engine::ReferenceEngine;
/// use tool_schema::{Implementation, ToolDefinition, ToolId};
/// use tokio_util::sync::CancellationToken;
/// use serde_json::{json, Map};
///
/// let mut registry = Registry::new();
/// let weather = ToolDefinition::new(
///     ToolId::parse("ReadWorldStateTool")?,
///     "Reads a value from the shared world state.",
///     json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
///     Implementation::Service,
/// );
/// registry.register_fn(weather, |_args| async { ToolExecutionResult::query_success(json!("sunny"), "read") })?;
/// let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
///
/// let mut args = Map::new();
/// args.insert("path".into(), json!("environment.weather.current_conditions"));
/// let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
/// let outcome = rt.block_on(dispatcher.dispatch(
///     &Scope::unrestricted(),
///     ToolCall::new("ReadWorldStateTool", args),
///     &CancellationToken::new(),
/// ));
/// assert_eq!(
///     outcome.observation(),
///     "Observation: Tool ReadWorldStateTool executed successfully. Result: sunny"
/// );
/// # Ok::<(), tool_dispatch::Error>(())
/// ```
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    engine: Arc<dyn ExecutionEngine>,
    config: DispatchConfig,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("registry", &self.inner.registry)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher with the default configuration.
    pub fn new(registry: Registry, engine: impl ExecutionEngine + 'static) -> Self {
        Self::with_config(registry, engine, DispatchConfig::default())
    }

    /// A dispatcher with `config`.
    pub fn with_config(
        registry: Registry,
        engine: impl ExecutionEngine + 'static,
        config: DispatchConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry,
                engine: Arc::new(engine),
                config,
            }),
        }
    }

    /// The tools this dispatcher runs.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The configuration.
    pub fn config(&self) -> &DispatchConfig {
        &self.inner.config
    }

    /// Runs one call. Never fails: refusals, tool failures, time-outs, panics and
    /// cancellation all come back as a [`CallOutcome`] with a failure result.
    pub async fn dispatch(
        &self,
        scope: &Scope,
        call: ToolCall,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let started = Instant::now();
        let ToolCall {
            tool,
            args,
            key_match,
            sources,
            ..
        } = call;
        let admitted = self.admit(scope, &tool).and_then(|entry| {
            let args = entry
                .tool
                .coerce_with_source(args, key_match, |key| sources.get(key).map(String::as_str))
                .map_err(|errors| (CallStatus::InvalidParameters, errors.to_string()))?;
            Ok((entry, args))
        });
        let (entry, args) = match admitted {
            Ok(admitted) => admitted,
            Err((status, message)) => return CallOutcome::refused(&tool, status, message),
        };
        let (status, result) = if cancel.is_cancelled() {
            (CallStatus::Cancelled, cancelled_result())
        } else {
            self.execute(entry, args, cancel).await
        };
        CallOutcome {
            tool,
            status,
            result,
            elapsed: started.elapsed(),
        }
    }

    /// Runs `calls` in order under the configured [`ChainPolicy`].
    pub async fn dispatch_chain(
        &self,
        scope: &Scope,
        calls: impl IntoIterator<Item = ToolCall>,
        cancel: &CancellationToken,
    ) -> Vec<CallOutcome> {
        self.run_chain(scope, calls, cancel, None, &mut |_| {})
            .await
    }

    /// The chain runner shared with the agent loop, which adds a call budget and events.
    pub(crate) async fn run_chain(
        &self,
        scope: &Scope,
        calls: impl IntoIterator<Item = ToolCall>,
        cancel: &CancellationToken,
        mut budget: Option<&mut CallBudget>,
        on_event: &mut (dyn FnMut(ChainEvent<'_>) + Send),
    ) -> Vec<CallOutcome> {
        let mut outcomes = Vec::new();
        let mut stopped = false;
        for call in calls {
            let outcome = if stopped {
                let message = format!(
                    "{} was not executed because an earlier call in the same block failed",
                    call.tool
                );
                CallOutcome::refused(&call.tool, CallStatus::Skipped, message)
            } else if let Some(b) = budget.as_deref_mut().filter(|b| b.used >= b.max) {
                let message = format!(
                    "Tool call limit reached (maxToolCalls = {}); {} was not executed",
                    b.max, call.tool
                );
                CallOutcome::refused(&call.tool, CallStatus::LimitReached { max: b.max }, message)
            } else {
                if let Some(b) = budget.as_deref_mut() {
                    b.used += 1;
                }
                on_event(ChainEvent::Started(&call));
                self.dispatch(scope, call, cancel).await
            };
            on_event(ChainEvent::Finished(&outcome));
            stopped |= !outcome.is_success()
                && self.inner.config.chain_policy == ChainPolicy::StopAtFirstFailure;
            outcomes.push(outcome);
        }
        outcomes
    }

    /// Scope, then look-up. An id outside the scope is reported as unknown when the
    /// registry lacks it too, with a suggestion taken from the scope only.
    fn admit(&self, scope: &Scope, tool: &str) -> Result<&Entry, (CallStatus, String)> {
        let registry = &self.inner.registry;
        if scope.allows(tool) {
            if let Ok(entry) = registry.entry(tool) {
                return Ok(entry);
            }
        } else if registry.contains(tool) {
            let message = format!("Tool '{tool}' is not in the list of tools available here");
            return Err((CallStatus::OutOfScope, message));
        }
        let allowed = registry
            .ids()
            .map(|id| id.as_str())
            .filter(|id| scope.allows(id));
        let suggestion = tool_schema::suggest(tool, allowed).map(str::to_owned);
        let message = Error::UnknownTool {
            id: tool.to_owned(),
            suggestion: suggestion.clone(),
        }
        .to_string();
        Err((CallStatus::UnknownTool { suggestion }, message))
    }

    async fn execute(
        &self,
        entry: &Entry,
        args: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> (CallStatus, ToolExecutionResult) {
        let tool_id = entry.tool.definition().id.clone();
        let call_token = cancel.child_token();
        let work: BoxFuture<'static, ToolExecutionResult> = match &entry.runner {
            Runner::Service(tool) => {
                let tool = Arc::clone(tool);
                let ctx = ToolContext {
                    tool_id,
                    cancel: call_token.clone(),
                };
                // The call itself happens on the task, so a panic before the first await is
                // caught like any other.
                async move { tool.call(args, ctx).await }.boxed()
            }
            Runner::Node {
                node_type,
                output_slots,
            } => {
                let payload = WorkflowExecutionPayload::single_node(
                    node_type,
                    args,
                    output_slots.iter().cloned(),
                );
                self.run_workflow(tool_id, payload)
            }
            Runner::Workflow(template) => {
                let payload = WorkflowExecutionPayload::clone(template).with_inputs(args);
                self.run_workflow(tool_id, payload)
            }
        };
        guard(work, self.inner.config.timeout, cancel, call_token).await
    }

    fn run_workflow(
        &self,
        tool_id: tool_schema::ToolId,
        payload: WorkflowExecutionPayload,
    ) -> BoxFuture<'static, ToolExecutionResult> {
        let engine = Arc::clone(&self.inner.engine);
        async move { workflow_result(tool_id.as_str(), engine.run(payload).await) }.boxed()
    }
}

/// A workflow's outputs as a tool result: the collapsed value as data of an `operation`
/// success; nothing gives the null result; a value that already is a result object (a
/// boolean `success` and an `operationType`) is taken as the result itself, so a workflow
/// can report failure; an engine error is a failure with its message.
fn workflow_result(tool: &str, outputs: Result<InterfaceOutputs, Error>) -> ToolExecutionResult {
    let value = match outputs {
        Ok(outputs) => collapse_outputs(outputs),
        Err(e) => return ToolExecutionResult::failure(operation_type::OPERATION, e.to_string()),
    };
    let is_result = value.get("success").is_some_and(Value::is_boolean)
        && value.get("operationType").is_some_and(Value::is_string);
    if value.is_null() {
        ToolExecutionResult::null_result()
    } else if is_result {
        ToolExecutionResult::from_value(value).unwrap_or_else(|e| {
            ToolExecutionResult::failure(operation_type::OPERATION, e.to_string())
        })
    } else {
        ToolExecutionResult::success(
            operation_type::OPERATION,
            value,
            format!("{tool} completed"),
        )
    }
}

fn cancelled_result() -> ToolExecutionResult {
    ToolExecutionResult::failure(operation_type::UNKNOWN, "cancelled")
}

/// Runs `work` on its own task and waits for the first of: its result, the time-out, the
/// caller's cancellation. The loser is aborted; a panic becomes a failure.
async fn guard(
    work: BoxFuture<'static, ToolExecutionResult>,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
    call_token: CancellationToken,
) -> (CallStatus, ToolExecutionResult) {
    let mut task = tokio::spawn(work);
    let deadline = async move {
        match timeout {
            Some(limit) => {
                tokio::time::sleep(limit).await;
                limit
            }
            None => std::future::pending().await,
        }
    };
    let (status, result) = tokio::select! {
        biased;
        joined = &mut task => return joined_result(joined),
        () = cancel.cancelled() => (CallStatus::Cancelled, cancelled_result()),
        limit = deadline => (
            CallStatus::TimedOut(limit),
            ToolExecutionResult::failure(operation_type::UNKNOWN, format!("timed out after {limit:?}")),
        ),
    };
    call_token.cancel();
    task.abort();
    (status, result)
}

fn joined_result(
    joined: Result<ToolExecutionResult, JoinError>,
) -> (CallStatus, ToolExecutionResult) {
    match joined {
        Ok(result) => (CallStatus::Completed, result),
        Err(e) if e.is_panic() => {
            let message = panic_message(e.into_panic());
            let result = ToolExecutionResult::failure(
                operation_type::UNKNOWN,
                format!("panicked: {message}"),
            );
            (CallStatus::Panicked(message), result)
        }
        // Only an abort cancels the task, and the guard aborts only after it stops waiting.
        Err(_) => (CallStatus::Cancelled, cancelled_result()),
    }
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast_ref::<&str>().map_or_else(
            || "a panic without a message".to_owned(),
            |s| (*s).to_owned(),
        ),
    }
}
