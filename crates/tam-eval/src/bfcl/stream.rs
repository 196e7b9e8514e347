//! One case over HTTP: the request, the streamed reply read as server-sent events and
//! accumulated as openai-python does, the result line as BFCL's runner writes it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::python::truthy;
use super::report::{Case, clip};
use crate::http::{self, Next};

/// Seconds without a byte before a request is given up (BFCL's runner's time-out, per
/// read).
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(600);

/// One tool call being accumulated.
#[derive(Default)]
struct Slot {
    id: String,
    name: String,
    arguments: String,
    id_pieces: usize,
    name_pieces: usize,
}

/// A streamed reply accumulated for choice 0, as openai-python does.
#[derive(Default)]
struct StreamState {
    content: String,
    reasoning: String,
    finish: Value,
    usage: Value,
    calls: BTreeMap<i64, Slot>,
    notes: Vec<String>,
    first_delta_at: Option<Instant>,
}

/// The string of a member that is present and truthy, `None` when absent or falsy; an
/// error when it is something else than a string (where openai-python would fail).
fn text_member<'a>(m: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match m.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        v if !truthy(v) => Ok(None),
        Some(other) => Err(format!(
            "`{key}` is not a string: {}",
            clip(&other.to_string(), 200)
        )),
        None => Ok(None),
    }
}

impl StreamState {
    fn note(&mut self, text: String) {
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }

    /// Folds one `chat.completion.chunk` in; an error for what openai-python rejects.
    fn feed(&mut self, chunk: &Map<String, Value>, now: Instant) -> Result<(), String> {
        if truthy(chunk.get("usage")) {
            self.usage = chunk["usage"].clone();
        }
        let choices = match chunk.get("choices") {
            Some(Value::Array(choices)) => choices.as_slice(),
            v if !truthy(v) => &[],
            Some(other) => {
                return Err(format!(
                    "`choices` is not a list: {}",
                    clip(&other.to_string(), 200)
                ));
            }
            None => &[],
        };
        for choice in choices {
            let Value::Object(choice) = choice else {
                return Err(format!("a choice that is not an object: {choice}"));
            };
            let index = choice.get("index").cloned().unwrap_or(json!(0));
            if index != json!(0) {
                self.note(format!("choice index {index} ignored"));
                continue;
            }
            if truthy(choice.get("finish_reason")) {
                self.finish = choice["finish_reason"].clone();
            }
            let empty = Map::new();
            let delta = match choice.get("delta") {
                Some(Value::Object(d)) => d,
                v if !truthy(v) => &empty,
                Some(other) => return Err(format!("a delta that is not an object: {other}")),
                None => &empty,
            };
            if let Some(text) = text_member(delta, "content")? {
                self.content.push_str(text);
                self.first_delta_at.get_or_insert(now);
            }
            if let Some(text) = text_member(delta, "reasoning_content")? {
                self.reasoning.push_str(text);
            }
            let tool_calls = match delta.get("tool_calls") {
                Some(Value::Array(calls)) => calls.as_slice(),
                v if !truthy(v) => &[],
                Some(other) => return Err(format!("`tool_calls` is not a list: {other}")),
                None => &[],
            };
            for tc in tool_calls {
                self.first_delta_at.get_or_insert(now);
                let index = tc.get("index").and_then(Value::as_i64);
                let (Value::Object(tc), Some(index)) = (tc, index) else {
                    // openai-python raises here ("Expected list delta entry to have an
                    // `index` key").
                    return Err(format!(
                        "tool_call delta without an integer index: {}",
                        clip(&tc.to_string(), 200)
                    ));
                };
                let slot = self.calls.entry(index).or_default();
                if let Some(id) = text_member(tc, "id")? {
                    slot.id.push_str(id);
                    slot.id_pieces += 1;
                }
                let empty = Map::new();
                let function = match tc.get("function") {
                    Some(Value::Object(f)) => f,
                    v if !truthy(v) => &empty,
                    Some(other) => {
                        return Err(format!("a function that is not an object: {other}"));
                    }
                    None => &empty,
                };
                if let Some(name) = text_member(function, "name")? {
                    slot.name.push_str(name);
                    slot.name_pieces += 1;
                }
                if let Some(arguments) = text_member(function, "arguments")? {
                    slot.arguments.push_str(arguments);
                }
            }
        }
        Ok(())
    }

    /// The accumulated calls in index order, as result-line entries; notes oddities.
    fn tool_calls(&mut self) -> Vec<Value> {
        let indices: Vec<i64> = self.calls.keys().copied().collect();
        if indices.iter().enumerate().any(|(i, &k)| k != i as i64) {
            let list: Vec<String> = indices.iter().map(i64::to_string).collect();
            self.note(format!(
                "tool_call indices not 0..n-1: [{}]",
                list.join(", ")
            ));
        }
        let mut notes = Vec::new();
        for (i, slot) in &self.calls {
            if slot.name_pieces > 1 {
                notes.push(format!(
                    "tool call {i}: name sent in {} chunks (concatenated, as openai-python; \
                     openai-node keeps the last)",
                    slot.name_pieces
                ));
            }
            if slot.id_pieces > 1 {
                notes.push(format!(
                    "tool call {i}: id sent in {} chunks (concatenated)",
                    slot.id_pieces
                ));
            }
        }
        for n in notes {
            self.note(n);
        }
        self.calls
            .values()
            .map(|s| {
                json!({
                    "id": if s.id.is_empty() { Value::Null } else { json!(s.id) },
                    "name": s.name,
                    "arguments": s.arguments,
                })
            })
            .collect()
    }
}

/// Seconds, rounded to milliseconds as BFCL's runner writes them.
fn seconds(d: Duration) -> Value {
    json!((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// How a transfer ended, beside what the stream state holds.
struct Outcome {
    http_status: Option<u16>,
    error: Option<String>,
}

/// Sends one case to `url` (streaming) and returns its result line.
pub(crate) fn run_case(case: &Case, url: &str, body: &Value) -> Value {
    let start = Instant::now();
    let mut state = StreamState::default();
    let outcome = exchange(url, &body.to_string(), &mut state);
    let tool_calls = state.tool_calls();
    json!({
        "id": case.id,
        "category": case.category,
        "tool_calls": tool_calls,
        "content": state.content,
        "reasoning_content": state.reasoning,
        "finish_reason": state.finish,
        "usage": state.usage,
        "time_s": seconds(start.elapsed()),
        "ttft_s": state.first_delta_at.map(|t| seconds(t - start)),
        "http_status": outcome.http_status,
        "error": outcome.error,
        "notes": state.notes,
        "stream": true,
    })
}

/// The HTTP exchange of one case, the stream folded into `state`.
fn exchange(url: &str, body: &str, state: &mut StreamState) -> Outcome {
    let mut outcome = Outcome {
        http_status: None,
        error: None,
    };
    let response = match http::client(READ_TIMEOUT).and_then(|c| http::post_stream(&c, url, body)) {
        Ok(response) => response,
        Err(e) => {
            outcome.error = Some(e);
            return outcome;
        }
    };
    let status = response.status().as_u16();
    outcome.http_status = Some(status);
    if status >= 400 {
        let text = response.text().unwrap_or_default();
        outcome.error = Some(format!("HTTP {status}: {}", clip(&text, 1000)));
        return outcome;
    }
    let read = http::read_events(
        response,
        |_| {},
        |event| {
            let data = event.data.trim();
            if data == "[DONE]" {
                // What follows `[DONE]` is not read (as BFCL's runner).
                return Ok(Next::Stop);
            }
            let chunk = match serde_json::from_str::<Value>(data) {
                Ok(Value::Object(chunk)) => chunk,
                Ok(_) => {
                    return Err(format!(
                        "protocol: an event that is not a JSON object: {}",
                        clip(data, 200)
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "protocol: an event that is not JSON ({e}): {}",
                        clip(data, 200)
                    ));
                }
            };
            if truthy(chunk.get("error")) {
                return Err(format!(
                    "protocol: error event in stream: {}",
                    clip(&chunk["error"].to_string(), 500)
                ));
            }
            state
                .feed(&chunk, Instant::now())
                .map_err(|e| format!("protocol: {e}"))?;
            Ok(Next::More)
        },
    );
    match read {
        // `[DONE]` came.
        Ok(true) => {}
        Ok(false) => state.note("stream ended without data: [DONE]".to_owned()),
        // A dropped connection, the time-out, or what the stream held.
        Err(e) => outcome.error = Some(e),
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::super::{probe, request_body};
    use super::*;
    use crate::cli::ModelChoice;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::thread;

    /// A loopback server answering one request with `response` (raw HTTP), returning the
    /// request it read.
    fn scripted(response: String) -> (String, thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        let handle = thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then Content-Length bytes of body.
            loop {
                let n = stream.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length: usize = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().ok())?
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            stream.write_all(response.as_bytes()).unwrap();
            String::from_utf8_lossy(&request).into_owned()
        });
        (url, handle)
    }

    fn sse(events: &[&str]) -> String {
        let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
        )
    }

    fn test_case() -> Case {
        let line = r#"{"id":"parallel_0","category":"parallel","messages":[{"role":"user","content":"Weather in Paris and Rome?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"answer":[{"get_weather":{"city":["Paris"]}},{"get_weather":{"city":["Rome"]}}],"bfcl_functions":[{"name":"get_weather","parameters":{"type":"dict","properties":{"city":{"type":"string"}},"required":["city"]}}],"name_map":{}}"#;
        let Ok(Value::Object(line)) = serde_json::from_str(line) else {
            unreachable!()
        };
        Case {
            id: "parallel_0".into(),
            category: "parallel".into(),
            line,
        }
    }

    #[test]
    fn a_streamed_reply_is_accumulated_by_index_and_scored() {
        let chunk = |delta: &str, finish: &str| {
            format!(r#"{{"choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#)
        };
        let events = [
            chunk(r#"{"role":"assistant","content":"Checking."}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"rome\"}"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}"#, "null"),
            chunk("{}", r#""tool_calls""#),
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}"#.to_owned(),
            "[DONE]".to_owned(),
        ];
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let (url, server) = scripted(sse(&events));
        let case = test_case();
        let line = run_case(&case, &url, &request_body(&case, 64, true));
        let request = server.join().unwrap();
        let body = &request[request.find("\r\n\r\n").unwrap() + 4..];
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["temperature"], json!(0));
        assert_eq!(body["max_tokens"], json!(64));
        assert_eq!(body["parallel_tool_calls"], json!(true));
        assert_eq!(body["tools"], case.line["tools"]);
        assert!(body.get("tool_choice").is_none());

        assert_eq!(line["error"], Value::Null, "{line}");
        assert_eq!(line["http_status"], json!(200));
        assert_eq!(line["content"], json!("Checking."));
        assert_eq!(line["finish_reason"], json!("tool_calls"));
        assert_eq!(line["usage"]["completion_tokens"], json!(20));
        assert_eq!(
            line["tool_calls"],
            json!([
                {"id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"id": "call_b", "name": "get_weather", "arguments": "{\"city\":\"rome\"}"},
            ])
        );
        assert_eq!(line["notes"], json!([]));
        let Value::Object(result) = line else {
            unreachable!()
        };
        assert!(crate::bfcl::score::score_case(&case, Some(&result), false).valid);
    }

    #[test]
    fn errors_are_recorded_not_raised() {
        let case = test_case();
        let body = request_body(&case, 64, false);
        assert!(body.get("parallel_tool_calls").is_none());

        let (url, server) = scripted(sse(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            r#"{"error":{"message":"the block was cut","type":"api_error","code":"streamed_call_invalid"}}"#,
        ]));
        let line = run_case(&case, &url, &body);
        server.join().unwrap();
        let error = line["error"].as_str().unwrap();
        assert!(
            error.starts_with("protocol: error event in stream"),
            "{error}"
        );
        assert!(error.contains("streamed_call_invalid"), "{error}");

        let (url, server) = scripted(sse(&["{oops", "[DONE]"]));
        let line = run_case(&case, &url, &body);
        server.join().unwrap();
        assert!(
            line["error"].as_str().unwrap().contains("not JSON"),
            "{line}"
        );

        let (url, server) = scripted(sse(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"f"}}]}}]}"#,
        ]));
        let line = run_case(&case, &url, &body);
        server.join().unwrap();
        assert!(
            line["error"].as_str().unwrap().contains("integer index"),
            "{line}"
        );

        let answer = r#"{"error":{"message":"upstream down"}}"#;
        let (url, server) = scripted(format!(
            "HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        ));
        let line = run_case(&case, &url, &body);
        server.join().unwrap();
        assert_eq!(line["http_status"], json!(502));
        assert_eq!(line["error"], json!(format!("HTTP 502: {answer}")));

        // No [DONE]: a note, not an error.
        let (url, server) = scripted(sse(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"length"}]}"#,
        ]));
        let line = run_case(&case, &url, &body);
        server.join().unwrap();
        assert_eq!(line["error"], Value::Null, "{line}");
        assert_eq!(line["finish_reason"], json!("length"));
        assert_eq!(line["notes"], json!(["stream ended without data: [DONE]"]));

        // Nobody listening.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let line = run_case(
            &case,
            &format!("http://127.0.0.1:{port}/v1/chat/completions"),
            &body,
        );
        let error = line["error"].as_str().unwrap();
        assert!(
            error.starts_with("POST http://127.0.0.1:") && error.contains("onnect"),
            "{error}"
        );
        let model = crate::setup::read_pins()
            .unwrap()
            .model(ModelChoice::Coder1_5b)
            .unwrap();
        assert!(
            probe(&format!("http://127.0.0.1:{port}/v1"), &model)
                .unwrap_err()
                .contains("nothing answers")
        );
    }
}
