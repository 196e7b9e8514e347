//! Observation text: decoder diagnostics, and the property that what the loop observes
//! does not depend on how the model's output is split into deltas.
#![cfg(feature = "runtime")]

mod support;

use std::sync::Mutex;

use proptest::prelude::*;
use serde_json::json;
use support::{ScriptedModel, get_player_info};
use tam::{Code, Diagnostic, Span};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, CancellationToken, Dispatcher, ProtocolChoice, Registry, Scope,
    ToolExecutionResult, diagnostic_observation,
};

#[test]
fn error_diagnostics_become_observations_and_warnings_do_not() {
    let malformed = Diagnostic::error(
        tam::action_xml::codes::MALFORMED_XML,
        Span::new(10, 40),
        "expected '>' at line 3, column 9",
    );
    assert_eq!(
        diagnostic_observation(&malformed).unwrap(),
        "Observation: Error - Malformed XML in ACTION block: expected '>' at line 3, column 9"
    );
    let unterminated = Diagnostic::error(
        Code::UNTERMINATED_BLOCK,
        Span::new(0, 30),
        "block never closed",
    );
    assert_eq!(
        diagnostic_observation(&unterminated).unwrap(),
        "Observation: Error - Unterminated TAM block (no end marker), not executed: block never closed"
    );
    let orphan = Diagnostic::error(
        Code::ORPHAN_PARAMETER,
        Span::new(5, 9),
        "zone3 belongs to no command",
    );
    assert_eq!(
        diagnostic_observation(&orphan).unwrap(),
        "Observation: Error - Invalid tool block (orphan_parameter): zone3 belongs to no command"
    );
    let repaired = Diagnostic::warning(
        tam::action_xml::codes::BARE_AMPERSAND,
        Span::new(1, 2),
        "bare '&' read as '&amp;'",
    );
    assert_eq!(diagnostic_observation(&repaired), None);
}

/// The observations and tool arguments of one scripted run, with outputs split into
/// `chunk`-byte deltas; `end_turn`: the turn ends at the first block with calls.
fn observe(
    protocol: ProtocolChoice,
    end_turn: bool,
    outputs: &[&str],
    chunk: usize,
) -> (Vec<String>, Vec<serde_json::Value>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let received = std::sync::Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::new();
    let log = std::sync::Arc::clone(&received);
    registry
        .register_fn(get_player_info(), move |args| {
            log.lock().unwrap().push(serde_json::Value::Object(args));
            async { ToolExecutionResult::query_success(json!("Alice"), "found") }
        })
        .unwrap();
    let mut config = AgentConfig::for_protocol(protocol);
    config.end_turn_at_call = end_turn;
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    );
    let model = ScriptedModel::chunked(outputs, chunk);
    let observed = Mutex::new(Vec::new());
    rt.block_on(agent.run(
        &model,
        &mut Vec::new(),
        "go",
        |e| {
            if let AgentEvent::Observation(o) = e {
                observed.lock().unwrap().push(o);
            }
        },
        &CancellationToken::new(),
    ))
    .unwrap();
    let args = received.lock().unwrap().clone();
    (observed.into_inner().unwrap(), args)
}

const MIXED: &str = "先查 TAM。\n<|[REQUEST_TOOL]|>\ncommand1:「始」GetPlayerInfo「末」\nplayer_id1:「始」p1「末」\ncommand2:「始」GetPlayerInfo「末」\nplayerId2:「始」p2「末」\n<|[END_TOOL]|>\n再查 XML：<ACTION><GetPlayerInfo><playerId>p3</playerId></GetPlayerInfo></ACTION> 完。";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn observations_do_not_depend_on_delta_boundaries(chunk in 1usize..48) {
        // Read to its end, the reply's two blocks both run.
        let whole = observe(ProtocolChoice::Auto, false, &[MIXED, "Done."], MIXED.len());
        prop_assert_eq!(whole.0.len(), 3);
        prop_assert_eq!(
            &whole.0[2],
            "Observation: Error - Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?"
        );
        prop_assert_eq!(observe(ProtocolChoice::Auto, false, &[MIXED, "Done."], chunk), whole);
        // Ending at the call, only the first block's chain runs, however the reply is split.
        let ended = observe(ProtocolChoice::Auto, true, &[MIXED, "Done."], MIXED.len());
        prop_assert_eq!(ended.0.len(), 2);
        prop_assert_eq!(observe(ProtocolChoice::Auto, true, &[MIXED, "Done."], chunk), ended);
    }
}
