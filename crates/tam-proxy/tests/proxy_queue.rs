//! The upstream queue, over loopback: a request over the upstream cap waits for a slot
//! instead of being refused; it gets 503 `server_busy` with `Retry-After` when the queue
//! is full or its wait runs out; a client that goes away while it waits leaves the queue;
//! the log line tells how long a request waited (`queued_ms`). No timing is asserted.

#[path = "support/proxy_upstream.rs"]
mod proxy_upstream;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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

/// The log lines of this test binary (every test's), as the proxy writes them.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Installs the capture once for the whole binary.
    fn get() -> &'static Logs {
        static LOGS: OnceLock<Logs> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Logs::default();
            let writer = logs.clone();
            tracing_subscriber::fmt()
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .with_max_level(tracing::Level::INFO)
                .init();
            logs
        })
    }

    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits for a request log line holding every one of `fields`.
    async fn wait_for(&self, fields: &[&str]) -> String {
        let start = Instant::now();
        loop {
            if let Some(line) = self
                .lines()
                .into_iter()
                .find(|line| fields.iter().all(|field| line.contains(field)))
            {
                return line;
            }
            assert!(
                start.elapsed() < HANG_GUARD,
                "no line with {fields:?} in {:#?}",
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The address `host:port` of a proxy's `/v1` base URL.
fn address(proxy: &str) -> String {
    proxy
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned()
}

/// An upstream whose first reply sends its first event and then waits for `release`;
/// every later request is answered at once.
async fn first_held(release: Arc<Notify>) -> ScriptedUpstream {
    let seen = AtomicUsize::new(0);
    ScriptedUpstream::start(move |_: &Value| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::Held {
                events: vec![
                    content_event("Hello."),
                    finish_event("stop"),
                    "data: [DONE]\n\n".to_owned(),
                ],
                hold_at: 1,
                release: release.clone(),
            }
        } else {
            Reply::content(&["Hello."], "stop")
        }
    })
    .await
}

/// A streaming request, once its answer has begun: it holds an upstream slot until its
/// reply ends.
async fn holding(proxy: &str) -> reqwest::Response {
    let body = json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "Hi"}]});
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

/// A new connection that has sent a whole chat request.
async fn sent(address: &str) -> TcpStream {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]});
    let body = body.to_string();
    let mut socket = TcpStream::connect(address).await.unwrap();
    socket
        .write_all(
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    socket
}

/// The whole answer on `socket`, read until the server closes it.
async fn answer(socket: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    tokio::time::timeout(HANG_GUARD, socket.read_to_end(&mut bytes))
        .await
        .expect("no answer")
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Two requests sent at once when the one upstream slot is taken and the queue holds
/// one: the one that finds the queue full is answered first. That answer, and the other
/// request (which waits in the queue).
async fn one_queued_one_refused(address: &str) -> (String, TcpStream) {
    let mut first = sent(address).await;
    let mut second = sent(address).await;
    // Nothing is read from the request that waits, so the one read dropped loses nothing.
    tokio::select! {
        refused = answer(&mut first) => (refused, second),
        refused = answer(&mut second) => (refused, first),
    }
}

/// The `x-request-id` of an answer.
fn request_id(answer: &str) -> &str {
    answer
        .lines()
        .find_map(|line| line.strip_prefix("x-request-id: "))
        .unwrap()
}

/// Asserts `answer` is a 503 `server_busy` with `Retry-After: 1`; its error message.
fn assert_busy(answer: &str) -> String {
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("\r\nretry-after: 1\r\n"), "{answer}");
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "server_busy", "{answer}");
    body["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_cap_waits_and_a_full_queue_refuses() {
    let logs = Logs::get();
    let release = Arc::new(Notify::new());
    let upstream = first_held(release.clone()).await;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_upstream_concurrency(1)
            .with_upstream_queue(1)
            .with_upstream_queue_timeout(Duration::ZERO),
    )
    .await;
    let held = holding(&proxy).await;
    let (refused, mut queued) = one_queued_one_refused(&address(&proxy)).await;
    let message = assert_busy(&refused);
    assert!(message.contains("the queue is full"), "{message}");
    let line = logs
        .wait_for(&[
            &format!("request_id={} ", request_id(&refused)),
            "status=503",
        ])
        .await;
    assert!(line.contains("outcome=server_busy"), "{line}");
    assert!(line.contains("queued_ms=0 "), "{line}");
    // The slot frees: the request that waited gets it and is answered.
    release.notify_one();
    let text = tokio::time::timeout(HANG_GUARD, held.text())
        .await
        .unwrap()
        .unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let served = answer(&mut queued).await;
    assert!(served.starts_with("HTTP/1.1 200 "), "{served}");
    assert!(served.contains("Hello."), "{served}");
    assert_eq!(upstream.bodies().len(), 2);
    let line = logs
        .wait_for(&[
            &format!("request_id={} ", request_id(&served)),
            "status=200",
        ])
        .await;
    assert!(line.contains("queued_ms="), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_waits_too_long_is_refused() {
    let release = Arc::new(Notify::new());
    let upstream = first_held(release.clone()).await;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_upstream_concurrency(1)
            .with_upstream_queue_timeout(Duration::from_millis(50)),
    )
    .await;
    let held = holding(&proxy).await;
    let mut waiting = sent(&address(&proxy)).await;
    let message = assert_busy(&answer(&mut waiting).await);
    assert!(
        message.contains("no upstream slot came free within"),
        "{message}"
    );
    assert_eq!(
        upstream.bodies().len(),
        1,
        "a refused request went upstream"
    );
    release.notify_one();
    let text = tokio::time::timeout(HANG_GUARD, held.text())
        .await
        .unwrap()
        .unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let mut after = sent(&address(&proxy)).await;
    let served = answer(&mut after).await;
    assert!(served.starts_with("HTTP/1.1 200 "), "{served}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_the_queue() {
    let logs = Logs::get();
    let release = Arc::new(Notify::new());
    let upstream = first_held(release.clone()).await;
    let proxy = start_proxy_with(
        ProxyConfig::new(OpenAiConfig::new(&upstream.base_url, ""))
            .with_max_upstream_concurrency(1)
            .with_upstream_queue(1)
            .with_upstream_queue_timeout(Duration::ZERO),
    )
    .await;
    let address = address(&proxy);
    let held = holding(&proxy).await;
    let (refused, queued) = one_queued_one_refused(&address).await;
    assert_busy(&refused);
    // The waiting client goes away: its request is logged (status 499, nothing was sent)
    // once the proxy has dropped it, and its place is free.
    drop(queued);
    let line = logs
        .wait_for(&["status=499", "outcome=client_closed"])
        .await;
    assert!(line.contains("queued_ms="), "{line}");
    // Two more requests: one takes the free place, the other finds the queue full (were
    // the place still taken, both would).
    let (refused, mut queued) = one_queued_one_refused(&address).await;
    assert_busy(&refused);
    release.notify_one();
    let text = tokio::time::timeout(HANG_GUARD, held.text())
        .await
        .unwrap()
        .unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let served = answer(&mut queued).await;
    assert!(served.starts_with("HTTP/1.1 200 "), "{served}");
    // The request that went away never reached the upstream.
    assert_eq!(upstream.bodies().len(), 2);
}
