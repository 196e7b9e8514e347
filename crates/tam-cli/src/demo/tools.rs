//! The demo's tools: the `workflow:summarize_text` workflow run by the reference engine
//! with its three node types registered as functions, a `GetPlayerInfo` service that
//! wants `player_id` (the demo's model first writes `playerId`), and
//! `system:get_current_time`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use tool_dispatch::engine::{NodeInvocation, ReferenceEngine};
use tool_dispatch::{Dispatcher, Registry, Scope, ToolExecutionResult, operation_type};
use tool_schema::load::{AgentProfile, workflow_from_str};
use tool_schema::{Implementation, ToolDefinition, ToolId};

use crate::error::CliError;

/// The workflow behind `workflow:summarize_text`: group input → split into sentences →
/// take as many as the length asks → join → group output.
const SUMMARIZE_TEXT_WORKFLOW: &str = include_str!("summarize_text.json");

/// The agent's profile: the tools it may call.
const AGENT_PROFILE: &str = r#"{
  "id": "game_master",
  "name": "Game master assistant",
  "tool_ids_inventory": ["workflow:summarize_text", "GetPlayerInfo", "system:get_current_time"]
}"#;

/// The player `GetPlayerInfo` knows.
pub(crate) const KNOWN_PLAYER: &str = "player123";

/// The dispatcher over every demo tool, and the agent profile's scope.
pub(crate) fn dispatcher_and_scope() -> Result<(Dispatcher, Scope), CliError> {
    let mut registry = Registry::new();
    register_demo_tools(&mut registry)?;
    let profile = AgentProfile::from_str(AGENT_PROFILE, "demo/agent_profile.json")?;
    let dispatcher = Dispatcher::new(registry, summarizer_engine());
    let scope = Scope::for_agent(dispatcher.registry(), &profile.tool_ids_inventory)?;
    Ok((dispatcher, scope))
}

/// Registers the demo's three tools (`tam demo`, `tam run --tools demo`); the workflow
/// needs [`summarizer_engine`].
pub(crate) fn register_demo_tools(registry: &mut Registry) -> Result<(), CliError> {
    let workflow: Value = serde_json::from_str(SUMMARIZE_TEXT_WORKFLOW)
        .map_err(|e| CliError::Definition(format!("demo/summarize_text.json: {e}")))?;
    let definition = workflow_from_str(
        SUMMARIZE_TEXT_WORKFLOW,
        "summarize_text",
        "demo/summarize_text.json",
    )?;
    registry.register_workflow(definition, &workflow)?;
    registry.register_fn(
        get_player_info(),
        |args| async move { look_up_player(&args) },
    )?;
    registry.register_fn(current_time(), |_| async {
        ToolExecutionResult::query_success(json!(utc_time_of_day()), "current time")
    })?;
    Ok(())
}

/// The demo's tool definitions in the order `tam run --tools demo` lists them (the
/// registry's), for `tam prompt --tools demo` and `tam schema demo`.
pub(crate) fn demo_definitions() -> Result<Vec<ToolDefinition>, CliError> {
    let mut registry = Registry::new();
    register_demo_tools(&mut registry)?;
    Ok(registry.definitions().cloned().collect())
}

fn tool_id(id: &str) -> ToolId {
    ToolId::parse(id).expect("the demo's tool ids are valid")
}

fn get_player_info() -> ToolDefinition {
    ToolDefinition::new(
        tool_id("GetPlayerInfo"),
        "Looks up a player by id.",
        json!({
            "type": "object",
            "properties": {"player_id": {"type": "string", "description": "The player's id."}},
            "required": ["player_id"]
        }),
        Implementation::Service,
    )
}

fn current_time() -> ToolDefinition {
    ToolDefinition::new(
        tool_id("system:get_current_time"),
        "Returns the current time of day (UTC).",
        json!({"type": "object", "properties": {}}),
        Implementation::Service,
    )
}

fn look_up_player(args: &Map<String, Value>) -> ToolExecutionResult {
    let id = args
        .get("player_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if id == KNOWN_PLAYER {
        ToolExecutionResult::query_success(
            json!({"player_id": id, "name": "Alice", "level": 42, "guild": "Night Owls"}),
            "player found",
        )
    } else {
        ToolExecutionResult::empty(
            operation_type::QUERY,
            format!("no player has the id '{id}'"),
        )
    }
}

/// `HH:MM UTC` now.
fn utc_time_of_day() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let minutes_today = seconds % 86_400 / 60;
    format!("{:02}:{:02} UTC", minutes_today / 60, minutes_today % 60)
}

fn outputs(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_) => {
            Map::new()
        }
    }
}

/// The text on the input slot `slot`, if it holds text.
fn text_input<'n>(node: &'n NodeInvocation, slot: &str) -> Option<&'n str> {
    node.inputs.get(slot).and_then(Value::as_str)
}

/// `text:SplitSentences`: `text` → `sentences`, split after `.`, `!` or `?` (and their
/// full-width forms), trimmed.
fn split_sentences(node: &NodeInvocation) -> Map<String, Value> {
    let text = text_input(node, "text").unwrap_or_default();
    let mut sentences = Vec::new();
    let mut start = 0;
    for (index, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？') {
            let end = index + c.len_utf8();
            sentences.push(text[start..end].trim().to_owned());
            start = end;
        }
    }
    if !text[start..].trim().is_empty() {
        sentences.push(text[start..].trim().to_owned());
    }
    outputs(json!({ "sentences": sentences }))
}

/// `text:TakeSentences`: the first N `sentences`, N read from the node's
/// `sentencesPerLength` configuration for the input `length`.
fn take_sentences(node: &NodeInvocation) -> Result<Map<String, Value>, String> {
    let length = text_input(node, "length").unwrap_or("medium");
    let count = node
        .config
        .get("sentencesPerLength")
        .and_then(|table| table.get(length))
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("no sentence count for the summary length '{length}'"))?;
    let sentences = node.inputs.get("sentences").and_then(Value::as_array);
    let taken: Vec<Value> = sentences
        .into_iter()
        .flatten()
        .take(usize::try_from(count).unwrap_or(usize::MAX))
        .cloned()
        .collect();
    Ok(outputs(json!({ "sentences": taken })))
}

/// `text:Join`: `parts` joined by `separator` → `text`.
fn join(node: &NodeInvocation) -> Map<String, Value> {
    let separator = text_input(node, "separator").unwrap_or_default();
    let parts: Vec<&str> = node
        .inputs
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    outputs(json!({ "text": parts.join(separator) }))
}

/// The reference engine with the workflow's node types (`text:SplitSentences`,
/// `text:TakeSentences`, `text:Join`).
pub(crate) fn summarizer_engine() -> ReferenceEngine {
    ReferenceEngine::new()
        .with_node("text:SplitSentences", |node| async move {
            Ok(split_sentences(&node))
        })
        .with_node("text:TakeSentences", |node| async move {
            take_sentences(&node).map_err(Into::into)
        })
        .with_node("text:Join", |node| async move { Ok(join(&node)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(inputs: Value, config: Value) -> NodeInvocation {
        NodeInvocation {
            node_id: "n".to_owned(),
            inputs: outputs(inputs),
            config: outputs(config),
        }
    }

    #[test]
    fn sentences_split_after_their_stop() {
        let split = split_sentences(&node(json!({"text": "One. Two!  Three? rest"}), json!({})));
        assert_eq!(
            split["sentences"],
            json!(["One.", "Two!", "Three?", "rest"])
        );
    }

    #[test]
    fn an_unknown_length_is_a_node_error() {
        let config = json!({"sentencesPerLength": {"short": 1}});
        let picked = take_sentences(&node(
            json!({"length": "short", "sentences": ["a", "b"]}),
            config.clone(),
        ));
        assert_eq!(picked.unwrap()["sentences"], json!(["a"]));
        let error = take_sentences(&node(json!({"length": "epic"}), config)).unwrap_err();
        assert_eq!(error, "no sentence count for the summary length 'epic'");
    }

    #[test]
    fn only_the_known_player_is_found() {
        let found = look_up_player(&outputs(json!({"player_id": KNOWN_PLAYER})));
        assert!(found.is_success());
        assert_eq!(found.data().unwrap()["name"], "Alice");
        let missing = look_up_player(&outputs(json!({"player_id": "nobody"})));
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn the_time_reads_like_a_clock() {
        let time = utc_time_of_day();
        assert_eq!(time.len(), "00:00 UTC".len(), "{time}");
        assert_eq!(&time[2..3], ":");
    }
}
