//! The one conversation every client API is read into, and what the upstream gets for it:
//! the offered tools in the system prompt, past calls as the protocol's blocks, tool
//! results as observations, the demonstration turns, the sampling options.
//!
//! Each API module (`api::chat`, `api::messages`, `api::responses`) reads its own wire
//! format into a [`Conversation`]; [`translate`] turns that into the upstream request the
//! same way for all three.

use std::collections::HashMap;

use serde_json::{Map, Value};
use tam_model::{Message, ModelOptions, Role};
use tool_schema::{CompiledTool, ToolDefinition};

use crate::ProxyError;
use crate::history::{PastCall, observation, observation_error, render_calls};
use crate::prompt::{Choice, after_observations, demonstration, tool_prompt};

use crate::Protocol;

/// A request of any client API, read.
#[derive(Debug)]
pub(crate) struct Conversation {
    /// The `model` to ask the upstream for.
    pub(crate) model: String,
    /// The turns, in order.
    pub(crate) turns: Vec<Turn>,
    /// The tools the client offered (already without the API's built-in tools).
    pub(crate) tools: Vec<ToolDefinition>,
    /// What the client asks of the model; `None`: no tool may be called (`none`).
    pub(crate) choice: Option<Choice>,
    /// Several calls in one reply allowed.
    pub(crate) parallel: bool,
    /// `max_tokens`, `stop`, `seed`.
    pub(crate) options: ModelOptions,
    /// Fields the upstream gets as the client sent them (`temperature`, `top_p`, …).
    pub(crate) extra: Map<String, Value>,
    /// The client asked for a stream.
    pub(crate) stream: bool,
    /// The client asked for usage in the stream (Chat Completions'
    /// `stream_options.include_usage`).
    pub(crate) include_usage: bool,
}

/// One turn of a conversation.
#[derive(Debug)]
pub(crate) enum Turn {
    /// Instructions (`system`, `developer`).
    System(String),
    /// What the user wrote.
    User(String),
    /// What the model answered: its text, then its calls.
    Assistant {
        text: String,
        calls: Vec<PastCall>,
    },
    /// The result of a call, answering the call with `call_id`.
    ToolResult {
        call_id: Option<String>,
        /// The tool's name when the client names it (else found from `call_id`).
        name: Option<String>,
        content: String,
        /// The client marked the result an error.
        is_error: bool,
    },
}

/// The tools a request offered, by function name.
#[derive(Debug, Default)]
pub(crate) struct OfferedTools {
    tools: HashMap<String, CompiledTool>,
}

impl OfferedTools {
    /// The offered tool named `name` (exactly).
    pub(crate) fn get(&self, name: &str) -> Option<&CompiledTool> {
        self.tools.get(name)
    }

    /// The name of the offered tool a call naming `name` is for: `name` itself when
    /// offered, else the one offered tool whose name is `name` but for ASCII case and the
    /// separators `_`, `-` and `.` (`prob_dist.binomial` for an offered
    /// `prob_dist_binomial`: clients rewrite names an API refuses, and models write the
    /// name they know). Two offered names that match that way: neither (no guess).
    pub(crate) fn resolve<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if self.tools.contains_key(name) {
            return Some(name);
        }
        let want = loose_name(name);
        let mut found = self.tools.keys().filter(|k| loose_name(k) == want);
        match (found.next(), found.next()) {
            (Some(one), None) => Some(one),
            _ => None,
        }
    }
}

/// A tool name without ASCII case and the separators `_`, `-` and `.`.
fn loose_name(name: &str) -> String {
    loose_chars(name).collect()
}

/// The characters of `name` as [`loose_name`] keeps them.
fn loose_chars(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.'))
        .map(|c| c.to_ascii_lowercase())
}

/// Whether two names are the same but for ASCII case and the separators `_`, `-` and `.`
/// ([`loose_name`]), compared without an allocation.
pub(crate) fn same_loosely(a: &str, b: &str) -> bool {
    loose_chars(a).eq(loose_chars(b))
}

/// What the proxy does with one request.
#[derive(Debug)]
pub(crate) struct Translated {
    /// The `model` to ask the upstream for.
    pub(crate) model: String,
    /// The conversation as the upstream sees it.
    pub(crate) messages: Vec<Message>,
    /// `max_tokens`, `stop`, `seed`.
    pub(crate) options: ModelOptions,
    /// Every field the upstream gets as the client sent it.
    pub(crate) extra: Map<String, Value>,
    /// The client asked for a stream.
    pub(crate) stream: bool,
    /// The offered tools; empty when the upstream's text is passed through undecoded.
    pub(crate) offered: OfferedTools,
    /// Decode the upstream's text into calls (tools offered and the choice not `none`).
    pub(crate) decode: bool,
    /// Most calls in the reply: 1 when parallel calls are off.
    pub(crate) max_calls: usize,
}

/// The upstream request for `conversation` in `protocol`.
pub(crate) fn translate(
    conversation: Conversation,
    protocol: Protocol,
) -> Result<Translated, ProxyError> {
    let Conversation {
        model,
        turns,
        tools,
        choice,
        parallel,
        options,
        extra,
        stream,
        include_usage: _,
    } = conversation;
    let offered_definitions: Vec<ToolDefinition> = match &choice {
        None => Vec::new(),
        Some(Choice::Named(name)) => {
            let chosen: Vec<ToolDefinition> = tools
                .into_iter()
                .filter(|d| d.id.as_str() == name)
                .collect();
            if chosen.is_empty() {
                return Err(ProxyError::invalid(
                    "invalid_tools",
                    format!("the tool choice names '{name}', which the request's tools do not define"),
                ));
            }
            chosen
        }
        Some(_) => tools,
    };
    if protocol == Protocol::Action {
        writable_in_action(&offered_definitions)?;
    }
    let decode = !offered_definitions.is_empty();
    let prompt = choice.as_ref().filter(|_| decode).map(|choice| {
        let refs: Vec<&ToolDefinition> = offered_definitions.iter().collect();
        tool_prompt(protocol, &refs, choice, parallel)
    });
    let mut offered = OfferedTools::default();
    for definition in offered_definitions {
        let name = definition.id.as_str().to_owned();
        let tool = CompiledTool::new(definition)
            .map_err(|e| ProxyError::invalid("invalid_tools", format!("tool '{name}': {e}")))?;
        offered.tools.insert(name, tool);
    }

    let after = decode.then(|| after_observations(protocol));
    let (mut messages, holds_calls) = render_turns(turns, protocol, prompt, after);
    // Once the conversation holds a call, its own turns show the form, and the model given
    // its results answers the demonstration's questions too (see `prompt`'s decisions).
    let demonstration = choice
        .as_ref()
        .filter(|_| decode && !holds_calls)
        .map(|choice| demonstration(protocol, choice))
        .unwrap_or_default();
    // The demonstration goes between the system messages and the conversation.
    let first_turn = messages
        .iter()
        .position(|m| m.role != Role::System)
        .unwrap_or(messages.len());
    messages.splice(first_turn..first_turn, demonstration);
    Ok(Translated {
        model,
        messages,
        options,
        extra,
        stream,
        offered,
        decode,
        max_calls: if parallel { usize::MAX } else { 1 },
    })
}

/// In ACTION a call is an element named by its tool and parameters: a tool (or a
/// parameter of its top-level schema) whose name is no XML element name could never be
/// called. Rather than offer it silently, the request is refused (400 `invalid_tools`),
/// saying which name and what to do.
fn writable_in_action(definitions: &[ToolDefinition]) -> Result<(), ProxyError> {
    for definition in definitions {
        let tool = definition.id.as_str();
        let keys = definition
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|p| p.keys());
        let bad = std::iter::once(tool)
            .chain(keys.map(String::as_str))
            .find(|name| !action_xml::is_element_name(name));
        if let Some(name) = bad {
            let what = if name == tool {
                format!("function name '{tool}'")
            } else {
                format!("parameter '{name}' of function '{tool}'")
            };
            return Err(ProxyError::invalid(
                "invalid_tools",
                format!(
                    "{what} cannot be written as an ACTION element (an XML name: a letter or \
                     '_' first, then letters, digits, '_', '-', '.', at most one ':'), so the \
                     model could never call it; rename it, or serve with --protocol tam"
                ),
            ));
        }
    }
    Ok(())
}

/// The turns as the upstream sees them: the tool prompt after the first system message's
/// text (or as a new first system message), an assistant's calls as the protocol's block
/// after its text, and each run of tool results as one user message of observations,
/// closed by `after` when given (the tool prompt's line saying what to do with them,
/// [`after_observations`]); and whether the conversation holds a call already (an
/// assistant's call, or a tool result).
fn render_turns(
    turns: Vec<Turn>,
    protocol: Protocol,
    prompt: Option<String>,
    after: Option<&str>,
) -> (Vec<Message>, bool) {
    let mut out: Vec<Message> = Vec::with_capacity(turns.len() + 1);
    // Function names of the history's calls, by call id, for the tool results.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut last_was_result = false;
    let mut holds_calls = false;
    for turn in turns {
        let is_result = matches!(turn, Turn::ToolResult { .. });
        if last_was_result && !is_result {
            close_observations(&mut out, after);
        }
        match turn {
            Turn::System(text) => out.push(Message::system(text)),
            Turn::User(text) => out.push(Message::user(text)),
            Turn::Assistant { text, calls } => {
                let mut text = text;
                for call in &calls {
                    if let Some(id) = &call.id {
                        names.insert(id.clone(), call.name.clone());
                    }
                }
                if !calls.is_empty() {
                    holds_calls = true;
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&render_calls(protocol, &calls));
                }
                out.push(Message::assistant(text));
            }
            Turn::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => {
                holds_calls = true;
                let name = call_id
                    .as_ref()
                    .and_then(|id| names.get(id))
                    .map(String::as_str)
                    .or(name.as_deref())
                    .unwrap_or("unknown");
                let line = if is_error {
                    observation_error(name, &content)
                } else {
                    observation(name, &content)
                };
                match out.last_mut() {
                    Some(previous) if last_was_result => {
                        previous.content.push('\n');
                        previous.content.push_str(&line);
                    }
                    _ => out.push(Message::user(line)),
                }
            }
        }
        last_was_result = is_result;
    }
    if last_was_result {
        close_observations(&mut out, after);
    }
    if let Some(prompt) = prompt {
        match out.first_mut() {
            Some(first) if first.role == Role::System => {
                if !first.content.is_empty() {
                    first.content.push_str("\n\n");
                }
                first.content.push_str(&prompt);
            }
            _ => out.insert(0, Message::system(prompt)),
        }
    }
    (out, holds_calls)
}

/// Ends the message of observations that is last in `out` with `after`, after a blank line.
fn close_observations(out: &mut [Message], after: Option<&str>) {
    if let (Some(after), Some(observations)) = (after, out.last_mut()) {
        observations.content.push_str("\n\n");
        observations.content.push_str(after);
    }
}

/// A past call from its name and its arguments' JSON text as a client sent it.
pub(crate) fn past_call(id: Option<String>, name: &str, raw_args: String) -> PastCall {
    let args = match serde_json::from_str::<Value>(&raw_args) {
        Ok(Value::Object(args)) => Some(args),
        _ => None,
    };
    PastCall {
        id,
        name: name.to_owned(),
        args,
        raw_args,
    }
}
