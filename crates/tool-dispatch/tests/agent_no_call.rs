//! A call the model did not finish never runs (docs/protocol/tam.md §6, action-xml.md
//! §8), through `Agent::run`, for both protocols: a marker mentioned in prose, a block left
//! open at the end of the reply, a reply cut at the token limit (`finish_reason: length`)
//! even where the end-of-stream repair would have completed the block, and a transport
//! error mid-block. The tool records every run.
#![cfg(feature = "runtime")]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::{ScriptedModel, Step, observations, service, streamed_text};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, CancellationToken, Dispatcher, Error, FinishReason, ModelItem,
    ProtocolChoice, Registry, Scope, StopReason, StreamCut, ToolExecutionResult,
};

const TAM_BLOCK: &str =
    "<|[REQUEST_TOOL]|>\ncommand:「始」Record「末」\nnote:「始」hello「末」\n<|[END_TOOL]|>";
const ACTION_BLOCK: &str = "<ACTION>\n  <Record>\n    <note>hello</note>\n  </Record>\n</ACTION>";

fn agent(protocol: ProtocolChoice, runs: &Arc<AtomicUsize>) -> Agent {
    let mut registry = Registry::new();
    let runs = Arc::clone(runs);
    registry
        .register_fn(
            service(
                "Record",
                "Records a note.",
                json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}),
            ),
            move |_| {
                runs.fetch_add(1, Ordering::SeqCst);
                async { ToolExecutionResult::save_success(Value::Null, "recorded") }
            },
        )
        .unwrap();
    Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        AgentConfig::for_protocol(protocol),
    )
}

/// One round of `text` in deltas of `chunk` bytes, then `end` steps.
fn round(text: &str, chunk: usize, end: Vec<Step>) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut stop = (start + chunk).min(text.len());
        while !text.is_char_boundary(stop) {
            stop += 1;
        }
        steps.push(Step::Delta(text[start..stop].to_owned()));
        start = stop;
    }
    steps.extend(end);
    steps
}

struct Run {
    result: Result<tool_dispatch::AgentOutcome, Error>,
    events: Vec<AgentEvent>,
    runs: usize,
}

/// Runs the agent over `rounds` with every delta size in `chunks`; the run must be the
/// same for each (checked on the runs and the stop), and is returned for the last.
async fn run(protocol: ProtocolChoice, rounds: impl Fn(usize) -> Vec<Vec<Step>>) -> Run {
    let mut last = None;
    for chunk in [1, 3, 7, 1000] {
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = agent(protocol, &runs);
        let model = ScriptedModel::new(rounds(chunk));
        let events = Mutex::new(Vec::new());
        let mut conversation = Vec::new();
        let result = tokio::time::timeout(
            Duration::from_secs(120),
            agent.run(
                &model,
                &mut conversation,
                "Record hello.",
                |e| events.lock().unwrap().push(e),
                &CancellationToken::new(),
            ),
        )
        .await
        .expect("the run ends");
        let run = Run {
            result,
            events: events.into_inner().unwrap(),
            runs: runs.load(Ordering::SeqCst),
        };
        if let Some(previous) = &last {
            let previous: &Run = previous;
            assert_eq!(run.runs, previous.runs, "chunk {chunk}");
            assert_eq!(
                run.result.as_ref().map(|o| o.stop).ok(),
                previous.result.as_ref().map(|o| o.stop).ok(),
                "chunk {chunk}"
            );
        }
        last = Some(run);
    }
    last.unwrap()
}

fn no_call_started(events: &[AgentEvent]) -> bool {
    !events
        .iter()
        .any(|e| matches!(e, AgentEvent::CallStarted { .. }))
}

/// A prose mention in `protocol` starts no call.
async fn check_prose_mention(protocol: ProtocolChoice, text: &str) {
    // A second round in case the decoder reports the mention as an error.
    let run = run(protocol, |chunk| {
        vec![round(text, chunk, vec![]), round("Done.", chunk, vec![])]
    })
    .await;
    assert_eq!(run.runs, 0, "{protocol:?}");
    assert!(
        no_call_started(&run.events),
        "{protocol:?}: {:?}",
        run.events
    );
    assert!(run.result.is_ok(), "{protocol:?}");
}

#[tokio::test]
async fn a_tam_marker_mentioned_in_prose_runs_no_call() {
    let text = "To call a tool, write <|[REQUEST_TOOL]|> and then the entries.";
    check_prose_mention(ProtocolChoice::Tam, text).await;
    check_prose_mention(ProtocolChoice::Auto, text).await;
}

/// An `<ACTION>` block holding no complete call element is a prose mention; the
/// current ACTION decoder repairs it into a call of `Record` (refused: no `note`).
#[tokio::test]
async fn an_action_tag_mentioned_in_prose_starts_no_call() {
    let text = "I write an <ACTION> block with a tag such as <Record> inside.";
    check_prose_mention(ProtocolChoice::Action, text).await;
    check_prose_mention(ProtocolChoice::Auto, text).await;
}

/// The unclosed mention's bytes come out as text with `marker_in_prose`.
#[tokio::test]
async fn a_marker_mentioned_in_prose_comes_out_as_text() {
    for (protocol, text) in [
        (
            ProtocolChoice::Tam,
            "To call a tool, write <|[REQUEST_TOOL]|> and then the entries.",
        ),
        (
            ProtocolChoice::Action,
            "I write an <ACTION> block with a tag such as <Record> inside.",
        ),
    ] {
        let run = run(protocol, |chunk| vec![round(text, chunk, vec![])]).await;
        assert_eq!(streamed_text(&run.events), text, "{protocol:?}");
        assert_eq!(run.result.unwrap().stop, StopReason::Answer);
    }
}

/// A block left open at the end of the reply, in `protocol`, runs no call and the model
/// is told.
async fn check_open_block(protocol: ProtocolChoice, open: &str) {
    let text = format!("Recording now.\n{open}");
    let run = run(protocol, |chunk| {
        vec![
            round(&text, chunk, vec![]),
            round("Sorry, I stopped early.", chunk, vec![]),
        ]
    })
    .await;
    assert_eq!(run.runs, 0, "{protocol:?}: {text}");
    assert!(no_call_started(&run.events));
    let observed = observations(&run.events);
    assert!(
        observed.iter().any(|o| o.contains("Error")),
        "{protocol:?}: the model is told: {observed:?}"
    );
}

#[tokio::test]
async fn a_tam_block_left_open_at_the_end_of_the_reply_runs_no_call() {
    let open = &TAM_BLOCK[..TAM_BLOCK.rfind('<').unwrap()];
    check_open_block(ProtocolChoice::Tam, open).await;
    check_open_block(ProtocolChoice::Auto, open).await;
}

/// A call element still open at the end of the stream (cut mid-call) yields no
/// call; the current ACTION decoder repairs it.
#[tokio::test]
async fn an_action_call_left_open_at_the_end_of_the_reply_runs_no_call() {
    let open = "<ACTION>\n  <Record>\n    <note>hello</note>\n";
    check_open_block(ProtocolChoice::Action, open).await;
    check_open_block(ProtocolChoice::Auto, open).await;
}

#[tokio::test]
async fn a_reply_cut_at_the_token_limit_runs_no_call_even_where_a_repair_would() {
    // Every call element closed, only `</ACTION>` missing: at a normal end the ACTION
    // decoder repairs this block (`missing_close_tag`); a cut stream gets no repair.
    let action_cut = &ACTION_BLOCK[..ACTION_BLOCK.rfind('<').unwrap()];
    let tam_cut = &TAM_BLOCK[..TAM_BLOCK.rfind('<').unwrap()];
    for (protocol, text) in [
        (ProtocolChoice::Tam, tam_cut),
        (ProtocolChoice::Action, action_cut),
        (ProtocolChoice::Auto, tam_cut),
        (ProtocolChoice::Auto, action_cut),
    ] {
        let text = format!("Recording now.\n{text}");
        let run = run(protocol, |chunk| {
            vec![
                round(
                    &text,
                    chunk,
                    vec![Step::Item(ModelItem::Finish(FinishReason::Length))],
                ),
                round("I ran out of room.", chunk, vec![]),
            ]
        })
        .await;
        assert_eq!(run.runs, 0, "{protocol:?}: {text}");
        assert!(no_call_started(&run.events));
        assert!(
            run.events
                .contains(&AgentEvent::StreamCut(StreamCut::Length))
        );
        let observed = observations(&run.events);
        assert!(
            observed
                .iter()
                .any(|o| o.contains("cut at the token limit")),
            "{observed:?}"
        );
        let outcome = run.result.unwrap();
        assert_eq!(outcome.stop, StopReason::Answer);
        assert_eq!(outcome.rounds, 2);
    }
}

#[tokio::test]
async fn a_transport_error_mid_block_runs_no_call() {
    let action_cut = &ACTION_BLOCK[..ACTION_BLOCK.rfind('<').unwrap()];
    let tam_cut = &TAM_BLOCK[..TAM_BLOCK.rfind('<').unwrap()];
    for (protocol, text) in [
        (ProtocolChoice::Tam, tam_cut),
        (ProtocolChoice::Action, action_cut),
    ] {
        let text = format!("Recording now.\n{text}");
        let run = run(protocol, |chunk| {
            vec![round(&text, chunk, vec![Step::Fail("connection reset")])]
        })
        .await;
        assert_eq!(run.runs, 0, "{protocol:?}");
        assert!(no_call_started(&run.events));
        assert!(matches!(run.result, Err(Error::Model(_))));
        assert!(run.events.iter().any(|e| matches!(
            e,
            AgentEvent::StreamCut(StreamCut::Transport(message)) if message == "connection reset"
        )));
    }
}

#[tokio::test]
async fn a_block_closed_before_a_cut_still_runs() {
    for (protocol, block) in [
        (ProtocolChoice::Tam, TAM_BLOCK),
        (ProtocolChoice::Action, ACTION_BLOCK),
    ] {
        let text = format!("{block}\nAnd now I explain at len");
        let run = run(protocol, |chunk| {
            vec![
                round(
                    &text,
                    chunk,
                    vec![Step::Item(ModelItem::Finish(FinishReason::Length))],
                ),
                round("Recorded.", chunk, vec![]),
            ]
        })
        .await;
        assert_eq!(run.runs, 1, "{protocol:?}");
        assert_eq!(run.result.unwrap().stop, StopReason::Answer);
    }
}

#[tokio::test]
async fn think_tags_split_out_as_reasoning_whatever_the_deltas() {
    let text = format!("<think>I could write {TAM_BLOCK} now.</think>Nothing to do.");
    let run = run(ProtocolChoice::Tam, |chunk| {
        vec![round(&text, chunk, vec![])]
    })
    .await;
    assert_eq!(run.runs, 0);
    assert_eq!(streamed_text(&run.events), "Nothing to do.");
    let reasoning: String = run
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Reasoning(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, format!("I could write {TAM_BLOCK} now."));
}
