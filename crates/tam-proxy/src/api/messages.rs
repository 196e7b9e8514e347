//! Anthropic Messages (`POST /v1/messages`, `POST /v1/messages/count_tokens`): a client's
//! request read into the one [`Conversation`], and the reply written as a `message` or as
//! its stream of events (`message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping` on idle, `error`).

use axum::extract::Request;
use axum::http::header;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tam_model::{Message, ModelOptions};

use super::{Ending, Gathered, Item, Wire, named_event, passed_on};
use crate::ProxyError;
use crate::Shared;
use crate::conversation::{Conversation, Turn, past_call};
use crate::history::PastCall;
use crate::prompt::Choice;
use crate::response::{Finish, Piece};

/// Fields the upstream gets as the client sent them; every other field (`metadata`,
/// `thinking`, `context_management`, `output_config`, `service_tier`, …) is read by the
/// proxy or not sent on.
const PASSED_ON: &[&str] = &["temperature", "top_p", "top_k"];

/// Reads a Messages request body, and the writer of its reply (`id`: the reply's id).
pub(crate) fn read(
    body: &[u8],
    default_model: &str,
    id: &str,
) -> Result<(Conversation, MessagesWriter), ProxyError> {
    let conversation = read_conversation(body, default_model)?;
    let writer = MessagesWriter::new(id, &conversation.model);
    Ok((conversation, writer))
}

fn invalid(message: impl Into<String>) -> ProxyError {
    ProxyError::invalid("invalid_request_error", message)
}

/// A Messages request as the one conversation.
pub(crate) fn read_conversation(
    body: &[u8],
    default_model: &str,
) -> Result<Conversation, ProxyError> {
    let request: Map<String, Value> = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("the body is not a JSON object: {e}")))?;
    let model = match request.get("model") {
        Some(Value::String(model)) if !model.is_empty() => model.clone(),
        None | Some(Value::Null) if !default_model.is_empty() => default_model.to_owned(),
        _ => return Err(invalid("model: must be a non-empty string")),
    };
    let mut turns = Vec::new();
    match request.get("system") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => turns.push(Turn::System(text.clone())),
        Some(Value::Array(blocks)) => {
            let text = text_blocks(blocks, "system")?;
            turns.push(Turn::System(text));
        }
        Some(_) => {
            return Err(invalid(
                "system: must be a string or an array of text blocks",
            ));
        }
    }
    let Some(Value::Array(messages)) = request.get("messages") else {
        return Err(invalid("messages: must be an array"));
    };
    for (position, message) in messages.iter().enumerate() {
        read_message(message, position, &mut turns)?;
    }
    let tools = read_tools(request.get("tools"))?;
    let (choice, parallel) = read_tool_choice(request.get("tool_choice"))?;
    let mut options = ModelOptions::new();
    options.max_tokens = match request.get("max_tokens") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| invalid("max_tokens: must be a positive integer"))?,
        ),
    };
    options.stop = match request.get("stop_sequences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(stops)) => stops
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| invalid("stop_sequences: must be an array of strings"))?,
        Some(_) => return Err(invalid("stop_sequences: must be an array of strings")),
    };
    let stream = match request.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(stream)) => *stream,
        Some(_) => return Err(invalid("stream: must be a boolean")),
    };
    let extra = passed_on(&request, PASSED_ON);
    Ok(Conversation {
        model,
        turns,
        tools,
        choice,
        parallel,
        options,
        extra,
        stream,
        include_usage: false,
    })
}

/// The text of an array of text blocks (joined by a line break); another block type is a
/// 400 naming it.
fn text_blocks(blocks: &[Value], what: &str) -> Result<String, ProxyError> {
    let mut texts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match (block_type(block), block.get("text").and_then(Value::as_str)) {
            ("text", Some(text)) => texts.push(text),
            ("text", None) => return Err(invalid(format!("{what}: a text block needs 'text'"))),
            (other, _) => return Err(not_text(what, other)),
        }
    }
    Ok(texts.join("\n"))
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// A block the upstream, a text model, cannot take (`image`, `document`, …).
fn not_text(what: &str, kind: &str) -> ProxyError {
    ProxyError::invalid(
        "invalid_request_error",
        format!(
            "{what}: a content block of type '{kind}' cannot be passed to the upstream, a text model"
        ),
    )
}

/// One message's turns, in block order: text runs as the role's turn, `tool_use` blocks as
/// the assistant's calls, `tool_result` blocks as tool results; `thinking` and
/// `redacted_thinking` dropped (the model does not see its past reasoning).
fn read_message(message: &Value, position: usize, turns: &mut Vec<Turn>) -> Result<(), ProxyError> {
    let at = format!("messages.{position}");
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{at}.role: must be 'user' or 'assistant'")))?;
    let assistant = match role {
        "user" => false,
        "assistant" => true,
        // Claude Code sends its environment's details as a `system` message among the
        // turns (not a role of the Messages API, but what the real client sends).
        "system" => {
            turns.push(Turn::System(system_text(message, &at)?));
            return Ok(());
        }
        other => return Err(invalid(format!("{at}.role: unknown role '{other}'"))),
    };
    let blocks = content_blocks(message, &at)?;
    let mut text = String::new();
    let mut calls: Vec<PastCall> = Vec::new();
    let flush = |text: &mut String, calls: &mut Vec<PastCall>, turns: &mut Vec<Turn>| {
        if assistant {
            if !text.is_empty() || !calls.is_empty() {
                turns.push(Turn::Assistant {
                    text: std::mem::take(text),
                    calls: std::mem::take(calls),
                });
            }
        } else if !text.is_empty() {
            turns.push(Turn::User(std::mem::take(text)));
        }
    };
    for (index, block) in blocks.iter().enumerate() {
        let at = format!("{at}.content.{index}");
        match block_type(block) {
            "text" => {
                let piece = block
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{at}.text: must be a string")))?;
                if !calls.is_empty() {
                    // Text after calls: a new turn of its own.
                    flush(&mut text, &mut calls, turns);
                }
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(piece);
            }
            "tool_use" if assistant => calls.push(tool_use_call(block, &at)?),
            "tool_result" if !assistant => {
                flush(&mut text, &mut calls, turns);
                turns.push(tool_result_turn(block, &at)?);
            }
            "thinking" | "redacted_thinking" => {}
            "image" | "document" | "search_result" | "container_upload" => {
                return Err(not_text(&at, block_type(block)));
            }
            "" => return Err(invalid(format!("{at}.type: a content block needs a type"))),
            other => {
                return Err(invalid(format!(
                    "{at}: a '{other}' block is not accepted in a {role} message"
                )));
            }
        }
    }
    flush(&mut text, &mut calls, turns);
    Ok(())
}

/// The text of a `system` message among the turns.
fn system_text(message: &Value, at: &str) -> Result<String, ProxyError> {
    Ok(match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => text_blocks(blocks, &format!("{at}.content"))?,
        _ => {
            return Err(invalid(format!(
                "{at}.content: must be a string or an array of blocks"
            )));
        }
    })
}

/// A user or assistant message's content as blocks (a string is one text block).
fn content_blocks(message: &Value, at: &str) -> Result<Vec<Value>, ProxyError> {
    Ok(match message.get("content") {
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => {
            return Err(invalid(format!(
                "{at}.content: must be a string or an array of blocks"
            )));
        }
    })
}

/// A `tool_use` block as the assistant's past call.
fn tool_use_call(block: &Value, at: &str) -> Result<PastCall, ProxyError> {
    let name = block
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{at}.name: must be a string")))?;
    let id = block.get("id").and_then(Value::as_str).map(str::to_owned);
    let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
    Ok(past_call(id, name, input.to_string()))
}

/// A `tool_result` block as a tool result turn.
fn tool_result_turn(block: &Value, at: &str) -> Result<Turn, ProxyError> {
    let content = match block.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(content)) => content.clone(),
        Some(Value::Array(blocks)) => text_blocks(blocks, &format!("{at}.content"))?,
        Some(_) => {
            return Err(invalid(format!(
                "{at}.content: must be a string or an array of text blocks"
            )));
        }
    };
    Ok(Turn::ToolResult {
        call_id: block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        name: None,
        content,
        is_error: block.get("is_error").and_then(Value::as_bool) == Some(true),
    })
}

/// `tools`: client tools (`name`, `description`, `input_schema`) are offered; a tool of
/// another `type` (a server tool: web search, code execution, a computer, a text editor, …)
/// is not, and is named in one log line: the upstream is a text model and runs nothing.
fn read_tools(tools: Option<&Value>) -> Result<Vec<tool_schema::ToolDefinition>, ProxyError> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(invalid("tools: must be an array")),
    };
    let mut definitions = Vec::with_capacity(tools.len());
    let mut not_offered = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("tools.{index}.name: must be a string")))?;
        match tool.get("type").and_then(Value::as_str) {
            None | Some("custom") => {}
            Some(kind) => {
                not_offered.push(format!("{name} ({kind})"));
                continue;
            }
        }
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        definitions.push(
            super::chat::tool_definition(name, description, tool.get("input_schema").cloned())
                .map_err(|e| invalid(format!("tools.{index}: {e}")))?,
        );
    }
    if !not_offered.is_empty() {
        tracing::info!(
            target: "tam_proxy::request",
            tools = %not_offered.join(", "),
            "server tools not offered to the model"
        );
    }
    Ok(definitions)
}

/// `tool_choice`: `auto` (default), `any` (a call required), `tool` with `name`, `none`;
/// `disable_parallel_tool_use` (one call at most).
fn read_tool_choice(choice: Option<&Value>) -> Result<(Option<Choice>, bool), ProxyError> {
    let Some(choice) = choice.filter(|c| !c.is_null()) else {
        return Ok((Some(Choice::Auto), true));
    };
    let parallel = choice
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        != Some(true);
    let choice = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => Some(Choice::Auto),
        Some("any") => Some(Choice::Required),
        Some("none") => None,
        Some("tool") => Some(Choice::Named(
            choice
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("tool_choice.name: must be a string"))?
                .to_owned(),
        )),
        _ => return Err(invalid(format!("tool_choice: unknown choice {choice}"))),
    };
    Ok((choice, parallel))
}

/// The block open on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    /// The `tool_use` block of call `index`.
    Tool(usize),
}

/// A call whose first piece came while another call's block was open: it goes out when
/// that one ends (content blocks do not interleave).
struct Queued {
    index: usize,
    id: String,
    name: String,
    arguments: String,
    ended: bool,
}

/// Writes one reply as a Messages `message`, or its stream of events.
pub(crate) struct MessagesWriter {
    id: String,
    model: String,
    open: Option<Open>,
    /// The index of the next content block.
    blocks: usize,
    queued: Vec<Queued>,
}

/// A tool-use id in Anthropic's form (`toolu_…`) for a call id of the proxy's (`call_…`)
/// or the upstream's.
fn tool_use_id(id: &str) -> String {
    format!("toolu_{}", id.strip_prefix("call_").unwrap_or(id))
}

impl MessagesWriter {
    pub(crate) fn new(id: &str, model: &str) -> Self {
        Self {
            id: format!("msg_{id}"),
            model: model.to_owned(),
            open: None,
            blocks: 0,
            queued: Vec::new(),
        }
    }

    fn close(&mut self, events: &mut Vec<Event>) {
        if self.open.take().is_some() {
            let index = self.blocks - 1;
            events.push(named_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    fn open_block(&mut self, open: Open, block: Value, events: &mut Vec<Event>) {
        self.close(events);
        events.push(named_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": self.blocks, "content_block": block}),
        ));
        self.blocks += 1;
        self.open = Some(open);
    }

    fn delta(&self, delta: Value, events: &mut Vec<Event>) {
        events.push(named_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": self.blocks - 1, "delta": delta}),
        ));
    }

    fn start_call(&mut self, index: usize, id: &str, name: &str, events: &mut Vec<Event>) {
        self.open_block(
            Open::Tool(index),
            json!({"type": "tool_use", "id": tool_use_id(id), "name": name, "input": {}}),
            events,
        );
    }

    fn call_arguments(&self, text: &str, events: &mut Vec<Event>) {
        if !text.is_empty() {
            self.delta(
                json!({"type": "input_json_delta", "partial_json": text}),
                events,
            );
        }
    }

    /// The calls queued behind the one that just ended, as far as they have ended.
    fn flush_queued(&mut self, events: &mut Vec<Event>) {
        while !matches!(self.open, Some(Open::Tool(_))) && !self.queued.is_empty() {
            let call = self.queued.remove(0);
            self.start_call(call.index, &call.id, &call.name, events);
            self.call_arguments(&call.arguments, events);
            if call.ended {
                self.close(events);
            }
        }
    }
}

impl Wire for MessagesWriter {
    fn start(&mut self) -> Vec<Event> {
        vec![named_event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }}),
        )]
    }

    fn piece(&mut self, piece: Piece) -> Vec<Event> {
        let mut events = Vec::new();
        match piece {
            Piece::Content(text) => {
                if self.open != Some(Open::Text) {
                    self.open_block(Open::Text, json!({"type": "text", "text": ""}), &mut events);
                }
                self.delta(json!({"type": "text_delta", "text": text}), &mut events);
            }
            Piece::Reasoning(text) => {
                if self.open != Some(Open::Thinking) {
                    self.open_block(
                        Open::Thinking,
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                        &mut events,
                    );
                }
                self.delta(
                    json!({"type": "thinking_delta", "thinking": text}),
                    &mut events,
                );
            }
            Piece::CallStart { index, id, name } => {
                if matches!(self.open, Some(Open::Tool(_))) || !self.queued.is_empty() {
                    self.queued.push(Queued {
                        index,
                        id,
                        name,
                        arguments: String::new(),
                        ended: false,
                    });
                } else {
                    self.start_call(index, &id, &name, &mut events);
                }
            }
            Piece::CallArguments { index, text } => {
                if self.open == Some(Open::Tool(index)) {
                    self.call_arguments(&text, &mut events);
                } else if let Some(call) = self.queued.iter_mut().find(|q| q.index == index) {
                    call.arguments.push_str(&text);
                }
            }
            Piece::CallEnd { index } => {
                if self.open == Some(Open::Tool(index)) {
                    self.close(&mut events);
                    self.flush_queued(&mut events);
                } else if let Some(call) = self.queued.iter_mut().find(|q| q.index == index) {
                    call.ended = true;
                }
            }
        }
        events
    }

    fn finish(&mut self, ending: &Ending<'_>) -> Vec<Event> {
        let mut events = Vec::new();
        self.close(&mut events);
        self.flush_queued(&mut events);
        self.close(&mut events);
        let (stop_reason, stop_sequence) = stop_reason(ending);
        events.push(named_event(
            "message_delta",
            &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                "usage": usage(ending)}),
        ));
        events.push(named_event(
            "message_stop",
            &json!({"type": "message_stop"}),
        ));
        events
    }

    fn fail(&mut self, error: &ProxyError) -> Vec<Event> {
        vec![named_event("error", &error.anthropic_body())]
    }

    fn whole(&self, reply: Gathered, ending: &Ending<'_>) -> Value {
        let content: Vec<Value> = reply
            .items
            .into_iter()
            .map(|item| match item {
                Item::Text(text) => json!({"type": "text", "text": text}),
                Item::Reasoning(text) => {
                    json!({"type": "thinking", "thinking": text, "signature": ""})
                }
                Item::Call {
                    id,
                    name,
                    arguments,
                } => {
                    let input: Value =
                        serde_json::from_str(&arguments).unwrap_or_else(|_| json!({}));
                    json!({"type": "tool_use", "id": tool_use_id(&id), "name": name, "input": input})
                }
            })
            .collect();
        let (stop_reason, stop_sequence) = stop_reason(ending);
        json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
            "usage": usage(ending),
        })
    }
}

/// `stop_reason` and `stop_sequence` for how the reply ended.
fn stop_reason(ending: &Ending<'_>) -> (&'static str, Option<String>) {
    match ending.finish {
        Finish::ToolCalls => ("tool_use", None),
        Finish::Length => ("max_tokens", None),
        Finish::Stop => match ending.stop_sequence {
            Some(sequence) => ("stop_sequence", Some(sequence.to_owned())),
            None => ("end_turn", None),
        },
        Finish::Other(_) => ("end_turn", None),
    }
}

/// `usage` from the upstream's counts.
fn usage(ending: &Ending<'_>) -> Value {
    json!({
        "input_tokens": ending.tokens("prompt_tokens"),
        "output_tokens": ending.tokens("completion_tokens"),
    })
}

/// `POST /v1/messages/count_tokens`: the tokens of the prompt the upstream would get for
/// this request (the system prompt with the tools, the demonstration, the history as
/// text): counted by the upstream's tokenizer where it has one (llama-server's
/// `POST /tokenize`, beside its `/v1`), else estimated as one token per four bytes of the
/// messages' text, rounded up, plus four per message (the chat template's role markers).
pub(crate) async fn count_tokens(
    shared: &Shared,
    request: Request,
) -> Result<Response, ProxyError> {
    let config = &shared.config;
    let body = crate::routes::read_body(config, request).await?;
    let conversation = read_conversation(&body, &config.upstream.model)?;
    let translated = crate::conversation::translate(conversation, config.decoder.protocol)?;
    let _slot = shared.upstream_slot().await?;
    let tokens = match upstream_count(shared, &translated.messages).await {
        Some(tokens) => tokens,
        None => estimate(&translated.messages),
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        json!({"input_tokens": tokens}).to_string(),
    )
        .into_response())
}

/// The prompt's text for a tokenizer: each message's role and content on lines of their
/// own.
fn prompt_text(messages: &[Message]) -> String {
    let mut text = String::new();
    for message in messages {
        text.push_str(message.role.as_str());
        text.push('\n');
        text.push_str(&message.content);
        text.push('\n');
    }
    text
}

/// One token per four bytes of text (rounded up), plus four per message.
fn estimate(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| (m.content.len() as u64).div_ceil(4) + 4)
        .sum()
}

/// The upstream tokenizer's count (llama-server: `POST {server}/tokenize`), or `None` when
/// the upstream has none or does not answer in time.
async fn upstream_count(shared: &Shared, messages: &[Message]) -> Option<u64> {
    let upstream = &shared.config.upstream;
    let base = upstream.base_url.trim_end_matches('/');
    let server = base.strip_suffix("/v1").unwrap_or(base);
    let mut request = shared
        .http
        .post(format!("{server}/tokenize"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(json!({"content": prompt_text(messages)}).to_string());
    if let Some(key) = &upstream.api_key {
        request = request.bearer_auth(key);
    }
    let response = tokio::time::timeout(upstream.idle_timeout, request.send())
        .await
        .ok()?
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = tokio::time::timeout(upstream.idle_timeout, response.bytes())
        .await
        .ok()?
        .ok()?;
    let body: Value = serde_json::from_slice(&bytes).ok()?;
    let tokens = body.get("tokens")?.as_array()?;
    Some(tokens.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_json(value: Value) -> Result<Conversation, ProxyError> {
        read_conversation(value.to_string().as_bytes(), "")
    }

    #[test]
    fn blocks_become_turns() {
        let c = read_json(json!({
            "model": "m", "max_tokens": 100,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "x"},
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.txt"}]},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": true},
                    {"type": "text", "text": "And?"},
                ]},
            ],
            "tools": [
                {"name": "Bash", "description": "Run.", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
            "stop_sequences": ["END"], "temperature": 0.2, "top_k": 5,
            "thinking": {"type": "adaptive"}, "metadata": {"user_id": "u"},
        }))
        .unwrap();
        assert_eq!(c.model, "m");
        assert_eq!(c.options.max_tokens, Some(100));
        assert_eq!(c.options.stop, ["END"]);
        assert_eq!(
            Value::Object(c.extra),
            json!({"temperature": 0.2, "top_k": 5})
        );
        assert_eq!(c.choice, Some(Choice::Required));
        assert!(!c.parallel);
        assert_eq!(c.tools.len(), 1, "the server tool is not offered");
        let shapes: Vec<String> = c
            .turns
            .iter()
            .map(|t| match t {
                Turn::System(text) => format!("system {text}"),
                Turn::User(text) => format!("user {text}"),
                Turn::Assistant { text, calls } => format!(
                    "assistant {text} {:?}",
                    calls
                        .iter()
                        .map(|c| (&c.name, &c.raw_args, &c.id))
                        .collect::<Vec<_>>()
                ),
                Turn::ToolResult {
                    call_id,
                    content,
                    is_error,
                    ..
                } => format!("result {call_id:?} {content} {is_error}"),
            })
            .collect();
        assert_eq!(
            shapes,
            [
                "system Be brief.",
                "user List the files.",
                r#"assistant Listing. [("Bash", "{\"command\":\"ls\"}", Some("toolu_1"))]"#,
                r#"result Some("toolu_1") a.txt false"#,
                r#"result Some("toolu_2") boom true"#,
                "user And?",
            ]
        );
    }

    #[test]
    fn bad_requests_are_400s_naming_what_is_wrong() {
        for (request, says) in [
            (json!([1]), "not a JSON object"),
            (json!({"messages": []}), "model"),
            (json!({"model": "m"}), "messages"),
            (
                json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]}),
                "role",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}),
                "'image'",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]}),
                "'document'",
            ),
            (
                json!({"model": "m", "messages": [], "max_tokens": -1}),
                "max_tokens",
            ),
            (
                json!({"model": "m", "messages": [], "tool_choice": {"type": "maybe"}}),
                "tool_choice",
            ),
            (
                json!({"model": "m", "messages": [], "tools": [{"description": "x"}]}),
                "tools.0.name",
            ),
            (
                json!({"model": "m", "messages": [], "stop_sequences": [1]}),
                "stop_sequences",
            ),
        ] {
            let error = read_json(request.clone()).unwrap_err();
            assert_eq!(error.status().as_u16(), 400, "{request}");
            assert!(error.to_string().contains(says), "{request}: {error}");
            assert_eq!(
                error.anthropic_body()["error"]["type"],
                "invalid_request_error"
            );
        }
    }

    fn events_text(events: &[Event]) -> String {
        events.iter().map(|e| format!("{e:?}")).collect()
    }

    /// Content blocks never interleave: a call that starts while another's block is open
    /// waits for that one's end, then goes out whole.
    #[test]
    fn calls_go_out_one_block_after_another() {
        let mut w = MessagesWriter::new("x", "m");
        let mut events = w.start();
        for piece in [
            Piece::Content("Hi".into()),
            Piece::CallStart {
                index: 0,
                id: "call_x_0".into(),
                name: "a".into(),
            },
            Piece::CallStart {
                index: 1,
                id: "call_x_1".into(),
                name: "b".into(),
            },
            Piece::CallArguments {
                index: 1,
                text: "{\"p\":\"long".into(),
            },
            Piece::CallArguments {
                index: 0,
                text: "{}".into(),
            },
            Piece::CallEnd { index: 0 },
            Piece::CallArguments {
                index: 1,
                text: "\"}".into(),
            },
            Piece::CallEnd { index: 1 },
        ] {
            events.extend(w.piece(piece));
        }
        let finish = Finish::ToolCalls;
        events.extend(w.finish(&Ending {
            finish: &finish,
            usage: None,
            stop_sequence: None,
        }));
        let text = events_text(&events);
        let order: Vec<usize> = [
            "text_delta",
            "toolu_x_0",
            "input_json_delta",
            "toolu_x_1",
            "long",
            "message_delta",
        ]
        .iter()
        .map(|needle| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle} in {text}"))
        })
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}: {text}");
        assert_eq!(
            text.matches("event: content_block_start").count(),
            3,
            "{text}"
        );
        assert_eq!(
            text.matches("event: content_block_stop").count(),
            3,
            "{text}"
        );
    }
}
