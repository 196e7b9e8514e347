//! Strict calls in the agent: with [`AgentConfig::strict`] each round's request carries
//! the grammar of the scope's tools in the agent's protocol, lazy, in the form asked for;
//! without it, or when no grammar can be built, the request has no constraint.
#![cfg(feature = "runtime")]

mod support;

use std::sync::Mutex;

use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::json;
use support::{get_player_info, service};
use tokio_util::sync::CancellationToken;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, BoxError, Constraint, Dispatcher, LanguageModel, ModelItem, ModelRequest,
    ProtocolChoice, Registry, Scope, StopReason, StrictForm, ToolExecutionResult,
};

/// A model that answers every request in prose and keeps each request's constraint.
#[derive(Default)]
struct Recording {
    constraints: Mutex<Vec<Option<Constraint>>>,
}

impl LanguageModel for Recording {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        self.constraints
            .lock()
            .unwrap()
            .push(request.constraint.clone());
        stream::iter([Ok(ModelItem::Text("Done.".into()))]).boxed()
    }
}

fn agent(
    protocol: ProtocolChoice,
    strict: Option<StrictForm>,
    tool: tool_schema::ToolDefinition,
) -> Agent {
    let mut registry = Registry::new();
    registry
        .register_fn(tool, |_| async {
            ToolExecutionResult::query_success(json!("ok"), "ok")
        })
        .unwrap();
    let mut config = AgentConfig::for_protocol(protocol);
    config.strict = strict;
    Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    )
}

async fn constraint_of(agent: &Agent) -> Option<Constraint> {
    let model = Recording::default();
    let mut conversation = Vec::new();
    let outcome = agent
        .run(
            &model,
            &mut conversation,
            "Who is player123?",
            |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, StopReason::Answer);
    let constraints = model.constraints.lock().unwrap().clone();
    assert_eq!(constraints.len(), 1);
    constraints.into_iter().next().unwrap()
}

#[tokio::test]
async fn each_request_carries_the_scopes_grammar_in_the_form_asked_for() {
    // ACTION as a lazy GBNF grammar triggered at the block's start.
    let action = agent(
        ProtocolChoice::Action,
        Some(StrictForm::Gbnf),
        get_player_info(),
    );
    match constraint_of(&action).await {
        Some(Constraint::Gbnf {
            grammar,
            lazy,
            triggers,
            patterns,
        }) => {
            assert!(lazy);
            assert_eq!(triggers, ["<ACTION>"]);
            // A `GetPlayerInfo` element without `<ACTION>`, at a line's start, triggers too.
            assert_eq!(patterns, [r"(?:^|\n)[ \t]*(<(?:GetPlayerInfo)>)"]);
            assert_eq!(grammar, action.strict_grammar().unwrap().gbnf());
            assert!(grammar.contains("GetPlayerInfo") && grammar.contains("player_id"));
        }
        other => panic!("{other:?}"),
    }
    // TAM (and auto, whose prompt teaches TAM) as a structural tag.
    for protocol in [ProtocolChoice::Tam, ProtocolChoice::Auto] {
        let tam = agent(protocol, Some(StrictForm::StructuralTag), get_player_info());
        match constraint_of(&tam).await {
            Some(Constraint::StructuralTag(format)) => {
                assert_eq!(format["type"], "structural_tag");
                assert_eq!(format["format"]["triggers"], json!(["<|[REQUEST_TOOL]|>"]));
                assert_eq!(format["format"]["at_least_one"], false);
            }
            other => panic!("{protocol:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn no_strict_form_or_no_grammar_sends_the_prompt_alone() {
    let off = agent(ProtocolChoice::Action, None, get_player_info());
    assert_eq!(constraint_of(&off).await, None);
    // A tool named `action` cannot be called in ACTION (its close tag ends the block):
    // no grammar, and the request goes without one.
    let tool = service(
        "action",
        "Acts.",
        json!({"type": "object", "properties": {}}),
    );
    let refused = agent(ProtocolChoice::Action, Some(StrictForm::Gbnf), tool);
    assert!(refused.strict_grammar().is_err());
    assert_eq!(constraint_of(&refused).await, None);
}
