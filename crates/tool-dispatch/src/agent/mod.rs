//! The agent loop: stream a model's output through the protocol decoder, run each block's
//! calls the moment the block closes (while the model is still streaming), feed the
//! observations back, and repeat until the model answers in plain text.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tool_schema::PromptStyle;
use tool_schema::grammar::{GrammarError, StrictGrammar};

use tam::Diagnostic;
use tam::turn::{ACTION_END, StoppedAt, close_stopped_block, stop_sequences};
use tam_model::{
    BoxError, Constraint, ContentPiece, FinishReason, LanguageModel, Message, ModelItem,
    ModelRequest, ThinkSplitter,
};

use crate::Protocol;
use crate::dispatch::{CallBudget, CallStatus, ChainEvent};
use crate::scope::{AvailableTools, LlmNodeConfig};
use crate::{
    CallOutcome, Dispatcher, Error, OBSERVATION_PREFIX, Scope, ToolCall, diagnostic_observation,
};

use crate::prompt::{grammar_options_for, taught_protocol};

mod config;
mod event;

pub use config::{
    AgentConfig, DEFAULT_MAX_ROUNDS, FailurePolicy, StrictForm, TOOL_EXECUTION_FAILED,
};
pub use event::{AgentEvent, AgentOutcome, StopReason, StreamCut};

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

impl Job {
    /// A job that only reports `note`.
    fn note(note: String) -> Self {
        Self {
            calls: Vec::new(),
            diagnostics: Vec::new(),
            note: Some(note),
        }
    }
}

/// Where the model's turn stands within one round (the turn ends at its call).
#[derive(Default)]
struct Turn {
    /// A block with calls to run closed: nothing after it is shown, decoded or run.
    over: AtomicBool,
    /// Where that block ended, in bytes of the reply's text.
    end: AtomicUsize,
    /// The protocol of the block open now: 0 none, 1 TAM, 2 ACTION.
    open: AtomicU8,
    /// Set while the decoder finishes a cut stream: blocks it hands over then were open at
    /// the cut and must not run.
    cutting: AtomicBool,
    /// A block was open at the cut.
    cut_block: AtomicBool,
}

impl Turn {
    fn is_over(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }

    /// Tracks the open block from the decoder's events.
    fn track(&self, event: &tam::Event<'_>) {
        let open = match event {
            tam::Event::BlockStart {
                protocol: tam::Protocol::Tam,
                ..
            } => 1,
            tam::Event::BlockStart { .. } => 2,
            tam::Event::Text { .. }
            | tam::Event::TamBlock(_)
            | tam::Event::ActionBlock(_)
            | tam::Event::Diagnostic(_) => 0,
            tam::Event::CommandSeen { .. }
            | tam::Event::ReasoningStart { .. }
            | tam::Event::Reasoning { .. }
            | tam::Event::ReasoningEnd { .. }
            | tam::Event::CallStart { .. }
            | tam::Event::ParamStart { .. }
            | tam::Event::ParamText { .. }
            | tam::Event::ParamEnd { .. }
            | tam::Event::CallEnd { .. } => return,
        };
        self.open.store(open, Ordering::Relaxed);
    }
}

/// How a round's stream ended.
struct RoundEnd {
    /// The reply's text (reasoning split out).
    raw: String,
    /// False when the cancellation token stopped the stream.
    streamed: bool,
    /// The reply was cut at the token limit.
    cut: bool,
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
    ///
    /// With the ACTION protocol, the tools of [`Agent::unwritable_tools`] are left out: a
    /// model could never call them.
    pub fn system_prompt(&self, prompt: &tool_schema::SystemPrompt) -> String {
        let unwritable = self.unwritable_tools();
        prompt.render(
            self.scope
                .definitions(self.dispatcher.registry())
                .into_iter()
                .filter(|d| !unwritable.iter().any(|u| u == d.id.as_str())),
        )
    }

    /// The scope's tools a model can never call in this agent's protocol: with ACTION
    /// (a call is an element named by its tool and parameters), those whose id or a
    /// top-level parameter is no XML element name ([`tam::action_xml::is_element_name`]:
    /// `get/weather`, `1password`, a parameter `first name`). Empty with TAM and auto,
    /// which write any name. Show them to the user: [`Agent::system_prompt`] leaves them
    /// out.
    pub fn unwritable_tools(&self) -> Vec<String> {
        if self.config.decoder.protocol != tam::ProtocolChoice::Action {
            return Vec::new();
        }
        self.scope
            .definitions(self.dispatcher.registry())
            .into_iter()
            .filter(|d| {
                let keys = d
                    .parameters
                    .get("properties")
                    .and_then(serde_json::Value::as_object)
                    .into_iter()
                    .flat_map(|p| p.keys());
                !std::iter::once(d.id.as_str())
                    .chain(keys.map(String::as_str))
                    .all(tam::action_xml::is_element_name)
            })
            .map(|d| d.id.as_str().to_owned())
            .collect()
    }

    /// The strict-call grammar of the scope's tools in this agent's protocol (TAM for
    /// [`ProtocolChoice::Auto`](crate::ProtocolChoice::Auto), whose prompt teaches TAM),
    /// lazy: prose is free until the model writes the block's start marker. Each round
    /// builds it afresh when [`AgentConfig::strict`] is set and sends it in that form; a
    /// round whose grammar cannot be built (the error here: too large, or no tool that
    /// can be written in the protocol) is sent with the prompt alone. Call it to tell the
    /// user before a run.
    ///
    /// # Errors
    /// The [`GrammarError`] of [`StrictGrammar::new`].
    pub fn strict_grammar(&self) -> Result<StrictGrammar, GrammarError> {
        StrictGrammar::new(
            self.scope.definitions(self.dispatcher.registry()),
            &grammar_options_for(self.config.decoder.protocol),
        )
    }

    /// The constraint of one round's request ([`AgentConfig::strict`]), when its grammar
    /// can be built and the decoder's TAM dialect ends blocks where the grammar does.
    fn constraint(&self) -> Option<Constraint> {
        let form = self.config.strict?;
        let grammar = self.strict_grammar().ok()?;
        if taught_protocol(self.config.decoder.protocol) == Protocol::Tam
            && grammar.end_marker() != self.config.decoder.tam.dialect.end_marker()
        {
            return None;
        }
        Some(match form {
            StrictForm::Gbnf => Constraint::Gbnf {
                grammar: grammar.gbnf().to_owned(),
                lazy: true,
                triggers: grammar.triggers().map(str::to_owned).to_vec(),
                patterns: grammar.trigger_patterns(),
            },
            StrictForm::StructuralTag => Constraint::StructuralTag(grammar.structural_tag()),
        })
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
            let RoundEnd { raw, streamed, cut } = stream_end?;
            conversation.push(Message::assistant(raw));
            if !observations.is_empty() {
                conversation.push(Message::new(
                    self.config.observation_role,
                    observations.join("\n"),
                ));
            }
            let stop = if !streamed {
                Some(StopReason::Cancelled)
            } else if answer.trim() == TOOL_EXECUTION_FAILED {
                Some(StopReason::ToolExecutionFailed)
            } else if observations.is_empty() && cut {
                Some(StopReason::Truncated)
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
    /// them as they arrive. Returns how the stream ended (or the model's error), the prose,
    /// and the executor's work.
    async fn round<M: LanguageModel + ?Sized>(
        &self,
        model: &M,
        conversation: &[Message],
        budget: &mut CallBudget,
        emit: &(dyn Fn(AgentEvent) + Sync),
        cancel: &CancellationToken,
    ) -> (Result<RoundEnd, Error>, String, RoundWork) {
        let (jobs, queue) = mpsc::unbounded_channel();
        let mut answer = String::new();
        let reader = self.read(model, conversation, jobs, &mut answer, emit, cancel);
        let executor = self.run_jobs(queue, budget, emit, cancel);
        let (stream_end, work) = tokio::join!(reader, executor);
        (stream_end, answer, work)
    }

    /// The request of one round: conversation, options with end markers as stops, constraint.
    fn request(&self, conversation: &[Message]) -> ModelRequest {
        let config = &self.config;
        let mut options = config.model_options.clone();
        if config.end_turn_at_call {
            // The turn ends at the call: the protocol's end markers are stop sequences,
            // before the caller's own.
            let tam_end = config.decoder.tam.dialect.end_marker();
            options.stop = stop_sequences(config.decoder.protocol, tam_end, options.stop.drain(..));
        }
        let mut request = ModelRequest::new(conversation.to_vec(), options);
        if let Some(constraint) = self.constraint() {
            request = request.with_constraint(constraint);
        }
        request
    }

    /// The reader of one round: decodes the model's stream, queues jobs, says how it ended.
    async fn read<M: LanguageModel + ?Sized>(
        &self,
        model: &M,
        conversation: &[Message],
        jobs: mpsc::UnboundedSender<Job>,
        answer: &mut String,
        emit: &(dyn Fn(AgentEvent) + Sync),
        cancel: &CancellationToken,
    ) -> Result<RoundEnd, Error> {
        // The reader owns `jobs`, so the executor's queue closes when the stream is done.
        let mut reader = Reader::new(self, jobs, answer, emit);
        let request = self.request(conversation);
        let mut stream = model.stream(&request);
        let failure = reader.stream(&mut stream, cancel).await;
        reader.end(failure)
    }

    /// The executor of one round: runs the reader's jobs in stream order as they arrive.
    async fn run_jobs(
        &self,
        mut queue: mpsc::UnboundedReceiver<Job>,
        budget: &mut CallBudget,
        emit: &(dyn Fn(AgentEvent) + Sync),
        cancel: &CancellationToken,
    ) -> RoundWork {
        let mut work = RoundWork::default();
        while let Some(job) = queue.recv().await {
            self.execute(job, budget, emit, cancel, &mut work).await;
        }
        work
    }

    /// Turns a decoder event into agent events and jobs.
    fn route(
        &self,
        event: tam::Event<'_>,
        answer: &mut String,
        jobs: &mpsc::UnboundedSender<Job>,
        emit: &(dyn Fn(AgentEvent) + Sync),
        turn: &Turn,
    ) {
        // The executor outlives the reader, so a send cannot fail.
        let block = match event {
            tam::Event::Text { ref text, .. } => {
                answer.push_str(text);
                emit(AgentEvent::Decoded(event.into_owned()));
                return;
            }
            tam::Event::Reasoning { text, .. } => {
                emit(AgentEvent::Reasoning(text.into_owned()));
                return;
            }
            tam::Event::ReasoningStart { .. } | tam::Event::ReasoningEnd { .. } => return,
            tam::Event::BlockStart { .. } => {
                emit(AgentEvent::Decoded(event.into_owned()));
                return;
            }
            tam::Event::TamBlock(block) => ClosedBlock {
                kind: Protocol::Tam,
                span: block.span,
                index: 0,
                calls: self.tam_calls(&block),
                diagnostics: block.diagnostics,
            },
            tam::Event::ActionBlock(block) => ClosedBlock {
                kind: Protocol::Action,
                span: block.span,
                index: block.index,
                calls: ToolCall::from_action_block(&block),
                diagnostics: block.diagnostics,
            },
            tam::Event::Diagnostic(diagnostic) => {
                if turn.cutting.load(Ordering::Relaxed) {
                    turn.cut_block.store(true, Ordering::Relaxed);
                }
                emit(AgentEvent::Decoded(tam::Event::Diagnostic(
                    diagnostic.clone(),
                )));
                let _ = jobs.send(Job {
                    calls: Vec::new(),
                    diagnostics: vec![diagnostic],
                    note: None,
                });
                return;
            }
            other @ (tam::Event::CommandSeen { .. }
            | tam::Event::CallStart { .. }
            | tam::Event::ParamStart { .. }
            | tam::Event::ParamText { .. }
            | tam::Event::ParamEnd { .. }
            | tam::Event::CallEnd { .. }) => {
                // TAM's CommandSeen comes whatever the decoder's switch says.
                if self.config.decoder.param_events {
                    emit(AgentEvent::Decoded(other.into_owned()));
                }
                return;
            }
        };
        if let Some(job) = self.close_block(block, emit, turn) {
            let _ = jobs.send(job);
        }
    }

    /// The calls of a TAM block, a repeated key read as items of its tool's array parameter.
    fn tam_calls(&self, block: &tam::TamBlock) -> Vec<ToolCall> {
        let registry = self.dispatcher.registry();
        ToolCall::from_tam_block_with(block, |tool, key, text| {
            registry
                .resolve(tool)
                .and_then(|id| registry.entry(id.as_str()))
                .is_ok_and(|entry| {
                    entry
                        .tool
                        .is_one_item(key, tool_schema::KeyMatch::Canonical, text)
                })
        })
    }

    /// Reports a closed block and gives its job; none when the block was open at the cut.
    fn close_block(
        &self,
        block: ClosedBlock,
        emit: &(dyn Fn(AgentEvent) + Sync),
        turn: &Turn,
    ) -> Option<Job> {
        let ClosedBlock {
            kind,
            span,
            index,
            calls,
            diagnostics,
        } = block;
        if turn.cutting.load(Ordering::Relaxed) {
            // The block was open when the stream was cut: whatever the decoder made of
            // it, the model did not finish it, so it does not run.
            turn.cut_block.store(true, Ordering::Relaxed);
            emit(AgentEvent::BlockClosed {
                kind,
                span,
                calls,
                diagnostics,
                executed: false,
            });
            return None;
        }
        let executed = index == 0 || self.config.run_extra_action_blocks;
        emit(AgentEvent::BlockClosed {
            kind,
            span,
            calls: calls.clone(),
            diagnostics: diagnostics.clone(),
            executed,
        });
        if executed {
            if !calls.is_empty() && self.config.end_turn_at_call {
                // The model's turn ends at this block.
                turn.end.store(span.end, Ordering::Relaxed);
                turn.over.store(true, Ordering::Relaxed);
            }
            Some(Job {
                calls,
                diagnostics,
                note: None,
            })
        } else {
            let note = format!(
                "{OBSERVATION_PREFIX}Error - Only the first ACTION block of a reply is executed; the {} call(s) of ACTION block {} were not executed",
                calls.len(),
                index + 1
            );
            Some(Job::note(note))
        }
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

/// A block the decoder closed, on its way to the caller and the executor.
struct ClosedBlock {
    kind: Protocol,
    /// Start marker to end marker.
    span: tam::Span,
    /// The block's place among the reply's ACTION blocks (0 for TAM).
    index: usize,
    calls: Vec<ToolCall>,
    diagnostics: Vec<Diagnostic>,
}

/// Where the decoder's events of one round go: to the caller, the prose and the executor.
struct Router<'a> {
    agent: &'a Agent,
    /// The prose outside blocks.
    answer: &'a mut String,
    /// The executor's queue.
    jobs: mpsc::UnboundedSender<Job>,
    emit: &'a (dyn Fn(AgentEvent) + Sync),
    turn: Turn,
}

impl Router<'_> {
    /// Routes a decoder event, unless the turn is over.
    fn on_event(&mut self, event: tam::Event<'_>) {
        if self.turn.is_over() {
            return;
        }
        self.turn.track(&event);
        self.agent
            .route(event, self.answer, &self.jobs, self.emit, &self.turn);
    }
}

/// Why a round's stream stopped early: `Some(error)` when it failed, `None` when cancelled.
type Failure = Option<BoxError>;

/// The stream reader of one round: the decoder, the reply's text and how the stream ended.
struct Reader<'a> {
    router: Router<'a>,
    decoder: tam::Decoder,
    /// Splits reasoning out of the text when the decoder reads reasoning tags.
    think: Option<ThinkSplitter>,
    /// The reply's text (reasoning split out).
    raw: String,
    finish: Option<FinishReason>,
    /// The stop sequence the server says it stopped at.
    stopped_at: Option<String>,
    /// The names of native tool calls, by index.
    native: BTreeMap<usize, String>,
}

impl<'a> Reader<'a> {
    /// A reader of `agent`'s protocol that queues jobs on `jobs`.
    fn new(
        agent: &'a Agent,
        jobs: mpsc::UnboundedSender<Job>,
        answer: &'a mut String,
        emit: &'a (dyn Fn(AgentEvent) + Sync),
    ) -> Self {
        let config = &agent.config;
        // A call element of an offered tool written without `<ACTION>` is a call.
        let offered = agent.scope.definitions(agent.dispatcher.registry());
        let decoder = tam::Decoder::new(config.decoder)
            .with_bare_call_tools(offered.iter().map(|d| d.id.as_str()));
        Self {
            router: Router {
                agent,
                answer,
                jobs,
                emit,
                turn: Turn::default(),
            },
            decoder,
            think: config.decoder.reasoning_tags.then(ThinkSplitter::new),
            raw: String::new(),
            finish: None,
            stopped_at: None,
            native: BTreeMap::new(),
        }
    }

    /// Reads the stream: `None` at its end or the turn's, the `Failure` when it stopped early.
    async fn stream(
        &mut self,
        stream: &mut BoxStream<'static, Result<ModelItem, BoxError>>,
        cancel: &CancellationToken,
    ) -> Option<Failure> {
        let emit = self.router.emit;
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => break Some(None),
                next = stream.next() => next,
            };
            match next {
                Some(Ok(ModelItem::Text(delta))) => {
                    self.text(&delta);
                    if self.router.turn.is_over() {
                        // The turn ended at the call: dropping the stream closes the
                        // request, whatever the model would write next.
                        break None;
                    }
                }
                Some(Ok(ModelItem::Usage(_))) => {}
                Some(Ok(ModelItem::Reasoning(reasoning))) => {
                    if !reasoning.is_empty() {
                        emit(AgentEvent::Reasoning(reasoning));
                    }
                }
                Some(Ok(ModelItem::ToolCallChunk(chunk))) => {
                    let name = self.native.entry(chunk.index).or_default();
                    if let Some(piece) = &chunk.name {
                        name.push_str(piece);
                    }
                    emit(AgentEvent::NativeToolCall(chunk));
                }
                Some(Ok(ModelItem::StopSequence(sequence))) => self.stopped_at = Some(sequence),
                Some(Ok(ModelItem::Finish(reason))) => {
                    emit(AgentEvent::ModelFinished(reason.clone()));
                    self.finish = Some(reason);
                }
                Some(Err(error)) => break Some(Some(error)),
                None => break None,
            }
        }
    }

    /// Feeds a text delta of the stream: reasoning split out and reported, the rest decoded.
    fn text(&mut self, delta: &str) {
        let Self {
            router,
            decoder,
            think,
            raw,
            ..
        } = self;
        let mut piece_out = |piece: ContentPiece<'_>| match piece {
            ContentPiece::Text(text) => {
                raw.push_str(text);
                decoder.feed(text, |event| router.on_event(event));
            }
            ContentPiece::Reasoning(reasoning) => {
                (router.emit)(AgentEvent::Reasoning(reasoning.to_owned()));
            }
        };
        match think {
            Some(splitter) => splitter.feed(delta, &mut piece_out),
            None => piece_out(ContentPiece::Text(delta)),
        }
    }

    /// Ends the round's stream: last text decoded, decoder finished; how it ended, or the error.
    fn end(mut self, failure: Option<Failure>) -> Result<RoundEnd, Error> {
        self.release_held();
        if failure.is_none() {
            self.close_stopped_block();
        }
        self.note_native_calls();
        let cut = match &failure {
            Some(Some(error)) => Some(StreamCut::Transport(error.to_string())),
            Some(None) => None,
            None if self.finish.as_ref().is_some_and(FinishReason::is_cut) => {
                Some(StreamCut::Length)
            }
            None => None,
        };
        let truncated = cut.is_some();
        let raw = self.finish_decoder(cut);
        match failure {
            Some(Some(error)) => Err(Error::Model(error)),
            Some(None) => Ok(RoundEnd {
                raw,
                streamed: false,
                cut: false,
            }),
            None => Ok(RoundEnd {
                raw,
                streamed: true,
                cut: truncated,
            }),
        }
    }

    /// Decodes the text the reasoning splitter held back (a partial tag).
    fn release_held(&mut self) {
        if let Some(splitter) = self.think.take() {
            let emit = self.router.emit;
            splitter.finish(|piece| match piece {
                // Without the splitter, the text is decoded as it is.
                ContentPiece::Text(text) => self.text(text),
                ContentPiece::Reasoning(reasoning) => {
                    emit(AgentEvent::Reasoning(reasoning.to_owned()));
                }
            });
        }
    }

    /// At a `stop` finish, closes the block a server's stop sequence left open, if it ends there.
    fn close_stopped_block(&mut self) {
        let config = &self.router.agent.config;
        // A server that honours the stop sequence leaves the end marker out: at a `stop`
        // finish, a block still open is closed by its marker when the server says it
        // stopped there, or, when it says nothing, when the block can end there (a reply
        // that mentions a start marker and ends by itself finishes with `stop` too). Its
        // decoder then decides whether the block holds calls.
        let open = self.router.turn.open.load(Ordering::Relaxed);
        let marker = if open == 1 {
            config.decoder.tam.dialect.end_marker()
        } else {
            ACTION_END
        };
        // A reply that ends with the marker was not stopped at it (the server ignored the
        // stop sequence): the block stays as the model wrote it.
        if config.end_turn_at_call
            && !self.router.turn.is_over()
            && self.finish == Some(FinishReason::Stop)
            && open != 0
            && !self.raw.ends_with(marker)
        {
            let stopped = match &self.stopped_at {
                Some(sequence) => StoppedAt::Sequence(sequence),
                None => StoppedAt::Unreported,
            };
            let events = close_stopped_block(&mut self.decoder, marker, stopped);
            if events
                .iter()
                .any(|e| matches!(e, tam::Event::TamBlock(_) | tam::Event::ActionBlock(_)))
            {
                self.raw.push_str(marker);
            }
            for event in events {
                self.router.on_event(event);
            }
        }
    }

    /// Tells the model its native tool calls were not run, unless its turn ended at a call.
    fn note_native_calls(&mut self) {
        if self.native.is_empty() || self.router.turn.is_over() {
            return;
        }
        let names: Vec<String> = std::mem::take(&mut self.native)
            .into_values()
            .map(|name| {
                if name.is_empty() {
                    "?".to_owned()
                } else {
                    name
                }
            })
            .collect();
        let note = format!(
            "{OBSERVATION_PREFIX}Error - Native tool calls are not executed here ({}); write each call as a tool call block of the protocol in your instructions",
            names.join(", ")
        );
        let _ = self.router.jobs.send(Job::note(note));
    }

    /// Finishes the decoder (cut if the stream was); gives the reply's text up to the turn's end.
    fn finish_decoder(self, cut: Option<StreamCut>) -> String {
        let Self {
            mut router,
            decoder,
            mut raw,
            ..
        } = self;
        if let Some(cut) = cut {
            (router.emit)(AgentEvent::StreamCut(cut.clone()));
            router.turn.cutting.store(true, Ordering::Relaxed);
            decoder.finish_cut(|event| router.on_event(event));
            if router.turn.cut_block.load(Ordering::Relaxed) && cut == StreamCut::Length {
                let note = format!(
                    "{OBSERVATION_PREFIX}Error - Your reply was cut at the token limit (finish_reason: length) while a tool call block was open; no call of that block was executed. Write shorter calls, or one call per reply"
                );
                let _ = router.jobs.send(Job::note(note));
            }
        } else {
            decoder.finish(|event| router.on_event(event));
        }
        if router.turn.is_over() {
            // What the model wrote after its block is not part of the conversation.
            raw.truncate(router.turn.end.load(Ordering::Relaxed).min(raw.len()));
        }
        raw
    }
}
