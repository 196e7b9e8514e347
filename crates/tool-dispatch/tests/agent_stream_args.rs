//! One front door. The agent streams both protocols' arguments as
//! `AgentEvent`s, gives each decoded call a stable id, and coerces an ACTION parameter
//! declared a string from the element's raw text (docs/protocol/action-xml.md §5).
#![cfg(feature = "runtime")]

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use support::{ScriptedModel, service};
use tam::Event;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, CancellationToken, Dispatcher, Protocol, ProtocolChoice,
    Registry, Scope, ToolCall, ToolExecutionResult,
};

type Received = Arc<Mutex<Vec<Map<String, Value>>>>;

fn write_tool(registry: &mut Registry) -> Received {
    let received = Received::default();
    let log = Arc::clone(&received);
    let definition = service(
        "write",
        "Writes a file.",
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"}
        }, "required": ["path", "content"]}),
    );
    registry
        .register_fn(definition, move |args| {
            log.lock().unwrap().push(args);
            async { ToolExecutionResult::query_success(json!("ok"), "written") }
        })
        .unwrap();
    received
}

async fn run(
    protocol: ProtocolChoice,
    outputs: &[&str],
    chunk: usize,
) -> (Vec<AgentEvent>, Vec<Map<String, Value>>) {
    let mut registry = Registry::new();
    let received = write_tool(&mut registry);
    // Several blocks per reply: the turn is read to its end.
    let mut config = AgentConfig::for_protocol(protocol);
    config.end_turn_at_call = false;
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    );
    let model = ScriptedModel::chunked(outputs, chunk);
    let events = Mutex::new(Vec::new());
    tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(
            &model,
            &mut Vec::new(),
            "Write it.",
            |e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the loop finishes")
    .unwrap();
    let received = received.lock().unwrap().clone();
    (events.into_inner().unwrap(), received)
}

const MIXED: &str = "First.\n<|[REQUEST_TOOL]|>\ncommand:「始」write「末」\npath:「始」a.rs「末」\ncontent:「始」fn main() { a < b && c }「末」\n<|[END_TOOL]|>\nThen.\n<ACTION>\n<write>\n<path>b.rs</path>\n<content>if a &lt; b &amp;&amp; c {}</content>\n</write>\n</ACTION>\n";

/// (protocol, key, pieces joined) per parameter that ended.
fn streamed(events: &[AgentEvent]) -> Vec<(Protocol, String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(Protocol, String, String)> = None;
    for e in events {
        match e {
            AgentEvent::Decoded(Event::ParamStart { protocol, key, .. }) => {
                open = Some((*protocol, key.to_string(), String::new()))
            }
            AgentEvent::Decoded(Event::ParamText { text, .. }) => {
                open.as_mut().unwrap().2.push_str(text)
            }
            AgentEvent::Decoded(Event::ParamEnd { .. }) => out.extend(open.take()),
            _ => {}
        }
    }
    out
}

fn closed_calls(events: &[AgentEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .flat_map(|e| match e {
            AgentEvent::BlockClosed { calls, .. } => calls.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[tokio::test]
async fn both_protocols_stream_arguments_to_the_ui() {
    let (events, received) = run(ProtocolChoice::Auto, &[MIXED, "Done."], 5).await;
    assert_eq!(received.len(), 2);
    let got = streamed(&events);
    let expected = [
        (Protocol::Tam, "command", "write"),
        (Protocol::Tam, "path", "a.rs"),
        (Protocol::Tam, "content", "fn main() { a < b && c }"),
        (Protocol::Action, "path", "b.rs"),
        (Protocol::Action, "content", "if a < b && c {}"),
    ];
    let got: Vec<(Protocol, &str, &str)> = got
        .iter()
        .map(|(k, key, v)| (*k, key.as_str(), v.as_str()))
        .collect();
    assert_eq!(got, expected);
    let starts: Vec<(Protocol, String)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Decoded(Event::CommandSeen { tool, .. }) => {
                Some((Protocol::Tam, tool.to_string()))
            }
            AgentEvent::Decoded(Event::CallStart { protocol, tool, .. }) => {
                Some((*protocol, tool.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            (Protocol::Tam, "write".to_owned()),
            (Protocol::Action, "write".to_owned())
        ]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                AgentEvent::Decoded(Event::CallEnd {
                    protocol: Protocol::Action,
                    index: 0,
                    ..
                })
            ))
            .count(),
        1
    );
    // Every argument event of a block comes before its BlockClosed.
    let closed = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::BlockClosed { .. }))
        .unwrap();
    let last_arg = events
        .iter()
        .rposition(|e| {
            matches!(
                e,
                AgentEvent::Decoded(Event::ParamEnd { .. } | Event::CallEnd { .. })
            )
        })
        .unwrap();
    assert!(last_arg < closed);
}

#[tokio::test]
async fn call_ids_are_stable_whatever_the_split() {
    let (whole, _) = run(ProtocolChoice::Auto, &[MIXED, "Done."], MIXED.len()).await;
    let ids: Vec<Option<String>> = closed_calls(&whole).into_iter().map(|c| c.id).collect();
    let tam_start = MIXED.find("<|[REQUEST_TOOL]|>").unwrap();
    let action_start = MIXED.find("<ACTION>").unwrap();
    assert_eq!(
        ids,
        [
            Some(format!("tam-{tam_start}-0")),
            Some(format!("action-{action_start}-0"))
        ]
    );
    for chunk in [1, 3, 7] {
        let (events, _) = run(ProtocolChoice::Auto, &[MIXED, "Done."], chunk).await;
        assert_eq!(closed_calls(&events), closed_calls(&whole), "chunk {chunk}");
    }
}

#[tokio::test]
async fn stream_arguments_off_sends_none() {
    let mut registry = Registry::new();
    write_tool(&mut registry);
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Auto);
    config.end_turn_at_call = false;
    config.decoder.param_events = false;
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    );
    let model = ScriptedModel::chunked(&[MIXED, "Done."], 4);
    let events = Mutex::new(Vec::new());
    agent
        .run(
            &model,
            &mut Vec::new(),
            "Write it.",
            |e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let events = events.into_inner().unwrap();
    assert!(streamed(&events).is_empty());
    assert!(!events.iter().any(|e| matches!(
        e,
        AgentEvent::Decoded(Event::CommandSeen { .. } | Event::CallStart { .. })
    )));
    assert_eq!(closed_calls(&events).len(), 2);
}

/// A parameter declared a string takes the element's raw text, code
/// with tags included, whether the XML reading gave a string or an object.
#[tokio::test]
async fn a_declared_string_takes_the_elements_raw_text() {
    let code =
        "<ACTION><write><path>x.rs</path><content>let s = \"<b>x</b>\";</content></write></ACTION>";
    let markup =
        "<ACTION><write><path>x.html</path><content><div><b>x</b></div></content></write></ACTION>";
    for chunk in [1, 5, 200] {
        let (_, received) = run(ProtocolChoice::Action, &[code, markup, "Done."], chunk).await;
        assert_eq!(received.len(), 2, "chunk {chunk}");
        assert_eq!(received[0]["content"], json!("let s = \"<b>x</b>\";"));
        assert_eq!(received[1]["content"], json!("<div><b>x</b></div>"));
    }
}

#[tokio::test]
async fn from_action_keeps_sources_and_dispatch_uses_them() {
    let parsed = tam::action_xml::parse(
        "<ACTION><write><path>p</path><content><b>x</b></content></write></ACTION>",
    );
    let block = &parsed.blocks[0];
    let calls = ToolCall::from_action_block(block);
    assert_eq!(calls[0].args["content"], json!({"b": "x"}));
    assert_eq!(
        calls[0].sources,
        BTreeMap::from([
            ("content".to_owned(), "<b>x</b>".to_owned()),
            ("path".to_owned(), "p".to_owned())
        ])
    );
    assert_eq!(calls[0].id.as_deref(), Some("action-0-0"));
    let mut registry = Registry::new();
    let received = write_tool(&mut registry);
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
    let outcome = dispatcher
        .dispatch(
            &Scope::unrestricted(),
            calls[0].clone(),
            &CancellationToken::new(),
        )
        .await;
    assert!(outcome.is_success(), "{outcome:?}");
    assert_eq!(received.lock().unwrap()[0]["content"], json!("<b>x</b>"));
}
