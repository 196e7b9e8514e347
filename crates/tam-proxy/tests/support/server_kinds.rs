//! Scripted upstreams of the kinds the proxy tells apart for strict calls, on
//! `tam_testkit::upstream` (127.0.0.1): a llama-server (`GET /props`, `POST
//! /apply-template`, `POST /completion` streaming its native events, and `POST
//! /v1/chat/completions`), a vLLM (`GET /version` and chat completions) and a server that
//! answers neither (chat completions only). Each records every request (method, path, JSON
//! body) and answers the model's requests with the reply its script makes of the request's
//! body.
#![allow(dead_code)]

use serde_json::{Value, json};
use tam_testkit::upstream::{Reply, Request, Server};

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

/// A running scripted server: the kit's, every request (the kind probes too) recorded.
pub struct KindServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    server: Server,
}

impl KindServer {
    /// Starts a server of `kind` whose model writes what `script` makes of each request.
    pub async fn start(
        kind: Kind,
        script: impl Fn(&Value) -> Script + Send + Sync + 'static,
    ) -> Self {
        let server =
            Server::scripted_with_probes(move |request: &Request| answer(kind, &script, request))
                .await;
        KindServer {
            base_url: server.base_url.clone(),
            server,
        }
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.server
            .requests()
            .into_iter()
            .map(|r| Seen {
                method: r.method,
                path: r.path.split('?').next().unwrap_or_default().to_owned(),
                body: r.body,
            })
            .collect()
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

fn not_found() -> Reply {
    Reply::Status {
        status: 404,
        body: "no such route".into(),
    }
}

fn sse(events: Vec<String>) -> Reply {
    Reply::stream(events.concat())
}

fn answer(kind: Kind, script: &dyn Fn(&Value) -> Script, request: &Request) -> Reply {
    let body = &request.body;
    let path = request.path.split('?').next().unwrap_or_default();
    let llama = kind == Kind::LlamaCpp;
    match (request.method.as_str(), path) {
        ("GET", "/props") if llama => Reply::ok(json!({
            "default_generation_settings": {"n_ctx": 8192},
            "chat_template": "…",
        })),
        ("GET", "/version") if kind == Kind::Vllm => Reply::ok(json!({"version": "0.11.0"})),
        ("POST", "/apply-template") if llama => Reply::ok(json!({"prompt": rendered(body)})),
        ("POST", "/completion") if llama => {
            let script = script(body);
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
            let script = script(body);
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
