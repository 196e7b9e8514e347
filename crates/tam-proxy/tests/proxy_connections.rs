//! The connection cap of `serve`, over loopback: connections that send half a header and
//! then nothing cannot lock real clients out (at the cap the oldest connection not
//! serving a request is closed to make room), a connection serving a request is never
//! closed for room, and only when every open connection is serving one is a new
//! connection refused. Bounded in count; no timing is asserted (times are printed).

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proxy_upstream::{Reply, ScriptedUpstream, content_event, finish_event, start_proxy_with};
use serde_json::{Value, json};
use tam_model::openai::OpenAiConfig;
use tam_proxy::ProxyConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// A bound against a hang, not a time limit.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// The start of a request: its header is never finished.
const HALF_HEADER: &[u8] = b"GET /health HTTP/1.1\r\nhost: x\r\n";
/// The rest of [`HALF_HEADER`]'s request.
const REST_OF_HEADER: &[u8] = b"connection: close\r\n\r\n";

/// The address `host:port` of a proxy's `/v1` base URL.
fn address(proxy: &str) -> String {
    proxy
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned()
}

/// A new connection that has sent half a header.
async fn half_sent(address: &str) -> TcpStream {
    let mut socket = TcpStream::connect(address).await.unwrap();
    socket.write_all(HALF_HEADER).await.unwrap();
    socket
}

/// Reads what the server sends on `socket` until it closes it (a reset also ends it).
async fn until_closed(socket: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(HANG_GUARD, async {
        let mut buffer = [0u8; 4096];
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await
    .expect("the server never closed the connection");
    String::from_utf8_lossy(&answer).into_owned()
}

/// `GET /health` on a new connection, closed after it: the whole answer (empty when the
/// connection was closed unanswered).
async fn health(address: &str) -> String {
    let mut socket = TcpStream::connect(address).await.unwrap();
    // A connection refused may be closed before the request is written.
    let request = [HALF_HEADER, REST_OF_HEADER].concat();
    let _ = socket.write_all(&request).await;
    until_closed(&mut socket).await
}

/// A whole chat request asking to close the connection after it.
fn chat_request(content: &str) -> String {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": content}]});
    let body = body.to_string();
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An upstream whose every reply sends its first event (`reply N`, N the request's last
/// message), then waits for its own release; the releases, in arrival order.
async fn held_upstream() -> (ScriptedUpstream, Arc<Mutex<Vec<Arc<Notify>>>>) {
    let releases: Arc<Mutex<Vec<Arc<Notify>>>> = Arc::default();
    let upstream = {
        let releases = releases.clone();
        ScriptedUpstream::start(move |body: &Value| {
            let n = body["messages"].as_array().and_then(|m| m.last()).unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned();
            let release = Arc::new(Notify::new());
            releases.lock().unwrap().push(release.clone());
            Reply::Held {
                events: vec![
                    content_event(&format!("reply {n}")),
                    content_event(" done"),
                    finish_event("stop"),
                    "data: [DONE]\n\n".to_owned(),
                ],
                hold_at: 1,
                release,
            }
        })
        .await
    };
    (upstream, releases)
}

/// A streaming request `n` on a connection of its own, once its answer has begun: it is
/// being served until the test releases its reply.
async fn serving(proxy: &str, n: usize) -> reqwest::Response {
    let body = json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": n.to_string()}]});
    let response = reqwest::Client::new()
        .post(format!("{proxy}/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

/// Releases every held reply; each served request `n` must then end with its own reply.
async fn release_and_check(releases: &Mutex<Vec<Arc<Notify>>>, served: Vec<reqwest::Response>) {
    for release in releases.lock().unwrap().iter() {
        release.notify_one();
    }
    for (n, response) in served.into_iter().enumerate() {
        let text = tokio::time::timeout(HANG_GUARD, response.text())
            .await
            .unwrap()
            .unwrap();
        assert!(
            text.contains(&format!("\"reply {n}\"")) && text.contains("\" done\""),
            "{n}: {text}"
        );
        assert!(text.ends_with("data: [DONE]\n\n"), "{n}: {text}");
    }
}

/// How many half-sent connections the first test opens: more than four times the old
/// fixed cap of 256, which they filled.
const IDLE: usize = 1100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_half_sent_connections_leave_a_real_request_served() {
    // Both ends of every connection are in this process.
    let limit = tam_proxy::raise_open_file_limit().unwrap();
    assert!(
        limit >= 2 * (IDLE as u64) + 256,
        "this test needs {} open files; the hard limit allows {limit}",
        2 * IDLE + 256
    );
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    // The default cap; no header time-out, so the half-sent requests stay open for the
    // whole test whatever its pace.
    let config = ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
        .with_header_timeout(Duration::ZERO);
    eprintln!(
        "open-file limit {limit}: default connection cap {}",
        config.max_connections
    );
    assert!(config.max_connections > IDLE);
    let proxy = start_proxy_with(config).await;
    let address = address(&proxy);

    let mut idle = Vec::new();
    for _ in 0..IDLE {
        idle.push(half_sent(&address).await);
    }
    let start = Instant::now();
    let mut client = TcpStream::connect(&address).await.unwrap();
    client
        .write_all(chat_request("Hi").as_bytes())
        .await
        .unwrap();
    let answer = until_closed(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.contains("Hello."), "{answer}");
    eprintln!(
        "{IDLE} half-sent connections open: a request served in {:?}",
        start.elapsed()
    );
    // None of them was closed: each finishes its request and is answered.
    for socket in &mut idle {
        socket.write_all(REST_OF_HEADER).await.unwrap();
    }
    for socket in &mut idle {
        let answer = until_closed(socket).await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_connections_over_a_cap_make_room_for_real_ones() {
    let _ = tam_proxy::raise_open_file_limit();
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    // The old fixed cap, and an attacker reopening: 1 100 half-sent connections, each new
    // one at the cap closing the oldest.
    let cap = 256;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_connections(cap)
            .with_header_timeout(Duration::ZERO),
    )
    .await;
    let address = address(&proxy);
    let mut idle = Vec::new();
    for _ in 0..IDLE {
        idle.push(half_sent(&address).await);
    }
    let mut client = TcpStream::connect(&address).await.unwrap();
    client
        .write_all(chat_request("Hi").as_bytes())
        .await
        .unwrap();
    let answer = until_closed(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    // The oldest were closed, unanswered.
    for socket in &mut idle[..IDLE - cap] {
        assert_eq!(until_closed(socket).await, "");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_the_oldest_connection_not_serving_is_closed() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let cap = 8;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_connections(cap)
            .with_header_timeout(Duration::ZERO),
    )
    .await;
    let address = address(&proxy);
    // The server accepts connections in the order they were made.
    let mut idle = Vec::new();
    for _ in 0..cap {
        idle.push(half_sent(&address).await);
    }
    // One more: served, and the oldest closed unanswered to make room.
    let answer = health(&address).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert_eq!(until_closed(&mut idle[0]).await, "");
    // The others are still open: each finishes its request and is answered.
    for socket in &mut idle[1..] {
        socket.write_all(REST_OF_HEADER).await.unwrap();
        let answer = until_closed(socket).await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_not_serving_either() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let cap = 8;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_connections(cap)
            .with_header_timeout(Duration::ZERO),
    )
    .await;
    let address = address(&proxy);
    // The cap full of kept-alive connections that have been answered, and a half-sent
    // one, the youngest: a new connection closes the oldest kept-alive one.
    let mut kept = Vec::new();
    for _ in 0..cap - 1 {
        let mut socket = TcpStream::connect(&address).await.unwrap();
        socket
            .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut head = [0u8; 12];
        socket.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        kept.push(socket);
    }
    let mut last = half_sent(&address).await;
    let answer = health(&address).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    let rest = until_closed(&mut kept[0]).await;
    assert!(rest.ends_with(r#"{"status":"ok"}"#), "{rest}");
    last.write_all(REST_OF_HEADER).await.unwrap();
    let answer = until_closed(&mut last).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_serving_a_request_is_never_closed_for_room() {
    let (upstream, releases) = held_upstream().await;
    let cap = 8;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_connections(cap)
            .with_header_timeout(Duration::ZERO),
    )
    .await;
    let address = address(&proxy);
    // The oldest connections serve streamed requests, held upstream.
    let mut served = Vec::new();
    for n in 0..cap - 1 {
        served.push(serving(&proxy, n).await);
    }
    // The youngest sends half a header. A new connection closes it, not an older one
    // serving a request.
    let mut young = half_sent(&address).await;
    let answer = health(&address).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert_eq!(until_closed(&mut young).await, "");

    // Every connection serving a request: a new one is refused at once.
    served.push(serving(&proxy, cap - 1).await);
    let refused = health(&address).await;
    assert!(
        refused.is_empty()
            || (refused.starts_with("HTTP/1.1 503 ") && refused.contains("too_many_connections")),
        "{refused}"
    );
    let refused = {
        let mut socket = half_sent(&address).await;
        until_closed(&mut socket).await
    };
    assert!(
        refused.is_empty() || refused.contains("too_many_connections"),
        "{refused}"
    );
    // And each request served ends with its own reply.
    release_and_check(&releases, served).await;
    let answer = health(&address).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

/// The connection cap of the refusal test, and how many connections come over it.
const CAP: usize = 32;
const OVER: usize = 300;

/// How a connection over the cap ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The 503 `too_many_connections` answer, then the close.
    Answered,
    /// Closed (or reset) without an answer.
    Closed,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_a_cap_of_busy_ones_are_refused_and_the_busy_ones_served() {
    let (upstream, releases) = held_upstream().await;
    let config = ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
        .with_max_connections(CAP)
        .with_header_timeout(Duration::ZERO);
    assert!(config.max_upstream_concurrency >= CAP);
    let proxy = start_proxy_with(config).await;
    let address = address(&proxy);
    let mut served = Vec::new();
    for n in 0..CAP {
        served.push(serving(&proxy, n).await);
    }

    // Every connection serves a request. OVER more connections at once, each sending a
    // whole request: each is refused, none waits.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..OVER {
        let address = address.clone();
        tasks.push(tokio::spawn(async move {
            let start = Instant::now();
            let mut socket = TcpStream::connect(&address).await.unwrap();
            let _ = socket.write_all(chat_request("over").as_bytes()).await;
            let answer = until_closed(&mut socket).await;
            let refusal = if answer.is_empty() {
                Refusal::Closed
            } else {
                assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
                assert!(answer.contains("too_many_connections"), "{answer}");
                assert!(answer.contains("retry-after: 1"), "{answer}");
                Refusal::Answered
            };
            (refusal, start.elapsed())
        }));
    }
    let mut times = Vec::new();
    let mut answered = 0;
    for task in tasks {
        let (refusal, time) = task.await.unwrap();
        answered += usize::from(refusal == Refusal::Answered);
        times.push(time);
    }
    let all = started.elapsed();
    times.sort();
    eprintln!(
        "{OVER} connections over a cap of {CAP} busy ones: all refused in {all:?} ({answered} answered 503, {} closed unanswered); per connection: median {:?}, max {:?}",
        OVER - answered,
        times[OVER / 2],
        times[OVER - 1]
    );
    assert_eq!(
        upstream.bodies().len(),
        CAP,
        "a refused request went upstream"
    );

    // The requests being served complete, each with its own reply; then, their
    // connections idle, a new client is served.
    release_and_check(&releases, served).await;
    let answer = health(&address).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

#[tokio::test]
async fn a_header_over_16_kib_is_refused() {
    let upstream = ScriptedUpstream::always(Reply::content(&["Hello."], "stop")).await;
    let proxy = start_proxy_with(ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))).await;
    let address = address(&proxy);
    let mut socket = TcpStream::connect(&address).await.unwrap();
    let filler = "a".repeat(20 << 10);
    let request = format!("GET /health HTTP/1.1\r\nhost: x\r\nx-filler: {filler}\r\n\r\n");
    // The server may close before it has read it all.
    let _ = socket.write_all(request.as_bytes()).await;
    let answer = until_closed(&mut socket).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
        "{answer}"
    );
    // A header under it is served.
    let filler = "a".repeat(8 << 10);
    let mut socket = TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "GET /health HTTP/1.1\r\nhost: x\r\nx-filler: {filler}\r\nconnection: close\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let answer = until_closed(&mut socket).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}
