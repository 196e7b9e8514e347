//! The proxy's own door, over loopback: client keys on every route but `/health`, JSON
//! bodies only, web origins refused unless allowed, the header and body time-outs, the
//! cap on upstream requests without a queue, the upstream time-out, `GET /health`.

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::CreateChatCompletionRequest;
use proxy_upstream::{Reply, ScriptedUpstream, content_event, finish_event, start_proxy_with};
use serde_json::{Value, json};
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A bound against a hang, not a time limit.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn config(upstream: &ScriptedUpstream) -> ProxyConfig {
    ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
}

fn chat_body() -> String {
    json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]}).to_string()
}

/// `METHOD {proxy}{path}` with `headers` and `body`: the status, the headers, the body.
async fn send(
    proxy: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let base = proxy.trim_end_matches("/v1");
    let mut request = reqwest::Client::new().request(
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        format!("{base}{path}"),
    );
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn code(body: &str) -> Value {
    let body: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    body["error"]["code"].clone()
}

/// The address `host:port` of a proxy's `/v1` base URL.
fn address(proxy: &str) -> String {
    proxy
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned()
}

/// Writes `bytes` on a new connection and reads until the server closes it.
async fn raw(proxy: &str, bytes: &[u8]) -> String {
    let mut socket = TcpStream::connect(address(proxy)).await.unwrap();
    socket.write_all(bytes).await.unwrap();
    let mut answer = Vec::new();
    // A reset instead of a close also ends the read.
    let _ = tokio::time::timeout(HANG_GUARD, socket.read_to_end(&mut answer))
        .await
        .expect("the server never closed the connection");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn client_keys_guard_every_route_but_health() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy = start_proxy_with(config(&upstream).with_client_keys(["key-one", "key-two"])).await;
    let routes = [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("GET", "/v1/models/qwen"),
        ("GET", "/v1/embeddings"),
    ];
    let json_type = ("content-type", "application/json");
    for (method, path) in routes {
        let body = (method == "POST").then(chat_body);
        for authorization in [
            None,
            Some("Bearer "),
            Some("Bearer key-on"),
            Some("Bearer key-one2"),
            Some("Bearer KEY-ONE"),
            Some("Basic key-one"),
            Some("key-one"),
        ] {
            let mut headers = vec![json_type];
            headers.extend(authorization.map(|a| ("authorization", a)));
            let (status, response_headers, text) =
                send(&proxy, method, path, &headers, body.clone()).await;
            assert_eq!(status, 401, "{method} {path} {authorization:?}: {text}");
            assert_eq!(code(&text), "invalid_api_key");
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(body["error"]["type"], "authentication_error");
            assert_eq!(response_headers["www-authenticate"], "Bearer");
            assert!(!text.contains("key-one") && !text.contains("key-two"));
        }
    }
    assert!(
        upstream.bodies().is_empty(),
        "a refused request went upstream"
    );

    for key in ["key-one", "key-two"] {
        let bearer = format!("Bearer {key}");
        let headers = [json_type, ("authorization", bearer.as_str())];
        let (status, _, text) = send(
            &proxy,
            "POST",
            "/v1/chat/completions",
            &headers,
            Some(chat_body()),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let (status, _, _) = send(&proxy, "GET", "/v1/models", &headers, None).await;
        assert_eq!(status, 200);
        let (status, _, text) = send(&proxy, "GET", "/v1/embeddings", &headers, None).await;
        assert_eq!((status, code(&text)), (404, json!("not_found")));
    }
    // A real OpenAI client with the key.
    let client = Client::with_config(
        OpenAIConfig::new()
            .with_api_base(&proxy)
            .with_api_key("key-two"),
    );
    let request: CreateChatCompletionRequest =
        serde_json::from_str(&chat_body()).expect("a request");
    let reply = client.chat().create(request.clone()).await.unwrap();
    assert_eq!(reply.choices[0].message.content.as_deref(), Some("Hello."));
    let wrong = Client::with_config(
        OpenAIConfig::new()
            .with_api_base(&proxy)
            .with_api_key("key-three"),
    );
    let Err(OpenAIError::ApiError(error)) = wrong.chat().create(request).await else {
        panic!("a wrong key was served");
    };
    assert_eq!(error.status_code.as_u16(), 401);
    // The client's key is the proxy's, never forwarded: the upstream got no key.
    assert!(upstream.authorizations().iter().all(Option::is_none));

    let (status, _, text) = send(&proxy, "GET", "/health", &[], None).await;
    assert_eq!((status, text.as_str()), (200, r#"{"status":"ok"}"#));
}

#[tokio::test]
async fn health_answers_without_asking_the_upstream() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let proxy = start_proxy_with(ProxyConfig::new(OpenAiConfig::new(base, ""))).await;
    let (status, headers, text) = send(&proxy, "GET", "/health", &[], None).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"status": "ok"})
    );
}

#[tokio::test]
async fn only_json_bodies_are_read() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy = start_proxy_with(config(&upstream)).await;
    for content_type in [
        None,
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
    ] {
        let headers: Vec<_> = content_type
            .map(|t| ("content-type", t))
            .into_iter()
            .collect();
        let (status, _, text) = send(
            &proxy,
            "POST",
            "/v1/chat/completions",
            &headers,
            Some(chat_body()),
        )
        .await;
        assert_eq!(status, 415, "{content_type:?}: {text}");
        assert_eq!(code(&text), "unsupported_media_type");
    }
    assert!(upstream.bodies().is_empty());
    for content_type in ["application/json", "Application/JSON; charset=utf-8"] {
        let (status, _, text) = send(
            &proxy,
            "POST",
            "/v1/chat/completions",
            &[("content-type", content_type)],
            Some(chat_body()),
        )
        .await;
        assert_eq!(status, 200, "{content_type}: {text}");
    }
}

#[tokio::test]
async fn web_origins_are_refused_unless_allowed() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy = start_proxy_with(config(&upstream)).await;
    let json_type = ("content-type", "application/json");
    for origin in ["http://evil.example", "null", "http://127.0.0.1:8080"] {
        let (status, _, text) = send(
            &proxy,
            "POST",
            "/v1/chat/completions",
            &[json_type, ("origin", origin)],
            Some(chat_body()),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {text}");
        assert_eq!(code(&text), "origin_not_allowed");
        let (status, _, _) = send(&proxy, "GET", "/v1/models", &[("origin", origin)], None).await;
        assert_eq!(status, 403, "{origin}");
    }
    assert!(upstream.bodies().is_empty());

    let proxy =
        start_proxy_with(config(&upstream).with_allowed_origin("https://app.example")).await;
    let allowed = ("origin", "https://app.example");
    let (status, headers, text) = send(
        &proxy,
        "POST",
        "/v1/chat/completions",
        &[json_type, allowed],
        Some(chat_body()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    // A browser's preflight for a JSON POST with a key.
    let (status, headers, _) = send(
        &proxy,
        "OPTIONS",
        "/v1/chat/completions",
        &[
            allowed,
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization,content-type",
            ),
        ],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    let (status, _, _) = send(
        &proxy,
        "POST",
        "/v1/chat/completions",
        &[json_type, ("origin", "https://other.example")],
        Some(chat_body()),
    )
    .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_a_408() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy = start_proxy_with(
        config(&upstream)
            .with_body_timeout(Duration::from_millis(200))
            .with_header_timeout(Duration::ZERO),
    )
    .await;
    // The header says 100 bytes; 10 come, and then nothing.
    let answer = raw(
        &proxy,
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\":",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    assert_eq!(code(body), "request_timeout");
    assert!(upstream.bodies().is_empty());
}

#[tokio::test]
async fn a_header_that_does_not_arrive_in_time_closes_the_connection() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy =
        start_proxy_with(config(&upstream).with_header_timeout(Duration::from_millis(200))).await;
    // Half a header, and then nothing: the server closes the connection unanswered.
    let answer = raw(&proxy, b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n").await;
    assert_eq!(answer, "");
    // A connection that sends nothing at all is closed too.
    assert_eq!(raw(&proxy, b"").await, "");
    // A whole request on time is served.
    let (status, _, _) = send(
        &proxy,
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        Some(chat_body()),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn without_a_queue_a_request_over_the_upstream_cap_is_refused_at_once() {
    let release = Arc::new(tokio::sync::Notify::new());
    let seen = Arc::new(AtomicUsize::new(0));
    let script = {
        let release = release.clone();
        let seen = seen.clone();
        move |_: &Value| {
            let events = vec![
                content_event("Hello."),
                finish_event("stop"),
                "data: [DONE]\n\n".to_owned(),
            ];
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                // The first request waits, holding its slot, until the test releases it.
                Reply::Held {
                    events,
                    hold_at: 0,
                    release: release.clone(),
                }
            } else {
                Reply::content(&["Hello."], "stop")
            }
        }
    };
    let upstream = ScriptedUpstream::start(script).await;
    let proxy = start_proxy_with(
        config(&upstream)
            .with_max_upstream_concurrency(1)
            .with_upstream_queue(0),
    )
    .await;
    let json_type = ("content-type", "application/json");
    let streaming =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "Hi"}]})
            .to_string();
    let first = {
        let proxy = proxy.clone();
        let streaming = streaming.clone();
        tokio::spawn(async move {
            send(
                &proxy,
                "POST",
                "/v1/chat/completions",
                &[json_type],
                Some(streaming),
            )
            .await
        })
    };
    let waited = tokio::time::timeout(HANG_GUARD, async {
        while upstream.bodies().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "the first request never reached the upstream"
    );
    for body in [chat_body(), streaming] {
        let (status, headers, text) = send(
            &proxy,
            "POST",
            "/v1/chat/completions",
            &[json_type],
            Some(body),
        )
        .await;
        assert_eq!(status, 503, "{text}");
        assert_eq!(code(&text), "server_busy");
        assert_eq!(headers["retry-after"], "1");
    }
    let (status, _, _) = send(&proxy, "GET", "/v1/models", &[], None).await;
    assert_eq!(status, 503);
    assert_eq!(
        upstream.bodies().len(),
        1,
        "a refused request went upstream"
    );

    release.notify_one();
    let (status, _, text) = first.await.unwrap();
    assert_eq!(status, 200);
    assert!(
        text.contains("Hello.") && text.ends_with("data: [DONE]\n\n"),
        "{text}"
    );
    // The slot is free again once the first reply has ended.
    let (status, _, text) = send(
        &proxy,
        "POST",
        "/v1/chat/completions",
        &[json_type],
        Some(chat_body()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn the_upstream_timeout_is_the_configured_one() {
    // The upstream answers its header and then nothing.
    let upstream = ScriptedUpstream::always(Reply::Held {
        events: vec![content_event("never")],
        hold_at: 0,
        release: Arc::new(tokio::sync::Notify::new()),
    })
    .await;
    let proxy =
        start_proxy_with(config(&upstream).with_upstream_timeout(Duration::from_millis(200))).await;
    let (status, _, text) = send(
        &proxy,
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        Some(chat_body()),
    )
    .await;
    assert_eq!(status, 504, "{text}");
    assert_eq!(code(&text), "upstream_timeout");
}

#[tokio::test]
async fn each_answer_carries_its_request_id() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy = start_proxy_with(config(&upstream).with_client_keys(["k"])).await;
    let mut ids = Vec::new();
    for (method, path) in [
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ] {
        let (_, headers, _) = send(&proxy, method, path, &[], None).await;
        let id = headers["x-request-id"].to_str().unwrap().to_owned();
        assert!(id.starts_with("req_"), "{id}");
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

#[test]
fn a_configs_debug_form_shows_no_key() {
    let config = ProxyConfig::new(
        OpenAiConfig::new("http://127.0.0.1:1/v1", "m").with_api_key("sk-upstream-secret"),
    )
    .with_client_keys(["client-secret-1", "client-secret-2"]);
    let text = format!("{config:?}");
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("ClientKeys(2 keys)"), "{text}");
}
