//! `tam serve` as a process: it listens where `--listen` says, answers a chat request with
//! `tools` by asking the scripted upstream in the chosen protocol and returning the call
//! as a native tool call, requires client keys when given them, applies its limits,
//! logs each request without keys or prompts, warns when it is open beyond loopback, and
//! refuses bad flags with status 2 and unusable keys with status 1.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{LINE_WAIT, Serving, request, run, serve_with};
use tam_testkit::upstream::{Reply, Request, Server, text_stream};

/// Starts `tam serve --listen 127.0.0.1:0 args…`; the server and its address.
fn serve(args: &[&str]) -> (Serving, String) {
    serve_with(&["--listen", "127.0.0.1:0"], args, &[])
}

/// `POST /v1/chat/completions` with `body`, over a plain socket; the status and the body.
fn post(address: &str, body: &Value) -> (u16, Value) {
    request(address, "POST", "/v1/chat/completions", &[], Some(body))
}

fn weather_request() -> Value {
    json!({
        "model": "m",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}],
    })
}

/// ACTION without `--protocol` (the default: the protocol small models called tools right
/// in most often, e2e/README.md), TAM with `--protocol tam`: the prompt asks for the
/// protocol's block and the reply's block becomes a native tool call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_turns_a_block_into_a_native_tool_call_in_action_by_default() {
    let action =
        "Looking.\n<ACTION><get_weather><city>Paris</city><days>2</days></get_weather></ACTION>";
    let tam = "Looking.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\ndays:「始」2「末」\n<|[END_TOOL]|>";
    for (flags, reply, marker) in [
        (&[][..], action, "<ACTION>"),
        (&["--protocol", "tam"][..], tam, "<|[REQUEST_TOOL]|>"),
    ] {
        let upstream =
            Server::start(vec![Reply::events(&text_stream(reply, 6, "stop", "\n"))]).await;
        let mut args = vec!["--upstream".to_owned(), upstream.base_url.clone()];
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        let (status, body) = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (_server, address) = serve(&args);
            post(&address, &weather_request())
        })
        .await
        .unwrap();
        assert_eq!(status, 200, "{flags:?}: {body}");
        let message = &body["choices"][0]["message"];
        assert_eq!(message["content"], "Looking.\n", "{flags:?}");
        assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
        let arguments: Value = serde_json::from_str(
            message["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(arguments, json!({"city": "Paris", "days": 2}), "{flags:?}");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        let sent = &upstream.requests()[0].body;
        assert!(sent.get("tools").is_none());
        let system = sent["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains(marker), "{flags:?}: {system}");
    }
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

/// A file in the system's temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!("tam-serve-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const CALL: &str =
    "Looking.\n<ACTION><get_weather><city>Paris</city><days>2</days></get_weather></ACTION>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_requires_a_client_key_and_logs_requests_without_keys_or_prompts() {
    // The second reply is prose with usage (a turn that ends at a call has none).
    let mut prose = text_stream("It is sunny.", 6, "stop", "\n");
    prose.insert(
        prose.len() - 1,
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18}}\n\n".to_owned(),
    );
    let upstream = Server::start(vec![
        Reply::events(&text_stream(CALL, 6, "stop", "\n")),
        Reply::events(&prose),
    ])
    .await;
    let base = upstream.base_url.clone();
    let keys = TempFile::new("keys", "# the team's keys\nfile-key-1\n\n");
    let keys_path = keys.path().to_owned();
    let lines = tokio::task::spawn_blocking(move || {
        let (server, address) = serve_with(
            &["--listen", "127.0.0.1:0"],
            &[
                "--upstream",
                &base,
                "--protocol",
                "action",
                "--api-key-env",
                "TAM_SERVE_TEST_UPSTREAM_KEY",
                "--client-key-env",
                "TAM_SERVE_TEST_CLIENT_KEYS",
                "--client-key-file",
                &keys_path,
            ],
            &[
                ("TAM_SERVE_TEST_UPSTREAM_KEY", "sk-upstream-secret"),
                ("TAM_SERVE_TEST_CLIENT_KEYS", "env-key-1, env-key-2"),
            ],
        );
        let chat = weather_request();
        let path = "/v1/chat/completions";
        for headers in [&[][..], &["authorization: Bearer env-key-3"]] {
            let (status, body) = request(&address, "POST", path, headers, Some(&chat));
            assert_eq!(status, 401, "{body}");
            assert_eq!(body["error"]["code"], "invalid_api_key");
        }
        let (status, _) = request(&address, "GET", "/v1/models", &[], None);
        assert_eq!(status, 401);
        for (key, finish) in [("env-key-2", "tool_calls"), ("file-key-1", "stop")] {
            let header = format!("authorization: Bearer {key}");
            let (status, body) = request(&address, "POST", path, &[&header], Some(&chat));
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["choices"][0]["finish_reason"], finish);
        }
        let (status, body) = request(&address, "GET", "/health", &[], None);
        assert_eq!((status, body), (200, json!({"status": "ok"})));
        // One line per request (not /health), the last one written once it was answered.
        server.wait_for_line(|l| l.contains("status=200") && l.contains("req_5"));
        server.lines()
    })
    .await
    .unwrap();
    // The upstream got the operator's key, never a client's.
    for request in upstream.requests() {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer sk-upstream-secret")
        );
    }
    let logs: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("tam_proxy::request"))
        .collect();
    assert_eq!(logs.len(), 5, "{lines:#?}");
    for (log, status) in logs.iter().zip(["401", "401", "401", "200", "200"]) {
        assert!(log.contains(" INFO "), "{log}");
        assert!(log.contains(&format!("status={status}")), "{log}");
        assert!(log.contains("request_id=req_"), "{log}");
        assert!(log.contains("latency_ms="), "{log}");
    }
    for (log, fields) in logs[3..].iter().zip([
        &["calls=1", "outcome=tool_calls"][..],
        &[
            "calls=0",
            "outcome=stop",
            "prompt_tokens=11",
            "completion_tokens=7",
        ],
    ]) {
        for field in ["method=POST", "path=/v1/chat/completions", "model=m"]
            .iter()
            .chain(fields)
        {
            assert!(log.contains(field), "{field}: {log}");
        }
    }
    assert!(logs[0].contains("outcome=invalid_api_key"), "{}", logs[0]);
    for secret in [
        "env-key",
        "file-key",
        "sk-upstream-secret",
        "Weather in Paris",
        "warning",
    ] {
        assert!(
            lines.iter().all(|l| !l.contains(secret)),
            "{secret}: {lines:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_warns_when_it_is_open_beyond_loopback() {
    let upstream = Server::start(vec![]).await;
    let base = upstream.base_url.clone();
    tokio::task::spawn_blocking(move || {
        let (server, address) = serve_with(&["--listen", "0.0.0.0:0"], &["--upstream", &base], &[]);
        let warning = server.wait_for_line(|l| l.contains("warning"));
        assert!(warning.contains("--client-key-env"), "{warning}");
        let port = address.rsplit(':').next().unwrap();
        let (status, _) = request(&format!("127.0.0.1:{port}"), "GET", "/health", &[], None);
        assert_eq!(status, 200);

        // With a key, no warning: the first request's log line comes after none.
        let (server, address) = serve_with(
            &["--listen", "0.0.0.0:0"],
            &[
                "--upstream",
                &base,
                "--client-key-env",
                "TAM_SERVE_TEST_KEYS",
            ],
            &[("TAM_SERVE_TEST_KEYS", "k")],
        );
        let port = address.rsplit(':').next().unwrap();
        let (status, _) = request(&format!("127.0.0.1:{port}"), "GET", "/v1/models", &[], None);
        assert_eq!(status, 401);
        server.wait_for_line(|l| l.contains("status=401"));
        assert!(
            server.lines().iter().all(|l| !l.contains("warning")),
            "{:?}",
            server.lines()
        );
    })
    .await
    .unwrap();
}

/// Reads what the server answers on `socket` until it closes it (a reset also ends it).
fn answer(mut socket: TcpStream) -> String {
    socket.set_read_timeout(Some(LINE_WAIT)).unwrap();
    let mut bytes = Vec::new();
    let _ = socket.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A chat request on a new connection (closed after its answer), its answer not read.
fn send_chat(address: &str) -> TcpStream {
    let body = weather_request().to_string();
    let mut socket = TcpStream::connect(address).unwrap();
    write!(
        socket,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    socket
}

/// Waits until the upstream has read `count` requests.
fn wait_for_upstream(requests: &Mutex<Vec<Request>>, count: usize) {
    let start = Instant::now();
    while requests.lock().unwrap().len() < count {
        assert!(
            start.elapsed() < LINE_WAIT,
            "the upstream never got the request"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_limits_are_flags() {
    // An upstream that answers its header and then nothing for ten minutes.
    let stalled = Reply::Stream {
        pieces: vec![(Duration::from_secs(600), b"data: {}\n\n".to_vec())],
        drop: false,
    };
    let upstream = Server::start(vec![stalled; 4]).await;
    let base = upstream.base_url.clone();
    let requests = upstream.requests.clone();
    tokio::task::spawn_blocking(move || {
        let (server, address) = serve(&[
            "--upstream",
            &base,
            "--max-connections",
            "1",
            "--header-timeout",
            "0",
        ]);
        assert!(
            server.lines()[0].contains("connection cap 1)"),
            "{:?}",
            server.lines()
        );
        // A half-sent request serves nothing: a new connection closes it to make room.
        let mut holder = TcpStream::connect(&address).unwrap();
        holder
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\n")
            .unwrap();
        let (status, _) = request(&address, "GET", "/health", &[], None);
        assert_eq!(status, 200);
        assert_eq!(answer(holder), "");
        // A connection serving a request is never closed for room: a new one is refused.
        let busy = send_chat(&address);
        wait_for_upstream(&requests, 1);
        let mut refused = TcpStream::connect(&address).unwrap();
        let _ = refused.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n");
        let refused = answer(refused);
        assert!(
            refused.is_empty() || refused.contains("too_many_connections"),
            "{refused}"
        );
        drop(busy);
        drop(server);

        // One upstream slot and a wait of 0.2 s: a request waits, then gets a 503.
        let (_server, address) = serve(&[
            "--upstream",
            &base,
            "--max-upstream-concurrency",
            "1",
            "--upstream-queue-timeout",
            "0.2",
        ]);
        let _busy = send_chat(&address);
        wait_for_upstream(&requests, 2);
        let refused = answer(send_chat(&address));
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(refused.contains("server_busy"), "{refused}");
        assert!(refused.contains("no upstream slot came free"), "{refused}");

        // No queue: a 503 at once.
        let (_server, address) = serve(&[
            "--upstream",
            &base,
            "--max-upstream-concurrency",
            "1",
            "--upstream-queue",
            "0",
        ]);
        let _busy = send_chat(&address);
        wait_for_upstream(&requests, 3);
        let refused = answer(send_chat(&address));
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(refused.contains("the queue is full"), "{refused}");

        // The upstream time-out: a 504.
        let (_server, address) = serve(&["--upstream", &base, "--upstream-timeout", "0.3"]);
        let served = answer(send_chat(&address));
        assert!(served.starts_with("HTTP/1.1 504"), "{served}");
        assert!(served.contains("upstream_timeout"), "{served}");

        // A header that does not come in time: the connection is closed unanswered.
        let (_server, address) = serve(&["--upstream", &base, "--header-timeout", "0.2"]);
        let mut slow = TcpStream::connect(&address).unwrap();
        slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\n")
            .unwrap();
        assert_eq!(answer(slow), "");
    })
    .await
    .unwrap();
}

#[test]
fn serve_refuses_bad_limits_and_unusable_client_keys() {
    fn serve_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["serve", "--upstream", "http://127.0.0.1:9/v1"];
        args.extend_from_slice(extra);
        args
    }
    for bad in [
        &["--header-timeout", "-1"][..],
        &["--body-timeout", "soon"],
        &["--upstream-timeout", "inf"],
        &["--max-connections", "-3"],
        &["--max-upstream-concurrency", "many"],
        &["--upstream-queue", "-1"],
        &["--upstream-queue-timeout", "soon"],
    ] {
        assert_eq!(run(&serve_args(bad), b"").code, Some(2), "{bad:?}");
    }
    let unset = run(
        &serve_args(&["--client-key-env", "TAM_SERVE_TEST_UNSET_CLIENT_KEYS"]),
        b"",
    );
    assert_eq!(unset.code, Some(1));
    assert!(
        unset.stderr.contains("TAM_SERVE_TEST_UNSET_CLIENT_KEYS"),
        "{}",
        unset.stderr
    );
    let missing = run(
        &serve_args(&["--client-key-file", "/nonexistent/tam-keys"]),
        b"",
    );
    assert_eq!(missing.code, Some(1));
    assert!(
        missing.stderr.contains("/nonexistent/tam-keys"),
        "{}",
        missing.stderr
    );
    let empty = TempFile::new("empty-keys", "# no key yet\n\n");
    let none = run(&serve_args(&["--client-key-file", empty.path()]), b"");
    assert_eq!(none.code, Some(1));
    assert!(none.stderr.contains("no client key"), "{}", none.stderr);
    let spaced = TempFile::new("spaced-keys", "good-key\nsecret with spaces\n");
    let invalid = run(&serve_args(&["--client-key-file", spaced.path()]), b"");
    assert_eq!(invalid.code, Some(1));
    assert!(invalid.stderr.contains("number 2"), "{}", invalid.stderr);
    assert!(!invalid.stderr.contains("secret"), "{}", invalid.stderr);
}

/// `--log-prompts` logs each request's messages as the upstream gets them (the user's
/// words and the tool prompt), with the request id; never a key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_prompts_logs_the_messages_the_upstream_gets() {
    let upstream =
        Server::start(vec![Reply::events(&text_stream("Sunny.", 6, "stop", "\n"))]).await;
    let base = upstream.base_url.clone();
    let lines = tokio::task::spawn_blocking(move || {
        let (server, address) = serve_with(
            &["--listen", "127.0.0.1:0"],
            &[
                "--upstream",
                &base,
                "--log-prompts",
                "--api-key-env",
                "TAM_SERVE_TEST_PROMPT_KEY",
            ],
            &[("TAM_SERVE_TEST_PROMPT_KEY", "sk-prompt-secret")],
        );
        let chat = weather_request();
        let (status, body) = request(&address, "POST", "/v1/chat/completions", &[], Some(&chat));
        assert_eq!(status, 200, "{body}");
        server.wait_for_line(|l| l.contains("tam_proxy::request") && l.contains("status=200"));
        server.lines()
    })
    .await
    .unwrap();
    let prompts: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("tam_proxy::prompt"))
        .collect();
    assert_eq!(prompts.len(), 1, "{lines:#?}");
    assert!(prompts[0].contains("Weather in Paris"), "{}", prompts[0]);
    assert!(prompts[0].contains("get_weather"), "{}", prompts[0]);
    assert!(prompts[0].contains("request_id=req_"), "{}", prompts[0]);
    assert!(
        lines.iter().all(|l| !l.contains("sk-prompt-secret")),
        "{lines:#?}"
    );
}

#[test]
fn the_strict_call_flags_are_parsed_and_explained() {
    for command in ["serve", "run"] {
        let help = support::run(&[command, "--help"], b"");
        assert_eq!(help.code, Some(0), "{}", help.stderr);
        for part in [
            "--upstream-kind",
            "--no-strict",
            "llama-cpp",
            "Strict calls",
        ] {
            assert!(
                help.stdout.contains(part),
                "{command}: {part}: {}",
                help.stdout
            );
        }
    }
    let bad = support::run(
        &[
            "serve",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--upstream-kind",
            "tgi",
        ],
        b"",
    );
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("unknown upstream kind 'tgi'"),
        "{}",
        bad.stderr
    );
}
