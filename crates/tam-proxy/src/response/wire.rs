//! The OpenAI wire forms of a reply: ids, `chat.completion.chunk` and `chat.completion`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::*;

/// A response id unique in this process (time and a counter), for `chatcmpl-…` and
/// `call_…` ids.
pub(crate) fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{nanos:x}{count:x}")
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes pieces as `chat.completion.chunk` JSON objects of one response.
pub(crate) struct ChunkWriter {
    pub(super) id: String,
    pub(super) model: String,
    pub(super) created: u64,
}

impl ChunkWriter {
    pub(crate) fn new(id: &str, model: &str) -> Self {
        Self {
            id: format!("chatcmpl-{id}"),
            model: model.to_owned(),
            created: unix_seconds(),
        }
    }

    pub(super) fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
    }

    /// The first chunk: the assistant role and empty content.
    pub(crate) fn role(&self) -> Value {
        self.chunk(json!({"role": "assistant", "content": ""}), None)
    }

    /// One piece as a chunk.
    pub(crate) fn piece(&self, piece: Piece) -> Value {
        let delta = match piece {
            Piece::Content(text) => json!({"content": text}),
            Piece::Reasoning(text) => json!({"reasoning_content": text}),
            Piece::CallStart { index, id, name } => json!({"tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}),
            Piece::CallArguments { index, text } => json!({"tool_calls": [{
                "index": index, "function": {"arguments": text},
            }]}),
        };
        self.chunk(delta, None)
    }

    /// The last chunk: an empty delta and the finish reason.
    pub(crate) fn finish(&self, finish_reason: &str) -> Value {
        self.chunk(json!({}), Some(finish_reason))
    }

    /// The usage chunk OpenAI sends after the finish when asked: no choices, `usage`.
    pub(crate) fn usage(&self, usage: &Map<String, Value>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage,
        })
    }
}

/// Pieces gathered into one `chat.completion` (a request without `stream`).
#[derive(Default)]
pub(crate) struct Completion {
    pub(super) content: String,
    pub(super) reasoning: String,
    /// (id, name, arguments) by index.
    pub(super) calls: Vec<(String, String, String)>,
}

impl Completion {
    pub(crate) fn push(&mut self, piece: Piece) {
        match piece {
            Piece::Content(text) => self.content.push_str(&text),
            Piece::Reasoning(text) => self.reasoning.push_str(&text),
            Piece::CallStart { index, id, name } => {
                if self.calls.len() <= index {
                    self.calls.resize_with(index + 1, Default::default);
                }
                self.calls[index].0 = id;
                self.calls[index].1 = name;
            }
            Piece::CallArguments { index, text } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.2.push_str(&text);
                }
            }
        }
    }

    /// The `chat.completion` object: `content` null when empty and calls were made.
    pub(crate) fn into_json(self, id: &str, model: &str, finish_reason: &str) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), "assistant".into());
        let content = if self.content.is_empty() && !self.calls.is_empty() {
            Value::Null
        } else {
            self.content.into()
        };
        message.insert("content".into(), content);
        if !self.reasoning.is_empty() {
            message.insert("reasoning_content".into(), self.reasoning.into());
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .into_iter()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                })
                .collect();
            message.insert("tool_calls".into(), calls.into());
        }
        json!({
            "id": format!("chatcmpl-{id}"),
            "object": "chat.completion",
            "created": unix_seconds(),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        })
    }
}
