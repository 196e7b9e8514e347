//! Scripted upstreams of the kinds the proxy tells apart for strict calls, on 127.0.0.1:
//! a llama-server (`GET /props`, `POST /apply-template`, `POST /completion` streaming its
//! native events, and `POST /v1/chat/completions`), a vLLM (`GET /version` and chat
//! completions) and a server that answers neither (chat completions only). Each records
//! every request (method, path, JSON body) and answers the model's requests with the
//! reply its script makes of the request's body.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Which server to play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    LlamaCpp,
    Vllm,
    Unknown,
}

/// What the scripted model writes: its text in pieces, and how it stops.
#[derive(Debug, Clone)]
pub struct Script {
    pub pieces: Vec<String>,
    /// The stop word it stopped at (left out of the text, as servers do), or `None` for
    /// a natural end.
    pub stopped_at: Option<String>,
}

impl Script {
    /// `text` in pieces of `size` characters.
    pub fn new(text: &str, size: usize, stopped_at: Option<&str>) -> Script {
        let chars: Vec<char> = text.chars().collect();
        Script {
            pieces: chars.chunks(size).map(|c| c.iter().collect()).collect(),
            stopped_at: stopped_at.map(str::to_owned),
        }
    }
}

/// The prompt the scripted `/apply-template` renders: the messages' contents in order,
/// each after its role, then the assistant turn's start.
pub fn rendered(body: &Value) -> String {
    let mut out = String::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "<|{}|>{}\n",
            message["role"].as_str().unwrap_or(""),
            message["content"].as_str().unwrap_or("")
        ));
    }
    out.push_str("<|assistant|>");
    out
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub body: Value,
}

#[derive(Clone)]
struct Shared {
    kind: Kind,
    script: Arc<dyn Fn(&Value) -> Script + Send + Sync>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running scripted server.
pub struct KindServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KindServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KindServer {
    /// Starts a server of `kind` whose model writes what `script` makes of each request.
    pub async fn start(
        kind: Kind,
        script: impl Fn(&Value) -> Script + Send + Sync + 'static,
    ) -> Self {
        let shared = Shared {
            kind,
            script: Arc::new(script),
            seen: Arc::default(),
        };
        let seen = shared.seen.clone();
        let app = Router::new().fallback(answer).with_state(shared);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        KindServer {
            base_url,
            seen,
            task,
        }
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The bodies of the `POST` requests to `path`.
    pub fn posted(&self, path: &str) -> Vec<Value> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST" && s.path == path)
            .map(|s| s.body)
            .collect()
    }

    /// The requests that asked the model for a reply: `/completion` and
    /// `/v1/chat/completions`, as (path, body).
    pub fn model_requests(&self) -> Vec<(String, Value)> {
        self.seen()
            .into_iter()
            .filter(|s| s.path == "/completion" || s.path == "/v1/chat/completions")
            .map(|s| (s.path, s.body))
            .collect()
    }
}

fn json_answer(value: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn not_found() -> Response {
    (axum::http::StatusCode::NOT_FOUND, "no such route").into_response()
}

fn sse(events: Vec<String>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        events.concat(),
    )
        .into_response()
}

async fn answer(State(shared): State<Shared>, method: Method, uri: Uri, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_owned();
    shared.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.clone(),
        body: body.clone(),
    });
    let llama = shared.kind == Kind::LlamaCpp;
    match (method.as_str(), path.as_str()) {
        ("GET", "/props") if llama => json_answer(json!({
            "default_generation_settings": {"n_ctx": 8192},
            "chat_template": "…",
        })),
        ("GET", "/version") if shared.kind == Kind::Vllm => {
            json_answer(json!({"version": "0.11.0"}))
        }
        ("POST", "/apply-template") if llama => json_answer(json!({"prompt": rendered(&body)})),
        ("POST", "/completion") if llama => {
            let script = (shared.script)(&body);
            let mut events: Vec<String> = script
                .pieces
                .iter()
                .map(|p| format!("data: {}\n\n", json!({"content": p, "stop": false})))
                .collect();
            let mut last = json!({
                "content": "", "stop": true,
                "stop_type": if script.stopped_at.is_some() { "word" } else { "eos" },
                "stopping_word": script.stopped_at.clone().unwrap_or_default(),
                "tokens_evaluated": 321, "tokens_predicted": 17,
                "timings": {"prompt_n": 321, "predicted_n": 17},
            });
            if script.stopped_at.is_none() {
                last["stopping_word"] = "".into();
            }
            events.push(format!("data: {last}\n\n"));
            sse(events)
        }
        ("POST", "/v1/chat/completions") => {
            // The server stops at the request's first stop sequence, left out of the text.
            let script = (shared.script)(&body);
            let whole: String = script.pieces.concat();
            let cut = body["stop"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().and_then(|s| whole.find(s)))
                .min()
                .unwrap_or(whole.len());
            let script = Script::new(
                &whole[..cut],
                script
                    .pieces
                    .first()
                    .map_or(1, |p| p.chars().count().max(1)),
                None,
            );
            let chunk = |delta: Value, finish: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                )
            };
            let mut events: Vec<String> = script
                .pieces
                .iter()
                .map(|p| chunk(json!({"content": p}), Value::Null))
                .collect();
            events.push(chunk(json!({}), "stop".into()));
            events.push(format!(
                "data: {}\n\n",
                json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
                       "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}})
            ));
            events.push("data: [DONE]\n\n".to_owned());
            sse(events)
        }
        _ => not_found(),
    }
}
