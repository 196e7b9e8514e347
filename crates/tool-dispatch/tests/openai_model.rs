//! The OpenAI-compatible model against scripted servers on loopback: the request it sends,
//! what each kind of chunk becomes, the SSE framings servers use, and every way a stream
//! can end — finished, cut at the token limit, dropped, idle, refused with HTTP 400 — alone
//! and through `Agent::run`, where a cut stream never runs the block open at the cut.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use support::service;
use tam_model::openai::{OpenAiConfig, OpenAiError, OpenAiModel};
use tam_testkit::upstream::{Reply, Server, chunk, text_stream};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, CancellationToken, Dispatcher, Error, FinishReason,
    LanguageModel, Message, ModelItem, ModelOptions, ModelRequest, ProtocolChoice, Registry, Scope,
    StopReason, StreamCut, ToolCallChunk, ToolExecutionResult,
};

const RECORD_BLOCK: &str =
    "<|[REQUEST_TOOL]|>\ncommand:「始」Record「末」\nnote:「始」hello「末」\n<|[END_TOOL]|>";

fn model(server: &Server) -> OpenAiModel {
    OpenAiModel::new(OpenAiConfig::new(&server.base_url, "test-model")).unwrap()
}

async fn items(model: &OpenAiModel, request: &ModelRequest) -> Vec<Result<ModelItem, String>> {
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

fn user(text: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(text)], ModelOptions::default())
}

fn text_of(items: &[Result<ModelItem, String>]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ModelItem::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_request_carries_model_messages_options_extra_fields_and_the_key() {
    let server = Server::start(vec![Reply::events(&text_stream("Hi.", 2, "stop", "\n"))]).await;
    let config = OpenAiConfig::new(format!("{}/", server.base_url), "qwen3")
        .with_api_key("sk-test")
        .with_extra_body("cache_prompt", json!(false));
    let model = OpenAiModel::new(config).unwrap();
    let request = ModelRequest::new(
        vec![Message::system("Be brief."), Message::user("Hello")],
        ModelOptions::new()
            .with_temperature(0.5)
            .with_max_tokens(64)
            .with_stop(["\n\n"])
            .with_seed(7),
    );
    let got = items(&model, &request).await;
    assert_eq!(
        got,
        [
            Ok(ModelItem::Text("Hi".into())),
            Ok(ModelItem::Text(".".into())),
            Ok(ModelItem::Finish(FinishReason::Stop)),
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        requests[0].body,
        json!({
            "model": "qwen3",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello"}
            ],
            "stream": true,
            "temperature": 0.5,
            "max_tokens": 64,
            "stop": ["\n\n"],
            "seed": 7,
            "cache_prompt": false
        })
    );
}

#[tokio::test]
async fn the_api_key_comes_from_the_named_environment_variable() {
    let missing = OpenAiConfig::new("http://127.0.0.1:9/v1", "m")
        .with_api_key_env("TAM_TEST_SURELY_UNSET_VARIABLE")
        .unwrap_err();
    assert_eq!(missing.code(), "missing_api_key");
    assert!(
        missing
            .to_string()
            .contains("TAM_TEST_SURELY_UNSET_VARIABLE")
    );
    // PATH is set wherever tests run.
    let config = OpenAiConfig::new("http://127.0.0.1:9/v1", "m")
        .with_api_key_env("PATH")
        .unwrap();
    assert_eq!(config.api_key, std::env::var("PATH").ok());
}

#[tokio::test]
async fn cr_crlf_multi_line_data_and_comments_read_the_same() {
    let reference = {
        let server = Server::start(vec![Reply::events(&text_stream(
            "a<b && c", 3, "stop", "\n",
        ))])
        .await;
        items(&model(&server), &user("x")).await
    };
    assert_eq!(text_of(&reference), "a<b && c");
    for end in ["\r", "\r\n"] {
        let server = Server::start(vec![Reply::events(&text_stream(
            "a<b && c", 3, "stop", end,
        ))])
        .await;
        assert_eq!(
            items(&model(&server), &user("x")).await,
            reference,
            "{end:?}"
        );
    }
    // JSON split over data lines (joined by LF, which JSON reads as blank), comments,
    // other fields, and events cut anywhere by the transport.
    let stream = concat!(
        ": ping\n\n",
        "event: chunk\nid: 1\ndata: {\"choices\":[{\"index\":0,\n",
        "data: \"delta\":{\"content\":\"a<b\"}}]}\n\n",
        ": keep-alive\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" && c\"}}]}\r\n\r\n",
        "retry: 100\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let pieces = stream
        .as_bytes()
        .chunks(7)
        .map(|c| (Duration::ZERO, c.to_vec()))
        .collect();
    let server = Server::start(vec![Reply::Stream {
        pieces,
        drop: false,
    }])
    .await;
    let got = items(&model(&server), &user("x")).await;
    assert_eq!(text_of(&got), "a<b && c");
    assert_eq!(got.last(), Some(&Ok(ModelItem::Finish(FinishReason::Stop))));
}

#[tokio::test]
async fn reasoning_in_both_fields_and_native_tool_call_chunks_are_items() {
    let events = vec![
        chunk(json!({"role": "assistant", "content": ""}), None, "\n"),
        chunk(json!({"reasoning_content": "think A"}), None, "\n"),
        chunk(json!({"reasoning": "think B"}), None, "\n"),
        chunk(json!({"content": "ok"}), None, "\n"),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
            "\n",
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            None,
            "\n",
        ),
        chunk(json!({}), Some("tool_calls"), "\n"),
        "data: [DONE]\n\n".to_owned(),
    ];
    let server = Server::start(vec![Reply::events(&events)]).await;
    let got = items(&model(&server), &user("x")).await;
    assert_eq!(
        got,
        [
            Ok(ModelItem::Reasoning("think A".into())),
            Ok(ModelItem::Reasoning("think B".into())),
            Ok(ModelItem::Text("ok".into())),
            Ok(ModelItem::ToolCallChunk(ToolCallChunk::new(
                0,
                Some("call_1".into()),
                Some("get_weather".into()),
                ""
            ))),
            Ok(ModelItem::ToolCallChunk(ToolCallChunk::new(
                0,
                None,
                None,
                "{\"city\":"
            ))),
            Ok(ModelItem::Finish(FinishReason::ToolCalls)),
        ]
    );
}

#[tokio::test]
async fn http_400_with_a_json_error_is_an_error_with_status_and_message() {
    let body = json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}});
    let server = Server::start(vec![Reply::Status {
        status: 400,
        body: body.to_string(),
    }])
    .await;
    let mut stream = model(&server).stream(&user("x"));
    let error = stream.next().await.unwrap().unwrap_err();
    let error = error.downcast::<OpenAiError>().unwrap();
    assert_eq!(error.code(), "http_status");
    assert_eq!(error.status(), Some(400));
    assert!(
        error
            .to_string()
            .contains("exceeds the available context size"),
        "{error}"
    );
    assert!(stream.next().await.is_none(), "the error ends the stream");
}

#[tokio::test]
async fn an_idle_server_times_out() {
    let server = Server::start(vec![Reply::Stream {
        pieces: vec![
            (
                Duration::ZERO,
                chunk(json!({"content": "a"}), None, "\n").into_bytes(),
            ),
            // Far longer than any test run: only the idle time-out can end this read.
            (
                Duration::from_secs(3600),
                chunk(json!({"content": "b"}), None, "\n").into_bytes(),
            ),
        ],
        drop: false,
    }])
    .await;
    let config =
        OpenAiConfig::new(&server.base_url, "m").with_idle_timeout(Duration::from_millis(300));
    let got = items(&OpenAiModel::new(config).unwrap(), &user("x")).await;
    assert_eq!(got[0], Ok(ModelItem::Text("a".into())));
    assert!(
        got[1].as_ref().unwrap_err().starts_with("idle_timeout"),
        "{got:?}"
    );
    assert_eq!(got.len(), 2);
}

#[tokio::test]
async fn a_dropped_connection_or_a_stream_without_its_end_is_a_transport_error() {
    let dropped = Server::start(vec![Reply::Stream {
        pieces: vec![(
            Duration::ZERO,
            chunk(json!({"content": "a"}), None, "\n").into_bytes(),
        )],
        drop: true,
    }])
    .await;
    let got = items(&model(&dropped), &user("x")).await;
    assert_eq!(got[0], Ok(ModelItem::Text("a".into())));
    assert!(
        got[1].as_ref().unwrap_err().starts_with("transport"),
        "{got:?}"
    );
    let unfinished = Server::start(vec![Reply::events(&[chunk(
        json!({"content": "a"}),
        None,
        "\n",
    )])])
    .await;
    let got = items(&model(&unfinished), &user("x")).await;
    assert!(
        got[1].as_ref().unwrap_err().starts_with("transport"),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_server_error_event_and_a_chunk_that_is_not_json_end_the_stream() {
    let server = Server::start(vec![
        Reply::events(&["data: {\"error\":{\"message\":\"overloaded\"}}\n\n"]),
        Reply::events(&["data: <html>\n\n"]),
    ])
    .await;
    let got = items(&model(&server), &user("x")).await;
    assert_eq!(
        got,
        [Err(
            "server_error: the server reported an error: overloaded".to_owned()
        )]
    );
    let got = items(&model(&server), &user("x")).await;
    assert!(
        got[0].as_ref().unwrap_err().starts_with("invalid_chunk"),
        "{got:?}"
    );
}

/// A registry with `Record(note)`, which counts its runs.
fn recording_agent(protocol: ProtocolChoice, runs: &Arc<AtomicUsize>) -> Agent {
    let mut registry = Registry::new();
    let runs = Arc::clone(runs);
    registry
        .register_fn(
            service(
                "Record",
                "Records a note.",
                json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}),
            ),
            move |_| {
                runs.fetch_add(1, Ordering::SeqCst);
                async { ToolExecutionResult::save_success(Value::Null, "recorded") }
            },
        )
        .unwrap();
    Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        AgentConfig::for_protocol(protocol),
    )
}

async fn run_agent(
    agent: &Agent,
    model: &OpenAiModel,
) -> (Result<tool_dispatch::AgentOutcome, Error>, Vec<AgentEvent>) {
    let events = Mutex::new(Vec::new());
    let mut conversation = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(
            model,
            &mut conversation,
            "Record hello.",
            |e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the run ends");
    (outcome, events.into_inner().unwrap())
}

#[tokio::test]
async fn a_block_closed_before_the_end_runs_through_the_agent() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::start(vec![
        Reply::events(&text_stream(
            &format!("Recording.\n{RECORD_BLOCK}"),
            5,
            "stop",
            "\r\n",
        )),
        Reply::events(&text_stream("Done.", 5, "stop", "\n")),
    ])
    .await;
    let (outcome, _) = run_agent(
        &recording_agent(ProtocolChoice::Tam, &runs),
        &model(&server),
    )
    .await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(outcome.answer, "Done.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let second = &server.requests()[1].body["messages"];
    assert!(
        second[2]["content"]
            .as_str()
            .unwrap()
            .contains("Record executed successfully"),
        "{second}"
    );
}

#[tokio::test]
async fn a_reply_cut_at_the_token_limit_inside_a_block_runs_no_call() {
    for (protocol, block) in [
        (ProtocolChoice::Tam, RECORD_BLOCK.to_owned()),
        (
            ProtocolChoice::Action,
            "<ACTION>\n  <Record>\n    <note>hello</note>\n  </Record>\n</ACTION>".to_owned(),
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        // Cut just before the block's end: everything the call needs is there but the close.
        let cut_at = block.rfind('<').unwrap();
        let server = Server::start(vec![
            Reply::events(&text_stream(
                &format!("Recording.\n{}", &block[..cut_at]),
                4,
                "length",
                "\n",
            )),
            Reply::events(&text_stream("Too long, sorry.", 5, "stop", "\n")),
        ])
        .await;
        let (outcome, events) = run_agent(&recording_agent(protocol, &runs), &model(&server)).await;
        let outcome = outcome.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 0, "{protocol:?}: no call ran");
        assert!(events.contains(&AgentEvent::StreamCut(StreamCut::Length)));
        assert!(events.contains(&AgentEvent::ModelFinished(FinishReason::Length)));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, AgentEvent::CallStarted { .. })),
            "{events:?}"
        );
        // The model is told why, and answers in the next round.
        let told = &server.requests()[1].body["messages"][2]["content"];
        assert!(
            told.as_str().unwrap().contains("cut at the token limit"),
            "{told}"
        );
        assert_eq!(outcome.stop, StopReason::Answer);
        assert_eq!(outcome.rounds, 2);
    }
}

#[tokio::test]
async fn a_prose_answer_cut_at_the_token_limit_is_truncated() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::start(vec![Reply::events(&text_stream(
        "The answer is",
        4,
        "length",
        "\n",
    ))])
    .await;
    let (outcome, _) = run_agent(
        &recording_agent(ProtocolChoice::Tam, &runs),
        &model(&server),
    )
    .await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop, StopReason::Truncated);
    assert_eq!(outcome.answer, "The answer is");
}

#[tokio::test]
async fn a_connection_dropped_inside_a_block_runs_no_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let text = format!("Recording.\n{}", &RECORD_BLOCK[..RECORD_BLOCK.len() - 3]);
    let Reply::Stream { mut pieces, .. } = Reply::events(&text_stream(&text, 6, "stop", "\n"))
    else {
        unreachable!()
    };
    pieces.truncate(pieces.len() - 2); // no finish chunk, no [DONE]
    let server = Server::start(vec![Reply::Stream { pieces, drop: true }]).await;
    let (outcome, events) = run_agent(
        &recording_agent(ProtocolChoice::Tam, &runs),
        &model(&server),
    )
    .await;
    assert!(matches!(outcome, Err(Error::Model(_))), "{outcome:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::StreamCut(StreamCut::Transport(_)))),
        "{events:?}"
    );
}

#[tokio::test]
async fn reasoning_is_shown_and_never_decoded_into_calls() {
    let runs = Arc::new(AtomicUsize::new(0));
    let think = format!("<think>Maybe {RECORD_BLOCK}? No.</think>\n\nNo call needed.");
    let mut events = vec![chunk(
        json!({"reasoning_content": RECORD_BLOCK}),
        None,
        "\n",
    )];
    events.extend(text_stream(&think, 3, "stop", "\n"));
    let server = Server::start(vec![Reply::events(&events)]).await;
    let (outcome, events) = run_agent(
        &recording_agent(ProtocolChoice::Tam, &runs),
        &model(&server),
    )
    .await;
    let outcome = outcome.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(outcome.answer, "\n\nNo call needed.");
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Reasoning(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasoning,
        format!("{RECORD_BLOCK}Maybe {RECORD_BLOCK}? No.")
    );
}

#[tokio::test]
async fn native_tool_calls_are_reported_and_the_model_is_told() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::start(vec![
        Reply::events(&[
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "Record", "arguments": "{\"note\":\"hi\"}"}}]}),
                None,
                "\n",
            ),
            chunk(json!({}), Some("tool_calls"), "\n"),
            "data: [DONE]\n\n".to_owned(),
        ]),
        Reply::events(&text_stream("Understood.", 5, "stop", "\n")),
    ])
    .await;
    let (outcome, events) = run_agent(
        &recording_agent(ProtocolChoice::Tam, &runs),
        &model(&server),
    )
    .await;
    let outcome = outcome.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a native call is not run");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::NativeToolCall(chunk) if chunk.name.as_deref() == Some("Record")
    )));
    let told = &server.requests()[1].body["messages"][2]["content"];
    assert!(
        told.as_str()
            .unwrap()
            .contains("Native tool calls are not executed here (Record)"),
        "{told}"
    );
    assert_eq!(outcome.rounds, 2);
}

/// Bytes that are not UTF-8 inside the reply's text cut the reply before their event
/// (error `invalid_utf8`) instead of reading as U+FFFD: a call whose argument they fall in
/// never runs. Bytes outside the reply's text (here, in the chunk's id) change nothing.
#[tokio::test]
async fn bytes_that_are_not_utf8_in_the_reply_cut_it_and_run_no_call() {
    let (head, tail) = RECORD_BLOCK.split_at(RECORD_BLOCK.find("hello").unwrap() + 2);
    let with_bad_byte = |text: &str| {
        let event = chunk(json!({"content": text}), None, "\n");
        // Put 0xFF inside the JSON string, after the text's first byte.
        let at = event.find(text).unwrap() + 1;
        let mut bytes = event.into_bytes();
        bytes.insert(at, 0xFF);
        bytes
    };
    let stream = |bad: Vec<u8>| Reply::Stream {
        pieces: vec![
            (
                Duration::ZERO,
                chunk(
                    json!({"content": format!("Recording.\n{head}")}),
                    None,
                    "\n",
                )
                .into_bytes(),
            ),
            (Duration::ZERO, bad),
            (
                Duration::ZERO,
                chunk(json!({"content": tail}), Some("stop"), "\n").into_bytes(),
            ),
            (Duration::ZERO, b"data: [DONE]\n\n".to_vec()),
        ],
        drop: false,
    };

    // The client alone: the text before, then the error.
    let server = Server::start(vec![stream(with_bad_byte("ll"))]).await;
    let got = items(&model(&server), &user("hi")).await;
    assert_eq!(text_of(&got), format!("Recording.\n{head}"));
    assert!(
        matches!(got.last(), Some(Err(e)) if e.starts_with("invalid_utf8")),
        "{got:?}"
    );

    // Through the agent: no call runs.
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::start(vec![stream(with_bad_byte("ll"))]).await;
    let (outcome, _) = run_agent(
        &recording_agent(ProtocolChoice::Tam, &runs),
        &model(&server),
    )
    .await;
    assert!(matches!(outcome, Err(Error::Model(_))), "{outcome:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // A bad byte in the id only: the reply reads whole.
    let mut id_bad = chunk(json!({"content": "ll"}), None, "\n").into_bytes();
    let at = id_bad.windows(9).position(|w| w == b"chatcmpl-").unwrap() + 4;
    id_bad.insert(at, 0xFF);
    let server = Server::start(vec![stream(id_bad)]).await;
    let got = items(&model(&server), &user("hi")).await;
    assert_eq!(text_of(&got), format!("Recording.\n{head}ll{tail}"));
    assert!(got.iter().all(Result::is_ok), "{got:?}");
}
