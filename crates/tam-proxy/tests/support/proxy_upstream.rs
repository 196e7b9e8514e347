//! A scripted OpenAI-compatible upstream for the proxy's tests: an axum server on
//! 127.0.0.1 (port chosen by the system) that records each chat request's body and
//! `Authorization` header and answers with what the test's script returns for it: SSE
//! events (optionally paced, optionally endless), or an error status with a JSON body. A
//! stream the server's peer stopped reading before its end is counted in `closed` (its
//! body stream was dropped unfinished). Also the proxy in front of it, and SSE helpers.
#![allow(dead_code)]

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tam::ProtocolChoice;
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;
use tokio::net::TcpListener;

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

type Script = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;
/// Each chat request's body and `Authorization` header.
type Recorded = Arc<Mutex<Vec<(Value, Option<String>)>>>;

#[derive(Clone)]
struct Upstream {
    script: Script,
    requests: Recorded,
    closed: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
    /// The paths of requests no route answers (404), as they arrived.
    other_paths: Arc<Mutex<Vec<String>>>,
}

/// A running upstream.
pub struct ScriptedUpstream {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    requests: Recorded,
    other_paths: Arc<Mutex<Vec<String>>>,
    /// Streams dropped before their last event.
    pub closed: Arc<AtomicUsize>,
    /// Streams written to their end.
    pub finished: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedUpstream {
    /// Starts an upstream answering every chat request with `script(body)`.
    pub async fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        let state = Upstream {
            script: Arc::new(script),
            requests: Arc::default(),
            closed: Arc::default(),
            finished: Arc::default(),
            other_paths: Arc::default(),
        };
        let requests = state.requests.clone();
        let other_paths = state.other_paths.clone();
        let closed = state.closed.clone();
        let finished = state.finished.clone();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .fallback(other)
            .with_state(state);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base_url,
            requests,
            other_paths,
            closed,
            finished,
            task,
        }
    }

    /// Starts an upstream answering every request with `reply`.
    pub async fn always(reply: Reply) -> Self {
        Self::start(move |_| reply.clone()).await
    }

    /// The raw paths of the requests no route answered (404), in order.
    pub fn other_paths(&self) -> Vec<String> {
        self.other_paths.lock().unwrap().clone()
    }

    /// The bodies of the chat requests so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(b, _)| b.clone())
            .collect()
    }

    /// The `Authorization` headers of the chat requests so far.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, a)| a.clone())
            .collect()
    }
}

/// Counts a stream as closed when dropped before its end.
struct Guard {
    closed: Arc<AtomicUsize>,
    done: bool,
}

impl Guard {
    fn complete(&mut self) {
        self.done = true;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.done {
            self.closed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn chat(State(state): State<Upstream>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let reply = (state.script)(&body);
    state.requests.lock().unwrap().push((body, authorization));
    match reply {
        Reply::Json(body) => (
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
        Reply::Status { status, body } => (
            StatusCode::from_u16(status).unwrap(),
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
        Reply::Held {
            events,
            hold_at,
            release,
        } => {
            let stream = futures_util::stream::unfold(0usize, move |at| {
                let events = events.clone();
                let release = release.clone();
                async move {
                    if at == hold_at {
                        release.notified().await;
                    }
                    let event = events.get(at)?.clone();
                    Some((Ok::<_, Infallible>(Bytes::from(event)), at + 1))
                }
            });
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(stream.boxed()),
            )
                .into_response()
        }
        Reply::Events {
            events,
            pause,
            endless,
        } => {
            let guard = Guard {
                closed: state.closed.clone(),
                done: false,
            };
            let finished = state.finished.clone();
            let stream = futures_util::stream::unfold((0usize, guard), move |(at, mut guard)| {
                let events = events.clone();
                let finished = finished.clone();
                async move {
                    if at >= events.len() && !endless {
                        guard.complete();
                        finished.fetch_add(1, Ordering::SeqCst);
                        return None;
                    }
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    let event = events[at.min(events.len() - 1)].clone();
                    Some((Ok::<_, Infallible>(Bytes::from(event)), (at + 1, guard)))
                }
            });
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(stream.boxed()),
            )
                .into_response()
        }
    }
}

async fn other(State(state): State<Upstream>, uri: axum::http::Uri) -> Response {
    // The proxy asks which server this is (strict calls) at start: this one is none of
    // those it knows, and the question is not one of the test's requests.
    if !matches!(uri.path(), "/props" | "/version" | "/get_server_info") {
        state
            .other_paths
            .lock()
            .unwrap()
            .push(uri.path().to_owned());
    }
    (axum::http::StatusCode::NOT_FOUND, "no such route").into_response()
}

async fn models() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"object": "list", "data": [{"id": "up-model", "object": "model", "created": 1, "owned_by": "test"}]})
            .to_string(),
    )
        .into_response()
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
