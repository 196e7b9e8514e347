//! Strict calls over loopback: a request with tools to a scripted llama-server goes to its
//! `/completion` with the rendered prompt and a lazy grammar of the offered tools, and its
//! streamed reply comes back as the API's call, in each client API, whole and streamed;
//! `tool_choice` required or named gives a grammar that is not lazy (of the named tool
//! alone); a vLLM gets a structural tag; any other server, a proxy with strict calls off,
//! and a tool set the grammar cannot express get the prompt alone.

#[path = "support/server_kinds.rs"]
mod server_kinds;

use serde_json::{Value, json};
use server_kinds::{Kind, KindServer, Script, rendered};
use tam::ProtocolChoice;
use tam_model::openai::{OpenAiConfig, UpstreamChoice, UpstreamKind};
use tam_model::sse::{SseConfig, SseReader};
use tam_proxy::ProxyConfig;

const WEATHER_ACTION: &str = "Checking.\n<ACTION>\n<get_weather>\n<city>Paris</city>\n<unit>celsius</unit>\n</get_weather>\n";
const WEATHER_TAM: &str = "Checking.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\nunit:「始」celsius「末」\n";

fn weather_call(protocol: ProtocolChoice) -> (&'static str, &'static str) {
    match protocol {
        ProtocolChoice::Tam => (WEATHER_TAM, "<|[END_TOOL]|>"),
        _ => (WEATHER_ACTION, "</ACTION>"),
    }
}

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]})
}

fn time_schema() -> Value {
    json!({"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]})
}

/// The three APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Chat,
    Messages,
    Responses,
}

const APIS: [Api; 3] = [Api::Chat, Api::Messages, Api::Responses];

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Messages => "/v1/messages",
            Api::Responses => "/v1/responses",
        }
    }

    /// A request asking for the weather with the two tools; `choice` is the API's
    /// `tool_choice` (none: absent).
    fn request(self, stream: bool, choice: Option<Value>) -> Value {
        let mut body = match self {
            Api::Chat => json!({
                "model": "m", "stream": stream,
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": [
                    {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": weather_schema()}},
                    {"type": "function", "function": {"name": "get_time", "description": "Time.", "parameters": time_schema()}}],
            }),
            Api::Messages => json!({
                "model": "m", "stream": stream, "max_tokens": 256,
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": [
                    {"name": "get_weather", "description": "Weather.", "input_schema": weather_schema()},
                    {"name": "get_time", "description": "Time.", "input_schema": time_schema()}],
            }),
            Api::Responses => json!({
                "model": "m", "stream": stream,
                "input": "Weather in Paris?",
                "tools": [
                    {"type": "function", "name": "get_weather", "description": "Weather.", "parameters": weather_schema()},
                    {"type": "function", "name": "get_time", "description": "Time.", "parameters": time_schema()}],
            }),
        };
        if let Some(choice) = choice {
            body["tool_choice"] = choice;
        }
        if self == Api::Chat && stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    fn required(self) -> Value {
        match self {
            Api::Messages => json!({"type": "any"}),
            _ => json!("required"),
        }
    }

    fn named(self, name: &str) -> Value {
        match self {
            Api::Chat => json!({"type": "function", "function": {"name": name}}),
            Api::Messages => json!({"type": "tool", "name": name}),
            Api::Responses => json!({"type": "function", "name": name}),
        }
    }
}

async fn post(proxy: &str, path: &str, body: &Value) -> (u16, String) {
    let base = proxy.trim_end_matches("/v1");
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The data of each event of an event stream, as JSON (non-JSON data skipped).
fn events(text: &str) -> Vec<Value> {
    let mut reader = SseReader::new(SseConfig::default());
    let mut out = Vec::new();
    reader.feed(text.as_bytes(), |event| {
        if let Ok(value) = serde_json::from_str(&event.unwrap().data) {
            out.push(value);
        }
    });
    out
}

/// What came back: the calls (name, arguments as JSON), the text, and the prompt tokens
/// of the reply's usage.
#[derive(Debug, Default)]
struct Answer {
    calls: Vec<(String, Value)>,
    text: String,
    prompt_tokens: Option<u64>,
}

fn args(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("arguments {text:?}: {e}"))
}

fn answer_of(api: Api, stream: bool, body: &str) -> Answer {
    let mut answer = Answer::default();
    if !stream {
        let v: Value = serde_json::from_str(body).unwrap();
        match api {
            Api::Chat => {
                let message = &v["choices"][0]["message"];
                answer.text = message["content"].as_str().unwrap_or("").to_owned();
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    answer.calls.push((
                        call["function"]["name"].as_str().unwrap().to_owned(),
                        args(call["function"]["arguments"].as_str().unwrap()),
                    ));
                }
                answer.prompt_tokens = v["usage"]["prompt_tokens"].as_u64();
            }
            Api::Messages => {
                for block in v["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("text") => answer.text.push_str(block["text"].as_str().unwrap()),
                        Some("tool_use") => answer.calls.push((
                            block["name"].as_str().unwrap().to_owned(),
                            block["input"].clone(),
                        )),
                        _ => {}
                    }
                }
                answer.prompt_tokens = v["usage"]["input_tokens"].as_u64();
            }
            Api::Responses => {
                for item in v["output"].as_array().into_iter().flatten() {
                    match item["type"].as_str() {
                        Some("message") => {
                            for part in item["content"].as_array().into_iter().flatten() {
                                answer.text.push_str(part["text"].as_str().unwrap_or(""));
                            }
                        }
                        Some("function_call") => answer.calls.push((
                            item["name"].as_str().unwrap().to_owned(),
                            args(item["arguments"].as_str().unwrap()),
                        )),
                        _ => {}
                    }
                }
                answer.prompt_tokens = v["usage"]["input_tokens"].as_u64();
            }
        }
        return answer;
    }
    let events = events(body);
    match api {
        Api::Chat => {
            let mut calls: Vec<(String, String)> = Vec::new();
            for e in &events {
                if let Some(n) = e["usage"]["prompt_tokens"].as_u64() {
                    answer.prompt_tokens = Some(n);
                }
                let delta = &e["choices"][0]["delta"];
                answer
                    .text
                    .push_str(delta["content"].as_str().unwrap_or(""));
                for call in delta["tool_calls"].as_array().into_iter().flatten() {
                    let index = call["index"].as_u64().unwrap() as usize;
                    if index == calls.len() {
                        calls.push((String::new(), String::new()));
                    }
                    if let Some(name) = call["function"]["name"].as_str() {
                        calls[index].0 = name.to_owned();
                    }
                    calls[index]
                        .1
                        .push_str(call["function"]["arguments"].as_str().unwrap_or(""));
                }
            }
            answer.calls = calls.into_iter().map(|(n, a)| (n, args(&a))).collect();
        }
        Api::Messages => {
            let mut calls: Vec<(String, String)> = Vec::new();
            for e in &events {
                match e["type"].as_str() {
                    Some("content_block_start") if e["content_block"]["type"] == "tool_use" => {
                        calls.push((
                            e["content_block"]["name"].as_str().unwrap().to_owned(),
                            String::new(),
                        ));
                    }
                    Some("content_block_delta") => match e["delta"]["type"].as_str() {
                        Some("text_delta") => {
                            answer.text.push_str(e["delta"]["text"].as_str().unwrap())
                        }
                        Some("input_json_delta") => calls
                            .last_mut()
                            .unwrap()
                            .1
                            .push_str(e["delta"]["partial_json"].as_str().unwrap()),
                        _ => {}
                    },
                    Some("message_start") => {
                        answer.prompt_tokens = e["message"]["usage"]["input_tokens"]
                            .as_u64()
                            .filter(|n| *n > 0);
                    }
                    Some("message_delta") => {
                        if let Some(n) = e["usage"]["input_tokens"].as_u64() {
                            answer.prompt_tokens = Some(n);
                        }
                    }
                    _ => {}
                }
            }
            answer.calls = calls.into_iter().map(|(n, a)| (n, args(&a))).collect();
        }
        Api::Responses => {
            for e in &events {
                match e["type"].as_str() {
                    Some("response.output_text.delta") => {
                        answer.text.push_str(e["delta"].as_str().unwrap())
                    }
                    Some("response.output_item.done") if e["item"]["type"] == "function_call" => {
                        answer.calls.push((
                            e["item"]["name"].as_str().unwrap().to_owned(),
                            args(e["item"]["arguments"].as_str().unwrap()),
                        ));
                    }
                    Some("response.completed") => {
                        answer.prompt_tokens = e["response"]["usage"]["input_tokens"].as_u64();
                    }
                    _ => {}
                }
            }
        }
    }
    answer
}

async fn proxy(server: &KindServer, protocol: ProtocolChoice, strict: bool) -> String {
    let config = ProxyConfig::new(OpenAiConfig::new(&server.base_url, ""))
        .with_protocol(protocol)
        .with_strict(strict);
    start_proxy(config).await
}

async fn start_proxy(config: ProxyConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = tam_proxy::serve(listener, config, std::future::pending()).await;
    });
    url
}

/// A llama-server whose model writes the weather call of `protocol` (in pieces of 5
/// characters) and stops at the end marker.
async fn llama_weather(protocol: ProtocolChoice) -> KindServer {
    let (text, end) = weather_call(protocol);
    KindServer::start(Kind::LlamaCpp, move |_| Script::new(text, 5, Some(end))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_server_gets_a_lazy_grammar_on_completion_and_the_call_comes_back_in_every_api() {
    for protocol in [ProtocolChoice::Action, ProtocolChoice::Tam] {
        let server = llama_weather(protocol).await;
        let proxy = proxy(&server, protocol, true).await;
        let mut asked = 0;
        for api in APIS {
            for stream in [false, true] {
                let what = format!("{protocol:?} {api:?} stream {stream}");
                let mut request = api.request(stream, None);
                // Passthrough fields: sampling options and a template field reach the
                // server; a client's own grammar does not replace the proxy's.
                request["top_p"] = json!(0.5);
                request["grammar"] = json!("root ::= \"x\"");
                if api == Api::Chat {
                    request["min_p"] = json!(0.05);
                    request["chat_template_kwargs"] = json!({"enable_thinking": false});
                }
                let (status, body) = post(&proxy, api.path(), &request).await;
                assert_eq!(status, 200, "{what}: {body}");
                let answer = answer_of(api, stream, &body);
                assert_eq!(
                    answer.calls,
                    [(
                        "get_weather".to_owned(),
                        json!({"city": "Paris", "unit": "celsius"})
                    )],
                    "{what}: {body}"
                );
                assert_eq!(answer.text.trim(), "Checking.", "{what}");
                assert_eq!(answer.prompt_tokens, Some(321), "{what}: usage {body}");

                asked += 1;
                let requests = server.model_requests();
                assert_eq!(requests.len(), asked, "{what}: one model request each");
                let (path, sent) = requests.last().unwrap().clone();
                assert_eq!(path, "/completion", "{what}");
                let template = server.posted("/apply-template").last().unwrap().clone();
                assert_eq!(
                    sent["prompt"],
                    rendered(&template),
                    "{what}: the rendered prompt"
                );
                assert_eq!(sent["stream"], true, "{what}");
                assert_eq!(sent["grammar_lazy"], true, "{what}");
                let start = if protocol == ProtocolChoice::Tam {
                    "<|[REQUEST_TOOL]|>"
                } else {
                    "<ACTION>"
                };
                // ACTION: the offered tools' call elements without `<ACTION>` too, at a
                // line's start.
                let triggers = if protocol == ProtocolChoice::Tam {
                    json!([{"type": 1, "value": start}])
                } else {
                    json!([
                        {"type": 1, "value": start},
                        {"type": 2, "value": r"(?:^|\n)[ \t]*(<(?:get_weather|get_time)>)"}
                    ])
                };
                assert_eq!(sent["grammar_triggers"], triggers, "{what}");
                assert_eq!(sent["preserved_tokens"], json!([start]), "{what}");
                let grammar = sent["grammar"].as_str().unwrap();
                assert!(grammar.starts_with("root ::= "), "{what}: {grammar:.80}");
                assert!(
                    grammar.contains("get_weather") && grammar.contains("get_time"),
                    "{what}"
                );
                assert!(grammar.contains("fahrenheit"), "{what}: the enum's members");
                // The end marker is a stop word; the client's sampling fields pass on.
                assert!(
                    sent["stop"]
                        .as_array()
                        .unwrap()
                        .contains(&json!(end_of(protocol))),
                    "{what}"
                );
                assert_eq!(sent["top_p"], 0.5, "{what}");
                if api == Api::Chat {
                    assert_eq!(sent["min_p"], 0.05, "{what}");
                    assert_eq!(
                        template["chat_template_kwargs"],
                        json!({"enable_thinking": false}),
                        "{what}"
                    );
                    assert!(sent.get("chat_template_kwargs").is_none(), "{what}");
                }
                // The system prompt teaches the protocol, and reached the template.
                assert_eq!(template["messages"][0]["role"], "system", "{what}");
            }
        }
        // Detection asked the server once, at start.
        let props = server.seen().iter().filter(|s| s.path == "/props").count();
        assert_eq!(props, 1, "{protocol:?}");
    }
}

fn end_of(protocol: ProtocolChoice) -> &'static str {
    weather_call(protocol).1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_and_named_tool_choices_give_a_grammar_that_is_not_lazy() {
    // The model's reply is the block alone: a grammar that is not lazy starts at once.
    let text = WEATHER_ACTION.trim_start_matches("Checking.\n");
    let server = KindServer::start(Kind::LlamaCpp, move |_| {
        Script::new(text, 7, Some("</ACTION>"))
    })
    .await;
    let proxy = proxy(&server, ProtocolChoice::Action, true).await;
    for api in APIS {
        for (choice, named) in [(api.required(), false), (api.named("get_weather"), true)] {
            let what = format!("{api:?} {choice}");
            let (status, body) = post(&proxy, api.path(), &api.request(false, Some(choice))).await;
            assert_eq!(status, 200, "{what}: {body}");
            let answer = answer_of(api, false, &body);
            assert_eq!(answer.calls.len(), 1, "{what}: {body}");
            assert_eq!(answer.calls[0].0, "get_weather", "{what}");
            let (path, sent) = server.model_requests().last().unwrap().clone();
            assert_eq!(path, "/completion", "{what}");
            assert_eq!(sent["grammar_lazy"], false, "{what}");
            assert_eq!(sent["grammar_triggers"], json!([]), "{what}");
            let grammar = sent["grammar"].as_str().unwrap();
            assert!(grammar.contains("get_weather"), "{what}");
            assert_eq!(
                grammar.contains("get_time"),
                !named,
                "{what}: only the named tool"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_off_sends_chat_completions_without_a_grammar() {
    let (text, end) = weather_call(ProtocolChoice::Action);
    let full = format!("{text}{end}");
    let server = KindServer::start(Kind::LlamaCpp, move |_| Script::new(&full, 9, None)).await;
    let proxy = proxy(&server, ProtocolChoice::Action, false).await;
    for api in APIS {
        let (status, body) = post(&proxy, api.path(), &api.request(true, None)).await;
        assert_eq!(status, 200, "{api:?}: {body}");
        assert_eq!(
            answer_of(api, true, &body).calls.len(),
            1,
            "{api:?}: {body}"
        );
        let (path, sent) = server.model_requests().last().unwrap().clone();
        assert_eq!(path, "/v1/chat/completions", "{api:?}");
        for field in ["grammar", "response_format", "grammar_lazy"] {
            assert!(sent.get(field).is_none(), "{api:?}: {field}");
        }
    }
    // Nothing was asked to tell the server's kind.
    assert!(
        server.seen().iter().all(|s| s.method == "POST"),
        "{:?}",
        server.seen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vllm_gets_a_structural_tag_and_an_unknown_server_the_prompt_alone() {
    for kind in [Kind::Vllm, Kind::Unknown] {
        let (text, end) = weather_call(ProtocolChoice::Tam);
        let full = format!("{text}{end}");
        let server = KindServer::start(kind, move |_| Script::new(&full, 4, None)).await;
        let proxy = proxy(&server, ProtocolChoice::Tam, true).await;
        for api in APIS {
            let what = format!("{kind:?} {api:?}");
            let (status, body) = post(&proxy, api.path(), &api.request(false, None)).await;
            assert_eq!(status, 200, "{what}: {body}");
            let answer = answer_of(api, false, &body);
            assert_eq!(answer.calls.len(), 1, "{what}: {body}");
            assert_eq!(answer.prompt_tokens, Some(300), "{what}");
            let (path, sent) = server.model_requests().last().unwrap().clone();
            assert_eq!(path, "/v1/chat/completions", "{what}");
            assert!(sent.get("grammar").is_none(), "{what}");
            if kind == Kind::Vllm {
                let format = &sent["response_format"];
                assert_eq!(format["type"], "structural_tag", "{what}");
                assert_eq!(format["format"]["type"], "triggered_tags", "{what}");
                assert_eq!(
                    format["format"]["triggers"],
                    json!(["<|[REQUEST_TOOL]|>"]),
                    "{what}"
                );
                assert_eq!(format["format"]["stop_after_first"], true, "{what}");
                assert_eq!(format["format"]["at_least_one"], false, "{what}");
                let content = format["format"]["tags"][0]["content"]["grammar"]
                    .as_str()
                    .unwrap();
                assert!(content.contains("get_weather"), "{what}");
            } else {
                assert!(sent.get("response_format").is_none(), "{what}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_kind_is_not_detected_and_a_request_without_tools_is_not_constrained() {
    let server = KindServer::start(Kind::Unknown, |_| Script::new("Hello there.", 4, None)).await;
    // Named vLLM: no question asked, a structural tag sent.
    let config = ProxyConfig::new(OpenAiConfig::new(&server.base_url, ""))
        .with_upstream_kind(UpstreamChoice::Kind(UpstreamKind::Vllm));
    let proxy = start_proxy(config).await;
    let (status, _) = post(
        &proxy,
        "/v1/chat/completions",
        &Api::Chat.request(false, None),
    )
    .await;
    assert_eq!(status, 200);
    let (_, sent) = server.model_requests().last().unwrap().clone();
    assert_eq!(sent["response_format"]["type"], "structural_tag");
    // No tools, or `tool_choice: none`: the prompt alone.
    let plain = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let (status, body) = post(&proxy, "/v1/chat/completions", &plain).await;
    assert_eq!(status, 200, "{body}");
    let (_, sent) = server.model_requests().last().unwrap().clone();
    assert!(sent.get("response_format").is_none());
    let (status, _) = post(
        &proxy,
        "/v1/chat/completions",
        &Api::Chat.request(false, Some(json!("none"))),
    )
    .await;
    assert_eq!(status, 200);
    let (_, sent) = server.model_requests().last().unwrap().clone();
    assert!(sent.get("response_format").is_none());
    assert!(server.seen().iter().all(|s| s.method == "POST"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_set_the_grammar_refuses_is_answered_without_a_constraint() {
    // `action` is an XML name, so the proxy offers it in ACTION; but its close tag would
    // end the block, so no grammar can call it.
    let server = KindServer::start(Kind::LlamaCpp, |_| {
        Script::new("I cannot do that.", 4, None)
    })
    .await;
    let proxy = proxy(&server, ProtocolChoice::Action, true).await;
    let request = json!({
        "model": "m",
        "messages": [{"role": "user", "content": "Act."}],
        "tools": [{"type": "function", "function": {"name": "action", "parameters": time_schema()}}],
    });
    let (status, body) = post(&proxy, "/v1/chat/completions", &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answer_of(Api::Chat, false, &body).text, "I cannot do that.");
    let (path, sent) = server.model_requests().last().unwrap().clone();
    assert_eq!(path, "/v1/chat/completions");
    assert!(sent.get("grammar").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_natural_end_and_prose_keep_their_finish_and_usage() {
    // The model answers in prose and ends by itself (`stop_type: eos`): text, `stop`.
    let server = KindServer::start(Kind::LlamaCpp, |_| Script::new("It is sunny.", 3, None)).await;
    let proxy = proxy(&server, ProtocolChoice::Action, true).await;
    for stream in [false, true] {
        let (status, body) = post(
            &proxy,
            "/v1/chat/completions",
            &Api::Chat.request(stream, None),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let answer = answer_of(Api::Chat, stream, &body);
        assert!(answer.calls.is_empty(), "{body}");
        assert_eq!(answer.text, "It is sunny.");
        assert_eq!(answer.prompt_tokens, Some(321));
        let finish = if stream {
            events(&body)
                .iter()
                .find_map(|e| e["choices"][0]["finish_reason"].as_str().map(str::to_owned))
        } else {
            serde_json::from_str::<Value>(&body).unwrap()["choices"][0]["finish_reason"]
                .as_str()
                .map(str::to_owned)
        };
        assert_eq!(finish.as_deref(), Some("stop"), "{body}");
    }
}
