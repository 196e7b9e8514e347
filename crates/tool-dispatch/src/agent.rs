//! The agent loop: stream a model's output through the protocol decoder, run each block's
//! calls the moment the block closes (while the model is still streaming), feed the
//! observations back, and repeat until the model answers in plain text.

use std::sync::Mutex;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tam_parse::{Diagnostic, Span};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tool_schema::PromptStyle;

use crate::decode::{BlockKind, Decoded, Protocol, StreamDecoder};
use crate::dispatch::{CallBudget, CallStatus, ChainEvent};
use crate::scope::{AvailableTools, DEFAULT_MAX_TOOL_CALLS, LlmNodeConfig};
use crate::{
    BoxError, CallOutcome, Dispatcher, Error, OBSERVATION_PREFIX, Scope, ToolCall,
    diagnostic_observation,
};

/// What a model answers when a tool reported `success: false` and the work cannot go on
/// (result seed: the workflow engine stops on it).
pub const TOOL_EXECUTION_FAILED: &str = "TOOL_EXECUTION_FAILED";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The user, or the runtime speaking for the tools (observations).
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What was written.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A language model that streams its answer as text deltas.
pub trait LanguageModel: Send + Sync {
    /// Starts one completion of `messages`. The stream yields deltas of any size; an error
    /// ends the loop with [`Error::Model`].
    fn stream(&self, messages: &[Message]) -> BoxStream<'static, Result<String, BoxError>>;
}

/// What a failed call does to the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// The failure becomes an observation and the model decides (self-correction, or
    /// answering [`TOOL_EXECUTION_FAILED`]). The default.
    #[default]
    Observe,
    /// The first call with `success: false` (refusals included) ends the loop after the
    /// round with [`StopReason::ToolFailed`].
    Stop,
}

/// Limits and choices of an [`Agent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// The protocol. Default: TAM.
    pub protocol: Protocol,
    /// The TAM decoder's configuration (dialect, limits). Default: the default dialect.
    pub tam: tam_parse::Config,
    /// The ACTION decoder's configuration (limits). Default: action-xml's defaults.
    pub action: action_xml::Config,
    /// Whether ACTION blocks after the first of a reply run too. Default: `false` (SPEC
    /// §3: only the first runs); each ignored block is reported to the model.
    pub run_extra_action_blocks: bool,
    /// Most calls in one run (`maxToolCalls`). Default: 10.
    pub max_tool_calls: usize,
    /// Most model rounds in one run, so a model that writes only broken blocks stops too.
    /// Default: 20.
    pub max_rounds: usize,
    /// What a failed call does. Default: [`FailurePolicy::Observe`].
    pub failure_policy: FailurePolicy,
    /// How the tool list is rendered into the first prompt. Default: the style of the
    /// protocol (TAM seed §6.2 for TAM and both, ACTION seed §4.2 for ACTION).
    pub prompt_style: PromptStyle,
    /// The line before the tool list. Default: `Available tools:`.
    pub tool_list_heading: String,
}

/// Default of [`AgentConfig::max_rounds`].
pub const DEFAULT_MAX_ROUNDS: usize = 20;

impl Default for AgentConfig {
    fn default() -> Self {
        Self::for_protocol(Protocol::default())
    }
}

impl AgentConfig {
    /// The defaults, for a model writing `protocol`, with the matching prompt style.
    pub fn for_protocol(protocol: Protocol) -> Self {
        let prompt_style = match protocol {
            Protocol::Action => PromptStyle::Xml,
            _ => PromptStyle::Tam,
        };
        Self {
            protocol,
            tam: tam_parse::Config::default(),
            action: action_xml::Config::default(),
            run_extra_action_blocks: false,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_rounds: DEFAULT_MAX_ROUNDS,
            failure_policy: FailurePolicy::default(),
            prompt_style,
            tool_list_heading: "Available tools:".to_owned(),
        }
    }
}

/// Progress of a run, in order, for a UI to print as it happens.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model round begins (numbered from 1).
    RoundStarted {
        /// The round.
        round: usize,
    },
    /// Prose the model wrote outside blocks, as soon as the decoder releases it.
    TextDelta(String),
    /// A block's start marker (or `<ACTION>` tag) arrived: the model is writing tool calls.
    /// Sent in the push that completes the marker, before the block's content — for a UI
    /// to show "calling a tool…" while the block is still streaming. A
    /// [`AgentEvent::BlockClosed`] (or, for a block left open at the end, a
    /// [`AgentEvent::Diagnostic`]) follows.
    BlockStarted {
        /// The block's protocol.
        kind: BlockKind,
        /// The start marker's span in the reply.
        span: Span,
    },
    /// A block closed; unless `executed` is false, its calls are about to run (they may
    /// wait for an earlier block's).
    BlockClosed {
        /// The block's protocol.
        kind: BlockKind,
        /// Start marker to end marker.
        span: Span,
        /// The calls, in execution order.
        calls: Vec<ToolCall>,
        /// The decoder's diagnostics about the block.
        diagnostics: Vec<Diagnostic>,
        /// False for an ACTION block after the first when
        /// [`AgentConfig::run_extra_action_blocks`] is off: its calls do not run.
        executed: bool,
    },
    /// A decoder diagnostic outside any block (an unterminated block, invalid UTF-8).
    Diagnostic(Diagnostic),
    /// A call starts.
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
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without calling a tool.
    Answer,
    /// The model answered [`TOOL_EXECUTION_FAILED`].
    ToolExecutionFailed,
    /// A call failed under [`FailurePolicy::Stop`].
    ToolFailed,
    /// A call was refused because `maxToolCalls` was used up.
    MaxToolCalls,
    /// [`AgentConfig::max_rounds`] rounds ran without an answer.
    MaxRounds,
    /// The cancellation token fired.
    Cancelled,
}

/// The end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    /// Why it ended.
    pub stop: StopReason,
    /// The prose of the last round (the answer, when `stop` is [`StopReason::Answer`]).
    pub answer: String,
    /// Model rounds run.
    pub rounds: usize,
    /// Every call of the run, in order.
    pub calls: Vec<CallOutcome>,
}

/// Runs the deliberation–action loop of one LLM node over a [`Dispatcher`].
#[derive(Debug, Clone)]
pub struct Agent {
    dispatcher: Dispatcher,
    scope: Scope,
    config: AgentConfig,
}

/// Work handed from the stream reader to the executor, in stream order: calls to run and
/// diagnostics and notes to report.
struct Job {
    calls: Vec<ToolCall>,
    diagnostics: Vec<Diagnostic>,
    note: Option<String>,
}

/// What the executor gathered in one round.
#[derive(Default)]
struct RoundWork {
    observations: Vec<String>,
    outcomes: Vec<CallOutcome>,
}

impl Agent {
    /// An agent with the default configuration.
    pub fn new(dispatcher: Dispatcher, scope: Scope) -> Self {
        Self::with_config(dispatcher, scope, AgentConfig::default())
    }

    /// An agent with `config`.
    pub fn with_config(dispatcher: Dispatcher, scope: Scope, config: AgentConfig) -> Self {
        Self {
            dispatcher,
            scope,
            config,
        }
    }

    /// The agent of an LLM node: scope from the workflow's `availableTools` and the node's
    /// `dynamicTools`, `maxToolCalls` from the node, and the node's `descriptionTemplate`
    /// (if any) as a plain prompt style; the rest from `config`.
    ///
    /// # Errors
    /// As [`Scope::for_llm_node`].
    pub fn for_llm_node(
        dispatcher: Dispatcher,
        workflow: &AvailableTools,
        node: &LlmNodeConfig,
        mut config: AgentConfig,
    ) -> Result<Self, Error> {
        let scope = Scope::for_llm_node(dispatcher.registry(), workflow, node)?;
        config.max_tool_calls = node.max_tool_calls();
        if let Some(template) = node
            .dynamic_tools
            .as_ref()
            .and_then(|d| d.description_template.clone())
        {
            config.prompt_style = PromptStyle::Plain { template };
        }
        Ok(Self::with_config(dispatcher, scope, config))
    }

    /// The scope calls are checked against.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The tool list text added to the first prompt: the heading and the rendered
    /// definitions of the scope's tools; empty when the scope has none.
    pub fn tool_descriptions(&self) -> String {
        let tools = self.scope.definitions(self.dispatcher.registry());
        if tools.is_empty() {
            return String::new();
        }
        let list = tool_schema::render_tool_list(tools, &self.config.prompt_style);
        format!("{}\n{list}", self.config.tool_list_heading)
    }

    /// The complete system prompt (tool-schema's [`SystemPrompt`](tool_schema::SystemPrompt))
    /// listing the scope's tools. Put it in `conversation` as [`Message::system`] before
    /// [`run`](Self::run): the conversation is then not empty, so the tool list is not added
    /// to the first prompt a second time.
    pub fn system_prompt(&self, prompt: &tool_schema::SystemPrompt) -> String {
        prompt.render(self.scope.definitions(self.dispatcher.registry()))
    }

    /// Runs the loop for `prompt` on `conversation`, which it extends with the prompt, each
    /// model output and each round's observations.
    ///
    /// The tool descriptions enter the message list once: they are appended to the prompt
    /// only when `conversation` is empty (workflow tool registration seed).
    ///
    /// # Errors
    /// [`Error::Model`] when the model's stream fails; calls of blocks that closed before
    /// the failure still run to completion first.
    pub async fn run<M, F>(
        &self,
        model: &M,
        conversation: &mut Vec<Message>,
        prompt: &str,
        on_event: F,
        cancel: &CancellationToken,
    ) -> Result<AgentOutcome, Error>
    where
        M: LanguageModel + ?Sized,
        F: FnMut(AgentEvent) + Send,
    {
        let descriptions = if conversation.is_empty() {
            self.tool_descriptions()
        } else {
            String::new()
        };
        let first = if descriptions.is_empty() {
            prompt.to_owned()
        } else {
            format!("{prompt}\n\n{descriptions}")
        };
        conversation.push(Message::user(first));

        let emit = Mutex::new(on_event);
        let emit = |event: AgentEvent| (emit.lock().unwrap_or_else(|p| p.into_inner()))(event);
        let mut budget = CallBudget {
            max: self.config.max_tool_calls,
            used: 0,
        };
        let mut calls = Vec::new();
        let mut answer = String::new();
        for round in 1..=self.config.max_rounds {
            emit(AgentEvent::RoundStarted { round });
            let (stream_end, prose, work) = self
                .round(model, conversation, &mut budget, &emit, cancel)
                .await;
            answer = prose;
            let RoundWork {
                observations,
                outcomes,
            } = work;
            let limit_hit = outcomes
                .iter()
                .any(|o| matches!(o.status, CallStatus::LimitReached { .. }));
            let failed = outcomes.iter().any(|o| !o.is_success());
            calls.extend(outcomes);
            let (raw, streamed) = stream_end?;
            conversation.push(Message::assistant(raw));
            if !observations.is_empty() {
                conversation.push(Message::user(observations.join("\n")));
            }
            let stop = if !streamed {
                Some(StopReason::Cancelled)
            } else if answer.trim() == TOOL_EXECUTION_FAILED {
                Some(StopReason::ToolExecutionFailed)
            } else if observations.is_empty() {
                Some(StopReason::Answer)
            } else if limit_hit {
                Some(StopReason::MaxToolCalls)
            } else if failed && self.config.failure_policy == FailurePolicy::Stop {
                Some(StopReason::ToolFailed)
            } else if cancel.is_cancelled() {
                Some(StopReason::Cancelled)
            } else {
                None
            };
            if let Some(stop) = stop {
                return Ok(AgentOutcome {
                    stop,
                    answer,
                    rounds: round,
                    calls,
                });
            }
        }
        Ok(AgentOutcome {
            stop: StopReason::MaxRounds,
            answer,
            rounds: self.config.max_rounds,
            calls,
        })
    }

    /// One model round: the reader decodes the stream and queues blocks; the executor runs
    /// them as they arrive. Returns (the raw output and whether the stream ran to its end,
    /// or the model's error), the prose, and the executor's work.
    async fn round<M: LanguageModel + ?Sized>(
        &self,
        model: &M,
        conversation: &[Message],
        budget: &mut CallBudget,
        emit: &(dyn Fn(AgentEvent) + Sync),
        cancel: &CancellationToken,
    ) -> (Result<(String, bool), Error>, String, RoundWork) {
        let (jobs, mut queue) = mpsc::unbounded_channel();
        let mut answer = String::new();
        let reader = async {
            // Owned by the reader, so the executor's queue closes when the stream is done.
            let jobs = jobs;
            let config = &self.config;
            let mut decoder = StreamDecoder::new(config.protocol, config.tam, config.action);
            let mut raw = String::new();
            let mut stream = model.stream(conversation);
            let mut on_event = |event: Decoded<'_>| self.route(event, &mut answer, &jobs, emit);
            let streamed = loop {
                let next = tokio::select! {
                    biased;
                    () = cancel.cancelled() => break false,
                    next = stream.next() => next,
                };
                match next {
                    Some(Ok(delta)) => {
                        raw.push_str(&delta);
                        decoder.feed(&delta, &mut on_event);
                    }
                    Some(Err(e)) => {
                        decoder.finish_cut(&mut on_event);
                        return Err(Error::Model(e));
                    }
                    None => break true,
                }
            };
            decoder.finish(&mut on_event);
            Ok((raw, streamed))
        };
        let executor = async {
            let mut work = RoundWork::default();
            while let Some(job) = queue.recv().await {
                self.execute(job, budget, emit, cancel, &mut work).await;
            }
            work
        };
        let (stream_end, work) = tokio::join!(reader, executor);
        (stream_end, answer, work)
    }

    /// Turns a decoder event into agent events and jobs.
    fn route(
        &self,
        event: Decoded<'_>,
        answer: &mut String,
        jobs: &mpsc::UnboundedSender<Job>,
        emit: &(dyn Fn(AgentEvent) + Sync),
    ) {
        // The executor outlives the reader, so a send cannot fail.
        let job = match event {
            Decoded::Text(text) => {
                answer.push_str(&text);
                emit(AgentEvent::TextDelta(text.into_owned()));
                return;
            }
            Decoded::BlockStart { kind, span } => {
                emit(AgentEvent::BlockStarted { kind, span });
                return;
            }
            Decoded::Block {
                kind,
                span,
                index,
                calls,
                diagnostics,
            } => {
                let executed = index == 0 || self.config.run_extra_action_blocks;
                emit(AgentEvent::BlockClosed {
                    kind,
                    span,
                    calls: calls.clone(),
                    diagnostics: diagnostics.clone(),
                    executed,
                });
                if executed {
                    Job {
                        calls,
                        diagnostics,
                        note: None,
                    }
                } else {
                    let note = format!(
                        "{OBSERVATION_PREFIX}Error - Only the first ACTION block of a reply is executed; the {} call(s) of ACTION block {} were not executed",
                        calls.len(),
                        index + 1
                    );
                    Job {
                        calls: Vec::new(),
                        diagnostics: Vec::new(),
                        note: Some(note),
                    }
                }
            }
            Decoded::Diagnostic(diagnostic) => {
                emit(AgentEvent::Diagnostic(diagnostic.clone()));
                Job {
                    calls: Vec::new(),
                    diagnostics: vec![diagnostic],
                    note: None,
                }
            }
        };
        let _ = jobs.send(job);
    }

    /// Runs one job: error diagnostics become observations, calls run as a chain.
    async fn execute(
        &self,
        job: Job,
        budget: &mut CallBudget,
        emit: &(dyn Fn(AgentEvent) + Sync),
        cancel: &CancellationToken,
        work: &mut RoundWork,
    ) {
        let mut observe = |text: String| {
            emit(AgentEvent::Observation(text.clone()));
            work.observations.push(text);
        };
        let Job {
            calls,
            diagnostics,
            note,
        } = job;
        note.into_iter().for_each(&mut observe);
        diagnostics
            .iter()
            .filter_map(diagnostic_observation)
            .for_each(&mut observe);
        if calls.is_empty() {
            return;
        }
        let mut on_chain = |event: ChainEvent<'_>| match event {
            ChainEvent::Started(call) => emit(AgentEvent::CallStarted {
                tool: call.tool.clone(),
                args: call.args.clone(),
            }),
            ChainEvent::Finished(outcome) => emit(AgentEvent::CallFinished(outcome.clone())),
        };
        let outcomes = self
            .dispatcher
            .run_chain(&self.scope, calls, cancel, Some(budget), &mut on_chain)
            .await;
        for outcome in &outcomes {
            observe(outcome.observation());
        }
        work.outcomes.extend(outcomes);
    }
}
