//! The agent loop end to end: a model that streams TAM tool calls, a registered tool, the
//! observations fed back, and the final answer.
//!
//! ```sh
//! cargo run -p tool-dispatch --example agent_loop
//! ```
//!
//! The model here is a small stand-in that streams its replies in 9-byte deltas and reads
//! the observation it gets back; plug in a real one by implementing [`LanguageModel`] over
//! your client's stream of text deltas. The second run shows a model whose connection
//! drops in the middle of a tool block: that call never runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde_json::json;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, AgentOutcome, BoxError, CancellationToken, Dispatcher, Error,
    FinishReason, LanguageModel, ModelItem, ModelRequest, ProtocolChoice, Registry, Scope,
    ToolExecutionResult,
};
use tool_schema::{Implementation, ToolDefinition, ToolId};

/// A stand-in model: first asks for the weather, then answers from the observation.
struct WeatherModel {
    /// Whether the connection drops in the middle of the first reply's tool block.
    drops: bool,
}

impl LanguageModel for WeatherModel {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        let last = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let reply = if last.contains("Observation:") {
            // Answer from what the tool said (the observation carries its data).
            let celsius = last
                .split("\"celsius\":")
                .nth(1)
                .and_then(|rest| rest.split([',', '}']).next())
                .unwrap_or("?")
                .trim()
                .to_owned();
            format!("It is {celsius} °C in Zürich right now.")
        } else {
            "Let me check.\n<|[REQUEST_TOOL]|>\ncommand:「始」Weather.Get「末」\ncity:「始」Zürich「末」\n<|[END_TOOL]|>\n".to_owned()
        };
        let mut deltas: Vec<Result<ModelItem, BoxError>> = Vec::new();
        let mut rest = reply.as_str();
        while !rest.is_empty() {
            let mut end = rest.len().min(9);
            while !rest.is_char_boundary(end) {
                end += 1;
            }
            deltas.push(Ok(ModelItem::Text(rest[..end].to_owned())));
            rest = &rest[end..];
        }
        if self.drops && !last.contains("Observation:") {
            // The connection drops after the block opened, before its end marker.
            deltas.truncate(deltas.len() / 2);
            deltas.push(Err("connection reset by peer".into()));
        } else {
            deltas.push(Ok(ModelItem::Finish(FinishReason::Stop)));
        }
        stream::iter(deltas).boxed()
    }
}

/// An agent whose one tool counts how often it ran.
fn agent(runs: Arc<AtomicUsize>) -> Result<Agent, Error> {
    let mut registry = Registry::new();
    registry.register_fn(
        ToolDefinition::new(
            ToolId::parse("Weather.Get")?,
            "Current weather of a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            Implementation::Service,
        ),
        move |args| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                ToolExecutionResult::query_success(
                    json!({"city": args["city"], "celsius": 21}),
                    "weather found",
                )
            }
        },
    )?;
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
    let scope = Scope::for_agent(dispatcher.registry(), ["Weather.Get"])?;
    Ok(Agent::with_config(
        dispatcher,
        scope,
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    ))
}

/// Runs one conversation, printing progress; returns the outcome and the tool's run count.
async fn converse(drops: bool) -> (Result<AgentOutcome, Error>, usize) {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = match agent(Arc::clone(&runs)) {
        Ok(agent) => agent,
        Err(e) => return (Err(e), 0),
    };
    let mut conversation = Vec::new();
    let outcome = agent
        .run(
            &WeatherModel { drops },
            &mut conversation,
            "What is the weather in Zürich?",
            |event| match event {
                AgentEvent::RoundStarted { round } => println!("-- round {round}"),
                AgentEvent::Decoded(tam::Event::Text { text, .. }) => print!("{text}"),
                AgentEvent::CallStarted { tool, args } => {
                    println!("[calling {tool} {}]", serde_json::Value::Object(args))
                }
                AgentEvent::Observation(line) => println!("[{line}]"),
                _ => {}
            },
            &CancellationToken::new(),
        )
        .await;
    println!();
    (outcome, runs.load(Ordering::SeqCst))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("== a model that calls a tool, then answers");
    match converse(false).await {
        (Ok(outcome), runs) => println!(
            "answer: {:?} ({:?} after {} rounds; the tool ran {runs} time)",
            outcome.answer, outcome.stop, outcome.rounds
        ),
        (Err(e), _) => println!("error: {e}"),
    }
    println!("== the connection drops in the middle of the tool block");
    match converse(true).await {
        (Ok(outcome), runs) => println!("ended {:?}; the tool ran {runs} times", outcome.stop),
        (Err(e), runs) => println!("error: {e}; the tool ran {runs} times"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_dispatch::StopReason;

    #[tokio::test]
    async fn the_observation_reaches_the_model_and_it_answers() {
        let (outcome, runs) = converse(false).await;
        let outcome = outcome.unwrap();
        assert_eq!(outcome.stop, StopReason::Answer);
        assert_eq!(outcome.answer, "It is 21 °C in Zürich right now.");
        assert_eq!(outcome.rounds, 2);
        assert_eq!(runs, 1);
        assert!(outcome.calls[0].is_success());
    }

    #[tokio::test]
    async fn a_call_cut_by_a_transport_error_never_runs() {
        let (outcome, runs) = converse(true).await;
        assert!(matches!(outcome, Err(Error::Model(_))), "{outcome:?}");
        assert_eq!(runs, 0);
    }
}
