//! The agent loop over ACTION XML: self-correction, malformed XML, extra
//! blocks, nested and CDATA parameters, workflow skills, and mixed TAM + ACTION streams.
#![cfg(feature = "runtime")]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use support::{
    LONG_TEXT, ScriptedModel, fixture, get_player_info, observations, service, streamed_text,
    summarizer_engine,
};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, AgentOutcome, CallStatus, CancellationToken, Dispatcher,
    Message, Protocol, ProtocolChoice, Registry, Role, Scope, StopReason, ToolExecutionResult,
};

/// Records every argument object a tool received.
type Received = Arc<Mutex<Vec<Map<String, Value>>>>;

fn recording(
    registry: &mut Registry,
    definition: tool_schema::ToolDefinition,
    data: Value,
) -> Received {
    let received = Received::default();
    let log = Arc::clone(&received);
    registry
        .register_fn(definition, move |args| {
            log.lock().unwrap().push(args);
            let data = data.clone();
            async move { ToolExecutionResult::query_success(data, "ok") }
        })
        .unwrap();
    received
}

async fn run(
    agent: &Agent,
    model: &ScriptedModel,
    prompt: &str,
) -> (AgentOutcome, Vec<AgentEvent>, Vec<Message>) {
    let events = Mutex::new(Vec::new());
    let mut conversation = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(
            model,
            &mut conversation,
            prompt,
            |e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the loop finishes")
    .unwrap();
    (outcome, events.into_inner().unwrap(), conversation)
}

fn action_agent(registry: Registry, config: AgentConfig) -> Agent {
    Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    )
}

const ROUND_1: &str = "I'll try to get the player's name.\n<ACTION>\n    <GetPlayerInfo>\n        <playerId>player123</playerId> <!-- 假设正确的参数名是 player_id -->\n    </GetPlayerInfo>\n</ACTION>";
const ROUND_2: &str = "My apologies, I used the wrong parameter name. Let me try again to get the player's information.\n<ACTION>\n    <GetPlayerInfo>\n        <player_id>player123</player_id>\n    </GetPlayerInfo>\n</ACTION>";

#[tokio::test]
async fn the_seeds_self_correction_exchange() {
    let mut registry = Registry::new();
    let received = recording(&mut registry, get_player_info(), json!({"name": "Alice"}));
    let agent = action_agent(registry, AgentConfig::for_protocol(ProtocolChoice::Action));
    let model = ScriptedModel::chunked(&[ROUND_1, ROUND_2, "The player's name is Alice."], 13);
    let (outcome, events, conversation) = run(&agent, &model, "What is player123's name?").await;

    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(outcome.rounds, 3);
    assert_eq!(outcome.answer, "The player's name is Alice.");
    assert_eq!(
        observations(&events),
        [
            "Observation: Error - Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?",
            r#"Observation: Tool GetPlayerInfo executed successfully. Result: {"name":"Alice"}"#,
        ]
    );
    assert_eq!(outcome.calls[0].status, CallStatus::InvalidParameters);
    assert_eq!(outcome.calls[1].status, CallStatus::Completed);
    assert_eq!(
        *received.lock().unwrap(),
        [support::object(json!({"player_id": "player123"}))],
        "round 1 never ran"
    );

    let round_two_request = &model.requests.lock().unwrap()[1];
    assert_eq!(round_two_request.len(), 3);
    assert_eq!(round_two_request[1], Message::assistant(ROUND_1));
    assert_eq!(round_two_request[2].role, Role::User);
    assert!(
        round_two_request[2]
            .content
            .starts_with("Observation: Error - Invalid parameters")
    );
    assert!(
        conversation[0]
            .content
            .contains("**Tools (direct function calls):**"),
        "{}",
        conversation[0].content
    );
    let text: String = streamed_text(&events);
    assert!(
        text.starts_with("I'll try to get the player's name.\n"),
        "{text:?}"
    );
}

#[tokio::test]
async fn a_simple_call_reports_its_result_as_the_seed_shows() {
    let mut registry = Registry::new();
    let read = service(
        "ReadWorldStateTool",
        "Reads a value from the shared world state.",
        json!({"type": "object", "properties": {"path": {"type": "string"}, "default_value": {}}, "required": ["path"]}),
    );
    let received = recording(&mut registry, read, json!("sunny"));
    let agent = action_agent(registry, AgentConfig::for_protocol(ProtocolChoice::Action));
    let output = "Okay, I need to check the current weather to answer the player's question.\n<ACTION>\n    <ReadWorldStateTool>\n        <path>environment.weather.current_conditions</path>\n        <default_value>unknown</default_value>\n    </ReadWorldStateTool>\n</ACTION>";
    let model = ScriptedModel::chunked(&[output, "It is sunny."], 4);
    let (_, events, _) = run(&agent, &model, "How is the weather?").await;
    assert_eq!(
        observations(&events),
        ["Observation: Tool ReadWorldStateTool executed successfully. Result: sunny"]
    );
    assert_eq!(
        received.lock().unwrap()[0],
        support::object(
            json!({"path": "environment.weather.current_conditions", "default_value": "unknown"})
        )
    );
}

#[tokio::test]
async fn nested_and_cdata_parameters_arrive_as_json() {
    let mut registry = Registry::new();
    let read_file = service(
        "read_file",
        "Reads files.",
        json!({"type": "object", "properties": {"args": {"type": "object"}}, "required": ["args"]}),
    );
    let files = recording(&mut registry, read_file, json!("2 files"));
    let diff = service(
        "ApplyProjectDiff",
        "Applies a diff.",
        json!({"type": "object", "properties": {"target_file": {"type": "string"}, "diff_patch": {"type": "string"}}}),
    );
    let diffs = recording(&mut registry, diff, json!("applied"));
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Action);
    config.end_turn_at_call = false;
    config.run_extra_action_blocks = true;
    let agent = action_agent(registry, config);
    let output = "I need both files, then a fix.\n<ACTION>\n    <read_file>\n        <args>\n            <file>\n                <path>src/app.ts</path>\n            </file>\n            <file>\n                <path>src/utils.ts</path>\n            </file>\n        </args>\n    </read_file>\n</ACTION>\n<ACTION>\n    <ApplyProjectDiff>\n        <target_file>config/settings.json</target_file>\n        <diff_patch>\n            <![CDATA[\n-  \"feature_enabled\": false,\n+  \"feature_enabled\": true,\n            ]]>\n        </diff_patch>\n    </ApplyProjectDiff>\n</ACTION>";
    let model = ScriptedModel::chunked(&[output, "Done."], 6);
    let (outcome, _, _) = run(&agent, &model, "Fix the config.").await;
    assert_eq!(outcome.calls.len(), 2);
    assert_eq!(
        files.lock().unwrap()[0]["args"],
        json!({"file": [{"path": "src/app.ts"}, {"path": "src/utils.ts"}]})
    );
    assert_eq!(
        diffs.lock().unwrap()[0]["diff_patch"],
        json!("-  \"feature_enabled\": false,\n+  \"feature_enabled\": true,\n")
    );
}

/// With the turn read to its end (`end_turn_at_call: false`), only the first ACTION block
/// of a reply runs by default, and the others are reported.
#[tokio::test]
async fn only_the_first_action_block_runs_by_default() {
    let mut registry = Registry::new();
    let received = recording(&mut registry, get_player_info(), json!("Alice"));
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Action);
    config.end_turn_at_call = false;
    let agent = action_agent(registry, config);
    let two = "<ACTION><GetPlayerInfo><player_id>a</player_id></GetPlayerInfo></ACTION>\n<ACTION><GetPlayerInfo><player_id>b</player_id></GetPlayerInfo></ACTION>";
    let model = ScriptedModel::chunked(&[two, "ok"], 10);
    let (outcome, events, _) = run(&agent, &model, "go").await;
    assert_eq!(received.lock().unwrap().len(), 1);
    assert_eq!(outcome.calls.len(), 1);
    assert_eq!(
        observations(&events)[1],
        "Observation: Error - Only the first ACTION block of a reply is executed; the 1 call(s) of ACTION block 2 were not executed"
    );
    let executed: Vec<bool> = events
        .iter()
        .filter_map(|e| {
            if let AgentEvent::BlockClosed { executed, .. } = e {
                Some(*executed)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(executed, [true, false]);
}

#[tokio::test]
async fn malformed_xml_is_fed_back_and_nothing_runs() {
    let mut registry = Registry::new();
    let received = recording(&mut registry, get_player_info(), json!("Alice"));
    let agent = action_agent(registry, AgentConfig::for_protocol(ProtocolChoice::Action));
    let broken =
        "Trying.\n<ACTION>\n<GetPlayerInfo>\n<player_id>a</player_id>\n</GetPlayerInfo\n</ACTION>";
    let model = ScriptedModel::chunked(&[broken, "Sorry."], 8);
    let (outcome, events, _) = run(&agent, &model, "go").await;
    assert_eq!(outcome.stop, StopReason::Answer);
    assert!(received.lock().unwrap().is_empty());
    let seen = observations(&events);
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].starts_with("Observation: Error - Malformed XML in ACTION block: "),
        "{seen:?}"
    );
    assert!(
        seen[0].contains("line "),
        "the position in the model output is given: {seen:?}"
    );
}

#[tokio::test]
async fn an_unknown_tool_gets_a_did_you_mean() {
    let mut registry = Registry::new();
    recording(&mut registry, get_player_info(), json!("Alice"));
    let agent = action_agent(registry, AgentConfig::for_protocol(ProtocolChoice::Action));
    let typo = "<ACTION><GetPlayerInfos><player_id>a</player_id></GetPlayerInfos></ACTION>";
    let model = ScriptedModel::chunked(&[typo, "ok"], 64);
    let (_, events, _) = run(&agent, &model, "go").await;
    assert_eq!(
        observations(&events),
        ["Observation: Error - Unknown tool ID 'GetPlayerInfos', did you mean 'GetPlayerInfo'?"]
    );
}

#[tokio::test]
async fn a_workflow_skill_runs_from_an_action_block() {
    let mut registry = Registry::new();
    registry
        .register_workflow_file(&fixture("workflows/summarize_text.json"))
        .unwrap();
    let scope = Scope::for_agent(&registry, ["workflow:summarize_text"]).unwrap();
    let agent = Agent::with_config(
        Dispatcher::new(registry, summarizer_engine()),
        scope,
        AgentConfig::for_protocol(ProtocolChoice::Action),
    );
    let call = format!(
        "Let me summarise it.\n<ACTION>\n  <workflow:summarize_text>\n    <text_to_summarize>{LONG_TEXT}</text_to_summarize>\n    <summary_length>简短</summary_length>\n  </workflow:summarize_text>\n</ACTION>"
    );
    let model = ScriptedModel::chunked(&[&call, "猫是一种小型食肉动物。"], 9);
    let (outcome, events, conversation) = run(&agent, &model, "请总结这段文字").await;
    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(
        observations(&events),
        [
            "Observation: Tool workflow:summarize_text executed successfully. Result: 猫是一种小型食肉动物。"
        ]
    );
    assert!(
        conversation[0]
            .content
            .contains("**Skills (workflow executions):**"),
        "{}",
        conversation[0].content
    );
}

#[tokio::test]
async fn both_protocols_in_one_stream_run_in_stream_order() {
    let mut registry = Registry::new();
    let received = recording(&mut registry, get_player_info(), json!("found"));
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Auto);
    config.end_turn_at_call = false;
    let agent = action_agent(registry, config);
    let mixed = "First TAM.\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\nPlayerID:「始」tam「末」\n<|[END_TOOL]|>\nThen XML.\n<ACTION><GetPlayerInfo><player_id>xml</player_id></GetPlayerInfo></ACTION>";
    let model = ScriptedModel::chunked(&[mixed, "Both found."], 7);
    let (outcome, events, _) = run(&agent, &model, "go").await;
    assert_eq!(outcome.stop, StopReason::Answer);
    let ids: Vec<Value> = received
        .lock()
        .unwrap()
        .iter()
        .map(|a| a["player_id"].clone())
        .collect();
    assert_eq!(
        ids,
        [json!("tam"), json!("xml")],
        "TAM keys match canonically, XML keys exactly"
    );
    let kinds: Vec<Protocol> = events
        .iter()
        .filter_map(|e| {
            if let AgentEvent::BlockClosed { kind, .. } = e {
                Some(*kind)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(kinds, [Protocol::Tam, Protocol::Action]);
}

/// A tool whose name (or a parameter's) is no XML element name can never be called in
/// ACTION: the agent names it and leaves it out of its system prompt. TAM writes any name.
#[test]
fn tools_a_model_cannot_write_in_action_are_named_and_left_out_of_the_prompt() {
    let agent = |protocol: ProtocolChoice| {
        let mut registry = Registry::new();
        let string = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let spaced = json!({"type": "object", "properties": {"first name": {"type": "string"}}});
        for (id, parameters) in [
            ("get_weather", string.clone()),
            ("get/forecast", string),
            ("lookup", spaced),
        ] {
            recording(
                &mut registry,
                service(id, "A tool.", parameters),
                Value::Null,
            );
        }
        Agent::with_config(
            Dispatcher::new(registry, ReferenceEngine::new()),
            Scope::unrestricted(),
            AgentConfig::for_protocol(protocol),
        )
    };
    let prompt =
        |protocol| tool_dispatch::system_prompt_for(protocol, tool_schema::PromptLanguage::English);

    let action = agent(ProtocolChoice::Action);
    let mut unwritable = action.unwritable_tools();
    unwritable.sort();
    assert_eq!(unwritable, ["get/forecast", "lookup"]);
    let text = action.system_prompt(&prompt(ProtocolChoice::Action));
    assert!(text.contains("get_weather"), "{text}");
    assert!(
        !text.contains("get/forecast") && !text.contains("first name"),
        "{text}"
    );

    let tam = agent(ProtocolChoice::Tam);
    assert!(tam.unwritable_tools().is_empty());
    let text = tam.system_prompt(&prompt(ProtocolChoice::Tam));
    assert!(
        text.contains("get/forecast") && text.contains("lookup"),
        "{text}"
    );
}

/// A call element of an offered tool written without `<ACTION>` (small models drop the
/// wrapper) runs as a call; the turn ends at it.
#[tokio::test]
async fn a_call_element_without_action_runs() {
    let mut registry = Registry::new();
    let received = recording(&mut registry, get_player_info(), json!({"name": "Alice"}));
    let agent = action_agent(registry, AgentConfig::for_protocol(ProtocolChoice::Action));
    let model = ScriptedModel::chunked(
        &[
            "<GetPlayerInfo><player_id>player123</player_id></GetPlayerInfo>\nObservation: invented",
            "The player's name is Alice.",
        ],
        5,
    );
    let (outcome, events, _) = run(&agent, &model, "What is player123's name?").await;
    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(outcome.rounds, 2);
    assert_eq!(outcome.calls[0].status, CallStatus::Completed);
    assert_eq!(
        *received.lock().unwrap(),
        [support::object(json!({"player_id": "player123"}))]
    );
    assert!(
        !streamed_text(&events).contains("invented"),
        "the turn ended at the call"
    );
}

/// An element naming a tool that is not offered stays the model's answer.
#[tokio::test]
async fn a_call_element_of_an_unoffered_tool_is_prose() {
    let mut registry = Registry::new();
    let received = recording(&mut registry, get_player_info(), json!({"name": "Alice"}));
    let agent = action_agent(registry, AgentConfig::for_protocol(ProtocolChoice::Action));
    let reply = "<LookupPlayer><id>player123</id></LookupPlayer>";
    let model = ScriptedModel::chunked(&[reply], 5);
    let (outcome, _, _) = run(&agent, &model, "Who is player123?").await;
    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(outcome.rounds, 1);
    assert!(outcome.calls.is_empty());
    assert_eq!(outcome.answer, reply);
    assert!(received.lock().unwrap().is_empty());
}
