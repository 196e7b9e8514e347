//! How the legs judge what came back: `tam decode`'s events (proof), `tam run --json`'s
//! events, and the streamed `chat/completions` reply of `tam serve`.

use std::fmt::Write as _;

use serde_json::Value;

/// The call every leg expects: the user prompt of `e2e/prompts/user.txt` asks for it.
const EXPECTED_TOOL: &str = "GetPlayerInfo";
/// The expected call's arguments.
const EXPECTED_ARGS: [(&str, &str); 1] = [("player_id", "player123")];
/// A text the expected call's observation holds (the demo's player123 is Alice).
const EXPECTED_OBSERVATION: &str = "Alice";

/// `text` parsed as JSON.
fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text)
}

/// Every value in the tree of `v`, `v` first, depth first, in document order.
fn walk(v: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        out.push(v);
        match v {
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(members) => stack.extend(members.values().rev()),
            _ => {}
        }
    }
    out
}

/// What a leg's output showed.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Verdict {
    /// The expected tool was called with the expected arguments.
    pub(crate) call: bool,
    /// The expected call's observation came back (only `tam run` has one).
    pub(crate) observation: bool,
    /// Calls seen, as `tool(args)`.
    pub(crate) calls: Vec<String>,
    /// Warning codes (allowed).
    pub(crate) warnings: Vec<String>,
    /// Error codes: the leg fails.
    pub(crate) errors: Vec<String>,
}

impl Verdict {
    pub(crate) fn describe(&self) -> String {
        let calls = if self.calls.is_empty() {
            "no call".to_owned()
        } else {
            self.calls.join(", ")
        };
        let mut out = format!("{} — {}", if self.call { "PASS" } else { "FAIL" }, calls);
        if !self.errors.is_empty() {
            let _ = write!(out, "; errors: {}", self.errors.join(", "));
        }
        out
    }

    pub(crate) fn warnings_note(&self) -> String {
        if self.warnings.is_empty() {
            String::new()
        } else {
            format!(" [warnings: {}]", self.warnings.join(", "))
        }
    }
}

/// Whether an `args` object holds every expected argument (as a string).
fn has_expected_args(args: &Value) -> bool {
    EXPECTED_ARGS
        .iter()
        .all(|(k, v)| args.get(k).and_then(Value::as_str) == Some(v))
}

/// Short text of a call, `tool(k=v, …)`.
fn call_text(tool: &str, args: Option<&Value>) -> String {
    let mut out = format!("{tool}(");
    if let Some(Value::Object(members)) = args {
        let parts: Vec<String> = members
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s:?}"),
                other => format!("{k}={other}"),
            })
            .collect();
        out.push_str(&parts.join(", "));
    }
    out.push(')');
    out
}

/// Collects `{"severity":…, "code":…}` diagnostics anywhere in `v`.
fn collect_diagnostics(v: &Value, verdict: &mut Verdict) {
    for node in walk(v) {
        let (Some(severity), Some(code)) = (
            node.get("severity").and_then(Value::as_str),
            node.get("code").and_then(Value::as_str),
        ) else {
            continue;
        };
        let list = if severity == "error" {
            &mut verdict.errors
        } else {
            &mut verdict.warnings
        };
        list.push(code.to_owned());
    }
}

/// Judges `tam decode`'s JSON lines: a `tool_calls` event calling the expected
/// tool with the expected arguments; diagnostics sorted by severity.
pub(crate) fn judge_decoded(lines: &str) -> Verdict {
    let mut verdict = Verdict::default();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = parse(line) else {
            verdict.errors.push(format!("unparsable line {line:?}"));
            continue;
        };
        collect_diagnostics(&event, &mut verdict);
        if event.get("type").and_then(Value::as_str) != Some("tool_calls") {
            continue;
        }
        if let Some(Value::Array(calls)) = event.get("calls") {
            for call in calls {
                let tool = call.get("tool").and_then(Value::as_str).unwrap_or("?");
                let args = call.get("args");
                verdict.calls.push(call_text(tool, args));
                if tool == EXPECTED_TOOL && args.is_some_and(has_expected_args) {
                    verdict.call = true;
                }
            }
        }
    }
    verdict
}

/// Judges `tam run --json` output (one JSON object per agent event per line). Tolerant of
/// the event layout, which `tam run` defines: anywhere in an event,
/// * a call is an object with a tool name under `tool`, `tool_id`, `name` or `id` and its
///   arguments under `args`, `arguments`, `params` or `parameters` (an object, or a JSON
///   text of one, as OpenAI writes them);
/// * the observation is a string holding [`EXPECTED_OBSERVATION`], in the call's event or
///   a later one, that is not prose: it holds `Observation`, or is not the member `text`,
///   `content` or `delta` (the model's own words could name the player by guess);
/// * diagnostics are objects with `severity` and `code`.
///
/// This is the function to adjust when `tam run`'s JSON changes.
pub(crate) fn judge_run_output(lines: &str) -> Verdict {
    const TOOL_KEYS: [&str; 4] = ["tool", "tool_id", "name", "id"];
    const ARG_KEYS: [&str; 4] = ["args", "arguments", "params", "parameters"];
    const PROSE_KEYS: [&str; 3] = ["text", "content", "delta"];
    let mut verdict = Verdict::default();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = parse(line) else {
            // Not JSON (a stray log line): ignored, as prose is.
            continue;
        };
        collect_diagnostics(&event, &mut verdict);
        for node in walk(&event) {
            let Some(tool) = TOOL_KEYS
                .iter()
                .find_map(|k| node.get(k).and_then(Value::as_str))
            else {
                continue;
            };
            let Some(args) = ARG_KEYS.iter().find_map(|k| node.get(k)) else {
                continue;
            };
            let parsed;
            let args = match args {
                Value::String(text) => match parse(text) {
                    Ok(v) => {
                        parsed = v;
                        &parsed
                    }
                    Err(_) => args,
                },
                other => other,
            };
            let text = call_text(tool, Some(args));
            if !verdict.calls.contains(&text) {
                verdict.calls.push(text);
            }
            if tool == EXPECTED_TOOL && has_expected_args(args) {
                verdict.call = true;
            }
        }
        if verdict.call && !verdict.observation {
            verdict.observation = walk(&event).into_iter().any(|node| {
                let Value::Object(members) = node else {
                    return false;
                };
                members.iter().any(|(key, value)| {
                    value.as_str().is_some_and(|s| {
                        s.contains(EXPECTED_OBSERVATION)
                            && (s.contains("Observation") || !PROSE_KEYS.contains(&key.as_str()))
                    })
                })
            });
        }
    }
    verdict
}

/// What a streamed `chat/completions` reply of `tam serve` held.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ServeVerdict {
    /// A `tool_calls` call of the expected tool with the expected arguments.
    pub(crate) call: bool,
    /// Calls seen, as `tool(args)` (arguments that are not JSON: as written).
    pub(crate) calls: Vec<String>,
    /// Calls seen, as the client gathers them: name and arguments text, by index.
    pub(crate) raw_calls: Vec<(String, String)>,
    /// The reply's text (`delta.content`), joined.
    pub(crate) content: String,
    /// Chunks that carried a piece of arguments.
    pub(crate) argument_chunks: usize,
    /// The `finish_reason` of the last chunk.
    pub(crate) finish: Option<String>,
    /// A proxy failure: an error event, an error body, a line that is not JSON, no
    /// `[DONE]`.
    pub(crate) error: Option<String>,
}

impl ServeVerdict {
    pub(crate) fn describe(&self) -> String {
        let calls = if self.calls.is_empty() {
            "no call".to_owned()
        } else {
            self.calls.join(", ")
        };
        format!(
            "{} — {calls} ({} argument chunks, finish_reason {})",
            if self.call {
                "PASS"
            } else {
                "no expected call (the model's choice)"
            },
            self.argument_chunks,
            self.finish.as_deref().unwrap_or("none")
        )
    }
}

/// Judges the SSE text of a streamed `chat/completions` reply: gathers each `tool_calls`
/// index's name and arguments pieces, then checks them against the expected call. An
/// error event or body, an unparsable event, or a stream without `[DONE]` is a proxy
/// failure (`error`); no call or another call is the model's choice.
pub(crate) fn judge_serve_stream(sse: &str) -> ServeVerdict {
    let mut verdict = ServeVerdict::default();
    // (name, arguments) by index.
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut done = false;
    let events = match crate::http::event_data(sse) {
        Ok(events) => events,
        Err(e) => {
            verdict.error = Some(e);
            Vec::new()
        }
    };
    let data_lines = events.len();
    for data in &events {
        let data = data.trim();
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let event = match parse(data) {
            Ok(event) => event,
            Err(e) => {
                verdict.error = Some(format!("an event that is not JSON ({e}): {data}"));
                continue;
            }
        };
        if let Some(error) = event.get("error") {
            let code = error.get("code").and_then(Value::as_str).unwrap_or("?");
            let message = error.get("message").and_then(Value::as_str).unwrap_or("?");
            verdict.error = Some(format!("error event {code}: {message}"));
            continue;
        }
        let Some(choice) = event.get("choices").and_then(|c| c.get(0)) else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            verdict.finish = Some(reason.to_owned());
        }
        if let Some(text) = choice
            .get("delta")
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
        {
            verdict.content.push_str(text);
        }
        let Some(Value::Array(deltas)) = choice.get("delta").and_then(|d| d.get("tool_calls"))
        else {
            continue;
        };
        for delta in deltas {
            let index = match delta.get("index") {
                Some(Value::Number(n)) => n
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(usize::MAX),
                _ => usize::MAX,
            };
            if index > calls.len() || index == usize::MAX {
                verdict.error = Some(format!(
                    "a tool_calls chunk with index {index} out of order"
                ));
                continue;
            }
            if index == calls.len() {
                calls.push(Default::default());
            }
            let function = delta.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                calls[index].0 = name.to_owned();
            }
            if let Some(piece) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
            {
                calls[index].1.push_str(piece);
                verdict.argument_chunks += 1;
            }
        }
    }
    if data_lines == 0 {
        let body = sse.trim();
        verdict.error = Some(match parse(body) {
            Ok(v) if v.get("error").is_some() => format!("an error answer: {body}"),
            _ => format!("not an event stream: {body}"),
        });
    } else if !done && verdict.error.is_none() {
        verdict.error = Some("the event stream ended without [DONE]".to_owned());
    }
    for (name, arguments) in &calls {
        match parse(arguments) {
            Ok(args) => {
                verdict.calls.push(call_text(name, Some(&args)));
                if name == EXPECTED_TOOL && has_expected_args(&args) {
                    verdict.call = true;
                }
            }
            Err(_) => verdict
                .calls
                .push(format!("{name}(unfinished arguments {arguments:?})")),
        }
    }
    verdict.raw_calls = calls;
    verdict
}

/// What the model did with a tool's result, from the second round of the `tam serve` leg
/// (its reply judged by [`judge_serve_stream`]): answered in prose with the result (the
/// text holds [`EXPECTED_OBSERVATION`]) or without it (an answer to something else: the
/// demonstration's questions, or a result made up), called again, wrote a block that is
/// not a call (its markers in the text), or said nothing.
pub(crate) fn describe_follow_up(reply: &ServeVerdict) -> String {
    const MARKERS: [&str; 3] = ["<|[REQUEST_TOOL]|>", "<ACTION>", "<|[END_TOOL]|>"];
    let text = reply.content.trim();
    if !reply.calls.is_empty() {
        format!("CALLED AGAIN: {}", reply.calls.join(", "))
    } else if MARKERS.iter().any(|m| text.contains(m)) {
        format!("A BLOCK AS TEXT: {:?}", clip(text))
    } else if text.is_empty() {
        "NO ANSWER (an empty reply)".to_owned()
    } else if text.contains(EXPECTED_OBSERVATION) {
        format!("answered with the result {:?}", clip(text))
    } else {
        format!("ANSWERED WITHOUT THE RESULT {:?}", clip(text))
    }
}

/// The first 100 characters of `text`, `…` after a cut.
fn clip(text: &str) -> String {
    match text.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_reply_with_the_expected_call_passes() {
        let lines = r#"{"type":"text","text":"Looking it up.\n"}
{"type":"tool_calls","protocol":"tam","span":[15,90],"calls":[{"tool":"GetPlayerInfo","args":{"player_id":"player123"}}],"diagnostics":[{"severity":"warning","code":"stray_text","message":"m","span":[1,2]}]}
"#;
        let v = judge_decoded(lines);
        assert!(v.call);
        assert_eq!(v.calls, ["GetPlayerInfo(player_id=\"player123\")"]);
        assert_eq!(v.warnings, ["stray_text"]);
        assert!(v.errors.is_empty());
    }

    #[test]
    fn decoded_reply_with_a_wrong_argument_or_an_error_fails() {
        let wrong = r#"{"type":"tool_calls","protocol":"action","span":[0,9],"calls":[{"tool":"GetPlayerInfo","args":{"playerId":"player123"}}],"diagnostics":[]}"#;
        assert!(!judge_decoded(wrong).call);
        let cut = r#"{"type":"diagnostic","severity":"error","code":"unterminated_block","message":"m","span":[0,9]}"#;
        let v = judge_decoded(cut);
        assert!(!v.call);
        assert_eq!(v.errors, ["unterminated_block"]);
        assert!(!judge_decoded("{\"type\":\"text\",\"text\":\"no call\"}").call);
    }

    #[test]
    fn run_output_needs_the_call_and_then_its_observation() {
        let full = r#"{"type":"round_started","round":1}
{"type":"text","text":"I'll look up player123."}
{"type":"block_closed","kind":"tam","calls":[{"tool":"GetPlayerInfo","args":{"player_id":"player123"}}]}
{"type":"call_finished","tool":"GetPlayerInfo","result":{"success":true,"data":{"name":"Alice"}}}
{"type":"observation","text":"Observation: Tool GetPlayerInfo executed successfully. Result: {\"name\":\"Alice\"}"}
{"type":"text","text":"The player is Alice."}
"#;
        let v = judge_run_output(full);
        assert!(v.call && v.observation, "{v:?}");

        // OpenAI-style arguments as a JSON text are read too.
        let openai = r#"{"event":"tool_call","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"player123\"}"}}
{"event":"tool_result","content":"Observation: Tool GetPlayerInfo executed successfully. Result: {\"name\":\"Alice\"}"}"#;
        let v = judge_run_output(openai);
        assert!(v.call && v.observation, "{v:?}");

        // The call without an observation, or an observation without the call, fails.
        let no_obs = full
            .lines()
            .filter(|l| !l.contains("Alice"))
            .collect::<Vec<_>>()
            .join("\n");
        let v = judge_run_output(&no_obs);
        assert!(v.call && !v.observation, "{v:?}");
        let no_call = full
            .lines()
            .filter(|l| !l.contains("block_closed"))
            .collect::<Vec<_>>()
            .join("\n");
        let v = judge_run_output(&no_call);
        assert!(!v.call && !v.observation, "{v:?}");

        // The model's prose naming the player is no observation.
        let prose_only = r#"{"type":"tool_call","tool":"GetPlayerInfo","args":{"player_id":"player123"}}
{"type":"text","text":"The player is probably Alice."}"#;
        let v = judge_run_output(prose_only);
        assert!(v.call && !v.observation, "{v:?}");
    }

    /// A chunk of a streamed reply with `delta`.
    fn chunk(delta: &str, finish: &str) -> String {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    }

    #[test]
    fn serve_stream_with_the_expected_call_in_pieces_passes() {
        let sse = [
            chunk(r#"{"role":"assistant","content":""}"#, "null"),
            chunk(r#"{"content":"Looking."}"#, "null"),
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"GetPlayerInfo","arguments":""}}]}"#,
                "null",
            ),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"player_id\":\"play"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"er123\"}"}}]}"#, "null"),
            chunk("{}", "\"tool_calls\""),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&sse);
        assert!(v.call, "{v:?}");
        assert_eq!(v.calls, ["GetPlayerInfo(player_id=\"player123\")"]);
        assert_eq!(v.argument_chunks, 2);
        assert_eq!(v.finish.as_deref(), Some("tool_calls"));
        assert_eq!(v.error, None);
    }

    #[test]
    fn serve_stream_without_the_call_is_the_models_choice_and_errors_are_failures() {
        let prose = [
            chunk(r#"{"content":"Alice, I think."}"#, "null"),
            chunk("{}", "\"stop\""),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&prose);
        assert!(!v.call && v.calls.is_empty() && v.error.is_none(), "{v:?}");

        let wrong = [
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"player7\"}"}}]}"#,
                "null",
            ),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&wrong);
        assert!(!v.call && v.error.is_none(), "{v:?}");
        assert_eq!(v.calls, ["GetPlayerInfo(player_id=\"player7\")"]);

        // A streamed call never completed, then the proxy's error event: a failure.
        let broken = [
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"pl"}}]}"#,
                "null",
            ),
            "data: {\"error\":{\"message\":\"m\",\"type\":\"api_error\",\"code\":\"streamed_call_invalid\",\"param\":null}}\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&broken);
        assert!(!v.call);
        assert!(
            v.error
                .as_deref()
                .unwrap()
                .contains("streamed_call_invalid"),
            "{v:?}"
        );
        assert!(v.calls[0].contains("unfinished"), "{v:?}");

        let no_done = chunk(r#"{"content":"Hi"}"#, "null");
        assert!(
            judge_serve_stream(&no_done)
                .error
                .unwrap()
                .contains("[DONE]")
        );
        let answer = r#"{"error":{"message":"upstream down","type":"api_error","code":"upstream_unreachable","param":null}}"#;
        assert!(
            judge_serve_stream(answer)
                .error
                .unwrap()
                .contains("error answer")
        );
        assert!(
            judge_serve_stream("data: {oops\n\ndata: [DONE]\n\n")
                .error
                .is_some()
        );
    }

    /// The second round's reply: prose is an answer; a call, a block written as text or
    /// nothing at all is not.
    #[test]
    fn follow_up_replies_are_told_apart() {
        let reply = |delta: &str| {
            judge_serve_stream(
                &[
                    chunk(delta, "null"),
                    chunk("{}", "\"stop\""),
                    "data: [DONE]\n\n".to_owned(),
                ]
                .concat(),
            )
        };
        let answered = reply(r#"{"content":"The player is Alice, level 7."}"#);
        assert_eq!(answered.content, "The player is Alice, level 7.");
        assert!(describe_follow_up(&answered).starts_with("answered with the result"));
        let elsewhere = reply(r#"{"content":"The capital of France is Paris."}"#);
        assert!(describe_follow_up(&elsewhere).starts_with("ANSWERED WITHOUT THE RESULT"));
        assert!(describe_follow_up(&reply(r#"{"content":""}"#)).starts_with("NO ANSWER"));
        assert!(
            describe_follow_up(&reply(
                r#"{"content":"<|[REQUEST_TOOL]|>\ncommand:「始」x「末」"}"#
            ))
            .starts_with("A BLOCK AS TEXT")
        );
        let again = reply(
            r#"{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"player123\"}"}}]}"#,
        );
        assert_eq!(again.raw_calls[0].0, "GetPlayerInfo");
        assert!(describe_follow_up(&again).starts_with("CALLED AGAIN"));
    }
}
