//! Load, bounded, on loopback. 100 concurrent streaming requests through the proxy, each
//! answered by the scripted upstream with its own 200 deltas and a closing tool call:
//! every client must get every delta of its own reply, in order, and its call; none lost,
//! none from another stream. And the connection cap: with every slot held by half-sent
//! requests, hundreds more connections are refused, while a client holding a slot is
//! served. No timing is asserted (the refusals' times are printed).

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt;
use proxy_upstream::{Reply, ScriptedUpstream, content_event, finish_event, start_proxy_with};
use serde_json::{Value, json};
use tam::Protocol;
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
async fn a_hundred_concurrent_streams_lose_nothing() {
    let upstream = ScriptedUpstream::start(script).await;
    // Every stream at once: the upstream cap (64 by default) must not refuse any.
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_protocol(Protocol::Tam)
            .with_max_upstream_concurrency(STREAMS),
    )
    .await;
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

/// The connection cap of the cap test, and how many connections come over it.
const CAP: usize = 32;
const OVER: usize = 300;
/// A bound against a hang, not a time limit.
const HANG_GUARD: Duration = Duration::from_secs(120);

const REQUEST: &str = r#"{"model":"m","messages":[{"role":"user","content":"Hi"}]}"#;

/// A whole chat request; `close` asks the server to close the connection after it.
fn chat_request(close: bool) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{}\r\n{REQUEST}",
        REQUEST.len(),
        if close { "connection: close\r\n" } else { "" }
    )
}

/// Reads one response with a `content-length` from `socket`: its status and body.
async fn read_response(socket: &mut TcpStream) -> Option<(u16, String)> {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse().ok())?;
            if bytes.len() >= end + 4 + length {
                let status = head.get(9..12)?.parse().ok()?;
                let body = String::from_utf8_lossy(&bytes[end + 4..end + 4 + length]);
                return Some((status, body.into_owned()));
            }
        }
        match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
        }
    }
}

/// How a connection over the cap ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The 503 `too_many_connections` answer, then the close.
    Answered,
    /// Closed (or reset) without an answer.
    Closed,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_refused_and_those_under_it_served() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    // No header time-out: the half-sent requests hold their slots for the whole test, so
    // a refusal can only come from the cap.
    let config = ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
        .with_max_connections(CAP)
        .with_header_timeout(Duration::ZERO);
    let proxy = start_proxy_with(config).await;
    let address = proxy
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();

    // CAP - 1 half-sent requests, then a real client: the server accepts in order, so
    // the client has the last slot.
    let mut held = Vec::new();
    for _ in 0..CAP - 1 {
        let mut socket = TcpStream::connect(&address).await.unwrap();
        socket
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-le")
            .await
            .unwrap();
        held.push(socket);
    }
    let mut client = TcpStream::connect(&address).await.unwrap();
    client
        .write_all(chat_request(false).as_bytes())
        .await
        .unwrap();
    let served = tokio::time::timeout(HANG_GUARD, read_response(&mut client))
        .await
        .unwrap();
    assert_eq!(served.map(|(status, _)| status), Some(200));

    // Every slot is taken now. OVER more connections at once, each sending a whole
    // request: each is refused, none waits for a slot.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..OVER {
        let address = address.clone();
        tasks.push(tokio::spawn(async move {
            let start = Instant::now();
            let mut socket = TcpStream::connect(&address).await.unwrap();
            let _ = socket.write_all(chat_request(false).as_bytes()).await;
            let mut answer = Vec::new();
            let _ = tokio::time::timeout(HANG_GUARD, socket.read_to_end(&mut answer))
                .await
                .expect("a connection over the cap was neither answered nor closed");
            let answer = String::from_utf8_lossy(&answer).into_owned();
            let refusal = if answer.is_empty() {
                Refusal::Closed
            } else {
                assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
                assert!(answer.contains("too_many_connections"), "{answer}");
                Refusal::Answered
            };
            (refusal, start.elapsed())
        }));
    }
    let mut times = Vec::new();
    let mut answered = 0;
    for task in tasks {
        let (refusal, time) = task.await.unwrap();
        answered += usize::from(refusal == Refusal::Answered);
        times.push(time);
    }
    let all = started.elapsed();
    times.sort();
    eprintln!(
        "{OVER} connections over a cap of {CAP}: all refused in {all:?} ({answered} answered 503, {} closed unanswered); per connection: median {:?}, max {:?}",
        OVER - answered,
        times[OVER / 2],
        times[OVER - 1]
    );

    // The client holding a slot is still served, on its connection.
    let start = Instant::now();
    client
        .write_all(chat_request(false).as_bytes())
        .await
        .unwrap();
    let served = tokio::time::timeout(HANG_GUARD, read_response(&mut client))
        .await
        .unwrap();
    assert_eq!(served.map(|(status, _)| status), Some(200));
    eprintln!(
        "a client under the cap, while it is full: served in {:?}",
        start.elapsed()
    );
    assert_eq!(
        upstream.bodies().len(),
        2,
        "a refused request went upstream"
    );

    // The half-sent requests go away: their slots come free, and a new client is served
    // (once the server has seen the closes).
    drop(held);
    drop(client);
    let start = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut socket = TcpStream::connect(&address).await.unwrap();
        let _ = socket.write_all(chat_request(true).as_bytes()).await;
        if let Some((200, body)) = read_response(&mut socket).await {
            assert!(body.contains("Hello."), "{body}");
            break;
        }
        assert!(start.elapsed() < HANG_GUARD, "slots never came free");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!(
        "after the holders left: a new client served in {:?} ({attempts} attempts)",
        start.elapsed()
    );
}
