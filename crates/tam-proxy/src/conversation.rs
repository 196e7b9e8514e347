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
use tool_schema::grammar::Activation;
use tool_schema::{CompiledTool, ToolDefinition};

use crate::ProxyError;
use crate::history::{PastCall, observation, observation_error, render_calls};
use crate::prompt::{Choice, after_observations, demonstration, tool_prompt};

use crate::ProtocolChoice;

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
    Assistant { text: String, calls: Vec<PastCall> },
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
    /// TAM: per tool, the parameters offered under another key ([`tam_aliases`]):
    /// (alias, parameter).
    aliases: HashMap<String, Vec<(String, String)>>,
}

/// In TAM the key `command` names the tool (and `command1`, `command2`, … chain calls), so
/// a parameter whose key reads as one (Claude Code's `Bash` tool has `command`) could never
/// be written: the model's `command:「始」ls「末」` would name a tool `ls`. Such a parameter
/// is offered to the model as `arg_` and its name (`arg_command`), and read back under its
/// own name.
const TAM_ALIAS_PREFIX: &str = "arg_";

/// Whether `key` reads as a TAM `command` key (canonically: lowercase, without `_` and
/// `-`, `command` and digits).
fn is_command_key(key: &str) -> bool {
    let canonical: String = key
        .chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    canonical
        .strip_prefix("command")
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
}

/// The parameters of `definition` TAM must offer under another key: (alias, parameter).
fn tam_aliases(definition: &ToolDefinition) -> Vec<(String, String)> {
    let Some(properties) = definition
        .parameters
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    properties
        .keys()
        .filter(|key| is_command_key(key))
        .map(|key| (format!("{TAM_ALIAS_PREFIX}{key}"), key.clone()))
        .filter(|(alias, _)| !properties.contains_key(alias))
        .collect()
}

/// `definition` with each aliased parameter renamed to its alias (properties and
/// `required`): what the TAM prompt lists.
fn with_aliases(definition: &ToolDefinition, aliases: &[(String, String)]) -> ToolDefinition {
    let mut renamed = definition.clone();
    let rename = |key: &str| {
        aliases
            .iter()
            .find(|(_, real)| real == key)
            .map_or_else(|| key.to_owned(), |(alias, _)| alias.clone())
    };
    if let Some(Value::Object(properties)) = renamed.parameters.get_mut("properties") {
        *properties = std::mem::take(properties)
            .into_iter()
            .map(|(key, value)| (rename(&key), value))
            .collect();
    }
    if let Some(Value::Array(required)) = renamed.parameters.get_mut("required") {
        for key in required.iter_mut() {
            if let Some(name) = key.as_str() {
                *key = Value::String(rename(name));
            }
        }
    }
    renamed
}

/// Renames the keys of `args` by `pairs` (from → to).
fn rename_keys(args: &mut Map<String, Value>, pairs: impl Iterator<Item = (String, String)>) {
    for (from, to) in pairs {
        if let Some(value) = args.remove(&from) {
            args.insert(to, value);
        }
    }
}

impl OfferedTools {
    /// A decoded TAM call's arguments with the parameters the prompt offered under an
    /// alias back under their own names (keys compared canonically, as TAM keys are).
    pub(crate) fn unalias(&self, tool: &str, args: &mut Map<String, Value>) {
        let Some(aliases) = self.aliases.get(tool) else {
            return;
        };
        let canonical = |key: &str| -> String {
            key.chars()
                .filter(|c| !matches!(c, '_' | '-'))
                .map(|c| c.to_ascii_lowercase())
                .collect()
        };
        let pairs: Vec<(String, String)> = args
            .keys()
            .filter_map(|key| {
                aliases
                    .iter()
                    .find(|(alias, _)| canonical(alias) == canonical(key))
                    .map(|(_, real)| (key.clone(), real.clone()))
            })
            .collect();
        rename_keys(args, pairs.into_iter());
    }

    /// The offered tools' names, sorted (the decoder reads a call element of one of them
    /// written without `<ACTION>` as a call).
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.tools.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

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
    /// The tools as the prompt lists them (TAM aliases applied), for a strict-call
    /// grammar; empty when the reply is not decoded.
    pub(crate) prompted: Vec<ToolDefinition>,
    /// How a strict-call grammar applies: lazily for `auto`, from the reply's start for
    /// `required` and a named tool (whose tool alone is offered).
    pub(crate) activation: Activation,
}

/// The upstream request for `conversation` in `protocol`.
pub(crate) fn translate(
    conversation: Conversation,
    protocol: ProtocolChoice,
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
    let offered_definitions = offered_definitions(tools, choice.as_ref())?;
    if protocol == ProtocolChoice::Action {
        writable_in_action(&offered_definitions)?;
    }
    let decode = !offered_definitions.is_empty();
    let mut offered = OfferedTools::default();
    // TAM (and auto, which teaches TAM) offers parameters named like its `command` keys
    // under an alias.
    if protocol != ProtocolChoice::Action {
        add_tam_aliases(&mut offered.aliases, &offered_definitions);
    }
    let prompted: Vec<ToolDefinition> = if decode {
        prompted_tools(&offered_definitions, &offered.aliases)
    } else {
        Vec::new()
    };
    let prompt = choice.as_ref().filter(|_| decode).map(|choice| {
        let refs: Vec<&ToolDefinition> = prompted.iter().collect();
        tool_prompt(protocol, &refs, choice, parallel)
    });
    let activation = match &choice {
        Some(Choice::Required | Choice::Named(_)) => Activation::Required,
        _ => Activation::Lazy,
    };
    // The history's calls of such tools as the model would have written them.
    let mut turns = turns;
    if !offered.aliases.is_empty() {
        alias_past_calls(&mut turns, &offered.aliases);
    }
    compile_tools(&mut offered.tools, offered_definitions)?;

    let after = decode.then(|| after_observations(protocol));
    let (mut messages, holds_calls) = render_turns(turns, protocol, prompt, after);
    // Once the conversation holds a call, its own turns show the form, and the model given
    // its results answers the demonstration's questions too (see `prompt`'s decisions).
    let demonstration = choice
        .as_ref()
        .filter(|_| decode && !holds_calls)
        .map(|choice| demonstration(protocol, choice))
        .unwrap_or_default();
    insert_demonstration(&mut messages, demonstration);
    Ok(Translated {
        model,
        messages,
        options,
        extra,
        stream,
        offered,
        decode,
        max_calls: if parallel { usize::MAX } else { 1 },
        prompted,
        activation,
    })
}

/// The tools offered to the model: none without a choice, the named one alone, else all.
fn offered_definitions(
    tools: Vec<ToolDefinition>,
    choice: Option<&Choice>,
) -> Result<Vec<ToolDefinition>, ProxyError> {
    Ok(match choice {
        None => Vec::new(),
        Some(Choice::Named(name)) => {
            let chosen: Vec<ToolDefinition> = tools
                .into_iter()
                .filter(|d| d.id.as_str() == name)
                .collect();
            if chosen.is_empty() {
                return Err(ProxyError::invalid(
                    "invalid_tools",
                    format!(
                        "the tool choice names '{name}', which the request's tools do not define"
                    ),
                ));
            }
            chosen
        }
        Some(_) => tools,
    })
}

/// Records, per tool of `definitions`, the parameters TAM offers under an alias.
fn add_tam_aliases(
    aliases: &mut HashMap<String, Vec<(String, String)>>,
    definitions: &[ToolDefinition],
) {
    for definition in definitions {
        let tool_aliases = tam_aliases(definition);
        if !tool_aliases.is_empty() {
            aliases.insert(definition.id.as_str().to_owned(), tool_aliases);
        }
    }
}

/// The offered tools as the prompt lists them: their aliases applied.
fn prompted_tools(
    definitions: &[ToolDefinition],
    aliases: &HashMap<String, Vec<(String, String)>>,
) -> Vec<ToolDefinition> {
    definitions
        .iter()
        .map(|d| match aliases.get(d.id.as_str()) {
            Some(aliases) => with_aliases(d, aliases),
            None => d.clone(),
        })
        .collect()
}

/// Renames the arguments of the history's calls to the aliases their tools are offered under.
fn alias_past_calls(turns: &mut [Turn], aliases: &HashMap<String, Vec<(String, String)>>) {
    for turn in turns {
        if let Turn::Assistant { calls, .. } = turn {
            for call in calls {
                if let (Some(aliases), Some(args)) = (aliases.get(&call.name), call.args.as_mut()) {
                    let pairs = aliases.iter().map(|(a, r)| (r.clone(), a.clone()));
                    rename_keys(args, pairs);
                }
            }
        }
    }
}

/// Compiles each offered tool into `tools`, by name (400 `invalid_tools` for one that fails).
fn compile_tools(
    tools: &mut HashMap<String, CompiledTool>,
    definitions: Vec<ToolDefinition>,
) -> Result<(), ProxyError> {
    for definition in definitions {
        let name = definition.id.as_str().to_owned();
        let tool = CompiledTool::new(definition)
            .map_err(|e| ProxyError::invalid("invalid_tools", format!("tool '{name}': {e}")))?;
        tools.insert(name, tool);
    }
    Ok(())
}

/// Inserts the demonstration turns between the system messages and the conversation.
fn insert_demonstration(messages: &mut Vec<Message>, demonstration: Vec<Message>) {
    // The demonstration goes between the system messages and the conversation.
    let first_turn = messages
        .iter()
        .position(|m| m.role != Role::System)
        .unwrap_or(messages.len());
    messages.splice(first_turn..first_turn, demonstration);
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
            .find(|name| !tam::action_xml::is_element_name(name));
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
    protocol: ProtocolChoice,
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
