//! Load, bounded, on loopback. 200 concurrent streaming requests through the proxy, each
//! answered by the scripted upstream with its own 50 deltas and a closing tool call:
//! every client must get every delta of its own reply, in order, and its call; none lost,
//! none from another stream, none refused — with the default configuration (64 upstream
//! slots: the others wait in the queue) and with 8 slots. No timing is asserted. (The
//! connection cap under load: `proxy_connections.rs`.)

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt;
use proxy_upstream::{Reply, ScriptedUpstream, content_event, finish_event, start_proxy_with};
use serde_json::{Value, json};
use tam::ProtocolChoice;
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;

const STREAMS: usize = 200;
/// Deltas per reply: enough to keep every stream open while others start, few enough that
/// the last queued request is served well within the default 60 s wait on a busy machine.
const DELTAS: usize = 50;

/// The deltas of request `n`'s reply: `n.i ` for each i, then a block calling `note`.
fn deltas(n: usize) -> Vec<String> {
    let mut deltas: Vec<String> = (0..DELTAS).map(|i| format!("{n}.{i} ")).collect();
    deltas.push(format!(
        "<|[REQUEST_TOOL]|>\ncommand:「始」note「末」\nn:「始」{n}「末」\n<|[END_TOOL]|>"
    ));
    deltas
}

fn script(body: &Value) -> Reply {
    // The last message is the client's (after the tool prompt and the demonstration).
    let n: usize = body["messages"].as_array().and_then(|m| m.last()).unwrap()["content"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut events: Vec<String> = deltas(n).iter().map(|d| content_event(d)).collect();
    events.push(finish_event("stop"));
    events.push("data: [DONE]\n\n".into());
    Reply::Events {
        events,
        // A small pause keeps all the streams open at once.
        pause: Duration::from_micros(200),
        endless: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_streams_with_the_default_config_lose_nothing() {
    // The test process holds both ends of every connection.
    let _ = tam_proxy::raise_open_file_limit();
    let upstream = ScriptedUpstream::start(script).await;
    // More streams than upstream slots (64 by default): the others wait their turn.
    let config = ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
        .with_protocol(ProtocolChoice::Tam);
    assert!(config.max_upstream_concurrency < STREAMS);
    streams_lose_nothing(&upstream, config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_streams_through_eight_upstream_slots_lose_nothing() {
    let _ = tam_proxy::raise_open_file_limit();
    let upstream = ScriptedUpstream::start(script).await;
    let config = ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
        .with_protocol(ProtocolChoice::Tam)
        .with_max_upstream_concurrency(8)
        // No wait limit: on a slow machine the last of 25 rounds must not time out.
        .with_upstream_queue_timeout(Duration::ZERO);
    streams_lose_nothing(&upstream, config).await;
}

/// STREAMS streaming clients at once through a proxy with `config`: each gets its own
/// reply, whole and in order, and its call.
async fn streams_lose_nothing(upstream: &ScriptedUpstream, config: ProxyConfig) {
    let started = std::time::Instant::now();
    let proxy = start_proxy_with(config).await;
    let client = Client::with_config(OpenAIConfig::new().with_api_base(&proxy).with_api_key("k"));
    let mut tasks = Vec::new();
    for n in 0..STREAMS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let request: CreateChatCompletionRequest = serde_json::from_value(json!({
                "model": "m", "stream": true,
                "messages": [{"role": "user", "content": n.to_string()}],
                "tools": [{"type": "function", "function": {"name": "note", "parameters": {
                    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}],
            }))
            .unwrap();
            let mut events = client.chat().create_stream(request).await.unwrap();
            let mut content = Vec::new();
            let mut arguments = String::new();
            let mut finish = None;
            while let Some(chunk) = events.next().await {
                let chunk = chunk.unwrap();
                for choice in chunk.choices {
                    if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                        content.push(text);
                    }
                    for call in choice.delta.tool_calls.unwrap_or_default() {
                        if let Some(text) = call.function.and_then(|f| f.arguments) {
                            arguments.push_str(&text);
                        }
                    }
                    if let Some(reason) = choice.finish_reason {
                        finish = Some(format!("{reason:?}"));
                    }
                }
            }
            (n, content, arguments, finish)
        }));
    }
    for task in tasks {
        let (n, content, arguments, finish) = task.await.unwrap();
        let expected: Vec<String> = deltas(n)[..DELTAS].to_vec();
        assert_eq!(
            content, expected,
            "stream {n}: every delta, in order, one chunk each"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&arguments).unwrap(),
            json!({"n": n})
        );
        assert_eq!(finish.as_deref(), Some("ToolCalls"));
    }
    eprintln!("{STREAMS} streams served in {:?}", started.elapsed());
    assert_eq!(upstream.bodies().len(), STREAMS);
    // Each upstream stream was either written to its end or closed by the proxy at the
    // call (the turn ends there), never left open.
    // The upstream sees a close when it next writes: wait for it (a bound against a hang,
    // two minutes, not a time limit).
    let count = || {
        let finished = upstream.finished.load(std::sync::atomic::Ordering::SeqCst);
        let closed = upstream.closed.load(std::sync::atomic::Ordering::SeqCst);
        (finished, closed)
    };
    for _ in 0..12_000 {
        let (finished, closed) = count();
        if finished + closed >= STREAMS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (finished, closed) = count();
    eprintln!("upstream streams ended after {:?}", started.elapsed());
    assert_eq!(
        finished + closed,
        STREAMS,
        "{finished} finished, {closed} closed"
    );
}
