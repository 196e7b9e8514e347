//! Measures the proxy's memory on Linux: its resident set while 200 clients stream at
//! once, and per idle connection.
//!
//! ```text
//! cargo run --release -p tam-proxy --example memory [-- STREAMS IDLE]
//! ```
//!
//! The proxy runs alone in a child process (this example started again with `--proxy`),
//! [`tam_proxy::serve`] with the default configuration after
//! [`tam_proxy::raise_open_file_limit`], as `tam serve` runs it; this process is the
//! upstream (a scripted OpenAI-compatible server whose every reply streams 100 deltas,
//! 5 ms apart, naming its request) and the clients, so the figures are the proxy's own.
//! It reads the child's `VmRSS` and `VmHWM` from `/proc/PID/status`:
//!
//! 1. after one request (the baseline);
//! 2. while STREAMS clients (200 by default) stream at once, each checking that it got
//!    its own reply whole, with the default 64 upstream slots (the others wait in the
//!    queue) and again with a proxy of as many slots as clients;
//! 3. with IDLE connections (9 000 by default) that sent 15 KiB of a header and then
//!    nothing (the most a connection's read buffer takes is 16 KiB), and with as many
//!    that sent 30 bytes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Deltas per reply and the pause between them: each stream lasts about half a second.
const DELTAS: usize = 100;
const PAUSE: Duration = Duration::from_millis(5);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--proxy") {
        proxy(
            &args[2],
            args[3].parse().expect("a number of upstream slots"),
        );
        return;
    }
    let streams: usize = args.get(1).map_or(200, |n| n.parse().expect("STREAMS"));
    let idle: usize = args.get(2).map_or(9000, |n| n.parse().expect("IDLE"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(measure(streams, idle));
}

/// The child: the proxy on 127.0.0.1, its address on standard output, until standard
/// input closes.
fn proxy(upstream: &str, slots: usize) {
    let limit = tam_proxy::raise_open_file_limit().expect("the open-file limit");
    let config = tam_proxy::ProxyConfig::new(tam_model::openai::OpenAiConfig::new(upstream, ""))
        .with_max_upstream_concurrency(slots)
        // The idle connections stay open while they are counted.
        .with_header_timeout(Duration::ZERO);
    eprintln!(
        "proxy: open-file limit {limit}, connection cap {}",
        config.max_connections
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
        });
        let shutdown = async {
            let _ = stdin_closed.await;
        };
        tam_proxy::serve(listener, config, shutdown).await.unwrap();
    });
}

/// A running proxy child.
struct Proxy {
    child: Child,
    address: String,
}

impl Proxy {
    fn start(upstream: &str, slots: usize) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--proxy", upstream, &slots.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut address = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        Self {
            child,
            address: address.trim().to_owned(),
        }
    }

    /// `VmRSS` and `VmHWM`, in KiB.
    fn memory(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status (Linux)");
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// The reply to request `n`: its deltas.
fn deltas(n: &str) -> Vec<String> {
    (0..DELTAS).map(|i| format!("{n}.{i} ")).collect()
}

async fn upstream_chat(body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("?")
        .to_owned();
    let chunk = |delta: Value, finish: Option<&str>| {
        let chunk = json!({"id": "up", "object": "chat.completion.chunk", "created": 1,
            "model": "up", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut events: Vec<String> = deltas(&n)
        .iter()
        .map(|d| chunk(json!({"content": d}), None))
        .collect();
    events.push(chunk(json!({}), Some("stop")));
    events.push("data: [DONE]\n\n".to_owned());
    let stream = futures_util::stream::iter(events).then(|event| async move {
        tokio::time::sleep(PAUSE).await;
        Ok::<_, std::convert::Infallible>(Bytes::from(event))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// One streaming client: true when it got exactly its own reply.
async fn client(http: reqwest::Client, base: String, n: usize) -> bool {
    let body = json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": n.to_string()}]});
    let Ok(response) = http
        .post(format!("http://{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
    else {
        return false;
    };
    let Ok(text) = response.text().await else {
        return false;
    };
    let mut content = String::new();
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data: ")
            && let Ok(chunk) = serde_json::from_str::<Value>(data)
            && let Some(piece) = chunk["choices"][0]["delta"]["content"].as_str()
        {
            content.push_str(piece);
        }
    }
    content == deltas(&n.to_string()).concat()
}

/// STREAMS clients at once through `proxy`, sampling its resident set; the peak seen.
async fn streams(proxy: &Proxy, count: usize) -> u64 {
    let http = reqwest::Client::new();
    let tasks: Vec<_> = (0..count)
        .map(|n| tokio::spawn(client(http.clone(), proxy.address.clone(), n)))
        .collect();
    let mut peak = 0;
    let start = Instant::now();
    while !tasks.iter().all(|t| t.is_finished()) {
        peak = peak.max(proxy.memory().0);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut right = 0;
    for task in tasks {
        right += usize::from(task.await.unwrap());
    }
    println!(
        "  {count} streams: {right} got their own reply whole, in {:?}",
        start.elapsed()
    );
    assert_eq!(right, count, "a client did not get its own reply");
    peak
}

/// IDLE connections to `proxy`, each having sent `header` and nothing more; the
/// resident set with them open, in KiB.
async fn idle(proxy: &Proxy, count: usize, header: &[u8]) -> u64 {
    let mut open = Vec::with_capacity(count);
    for _ in 0..count {
        let mut socket = TcpStream::connect(&proxy.address).await.unwrap();
        socket.write_all(header).await.unwrap();
        open.push(socket);
    }
    // Let the proxy read what they sent.
    let mut rss = proxy.memory().0;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = proxy.memory().0;
        if now <= rss {
            break now.max(rss);
        }
        rss = now;
    }
}

async fn measure(streams_count: usize, idle_count: usize) {
    let limit = tam_proxy::raise_open_file_limit().expect("the open-file limit");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = Router::new().route("/v1/chat/completions", post(upstream_chat));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    println!("this process: open-file limit {limit}");

    for slots in [tam_proxy::DEFAULT_MAX_UPSTREAM_CONCURRENCY, streams_count] {
        let proxy = Proxy::start(&upstream, slots);
        streams(&proxy, 1).await;
        let (baseline, _) = proxy.memory();
        println!(
            "proxy with {slots} upstream slots: after one request {}",
            mib(baseline)
        );
        let peak = streams(&proxy, streams_count).await;
        let (rss, hwm) = proxy.memory();
        println!(
            "  while streaming: peak sampled {}, VmHWM {}; after: {}",
            mib(peak),
            mib(hwm),
            mib(rss)
        );
    }

    let proxy = Proxy::start(&upstream, tam_proxy::DEFAULT_MAX_UPSTREAM_CONCURRENCY);
    streams(&proxy, 1).await;
    let (baseline, _) = proxy.memory();
    let short = idle(&proxy, idle_count, b"GET /health HTTP/1.1\r\nhost: x\r\n").await;
    println!(
        "{idle_count} connections that sent 30 bytes of a header: {} ({:.1} KiB each)",
        mib(short),
        (short.saturating_sub(baseline)) as f64 / idle_count as f64
    );
    drop(proxy);
    let proxy = Proxy::start(&upstream, tam_proxy::DEFAULT_MAX_UPSTREAM_CONCURRENCY);
    streams(&proxy, 1).await;
    let (baseline, _) = proxy.memory();
    let mut header = b"GET /health HTTP/1.1\r\nhost: x\r\nx-filler: ".to_vec();
    header.resize(15 << 10, b'a');
    let long = idle(&proxy, idle_count, &header).await;
    println!(
        "{idle_count} connections that sent 15 KiB of a header: {} ({:.1} KiB each)",
        mib(long),
        (long.saturating_sub(baseline)) as f64 / idle_count as f64
    );
}
