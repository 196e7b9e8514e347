//! Runs the tool calls a language model writes: a [`Registry`] of service, node and workflow
//! tools, permission [`Scope`]s, a [`Dispatcher`] that validates each call and executes it
//! under a time-out, cancellation and panic guard, the unified [`ToolExecutionResult`], and
//! the observation text fed back to the model.
//! On top sits the [`Agent`] loop: it streams a model's output through the front door's
//! decoder (TAM, ACTION XML or both), starts each block's calls as soon as the block
//! closes, and feeds the observations back until the model answers in plain text.
//!
//! # Example
//!
//! ```
//! use tool_dispatch::engine::ReferenceEngine;
//! use tool_dispatch::{Dispatcher, Registry, Scope, ToolCall, ToolExecutionResult};
//! use tool_schema::{Implementation, ToolDefinition, ToolId};
//! use tokio_util::sync::CancellationToken;
//! use serde_json::json;
//!
//! let mut registry = Registry::new();
//! let definition = ToolDefinition::new(
//!     ToolId::parse("GetPlayerInfo")?,
//!     "Looks up a player.",
//!     json!({"type": "object", "properties": {"player_id": {"type": "string"}}, "required": ["player_id"]}),
//!     Implementation::Service,
//! );
//! registry.register_fn(definition, |args| async move {
//!     ToolExecutionResult::query_success(json!({"name": "Alice", "id": args["player_id"]}), "found")
//! })?;
//! let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
//! let scope = Scope::for_agent(dispatcher.registry(), ["GetPlayerInfo"])?;
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! let wrong = serde_json::from_value(json!({"playerId": "player123"})).unwrap();
//! let outcome = rt.block_on(dispatcher.dispatch(&scope, ToolCall::new("GetPlayerInfo", wrong), &CancellationToken::new()));
//! assert_eq!(
//!     outcome.observation(),
//!     "Observation: Error - Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?"
//! );
//! # Ok::<(), tool_dispatch::Error>(())
//! ```
//!
//! # How a call runs
//!
//! scope → look-up → validation and coercion (tool-schema's [`CompiledTool`], keys matched
//! canonically for TAM and exactly for ACTION XML) → execution on its own tokio task:
//! a service closure or [`Tool`], a node type wrapped in a one-node workflow, or a workflow,
//! both through an [`engine::ExecutionEngine`] → [`ToolExecutionResult`] → observation.
//! Nothing a call does can take the runtime down: refusals, `success: false`, time-outs,
//! panics and cancellation all come back as a failure result with a [`CallStatus`] saying
//! which. A chain (TAM `command1`, `command2`, …) runs in order and, by default, stops at
//! the first failure ([`ChainPolicy`]).
//!
//! # Decisions where the seeds are silent
//!
//! * Public types follow the workspace's API rules
//!   (<https://github.com/tam-rs/tam/blob/main/docs/api-rules.md>): the event, status and
//!   choice enums a runner must handle case by case ([`AgentEvent`], [`CallStatus`],
//!   [`StopReason`], [`ModelItem`], [`Role`]…) are exhaustive, so a new variant is a compile
//!   error in every `match`; error enums and the records and settings that grow
//!   ([`ToolCall`], [`CallOutcome`], [`AgentConfig`], [`DispatchConfig`]…) are
//!   `#[non_exhaustive]`: build those with their constructors or `Default` and field
//!   assignment.
//! * A tool that returns nothing (`()`, `None`, JSON `null`) gives
//!   `{"success":false,"operationType":"unknown","message":"tool returned null"}`; the
//!   `data` field is omitted there and only there.
//! * A workflow tool's result is an `operation` success whose data is the single interface
//!   output's value (or the object of all outputs); a workflow whose output already is a
//!   result object is taken as the result, so a workflow can report `success: false`.
//! * An id outside the scope that the registry lacks too is reported as unknown, with a
//!   suggestion taken from the scope only; one the registry has is reported as out of scope.
//! * Every call the model asks for counts toward `maxToolCalls`, refused ones included; the
//!   loop ends when a call is refused for the limit, not when the limit is merely reached,
//!   so the model can still answer with the last results.
//! * Decoder warnings are repairs that still gave the calls the model meant: they reach
//!   the event callback but are not fed back; errors become observations. A round whose
//!   blocks produced neither a call nor an error (an empty `<ACTION>` block) counts as a
//!   plain answer.
//! * Only the first ACTION block of a reply runs unless
//!   [`AgentConfig::run_extra_action_blocks`] is set; each ignored block gets an
//!   observation saying so. TAM blocks all run, in stream order, one after another.
//! * The loop ends on [`TOOL_EXECUTION_FAILED`] when it is the whole prose of a reply
//!   (blank around it allowed), as the result seed's engine compares it.
//! * A node tool whose definition declares no output schema returns every output slot the
//!   node produced (single-node wrapping maps all output slots;
//!   [`engine::WorkflowExecutionPayload::pass_through_outputs`]), so the seed plugin's
//!   `magic_node_tool` returns its node's `result` instead of the null result.
//! * A plugin directory ([`Registry::register_plugin_dir`]) registers all its tools or
//!   none. `plugin.yaml` names no function for a `service` tool, so the caller supplies
//!   one per tool id in [`PluginServices`]; a missing one is [`Error::MissingService`].
//! * `availableTools.initial` and `dynamicTools.toolIds` entries are ids or display names
//!   ([`Registry::resolve`]): an id wins over a display name; a display name several tools
//!   share is refused with [`Error::AmbiguousTool`] naming them all.
//! * An LLM node's `parameters` are kept as [`ModelParameters`]: the common sampling
//!   settings typed (snake_case or camelCase keys), the whole map in `raw`; a known key of
//!   the wrong type makes the node configuration invalid rather than being dropped.
//!   `ModelOptions::from(&parameters)` makes them request options (temperature, max
//!   tokens, stop, seed; the rest is not sent — see that impl).
//! * [`Agent::system_prompt`] renders tool-schema's complete system prompt for the scope;
//!   the caller puts it first in the conversation, and the loop then adds no second tool
//!   list to the first prompt.
//! * A cut stream: whatever block the decoder hands over while finishing a cut
//!   stream is reported as [`AgentEvent::BlockClosed`] with `executed: false` and never
//!   runs, even where the decoder would have repaired it. A reply cut at the token limit
//!   inside a block gets an observation saying so and the loop goes on; one cut in prose
//!   ends the run with [`StopReason::Truncated`]; a transport error ends it with
//!   [`Error::Model`] after the calls of blocks closed before it have run.
//! * Observations go back as a `user` message by default
//!   ([`AgentConfig::observation_role`]): the text protocols' calls have no native call id,
//!   which `tool` messages need on most servers.
//! * `<think>` at the start of a reply is split out by [`ThinkSplitter`]; a `<think>`
//!   section that begins a later prose line is reasoning too (the decoder's; both follow
//!   the `reasoning_tags` of [`AgentConfig::decoder`]): never decoded into calls. Reasoning is left out of the assistant message added to the
//!   conversation.
//! * Native tool calls are never run; one observation per round names them and tells the
//!   model to write the protocol's block.
//! * The agent decodes through the front door, [`tam::Decoder`]; [`ProtocolChoice`] is
//!   [`tam::ProtocolChoice`] ("TAM, ACTION or both") and [`Protocol`] is [`tam::Protocol`].
//! * Decoded calls become [`ToolCall`]s through [`ToolCall::from_tam`] /
//!   [`ToolCall::from_action`] (public, for the proxy too), with a stable id
//!   `tam-S-I` / `action-S-I` (block start offset, call index in the block): the same
//!   whatever the split of the stream. ACTION calls keep each parameter's source text, and
//!   [`Dispatcher::dispatch`] coerces with
//!   [`CompiledTool::coerce_with_source`](tool_schema::CompiledTool::coerce_with_source):
//!   a parameter declared a string whose XML reading gave an object or an array takes the
//!   element's raw text.
//! * The agent's events carry the decoder's own events ([`AgentEvent::Decoded`]: prose,
//!   a block's start, diagnostics outside blocks, argument events for UIs with
//!   the `param_events` of [`AgentConfig::decoder`], default on); the [`AgentEvent::BlockClosed`]
//!   stays authoritative: only its calls run.
//!
//! # Limits
//!
//! | limit | default |
//! |---|---|
//! | [`DispatchConfig::timeout`] per call | 30 s |
//! | [`AgentConfig::max_tool_calls`] per run (`maxToolCalls`) | 10 |
//! | [`AgentConfig::max_rounds`] per run | 20 |
//!
//! A time-out fires only when the runtime gets to poll its timer. An async tool fn that
//! blocks its thread (a sync `std::fs` read, a long loop) inside
//! [`Registry::register_fn`] holds that thread: on a current-thread runtime its time-out
//! cannot fire before it returns, and on a multi-thread runtime it fires only if another
//! worker is free. Register such a function with [`Registry::register_blocking_fn`]: it
//! runs on tokio's blocking pool and its time-out fires on any runtime.
//!
//! The decoders' own limits (block size, calls per block, XML depth and nodes) are the
//! `tam` and `action` settings of [`AgentConfig::decoder`].
//!
//! # Crate features
//!
//! * `runtime` (default): everything that runs tools — the [`Registry`], the
//!   [`Dispatcher`], scopes, results, the [`Agent`] and its model side. Without it the crate
//!   is the part a front end that runs no tool shares with the agent: [`ToolCall`] and its
//!   conversions from the decoders' calls, the prompt and grammar for a
//!   [`ProtocolChoice`] ([`system_prompt_for`], [`grammar_options_for`],
//!   [`taught_protocol`]) and the observation text of decoder diagnostics
//!   ([`diagnostic_observation`], [`OBSERVATION_PREFIX`]); `tam-proxy` depends on it so,
//!   and reads and teaches exactly as the agent does. Its tests and examples need
//!   `runtime`.
//! * `mcp`: the [`mcp`] module, tools of MCP servers started as child processes
//!   (official `rmcp` SDK).
//! * `openai` — only for this crate's `openai_model` example and test (the agent against
//!   tam-model's OpenAI-compatible client); the client itself is `tam_model::openai`.
//!
//! The crate needs a tokio runtime with the `time` driver enabled (time-outs).
//!
//! # Models
//!
//! A [`LanguageModel`] streams [`ModelItem`]s for a [`ModelRequest`] (messages and
//! [`ModelOptions`]): text, reasoning, native tool-call chunks and a [`FinishReason`]. The
//! agent decodes only the text; reasoning (also `<think>…</think>` at the start of the text,
//! split out by [`ThinkSplitter`]) becomes [`AgentEvent::Reasoning`]; native tool-call
//! chunks become [`AgentEvent::NativeToolCall`] and an observation telling the model they
//! are not run. A stream cut by `finish_reason: "length"` or a transport error
//! ([`AgentEvent::StreamCut`]) ends the decoder with `finish_cut`: no call runs from the
//! block open at the cut, whatever the decoder made of it, and the model is told why.
//! The model types are tam-model's, re-exported; its `openai` module is a [`LanguageModel`]
//! for any OpenAI-compatible server.
//!
//! [`CompiledTool`]: tool_schema::CompiledTool
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
// docs.rs (nightly, `--cfg docsrs`) marks items behind a feature; stable builds ignore it.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Always compiled: what a front end that runs no tool shares with the agent (the proxy).
mod call;
mod observation;
mod prompt;

pub use call::ToolCall;
pub use observation::{OBSERVATION_PREFIX, diagnostic_observation};
pub use prompt::{grammar_options_for, system_prompt_for, taught_protocol};
/// Which protocol a block is written in, and which protocol(s) the agent decodes (the
/// front door's types, re-exported under their own names).
pub use tam::{Protocol, ProtocolChoice};

// The runtime (default feature `runtime`).
#[cfg(feature = "runtime")]
mod agent;
#[cfg(feature = "runtime")]
mod dispatch;
#[cfg(feature = "runtime")]
pub mod engine;
#[cfg(feature = "runtime")]
mod error;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "runtime")]
mod registry;
#[cfg(feature = "runtime")]
mod result;
#[cfg(feature = "runtime")]
mod scope;

#[cfg(feature = "runtime")]
pub use agent::{
    Agent, AgentConfig, AgentEvent, AgentOutcome, DEFAULT_MAX_ROUNDS, FailurePolicy, StopReason,
    StreamCut, StrictForm, TOOL_EXECUTION_FAILED,
};
#[cfg(feature = "runtime")]
pub use dispatch::{
    CallOutcome, CallStatus, ChainPolicy, DEFAULT_TIMEOUT, DispatchConfig, Dispatcher,
};
#[cfg(feature = "runtime")]
pub use error::Error;
#[cfg(feature = "runtime")]
pub use registry::{PluginServices, Registry, Tool, ToolContext};
#[cfg(feature = "runtime")]
pub use result::{IntoToolResult, NULL_RESULT_MESSAGE, ToolExecutionResult, operation_type};
#[cfg(feature = "runtime")]
pub use scope::{
    AvailableTools, DEFAULT_MAX_TOOL_CALLS, DynamicTools, LlmNodeConfig, ModelParameters, Scope,
};
/// The model side, re-exported from tam-model: what the [`Agent`] streams from.
#[cfg(feature = "runtime")]
pub use tam_model::{
    BoxError, Constraint, ContentPiece, FinishReason, LanguageModel, Message, ModelItem,
    ModelOptions, ModelRequest, Role, ThinkSplitter, ToolCallChunk,
};

/// Re-exported so callers can cancel calls and runs without naming tokio-util.
#[cfg(feature = "runtime")]
pub use tokio_util::sync::CancellationToken;

/// This crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
