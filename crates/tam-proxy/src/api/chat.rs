//! OpenAI Chat Completions (`POST /v1/chat/completions`): a client's request read into the
//! one [`Conversation`], and the reply written as `chat.completion.chunk` events or one
//! `chat.completion` ([`ChunkWriter`], [`Completion`]).

use serde_json::{Map, Value};
use tool_schema::{Implementation, ToolDefinition, ToolId, empty_parameters};

use crate::ProxyError;
use crate::conversation::{Conversation, Turn, past_call};
use crate::history::PastCall;
use crate::prompt::Choice;
use tam_model::ModelOptions;

#[cfg(test)]
use crate::ProtocolChoice;
#[cfg(test)]
use crate::conversation::Translated;
#[cfg(test)]
use crate::prompt::after_observations;
#[cfg(test)]
use tam_model::{Message, Role};

pub(crate) use super::chat_wire::ChunkWriter;

/// Fields the proxy consumes; every other field goes to the upstream as the client sent it.
const CONSUMED: &[&str] = &[
    "model",
    "messages",
    "stream",
    "stream_options",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "n",
    "max_tokens",
    "stop",
    "seed",
];

/// Reads and translates a request body (the reader, then the one translation).
#[cfg(test)]
pub(crate) fn translate(
    body: &[u8],
    protocol: ProtocolChoice,
    default_model: &str,
) -> Result<Translated, ProxyError> {
    crate::conversation::translate(read(body, default_model)?, protocol)
}

/// Reads a `chat.completions` request body.
pub(crate) fn read(body: &[u8], default_model: &str) -> Result<Conversation, ProxyError> {
    let request: Map<String, Value> = serde_json::from_slice(body).map_err(|e| {
        ProxyError::invalid(
            "invalid_json",
            format!("the body is not a JSON object: {e}"),
        )
    })?;
    let model = match request.get("model") {
        Some(Value::String(model)) if !model.is_empty() => model.clone(),
        None | Some(Value::Null) if !default_model.is_empty() => default_model.to_owned(),
        _ => {
            return Err(ProxyError::invalid(
                "missing_model",
                "'model' must be a non-empty string",
            ));
        }
    };
    if let Some(n) = request.get("n").and_then(Value::as_u64)
        && n > 1
    {
        return Err(ProxyError::invalid(
            "unsupported_n",
            "the proxy returns one choice: 'n' must be 1",
        ));
    }
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let parallel = request
        .get("parallel_tool_calls")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let choice = match request.get("tool_choice") {
        None | Some(Value::Null) => Some(Choice::Auto),
        Some(Value::String(s)) if s == "auto" => Some(Choice::Auto),
        Some(Value::String(s)) if s == "none" => None,
        Some(Value::String(s)) if s == "required" => Some(Choice::Required),
        Some(value) => match value.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => Some(Choice::Named(name.to_owned())),
            None => {
                return Err(ProxyError::invalid(
                    "invalid_tools",
                    format!("unknown 'tool_choice': {value}"),
                ));
            }
        },
    };
    let tools = read_tools(request.get("tools"))?;
    let turns = read_messages(request.get("messages"))?;

    let mut options = ModelOptions::new();
    options.max_tokens = request
        .get("max_tokens")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    options.seed = request.get("seed").and_then(Value::as_u64);
    options.stop = match request.get("stop") {
        Some(Value::String(stop)) => vec![stop.clone()],
        Some(Value::Array(stops)) => stops
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let mut extra = Map::new();
    for (key, value) in &request {
        let typed_elsewhere = match key.as_str() {
            "max_tokens" => options.max_tokens.is_some(),
            "seed" => options.seed.is_some(),
            "stop" => !options.stop.is_empty() || value.is_null(),
            _ => CONSUMED.contains(&key.as_str()),
        };
        if !typed_elsewhere {
            extra.insert(key.clone(), value.clone());
        }
    }
    let include_usage = request
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(Conversation {
        model,
        turns,
        tools,
        choice,
        parallel,
        options,
        extra,
        stream,
        include_usage,
    })
}

/// `tools`: function definitions; a name tool-schema refuses or a schema it cannot compile
/// is a 400.
fn read_tools(tools: Option<&Value>) -> Result<Vec<ToolDefinition>, ProxyError> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(tools)) => tools,
        Some(_) => {
            return Err(ProxyError::invalid(
                "invalid_tools",
                "'tools' must be an array",
            ));
        }
    };
    let mut definitions = Vec::with_capacity(tools.len());
    for tool in tools {
        let function = tool.get("function").ok_or_else(|| {
            ProxyError::invalid("invalid_tools", "each tool must have a 'function'")
        })?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ProxyError::invalid("invalid_tools", "each function needs a 'name'"))?;
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        definitions.push(tool_definition(
            name,
            description,
            function.get("parameters").cloned(),
        )?);
    }
    Ok(definitions)
}

/// A client's function as a tool definition: a name tool-schema refuses is a 400
/// (`invalid_tools`); no parameters is an object without properties.
pub(crate) fn tool_definition(
    name: &str,
    description: &str,
    parameters: Option<Value>,
) -> Result<ToolDefinition, ProxyError> {
    let id = ToolId::parse(name).map_err(|e| {
        ProxyError::invalid("invalid_tools", format!("function name '{name}': {e}"))
    })?;
    let parameters = match parameters {
        None | Some(Value::Null) => empty_parameters(),
        Some(parameters) => parameters,
    };
    Ok(ToolDefinition::new(
        id,
        description,
        parameters,
        Implementation::Service,
    ))
}

/// `messages` as turns: `developer` is `system`, an assistant message's `tool_calls` its
/// calls, a `tool` (or `function`) message a tool result.
fn read_messages(messages: Option<&Value>) -> Result<Vec<Turn>, ProxyError> {
    let Some(Value::Array(messages)) = messages else {
        return Err(ProxyError::invalid(
            "invalid_messages",
            "'messages' must be an array",
        ));
    };
    let mut out = Vec::with_capacity(messages.len());
    for (position, message) in messages.iter().enumerate() {
        let invalid = |what: &str| {
            ProxyError::invalid("invalid_messages", format!("messages[{position}]: {what}"))
        };
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("no 'role'"))?;
        let content = content_text(message.get("content")).map_err(|e| match e {
            ContentError::NotText(kind) => ProxyError::invalid(
                "unsupported_content",
                format!("messages[{position}]: content of type '{kind}' cannot be passed to a text model"),
            ),
            ContentError::Invalid => invalid("'content' must be a string or an array of parts"),
        })?;
        out.push(match role {
            "system" | "developer" => Turn::System(content),
            "user" => Turn::User(content),
            "assistant" => Turn::Assistant {
                text: content,
                calls: read_past_calls(message.get("tool_calls")).map_err(|what| invalid(&what))?,
            },
            "tool" | "function" => Turn::ToolResult {
                call_id: message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                name: message
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                content,
                is_error: false,
            },
            other => return Err(invalid(&format!("unknown role '{other}'"))),
        });
    }
    Ok(out)
}

/// An assistant message's `tool_calls`.
fn read_past_calls(calls: Option<&Value>) -> Result<Vec<PastCall>, String> {
    let calls = match calls {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err("'tool_calls' must be an array".into()),
    };
    let mut out = Vec::with_capacity(calls.len());
    for call in calls {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or("a tool call without 'function.name'")?;
        let raw_args = match call.pointer("/function/arguments") {
            Some(Value::String(text)) => text.clone(),
            None | Some(Value::Null) => "{}".to_owned(),
            Some(other) => other.to_string(),
        };
        let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
        out.push(past_call(id, name, raw_args));
    }
    Ok(out)
}

enum ContentError {
    /// A part that is not text (`image_url`, `input_audio`, `file`).
    NotText(String),
    Invalid,
}

/// A message's text: a string, `null` (empty), or the text parts of an array joined by a
/// line break.
fn content_text(content: Option<&Value>) -> Result<String, ContentError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("text");
                match (kind, part.get("text").and_then(Value::as_str)) {
                    ("text", Some(text)) => texts.push(text),
                    ("text", None) => return Err(ContentError::Invalid),
                    (other, _) => return Err(ContentError::NotText(other.to_owned())),
                }
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(ContentError::Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tool_schema::{PromptLanguage, Speaker, SystemPrompt};

    fn body(value: Value) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    #[test]
    fn other_fields_pass_through_and_tool_fields_do_not() {
        let t = translate(
            &body(json!({
                "model": "m", "messages": [{"role": "user", "content": "hi"}],
                "temperature": 0.7, "top_p": 0.9, "max_tokens": 50, "stop": "END", "seed": 7,
                "tools": [], "tool_choice": "auto", "parallel_tool_calls": true,
                "stream": true, "stream_options": {"include_usage": true}, "user": "u1"
            })),
            ProtocolChoice::Tam,
            "",
        )
        .unwrap();
        assert_eq!(t.model, "m");
        assert_eq!(
            Value::Object(t.extra),
            json!({"temperature": 0.7, "top_p": 0.9, "user": "u1"})
        );
        assert_eq!(t.options.max_tokens, Some(50));
        assert_eq!(t.options.stop, ["END"]);
        assert_eq!(t.options.seed, Some(7));
        assert!(t.stream && !t.decode);
        assert_eq!(t.messages, [Message::user("hi")]);
    }

    #[test]
    fn tool_prompt_merges_into_the_system_message() {
        let t = translate(
            &body(json!({
                "model": "m",
                "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "get_weather",
                    "description": "Weather of a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
            })),
            ProtocolChoice::Tam,
            "",
        )
        .unwrap();
        assert!(t.decode);
        // TAM: no demonstration; the system message, then the user's.
        assert_eq!(t.messages.len(), 2);
        assert_eq!(t.messages[1], Message::user("hi"));
        let system = &t.messages[0].content;
        assert!(
            system.starts_with("Be brief.\n\nYou can call the tools listed below."),
            "{system}"
        );
        assert!(
            system.contains("- get_weather: Weather of a city."),
            "{system}"
        );
        assert!(system.contains("city (string, required)"), "{system}");
        assert!(t.offered.get("get_weather").is_some());
    }

    fn two_tools(extra: Value) -> Translated {
        let mut request = json!({
            "model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [
                {"type": "function", "function": {"name": "a", "description": "Tool a."}},
                {"type": "function", "function": {"name": "b", "description": "Tool b."}},
            ],
        });
        for (key, value) in extra.as_object().unwrap() {
            request[key] = value.clone();
        }
        translate(&body(request), ProtocolChoice::Action, "").unwrap()
    }

    #[test]
    fn tool_choice_shapes_the_prompt_and_the_offered_tools() {
        let required = two_tools(json!({"tool_choice": "required"}));
        let system = &required.messages[0].content;
        assert!(
            system.contains("You must call at least one tool"),
            "{system}"
        );
        assert!(
            system.contains("`<a>`") && system.contains("`<b>`"),
            "{system}"
        );
        assert!(required.offered.get("a").is_some() && required.offered.get("b").is_some());
        assert_eq!(required.max_calls, usize::MAX);

        let named = two_tools(
            json!({"tool_choice": {"type": "function", "function": {"name": "b"}}, "parallel_tool_calls": false}),
        );
        let system = &named.messages[0].content;
        assert!(system.contains("You must call the tool b"), "{system}");
        assert!(
            system.contains("Call at most one tool per reply."),
            "{system}"
        );
        assert!(!system.contains("`<a>`"), "{system}");
        assert!(named.offered.get("a").is_none() && named.offered.get("b").is_some());
        assert_eq!(named.max_calls, 1);

        let none = two_tools(json!({"tool_choice": "none"}));
        assert!(!none.decode);
        assert_eq!(none.messages, [Message::user("hi")]);

        let unknown = translate(
            &body(
                json!({"model": "m", "messages": [], "tools": [], "tool_choice": {"type": "function", "function": {"name": "zz"}}}),
            ),
            ProtocolChoice::Tam,
            "",
        );
        assert_eq!(unknown.unwrap_err().code(), "invalid_tools");
    }

    #[test]
    fn tool_runs_become_one_observation_message() {
        let t = translate(
            &body(json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "two"}, {"type": "text", "text": "cities"}]},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Rome\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "tool", "tool_call_id": "c2", "content": "{\"success\":false,\"message\":\"no data\"}"},
                {"role": "developer", "content": "Answer in French."},
            ]})),
            ProtocolChoice::Tam,
            "fallback-model",
        )
        .unwrap();
        assert_eq!(t.model, "fallback-model");
        assert_eq!(
            t.messages,
            [
                Message::user("two\ncities"),
                Message::assistant(
                    "Checking.\n<|[REQUEST_TOOL]|>\ncommand1:「始」w「末」\ncity1:「始」Paris「末」\ncommand2:「始」w「末」\ncity2:「始」Rome「末」\n<|[END_TOOL]|>"
                ),
                Message::user(
                    "Observation: Tool w executed successfully. Result: sunny\nObservation: Error - Tool w failed: no data"
                ),
                Message::system("Answer in French."),
            ]
        );
    }

    /// When the request's tools are prompted, each message of observations ends with the
    /// prompt's line saying what to do with them (once per run of `tool` messages, in both
    /// protocols); a request whose tools are not prompted gets the observations alone.
    #[test]
    fn observations_end_with_what_to_do_next_when_tools_are_prompted() {
        let tools = json!([{"type": "function", "function": {"name": "w",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
        let call = |id: &str, city: &str| {
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "w", "arguments": json!({"city": city}).to_string()}}]})
        };
        let history = json!([
            {"role": "user", "content": "Paris, then Rome?"},
            call("c1", "Paris"),
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            call("c2", "Rome"),
            {"role": "tool", "tool_call_id": "c2", "content": "rain"},
            {"role": "tool", "tool_call_id": "c2", "content": "wind"},
        ]);
        for protocol in [ProtocolChoice::Tam, ProtocolChoice::Action] {
            let after = after_observations(protocol);
            let t = translate(
                &body(json!({"model": "m", "messages": history, "tools": tools})),
                protocol,
                "",
            )
            .unwrap();
            let observations: Vec<&str> = t
                .messages
                .iter()
                .filter(|m| m.content.starts_with("Observation: "))
                .map(|m| m.content.as_str())
                .collect();
            assert_eq!(
                observations,
                [
                    format!("Observation: Tool w executed successfully. Result: sunny\n\n{after}"),
                    format!(
                        "Observation: Tool w executed successfully. Result: rain\nObservation: Tool w executed successfully. Result: wind\n\n{after}"
                    ),
                ],
                "{protocol:?}"
            );
            // Tools not prompted (`tool_choice: "none"`): the observations alone.
            let none = translate(
                &body(
                    json!({"model": "m", "messages": history, "tools": tools, "tool_choice": "none"}),
                ),
                protocol,
                "",
            )
            .unwrap();
            assert!(
                none.messages
                    .iter()
                    .filter(|m| m.content.starts_with("Observation: "))
                    .all(|m| !m.content.contains(after)),
                "{protocol:?}"
            );
        }
    }

    /// In ACTION the demonstration goes between the system messages and the conversation;
    /// without the no-tool exchange when the request requires a call; not at all when
    /// nothing is decoded (no tools, `tool_choice: "none"`) or once the conversation holds
    /// a call (a later round of an agent). TAM (and auto, which teaches TAM) has none.
    #[test]
    fn the_demonstration_goes_before_the_conversation_in_action() {
        let tools = json!([{"type": "function", "function": {"name": "get_time",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}]);
        let first_round = json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "time in Paris?"},
        ]);
        let call = json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{\"zone\":\"CET\"}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "12:00"});
        let mut history = first_round.as_array().unwrap().clone();
        history.extend([call.clone(), result.clone()]);
        let history = Value::Array(history);
        let t = translate(
            &body(json!({"model": "m", "messages": first_round, "tools": tools})),
            ProtocolChoice::Action,
            "",
        )
        .unwrap();
        let demo: Vec<Message> = SystemPrompt::action(PromptLanguage::English)
            .compact_demonstration(false)
            .into_iter()
            .map(|(speaker, text)| match speaker {
                Speaker::User => Message::user(text),
                Speaker::Assistant => Message::assistant(text),
            })
            .collect();
        assert_eq!(demo.len(), 4);
        assert_eq!(t.messages[0].role, Role::System);
        assert!(t.messages[0].content.starts_with("Be brief.\n\n"));
        assert_eq!(t.messages[1..5], demo[..]);
        assert!(t.messages[4].content.starts_with("<ACTION>"));
        assert_eq!(t.messages[5], Message::user("time in Paris?"));
        assert_eq!(t.messages.len(), 6);

        // A later round, the history holding the model's call and its result: no
        // demonstration (given the results, the model answered its questions too).
        let later = translate(
            &body(json!({"model": "m", "messages": history, "tools": tools})),
            ProtocolChoice::Action,
            "",
        )
        .unwrap();
        assert_eq!(later.messages[0], t.messages[0]);
        assert_eq!(later.messages[1], Message::user("time in Paris?"));
        assert!(
            later.messages[2].content.starts_with("<ACTION>"),
            "the history's call"
        );
        assert!(later.messages[3].content.starts_with("Observation: "));
        assert_eq!(later.messages.len(), 4);
        // Either one alone counts as a call in the conversation.
        for held in [call, result] {
            let mut messages = first_round.as_array().unwrap().clone();
            messages.push(held);
            let t = translate(
                &body(json!({"model": "m", "messages": messages, "tools": tools})),
                ProtocolChoice::Action,
                "",
            )
            .unwrap();
            assert!(!t.messages.contains(&demo[0]), "{:?}", t.messages);
        }
        // An earlier exchange in plain text is no call: the demonstration stays.
        let chat = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello!", "tool_calls": []},
            {"role": "user", "content": "time in Paris?"},
        ]);
        let t = translate(
            &body(json!({"model": "m", "messages": chat, "tools": tools})),
            ProtocolChoice::Action,
            "",
        )
        .unwrap();
        assert_eq!(t.messages[1..5], demo[..]);

        // A call is required: only the exchange with a call.
        let required = translate(
            &body(
                json!({"model": "m", "messages": first_round, "tools": tools, "tool_choice": "required"}),
            ),
            ProtocolChoice::Action,
            "",
        )
        .unwrap();
        assert_eq!(required.messages[1..3], demo[2..]);
        assert_eq!(required.messages[3], Message::user("time in Paris?"));

        // Nothing decoded, nothing shown.
        for request in [
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools, "tool_choice": "none"}),
        ] {
            let t = translate(&body(request), ProtocolChoice::Action, "").unwrap();
            assert_eq!(t.messages, [Message::user("hi")]);
        }
        // Without a system message of the client's, the tool prompt is the first message.
        let t = translate(
            &body(
                json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}),
            ),
            ProtocolChoice::Action,
            "",
        )
        .unwrap();
        assert_eq!(t.messages[0].role, Role::System);
        assert_eq!(
            t.messages[1],
            Message::user("What is the capital of France?")
        );
        assert_eq!(t.messages[5], Message::user("hi"));

        // TAM and auto: the system message, then the conversation.
        for protocol in [ProtocolChoice::Tam, ProtocolChoice::Auto] {
            let t = translate(
                &body(json!({"model": "m", "messages": history, "tools": tools})),
                protocol,
                "",
            )
            .unwrap();
            assert_eq!(t.messages.len(), 4, "{protocol:?}");
            assert_eq!(t.messages[1], Message::user("time in Paris?"));
        }
    }

    #[test]
    fn errors_are_400s_with_codes() {
        let code = |value: Value| {
            translate(&body(value), ProtocolChoice::Tam, "")
                .unwrap_err()
                .code()
        };
        assert_eq!(code(json!({"model": "m"})), "invalid_messages");
        assert_eq!(code(json!({"messages": []})), "missing_model");
        assert_eq!(
            code(json!({"model": "m", "messages": [], "n": 2})),
            "unsupported_n"
        );
        assert_eq!(
            code(
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})
            ),
            "unsupported_content"
        );
        assert_eq!(
            code(
                json!({"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "a b"}}]})
            ),
            "invalid_tools"
        );
        assert!(matches!(
            translate(b"[1", ProtocolChoice::Tam, ""),
            Err(ProxyError::InvalidRequest {
                code: "invalid_json",
                ..
            })
        ));
    }

    #[test]
    fn a_tool_name_resolves_exactly_or_loosely_when_only_one_matches() {
        let body = json!({
            "model": "m", "messages": [],
            "tools": [
                {"type": "function", "function": {"name": "prob_dist_binomial"}},
                {"type": "function", "function": {"name": "get_weather"}},
                {"type": "function", "function": {"name": "getWeather"}},
            ],
        });
        let t = translate(body.to_string().as_bytes(), ProtocolChoice::Tam, "").unwrap();
        let offered = &t.offered;
        assert_eq!(
            offered.resolve("prob_dist_binomial"),
            Some("prob_dist_binomial")
        );
        assert_eq!(
            offered.resolve("prob_dist.binomial"),
            Some("prob_dist_binomial")
        );
        assert_eq!(
            offered.resolve("Prob-Dist-Binomial"),
            Some("prob_dist_binomial")
        );
        assert_eq!(offered.resolve("getWeather"), Some("getWeather"));
        // Two offered names match `get.weather` loosely: no guess.
        assert_eq!(offered.resolve("get.weather"), None);
        assert_eq!(offered.resolve("binomial"), None);
    }
}
