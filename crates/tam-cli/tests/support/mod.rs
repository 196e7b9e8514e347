//! Shared by the tests that run the `tam` binary: running it with a time limit, feeding
//! its standard input whole or in pieces, reading and checking its NDJSON, and running
//! `tam serve` as a server.
#![allow(dead_code)] // each test file uses a part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// The binary under test.
pub const TAM: &str = env!("CARGO_BIN_EXE_tam");

/// Longest a run may take before the test fails: a bound against a hang (a bug), far
/// above what any run takes on a loaded machine, never a speed goal.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// Longest a test waits for an output line it expects: a bound against a hang, as above.
pub const LINE_WAIT: Duration = Duration::from_secs(120);

/// How a run ended.
#[derive(Debug)]
pub struct Output {
    /// The exit status (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// `tests/<relative>` in this crate.
pub fn test_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(relative)
}

/// The path of this package's example `name`. `cargo test` builds every example beside the
/// test binaries (`target/<profile>/examples/`); a test run alone (`--test NAME`) does not,
/// so the message says what to build.
pub fn example_exe(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let path = profile
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is not built: run `cargo test` (which builds the examples) or \
         `cargo build -p tam-cli --example {name}` first",
        path.display()
    );
    path
}

/// Starts `tam args…` with piped standard streams.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(TAM)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tam binary starts")
}

/// Runs `tam args…` with `stdin` written whole.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    run_chunked(args, stdin, stdin.len().max(1), Duration::ZERO)
}

/// Runs `tam args…` with `stdin` written in pieces of `chunk` bytes, `pause` apart.
pub fn run_chunked(args: &[&str], stdin: &[u8], chunk: usize, pause: Duration) -> Output {
    let mut child = spawn(args);
    let mut input = child.stdin.take().unwrap();
    let pieces: Vec<Vec<u8>> = stdin.chunks(chunk).map(<[u8]>::to_vec).collect();
    let writer = thread::spawn(move || {
        for piece in pieces {
            // The binary may stop reading early (`data: [DONE]`): a closed pipe is fine.
            if input
                .write_all(&piece)
                .and_then(|()| input.flush())
                .is_err()
            {
                return;
            }
            if !pause.is_zero() {
                thread::sleep(pause);
            }
        }
    });
    let output = finish(child);
    writer.join().unwrap();
    output
}

/// Waits for `child` (killing it past the time limit) and collects its output.
pub fn finish(mut child: Child) -> Output {
    // A test may have taken a stream already (to close it early).
    let out = read_in_background(child.stdout.take());
    let err = read_in_background(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            child.kill().unwrap();
            panic!("tam ran longer than {TIME_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    Output {
        code: status.code(),
        stdout: String::from_utf8(out.join().unwrap()).expect("stdout is UTF-8"),
        stderr: String::from_utf8(err.join().unwrap()).expect("stderr is UTF-8"),
    }
}

fn read_in_background(stream: Option<impl Read + Send + 'static>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(mut stream) = stream {
            stream.read_to_end(&mut text).unwrap();
        }
        text
    })
}

/// The JSON objects of NDJSON output, one per line; panics on a line that is not one.
pub fn ndjson(stdout: &str) -> Vec<Value> {
    assert!(
        stdout.is_empty() || stdout.ends_with('\n'),
        "the last line is complete"
    );
    stdout
        .lines()
        .map(|line| {
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert!(value.is_object(), "not an object: {line}");
            value
        })
        .collect()
}

/// `lines` with adjacent text lines joined (text may be split anywhere), and
/// adjacent `param_text` lines of one protocol joined (their span from the first's start
/// to the last's end).
pub fn merge_text(lines: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for line in lines {
        if let Some(last) = merged.last_mut() {
            if let (Some(before), Some(text)) = (text_of(last), text_of(&line)) {
                let joined = format!("{before}{text}");
                last["text"] = Value::String(joined);
                continue;
            }
            if let (Some(before), Some(text)) = (reasoning_of(last), reasoning_of(&line)) {
                let joined = format!("{before}{text}");
                last["text"] = Value::String(joined);
                continue;
            }
            if let (Some(before), Some(text)) = (piece_of(last), piece_of(&line))
                && last["protocol"] == line["protocol"]
            {
                let joined = format!("{before}{text}");
                last["text"] = Value::String(joined);
                last["span"][1] = line["span"][1].clone();
                continue;
            }
        }
        merged.push(line);
    }
    merged
}

fn text_of(line: &Value) -> Option<&str> {
    (line["type"] == "text")
        .then(|| line["text"].as_str())
        .flatten()
}

fn reasoning_of(line: &Value) -> Option<&str> {
    (line["type"] == "reasoning")
        .then(|| line["text"].as_str())
        .flatten()
}

fn piece_of(line: &Value) -> Option<&str> {
    (line["type"] == "param_text")
        .then(|| line["text"].as_str())
        .flatten()
}

/// Which output types a run may write besides `text`, `tool_calls` and `diagnostic`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowed {
    /// `block_start`, `command_seen` and argument lines (`--progress`).
    pub progress: bool,
    /// A `raw` field in diagnostics (`--with-raw`).
    pub raw: bool,
}

impl Allowed {
    /// What the command-line `args` allow.
    pub fn by_flags(args: &[&str]) -> Self {
        Allowed {
            progress: args.contains(&"--progress"),
            raw: args.contains(&"--with-raw"),
        }
    }
}

fn keys(object: &Map<String, Value>) -> Vec<&str> {
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

fn check_span(span: &Value, context: &Value) {
    let pair = span
        .as_array()
        .unwrap_or_else(|| panic!("span is not an array: {context}"));
    assert_eq!(pair.len(), 2, "span has two offsets: {context}");
    let (start, end) = (pair[0].as_u64(), pair[1].as_u64());
    assert!(
        start.is_some() && end.is_some(),
        "span offsets are integers: {context}"
    );
    assert!(start <= end, "span start <= end: {context}");
}

fn check_diagnostic(diagnostic: &Value, type_field: bool, allowed: Allowed) {
    let object = diagnostic
        .as_object()
        .unwrap_or_else(|| panic!("diagnostic is an object: {diagnostic}"));
    let mut expected = vec!["code", "message", "severity", "span"];
    if type_field {
        expected.push("type");
    }
    if allowed.raw && object.contains_key("raw") {
        assert!(object["raw"].is_string(), "raw is text: {diagnostic}");
        expected.push("raw");
    }
    expected.sort_unstable();
    assert_eq!(keys(object), expected, "diagnostic fields: {diagnostic}");
    assert!(
        matches!(object["severity"].as_str(), Some("error" | "warning")),
        "severity: {diagnostic}"
    );
    let code = object["code"].as_str().expect("code is text");
    assert!(
        !code.is_empty()
            && code
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "code is snake_case: {diagnostic}"
    );
    assert!(
        object["message"].as_str().is_some_and(|m| !m.is_empty()),
        "message: {diagnostic}"
    );
    check_span(&object["span"], diagnostic);
}

/// Checks one output line field by field against the `tam decode` line format.
pub fn check_line(line: &Value, allowed: Allowed) {
    let object = line.as_object().expect("a line is an object");
    match object["type"].as_str() {
        Some("text" | "reasoning") => {
            assert_eq!(keys(object), ["text", "type"], "text fields: {line}");
            assert!(object["text"].is_string(), "text is a string: {line}");
        }
        Some("reasoning_start" | "reasoning_end") if allowed.progress => {
            assert_eq!(
                keys(object),
                ["span", "type"],
                "reasoning tag fields: {line}"
            );
            check_span(&object["span"], line);
        }
        Some("tool_calls") => {
            assert_eq!(
                keys(object),
                ["calls", "diagnostics", "protocol", "span", "type"],
                "tool_calls fields: {line}"
            );
            let protocol = object["protocol"].as_str();
            assert!(
                matches!(protocol, Some("tam" | "action")),
                "protocol: {line}"
            );
            check_span(&object["span"], line);
            for call in object["calls"].as_array().expect("calls is an array") {
                let call = call.as_object().expect("a call is an object");
                assert_eq!(keys(call), ["args", "tool"], "call fields: {line}");
                assert!(
                    call["tool"].as_str().is_some_and(|t| !t.is_empty()),
                    "tool: {line}"
                );
                let args = call["args"].as_object().expect("args is an object");
                for value in args.values() {
                    if protocol == Some("tam") {
                        assert!(value.is_string(), "TAM values are strings: {line}");
                    } else {
                        assert!(
                            value.is_string() || value.is_array() || value.is_object(),
                            "ACTION values are strings, arrays or objects: {line}"
                        );
                    }
                }
            }
            for diagnostic in object["diagnostics"]
                .as_array()
                .expect("diagnostics is an array")
            {
                check_diagnostic(diagnostic, false, allowed);
            }
        }
        Some("diagnostic") => check_diagnostic(line, true, allowed),
        Some("block_start") if allowed.progress => {
            assert_eq!(
                keys(object),
                ["protocol", "span", "type"],
                "block_start fields: {line}"
            );
            check_span(&object["span"], line);
        }
        Some("command_seen") if allowed.progress => {
            assert_eq!(
                keys(object),
                ["call", "protocol", "span", "tool", "type"],
                "command_seen fields: {line}"
            );
            assert!(
                object["call"].is_u64() && object["tool"].is_string(),
                "{line}"
            );
            check_span(&object["span"], line);
        }
        Some(kind @ ("call_start" | "param_start" | "param_text" | "param_end" | "call_end"))
            if allowed.progress =>
        {
            let expected: &[&str] = match kind {
                "call_start" => &["index", "protocol", "span", "tool", "type"],
                "param_start" => &["key", "protocol", "span", "type"],
                "param_text" => &["protocol", "span", "text", "type"],
                "param_end" => &["protocol", "span", "type"],
                _ => &["index", "protocol", "span", "type"],
            };
            assert_eq!(keys(object), expected, "{kind} fields: {line}");
            assert!(
                matches!(object["protocol"].as_str(), Some("tam" | "action")),
                "protocol: {line}"
            );
            check_span(&object["span"], line);
        }
        _ => panic!("unexpected line type: {line}"),
    }
}

/// A `tam` process fed by hand, whose output lines are read as they come.
pub struct LiveRun {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    reader: Option<thread::JoinHandle<()>>,
}

impl LiveRun {
    /// Starts `tam args…`.
    pub fn start(args: &[&str]) -> Self {
        let mut child = spawn(args);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        let reader = thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if sender.send(line.unwrap()).is_err() {
                    return;
                }
            }
        });
        LiveRun {
            child,
            stdin,
            lines,
            reader: Some(reader),
        }
    }

    /// Writes `input` to the process and flushes; standard input stays open.
    pub fn write(&mut self, input: &[u8]) {
        let stdin = self.stdin.as_mut().expect("standard input is open");
        stdin.write_all(input).unwrap();
        stdin.flush().unwrap();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The next output line, waiting at most `limit`; `None` when none came.
    pub fn next_line(&mut self, limit: Duration) -> Option<String> {
        self.lines.recv_timeout(limit).ok()
    }

    /// Reads output lines until one of `type` arrives ([`LINE_WAIT`] at most); returns the
    /// lines before it and the line itself.
    pub fn read_until_type(&mut self, wanted: &str) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.next_line(left).unwrap_or_else(|| {
                panic!("no '{wanted}' line within {LINE_WAIT:?}; got {before:?}")
            });
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["type"] == wanted {
                return (before, value);
            }
            before.push(value);
        }
    }

    /// Closes standard input, waits for the exit, and returns the exit status and the
    /// output lines not read yet.
    pub fn close_lines(mut self) -> (Option<i32>, Vec<String>) {
        drop(self.stdin.take());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < TIME_LIMIT, "tam did not exit");
            thread::sleep(Duration::from_millis(5));
        };
        self.reader.take().unwrap().join().unwrap();
        (status.code(), self.lines.try_iter().collect())
    }

    /// [`LiveRun::close_lines`] for NDJSON output.
    pub fn close(self) -> (Option<i32>, Vec<Value>) {
        let (code, lines) = self.close_lines();
        let values = lines
            .iter()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect();
        (code, values)
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        // A failed assertion must not leave the process behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server, killed when the test ends whatever happens, and the lines of its standard
/// error so far (read all along, so the server never writes to a closed pipe).
pub struct Serving {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    /// The lines of standard error so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits for a line of standard error that `wanted` accepts.
    pub fn wait_for_line(&self, wanted: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| wanted(l)) {
                return line;
            }
            assert!(
                start.elapsed() < LINE_WAIT,
                "no such line in {:?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Starts `tam serve listen… args…` with the environment variables `env`.
pub fn serve_with(listen: &[&str], args: &[&str], env: &[(&str, &str)]) -> (Serving, String) {
    let mut child = Command::new(TAM)
        .arg("serve")
        .args(listen)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tam binary starts");
    let stderr = child.stderr.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (first, first_line) = mpsc::channel();
    {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                // Kept before it is announced: a caller that got the first line finds
                // it in `lines()` too.
                lines.lock().unwrap().push(line.clone());
                let _ = first.send(line);
            }
        });
    }
    let serving = Serving { child, lines };
    let line = first_line
        .recv_timeout(LINE_WAIT)
        .expect("tam serve printed no line");
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (serving, address)
}

/// `METHOD path` with `headers` (and a JSON `body`), over a plain socket; the status and
/// the body.
pub fn request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: Option<&Value>,
) -> (u16, Value) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut socket = TcpStream::connect(address).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    write!(socket, "{head}\r\n{body}").unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(body).unwrap())
}
