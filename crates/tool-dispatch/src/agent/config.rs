//! Settings of the agent loop.

use tam_model::{ModelOptions, Role};
use tool_schema::PromptStyle;

use crate::ProtocolChoice;
use crate::scope::DEFAULT_MAX_TOOL_CALLS;

/// What a model answers when a tool reported `success: false` and the work cannot go on
/// (result seed: the workflow engine stops on it).
pub const TOOL_EXECUTION_FAILED: &str = "TOOL_EXECUTION_FAILED";

/// What a failed call does to the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// The failure becomes an observation and the model decides (self-correction, or
    /// answering [`TOOL_EXECUTION_FAILED`](crate::TOOL_EXECUTION_FAILED)). The default.
    #[default]
    Observe,
    /// The first call with `success: false` (refusals included) ends the loop after the
    /// round with [`StopReason::ToolFailed`](crate::StopReason::ToolFailed).
    Stop,
}

/// Limits and choices of an [`Agent`](crate::Agent).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentConfig {
    /// The decoder's settings ([`tam::Config`]):
    ///
    /// * `protocol`, the protocol(s) decoded. Default: [`ProtocolChoice::Action`], as `tam
    ///   serve`'s: on BFCL with a 1.5B model, ACTION calls were right more often than TAM's
    ///   (e2e/README.md); the prompt teaches one protocol, [`ProtocolChoice::Auto`] also
    ///   reads the other.
    /// * `tam`, the TAM decoder's configuration (dialect, limits), and `action`, the
    ///   ACTION decoder's (limits). Default: the protocol crates' defaults.
    /// * `reasoning_tags`: whether `<think>…</think>` sections of a reply's text are
    ///   reasoning (split out, shown as
    ///   [`AgentEvent::Reasoning`](crate::AgentEvent::Reasoning), never decoded): the one at
    ///   the start of the reply by [`ThinkSplitter`](crate::ThinkSplitter), one beginning a
    ///   later prose line by the decoder. Default: `true`.
    /// * `param_events`: whether the argument events
    ///   ([`AgentEvent::Decoded`](crate::AgentEvent::Decoded) with the decoder's
    ///   `CommandSeen`, `CallStart`, `ParamStart`, `ParamText`, `ParamEnd`, `CallEnd`) are
    ///   sent while blocks stream. Default: `true`.
    ///
    /// [`AgentConfig::for_protocol`] sets the protocol with its prompt style.
    pub decoder: tam::Config,
    /// Whether the model's turn ends at its call. Default: `true`: each request
    /// asks the model to stop at the protocol's end marker (a `stop` sequence before the
    /// caller's own), the stream is closed as soon as a block with calls to run has closed,
    /// and nothing the model wrote after that block is shown, kept in the conversation or
    /// run; a reply the server stopped at the marker is read as closed by it. `false` reads
    /// every reply to its end (several blocks per reply: see
    /// [`run_extra_action_blocks`](Self::run_extra_action_blocks)).
    pub end_turn_at_call: bool,
    /// Whether ACTION blocks after the first of a reply run too, when the turn does not end
    /// at the call ([`end_turn_at_call`](Self::end_turn_at_call) `false`). Default: `false`
    /// (only the first runs); each ignored block is reported to the model.
    pub run_extra_action_blocks: bool,
    /// Most calls in one run (`maxToolCalls`). Default: 10.
    pub max_tool_calls: usize,
    /// Most model rounds in one run, so a model that writes only broken blocks stops too.
    /// Default: 20.
    pub max_rounds: usize,
    /// What a failed call does. Default: [`FailurePolicy::Observe`](crate::FailurePolicy::Observe).
    pub failure_policy: FailurePolicy,
    /// How the tool list is rendered into the first prompt. Default: the style of the
    /// protocol ([`PromptStyle::Tam`] for TAM and both, [`PromptStyle::Xml`] for ACTION).
    pub prompt_style: PromptStyle,
    /// The line before the tool list. Default: `Available tools:`.
    pub tool_list_heading: String,
    /// The sampling options of every model request. Default: none set (the server's).
    pub model_options: ModelOptions,
    /// The role of the message carrying a round's observations. Default: [`Role::User`]
    /// (see [`Role::Tool`] for why not `tool`).
    pub observation_role: Role,
    /// Strict calls: the form in which each request carries a grammar of the scope's
    /// tools, so that a server that constrains its own sampling lets the model write only
    /// blocks that decode into calls of those tools ([`StrictForm`]). Default: `None`
    /// (the prompt alone): which form a server takes is the caller's to know (tam-model's
    /// `detect_upstream_kind`). See [`Agent::strict_grammar`](crate::Agent::strict_grammar).
    pub strict: Option<StrictForm>,
}

/// How a request carries the strict-call grammar ([`AgentConfig::strict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StrictForm {
    /// A lazy GBNF grammar ([`Constraint::Gbnf`](tam_model::Constraint::Gbnf)), for
    /// llama.cpp's `llama-server` through a model that sends it on its `/completion`.
    Gbnf,
    /// A structural tag ([`Constraint::StructuralTag`](tam_model::Constraint::StructuralTag)),
    /// the `response_format` of vLLM and SGLang.
    StructuralTag,
}

/// Default of [`AgentConfig::max_rounds`](crate::AgentConfig::max_rounds).
pub const DEFAULT_MAX_ROUNDS: usize = 20;

impl Default for AgentConfig {
    fn default() -> Self {
        Self::for_protocol(ProtocolChoice::Action)
    }
}

impl AgentConfig {
    /// The defaults, for a model writing `protocol`, with the matching prompt style.
    pub fn for_protocol(protocol: ProtocolChoice) -> Self {
        let prompt_style = match protocol {
            ProtocolChoice::Action => PromptStyle::Xml,
            ProtocolChoice::Tam | ProtocolChoice::Auto => PromptStyle::Tam,
        };
        Self {
            decoder: tam::Config::for_protocol(protocol),
            end_turn_at_call: true,
            run_extra_action_blocks: false,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_rounds: DEFAULT_MAX_ROUNDS,
            failure_policy: FailurePolicy::default(),
            prompt_style,
            tool_list_heading: "Available tools:".to_owned(),
            model_options: ModelOptions::default(),
            observation_role: Role::User,
            strict: None,
        }
    }
}
