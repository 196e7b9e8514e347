//! Running calls: scope → look-up → validation and coercion → execution under a time-out,
//! cancellation and panic guard → one [`ToolExecutionResult`] per call.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tam::Span;
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;
use tool_schema::KeyMatch;

use crate::engine::{
    ExecutionEngine, InterfaceOutputs, WorkflowExecutionPayload, collapse_outputs,
};
use crate::registry::{Entry, Runner, ToolContext};
use crate::result::operation_type;
use crate::{Error, Registry, Scope, ToolExecutionResult};

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

/// One call as a parser produced it, protocol-neutral.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool id as written (trimmed).
    pub tool: String,
    /// The arguments as written: text values from TAM, JSON values from ACTION XML.
    pub args: Map<String, Value>,
    /// How argument keys match parameter names: canonical for TAM, exact for ACTION XML.
    pub key_match: KeyMatch,
    /// A stable id for the call, when it came from a decoded block: `tam-S-I` or
    /// `action-S-I`, `S` the block's start offset in the reply and `I` the call's place in
    /// the block (from 0). The same whatever the split of the stream. `None` for calls
    /// built by hand.
    pub id: Option<String>,
    /// The exact source text of each parameter's content, by key as written (ACTION XML:
    /// [`tam::ActionCall::source`]; first element of a repeated name). A parameter
    /// declared a string whose value was read as an object or array takes this text
    /// ([`tool_schema::CompiledTool::coerce_with_source`]). Empty for TAM.
    pub sources: BTreeMap<String, String>,
}

impl ToolCall {
    /// A call whose keys must match parameter names exactly (ACTION XML, code).
    pub fn new(tool: impl Into<String>, args: Map<String, Value>) -> Self {
        Self {
            tool: tool.into(),
            args,
            key_match: KeyMatch::Exact,
            id: None,
            sources: BTreeMap::new(),
        }
    }

    /// The stable id of call `index` of the block of `protocol` that starts at
    /// `block.start` ([`ToolCall::id`]).
    pub fn call_id(protocol: tam::Protocol, block: Span, index: usize) -> String {
        format!("{}-{}-{index}", protocol.as_str(), block.start)
    }

    /// Call `index` of the TAM block at `block`: text values, keys as written (chain
    /// suffix stripped), matched canonically; with its stable id.
    pub fn from_tam(call: &tam::TamCall, block: Span, index: usize) -> Self {
        let args = call
            .params
            .iter()
            .map(|p| (p.key.to_string(), Value::String(p.value.to_string())))
            .collect();
        Self {
            id: Some(Self::call_id(tam::Protocol::Tam, block, index)),
            ..Self::canonical(call.tool.to_string(), args)
        }
    }

    /// Call `index` of the ACTION block at `block`: JSON values, tag names matched
    /// exactly, each parameter's source text kept; with its stable id.
    pub fn from_action(call: &tam::ActionCall, block: Span, index: usize) -> Self {
        let mut sources = BTreeMap::new();
        for param in &call.params {
            sources
                .entry(param.key.to_string())
                .or_insert_with(|| param.source.to_string());
        }
        Self {
            id: Some(Self::call_id(tam::Protocol::Action, block, index)),
            sources,
            ..Self::new(call.tool.clone(), call.args.clone())
        }
    }

    /// Every call of a closed TAM block, in execution order ([`ToolCall::from_tam`]).
    pub fn from_tam_block(block: &tam::TamBlock) -> Vec<Self> {
        block
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| Self::from_tam(call, block.span, i))
            .collect()
    }

    /// Every call of a closed TAM block, as [`from_tam_block`](Self::from_tam_block), with
    /// one reading that needs the tools' schemas: a call the decoder started because the
    /// model wrote a parameter key again, and whose every parameter is one more item of a
    /// parameter the tool declares an array, is those items, not a call. Its values are
    /// appended, in order, to that parameter of the call before it (whose value becomes a
    /// list of the items as written), as ACTION reads an element written twice. A model
    /// lists an array's items that way (`information:「始」Elevation「末」`, then
    /// `information:「始」Area「末」`); where any value of the repeat is not one item of an
    /// array parameter (`artist:「始」Maroon 5「末」` for a string, `polynomial:「始」[1, 0,
    /// -1]「末」` for a whole array), it stays a call of its own.
    ///
    /// `one_item(tool, key, text)` tells whether `text`, written for `key` of `tool`, is one
    /// item of a parameter the tool declares an array
    /// ([`CompiledTool::is_one_item`](tool_schema::CompiledTool::is_one_item)); a tool it
    /// does not know has none. Calls keep their stable ids ([`call_id`](Self::call_id) of
    /// their place in the block); the block's `implicit_call` warnings are left as the
    /// decoder gave them.
    pub fn from_tam_block_with(
        block: &tam::TamBlock,
        one_item: impl Fn(&str, &str, &str) -> bool,
    ) -> Vec<Self> {
        let mut calls: Vec<Self> = Vec::with_capacity(block.calls.len());
        for (i, call) in block.calls.iter().enumerate() {
            let repeat = i > 0 && {
                let before = &block.calls[i - 1];
                before.span == call.span && before.tool == call.tool
            };
            if repeat
                && let Some(target) = calls.last_mut()
                && target.takes_items_of(call, &one_item)
            {
                for p in &call.params {
                    let item = Value::String(p.value.to_string());
                    let canonical = tool_schema::canonical_key(&p.key);
                    let existing = target
                        .args
                        .iter_mut()
                        .find(|(k, _)| tool_schema::canonical_key(k) == canonical);
                    match existing {
                        Some((_, Value::Array(items))) => items.push(item),
                        Some((_, value)) => *value = Value::Array(vec![value.take(), item]),
                        None => {
                            target.args.insert(p.key.to_string(), item);
                        }
                    }
                }
                continue;
            }
            calls.push(Self::from_tam(call, block.span, i));
        }
        calls
    }

    /// Whether every parameter of `repeat` (a TAM call started by a repeated key) is one
    /// item of an array parameter of this call's tool, and this call's value of it, if
    /// any, is one item too or a list of them already ([`from_tam_block_with`]).
    fn takes_items_of(
        &self,
        repeat: &tam::TamCall,
        one_item: &impl Fn(&str, &str, &str) -> bool,
    ) -> bool {
        !repeat.params.is_empty()
            && repeat.params.iter().all(|p| {
                if !one_item(&self.tool, &p.key, &p.value) {
                    return false;
                }
                let canonical = tool_schema::canonical_key(&p.key);
                self.args
                    .iter()
                    .find(|(k, _)| tool_schema::canonical_key(k) == canonical)
                    .is_none_or(|(k, v)| match v {
                        Value::Array(_) => true,
                        Value::String(text) => one_item(&self.tool, k, text),
                        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => false,
                    })
            })
    }

    /// Every call of a closed ACTION block, in document order ([`ToolCall::from_action`]).
    pub fn from_action_block(block: &tam::ActionBlock) -> Vec<Self> {
        block
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| Self::from_action(call, block.span, i))
            .collect()
    }

    /// A call whose keys match by canonical form (TAM: `filePath` names `file_path`).
    pub fn canonical(tool: impl Into<String>, args: Map<String, Value>) -> Self {
        Self {
            key_match: KeyMatch::Canonical,
            ..Self::new(tool, args)
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
