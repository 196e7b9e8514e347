//! The agent APIs over loopback, against a scripted upstream: Anthropic Messages
//! (`/v1/messages`, `/v1/messages/count_tokens`) and OpenAI Responses (`/v1/responses`),
//! whole and streamed, in every split of the upstream's deltas, in both protocols; and the
//! proxy's promises on both routes: a quoted, reasoned, cut or unfinished call never
//! becomes a call, a tool not offered is text, the door's rules and limits apply, and a
//! bad request gets a 4xx in the API's own shape.

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use proxy_upstream::{Reply, ScriptedUpstream, content_event, start_proxy, start_proxy_with};
use serde_json::{Value, json};
use tam::ProtocolChoice;
use tam_model::openai::OpenAiConfig;
use tam_model::sse::{SseConfig, SseReader};
use tam_proxy::ProxyConfig;

/// Splits `text` into pieces of `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn reply(text: &str, size: usize, finish: &str) -> Reply {
    let pieces = pieces(text, size);
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    Reply::content(&refs, finish)
}

/// `POST {base}{path}` with a JSON `body` and `headers`: status and body text.
async fn post(proxy: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    post_raw(proxy, path, headers, body.to_string(), "application/json").await
}

async fn post_raw(
    proxy: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
    content_type: &str,
) -> (u16, String) {
    let base = proxy.trim_end_matches("/v1");
    let mut request = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", content_type)
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The events of an event stream: (event type, data as JSON or as a string).
fn events(text: &str) -> Vec<(String, Value)> {
    let mut reader = SseReader::new(SseConfig::default());
    let mut out = Vec::new();
    reader.feed(text.as_bytes(), |event| {
        let event = event.unwrap();
        let data = serde_json::from_str(&event.data).unwrap_or(Value::String(event.data));
        out.push((event.event.unwrap_or_default(), data));
    });
    out
}

const BASH: &str = "Listing the files.\n";

/// The scripted model's reply calling `Bash` with `ls -la` in `protocol`. Claude Code's
/// `Bash` takes `command`, which in TAM would name the tool: the TAM prompt offers it as
/// `arg_command`, and the proxy reads it back as `command`.
fn bash_call(protocol: ProtocolChoice) -> String {
    match protocol {
        ProtocolChoice::Tam => format!(
            "{BASH}<|[REQUEST_TOOL]|>\ncommand:「始」Bash「末」\narg_command:「始」ls -la「末」\n<|[END_TOOL]|>"
        ),
        _ => format!("{BASH}<ACTION>\n<Bash>\n<command>ls -la</command>\n</Bash>\n</ACTION>"),
    }
}

fn bash_tool() -> Value {
    json!({"name": "Bash", "description": "Runs a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"]}})
}

/// A Messages reply as the client reads it: its content blocks and stop reason, from a
/// whole `message` or rebuilt from its stream (checking the events' order as it goes).
fn message_of(streamed: bool, body: &str) -> (Vec<Value>, String) {
    if !streamed {
        let message: Value = serde_json::from_str(body).unwrap();
        assert_eq!(message["type"], "message", "{body}");
        return (
            message["content"].as_array().unwrap().clone(),
            message["stop_reason"].as_str().unwrap().to_owned(),
        );
    }
    let events = events(body);
    assert_eq!(events[0].0, "message_start", "{body}");
    assert_eq!(events.last().unwrap().0, "message_stop", "{body}");
    let mut blocks: Vec<Value> = Vec::new();
    let mut json_text: Vec<String> = Vec::new();
    let mut open: Option<usize> = None;
    let mut stop_reason = String::new();
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str(), "{body}");
        match name.as_str() {
            "content_block_start" => {
                assert_eq!(open, None, "blocks do not interleave: {body}");
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(index, blocks.len(), "{body}");
                blocks.push(data["content_block"].clone());
                json_text.push(String::new());
                open = Some(index);
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(open, Some(index), "{body}");
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap() {
                    "text_delta" => {
                        let text = blocks[index]["text"].as_str().unwrap().to_owned();
                        blocks[index]["text"] = json!(text + delta["text"].as_str().unwrap());
                    }
                    "input_json_delta" => {
                        json_text[index].push_str(delta["partial_json"].as_str().unwrap());
                    }
                    "thinking_delta" => {}
                    other => panic!("{other}"),
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(open, Some(index), "{body}");
                if blocks[index]["type"] == "tool_use" {
                    blocks[index]["input"] = serde_json::from_str(&json_text[index]).unwrap();
                }
                open = None;
            }
            "message_delta" => {
                stop_reason = data["delta"]["stop_reason"].as_str().unwrap().to_owned();
            }
            "message_start" | "message_stop" | "ping" => {}
            other => panic!("unexpected event {other}: {body}"),
        }
    }
    (blocks, stop_reason)
}

/// A Responses reply as the client reads it: its output items and status, from a whole
/// `response` or from the stream's `response.completed` — checked against the items the
/// stream built from its deltas, and the sequence numbers.
fn response_of(streamed: bool, body: &str) -> (Vec<Value>, String) {
    if !streamed {
        let response: Value = serde_json::from_str(body).unwrap();
        assert_eq!(response["object"], "response", "{body}");
        return (
            response["output"].as_array().unwrap().clone(),
            response["status"].as_str().unwrap().to_owned(),
        );
    }
    let events = events(body);
    assert_eq!(events[0].0, "response.created", "{body}");
    assert_eq!(events[1].0, "response.in_progress", "{body}");
    let mut built: Vec<Value> = Vec::new();
    for (at, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], name.as_str(), "{body}");
        assert_eq!(data["sequence_number"], at as u64, "{body}");
        match name.as_str() {
            "response.output_item.added" => {
                assert_eq!(data["output_index"], built.len() as u64, "{body}");
                built.push(data["item"].clone());
            }
            "response.output_text.delta" => {
                let at = data["output_index"].as_u64().unwrap() as usize;
                let text = built[at]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                built[at]["content"] = json!([{"type": "output_text", "text": text + data["delta"].as_str().unwrap()}]);
            }
            "response.function_call_arguments.delta" => {
                let at = data["output_index"].as_u64().unwrap() as usize;
                let text = built[at]["arguments"].as_str().unwrap().to_owned();
                built[at]["arguments"] = json!(text + data["delta"].as_str().unwrap());
            }
            "response.custom_tool_call_input.delta" => {
                let at = data["output_index"].as_u64().unwrap() as usize;
                let text = built[at]["input"].as_str().unwrap().to_owned();
                built[at]["input"] = json!(text + data["delta"].as_str().unwrap());
            }
            _ => {}
        }
    }
    let (last, data) = events.last().unwrap();
    assert!(
        matches!(last.as_str(), "response.completed" | "response.incomplete"),
        "{body}"
    );
    let output = data["response"]["output"].as_array().unwrap().clone();
    assert_eq!(output.len(), built.len(), "{body}");
    for (item, built) in output.iter().zip(&built) {
        match item["type"].as_str().unwrap() {
            "message" => assert_eq!(item["content"][0]["text"], built["content"][0]["text"]),
            "function_call" => assert_eq!(item["arguments"], built["arguments"]),
            "custom_tool_call" => assert_eq!(item["input"], built["input"]),
            _ => {}
        }
    }
    (
        output,
        data["response"]["status"].as_str().unwrap().to_owned(),
    )
}

/// Messages: one tool round trip, whole and streamed, every delta size, both protocols:
/// the block becomes a `tool_use` whose `input` is typed by the tool's schema; the server
/// tool is not offered; the result comes back to the upstream as an observation.
#[tokio::test]
async fn messages_round_trip_in_both_protocols_whole_and_streamed() {
    for protocol in [ProtocolChoice::Action, ProtocolChoice::Tam] {
        for size in [1, 4, 9, 10_000] {
            let text = bash_call(protocol);
            let upstream = ScriptedUpstream::always(reply(&text, size, "stop")).await;
            let proxy = start_proxy(&upstream, protocol).await;
            for streamed in [false, true] {
                let request = json!({
                    "model": "claude-x", "max_tokens": 1000, "stream": streamed,
                    "system": [{"type": "text", "text": "You are an agent."}],
                    "messages": [{"role": "user", "content": "List the files here."}],
                    "tools": [bash_tool(), {"type": "web_search_20250305", "name": "web_search"}],
                    "thinking": {"type": "adaptive"}, "metadata": {"user_id": "u"},
                });
                let (status, body) = post(
                    &proxy,
                    "/v1/messages?beta=true",
                    &[("anthropic-version", "2023-06-01")],
                    &request,
                )
                .await;
                assert_eq!(status, 200, "{body}");
                let (blocks, stop) = message_of(streamed, &body);
                assert_eq!(stop, "tool_use", "{protocol:?} {size} {streamed}: {body}");
                assert_eq!(blocks.len(), 2, "{body}");
                assert_eq!(blocks[0], json!({"type": "text", "text": BASH}));
                assert_eq!(blocks[1]["type"], "tool_use");
                assert_eq!(blocks[1]["name"], "Bash");
                assert!(blocks[1]["id"].as_str().unwrap().starts_with("toolu_"));
                assert_eq!(blocks[1]["input"], json!({"command": "ls -la"}));
            }
            let sent = &upstream.bodies()[0];
            assert!(sent.get("tools").is_none(), "{sent}");
            let system = sent["messages"][0]["content"].as_str().unwrap();
            assert!(system.starts_with("You are an agent.\n\n"), "{system}");
            assert!(
                system.contains("Bash") && !system.contains("web_search"),
                "{system}"
            );
            if protocol == ProtocolChoice::Tam {
                assert!(system.contains("arg_command"), "{system}");
            }
            for field in ["thinking", "metadata", "max_tokens_to_sample"] {
                assert!(sent.get(field).is_none(), "{field}: {sent}");
            }
        }
    }
    // The second round: the call and its result reach the upstream as text (in TAM the
    // aliased parameter as the prompt offers it).
    let upstream = ScriptedUpstream::always(reply("Two files: a.txt, b.txt.", 5, "stop")).await;
    let tam = ScriptedUpstream::always(reply("Two files.", 5, "stop")).await;
    let proxy = start_proxy(&upstream, ProtocolChoice::Action).await;
    let tam_proxy = start_proxy(&tam, ProtocolChoice::Tam).await;
    let request = json!({
        "model": "m", "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "List the files here."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_7", "name": "Bash", "input": {"command": "ls"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_7", "content": [{"type": "text", "text": "a.txt b.txt"}]}]},
        ],
        "tools": [bash_tool()],
    });
    let (status, body) = post(&proxy, "/v1/messages", &[], &request).await;
    assert_eq!(status, 200, "{body}");
    let (blocks, stop) = message_of(false, &body);
    assert_eq!(stop, "end_turn");
    assert_eq!(
        blocks,
        [json!({"type": "text", "text": "Two files: a.txt, b.txt."})]
    );
    let messages = upstream.bodies()[0]["messages"].clone();
    let texts: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(
        texts.contains(
            &"Listing.\n<ACTION>\n  <Bash>\n    <command>ls</command>\n  </Bash>\n</ACTION>"
        ),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t
                .starts_with("Observation: Tool Bash executed successfully. Result: a.txt b.txt")),
        "{texts:?}"
    );
    let (status, body) = post(&tam_proxy, "/v1/messages", &[], &request).await;
    assert_eq!(status, 200, "{body}");
    let history = tam.bodies()[0]["messages"].to_string();
    assert!(
        history.contains("command:「始」Bash「末」\\narg_command:「始」ls「末」"),
        "{history}"
    );
}

fn responses_tools() -> Value {
    json!([
        {"type": "function", "name": "exec_command", "description": "Runs a command.", "strict": false,
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
        {"type": "custom", "name": "apply_patch", "description": "Applies a patch.",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}},
        {"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [
            {"type": "function", "name": "spawn_agent", "description": "Starts one.",
                "parameters": {"type": "object", "properties": {"task": {"type": "string"}}}}]},
        {"type": "web_search", "external_web_access": false},
    ])
}

/// A patch a custom tool gets as raw text: code with `<`, `&` and line breaks.
const PATCH: &str =
    "*** Begin Patch\n*** Update File: a.rs\n-if a < b && c {\n+if a <= b && c {\n*** End Patch";

fn patch_call(protocol: ProtocolChoice) -> String {
    match protocol {
        ProtocolChoice::Tam => format!(
            "Patching.\n<|[REQUEST_TOOL]|>\ncommand:「始」apply_patch「末」\ninput:「始」{PATCH}「末」\n<|[END_TOOL]|>"
        ),
        _ => format!(
            "Patching.\n<ACTION>\n<apply_patch>\n<input><![CDATA[{PATCH}]]></input>\n</apply_patch>\n</ACTION>"
        ),
    }
}

fn exec_call(protocol: ProtocolChoice) -> String {
    match protocol {
        ProtocolChoice::Tam => "<|[REQUEST_TOOL]|>\ncommand1:「始」exec_command「末」\ncmd1:「始」ls「末」\ncommand2:「始」spawn_agent「末」\ntask2:「始」check「末」\n<|[END_TOOL]|>".to_owned(),
        _ => "<ACTION><exec_command><cmd>ls</cmd></exec_command><spawn_agent><task>check</task></spawn_agent></ACTION>".to_owned(),
    }
}

/// Responses: function, custom and namespaced calls, whole and streamed, every delta size,
/// both protocols; built-in tools not offered; the history's items reach the upstream.
#[tokio::test]
async fn responses_round_trip_in_both_protocols_whole_and_streamed() {
    for protocol in [ProtocolChoice::Action, ProtocolChoice::Tam] {
        for size in [1, 5, 10_000] {
            for (text, expect_custom) in
                [(patch_call(protocol), true), (exec_call(protocol), false)]
            {
                let upstream = ScriptedUpstream::always(reply(&text, size, "stop")).await;
                let proxy = start_proxy(&upstream, protocol).await;
                for streamed in [false, true] {
                    let request = json!({
                        "model": "gpt-x", "stream": streamed, "store": false,
                        "instructions": "You are Codex.",
                        "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be careful."}]},
                                  {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix a.rs"}]}],
                        "tools": responses_tools(), "tool_choice": "auto", "parallel_tool_calls": true,
                        "reasoning": {"summary": "auto"}, "include": ["reasoning.encrypted_content"],
                    });
                    let (status, body) = post(&proxy, "/v1/responses", &[], &request).await;
                    assert_eq!(status, 200, "{body}");
                    let (output, status) = response_of(streamed, &body);
                    assert_eq!(status, "completed", "{body}");
                    if expect_custom {
                        assert_eq!(output.len(), 2, "{body}");
                        assert_eq!(output[0]["type"], "message");
                        assert_eq!(output[0]["content"][0]["text"], "Patching.\n");
                        assert_eq!(output[1]["type"], "custom_tool_call", "{body}");
                        assert_eq!(output[1]["name"], "apply_patch");
                        assert_eq!(output[1]["input"], PATCH, "{protocol:?} {size} {streamed}");
                        assert!(output[1]["call_id"].as_str().unwrap().starts_with("call_"));
                    } else {
                        assert_eq!(output.len(), 2, "{body}");
                        assert_eq!(output[0]["type"], "function_call");
                        assert_eq!(output[0]["name"], "exec_command");
                        assert_eq!(
                            serde_json::from_str::<Value>(output[0]["arguments"].as_str().unwrap())
                                .unwrap(),
                            json!({"cmd": "ls"})
                        );
                        assert_eq!(output[1]["name"], "spawn_agent");
                        assert_eq!(output[1]["namespace"], "agents");
                    }
                }
                let sent = &upstream.bodies()[0];
                let system = sent["messages"][0]["content"].as_str().unwrap();
                assert!(system.starts_with("You are Codex.\n\n"), "{system}");
                for name in ["exec_command", "apply_patch", "spawn_agent"] {
                    assert!(system.contains(name), "{name}: {system}");
                }
                assert!(!system.contains("web_search"), "{system}");
                for field in ["store", "include", "reasoning", "tools", "input"] {
                    assert!(sent.get(field).is_none(), "{field}: {sent}");
                }
            }
        }
    }
    // The history: calls and their outputs, reasoning dropped.
    let upstream = ScriptedUpstream::always(reply("Done.", 3, "stop")).await;
    let proxy = start_proxy(&upstream, ProtocolChoice::Tam).await;
    let request = json!({"model": "m", "input": [
        {"type": "message", "role": "user", "content": "Fix it"},
        {"type": "reasoning", "summary": [], "encrypted_content": "xyz"},
        {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.rs"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
    ], "tools": responses_tools()});
    let (status, body) = post(&proxy, "/v1/responses", &[], &request).await;
    assert_eq!(status, 200, "{body}");
    let texts: Vec<String> = upstream.bodies()[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("command:「始」exec_command「末」")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t
                .contains("Observation: Tool exec_command executed successfully. Result: a.rs")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.contains(PATCH)), "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Observation: Tool apply_patch executed successfully. Result: ok")),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains("xyz")), "{texts:?}");
}

/// What must never become a call, on both new routes: a call quoted in inline code, one
/// in reasoning, one cut at the token limit, a mention that ends by itself, a call to a
/// tool the request did not offer. Whole and streamed; the text comes back.
#[tokio::test]
async fn what_is_not_a_call_never_becomes_one_on_the_agent_routes() {
    let cases = [
        (
            "quoted",
            "Never write `<ACTION><Bash><command>rm -rf /</command></Bash></ACTION>` unless asked.",
            "stop",
        ),
        (
            "reasoned",
            "<think>maybe <ACTION><Bash><command>rm</command></Bash></ACTION></think>No call.",
            "stop",
        ),
        (
            "cut",
            "Running.\n<ACTION><Bash><command>rm -rf /tmp/x</command></Bash>",
            "length",
        ),
        (
            "mention",
            "An ACTION block looks like <ACTION><Bash> with a command inside; I will not call it.",
            "stop",
        ),
        (
            "not offered",
            "<ACTION><delete_all><path>/</path></delete_all></ACTION>",
            "stop",
        ),
    ];
    for (what, text, finish) in cases {
        let upstream = ScriptedUpstream::always(reply(text, 3, finish)).await;
        let proxy = start_proxy(&upstream, ProtocolChoice::Action).await;
        for streamed in [false, true] {
            let request = json!({"model": "m", "max_tokens": 50, "stream": streamed,
                "messages": [{"role": "user", "content": "hi"}], "tools": [bash_tool()]});
            let (status, body) = post(&proxy, "/v1/messages", &[], &request).await;
            assert_eq!(status, 200, "{what}: {body}");
            let (blocks, stop) = message_of(streamed, &body);
            assert!(
                blocks.iter().all(|b| b["type"] != "tool_use"),
                "{what}: {body}"
            );
            assert_ne!(stop, "tool_use", "{what}");
            if finish == "length" {
                assert_eq!(stop, "max_tokens", "{what}");
            }
            let request = json!({"model": "m", "stream": streamed, "input": "hi",
                "tools": [{"type": "function", "name": "Bash", "parameters": bash_tool()["input_schema"]}]});
            let (status, body) = post(&proxy, "/v1/responses", &[], &request).await;
            assert_eq!(status, 200, "{what}: {body}");
            let (output, status) = response_of(streamed, &body);
            assert!(
                output
                    .iter()
                    .all(|o| o["type"] == "message" || o["type"] == "reasoning"),
                "{what}: {body}"
            );
            if finish == "length" {
                assert_eq!(status, "incomplete", "{what}");
            }
        }
    }
}

/// The door on both routes: client keys (`x-api-key` as well as `Authorization:
/// Bearer`), web origins, JSON bodies, the size limit, unknown paths, bad requests —
/// answered with a 4xx in the API's own error shape, never a 5xx.
#[tokio::test]
async fn the_door_answers_in_each_apis_shape() {
    let upstream = ScriptedUpstream::always(reply("Hi.", 2, "stop")).await;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_client_keys(["k-123"])
            .with_max_request_bytes(4096),
    )
    .await;
    let messages =
        json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let responses = json!({"model": "m", "input": "hi"});
    let anthropic = |body: &str, kind: &str| {
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], kind, "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    };
    let openai = |body: &str, code: &str| {
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
    };
    // Keys.
    let (status, body) = post(&proxy, "/v1/messages", &[], &messages).await;
    assert_eq!(status, 401);
    anthropic(&body, "authentication_error");
    let (status, body) = post(&proxy, "/v1/responses", &[], &responses).await;
    assert_eq!(status, 401);
    openai(&body, "invalid_api_key");
    let (status, _) = post(&proxy, "/v1/messages", &[("x-api-key", "wrong")], &messages).await;
    assert_eq!(status, 401);
    let (status, body) = post(&proxy, "/v1/messages", &[("x-api-key", "k-123")], &messages).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(
        &proxy,
        "/v1/responses",
        &[("authorization", "Bearer k-123")],
        &responses,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = post(
        &proxy,
        "/v1/responses",
        &[("x-api-key", "k-123")],
        &responses,
    )
    .await;
    assert_eq!(status, 200);
    let key = [("x-api-key", "k-123")];
    // Origins.
    let with_origin = [("x-api-key", "k-123"), ("origin", "https://evil.example")];
    let (status, body) = post(&proxy, "/v1/messages", &with_origin, &messages).await;
    assert_eq!(status, 403);
    anthropic(&body, "permission_error");
    let (status, body) = post(&proxy, "/v1/responses", &with_origin, &responses).await;
    assert_eq!(status, 403);
    openai(&body, "origin_not_allowed");
    // JSON only.
    for path in ["/v1/messages", "/v1/messages/count_tokens", "/v1/responses"] {
        let (status, body) = post_raw(&proxy, path, &key, messages.to_string(), "text/plain").await;
        assert_eq!(status, 415, "{path}: {body}");
    }
    // The size limit.
    let big = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x".repeat(10_000)}]});
    let (status, body) = post(&proxy, "/v1/messages", &key, &big).await;
    assert_eq!(status, 413);
    anthropic(&body, "request_too_large");
    let (status, _) = post(&proxy, "/v1/responses", &key, &big).await;
    assert_eq!(status, 413);
    // Unknown paths.
    let (status, body) = post(&proxy, "/v1/messages/batches", &key, &messages).await;
    assert_eq!(status, 404);
    anthropic(&body, "not_found_error");
    // Bad requests: 400 in shape, never a 5xx.
    for bad in [
        json!({"model": "m"}),
        json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}),
        json!({"model": "m", "messages": [], "tools": [{"name": "a b", "input_schema": {}}]}),
        json!({"model": "m", "messages": [], "tool_choice": {"type": "tool", "name": "nope"}}),
        json!(["not", "an", "object"]),
    ] {
        let (status, body) = post(&proxy, "/v1/messages", &key, &bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        anthropic(&body, "invalid_request_error");
    }
    for bad in [
        json!({"model": "m", "input": 3}),
        json!({"model": "m", "input": [{"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}),
        json!({"model": "m", "input": "hi", "previous_response_id": "resp_1"}),
        json!({"model": "m", "input": "hi", "tools": [{"type": "function"}]}),
        json!({"model": "m", "input": "hi", "tool_choice": {"type": "function", "name": "nope"}}),
    ] {
        let (status, body) = post(&proxy, "/v1/responses", &key, &bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(serde_json::from_str::<Value>(&body).unwrap()["error"]["message"].is_string());
    }
    let (_, body) = post(
        &proxy,
        "/v1/responses",
        &key,
        &json!({"model": "m", "input": "hi", "previous_response_id": "resp_1"}),
    )
    .await;
    assert!(body.contains("does not store responses"), "{body}");
}

/// `count_tokens`: the prompt the upstream would get, tools included; estimated when the
/// upstream has no tokenizer (the scripted one has none).
#[tokio::test]
async fn count_tokens_counts_the_prompt_the_upstream_would_get() {
    let upstream = ScriptedUpstream::always(reply("x", 1, "stop")).await;
    let proxy = start_proxy(&upstream, ProtocolChoice::Action).await;
    let bare =
        json!({"model": "m", "messages": [{"role": "user", "content": "List the files here."}]});
    let mut with_tools = bare.clone();
    with_tools["tools"] = json!([bash_tool()]);
    let mut counts = Vec::new();
    for request in [bare, with_tools] {
        let (status, body) = post(&proxy, "/v1/messages/count_tokens", &[], &request).await;
        assert_eq!(status, 200, "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        counts.push(body["input_tokens"].as_u64().unwrap());
    }
    assert!(counts[0] > 0 && counts[1] > counts[0] + 50, "{counts:?}");
    // Nothing was generated.
    assert!(upstream.bodies().is_empty());
}

/// An upstream that breaks mid-stream: a Messages stream ends with an `error` event, a
/// Responses stream with `response.failed`; no call from the block open at the break.
#[tokio::test]
async fn an_upstream_failure_mid_stream_is_the_apis_error_event() {
    let broken = vec![
        content_event("Running.\n<ACTION><Bash><command>ls"),
        "data: {not json\n\n".to_owned(),
    ];
    let upstream = ScriptedUpstream::always(Reply::Events {
        events: broken,
        pause: std::time::Duration::ZERO,
        endless: false,
    })
    .await;
    let proxy = start_proxy(&upstream, ProtocolChoice::Action).await;
    let (status, body) = post(
        &proxy,
        "/v1/messages",
        &[],
        &json!({"model": "m", "max_tokens": 10, "stream": true,
            "messages": [{"role": "user", "content": "hi"}], "tools": [bash_tool()]}),
    )
    .await;
    assert_eq!(status, 200);
    let got = events(&body);
    let (last, data) = got.last().unwrap();
    assert_eq!(last, "error", "{body}");
    assert_eq!(data["type"], "error");
    assert!(!body.contains("\"tool_use\""), "{body}");
    let (status, body) = post(
        &proxy,
        "/v1/responses",
        &[],
        &json!({"model": "m", "stream": true, "input": "hi",
            "tools": [{"type": "function", "name": "Bash", "parameters": bash_tool()["input_schema"]}]}),
    )
    .await;
    assert_eq!(status, 200);
    let got = events(&body);
    let (last, data) = got.last().unwrap();
    assert_eq!(last, "response.failed", "{body}");
    assert_eq!(data["response"]["status"], "failed");
    assert!(!body.contains("\"function_call\""), "{body}");
}
