//! The Chat Completions forms of a reply: `chat.completion.chunk` events and one
//! `chat.completion`.

use axum::response::sse::Event;
use serde_json::{Map, Value, json};

use super::{Ending, Gathered, Wire, json_event, unix_seconds};
use crate::ProxyError;
use crate::response::Piece;

/// Writes one reply as `chat.completion.chunk` events (`data: [DONE]` at the end), or as
/// one `chat.completion`.
pub(crate) struct ChunkWriter {
    id: String,
    model: String,
    created: u64,
    /// The client asked for usage in the stream (`stream_options.include_usage`): a last
    /// chunk with empty `choices`; else usage rides on the finish chunk, as llama-server
    /// sends it.
    include_usage: bool,
}

impl ChunkWriter {
    pub(crate) fn new(id: &str, model: &str, include_usage: bool) -> Self {
        Self {
            id: format!("chatcmpl-{id}"),
            model: model.to_owned(),
            created: unix_seconds(),
            include_usage,
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
    }

    /// The usage chunk OpenAI sends after the finish when asked: no choices, `usage`.
    fn usage(&self, usage: &Map<String, Value>) -> Value {
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

impl Wire for ChunkWriter {
    /// The first chunk: the assistant role and empty content.
    fn start(&mut self) -> Vec<Event> {
        vec![json_event(
            &self.chunk(json!({"role": "assistant", "content": ""}), None),
        )]
    }

    fn piece(&mut self, piece: Piece) -> Vec<Event> {
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
            Piece::CallEnd { .. } => return Vec::new(),
        };
        vec![json_event(&self.chunk(delta, None))]
    }

    /// The last chunk (an empty delta and the finish reason), the usage, `[DONE]`.
    fn finish(&mut self, ending: &Ending<'_>) -> Vec<Event> {
        let mut finish = self.chunk(json!({}), Some(ending.finish.as_openai()));
        let mut events = Vec::with_capacity(3);
        match ending.usage {
            Some(usage) if self.include_usage => {
                events.push(json_event(&finish));
                events.push(json_event(&self.usage(usage)));
            }
            Some(usage) => {
                finish["usage"] = Value::Object(usage.clone());
                events.push(json_event(&finish));
            }
            None => events.push(json_event(&finish)),
        }
        events.push(Event::default().data("[DONE]"));
        events
    }

    /// An error event and no `[DONE]`.
    fn fail(&mut self, error: &ProxyError) -> Vec<Event> {
        vec![json_event(&error.body())]
    }

    /// The `chat.completion` object: `content` null when empty and calls were made.
    fn whole(&self, reply: Gathered, ending: &Ending<'_>) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), "assistant".into());
        let calls: Vec<Value> = reply
            .calls()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        let content = reply.text();
        let content = if content.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            content.into()
        };
        message.insert("content".into(), content);
        let reasoning = reply.reasoning();
        if !reasoning.is_empty() {
            message.insert("reasoning_content".into(), reasoning.into());
        }
        if !calls.is_empty() {
            message.insert("tool_calls".into(), calls.into());
        }
        let mut value = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": ending.finish.as_openai()}],
        });
        if let Some(usage) = ending.usage {
            value["usage"] = Value::Object(usage.clone());
        }
        value
    }
}
