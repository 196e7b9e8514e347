//! What a run reports while it runs, and how it ended.

use serde_json::{Map, Value};
use tam::{Diagnostic, Span};
use tam_model::{FinishReason, ToolCallChunk};

use crate::{CallOutcome, Protocol, ToolCall};

/// Progress of a run, in order, for a UI to print as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A model round begins (numbered from 1).
    RoundStarted {
        /// The round.
        round: usize,
    },
    /// What the decoder reported while the model wrote, as the decoder reported it
    /// ([`tam::Event`], owned): prose ([`tam::Event::Text`], as soon as the decoder
    /// releases it), a block's start ([`tam::Event::BlockStart`]: the model is writing
    /// tool calls — for a UI to show "calling a tool…" while the block streams), a
    /// diagnostic outside any block ([`tam::Event::Diagnostic`]: an unterminated block,
    /// invalid UTF-8, a quoted marker), and the argument events while calls are written
    /// ([`tam::Event::CommandSeen`], [`tam::Event::CallStart`], [`tam::Event::ParamStart`],
    /// [`tam::Event::ParamText`], [`tam::Event::ParamEnd`], [`tam::Event::CallEnd`]; only
    /// with the `param_events` of [`AgentConfig::decoder`](crate::AgentConfig::decoder)). Closed blocks come as
    /// [`AgentEvent::BlockClosed`](crate::AgentEvent::BlockClosed) and reasoning as [`AgentEvent::Reasoning`](crate::AgentEvent::Reasoning), never here.
    Decoded(tam::Event<'static>),
    /// A block closed; unless `executed` is false, its calls are about to run (they may
    /// wait for an earlier block's).
    BlockClosed {
        /// The block's protocol.
        kind: Protocol,
        /// Start marker to end marker.
        span: Span,
        /// The calls, in execution order.
        calls: Vec<ToolCall>,
        /// The decoder's diagnostics about the block.
        diagnostics: Vec<Diagnostic>,
        /// False for an ACTION block after the first when
        /// [`AgentConfig::run_extra_action_blocks`](crate::AgentConfig::run_extra_action_blocks) is off, and for a block that was open
        /// when the stream was cut ([`AgentEvent::StreamCut`](crate::AgentEvent::StreamCut)): its calls do not run.
        executed: bool,
    },
    /// A call starts (dispatch: after the block closed).
    CallStarted {
        /// The tool id as written.
        tool: String,
        /// The arguments as written.
        args: Map<String, Value>,
    },
    /// A call ended (also sent for calls refused or skipped without starting).
    CallFinished(CallOutcome),
    /// An observation line for the next round.
    Observation(String),
    /// A piece of the model's reasoning (a server's `reasoning_content` / `reasoning`, a
    /// `<think>…</think>` section at the start of the text, or one the decoder found
    /// opening a later prose line): shown, never decoded into calls.
    Reasoning(String),
    /// A piece of a native tool call the model made (`delta.tool_calls`). Native calls are
    /// not run: the protocol's blocks are; the model is told so in an observation.
    NativeToolCall(ToolCallChunk),
    /// The model's stream said how it finished.
    ModelFinished(FinishReason),
    /// The model's stream was cut: a block open at the cut yields no call.
    StreamCut(StreamCut),
}

/// Why a model's stream was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamCut {
    /// The reply hit the token limit (`finish_reason: "length"`).
    Length,
    /// The transport failed mid-stream; the run ends with [`Error::Model`](crate::Error::Model).
    Transport(String),
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without calling a tool.
    Answer,
    /// The model answered [`TOOL_EXECUTION_FAILED`](crate::TOOL_EXECUTION_FAILED).
    ToolExecutionFailed,
    /// A call failed under [`FailurePolicy::Stop`](crate::FailurePolicy::Stop).
    ToolFailed,
    /// A call was refused because `maxToolCalls` was used up.
    MaxToolCalls,
    /// [`AgentConfig::max_rounds`](crate::AgentConfig::max_rounds) rounds ran without an answer.
    MaxRounds,
    /// The cancellation token fired.
    Cancelled,
    /// The model's prose answer was cut at its token limit (`finish_reason: "length"`)
    /// outside any block: `answer` is incomplete.
    Truncated,
}

/// The end of a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// Why it ended.
    pub stop: StopReason,
    /// The prose of the last round (the answer, when `stop` is [`StopReason::Answer`](crate::StopReason::Answer)).
    pub answer: String,
    /// Model rounds run.
    pub rounds: usize,
    /// Every call of the run, in order.
    pub calls: Vec<CallOutcome>,
}
