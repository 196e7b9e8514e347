//! OpenAI Responses (`POST /v1/responses`): a client's request read into the one
//! [`Conversation`], and the reply written as a `response` object or as its stream of
//! events (`response.created`, `response.in_progress`, `response.output_item.added`, …,
//! `response.completed`), each with its `sequence_number`.
//!
//! Responses are not stored: `previous_response_id` is a 400 that says so (send the whole
//! `input`, as Codex does with `store: false`).
//!
//! Tools: `function` tools are offered as they are. A `custom` (freeform) tool, whose
//! input is raw text (Codex's `apply_patch`), is offered as a tool with one string
//! parameter, `input`, and its call comes back as a `custom_tool_call` item whose `input`
//! is that text exactly. A `namespace` tool's functions are offered by their own names,
//! and a call of one comes back as a `function_call` naming its `namespace`. Built-in
//! tools (`web_search`, `file_search`, `computer_use_preview`, …) are not offered (the
//! upstream is a text model), and are named in one log line.

use std::collections::HashMap;

use axum::response::sse::Event;
use serde_json::{Map, Value, json};
use tam_model::ModelOptions;
use tool_schema::ToolDefinition;

use super::{Ending, Gathered, Item, Wire, named_event, passed_on, unix_seconds};
use crate::ProxyError;
use crate::conversation::{Conversation, Turn, past_call};
use crate::history::PastCall;
use crate::prompt::Choice;
use crate::response::{Finish, Piece};

/// Fields the upstream gets as the client sent them; every other field (`store`,
/// `include`, `reasoning`, `text`, `metadata`, `prompt_cache_key`, …) is read by the proxy
/// or not sent on.
const PASSED_ON: &[&str] = &["temperature", "top_p"];

/// The parameter a custom (freeform) tool's text is offered as.
const CUSTOM_INPUT: &str = "input";

/// How an offered tool's call is returned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A `custom_tool_call` with the text as `input`.
    Custom,
    /// A `function_call` naming this namespace.
    Namespaced(String),
}

/// Reads a Responses request body, and the writer of its reply (`id`: the reply's id).
pub(crate) fn read(
    body: &[u8],
    default_model: &str,
    id: &str,
) -> Result<(Conversation, ResponsesWriter), ProxyError> {
    let (conversation, kinds, echo) = read_conversation(body, default_model)?;
    let writer = ResponsesWriter::new(id, &conversation.model, kinds, echo);
    Ok((conversation, writer))
}

fn invalid(message: impl Into<String>) -> ProxyError {
    ProxyError::invalid("invalid_request", message)
}

/// A Responses request read: the one conversation, the offered tools that are not plain
/// functions, the request's fields a `response` object repeats.
type Read = (Conversation, HashMap<String, Kind>, Map<String, Value>);

/// A Responses request as the one conversation; the offered tools that are not plain
/// functions; the request's fields a `response` object repeats.
fn read_conversation(body: &[u8], default_model: &str) -> Result<Read, ProxyError> {
    let request: Map<String, Value> = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("the body is not a JSON object: {e}")))?;
    if request
        .get("previous_response_id")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ProxyError::invalid(
            "previous_response_not_found",
            "this server does not store responses: send the whole conversation in 'input' \
             (with 'store': false) instead of 'previous_response_id'",
        ));
    }
    let model = match request.get("model") {
        Some(Value::String(model)) if !model.is_empty() => model.clone(),
        None | Some(Value::Null) if !default_model.is_empty() => default_model.to_owned(),
        _ => return Err(invalid("'model' must be a non-empty string")),
    };
    let turns = read_turns(&request)?;
    let (tools, kinds) = read_tools(request.get("tools"))?;
    let choice = read_choice(request.get("tool_choice"))?;
    let parallel = request
        .get("parallel_tool_calls")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut options = ModelOptions::new();
    options.max_tokens = read_max_output_tokens(request.get("max_output_tokens"))?;
    let stream = match request.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(stream)) => *stream,
        Some(_) => return Err(invalid("'stream' must be a boolean")),
    };
    let extra = passed_on(&request, PASSED_ON);
    let echo = echoed_fields(&request);
    Ok((
        Conversation {
            model,
            turns,
            tools,
            choice,
            parallel,
            options,
            extra,
            stream,
            include_usage: false,
        },
        kinds,
        echo,
    ))
}

/// The turns of `instructions` (a system turn) and `input` (a user turn, or its items').
fn read_turns(request: &Map<String, Value>) -> Result<Vec<Turn>, ProxyError> {
    let mut turns = Vec::new();
    match request.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => turns.push(Turn::System(text.clone())),
        Some(_) => return Err(invalid("'instructions' must be a string")),
    }
    match request.get("input") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => turns.push(Turn::User(text.clone())),
        Some(Value::Array(items)) => {
            for (position, item) in items.iter().enumerate() {
                read_item(item, position, &mut turns)?;
            }
        }
        Some(_) => return Err(invalid("'input' must be a string or an array of items")),
    }
    Ok(turns)
}

/// `tool_choice` (absent: `auto`; `none`: no choice, the tools are not offered).
fn read_choice(value: Option<&Value>) -> Result<Option<Choice>, ProxyError> {
    Ok(match value {
        None | Some(Value::Null) => Some(Choice::Auto),
        Some(Value::String(s)) if s == "auto" => Some(Choice::Auto),
        Some(Value::String(s)) if s == "none" => None,
        Some(Value::String(s)) if s == "required" => Some(Choice::Required),
        Some(value) => match value.get("name").and_then(Value::as_str) {
            Some(name) => Some(Choice::Named(name.to_owned())),
            None => return Err(invalid(format!("unknown 'tool_choice': {value}"))),
        },
    })
}

/// `max_output_tokens`: a positive integer, or absent.
fn read_max_output_tokens(value: Option<&Value>) -> Result<Option<u32>, ProxyError> {
    Ok(match value {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| invalid("'max_output_tokens' must be a positive integer"))?,
        ),
    })
}

/// The request's fields a `response` object repeats.
fn echoed_fields(request: &Map<String, Value>) -> Map<String, Value> {
    let mut echo = Map::new();
    for key in [
        "instructions",
        "max_output_tokens",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "tool_choice",
        "tools",
        "metadata",
        "store",
    ] {
        if let Some(value) = request.get(key) {
            echo.insert(key.to_owned(), value.clone());
        }
    }
    echo
}

/// A message's text: a string, or its text parts (`input_text`, `output_text`, `text`)
/// joined by a line break; an image, a file or audio is a 400 naming it.
fn message_text(content: Option<&Value>, at: &str) -> Result<String, ProxyError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                match (kind, part.get("text").and_then(Value::as_str)) {
                    ("input_text" | "output_text" | "text", Some(text)) => texts.push(text),
                    ("refusal", _) => {
                        if let Some(text) = part.get("refusal").and_then(Value::as_str) {
                            texts.push(text);
                        }
                    }
                    ("input_text" | "output_text" | "text", None) => {
                        return Err(invalid(format!("{at}: a text part needs 'text'")));
                    }
                    (other, _) => {
                        return Err(ProxyError::invalid(
                            "unsupported_content",
                            format!(
                                "{at}: content of type '{other}' cannot be passed to the upstream, a text model"
                            ),
                        ));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(invalid(format!(
            "{at}: content must be a string or an array of parts"
        ))),
    }
}

/// The output of a tool call: a string, or its text parts joined.
fn output_text(output: Option<&Value>, at: &str) -> Result<String, ProxyError> {
    match output {
        Some(Value::Array(_)) => message_text(output, at),
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Ok(other.to_string()),
    }
}

/// Adds a past call to the assistant turn last in `turns`, or starts one.
fn push_call(turns: &mut Vec<Turn>, call: PastCall) {
    if let Some(Turn::Assistant { calls, .. }) = turns.last_mut() {
        calls.push(call);
    } else {
        turns.push(Turn::Assistant {
            text: String::new(),
            calls: vec![call],
        });
    }
}

/// One `input` item's turn: messages by role; `function_call` and `custom_tool_call` as
/// the assistant's calls; their outputs as tool results; `reasoning` dropped; other items
/// (built-in tools' calls) dropped too — their tools were never the model's.
fn read_item(item: &Value, position: usize, turns: &mut Vec<Turn>) -> Result<(), ProxyError> {
    let at = format!("input[{position}]");
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    let string = |key: &str| item.get(key).and_then(Value::as_str);
    match kind {
        "message" => {
            let role =
                string("role").ok_or_else(|| invalid(format!("{at}: a message needs a 'role'")))?;
            let text = message_text(item.get("content"), &at)?;
            turns.push(match role {
                "user" => Turn::User(text),
                "assistant" => Turn::Assistant {
                    text,
                    calls: Vec::new(),
                },
                "system" | "developer" => Turn::System(text),
                other => return Err(invalid(format!("{at}: unknown role '{other}'"))),
            });
        }
        "function_call" => {
            let name = string("name")
                .ok_or_else(|| invalid(format!("{at}: a function_call needs a 'name'")))?;
            let arguments = match item.get("arguments") {
                Some(Value::String(text)) => text.clone(),
                None | Some(Value::Null) => "{}".to_owned(),
                Some(other) => other.to_string(),
            };
            let id = string("call_id").map(str::to_owned);
            push_call(turns, past_call(id, name, arguments));
        }
        "custom_tool_call" => {
            let name = string("name")
                .ok_or_else(|| invalid(format!("{at}: a custom_tool_call needs a 'name'")))?;
            let input = string("input").unwrap_or_default();
            let id = string("call_id").map(str::to_owned);
            let arguments = json!({ CUSTOM_INPUT: input }).to_string();
            push_call(turns, past_call(id, name, arguments));
        }
        "function_call_output" | "custom_tool_call_output" => {
            turns.push(Turn::ToolResult {
                call_id: string("call_id").map(str::to_owned),
                name: None,
                content: output_text(item.get("output"), &at)?,
                is_error: false,
            });
        }
        _ => {}
    }
    Ok(())
}

/// `tools`: functions, custom tools and namespaces' functions offered; built-in tools not
/// (one log line names them).
fn read_tools(
    tools: Option<&Value>,
) -> Result<(Vec<ToolDefinition>, HashMap<String, Kind>), ProxyError> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok((Vec::new(), HashMap::new())),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(invalid("'tools' must be an array")),
    };
    let mut definitions = Vec::new();
    let mut kinds = HashMap::new();
    let mut not_offered = Vec::new();
    let mut add = |tool: &Value, at: &str, kind: Option<Kind>| -> Result<(), ProxyError> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("{at}: a tool needs a 'name'")))?;
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parameters = match kind {
            Some(Kind::Custom) => Some(json!({
                "type": "object",
                "properties": {CUSTOM_INPUT: {"type": "string", "description": "The tool's input, as free text."}},
                "required": [CUSTOM_INPUT],
            })),
            _ => tool.get("parameters").cloned(),
        };
        definitions.push(
            super::chat::tool_definition(name, description, parameters)
                .map_err(|e| invalid(format!("{at}: {e}")))?,
        );
        if let Some(kind) = kind {
            kinds.insert(name.to_owned(), kind);
        }
        Ok(())
    };
    for (index, tool) in tools.iter().enumerate() {
        let at = format!("tools[{index}]");
        match tool
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("function")
        {
            "function" => add(tool, &at, None)?,
            "custom" => add(tool, &at, Some(Kind::Custom))?,
            "namespace" => {
                let namespace = tool
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{at}: a namespace needs a 'name'")))?;
                let Some(Value::Array(inner)) = tool.get("tools") else {
                    return Err(invalid(format!("{at}: a namespace needs 'tools'")));
                };
                for (position, function) in inner.iter().enumerate() {
                    let at = format!("{at}.tools[{position}]");
                    match function
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("function")
                    {
                        "function" => {
                            add(function, &at, Some(Kind::Namespaced(namespace.to_owned())))?;
                        }
                        other => not_offered.push(format!("{namespace}.{other}")),
                    }
                }
            }
            other => not_offered.push(other.to_owned()),
        }
    }
    if !not_offered.is_empty() {
        tracing::info!(
            target: "tam_proxy::request",
            tools = %not_offered.join(", "),
            "built-in tools not offered to the model"
        );
    }
    Ok((definitions, kinds))
}

/// An output item on the wire.
struct Output {
    /// The item as it stands (its text or arguments so far).
    item: Value,
    /// The call index, for a call.
    call: Option<usize>,
    done: bool,
}

/// Writes one reply as a Responses `response`, or its stream of events.
pub(crate) struct ResponsesWriter {
    id: String,
    model: String,
    created_at: u64,
    kinds: HashMap<String, Kind>,
    /// The request's fields a `response` repeats.
    echo: Map<String, Value>,
    sequence: u64,
    /// Every output item so far, in order.
    outputs: Vec<Output>,
    /// The output open for text (a message) or reasoning, by index in `outputs`.
    open_text: Option<usize>,
    open_reasoning: Option<usize>,
    /// The call whose item is open and streaming.
    open_call: Option<usize>,
    /// Calls that began while another's item was open: (index, id, name, arguments, ended).
    queued: Vec<(usize, String, String, String, bool)>,
}

impl ResponsesWriter {
    fn new(id: &str, model: &str, kinds: HashMap<String, Kind>, echo: Map<String, Value>) -> Self {
        Self {
            id: format!("resp_{id}"),
            model: model.to_owned(),
            created_at: unix_seconds(),
            kinds,
            echo,
            sequence: 0,
            outputs: Vec::new(),
            open_text: None,
            open_reasoning: None,
            open_call: None,
            queued: Vec::new(),
        }
    }

    fn event(&mut self, name: &str, mut value: Value) -> Event {
        value["type"] = Value::String(name.to_owned());
        value["sequence_number"] = self.sequence.into();
        self.sequence += 1;
        named_event(name, &value)
    }

    /// The `response` object: `status` and its output items as they stand.
    fn response(&self, status: &str, ending: Option<&Ending<'_>>) -> Value {
        let output: Vec<Value> = self
            .outputs
            .iter()
            .filter(|o| o.done || status == "in_progress")
            .map(|o| o.item.clone())
            .collect();
        let mut response = json!({
            "id": self.id, "object": "response", "created_at": self.created_at,
            "status": status, "model": self.model, "output": output,
            "error": null, "incomplete_details": null, "usage": null,
        });
        for (key, value) in &self.echo {
            response[key] = value.clone();
        }
        if let Some(ending) = ending {
            let (input, output) = (
                ending.tokens("prompt_tokens"),
                ending.tokens("completion_tokens"),
            );
            response["usage"] = json!({
                "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            });
            if *ending.finish == Finish::Length {
                response["incomplete_details"] = json!({"reason": "max_output_tokens"});
            }
        }
        response
    }

    fn add_output(&mut self, item: Value, call: Option<usize>, events: &mut Vec<Event>) -> usize {
        let index = self.outputs.len();
        events.push(self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        ));
        self.outputs.push(Output {
            item,
            call,
            done: false,
        });
        index
    }

    fn item_done(&mut self, index: usize, events: &mut Vec<Event>) {
        let output = &mut self.outputs[index];
        output.done = true;
        output.item["status"] = "completed".into();
        let item = output.item.clone();
        events.push(self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }

    fn close_text(&mut self, events: &mut Vec<Event>) {
        if let Some(index) = self.open_text.take() {
            let item_id = self.outputs[index].item["id"].clone();
            let text = self.outputs[index].item["content"][0]["text"].clone();
            events.push(self.event(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
            ));
            let part = self.outputs[index].item["content"][0].clone();
            events.push(self.event(
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": part}),
            ));
            self.item_done(index, events);
        }
    }

    fn close_reasoning(&mut self, events: &mut Vec<Event>) {
        if let Some(index) = self.open_reasoning.take() {
            let item_id = self.outputs[index].item["id"].clone();
            let text = self.outputs[index].item["content"][0]["text"].clone();
            events.push(self.event(
                "response.reasoning_text.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0, "text": text}),
            ));
            self.item_done(index, events);
        }
    }

    fn text(&mut self, text: &str, events: &mut Vec<Event>) {
        self.close_reasoning(events);
        let index = match self.open_text {
            Some(index) => index,
            None => {
                let item_id = format!("msg_{}_{}", self.id, self.outputs.len());
                let index = self.add_output(
                    json!({"id": item_id, "type": "message", "status": "in_progress",
                        "role": "assistant", "content": []}),
                    None,
                    events,
                );
                let part =
                    json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
                self.outputs[index].item["content"] = json!([part.clone()]);
                events.push(self.event(
                    "response.content_part.added",
                    json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": part}),
                ));
                self.open_text = Some(index);
                index
            }
        };
        let item_id = self.outputs[index].item["id"].clone();
        if let Some(Value::String(all)) = self.outputs[index].item.pointer_mut("/content/0/text") {
            all.push_str(text);
        }
        events.push(self.event(
            "response.output_text.delta",
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []}),
        ));
    }

    fn reasoning(&mut self, text: &str, events: &mut Vec<Event>) {
        self.close_text(events);
        let index = match self.open_reasoning {
            Some(index) => index,
            None => {
                let item_id = format!("rs_{}_{}", self.id, self.outputs.len());
                let index = self.add_output(
                    json!({"id": item_id, "type": "reasoning", "summary": [],
                        "content": [{"type": "reasoning_text", "text": ""}]}),
                    None,
                    events,
                );
                self.open_reasoning = Some(index);
                index
            }
        };
        let item_id = self.outputs[index].item["id"].clone();
        if let Some(Value::String(all)) = self.outputs[index].item.pointer_mut("/content/0/text") {
            all.push_str(text);
        }
        events.push(self.event(
            "response.reasoning_text.delta",
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": text}),
        ));
    }

    /// A call's item: `function_call` (with its namespace, if any) or `custom_tool_call`.
    fn call_item(&self, id: &str, name: &str) -> Value {
        match self.kinds.get(name) {
            Some(Kind::Custom) => json!({"id": format!("ctc_{id}"), "type": "custom_tool_call",
                "status": "in_progress", "call_id": id, "name": name, "input": ""}),
            Some(Kind::Namespaced(namespace)) => {
                json!({"id": format!("fc_{id}"), "type": "function_call",
                "status": "in_progress", "call_id": id, "name": name, "namespace": namespace, "arguments": ""})
            }
            None => json!({"id": format!("fc_{id}"), "type": "function_call",
                "status": "in_progress", "call_id": id, "name": name, "arguments": ""}),
        }
    }

    fn start_call(&mut self, index: usize, id: &str, name: &str, events: &mut Vec<Event>) {
        self.close_text(events);
        self.close_reasoning(events);
        let item = self.call_item(id, name);
        self.add_output(item, Some(index), events);
        self.open_call = Some(index);
    }

    fn output_of_call(&self, index: usize) -> Option<usize> {
        self.outputs.iter().position(|o| o.call == Some(index))
    }

    fn call_arguments(&mut self, index: usize, text: &str, events: &mut Vec<Event>) {
        let Some(at) = self.output_of_call(index) else {
            return;
        };
        let custom = self.outputs[at].item["type"] == "custom_tool_call";
        let key = if custom { "input" } else { "arguments" };
        if let Some(Value::String(all)) = self.outputs[at].item.get_mut(key) {
            all.push_str(text);
        }
        // A custom call's text goes out whole at its end (its pieces are JSON text here).
        if !custom && !text.is_empty() {
            let item_id = self.outputs[at].item["id"].clone();
            events.push(self.event(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": at, "delta": text}),
            ));
        }
    }

    fn end_call(&mut self, index: usize, events: &mut Vec<Event>) {
        let Some(at) = self.output_of_call(index) else {
            return;
        };
        let item_id = self.outputs[at].item["id"].clone();
        if self.outputs[at].item["type"] == "custom_tool_call" {
            // The arguments are `{"input": TEXT}`: the call's input is TEXT, exactly.
            let arguments = self.outputs[at].item["input"].as_str().unwrap_or_default();
            let input = serde_json::from_str::<Value>(arguments)
                .ok()
                .and_then(|v| {
                    v.get(CUSTOM_INPUT)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            self.outputs[at].item["input"] = Value::String(input.clone());
            events.push(self.event(
                "response.custom_tool_call_input.delta",
                json!({"item_id": item_id, "output_index": at, "delta": input}),
            ));
            events.push(self.event(
                "response.custom_tool_call_input.done",
                json!({"item_id": item_id, "output_index": at, "input": input}),
            ));
        } else {
            let arguments = self.outputs[at].item["arguments"].clone();
            let name = self.outputs[at].item["name"].clone();
            events.push(self.event(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": at, "name": name, "arguments": arguments}),
            ));
        }
        self.item_done(at, events);
        if self.open_call == Some(index) {
            self.open_call = None;
        }
    }

    fn flush_queued(&mut self, events: &mut Vec<Event>) {
        while self.open_call.is_none() && !self.queued.is_empty() {
            let (index, id, name, arguments, ended) = self.queued.remove(0);
            self.start_call(index, &id, &name, events);
            self.call_arguments(index, &arguments, events);
            if ended {
                self.end_call(index, events);
            }
        }
    }
}

impl Wire for ResponsesWriter {
    fn start(&mut self) -> Vec<Event> {
        let response = self.response("in_progress", None);
        let created = self.event("response.created", json!({"response": response.clone()}));
        let in_progress = self.event("response.in_progress", json!({"response": response}));
        vec![created, in_progress]
    }

    fn piece(&mut self, piece: Piece) -> Vec<Event> {
        let mut events = Vec::new();
        match piece {
            Piece::Content(text) => self.text(&text, &mut events),
            Piece::Reasoning(text) => self.reasoning(&text, &mut events),
            Piece::CallStart { index, id, name } => {
                if self.open_call.is_some() || !self.queued.is_empty() {
                    self.queued.push((index, id, name, String::new(), false));
                } else {
                    self.start_call(index, &id, &name, &mut events);
                }
            }
            Piece::CallArguments { index, text } => {
                if let Some(queued) = self.queued.iter_mut().find(|q| q.0 == index) {
                    queued.3.push_str(&text);
                } else {
                    self.call_arguments(index, &text, &mut events);
                }
            }
            Piece::CallEnd { index } => {
                if let Some(queued) = self.queued.iter_mut().find(|q| q.0 == index) {
                    queued.4 = true;
                } else {
                    self.end_call(index, &mut events);
                    self.flush_queued(&mut events);
                }
            }
        }
        events
    }

    fn finish(&mut self, ending: &Ending<'_>) -> Vec<Event> {
        let mut events = Vec::new();
        self.flush_queued(&mut events);
        self.close_text(&mut events);
        self.close_reasoning(&mut events);
        let (name, status) = match ending.finish {
            Finish::Length => ("response.incomplete", "incomplete"),
            Finish::ToolCalls | Finish::Stop | Finish::Other(_) => {
                ("response.completed", "completed")
            }
        };
        let response = self.response(status, Some(ending));
        events.push(self.event(name, json!({"response": response})));
        events
    }

    fn fail(&mut self, error: &ProxyError) -> Vec<Event> {
        let mut response = self.response("failed", None);
        response["error"] = json!({"code": error.code(), "message": error.to_string()});
        vec![self.event("response.failed", json!({"response": response}))]
    }

    fn whole(&self, reply: Gathered, ending: &Ending<'_>) -> Value {
        let mut writer =
            ResponsesWriter::new("", &self.model, self.kinds.clone(), self.echo.clone());
        writer.id.clone_from(&self.id);
        writer.created_at = self.created_at;
        let mut sink = Vec::new();
        let mut calls = 0;
        for item in reply.items {
            match item {
                Item::Text(text) => writer.text(&text, &mut sink),
                Item::Reasoning(text) => writer.reasoning(&text, &mut sink),
                Item::Call {
                    id,
                    name,
                    arguments,
                } => {
                    let index = usize::MAX - calls;
                    calls += 1;
                    writer.start_call(index, &id, &name, &mut sink);
                    writer.call_arguments(index, &arguments, &mut sink);
                    writer.end_call(index, &mut sink);
                }
            }
        }
        writer.close_text(&mut sink);
        writer.close_reasoning(&mut sink);
        let status = if *ending.finish == Finish::Length {
            "incomplete"
        } else {
            "completed"
        };
        writer.response(status, Some(ending))
    }
}
