//! `tam serve` as a process: it listens where `--listen` says, answers a chat request with
//! `tools` by asking the scripted upstream in the chosen protocol and returning the call
//! as a native tool call, and refuses bad flags with status 2.

// One scripted server for the OpenAI-compatible tests of both crates.
#[path = "../../tool-dispatch/tests/support/openai_server.rs"]
mod openai_server;
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;

use openai_server::{Reply, Server, text_stream};
use serde_json::{Value, json};
use support::{run, spawn};

/// Kills the server when the test ends, whatever happens.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `tam serve --listen 127.0.0.1:0 args…`; the server and its address.
fn serve(args: &[&str]) -> (Serving, String) {
    let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut child = spawn(&all);
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).unwrap();
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (Serving(child), address)
}

/// `POST /v1/chat/completions` with `body`, over a plain socket; the status and the body.
fn post(address: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut socket = TcpStream::connect(address).unwrap();
    write!(
        socket,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(body).unwrap())
}

fn weather_request() -> Value {
    json!({
        "model": "m",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_turns_an_action_block_into_a_native_tool_call() {
    let reply =
        "Looking.\n<ACTION><get_weather><city>Paris</city><days>2</days></get_weather></ACTION>";
    let upstream = Server::start(vec![Reply::events(&text_stream(reply, 6, "stop", "\n"))]).await;
    let base = upstream.base_url.clone();
    let (status, body) = tokio::task::spawn_blocking(move || {
        let (_server, address) = serve(&["--upstream", &base, "--protocol", "action"]);
        post(&address, &weather_request())
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let message = &body["choices"][0]["message"];
    assert_eq!(message["content"], "Looking.\n");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
    let arguments: Value = serde_json::from_str(
        message["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(arguments, json!({"city": "Paris", "days": 2}));
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let sent = &upstream.requests()[0].body;
    assert!(sent.get("tools").is_none());
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<ACTION>"), "{system}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reports_an_unreachable_upstream_as_a_502() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let (status, body) = tokio::task::spawn_blocking(move || {
        let (_server, address) = serve(&["--upstream", &base]);
        post(&address, &weather_request())
    })
    .await
    .unwrap();
    assert_eq!(status, 502);
    assert_eq!(body["error"]["code"], "upstream_unreachable");
}

#[test]
fn serve_needs_an_upstream_and_a_known_protocol() {
    assert_eq!(run(&["serve"], b"").code, Some(2));
    assert_eq!(
        run(
            &["serve", "--upstream", "http://x/v1", "--protocol", "json"],
            b""
        )
        .code,
        Some(2)
    );
    assert_eq!(
        run(
            &["serve", "--upstream", "http://x/v1", "--listen", "nowhere"],
            b""
        )
        .code,
        Some(2)
    );
    let unset = run(
        &[
            "serve",
            "--upstream",
            "http://x/v1",
            "--api-key-env",
            "TAM_SERVE_TEST_UNSET_KEY",
        ],
        b"",
    );
    assert_eq!(unset.code, Some(1));
    assert!(
        unset.stderr.contains("TAM_SERVE_TEST_UNSET_KEY"),
        "{}",
        unset.stderr
    );
}
