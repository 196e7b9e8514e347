//! Load, bounded: 100 concurrent streaming requests through the proxy on loopback, each
//! answered by the scripted upstream with its own 200 deltas and a closing tool call.
//! Every client must get every delta of its own reply, in order, and its call; none lost,
//! none from another stream. No timing is asserted.

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt;
use proxy_upstream::{Reply, ScriptedUpstream, content_event, finish_event, start_proxy};
use serde_json::{Value, json};
use tam::Protocol;

const STREAMS: usize = 100;
const DELTAS: usize = 200;

/// The deltas of request `n`'s reply: `n.i ` for each i, then a block calling `note`.
fn deltas(n: usize) -> Vec<String> {
    let mut deltas: Vec<String> = (0..DELTAS).map(|i| format!("{n}.{i} ")).collect();
    deltas.push(format!(
        "<|[REQUEST_TOOL]|>\ncommand:「始」note「末」\nn:「始」{n}「末」\n<|[END_TOOL]|>"
    ));
    deltas
}

fn script(body: &Value) -> Reply {
    let n: usize = body["messages"][1]["content"]
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
async fn a_hundred_concurrent_streams_lose_nothing() {
    let upstream = ScriptedUpstream::start(script).await;
    let proxy = start_proxy(&upstream, Protocol::Tam).await;
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
    assert_eq!(
        finished + closed,
        STREAMS,
        "{finished} finished, {closed} closed"
    );
}
