//! The model's turn ends at its call (docs/protocol/tam.md §8): the agent asks the model
//! to stop at the protocol's end marker, stops reading the stream once a block with calls
//! has closed, and never shows, records or runs what the model wrote after it — with a
//! model that ignores the stop sequence and with one that honours it.
#![cfg(feature = "runtime")]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::{ScriptedModel, Step, get_player_info};
use tokio_util::sync::CancellationToken;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, AgentOutcome, Dispatcher, FinishReason, Message, ModelItem,
    ProtocolChoice, Registry, Role, Scope, ToolExecutionResult,
};

const TAM_LOOKUP: &str = "Looking it up.\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」player123「末」\n<|[END_TOOL]|>";
const ACTION_LOOKUP: &str = "Looking it up.\n<ACTION>\n<GetPlayerInfo>\n<player_id>player123</player_id>\n</GetPlayerInfo>\n</ACTION>";
/// What a small model wrote after its call: an invented result, then a call built on it.
const INVENTED_TAM: &str = "\nObservation: Tool GetPlayerInfo executed successfully. Result: {\"name\": \"John Doe\"}\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」John Doe「末」\n<|[END_TOOL]|>";
const INVENTED_ACTION: &str = "\nObservation: Tool GetPlayerInfo executed successfully. Result: {\"name\": \"John Doe\"}\n<ACTION><GetPlayerInfo><player_id>John Doe</player_id></GetPlayerInfo></ACTION>";

fn agent(protocol: ProtocolChoice, runs: &Arc<AtomicUsize>) -> Agent {
    let mut registry = Registry::new();
    let runs = Arc::clone(runs);
    registry
        .register_fn(get_player_info(), move |args| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                ToolExecutionResult::query_success(
                    json!(format!("Alice ({})", args["player_id"].as_str().unwrap())),
                    "found",
                )
            }
        })
        .unwrap();
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.decoder.protocol = protocol;
    Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    )
}

fn deltas(text: &str, size: usize) -> Vec<Step> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size)
        .map(|c| Step::Delta(c.iter().collect()))
        .collect()
}

async fn run(
    agent: &Agent,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
) -> (AgentOutcome, Vec<AgentEvent>) {
    let events = Mutex::new(Vec::new());
    // A bound against a hang (a stream read past the call never ends), not a time limit.
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(
            model,
            conversation,
            "Who is player123?",
            |e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the agent stopped reading at the call")
    .unwrap();
    (outcome, events.into_inner().unwrap())
}

fn shown_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Decoded(tam::Event::Text { text, .. }) => Some(text.as_ref()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn what_a_model_invents_after_its_call_is_never_shown_recorded_or_run() {
    for (protocol, call, invented, marker) in [
        (
            ProtocolChoice::Tam,
            TAM_LOOKUP,
            INVENTED_TAM,
            "<|[END_TOOL]|>",
        ),
        (
            ProtocolChoice::Action,
            ACTION_LOOKUP,
            INVENTED_ACTION,
            "</ACTION>",
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = agent(protocol, &runs);
        // The model ignores the stop sequence and writes on; then its stream would never
        // end (the sender is kept): only an agent that stops reading finishes the round.
        let (_never, hang) = tokio::sync::oneshot::channel::<()>();
        let mut round = deltas(&format!("{call}{invented}"), 3);
        round.push(Step::WaitFor(hang));
        let model = ScriptedModel::new(vec![round, deltas("It is Alice.", 4)]);
        let mut conversation = Vec::new();
        let (outcome, events) = run(&agent, &model, &mut conversation).await;

        assert_eq!(runs.load(Ordering::SeqCst), 1, "{protocol:?}");
        assert_eq!(outcome.calls.len(), 1);
        assert_eq!(
            outcome.calls[0].result.data,
            Some(json!("Alice (player123)"))
        );
        assert_eq!(outcome.answer, "It is Alice.");
        let shown = shown_text(&events);
        assert!(!shown.contains("John Doe"), "{protocol:?}: {shown}");
        assert!(!shown.contains("Observation"), "{protocol:?}: {shown}");
        // The conversation holds the reply up to its block, then the real observation.
        let assistant = &conversation[1];
        assert_eq!(assistant.role, Role::Assistant);
        assert_eq!(assistant.content, call, "{protocol:?}");
        assert!(conversation[2].content.contains("Alice (player123)"));
        // Every request asks the model to stop at the end marker.
        for stop in model.stops.lock().unwrap().iter() {
            assert_eq!(
                stop.first().map(String::as_str),
                Some(marker),
                "{protocol:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_reply_stopped_at_the_end_marker_runs_its_call() {
    for (protocol, call, marker) in [
        (ProtocolChoice::Tam, TAM_LOOKUP, "<|[END_TOOL]|>"),
        (ProtocolChoice::Action, ACTION_LOOKUP, "</ACTION>"),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = agent(protocol, &runs);
        // A server that honours `stop`: the reply ends where the marker would begin.
        let mut round = deltas(call.strip_suffix(marker).unwrap(), 5);
        round.push(Step::Item(ModelItem::Finish(FinishReason::Stop)));
        let model = ScriptedModel::new(vec![round, deltas("It is Alice.", 4)]);
        let mut conversation = Vec::new();
        let (outcome, _) = run(&agent, &model, &mut conversation).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{protocol:?}");
        assert_eq!(outcome.calls.len(), 1);
        // The block is recorded as the model wrote it, closed by its marker.
        assert_eq!(conversation[1].content, call, "{protocol:?}");
    }
}

/// The shape the e2e model gave for several calls in TAM when asked without `stop`: one
/// block per call, separated by a blank line only (BFCL `parallel_multiple_110`). The turn
/// ends at the first block with calls: the second block is not shown, recorded
/// or run.
#[tokio::test]
async fn a_run_of_blocks_runs_the_first_blocks_call_only() {
    let second = "\n\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」player456「末」\n<|[END_TOOL]|>";
    for size in [1, 3, 16, 10_000] {
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = agent(ProtocolChoice::Tam, &runs);
        let (_never, hang) = tokio::sync::oneshot::channel::<()>();
        let mut round = deltas(&format!("{TAM_LOOKUP}{second}"), size);
        round.push(Step::WaitFor(hang));
        let model = ScriptedModel::new(vec![round, deltas("It is Alice.", 4)]);
        let mut conversation = Vec::new();
        let (outcome, events) = run(&agent, &model, &mut conversation).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "split {size}");
        assert_eq!(outcome.calls.len(), 1);
        assert_eq!(
            outcome.calls[0].result.data,
            Some(json!("Alice (player123)"))
        );
        let shown = shown_text(&events);
        assert!(!shown.contains("player456"), "split {size}: {shown}");
        assert_eq!(conversation[1].content, TAM_LOOKUP, "split {size}");
    }
}

#[tokio::test]
async fn a_prose_mention_stopped_at_the_marker_is_prose_without_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(ProtocolChoice::Tam, &runs);
    let text = "To call a tool I write <|[REQUEST_TOOL]|> and then entries.";
    let mut round = deltas(text, 6);
    round.push(Step::Item(ModelItem::Finish(FinishReason::Stop)));
    let model = ScriptedModel::new(vec![round]);
    let mut conversation = Vec::new();
    let (outcome, events) = run(&agent, &model, &mut conversation).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(outcome.calls.is_empty());
    assert_eq!(shown_text(&events), text);
}

/// A reply that merely mentions a start marker and ends by itself finishes with `stop`,
/// as one stopped at the end marker does; without the server saying it stopped there, the
/// block is closed only where it can end (its last entry or call element complete): the
/// mention runs nothing, in either protocol, however it is split. A server that names the
/// marker as where it stopped (vLLM's `stop_reason`) has its block closed there.
#[tokio::test]
async fn a_mention_that_ends_by_itself_runs_nothing() {
    for (protocol, text) in [
        (
            ProtocolChoice::Tam,
            "To call it you write <|[REQUEST_TOOL]|> then command:「始」GetPlayerInfo「末」 and the arguments; I will not call it now. The answer is 42.",
        ),
        (
            ProtocolChoice::Action,
            "An ACTION block looks like <ACTION><GetPlayerInfo> with a player_id inside; I will not call it. The answer is 42.",
        ),
    ] {
        for size in [1, 4, 10_000] {
            let runs = Arc::new(AtomicUsize::new(0));
            let agent = agent(protocol, &runs);
            let mut round = deltas(text, size);
            round.push(Step::Item(ModelItem::Finish(FinishReason::Stop)));
            // A block that never closed holding a complete entry is an error the agent
            // tells the model about: it gets a second round.
            let model = ScriptedModel::new(vec![round, deltas("The answer is 42.", 4)]);
            let mut conversation = Vec::new();
            let (outcome, _) = run(&agent, &model, &mut conversation).await;
            assert_eq!(runs.load(Ordering::SeqCst), 0, "{protocol:?} {size}");
            assert!(outcome.calls.is_empty(), "{protocol:?} {size}");
        }
    }
    // The server names the sequence it stopped at: the marker closes the block.
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(ProtocolChoice::Action, &runs);
    let unfinished =
        "Looking it up.\n<ACTION>\n<GetPlayerInfo>\n<player_id>player123</player_id>\n";
    let mut round = deltas(unfinished, 5);
    round.push(Step::Item(ModelItem::StopSequence("</ACTION>".into())));
    round.push(Step::Item(ModelItem::Finish(FinishReason::Stop)));
    let model = ScriptedModel::new(vec![round, deltas("It is Alice.", 4)]);
    let mut conversation = Vec::new();
    let (outcome, _) = run(&agent, &model, &mut conversation).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(outcome.calls.len(), 1);
}
