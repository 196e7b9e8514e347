//! llama-server's native endpoints and the server-kind detection, against scripted servers
//! on loopback: the template and completion requests `LlamaCompletionModel` sends (grammar
//! fields exact), the items its stream yields however the transport cuts the events, every
//! way a response fails, the structural tag `OpenAiModel` sends, and which kind each
//! server's answers make.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tam_model::openai::{
    LlamaCompletionModel, OpenAiConfig, OpenAiError, OpenAiModel, UpstreamChoice, UpstreamKind,
    detect_upstream_kind,
};
use tam_model::{
    Constraint, FinishReason, LanguageModel, Message, ModelItem, ModelOptions, ModelRequest,
};
use tam_testkit::upstream::{FOREVER, Reply, Request, Server};

const PROMPT: &str = "<|im_start|>system\nUse tools.<|im_end|>\n<|im_start|>user\nList files.<|im_end|>\n<|im_start|>assistant\n";

/// The stream's items, errors as `code: message`.
async fn items(
    model: &dyn LanguageModel,
    request: &ModelRequest,
) -> Vec<Result<ModelItem, String>> {
    let stream = model.stream(request);
    tokio::time::timeout(Duration::from_secs(120), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends")
        .into_iter()
        .map(|item| {
            item.map_err(|e| {
                let e = e.downcast::<OpenAiError>().expect("an OpenAiError");
                format!("{}: {e}", e.code())
            })
        })
        .collect()
}

fn conversation() -> Vec<Message> {
    vec![Message::system("Use tools."), Message::user("List files.")]
}

fn plain_request() -> ModelRequest {
    ModelRequest::new(conversation(), ModelOptions::new())
}

/// One partial event of llama-server's `/completion` stream, as it writes them.
fn partial(content: &str, predicted: u64) -> String {
    let event = json!({
        "index": 0, "content": content, "tokens": [predicted], "stop": false, "id_slot": 0,
        "tokens_predicted": predicted, "tokens_evaluated": 31,
    });
    format!("data: {event}\n\n")
}

/// The last event: `stop_type`, `stopping_word`, the counts and the timings.
fn last(stop_type: &str, word: &str, predicted: u64) -> String {
    let event = json!({
        "index": 0, "content": "", "tokens": [], "id_slot": 0, "stop": true, "model": "qwen",
        "tokens_predicted": predicted, "tokens_evaluated": 31,
        "generation_settings": {"n_predict": 64}, "prompt": PROMPT, "has_new_line": false,
        "truncated": false, "stop_type": stop_type, "stopping_word": word, "tokens_cached": 40,
        "timings": {"cache_n": 0, "prompt_n": 31, "predicted_n": predicted},
    });
    format!("data: {event}\n\n")
}

fn usage(predicted: u64) -> ModelItem {
    let Value::Object(usage) = json!({
        "prompt_tokens": 31, "completion_tokens": predicted, "total_tokens": 31 + predicted,
        "timings": {"cache_n": 0, "prompt_n": 31, "predicted_n": predicted},
    }) else {
        unreachable!()
    };
    ModelItem::Usage(usage)
}

fn text(t: &str) -> Result<ModelItem, String> {
    Ok(ModelItem::Text(t.into()))
}

/// A llama-server: `/apply-template` renders `PROMPT`, `/completion` answers `completion`.
async fn llama(completion: Reply) -> Server {
    Server::scripted_with_probes(move |request: &Request| match request.route().as_str() {
        "POST /apply-template" => Reply::ok(json!({"prompt": PROMPT})),
        "POST /completion" => completion.clone(),
        _ => Reply::not_found(),
    })
    .await
}

fn model(server: &Server) -> LlamaCompletionModel {
    LlamaCompletionModel::new(OpenAiConfig::new(&server.base_url, "")).unwrap()
}

/// A stream with text, the block's start and a stop at its end marker.
fn word_stop_stream() -> String {
    [
        partial("Sure.", 1),
        partial(" <ACTION>\n", 2),
        partial("<list_files/>\n", 3),
        partial("日本", 4),
        last("word", "</ACTION>", 5),
    ]
    .concat()
}

fn word_stop_items() -> Vec<Result<ModelItem, String>> {
    vec![
        text("Sure."),
        text(" <ACTION>\n"),
        text("<list_files/>\n"),
        text("日本"),
        Ok(ModelItem::StopSequence("</ACTION>".into())),
        Ok(ModelItem::Finish(FinishReason::Stop)),
        Ok(usage(5)),
    ]
}

#[tokio::test]
async fn the_template_and_completion_requests_carry_every_field() {
    let server = llama(Reply::stream(word_stop_stream())).await;
    let config = OpenAiConfig::new(format!("{}/", server.base_url), "qwen")
        .with_api_key("sk-test")
        .with_extra_body("cache_prompt", json!(false))
        .with_extra_body("top_k", json!(1))
        .with_extra_body("chat_template_kwargs", json!({"enable_thinking": false}));
    let model = LlamaCompletionModel::new(config).unwrap();
    let grammar = r#"root ::= "<ACTION>" [\n] "<list_files/>" [\n] "</ACTION>""#;
    let request = ModelRequest::new(
        conversation(),
        ModelOptions::new()
            .with_temperature(0.5)
            .with_max_tokens(64)
            .with_stop(["</ACTION>"])
            .with_seed(7),
    )
    .with_constraint(Constraint::Gbnf {
        grammar: grammar.into(),
        lazy: true,
        triggers: vec!["<ACTION>".into()],
        patterns: vec!["(?:^|\\n)[ \\t]*(<(?:get_weather)>)".into()],
    });
    assert_eq!(items(&model, &request).await, word_stop_items());

    let requests = server.requests();
    let routes: Vec<String> = requests.iter().map(Request::route).collect();
    assert_eq!(routes, ["POST /apply-template", "POST /completion"]);
    for request in &requests {
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(request.header("content-type"), Some("application/json"));
    }
    assert_eq!(requests[1].header("accept"), Some("text/event-stream"));
    // llama-server closes the connection after a stream: it must not be pooled.
    assert_eq!(requests[1].header("connection"), Some("close"));
    assert_eq!(requests[0].header("connection"), None);
    assert_eq!(
        requests[0].body,
        json!({
            "model": "qwen",
            "messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "List files."}
            ],
            "chat_template_kwargs": {"enable_thinking": false}
        })
    );
    assert_eq!(
        requests[1].body,
        json!({
            "model": "qwen",
            "prompt": PROMPT,
            "stream": true,
            "cache_prompt": false,
            "temperature": 0.5,
            "n_predict": 64,
            "stop": ["</ACTION>"],
            "seed": 7,
            "grammar": grammar,
            "grammar_lazy": true,
            "grammar_triggers": [
                {"type": 1, "value": "<ACTION>"},
                {"type": 2, "value": "(?:^|\\n)[ \\t]*(<(?:get_weather)>)"}
            ],
            "preserved_tokens": ["<ACTION>"],
            "top_k": 1
        })
    );
    // The bodies the model documents are the ones it sends.
    assert_eq!(model.template_body(&request), requests[0].body);
    assert_eq!(model.completion_body(&request, PROMPT), requests[1].body);
}

#[tokio::test]
async fn without_a_grammar_only_the_prompt_and_the_stream_are_asked() {
    let server = llama(Reply::stream(word_stop_stream())).await;
    let model = model(&server);
    // A structural tag is for vLLM and SGLang: llama-server gets none.
    let tagged = plain_request().with_constraint(Constraint::StructuralTag(json!({
        "type": "structural_tag", "format": {"type": "triggered_tags"}
    })));
    for request in [plain_request(), tagged] {
        assert_eq!(items(&model, &request).await, word_stop_items());
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for pair in requests.chunks(2) {
        assert_eq!(
            pair[0].body,
            json!({"messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "List files."}
            ]})
        );
        assert_eq!(
            pair[1].body,
            json!({"prompt": PROMPT, "stream": true, "cache_prompt": true})
        );
        assert_eq!(pair[1].header("authorization"), None);
    }
}

#[test]
fn a_grammar_that_is_not_lazy_has_no_triggers() {
    let model = LlamaCompletionModel::new(OpenAiConfig::new("http://127.0.0.1:9", "")).unwrap();
    let request = plain_request().with_constraint(Constraint::Gbnf {
        grammar: "root ::= \"x\"".into(),
        lazy: false,
        triggers: vec![],
        patterns: vec![],
    });
    assert_eq!(
        model.completion_body(&request, "p"),
        json!({
            "prompt": "p", "stream": true, "cache_prompt": true,
            "grammar": "root ::= \"x\"", "grammar_lazy": false,
            "grammar_triggers": [], "preserved_tokens": []
        })
    );
    assert_eq!(model.template_url(), "http://127.0.0.1:9/apply-template");
    assert_eq!(model.completion_url(), "http://127.0.0.1:9/completion");
}

/// Deterministic cut positions (a small LCG), ascending and distinct.
fn random_cuts(len: usize, seed: u64) -> Vec<usize> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut cuts: Vec<usize> = (0..8)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            1 + (state >> 33) as usize % (len - 1)
        })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[tokio::test]
async fn every_cut_of_the_stream_gives_the_same_items() {
    let stream = word_stop_stream().into_bytes();
    let cuts: Arc<Mutex<Vec<usize>>> = Arc::default();
    let script_cuts = cuts.clone();
    let script_stream = stream.clone();
    let server =
        Server::scripted_with_probes(move |request: &Request| match request.route().as_str() {
            "POST /apply-template" => Reply::ok(json!({"prompt": PROMPT})),
            "POST /completion" => Reply::cut(&script_stream, &script_cuts.lock().unwrap()),
            _ => Reply::not_found(),
        })
        .await;
    let model = model(&server);
    let expected = word_stop_items();
    let mut ways: Vec<Vec<usize>> = vec![vec![], (1..stream.len()).collect()];
    ways.extend((1..stream.len()).map(|at| vec![at]));
    ways.extend((0..16).map(|seed| random_cuts(stream.len(), seed)));
    for way in ways {
        *cuts.lock().unwrap() = way.clone();
        assert_eq!(
            items(&model, &plain_request()).await,
            expected,
            "cuts {way:?}"
        );
    }
}

/// A partial event as llama-server writes the one before the last: with the timings so far.
fn partial_with_timings(content: &str, predicted: u64) -> String {
    let event = json!({
        "index": 0, "content": content, "tokens": [29], "stop": false, "id_slot": -1,
        "tokens_predicted": predicted, "tokens_evaluated": 31,
        "timings": {"cache_n": 0, "prompt_n": 31, "predicted_n": predicted},
    });
    format!("data: {event}\n\n")
}

#[tokio::test]
async fn the_usage_comes_with_the_last_event_after_the_text_that_ends_a_call() {
    // The shapes a real llama-server wrote: tokens held back while they may begin a stop
    // word come as empty events, the event before the last carries running timings (no
    // usage), and the usage comes only with the last event, after all the text. For a
    // call element the model writes without <ACTION> (no stop word ends it) that is one
    // event after the text that closes it, when the model's end of generation comes.
    // Each is read cut at every byte too.
    let action = [
        partial(" <ACTION>", 1),
        partial("<get_weather><city>Paris", 2),
        partial("", 3),
        partial("</city", 4),
        partial("", 5),
        partial("></get_weather", 6),
        partial("", 7),
        partial_with_timings(">", 8),
        last("word", "</ACTION>", 8),
    ]
    .concat();
    let bare = [
        partial("<get_weather><city>Paris", 1),
        partial("</city", 2),
        partial("></get_weather", 3),
        partial(">", 4),
        partial_with_timings("", 5),
        last("eos", "", 5),
    ]
    .concat();
    let action_items = vec![
        text(" <ACTION>"),
        text("<get_weather><city>Paris"),
        text("</city"),
        text("></get_weather"),
        text(">"),
        Ok(ModelItem::StopSequence("</ACTION>".into())),
        Ok(ModelItem::Finish(FinishReason::Stop)),
        Ok(usage(8)),
    ];
    let bare_items = vec![
        text("<get_weather><city>Paris"),
        text("</city"),
        text("></get_weather"),
        text(">"),
        Ok(ModelItem::Finish(FinishReason::Stop)),
        Ok(usage(5)),
    ];
    for (stream, expected) in [(action, action_items), (bare, bare_items)] {
        let stream = stream.into_bytes();
        let cuts: Arc<Mutex<Vec<usize>>> = Arc::default();
        let script_cuts = cuts.clone();
        let script_stream = stream.clone();
        let server =
            Server::scripted_with_probes(move |request: &Request| match request.route().as_str() {
                "POST /apply-template" => Reply::ok(json!({"prompt": PROMPT})),
                "POST /completion" => Reply::cut(&script_stream, &script_cuts.lock().unwrap()),
                _ => Reply::not_found(),
            })
            .await;
        let model = model(&server);
        let mut ways: Vec<Vec<usize>> = vec![vec![], (1..stream.len()).collect()];
        ways.extend((0..8).map(|seed| random_cuts(stream.len(), seed)));
        for way in ways {
            *cuts.lock().unwrap() = way.clone();
            assert_eq!(
                items(&model, &plain_request()).await,
                expected,
                "cuts {way:?}"
            );
        }
    }
}

#[tokio::test]
async fn the_end_of_generation_and_the_token_limit_are_finish_reasons() {
    for (stop_type, reason) in [("eos", FinishReason::Stop), ("limit", FinishReason::Length)] {
        let stream = [partial("Done", 1), last(stop_type, "", 1)].concat();
        let server = llama(Reply::stream(stream)).await;
        assert_eq!(
            items(&model(&server), &plain_request()).await,
            [text("Done"), Ok(ModelItem::Finish(reason)), Ok(usage(1))],
            "{stop_type}"
        );
    }
}

#[tokio::test]
async fn a_whole_json_answer_reads_as_one_event() {
    // A server that does not stream answers the last event alone, with all the content.
    let answer = last("word", "</ACTION>", 3).replace("\"content\":\"\"", "\"content\":\"a b\"");
    let body = answer.trim_start_matches("data: ").trim_end().to_owned();
    let server = llama(Reply::Status { status: 200, body }).await;
    assert_eq!(
        items(&model(&server), &plain_request()).await,
        [
            text("a b"),
            Ok(ModelItem::StopSequence("</ACTION>".into())),
            Ok(ModelItem::Finish(FinishReason::Stop)),
            Ok(usage(3)),
        ]
    );
}

fn only_error(got: &[Result<ModelItem, String>]) -> &str {
    assert_eq!(got.len(), 1, "{got:?}");
    got[0].as_ref().unwrap_err()
}

#[tokio::test]
async fn a_refused_completion_is_an_http_error_with_the_servers_message() {
    let server = llama(Reply::Status {
        status: 400,
        body: r#"{"error":{"code":400,"message":"Grammar trigger word should be marked as preserved token: <x>","type":"invalid_request_error"}}"#.into(),
    })
    .await;
    let stream = model(&server).stream(&plain_request());
    let got: Vec<_> = stream.collect().await;
    assert_eq!(got.len(), 1);
    let error = got
        .into_iter()
        .next()
        .unwrap()
        .unwrap_err()
        .downcast::<OpenAiError>()
        .unwrap();
    assert_eq!(error.code(), "http_status");
    assert_eq!(error.status(), Some(400));
    assert!(
        error
            .to_string()
            .ends_with("Grammar trigger word should be marked as preserved token: <x>"),
        "{error}"
    );
}

#[tokio::test]
async fn a_failed_template_request_ends_the_stream_before_any_completion() {
    let cases: [(Reply, &str); 5] = [
        (
            Reply::Status {
                status: 500,
                body: r#"{"error":{"code":500,"message":"Cannot have 2 or more assistant messages at the end of the list.","type":"server_error"}}"#.into(),
            },
            "http_status: the server answered HTTP 500: Cannot have 2 or more assistant messages at the end of the list.",
        ),
        (
            Reply::ok(json!({"prompt": 3})),
            "invalid_template: the server's /apply-template answer holds no prompt: no string \"prompt\" in '{\"prompt\":3}'",
        ),
        (
            Reply::ok(json!(["x"])),
            "invalid_template: the server's /apply-template answer holds no prompt: not a JSON object: '[\"x\"]'",
        ),
        (
            Reply::Status { status: 200, body: "<html>".into() },
            "invalid_template: the server's /apply-template answer holds no prompt: not JSON (expected value at line 1 column 1): '<html>'",
        ),
        (
            Reply::not_found(),
            "http_status: the server answered HTTP 404: File Not Found",
        ),
    ];
    for (answer, expected) in cases {
        let server =
            Server::scripted_with_probes(move |request: &Request| match request.path.as_str() {
                "/apply-template" => answer.clone(),
                _ => Reply::stream(word_stop_stream()),
            })
            .await;
        assert_eq!(
            only_error(&items(&model(&server), &plain_request()).await),
            expected
        );
        let routes: Vec<String> = server.requests().iter().map(Request::route).collect();
        assert_eq!(routes, ["POST /apply-template"]);
    }
}

#[tokio::test]
async fn a_prompt_past_the_limit_is_refused() {
    let server = llama(Reply::stream(word_stop_stream())).await;
    let small = model(&server).with_max_prompt_bytes(PROMPT.len());
    assert_eq!(
        only_error(&items(&small, &plain_request()).await),
        format!(
            "invalid_template: the server's /apply-template answer holds no prompt: the answer is larger than {} bytes",
            PROMPT.len()
        )
    );
    // The answer is the prompt in a JSON object: a little room more, and it is read.
    let roomy = model(&server).with_max_prompt_bytes(PROMPT.len() + 64);
    assert_eq!(items(&roomy, &plain_request()).await, word_stop_items());
}

#[tokio::test]
async fn a_broken_or_unfinished_stream_is_cut() {
    let dropped = Reply::Stream {
        pieces: vec![(Duration::ZERO, partial("Hel", 1).into_bytes())],
        drop: true,
    };
    let got = items(&model(&llama(dropped).await), &plain_request()).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], text("Hel"));
    assert!(
        got[1].as_ref().unwrap_err().starts_with("transport: "),
        "{got:?}"
    );

    // The body ends cleanly, but no event said the reply stopped.
    let unfinished = Reply::stream(partial("Hel", 1));
    assert_eq!(
        items(&model(&llama(unfinished).await), &plain_request()).await,
        [
            text("Hel"),
            Err("transport: transport error: the server closed the stream before it finished (no event with \"stop\": true)".into()),
        ]
    );
}

#[tokio::test]
async fn an_error_event_and_bad_bytes_end_the_stream() {
    let error =
        r#"data: {"error":{"code":500,"message":"the context is full","type":"server_error"}}"#;
    let stream = [partial("a", 1), format!("{error}\n\n"), partial("b", 2)].concat();
    assert_eq!(
        items(
            &model(&llama(Reply::stream(stream)).await),
            &plain_request()
        )
        .await,
        [
            text("a"),
            Err("server_error: the server reported an error: the context is full".into())
        ]
    );

    let mut bad = partial("a", 1).into_bytes();
    bad.extend_from_slice(b"data: {\"content\":\"x\xFFy\",\"stop\":false}\n\n");
    bad.extend_from_slice(last("eos", "", 2).as_bytes());
    let got = items(&model(&llama(Reply::stream(bad)).await), &plain_request()).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], text("a"));
    assert!(
        got[1].as_ref().unwrap_err().starts_with("invalid_utf8: "),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_silent_server_times_out_at_either_request() {
    let idle = Duration::from_millis(300);
    let config = |server: &Server| OpenAiConfig::new(&server.base_url, "").with_idle_timeout(idle);

    let pausing = Reply::Stream {
        pieces: vec![
            (Duration::ZERO, partial("a", 1).into_bytes()),
            (FOREVER, last("eos", "", 1).into_bytes()),
        ],
        drop: false,
    };
    let server = llama(pausing).await;
    let model = LlamaCompletionModel::new(config(&server)).unwrap();
    assert_eq!(
        items(&model, &plain_request()).await,
        [
            text("a"),
            Err(format!(
                "idle_timeout: no data from the server for {idle:?}"
            ))
        ]
    );

    let server = Server::scripted_with_probes(|request: &Request| match request.path.as_str() {
        "/apply-template" => Reply::Silent,
        _ => Reply::stream(word_stop_stream()),
    })
    .await;
    let model = LlamaCompletionModel::new(config(&server)).unwrap();
    assert_eq!(
        only_error(&items(&model, &plain_request()).await),
        format!("idle_timeout: no data from the server for {idle:?}")
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_model_sharing_an_openai_models_client_reaches_the_same_server() {
    let server = llama(Reply::stream(word_stop_stream())).await;
    let chat = OpenAiModel::new(OpenAiConfig::new(&server.base_url, "qwen")).unwrap();
    let native = LlamaCompletionModel::sharing(&chat);
    assert_eq!(native.config(), chat.config());
    assert_eq!(items(&native, &plain_request()).await, word_stop_items());
    let other = native.with_config(OpenAiConfig::new(&server.base_url, "other"));
    assert_eq!(items(&other, &plain_request()).await, word_stop_items());
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        [json!("qwen"), json!("qwen"), json!("other"), json!("other")]
    );
}

/// A Chat Completions server answering "ok".
async fn chat_server() -> Server {
    Server::scripted_with_probes(|_: &Request| {
        Reply::stream(concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n"
        ))
    })
    .await
}

#[tokio::test]
async fn the_openai_model_sends_a_structural_tag_and_no_grammar() {
    let server = chat_server().await;
    let model = OpenAiModel::new(OpenAiConfig::new(&server.base_url, "qwen")).unwrap();
    let format = json!({
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<ACTION>"],
            "tags": [{"begin": "<ACTION>", "content": {"type": "any_text"}, "end": "</ACTION>"}],
            "stop_after_first": true
        }
    });
    let untyped = json!({"structures": [], "triggers": ["<ACTION>"]});
    let gbnf = Constraint::Gbnf {
        grammar: "root ::= \"x\"".into(),
        lazy: true,
        triggers: vec!["<ACTION>".into()],
        patterns: vec![],
    };
    let requests = [
        plain_request().with_constraint(Constraint::StructuralTag(format.clone())),
        plain_request().with_constraint(Constraint::StructuralTag(untyped)),
        plain_request().with_constraint(gbnf),
    ];
    for request in &requests {
        assert_eq!(
            items(&model, request).await,
            [text("ok"), Ok(ModelItem::Finish(FinishReason::Stop))]
        );
    }
    let sent = server.requests();
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].body["response_format"], format);
    assert_eq!(
        sent[1].body["response_format"],
        json!({"type": "structural_tag", "structures": [], "triggers": ["<ACTION>"]})
    );
    assert_eq!(
        sent[2].body,
        json!({
            "model": "qwen",
            "messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "List files."}
            ],
            "stream": true
        })
    );
    // A configured response_format stays the caller's word.
    let configured = OpenAiModel::new(
        OpenAiConfig::new(&server.base_url, "qwen")
            .with_extra_body("response_format", json!({"type": "text"})),
    )
    .unwrap();
    assert_eq!(
        configured.request_body(&requests[0])["response_format"],
        json!({"type": "text"})
    );
}

/// A server answering the detection paths as `answers` says (`path` → body), 404 else.
async fn answering(answers: Vec<(&'static str, Value)>) -> Server {
    Server::scripted_with_probes(move |request: &Request| {
        answers
            .iter()
            .find(|(path, _)| request.method == "GET" && request.path == *path)
            .map_or_else(Reply::not_found, |(_, body)| Reply::ok(body.clone()))
    })
    .await
}

fn llama_props() -> Value {
    json!({
        "default_generation_settings": {"id": 0, "n_ctx": 4096, "params": {"n_predict": -1}},
        "total_slots": 1,
        "model_path": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "chat_template": "{%- for message in messages %}…{%- endfor %}",
        "build_info": "b1-abcdef0",
        "is_sleeping": false
    })
}

fn sglang_info() -> Value {
    json!({
        "model_path": "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "tokenizer_path": "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "tp_size": 1,
        "grammar_backend": "xgrammar",
        "internal_states": [{"last_gen_throughput": 0.0}],
        "version": "0.5.4"
    })
}

#[tokio::test]
async fn each_server_kind_is_detected_by_its_own_endpoint() {
    let cases = [
        (vec![("/props", llama_props())], UpstreamKind::LlamaCpp),
        (
            vec![("/version", json!({"version": "0.11.0"}))],
            UpstreamKind::Vllm,
        ),
        (
            vec![("/get_server_info", sglang_info())],
            UpstreamKind::Sglang,
        ),
        // An SGLang that answers `/version` as well is still SGLang.
        (
            vec![
                ("/get_server_info", sglang_info()),
                ("/version", json!({"version": "0.5.4"})),
            ],
            UpstreamKind::Sglang,
        ),
        // An older SGLang without `version` in its server info.
        (
            vec![(
                "/get_server_info",
                json!({"model_path": "m", "internal_states": []}),
            )],
            UpstreamKind::Sglang,
        ),
        (vec![], UpstreamKind::Other),
        // Answers that are not the expected shape.
        (
            vec![("/props", json!({"role": "proxy"}))],
            UpstreamKind::Other,
        ),
        (
            vec![("/version", json!({"version": 3}))],
            UpstreamKind::Other,
        ),
        (vec![("/version", json!(["0.11.0"]))], UpstreamKind::Other),
        (
            vec![("/get_server_info", json!({"version": "1.0"}))],
            UpstreamKind::Other,
        ),
    ];
    for (answers, kind) in cases {
        let label = format!("{answers:?}");
        let server = answering(answers).await;
        for base in [
            server.base_url.clone(),
            format!("{}/", server.base_url),
            server.base_url.trim_end_matches("/v1").to_owned(),
        ] {
            let config = OpenAiConfig::new(base, "m");
            assert_eq!(detect_upstream_kind(&config).await, kind, "{label}");
        }
        let mut paths: Vec<String> = server.requests().iter().map(Request::route).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(
            paths,
            ["GET /get_server_info", "GET /props", "GET /version"],
            "{label}"
        );
    }
}

#[tokio::test]
async fn detection_sends_the_api_key_and_never_fails() {
    let server = answering(vec![("/props", llama_props())]).await;
    let config = OpenAiConfig::new(&server.base_url, "m").with_api_key("sk-test");
    assert_eq!(detect_upstream_kind(&config).await, UpstreamKind::LlamaCpp);
    for request in server.requests() {
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    }

    // Nobody listening.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let closed = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    assert_eq!(detect_upstream_kind(&closed).await, UpstreamKind::Other);

    // A server that never answers, under a short idle time-out.
    let silent = Server::scripted_with_probes(|_: &Request| Reply::Silent).await;
    let config =
        OpenAiConfig::new(&silent.base_url, "m").with_idle_timeout(Duration::from_millis(300));
    assert_eq!(detect_upstream_kind(&config).await, UpstreamKind::Other);

    // A stream that stops mid-answer.
    let stalled = Server::scripted_with_probes(|_: &Request| Reply::Stream {
        pieces: vec![
            (
                Duration::ZERO,
                b"{\"default_generation_settings\":".to_vec(),
            ),
            (FOREVER, b"{}}".to_vec()),
        ],
        drop: false,
    })
    .await;
    let config =
        OpenAiConfig::new(&stalled.base_url, "m").with_idle_timeout(Duration::from_millis(300));
    assert_eq!(detect_upstream_kind(&config).await, UpstreamKind::Other);
}

#[tokio::test]
async fn a_named_kind_asks_nothing_and_auto_detects() {
    let server = answering(vec![("/version", json!({"version": "0.11.0"}))]).await;
    let config = OpenAiConfig::new(&server.base_url, "m");
    let named = UpstreamChoice::Kind(UpstreamKind::Sglang);
    assert_eq!(named.resolve(&config).await, UpstreamKind::Sglang);
    assert!(server.requests().is_empty());
    assert_eq!(
        UpstreamChoice::Auto.resolve(&config).await,
        UpstreamKind::Vllm
    );
    assert_eq!(UpstreamChoice::default(), UpstreamChoice::Auto);
}

#[test]
fn upstream_kind_names_read_and_print() {
    for (name, kind) in [
        ("llama.cpp", UpstreamKind::LlamaCpp),
        ("llamacpp", UpstreamKind::LlamaCpp),
        ("Llama-Server", UpstreamKind::LlamaCpp),
        ("vllm", UpstreamKind::Vllm),
        ("llama-cpp", UpstreamKind::LlamaCpp),
        ("vLLM", UpstreamKind::Vllm),
        (" sglang ", UpstreamKind::Sglang),
        ("other", UpstreamKind::Other),
    ] {
        assert_eq!(name.parse::<UpstreamKind>(), Ok(kind), "{name}");
        assert_eq!(
            name.parse::<UpstreamChoice>(),
            Ok(UpstreamChoice::Kind(kind)),
            "{name}"
        );
        assert_eq!(kind.to_string().parse::<UpstreamKind>(), Ok(kind));
    }
    assert_eq!(UpstreamKind::LlamaCpp.to_string(), "llama.cpp");
    assert_eq!("AUTO".parse::<UpstreamChoice>(), Ok(UpstreamChoice::Auto));
    assert_eq!(UpstreamChoice::Auto.to_string(), "auto");
    assert_eq!(UpstreamChoice::Kind(UpstreamKind::Vllm).to_string(), "vllm");

    let error = "auto".parse::<UpstreamKind>().unwrap_err();
    assert_eq!(error.name(), "auto");
    assert_eq!(
        error.to_string(),
        "unknown upstream kind 'auto': expected llama-cpp (or llama.cpp, llamacpp, llama-server), vllm, sglang or other"
    );
    assert_eq!(
        "tgi".parse::<UpstreamChoice>().unwrap_err().to_string(),
        "unknown upstream kind 'tgi': expected llama-cpp (or llama.cpp, llamacpp, llama-server), vllm, sglang, other or auto"
    );
}
