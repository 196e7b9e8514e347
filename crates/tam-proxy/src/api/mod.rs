//! The client APIs the proxy speaks. Each reads its own request into the one
//! [`Conversation`](crate::conversation::Conversation) and writes the one stream of decoded
//! [`Piece`]s in its own events ([`Wire`]); none reaches into another.
//!
//! * [`chat`] — OpenAI Chat Completions (`POST /v1/chat/completions`);
//! * [`messages`] — Anthropic Messages (`POST /v1/messages`, `…/count_tokens`);
//! * [`responses`] — OpenAI Responses (`POST /v1/responses`).

pub(crate) mod chat;
mod chat_wire;
pub(crate) mod messages;
pub(crate) mod responses;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::sse::Event;
use serde_json::{Map, Value};

use crate::ProxyError;
use crate::response::{Finish, Piece};

/// How one reply ended: what every API's closing events say.
#[derive(Debug, Clone)]
pub(crate) struct Ending<'a> {
    pub(crate) finish: &'a Finish,
    /// The upstream's `usage` (`prompt_tokens`, `completion_tokens`, …), when it sent one.
    pub(crate) usage: Option<&'a Map<String, Value>>,
    /// The client's own stop sequence the upstream stopped at, when it said so.
    pub(crate) stop_sequence: Option<&'a str>,
}

impl Ending<'_> {
    /// A count of the upstream's usage (`prompt_tokens`, `completion_tokens`), 0 when it
    /// sent none.
    pub(crate) fn tokens(&self, key: &str) -> u64 {
        self.usage
            .and_then(|usage| usage.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }
}

/// The shape of an API's error bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorShape {
    /// `{"error":{"message","type","code","param"}}` (Chat Completions, Responses).
    OpenAi,
    /// `{"type":"error","error":{"type","message"}}` (Messages).
    Anthropic,
}

impl ErrorShape {
    /// The shape of the API a path belongs to.
    pub(crate) fn of_path(path: &str) -> Self {
        if path == "/v1/messages" || path.starts_with("/v1/messages/") {
            ErrorShape::Anthropic
        } else {
            ErrorShape::OpenAi
        }
    }
}

/// What one API writes for one reply: the events of a stream, piece by piece, or the
/// whole reply at once.
pub(crate) trait Wire: Send + 'static {
    /// The events before the first piece.
    fn start(&mut self) -> Vec<Event>;
    /// The events of one piece.
    fn piece(&mut self, piece: Piece) -> Vec<Event>;
    /// The events that end a reply.
    fn finish(&mut self, ending: &Ending<'_>) -> Vec<Event>;
    /// The events that end a reply the upstream broke, or whose streamed call could not be
    /// completed.
    fn fail(&mut self, error: &ProxyError) -> Vec<Event>;
    /// The whole reply (a request without `stream`).
    fn whole(&self, reply: Gathered, ending: &Ending<'_>) -> Value;
}

/// One item of a whole reply, in the order the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    Text(String),
    Reasoning(String),
    Call {
        id: String,
        name: String,
        arguments: String,
    },
}

/// Pieces gathered into a whole reply: prose, reasoning and calls in order, adjacent text
/// joined.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    pub(crate) items: Vec<Item>,
    /// Where call `index` is in `items`.
    calls: Vec<usize>,
}

impl Gathered {
    pub(crate) fn push(&mut self, piece: Piece) {
        match piece {
            Piece::Content(text) => match self.items.last_mut() {
                Some(Item::Text(previous)) => previous.push_str(&text),
                _ => self.items.push(Item::Text(text)),
            },
            Piece::Reasoning(text) => match self.items.last_mut() {
                Some(Item::Reasoning(previous)) => previous.push_str(&text),
                _ => self.items.push(Item::Reasoning(text)),
            },
            Piece::CallStart { index, id, name } => {
                if self.calls.len() <= index {
                    self.calls.resize(index + 1, usize::MAX);
                }
                self.calls[index] = self.items.len();
                self.items.push(Item::Call {
                    id,
                    name,
                    arguments: String::new(),
                });
            }
            Piece::CallArguments { index, text } => {
                if let Some(Item::Call { arguments, .. }) =
                    self.calls.get(index).and_then(|&at| self.items.get_mut(at))
                {
                    arguments.push_str(&text);
                }
            }
            Piece::CallEnd { .. } => {}
        }
    }

    /// The text of the reply, joined.
    pub(crate) fn text(&self) -> String {
        self.items
            .iter()
            .filter_map(|item| match item {
                Item::Text(text) => Some(text.as_str()),
                Item::Reasoning(_) | Item::Call { .. } => None,
            })
            .collect()
    }

    /// The reasoning of the reply, joined.
    pub(crate) fn reasoning(&self) -> String {
        self.items
            .iter()
            .filter_map(|item| match item {
                Item::Reasoning(text) => Some(text.as_str()),
                Item::Text(_) | Item::Call { .. } => None,
            })
            .collect()
    }

    /// The calls, in the order of their indexes.
    pub(crate) fn calls(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.calls
            .iter()
            .filter_map(|&at| self.items.get(at))
            .filter_map(|item| match item {
                Item::Call {
                    id,
                    name,
                    arguments,
                } => Some((id.as_str(), name.as_str(), arguments.as_str())),
                Item::Text(_) | Item::Reasoning(_) => None,
            })
    }
}

/// An id unique in this process (time and a counter), for response and call ids.
pub(crate) fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{nanos:x}{count:x}")
}

/// The fields of a request body named in `passed_on`, as the upstream takes them.
pub(crate) fn passed_on(request: &Map<String, Value>, passed_on: &[&str]) -> Map<String, Value> {
    request
        .iter()
        .filter(|(key, _)| passed_on.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A server-sent event whose data is `value` as JSON.
pub(crate) fn json_event(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

/// A server-sent event named `name` whose data is `value` as JSON.
pub(crate) fn named_event(name: &str, value: &Value) -> Event {
    Event::default().event(name).data(value.to_string())
}
