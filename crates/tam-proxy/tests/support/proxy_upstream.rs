//! The scripted OpenAI-compatible upstream of the proxy's tests, on `tam_testkit::upstream`
//! (127.0.0.1, port chosen by the system): it records each chat request's body and
//! `Authorization` header and answers with what the test's script returns for it: SSE
//! events (optionally paced, optionally endless, optionally held until released), a JSON
//! body, or an error status with a JSON body. A stream the server's peer went away from
//! before its end is counted in `closed`. Also the proxy in front of it, and SSE helpers.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use serde_json::{Value, json};
use tam::ProtocolChoice;
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;
use tam_testkit::upstream::{self, Request};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200 text/event-stream`: each event written as its own body frame, `pause` apart;
    /// `endless` repeats the last event forever (until the peer goes away).
    Events {
        events: Vec<String>,
        pause: Duration,
        endless: bool,
    },
    /// An error status with a JSON body.
    Status { status: u16, body: Value },
    /// `200 application/json` with `body`: a server that ignores `stream`.
    Json(Value),
    /// Like `Events` without pauses, but the event at `hold_at` waits until the test calls
    /// `release.notify_one()`: what the proxy sent before it is what it sent early.
    Held {
        events: Vec<String>,
        hold_at: usize,
        release: Arc<tokio::sync::Notify>,
    },
}

impl Reply {
    /// The events of a reply whose content arrives in `deltas`, ending with `finish`.
    pub fn content(deltas: &[&str], finish: &str) -> Reply {
        let mut events: Vec<String> = deltas.iter().map(|d| content_event(d)).collect();
        events.push(finish_event(finish));
        events.push("data: [DONE]\n\n".into());
        Reply::Events {
            events,
            pause: Duration::ZERO,
            endless: false,
        }
    }
}

/// `data: {…"delta":{"content":TEXT}…}`.
pub fn content_event(text: &str) -> String {
    event(json!({"content": text}), None)
}

/// `data: {…"delta":{},"finish_reason":REASON…}`.
pub fn finish_event(reason: &str) -> String {
    event(json!({}), Some(reason))
}

/// One chunk event with `delta` and `finish_reason`.
pub fn event(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "up",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

/// The chat route every model request takes.
const CHAT: &str = "POST /v1/chat/completions";

impl Reply {
    /// The kit server's form of this reply.
    fn into_kit(self) -> upstream::Reply {
        let bytes = |events: Vec<String>| events.into_iter().map(String::into_bytes);
        match self {
            Reply::Events {
                events,
                pause,
                endless,
            } => {
                let pieces = bytes(events).map(|e| (pause, e)).collect();
                if endless {
                    upstream::Reply::Endless { pieces }
                } else {
                    upstream::Reply::Stream {
                        pieces,
                        drop: false,
                    }
                }
            }
            Reply::Status { status, body } => upstream::Reply::Status {
                status,
                body: body.to_string(),
            },
            Reply::Json(body) => upstream::Reply::ok(body),
            Reply::Held {
                events,
                hold_at,
                release,
            } => upstream::Reply::Held {
                pieces: bytes(events).collect(),
                hold_at,
                release,
            },
        }
    }
}

/// A running upstream: the kit's scripted server answering the chat route with the
/// test's script, `GET /v1/models` with one model, and any other path 404.
pub struct ScriptedUpstream {
    server: upstream::Server,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// Streams dropped before their last event.
    pub closed: Arc<AtomicUsize>,
    /// Streams written to their end.
    pub finished: Arc<AtomicUsize>,
}

impl ScriptedUpstream {
    /// Starts an upstream answering every chat request with `script(body)`.
    pub async fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        let server = upstream::Server::scripted(move |request: &Request| {
            if request.route() == CHAT {
                script(&request.body).into_kit()
            } else if request.route() == "GET /v1/models" {
                upstream::Reply::ok(models())
            } else {
                upstream::Reply::Status {
                    status: 404,
                    body: "no such route".into(),
                }
            }
        })
        .await;
        Self {
            base_url: server.base_url.clone(),
            closed: server.closed.clone(),
            finished: server.finished.clone(),
            server,
        }
    }

    /// Starts an upstream answering every request with `reply`.
    pub async fn always(reply: Reply) -> Self {
        Self::start(move |_| reply.clone()).await
    }

    /// The chat requests so far.
    fn chats(&self) -> Vec<Request> {
        let mut requests = self.server.requests();
        requests.retain(|r| r.route() == CHAT);
        requests
    }

    /// The raw paths of the requests no route answered (404), in order.
    pub fn other_paths(&self) -> Vec<String> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.route() != CHAT && r.route() != "GET /v1/models")
            .map(|r| r.path.split('?').next().unwrap_or_default().to_owned())
            .collect()
    }

    /// The bodies of the chat requests so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.chats().into_iter().map(|r| r.body).collect()
    }

    /// The `Authorization` headers of the chat requests so far.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.chats()
            .iter()
            .map(|r| r.header("authorization").map(str::to_owned))
            .collect()
    }
}

fn models() -> Value {
    json!({"object": "list", "data": [{"id": "up-model", "object": "model", "created": 1, "owned_by": "test"}]})
}

/// A proxy in front of `upstream` speaking `protocol`, on 127.0.0.1; its `/v1` base URL.
pub async fn start_proxy(upstream: &ScriptedUpstream, protocol: ProtocolChoice) -> String {
    start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, "")).with_protocol(protocol),
    )
    .await
}

/// A proxy with `config`, on 127.0.0.1, its listener's backlog 1024 as `tam serve`'s; its
/// `/v1` base URL.
pub async fn start_proxy_with(config: ProxyConfig) -> String {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1024).unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = tam_proxy::serve(listener, config, std::future::pending()).await;
    });
    url
}
