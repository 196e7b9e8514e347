//! A TAM key the model repeats to list an array's items (docs/protocol/tam.md §5.2 makes
//! each repeat a new call in the decoder; the tool's schema says it is one more item): one
//! call, the items in order, in the conversion the agent and the proxy share
//! ([`ToolCall::from_tam_block_with`]) and in the agent's loop.
#![cfg(feature = "runtime")]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{ScriptedModel, run_agent};
use tam::tam_parse::{Config, Decoder, Event};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, Dispatcher, ProtocolChoice, Registry, Scope, ToolCall, ToolExecutionResult,
};
use tool_schema::{CompiledTool, KeyMatch, ToolDefinition};

/// What the e2e model (Qwen2.5-Coder-1.5B, BFCL `simple_python_190`) wrote for "What's the
/// elevation and area of Yellowstone National Park?" through `tam serve` (the server stopped
/// at the end marker; the marker is added here).
const PARK_REPLY: &str = "<|[REQUEST_TOOL]|>\ncommand:「始」park_information「末」\npark_name:「始」Yellowstone National Park「末」\n\ninformation:「始」elevation「末」\ninformation:「始」area「末」\n<|[END_TOOL]|>";

fn park_tool() -> ToolDefinition {
    serde_json::from_value(json!({
        "id": "park_information",
        "description": "Retrieve the basic information such as elevation and area of a national park.",
        "parameters": {"type": "object", "properties": {
            "park_name": {"type": "string"},
            "information": {"type": "array", "items": {"type": "string",
                "enum": ["Elevation", "Area", "Location", "Established Year"]}},
            "polynomial": {"type": "array", "items": {"type": "number"}},
            "limits": {"type": "array", "items": {"type": "number"}},
            "artist": {"type": "string"}},
            "required": ["park_name", "information"]},
        "implementation": {"type": "service"}
    }))
    .unwrap()
}

/// The calls of the one block in `text`, fed in `size`-character deltas.
fn calls(text: &str, size: usize) -> Vec<ToolCall> {
    let tool = CompiledTool::new(park_tool()).unwrap();
    let mut decoder = Decoder::new(Config::default());
    let mut blocks: Vec<tam::TamBlock> = Vec::new();
    let mut take = |e: Event<'_>| {
        if let Event::Block(b) = e {
            blocks.push(b);
        }
    };
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(size) {
        let piece: String = piece.iter().collect();
        decoder.feed(&piece, &mut take);
    }
    decoder.finish(&mut take);
    assert_eq!(blocks.len(), 1, "{text}");
    ToolCall::from_tam_block_with(&blocks[0], |name, key, text| {
        name == tool.id().as_str() && tool.is_one_item(key, KeyMatch::Canonical, text)
    })
}

fn block(body: &str) -> String {
    format!("<|[REQUEST_TOOL]|>\ncommand:「始」park_information「末」\n{body}<|[END_TOOL]|>")
}

#[test]
fn a_repeated_key_of_an_array_lists_its_items_in_one_call() {
    for size in [usize::MAX, 1, 3, 7] {
        let got = calls(PARK_REPLY, size);
        assert_eq!(got.len(), 1, "split {size}");
        assert_eq!(
            Value::Object(got[0].args.clone()),
            json!({"park_name": "Yellowstone National Park", "information": ["elevation", "area"]})
        );
        assert_eq!(got[0].id.as_deref(), Some("tam-0-0"));
    }
    // Typed by the schema afterwards, as every call is: the members in their own case.
    let tool = CompiledTool::new(park_tool()).unwrap();
    let typed = tool
        .coerce(
            calls(PARK_REPLY, usize::MAX)[0].args.clone(),
            KeyMatch::Canonical,
        )
        .unwrap();
    assert_eq!(typed["information"], json!(["Elevation", "Area"]));

    // Three items, a key spelt another way, and one that was a list already.
    let got = calls(
        &block(
            "park_name:「始」Yosemite「末」\ninformation:「始」Area「末」\nInformation:「始」Location「末」\ninformation:「始」Elevation「末」\n",
        ),
        usize::MAX,
    );
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].args["information"],
        json!(["Area", "Location", "Elevation"])
    );
}

#[test]
fn a_repeat_that_is_not_only_items_stays_a_call() {
    // A string key repeated: another call, the `spotify_play` shape.
    let got = calls(
        &block(
            "artist:「始」Taylor Swift「末」\ninformation:「始」Area「末」\nartist:「始」Maroon 5「末」\ninformation:「始」Elevation「末」\n",
        ),
        usize::MAX,
    );
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].args["artist"], json!("Maroon 5"));
    assert_eq!(got[1].args["information"], json!("Elevation"));
    assert_eq!(got[1].id.as_deref(), Some("tam-0-1"));

    // Whole arrays written again (BFCL `parallel_150`: two areas under two curves): calls.
    let got = calls(
        &block(
            "polynomial:「始」[3, -2, 1]「末」\nlimits:「始」[-1, 2]「末」\npolynomial:「始」[1, 0, -1]「末」\nlimits:「始」[0, 3]「末」\n",
        ),
        usize::MAX,
    );
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].args["polynomial"], json!("[1, 0, -1]"));

    // An array key repeated, then a string key the first call has: the repeat is not only
    // items, so it is a call of its own.
    let got = calls(
        &block(
            "park_name:「始」A「末」\ninformation:「始」Area「末」\ninformation:「始」Elevation「末」\npark_name:「始」B「末」\n",
        ),
        usize::MAX,
    );
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].args["information"], json!("Elevation"));
    assert_eq!(got[1].args["park_name"], json!("B"));

    // Two `command` entries are two calls, whatever they hold.
    let got = calls(
        &block(
            "information:「始」Area「末」\n\ncommand:「始」park_information「末」\ninformation:「始」Elevation「末」\n",
        ),
        usize::MAX,
    );
    assert_eq!(got.len(), 2);

    // A tool the lookup does not know has no array parameters: calls, as decoded.
    let reply = PARK_REPLY.replace("park_information", "other_tool");
    assert_eq!(calls(&reply, usize::MAX).len(), 2);
}

#[tokio::test]
async fn the_agent_runs_one_call_with_the_items() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::new();
    let (counter, args_seen) = (Arc::clone(&runs), Arc::clone(&seen));
    registry
        .register_fn(park_tool(), move |args| {
            counter.fetch_add(1, Ordering::SeqCst);
            args_seen.lock().unwrap().push(args.clone());
            async move { ToolExecutionResult::query_success(json!("2,800 m; 8,983 km²"), "found") }
        })
        .unwrap();
    let mut config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    config.decoder.protocol = ProtocolChoice::Tam;
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        config,
    );
    let model = ScriptedModel::chunked(&[PARK_REPLY, "It is high."], 4);
    let outcome = run_agent(
        &agent,
        &model,
        "What's the elevation and area of Yellowstone National Park?",
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(outcome.calls.len(), 1);
    let args = seen.lock().unwrap();
    assert_eq!(
        Value::Object(args[0].clone()),
        json!({"park_name": "Yellowstone National Park", "information": ["Elevation", "Area"]})
    );
}
