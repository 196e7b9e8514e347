//! The agent loop over TAM: rounds, observations, streaming execution, limits and stops.
#![cfg(feature = "runtime")]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tool_dispatch::ProtocolChoice;

use serde_json::json;
use support::{ScriptedModel, Step, get_player_info, no_params, observations, streamed_text};
use tam::Event;
use tokio_util::sync::CancellationToken;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, AgentOutcome, CallStatus, Dispatcher, Error, FailurePolicy,
    Message, Protocol, Registry, Role, Scope, StopReason, ToolExecutionResult,
};

const LOOKUP: &str = "我查一下玩家信息。\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayerId:「始」player123「末」\n<|[END_TOOL]|>";

fn registry(runs: &Arc<AtomicUsize>) -> Registry {
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
    registry
        .register_fn(no_params("empty_query"), |_| async {
            ToolExecutionResult::empty("query", "未找到符合条件的数据")
        })
        .unwrap();
    registry
}

fn agent(registry: Registry, config: AgentConfig) -> Agent {
    Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    )
}

async fn run(
    agent: &Agent,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
) -> (AgentOutcome, Vec<AgentEvent>) {
    let events = Mutex::new(Vec::new());
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
    .expect("the loop finishes")
    .unwrap();
    (outcome, events.into_inner().unwrap())
}

/// What one scripted run against the standard registry produced.
struct Played {
    outcome: AgentOutcome,
    events: Vec<AgentEvent>,
    conversation: Vec<Message>,
    /// How often `GetPlayerInfo`'s body ran.
    lookups: usize,
    /// The messages each round was asked with.
    requests: Vec<Vec<Message>>,
}

/// Plays `outputs` (one per round, streamed in `chunk`-byte deltas) through an agent over
/// the standard registry.
async fn play(config: AgentConfig, outputs: &[&str], chunk: usize) -> Played {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(registry(&runs), config);
    let model = ScriptedModel::chunked(outputs, chunk);
    let mut conversation = Vec::new();
    let (outcome, events) = run(&agent, &model, &mut conversation).await;
    Played {
        outcome,
        events,
        conversation,
        lookups: runs.load(Ordering::SeqCst),
        requests: model.requests.into_inner().unwrap(),
    }
}

#[tokio::test]
async fn a_plain_answer_ends_the_loop_after_one_round() {
    let played = play(
        AgentConfig::for_protocol(ProtocolChoice::Tam),
        &["The weather is currently sunny and pleasant."],
        7,
    )
    .await;
    assert_eq!(played.outcome.stop, StopReason::Answer);
    assert_eq!(
        played.outcome.answer,
        "The weather is currently sunny and pleasant."
    );
    assert_eq!(played.outcome.rounds, 1);
    let streamed: String = streamed_text(&played.events);
    assert_eq!(streamed, played.outcome.answer);
    assert!(
        played
            .events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Decoded(Event::Text { .. })))
            .count()
            > 1,
        "text streams in pieces"
    );
    assert_eq!(played.conversation.len(), 2);
    assert_eq!(
        played.conversation[1],
        Message::assistant("The weather is currently sunny and pleasant.")
    );
}

#[tokio::test]
async fn tool_descriptions_enter_the_message_list_once() {
    let runs = Arc::default();
    let agent = agent(
        registry(&runs),
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    );
    let model = ScriptedModel::chunked(&["First answer.", "Second answer."], 64);
    let mut conversation = Vec::new();
    run(&agent, &model, &mut conversation).await;
    run(&agent, &model, &mut conversation).await;
    let with_tools: Vec<&Message> = conversation
        .iter()
        .filter(|m| m.content.contains("Available tools:"))
        .collect();
    assert_eq!(with_tools.len(), 1);
    assert_eq!(
        with_tools[0].content,
        format!("Who is player123?\n\n{}", agent.tool_descriptions())
    );
    assert!(
        agent
            .tool_descriptions()
            .contains("- Tool ID: GetPlayerInfo"),
        "{}",
        agent.tool_descriptions()
    );
    assert_eq!(conversation[2], Message::user("Who is player123?"));
    let requests = model.requests.lock().unwrap();
    assert_eq!(
        requests[1].len(),
        3,
        "the second run sees the first run's messages"
    );
}

#[tokio::test]
async fn a_block_is_executed_and_its_observation_feeds_the_next_round() {
    let played = play(
        AgentConfig::for_protocol(ProtocolChoice::Tam),
        &[LOOKUP, "The player is Alice."],
        5,
    )
    .await;
    assert_eq!(played.outcome.stop, StopReason::Answer);
    assert_eq!(played.outcome.rounds, 2);
    assert_eq!(played.outcome.answer, "The player is Alice.");
    assert_eq!(played.lookups, 1);
    let observation =
        "Observation: Tool GetPlayerInfo executed successfully. Result: Alice (player123)";
    assert_eq!(observations(&played.events), [observation]);
    let roles: Vec<Role> = played.conversation.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    assert_eq!(
        played.conversation[1].content, LOOKUP,
        "the assistant message is the raw output"
    );
    assert_eq!(played.conversation[2].content, observation);
    assert_eq!(played.requests[1].last(), Some(&Message::user(observation)));
}

#[tokio::test]
async fn a_blocks_calls_start_before_the_model_stream_ends() {
    let (fired, signal) = tokio::sync::oneshot::channel::<()>();
    let fired = Mutex::new(Some(fired));
    let mut registry = Registry::new();
    registry
        .register_fn(no_params("ping"), move |_| {
            // The model's stream is parked until this runs: if calls waited for the end of
            // the stream, the loop would never finish.
            if let Some(tx) = fired.lock().unwrap().take() {
                let _ = tx.send(());
            }
            async { ToolExecutionResult::success("operation", json!("pong"), "sent") }
        })
        .unwrap();
    let model = ScriptedModel::new(vec![
        vec![
            Step::Delta(
                "Pinging.\n<|[REQUEST_TOOL]|>\ncommand:「始」ping「末」\n<|[END_TOOL]|>".into(),
            ),
            Step::WaitFor(signal),
            Step::Delta("\nStill streaming after the call ran.".into()),
        ],
        vec![Step::Delta("Done.".into())],
    ]);
    let mut conversation = Vec::new();
    // The stream read to its end (with the turn ending at the call it is closed instead).
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.end_turn_at_call = false;
    let (outcome, events) = run(&agent(registry, config), &model, &mut conversation).await;
    assert_eq!(outcome.stop, StopReason::Answer);
    let finished = events
        .iter()
        .position(|e| matches!(e, AgentEvent::CallFinished(_)))
        .unwrap();
    let late_text = events
        .iter()
        .position(|e| matches!(e, AgentEvent::Decoded(Event::Text { text, .. }) if text.contains("Still streaming")))
        .unwrap();
    assert!(
        finished < late_text,
        "the call finished before the rest of the stream arrived: {events:#?}"
    );
}

#[tokio::test]
async fn block_started_arrives_while_the_block_is_still_being_written() {
    let (opened, signal) = tokio::sync::oneshot::channel::<()>();
    let opened = Mutex::new(Some(opened));
    let mut registry = Registry::new();
    registry
        .register_fn(no_params("ping"), |_| async {
            ToolExecutionResult::success("operation", json!("pong"), "sent")
        })
        .unwrap();
    // The model stops after the start marker until the UI has seen `BlockStarted`: were
    // the event held back until the block closed, the run would never finish.
    let model = ScriptedModel::new(vec![
        vec![
            Step::Delta("Pinging.\n<|[REQUEST_".into()),
            Step::Delta("TOOL]|>\ncomm".into()),
            Step::WaitFor(signal),
            Step::Delta("and:「始」ping「末」\n<|[END_TOOL]|>".into()),
        ],
        vec![Step::Delta("Done.".into())],
    ]);
    let events = Mutex::new(Vec::new());
    let agent = agent(registry, AgentConfig::for_protocol(ProtocolChoice::Tam));
    let mut conversation = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(
            &model,
            &mut conversation,
            "Ping.",
            |e| {
                if matches!(e, AgentEvent::Decoded(Event::BlockStart { .. }))
                    && let Some(tx) = opened.lock().unwrap().take()
                {
                    let _ = tx.send(());
                }
                events.lock().unwrap().push(e);
            },
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("BlockStarted was sent before the block closed")
    .unwrap();
    assert_eq!(outcome.stop, StopReason::Answer);
    let events = events.into_inner().unwrap();
    let started: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Decoded(Event::BlockStart { .. })))
        .collect();
    assert_eq!(
        started,
        [&AgentEvent::Decoded(Event::BlockStart {
            protocol: Protocol::Tam,
            span: tam::Span::new(9, 27),
        })]
    );
}

#[tokio::test]
async fn events_arrive_in_order_for_a_ui() {
    let played = play(
        AgentConfig::for_protocol(ProtocolChoice::Tam),
        &[LOOKUP, "Alice."],
        9,
    )
    .await;
    let kinds: Vec<&str> = played
        .events
        .iter()
        .map(|e| match e {
            AgentEvent::RoundStarted { .. } => "round",
            AgentEvent::Decoded(Event::Text { .. }) => "text",
            AgentEvent::Decoded(Event::BlockStart { .. }) => "opened",
            AgentEvent::BlockClosed { .. } => "block",
            AgentEvent::CallStarted { .. } => "start",
            AgentEvent::CallFinished(_) => "finish",
            AgentEvent::Observation(_) => "observation",
            AgentEvent::Decoded(e) if e.is_argument_event() => "arguments",
            AgentEvent::Decoded(Event::CommandSeen { .. }) => "arguments",
            _ => "other",
        })
        .collect();
    let mut deduped = kinds.clone();
    deduped.dedup();
    assert_eq!(
        deduped,
        [
            "round",
            "text",
            "opened",
            "arguments",
            "block",
            "start",
            "finish",
            "observation",
            "round",
            "text"
        ]
    );
    let Some(AgentEvent::CallStarted { tool, args }) = played
        .events
        .iter()
        .find(|e| matches!(e, AgentEvent::CallStarted { .. }))
    else {
        unreachable!()
    };
    assert_eq!(
        (tool.as_str(), args),
        (
            "GetPlayerInfo",
            &support::object(json!({"playerId": "player123"}))
        )
    );
}

#[tokio::test]
async fn chained_calls_run_in_order_and_stop_at_the_first_failure() {
    let chain = "<|[REQUEST_TOOL]|>\ncommand2:「始」GetPlayerInfo「末」\nplayer_id2:「始」p2「末」\ncommand1:「始」empty_query「末」\n<|[END_TOOL]|>";
    let played = play(
        AgentConfig::for_protocol(ProtocolChoice::Tam),
        &[chain, "TOOL_EXECUTION_FAILED"],
        11,
    )
    .await;
    assert_eq!(played.outcome.stop, StopReason::ToolExecutionFailed);
    assert_eq!(played.lookups, 0, "call 2 is skipped after call 1 failed");
    assert_eq!(
        observations(&played.events),
        [
            "Observation: Error - Tool empty_query failed: 未找到符合条件的数据",
            "Observation: Error - GetPlayerInfo was not executed because an earlier call in the same block failed",
        ]
    );
    assert_eq!(
        played
            .outcome
            .calls
            .iter()
            .map(|c| c.status.clone())
            .collect::<Vec<_>>(),
        [CallStatus::Completed, CallStatus::Skipped]
    );
}

#[tokio::test]
async fn the_stop_failure_policy_ends_the_loop_after_a_failed_round() {
    let block = "<|[REQUEST_TOOL]|>\ncommand:「始」empty_query「末」\n<|[END_TOOL]|>";
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.failure_policy = FailurePolicy::Stop;
    let played = play(config, &[block], 64).await;
    assert_eq!(played.outcome.stop, StopReason::ToolFailed);
    assert_eq!(played.outcome.rounds, 1);
    assert_eq!(
        played.conversation.last().unwrap().content,
        "Observation: Error - Tool empty_query failed: 未找到符合条件的数据"
    );
}

#[tokio::test]
async fn max_tool_calls_refuses_the_extra_calls_and_ends_the_loop() {
    let three = "<|[REQUEST_TOOL]|>\ncommand1:「始」GetPlayerInfo「末」\nplayer_id1:「始」a「末」\ncommand2:「始」GetPlayerInfo「末」\nplayer_id2:「始」b「末」\ncommand3:「始」GetPlayerInfo「末」\nplayer_id3:「始」c「末」\n<|[END_TOOL]|>";
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.max_tool_calls = 2;
    let played = play(config, &[three], 16).await;
    assert_eq!(played.outcome.stop, StopReason::MaxToolCalls);
    assert_eq!(played.lookups, 2);
    assert_eq!(
        observations(&played.events)[2],
        "Observation: Error - Tool call limit reached (maxToolCalls = 2); GetPlayerInfo was not executed"
    );
}

#[tokio::test]
async fn the_call_limit_counts_across_rounds() {
    let one = "<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」a「末」\n<|[END_TOOL]|>";
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.max_tool_calls = 2;
    let played = play(config, &[one, one, one], 64).await;
    assert_eq!(
        (played.outcome.stop, played.outcome.rounds),
        (StopReason::MaxToolCalls, 3)
    );
    assert_eq!(played.lookups, 2);
}

#[tokio::test]
async fn a_call_outside_the_agents_scope_is_refused_and_never_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let scope = Scope::for_agent(&registry, ["empty_query"]).unwrap();
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        scope,
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    );
    let block = "<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」a「末」\n<|[END_TOOL]|>";
    let model = ScriptedModel::chunked(&[block, "I cannot look that up."], 64);
    let mut conversation = Vec::new();
    let (outcome, events) = run(&agent, &model, &mut conversation).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(outcome.calls[0].status, CallStatus::OutOfScope);
    assert_eq!(
        observations(&events),
        ["Observation: Error - Tool 'GetPlayerInfo' is not in the list of tools available here"]
    );
    assert!(
        !conversation[0].content.contains("GetPlayerInfo"),
        "only the scope's tools are described"
    );
}

#[tokio::test]
async fn an_unterminated_block_is_reported_to_the_model() {
    let broken = "Let me look.\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」a「末」\n";
    let played = play(
        AgentConfig::for_protocol(ProtocolChoice::Tam),
        &[broken, "Sorry."],
        8,
    )
    .await;
    assert_eq!(played.outcome.stop, StopReason::Answer);
    assert_eq!(played.lookups, 0);
    let seen = observations(&played.events);
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].starts_with(
            "Observation: Error - Unterminated TAM block (no end marker), not executed: "
        ),
        "{seen:?}"
    );
    assert!(played.events.iter().any(
        |e| matches!(e, AgentEvent::Decoded(Event::Diagnostic(d)) if d.code.as_str() == "unterminated_block")
    ));
}

#[tokio::test]
async fn a_block_with_only_broken_entries_gets_error_observations() {
    let orphan = "<|[REQUEST_TOOL]|>\ncommand1:「始」GetPlayerInfo「末」\nplayer_id1:「始」a「末」\nzone3:「始」north「末」\n<|[END_TOOL]|>";
    let played = play(
        AgentConfig::for_protocol(ProtocolChoice::Tam),
        &[orphan, "ok"],
        64,
    )
    .await;
    let seen = observations(&played.events);
    assert!(
        seen[0].starts_with("Observation: Error - Invalid tool block (orphan_parameter): "),
        "{seen:?}"
    );
    assert_eq!(
        seen[1],
        "Observation: Tool GetPlayerInfo executed successfully. Result: Alice (a)"
    );
}

#[tokio::test]
async fn a_model_that_never_answers_stops_at_max_rounds() {
    // A block with an entry but no command (a block holding no entry at all is prose).
    let empty_block = "<|[REQUEST_TOOL]|>\ncity:「始」Paris「末」\n<|[END_TOOL]|>";
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.max_rounds = 3;
    let played = play(config, &[empty_block, empty_block, empty_block], 64).await;
    assert_eq!(
        (played.outcome.stop, played.outcome.rounds),
        (StopReason::MaxRounds, 3)
    );
    assert_eq!(
        observations(&played.events).len(),
        3,
        "each missing_command error is fed back"
    );
}

#[tokio::test]
async fn a_model_error_is_returned_after_closed_blocks_ran() {
    let runs = Arc::new(AtomicUsize::new(0));
    let block = "<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nplayer_id:「始」a「末」\n<|[END_TOOL]|>";
    let model = ScriptedModel::new(vec![vec![
        Step::Delta(block.into()),
        Step::Fail("connection reset"),
    ]]);
    // The stream read past the block (with the turn ending at the call it is closed there).
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.end_turn_at_call = false;
    let agent = agent(registry(&runs), config);
    let err = agent
        .run(
            &model,
            &mut Vec::new(),
            "hi",
            |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Model(_)));
    assert_eq!(
        err.to_string(),
        "language model stream failed: connection reset"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancellation_stops_a_streaming_round() {
    let runs = Arc::default();
    let (_never, parked) = tokio::sync::oneshot::channel::<()>();
    let model = ScriptedModel::new(vec![vec![
        Step::Delta("Thinking".into()),
        Step::WaitFor(parked),
    ]]);
    let agent = agent(
        registry(&runs),
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    );
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let mut conversation = Vec::new();
    let outcome = agent
        .run(
            &model,
            &mut conversation,
            "hi",
            move |e| {
                if matches!(e, AgentEvent::Decoded(Event::Text { .. })) {
                    canceller.cancel();
                }
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, StopReason::Cancelled);
    assert_eq!(outcome.answer, "Thinking");
    assert_eq!(conversation.last(), Some(&Message::assistant("Thinking")));
}

#[tokio::test]
async fn an_llm_node_brings_its_scope_limit_and_template() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dispatcher = Dispatcher::new(registry(&runs), ReferenceEngine::new());
    let workflow = tool_dispatch::AvailableTools {
        initial: vec!["empty_query".into()],
    };
    let node: tool_dispatch::LlmNodeConfig = serde_json::from_value(json!({
        "maxToolCalls": 1,
        "dynamicTools": {"toolIds": ["GetPlayerInfo"], "descriptionTemplate": "工具 {toolName}: {toolDescription}"}
    }))
    .unwrap();
    let agent = Agent::for_llm_node(
        dispatcher,
        &workflow,
        &node,
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    )
    .unwrap();
    assert_eq!(
        agent.tool_descriptions(),
        "Available tools:\n工具 GetPlayerInfo: Looks up a player by id.\n工具 empty_query: Takes no parameters."
    );
    assert_eq!(agent.config().max_tool_calls, 1);
    let two = "<|[REQUEST_TOOL]|>\ncommand1:「始」GetPlayerInfo「末」\nplayer_id1:「始」a「末」\ncommand2:「始」GetPlayerInfo「末」\nplayer_id2:「始」b「末」\n<|[END_TOOL]|>";
    let model = ScriptedModel::chunked(&[two], 64);
    let (outcome, _) = run(&agent, &model, &mut Vec::new()).await;
    assert_eq!(outcome.stop, StopReason::MaxToolCalls);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_can_be_spawned_on_a_multi_thread_runtime() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(
        registry(&runs),
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    );
    let model = ScriptedModel::chunked(&[LOOKUP, "Alice."], 3);
    let task = tokio::spawn(async move {
        let mut conversation = Vec::new();
        let outcome = agent
            .run(
                &model,
                &mut conversation,
                "Who?",
                |_| {},
                &CancellationToken::new(),
            )
            .await;
        (outcome, conversation.len())
    });
    let (outcome, messages) = task.await.unwrap();
    assert_eq!(outcome.unwrap().stop, StopReason::Answer);
    assert_eq!(messages, 4);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
