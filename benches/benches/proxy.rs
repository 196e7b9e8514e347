//! `tam serve`'s proxy (tool-dispatch `proxy`) beside its baseline: one streamed chat
//! completion of 256 content deltas read by the same HTTP client (reqwest) straight from a
//! scripted upstream on loopback (`direct`) and through the proxy in front of it
//! (`through_proxy`, TAM decoding on: prose, then one tool call at the end). Throughput is
//! in deltas, so criterion's time per element is the end-to-end cost of one delta; the
//! ratio of the two is what the proxy adds (its HTTP hop, the decoder, the chunk encoder).
//! The same reply through the proxy's other two client APIs (`through_proxy_messages`,
//! Anthropic Messages; `through_proxy_responses`, OpenAI Responses) against
//! `through_proxy` (Chat Completions) is what each API's writer costs per event.
//!
//! Before the timings it measures memory per open stream: the process's resident set with
//! 100 streams open and paused mid-reply, through the proxy and directly, less the resident
//! set before; the difference of the two, ÷ 100, is the proxy's memory per stream (the
//! client's and the upstream's cost cancels out). It prints one line.
//!
//! `cargo bench -p tam-benches --bench proxy`

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use serde_json::json;
use tam::ProtocolChoice;
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

const DELTAS: usize = 256;
const OPEN_STREAMS: usize = 100;

/// The upstream's events: `DELTAS` prose deltas, a TAM block, a finish, `[DONE]`; with
/// `hold`, the stream pauses (for a minute) after the first event instead.
fn events(hold: bool) -> Vec<Bytes> {
    let event = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = json!({"id": "u", "object": "chat.completion.chunk", "created": 1, "model": "u",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        Bytes::from(format!("data: {chunk}\n\n"))
    };
    let mut out: Vec<Bytes> = (0..DELTAS)
        .map(|i| event(json!({"content": format!("word {i} of the reply, ")}), None))
        .collect();
    if hold {
        out.truncate(1);
        return out;
    }
    out.push(event(
        json!({"content": "<|[REQUEST_TOOL]|>\ncommand:「始」note「末」\nn:「始」7「末」\n<|[END_TOOL]|>"}),
        None,
    ));
    out.push(event(json!({}), Some("stop")));
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

async fn upstream(hold: bool) -> String {
    let events = Arc::new(events(hold));
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let events = events.clone();
            async move {
                let body = futures_util::stream::iter((*events).clone())
                    .map(Ok::<_, Infallible>)
                    .chain(futures_util::stream::once(async move {
                        if hold {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                        }
                        Ok(Bytes::new())
                    }));
                (
                    [(header::CONTENT_TYPE, "text/event-stream")],
                    Body::from_stream(body),
                )
                    .into_response()
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn proxy(upstream: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let config =
        ProxyConfig::new(OpenAiConfig::new(upstream, "")).with_protocol(ProtocolChoice::Tam);
    tokio::spawn(tam_proxy::serve(listener, config, std::future::pending()));
    url
}

/// The client API a request is sent in.
#[derive(Clone, Copy)]
enum Api {
    Chat,
    Messages,
    Responses,
}

/// The same request in each API's form: its path and body.
fn request_body(api: Api) -> (&'static str, String) {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    match api {
        Api::Chat => (
            "/chat/completions",
            json!({
                "model": "m", "stream": true,
                "messages": [{"role": "user", "content": "Note seven."}],
                "tools": [{"type": "function", "function": {"name": "note", "parameters": schema}}],
            })
            .to_string(),
        ),
        Api::Messages => (
            "/messages",
            json!({
                "model": "m", "stream": true, "max_tokens": 1000,
                "messages": [{"role": "user", "content": "Note seven."}],
                "tools": [{"name": "note", "input_schema": schema}],
            })
            .to_string(),
        ),
        Api::Responses => (
            "/responses",
            json!({
                "model": "m", "stream": true, "input": "Note seven.",
                "tools": [{"type": "function", "name": "note", "parameters": schema}],
            })
            .to_string(),
        ),
    }
}

/// Sends the request; the response, its body not read yet.
async fn send(client: &reqwest::Client, base: &str) -> reqwest::Response {
    send_in(client, base, Api::Chat).await
}

async fn send_in(client: &reqwest::Client, base: &str, api: Api) -> reqwest::Response {
    let (path, body) = request_body(api);
    let response = client
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    response
}

/// One streamed completion read to its end; the bytes read.
async fn complete(client: &reqwest::Client, base: &str) -> usize {
    complete_in(client, base, Api::Chat).await
}

async fn complete_in(client: &reqwest::Client, base: &str, api: Api) -> usize {
    let mut body = send_in(client, base, api).await.bytes_stream();
    let mut read = 0;
    while let Some(bytes) = body.next().await {
        read += bytes.unwrap().len();
    }
    read
}

/// Resident set size of this process, in KiB (Linux; 0 elsewhere).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// RSS growth, in KiB, with `OPEN_STREAMS` streams open at `base` (each has sent its
/// first event and is paused).
fn open_streams_growth(runtime: &Runtime, client: &reqwest::Client, base: &str) -> i64 {
    runtime.block_on(async {
        let before = rss_kib();
        let mut open = Vec::new();
        for _ in 0..OPEN_STREAMS {
            let mut body = send(client, base).await.bytes_stream();
            let _first = body.next().await;
            open.push(body);
        }
        let during = rss_kib();
        drop(open);
        during as i64 - before as i64
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let (direct, proxied, held_direct, held_proxied) = runtime.block_on(async {
        let up = upstream(false).await;
        let held = upstream(true).await;
        let through = proxy(&up).await;
        let held_through = proxy(&held).await;
        (up, through, held, held_through)
    });
    // The proxy turns the block into a tool call: the outputs differ only by that.
    let through = runtime.block_on(complete(&client, &proxied));
    assert!(through > 0);
    for api in [Api::Messages, Api::Responses] {
        assert!(runtime.block_on(complete_in(&client, &proxied, api)) > 0);
    }

    // Warm both paths so connection pools and allocator arenas exist before measuring.
    open_streams_growth(&runtime, &client, &held_direct);
    open_streams_growth(&runtime, &client, &held_proxied);
    let direct_kib = open_streams_growth(&runtime, &client, &held_direct);
    let proxied_kib = open_streams_growth(&runtime, &client, &held_proxied);
    println!(
        "proxy/memory: {OPEN_STREAMS} open streams: RSS +{direct_kib} KiB direct, +{proxied_kib} KiB through the proxy; the proxy's share ≈ {:.1} KiB per stream",
        (proxied_kib - direct_kib) as f64 / OPEN_STREAMS as f64
    );

    let mut group = c.benchmark_group("proxy/stream_256_deltas");
    group.throughput(Throughput::Elements(DELTAS as u64));
    group.bench_function("direct", |b| {
        b.iter(|| runtime.block_on(complete(&client, &direct)))
    });
    group.bench_function("through_proxy", |b| {
        b.iter(|| runtime.block_on(complete(&client, &proxied)))
    });
    group.bench_function("through_proxy_messages", |b| {
        b.iter(|| runtime.block_on(complete_in(&client, &proxied, Api::Messages)))
    });
    group.bench_function("through_proxy_responses", |b| {
        b.iter(|| runtime.block_on(complete_in(&client, &proxied, Api::Responses)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
