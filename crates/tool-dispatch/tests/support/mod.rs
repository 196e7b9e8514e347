//! Shared test support: the node functions of the `summarize_text` fixture workflow.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use tool_dispatch::engine::{NodeInvocation, ReferenceEngine};

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The fixture as JSON.
pub fn fixture_json(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// An object from a `json!` literal.
/// The path of this package's example `name`. `cargo test` builds every example beside the
/// test binaries (`target/<profile>/examples/`); a test run alone (`--test NAME`) does not,
/// so the message says what to build.
pub fn example_exe(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let path = profile
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is not built: run `cargo test` (which builds the examples) or \
         `cargo build --example {name}` first",
        path.display()
    );
    path
}

pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The seed's long text: four sentences.
pub const LONG_TEXT: &str =
    "猫是一种小型食肉动物。它们擅长夜间捕猎。家猫已经陪伴人类数千年。许多人认为猫很独立！";

fn split_sentences(call: NodeInvocation) -> Map<String, Value> {
    let text = call
        .inputs
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut sentences = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if matches!(c, '。' | '！' | '？' | '.' | '!' | '?') {
            sentences.push(Value::String(std::mem::take(&mut current)));
        }
    }
    if !current.trim().is_empty() {
        sentences.push(Value::String(current));
    }
    object(json!({ "sentences": sentences }))
}

fn take_sentences(call: NodeInvocation) -> Result<Map<String, Value>, String> {
    let length = call
        .inputs
        .get("length")
        .and_then(Value::as_str)
        .unwrap_or("中等");
    let count = call.config["sentencesPerLength"]
        .get(length)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("unknown summary length '{length}'"))?;
    let sentences = call
        .inputs
        .get("sentences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let taken: Vec<Value> = sentences
        .into_iter()
        .take(usize::try_from(count).unwrap())
        .collect();
    Ok(object(json!({ "sentences": taken })))
}

fn join(call: NodeInvocation) -> Map<String, Value> {
    let separator = call
        .inputs
        .get("separator")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let parts: Vec<&str> = call
        .inputs
        .get("parts")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    object(json!({ "text": parts.join(separator) }))
}

/// A reference engine that can run `summarize_text.json`.
pub fn summarizer_engine() -> ReferenceEngine {
    ReferenceEngine::new()
        .with_node("text:SplitSentences", |call| async move {
            Ok(split_sentences(call))
        })
        .with_node("text:TakeSentences", |call| async move {
            take_sentences(call).map_err(Into::into)
        })
        .with_node("text:Join", |call| async move { Ok(join(call)) })
}

/// A service tool definition with a JSON Schema for its parameters.
pub fn service(id: &str, description: &str, parameters: Value) -> tool_schema::ToolDefinition {
    tool_schema::ToolDefinition::new(
        tool_schema::ToolId::parse(id).unwrap(),
        description,
        parameters,
        tool_schema::Implementation::Service,
    )
}

/// The seed's `GetPlayerInfo(player_id)`.
pub fn get_player_info() -> tool_schema::ToolDefinition {
    service(
        "GetPlayerInfo",
        "Looks up a player by id.",
        json!({
            "type": "object",
            "properties": {"player_id": {"type": "string", "description": "The player's id."}},
            "required": ["player_id"]
        }),
    )
}

/// A tool without parameters.
pub fn no_params(id: &str) -> tool_schema::ToolDefinition {
    service(
        id,
        "Takes no parameters.",
        json!({"type": "object", "properties": {}}),
    )
}

/// One step of a scripted model round.
pub enum Step {
    /// Yield this delta.
    Delta(String),
    /// Wait until the sender fires (or is dropped) before going on.
    WaitFor(tokio::sync::oneshot::Receiver<()>),
    /// Fail the stream with this message.
    Fail(&'static str),
    /// Yield this item (reasoning, a native tool-call chunk, a finish reason).
    Item(tool_dispatch::ModelItem),
}

/// A model that plays back scripted rounds and records the messages of each request.
#[derive(Default)]
pub struct ScriptedModel {
    rounds: std::sync::Mutex<std::collections::VecDeque<Vec<Step>>>,
    /// The messages each round was asked with.
    pub requests: std::sync::Mutex<Vec<Vec<tool_dispatch::Message>>>,
    /// The stop sequences each round was asked with.
    pub stops: std::sync::Mutex<Vec<Vec<String>>>,
}

impl ScriptedModel {
    /// Rounds of deltas.
    pub fn new(rounds: Vec<Vec<Step>>) -> Self {
        Self {
            rounds: std::sync::Mutex::new(rounds.into()),
            requests: Default::default(),
            stops: Default::default(),
        }
    }

    /// Rounds given as whole outputs, each split into deltas of `chunk` bytes (at char
    /// boundaries) to exercise the streaming decoder.
    pub fn chunked(outputs: &[&str], chunk: usize) -> Self {
        let rounds = outputs
            .iter()
            .map(|text| {
                let mut steps = Vec::new();
                let mut start = 0;
                while start < text.len() {
                    let mut end = (start + chunk).min(text.len());
                    while !text.is_char_boundary(end) {
                        end += 1;
                    }
                    steps.push(Step::Delta(text[start..end].to_owned()));
                    start = end;
                }
                steps
            })
            .collect();
        Self::new(rounds)
    }
}

impl tool_dispatch::LanguageModel for ScriptedModel {
    fn stream(
        &self,
        request: &tool_dispatch::ModelRequest,
    ) -> futures_util::stream::BoxStream<
        'static,
        Result<tool_dispatch::ModelItem, tool_dispatch::BoxError>,
    > {
        use futures_util::StreamExt;
        self.requests.lock().unwrap().push(request.messages.clone());
        self.stops
            .lock()
            .unwrap()
            .push(request.options.stop.clone());
        let steps = self
            .rounds
            .lock()
            .unwrap()
            .pop_front()
            .expect("the script has no round left");
        futures_util::stream::unfold(steps.into_iter(), |mut steps| async move {
            loop {
                match steps.next()? {
                    Step::Delta(text) => {
                        return Some((Ok(tool_dispatch::ModelItem::Text(text)), steps));
                    }
                    Step::Item(item) => return Some((Ok(item), steps)),
                    Step::WaitFor(signal) => {
                        let _ = signal.await;
                    }
                    Step::Fail(message) => return Some((Err(message.into()), steps)),
                }
            }
        })
        .boxed()
    }
}

/// Runs `agent` to its end on `model` for the user's message `user`, events dropped,
/// bounded against a hang (a stream read past the call never ends), not as a time limit.
pub async fn run_agent(
    agent: &tool_dispatch::Agent,
    model: &ScriptedModel,
    user: &str,
) -> tool_dispatch::AgentOutcome {
    let mut conversation = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(120),
        agent.run(
            model,
            &mut conversation,
            user,
            |_| {},
            &tool_dispatch::CancellationToken::new(),
        ),
    )
    .await
    .expect("the agent's loop ends")
    .unwrap()
}

/// Dispatches one call with a fresh cancellation token.
pub async fn once(
    d: &tool_dispatch::Dispatcher,
    scope: &tool_dispatch::Scope,
    call: tool_dispatch::ToolCall,
) -> tool_dispatch::CallOutcome {
    d.dispatch(scope, call, &tool_dispatch::CancellationToken::new())
        .await
}

/// Registers `system:get_current_time`, which always answers `12:00`.
pub fn register_clock(registry: &mut tool_dispatch::Registry) {
    registry
        .register_fn(no_params("system:get_current_time"), |_| async {
            tool_dispatch::ToolExecutionResult::query_success(json!("12:00"), "now")
        })
        .unwrap();
}

/// The observation lines among `events`.
pub fn observations(events: &[tool_dispatch::AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            tool_dispatch::AgentEvent::Observation(o) => Some(o.as_str()),
            _ => None,
        })
        .collect()
}

/// The prose streamed among `events`, concatenated.
pub fn streamed_text(events: &[tool_dispatch::AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            tool_dispatch::AgentEvent::Decoded(tam::Event::Text { text, .. }) => {
                Some(text.as_ref())
            }
            _ => None,
        })
        .collect()
}
