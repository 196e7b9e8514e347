//! The real agent CLIs through `tam serve`: Claude Code (Anthropic Messages) and Codex
//! (OpenAI Responses), pinned, each given a task that needs its shell tool.
//!
//! Opt-in: set `TAM_AGENT_CLIS=1` (`cargo xtask agents` does), else every test here passes
//! after saying it skipped. The CLIs install with npm into a cache outside the repository
//! (`TAM_AGENT_CLIS_CACHE`, default `~/.cache/tam-agents`); without npm the tests skip,
//! saying so.
//!
//! Each run works in a fresh directory holding one file with a unique name, so only the
//! output of the command the CLI ran can carry that name. Two ways in:
//! - through `tam serve --protocol action|tam` in front of a scripted model (an
//!   OpenAI-compatible chat server): the model answers the first request with the
//!   protocol's block calling the shell tool, written with the parameter name the proxy's
//!   prompt lists; the proxy turns it into the client's native call; the client runs `ls`;
//!   the result comes back through the proxy; and the model's final answer repeats the
//!   file name only if the result it received holds it;
//! - straight to a fake of the client's own API answering with hand-written streams (the
//!   event sequences the proxy must write): a check of the harness and of those sequences
//!   that needs no proxy.
//!
//! A failure prints what the CLI wrote and the requests each server received. The test
//! lives with the `tam` binary's other tests because it runs `tam serve` as a user would.
//!
//! One check here needs no CLI and always runs: the scripted model, behind `tam serve`,
//! gets its shell call and its final answer through the Chat Completions route, so the
//! model the CLIs meet is known to write blocks the proxy turns into their calls.
#![cfg(unix)]

// One scripted server for the OpenAI-compatible tests of both crates.
mod support;

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Serving, request, serve_with};
use tam_testkit::upstream::{Reply, Request, Server, text_stream};

/// The pinned CLIs: the versions whose requests and accepted streams these tests rely on.
const CLAUDE_CODE: (&str, &str) = ("@anthropic-ai/claude-code", "2.1.328");
const CODEX: (&str, &str) = ("@openai/codex", "0.169.0");

/// The task each CLI gets.
const TASK: &str = "List the files in the current directory.";

/// What the scripted model's final answer says around the file name.
const ANSWER: &str = "The directory holds";

/// Longest a CLI run may take before it is killed and the test fails: a bound against a
/// hang (a bug), far above what a run takes (seconds), never a speed goal.
const CLI_TIME_LIMIT: Duration = Duration::from_secs(300);

/// The model name the CLIs are told to use (any name: the servers here ignore it).
const MODEL: &str = "tam-scripted";

/// The key the CLIs send; `tam serve` here is started without client keys, so any works.
const KEY: &str = "tam-agent-clis-test-key";

/// The installed CLIs.
struct Clis {
    claude: PathBuf,
    codex: PathBuf,
}

/// Why the CLIs are not there.
enum Missing {
    /// npm is not installed: the tests skip, saying so.
    Skip(String),
    /// The install failed: every test that needs the CLIs fails with this.
    Fail(String),
}

/// Whether the tests run, and the installed CLIs when they do. Installs once per test
/// binary; a skip is said on standard error by each test.
fn clis() -> Option<&'static Clis> {
    if std::env::var("TAM_AGENT_CLIS").as_deref() != Ok("1") {
        eprintln!(
            "agent_clis: SKIPPED — set TAM_AGENT_CLIS=1 (or run `cargo xtask agents`) to run \
             Claude Code and Codex through tam serve; needs npm"
        );
        return None;
    }
    static INSTALLED: OnceLock<Result<Clis, Missing>> = OnceLock::new();
    match INSTALLED.get_or_init(install) {
        Ok(clis) => Some(clis),
        Err(Missing::Skip(why)) => {
            eprintln!("agent_clis: SKIPPED — {why}");
            None
        }
        Err(Missing::Fail(why)) => panic!("{why}"),
    }
}

/// The cache the CLIs install into: `TAM_AGENT_CLIS_CACHE`, else `tam-agents` in the
/// user's cache directory.
fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TAM_AGENT_CLIS_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME is set");
    base.join("tam-agents")
}

/// The pinned CLIs in the cache, installed with npm unless they are there already.
fn install() -> Result<Clis, Missing> {
    let cache = cache_dir();
    let bin = cache.join("node_modules").join(".bin");
    let clis = Clis {
        claude: bin.join("claude"),
        codex: bin.join("codex"),
    };
    if clis.are_pinned() {
        return Ok(clis);
    }
    let npm_version = Command::new("npm").arg("--version").output();
    if npm_version.is_err() {
        return Err(Missing::Skip(
            "npm is not installed: it installs Claude Code and Codex".to_owned(),
        ));
    }
    if let Err(e) = std::fs::create_dir_all(&cache) {
        return Err(Missing::Fail(format!(
            "cannot create {}: {e}",
            cache.display()
        )));
    }
    let packages = [CLAUDE_CODE, CODEX].map(|(name, version)| format!("{name}@{version}"));
    eprintln!(
        "agent_clis: installing {} into {}",
        packages.join(" "),
        cache.display()
    );
    let npm = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&cache)
        .args(&packages)
        .output();
    match npm {
        Ok(npm) if !npm.status.success() => Err(Missing::Fail(format!(
            "npm install failed ({}):\n{}\n{}",
            npm.status,
            String::from_utf8_lossy(&npm.stdout),
            String::from_utf8_lossy(&npm.stderr)
        ))),
        Err(e) => Err(Missing::Fail(format!("npm install did not start: {e}"))),
        Ok(_) if !clis.are_pinned() => Err(Missing::Fail(format!(
            "after npm install, {} or {} is missing or not the pinned version ({}, {})",
            clis.claude.display(),
            clis.codex.display(),
            packages[0],
            packages[1]
        ))),
        Ok(_) => Ok(clis),
    }
}

impl Clis {
    /// Whether both CLIs are installed and say they are the pinned versions.
    fn are_pinned(&self) -> bool {
        let says = |exe: &Path, version: &str| {
            Command::new(exe)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(version))
        };
        says(&self.claude, CLAUDE_CODE.1) && says(&self.codex, CODEX.1)
    }
}

/// One CLI run at a time: each is a heavy process tree, and the machine may be small.
static ONE_RUN: Mutex<()> = Mutex::new(());

/// A fresh directory for one run, removed when dropped: `home/` (the CLI's `HOME`),
/// `codex/` (Codex's configuration) and `work/` (the working directory, holding one file
/// whose name is [`Scratch::token`]).
struct Scratch {
    root: PathBuf,
    token: String,
}

impl Scratch {
    fn new() -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("tam-agent-clis-{}-{n}", std::process::id()));
        // A name no prompt can hold: random, and unlike the directory's.
        let token = format!(
            "observed-{:016x}.txt",
            RandomState::new().build_hasher().finish()
        );
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["home", "codex", "work"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("work").join(&token), "listed by the agent\n").unwrap();
        Scratch { root, token }
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// How a CLI run ended.
struct CliRun {
    /// The exit status (`None` when killed).
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Killed at [`CLI_TIME_LIMIT`].
    timed_out: bool,
}

/// Runs `command` in its own process group, with only `PATH` of the test's environment,
/// `HOME` in `scratch` and `env`; kills the whole group past [`CLI_TIME_LIMIT`].
fn run_cli(mut command: Command, scratch: &Scratch, env: &[(&str, String)]) -> CliRun {
    let _one = ONE_RUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.dir("home"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(scratch.dir("work"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().expect("the CLI starts");
    let out = read_all(&mut child, true);
    let err = read_all(&mut child, false);
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CLI_TIME_LIMIT {
            timed_out = true;
            kill_group(&child);
            break child.wait().unwrap();
        }
        thread::sleep(Duration::from_millis(20));
    };
    // What the CLI left running (a shell it started) holds the pipes open: end it too.
    kill_group(&child);
    CliRun {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        timed_out,
    }
}

/// Reads the child's standard output (or error) to its end on a thread.
fn read_all(child: &mut Child, stdout: bool) -> thread::JoinHandle<Vec<u8>> {
    let mut stream: Box<dyn Read + Send> = if stdout {
        Box::new(child.stdout.take().unwrap())
    } else {
        Box::new(child.stderr.take().unwrap())
    };
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        bytes
    })
}

/// Kills the process group the child leads (this test's own processes only).
fn kill_group(child: &Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
}

/// Runs Claude Code's print mode on [`TASK`] against `base_url` (the server root, without
/// `/v1`), allowed to run `ls`, with what keeps it off the network.
fn run_claude(clis: &Clis, scratch: &Scratch, base_url: &str) -> CliRun {
    let mut command = Command::new(&clis.claude);
    command.args(["-p", TASK, "--allowedTools", "Bash(ls:*)"]);
    let env = [
        ("ANTHROPIC_BASE_URL", base_url.to_owned()),
        ("ANTHROPIC_API_KEY", KEY.to_owned()),
        ("ANTHROPIC_MODEL", MODEL.to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        // A failing server fails the run at once instead of after minutes of retries.
        ("CLAUDE_CODE_MAX_RETRIES", "1".to_owned()),
    ];
    run_cli(command, scratch, &env)
}

/// Codex's configuration for a Responses server at `base_url` (ending in `/v1`): no
/// retries (a failing server fails the run at once), no analytics, no plugin sync.
fn codex_config(base_url: &str) -> String {
    format!(
        r#"model = "{MODEL}"
model_provider = "tam"

[model_providers.tam]
name = "tam serve"
base_url = "{base_url}"
wire_api = "responses"
env_key = "TAM_AGENT_CLIS_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
"#
    )
}

/// Runs `codex exec` on [`TASK`] against `base_url` (ending in `/v1`), without approvals
/// or sandbox, its configuration in the scratch directory.
fn run_codex(clis: &Clis, scratch: &Scratch, base_url: &str) -> CliRun {
    std::fs::write(
        scratch.dir("codex").join("config.toml"),
        codex_config(base_url),
    )
    .unwrap();
    let mut command = Command::new(&clis.codex);
    command.args([
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        TASK,
    ]);
    let env = [
        ("CODEX_HOME", scratch.dir("codex").display().to_string()),
        ("TAM_AGENT_CLIS_KEY", KEY.to_owned()),
    ];
    run_cli(command, scratch, &env)
}

/// What the CLI did, for a failure message: its exit status, standard output and the end
/// of its standard error, then `servers` (what the servers received).
fn describe_run(run: &CliRun, servers: &str) -> String {
    format!(
        "exit status: {:?}{}\n\
         --- the CLI's standard output ---\n{}\n\
         --- the CLI's standard error (last 6000 bytes) ---\n{}\n\
         {servers}",
        run.code,
        if run.timed_out {
            format!(" (killed after {CLI_TIME_LIMIT:?})")
        } else {
            String::new()
        },
        run.stdout,
        tail(&run.stderr, 6000),
    )
}

/// Fails with `report` unless the CLI exited 0 and its standard output holds the final
/// answer naming the file.
fn assert_answered(what: &str, run: &CliRun, token: &str, report: &str) {
    let answered = run.code == Some(0) && run.stdout.contains(ANSWER) && run.stdout.contains(token);
    assert!(
        answered,
        "{what}: the CLI did not print the final answer naming {token}\n{report}"
    );
}

/// The last `max` bytes of `text` (at a char boundary).
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The first `max` bytes of `text` (at a char boundary), marked when cut.
fn head(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// The requests `server` received, one paragraph each: the request line and the end of
/// the conversation (the part a turn adds), cut to a readable size.
fn describe_requests(title: &str, server: &Server) -> String {
    let mut out = format!("--- {title} received ---\n");
    for (i, request) in server.requests().iter().enumerate() {
        let _ = writeln!(out, "#{i} {}", request.line);
        let body = &request.body;
        let turns = body
            .get("messages")
            .or_else(|| body.get("input"))
            .and_then(Value::as_array);
        match turns {
            Some(turns) => {
                for turn in turns.iter().skip(turns.len().saturating_sub(3)) {
                    let _ = writeln!(out, "    {}", head(&turn.to_string(), 1500));
                }
            }
            None => {
                let _ = writeln!(out, "    {}", head(&body.to_string(), 600));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The scripted model behind `tam serve`.

/// The text of a chat message's `content` (a string, or parts with `text`).
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The name the proxy's prompt gives the parameter described as `description`: the model
/// writes what the prompt lists (a TAM line `- NAME (type, required): DESCRIPTION`, an
/// ACTION line `` `<NAME>` (type, required): DESCRIPTION ``).
fn listed_parameter(messages: &[Value], description: &str) -> Option<String> {
    let prompt: String = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .map(content_text)
        .collect::<Vec<_>>()
        .join("\n");
    let line = prompt
        .lines()
        .find(|l| l.contains(description) && l.contains("required"))?;
    let line = line
        .trim_start()
        .trim_start_matches(['-', '*'])
        .trim_start();
    let name = match line.strip_prefix("`<") {
        Some(rest) => rest.split(">`").next()?,
        None => line.split(" (").next()?,
    };
    Some(name.trim().to_owned())
}

/// How the scripted model calls the client's shell tool.
#[derive(Clone, Copy)]
struct ShellTool {
    /// The tool's name in the client's request.
    name: &'static str,
    /// Its command parameter's name in the client's request.
    parameter: &'static str,
    /// The description of its command parameter (how the model finds it in the prompt).
    parameter_description: &'static str,
}

/// Claude Code's `Bash` (its `command` parameter).
const CLAUDE_BASH: ShellTool = ShellTool {
    name: "Bash",
    parameter: "command",
    parameter_description: "The command to execute",
};

/// Codex's `exec_command` (its `cmd` parameter).
const CODEX_EXEC: ShellTool = ShellTool {
    name: "exec_command",
    parameter: "cmd",
    parameter_description: "Shell command to execute.",
};

/// The block calling `tool` with the command `ls`, in `protocol`.
fn shell_call(protocol: &str, tool: &str, parameter: &str) -> String {
    match protocol {
        "action" => format!(
            "Listing the files.\n<ACTION><{tool}><{parameter}>ls</{parameter}></{tool}></ACTION>"
        ),
        "tam" => format!(
            "Listing the files.\n<|[REQUEST_TOOL]|>\ncommand:「始」{tool}「末」\n{parameter}:「始」ls「末」\n<|[END_TOOL]|>"
        ),
        other => panic!("no block for protocol {other}"),
    }
}

/// A model that follows the proxy's prompt: its first answer is the block calling `tool`
/// with `ls`; once a later message (after its last turn) holds `token`, its answer names
/// it; otherwise it says the result did not come.
fn scripted_model(
    protocol: &'static str,
    tool: ShellTool,
    token: String,
) -> impl Fn(&Request) -> Reply + Send + Sync + 'static {
    let called = AtomicUsize::new(0);
    move |request: &Request| {
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let text = if called.fetch_add(1, Ordering::SeqCst) == 0 {
            match listed_parameter(&messages, tool.parameter_description) {
                Some(parameter) => shell_call(protocol, tool.name, &parameter),
                None => format!(
                    "The prompt lists no parameter described as {:?} for {}.",
                    tool.parameter_description, tool.name
                ),
            }
        } else {
            let last_turn = messages
                .iter()
                .rposition(|m| m["role"] == "assistant")
                .map_or(0, |at| at + 1);
            let observed = messages[last_turn..]
                .iter()
                .any(|m| content_text(m).contains(&token));
            if observed {
                format!("{ANSWER} {token}.")
            } else {
                "The tool result did not come back.".to_owned()
            }
        };
        Reply::events(&text_stream(&text, 24, "stop", "\n"))
    }
}

/// What a through-the-proxy failure report needs: the proxy's log and the model's
/// requests.
fn describe_proxy(serving: &Serving, upstream: &Server) -> String {
    format!(
        "--- tam serve's standard error ---\n{}\n{}",
        serving.lines().join("\n"),
        describe_requests("the scripted model (tam serve's upstream)", upstream)
    )
}

/// Starts the scripted model and `tam serve --protocol PROTOCOL` in front of it; the proxy,
/// its address and the model.
async fn proxy_and_model(
    protocol: &'static str,
    tool: ShellTool,
    token: &str,
) -> (Serving, String, Server) {
    let upstream = Server::scripted(scripted_model(protocol, tool, token.to_owned())).await;
    let base = upstream.base_url.clone();
    let (serving, address) = tokio::task::spawn_blocking(move || {
        serve_with(
            &["--listen", "127.0.0.1:0"],
            &["--upstream", &base, "--protocol", protocol],
            &[],
        )
    })
    .await
    .unwrap();
    (serving, address, upstream)
}

/// The through-the-proxy checks: the CLI printed the answer, the model's first request
/// did not hold the file name (so only the tool's output can have brought it) and a later
/// one did.
fn assert_round_trip(what: &str, run: &CliRun, token: &str, serving: &Serving, upstream: &Server) {
    let report = describe_run(run, &describe_proxy(serving, upstream));
    assert_answered(what, run, token, &report);
    let requests = upstream.requests();
    assert!(
        !requests[0].body.to_string().contains(token),
        "{what}: the model's first request already holds {token}\n{report}"
    );
    assert!(
        requests[1..]
            .iter()
            .any(|r| r.body.to_string().contains(token)),
        "{what}: no request after the first brought {token} to the model\n{report}"
    );
}

async fn claude_code_through_tam_serve(protocol: &'static str) {
    let Some(clis) = clis() else { return };
    let scratch = Scratch::new();
    let (serving, address, upstream) = proxy_and_model(protocol, CLAUDE_BASH, &scratch.token).await;
    let run =
        tokio::task::block_in_place(|| run_claude(clis, &scratch, &format!("http://{address}")));
    let what = format!("Claude Code through tam serve --protocol {protocol}");
    assert_round_trip(&what, &run, &scratch.token, &serving, &upstream);
}

async fn codex_through_tam_serve(protocol: &'static str) {
    let Some(clis) = clis() else { return };
    let scratch = Scratch::new();
    let (serving, address, upstream) = proxy_and_model(protocol, CODEX_EXEC, &scratch.token).await;
    let run =
        tokio::task::block_in_place(|| run_codex(clis, &scratch, &format!("http://{address}/v1")));
    let what = format!("Codex through tam serve --protocol {protocol}");
    assert_round_trip(&what, &run, &scratch.token, &serving, &upstream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_runs_its_shell_tool_through_tam_serve_in_action() {
    claude_code_through_tam_serve("action").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_runs_its_shell_tool_through_tam_serve_in_tam() {
    claude_code_through_tam_serve("tam").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_its_shell_tool_through_tam_serve_in_action() {
    codex_through_tam_serve("action").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_its_shell_tool_through_tam_serve_in_tam() {
    codex_through_tam_serve("tam").await;
}

/// The chat definition of `tool`: its command parameter, required, and a timeout.
fn chat_tool(tool: ShellTool) -> Value {
    json!({"type": "function", "function": {"name": tool.name, "description": "Runs a shell command.",
        "parameters": {"type": "object", "properties": {
            tool.parameter: {"type": "string", "description": tool.parameter_description},
            "timeout": {"type": "number", "description": "Milliseconds to wait."}},
        "required": [tool.parameter]}}})
}

/// The scripted model through `tam serve`'s Chat Completions route: its first answer
/// becomes the native call of `tool` with `ls`, and after a tool result naming the file its
/// answer names it. Returns the failure, if any.
async fn chat_round_trip(protocol: &'static str, tool: ShellTool) -> Result<(), String> {
    let token = "observed-chat-route.txt";
    let (serving, address, upstream) = proxy_and_model(protocol, tool, token).await;
    let what = format!("{} in {protocol}", tool.name);
    let fail = |why: String| {
        Err(format!(
            "{what}: {why}\n{}",
            describe_proxy(&serving, &upstream)
        ))
    };
    let mut messages = vec![json!({"role": "user", "content": TASK})];
    let ask = |messages: &Vec<Value>| {
        let body = json!({"model": MODEL, "messages": messages, "tools": [chat_tool(tool)]});
        let address = address.clone();
        tokio::task::block_in_place(move || {
            request(&address, "POST", "/v1/chat/completions", &[], Some(&body))
        })
    };
    let (status, reply) = ask(&messages);
    let message = &reply["choices"][0]["message"];
    let call = &message["tool_calls"][0];
    let arguments: Option<Value> = call["function"]["arguments"]
        .as_str()
        .and_then(|a| serde_json::from_str(a).ok());
    if status != 200
        || call["function"]["name"] != tool.name
        || arguments != Some(json!({tool.parameter: "ls"}))
    {
        return fail(format!(
            "no call of {} with ls: {status} {reply}",
            tool.name
        ));
    }
    messages.push(message.clone());
    messages.push(json!({"role": "tool", "tool_call_id": call["id"],
        "content": format!("{token}\n")}));
    let (status, reply) = ask(&messages);
    let content = reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    if status != 200 || content != format!("{ANSWER} {token}.") {
        return fail(format!("no final answer naming {token}: {status} {reply}"));
    }
    Ok(())
}

/// Always runs (no CLI needed). Claude Code's `Bash` in TAM: its parameter is named
/// `command`, the key that names the tool in a TAM block; the prompt offers it as
/// `arg_command` and the proxy reads it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_model_gets_its_shell_calls_through_the_chat_route() {
    let mut failures = Vec::new();
    for (protocol, tool) in [
        ("action", CLAUDE_BASH),
        ("tam", CLAUDE_BASH),
        ("action", CODEX_EXEC),
        ("tam", CODEX_EXEC),
    ] {
        if let Err(failure) = chat_round_trip(protocol, tool).await {
            failures.push(failure);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------
// Fakes of the clients' own APIs, answering with hand-written streams.

/// One server-sent event with an `event:` line.
fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// `text` cut in two at a char boundary near its middle.
fn halves(text: &str) -> (&str, &str) {
    let mut at = text.len() / 2;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    text.split_at(at)
}

/// An Anthropic Messages stream whose one content block is `block_start`'s block, filled
/// by `deltas`, ending with `stop_reason`.
fn messages_stream(block_start: Value, deltas: Vec<Value>, stop_reason: &str) -> Vec<String> {
    let mut events = vec![sse(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": "msg_tam_1", "type": "message", "role": "assistant", "model": MODEL,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    )];
    events.push(sse(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": block_start}),
    ));
    for delta in deltas {
        events.push(sse(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ));
    }
    events.push(sse(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push(sse(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": 1}}),
    ));
    events.push(sse("message_stop", &json!({"type": "message_stop"})));
    events
}

/// A `tool_use` block: Claude Code reads the input only from `input_json_delta` pieces (an
/// input given whole in `content_block_start` arrives empty) and needs the block closed.
fn messages_tool_use(name: &str, input: &Value) -> Vec<String> {
    let input = input.to_string();
    let (first, second) = halves(&input);
    messages_stream(
        json!({"type": "tool_use", "id": "toolu_tam_1", "name": name, "input": {}}),
        [first, second]
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .into(),
        "tool_use",
    )
}

fn messages_text(text: &str) -> Vec<String> {
    let (first, second) = halves(text);
    messages_stream(
        json!({"type": "text", "text": ""}),
        [first, second]
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .into(),
        "end_turn",
    )
}

/// A Responses stream of one output item: `added`, the item's deltas, `done`, then
/// `response.completed` (Codex takes the item from `response.output_item.done` and fails
/// a stream that ends without `response.completed`).
fn responses_stream(item: &Value, done: &Value, deltas: Vec<Value>) -> Vec<String> {
    let response = json!({"id": "resp_tam_1", "object": "response", "created_at": 0,
        "status": "in_progress", "model": MODEL, "output": []});
    let mut number = 0;
    let mut next = |mut event: Value| {
        event["sequence_number"] = json!(number);
        number += 1;
        sse(event["type"].as_str().unwrap(), &event)
    };
    let mut events = vec![
        next(json!({"type": "response.created", "response": response})),
        next(json!({"type": "response.output_item.added", "output_index": 0, "item": item})),
    ];
    events.extend(deltas.into_iter().map(&mut next));
    events.push(next(
        json!({"type": "response.output_item.done", "output_index": 0, "item": done}),
    ));
    let mut completed = response;
    completed["status"] = json!("completed");
    completed["output"] = json!([done]);
    completed["usage"] = json!({"input_tokens": 1, "output_tokens": 1, "total_tokens": 2});
    events.push(next(
        json!({"type": "response.completed", "response": completed}),
    ));
    events
}

fn responses_function_call(name: &str, arguments: &Value) -> Vec<String> {
    let arguments = arguments.to_string();
    let item = json!({"type": "function_call", "id": "fc_tam_1", "call_id": "call_tam_1",
        "name": name, "arguments": "", "status": "in_progress"});
    let mut done = item.clone();
    done["arguments"] = json!(arguments);
    done["status"] = json!("completed");
    let (first, second) = halves(&arguments);
    let mut deltas: Vec<Value> = [first, second]
        .map(|piece| {
            json!({"type": "response.function_call_arguments.delta",
            "item_id": "fc_tam_1", "output_index": 0, "delta": piece})
        })
        .into();
    deltas.push(json!({"type": "response.function_call_arguments.done",
        "item_id": "fc_tam_1", "output_index": 0, "arguments": arguments}));
    responses_stream(&item, &done, deltas)
}

fn responses_message(text: &str) -> Vec<String> {
    let item = json!({"type": "message", "id": "msg_tam_1", "role": "assistant",
        "status": "in_progress", "content": []});
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    let mut done = item.clone();
    done["status"] = json!("completed");
    done["content"] = json!([part]);
    let at = |kind: &str| {
        json!({"type": kind, "item_id": "msg_tam_1", "output_index": 0,
        "content_index": 0})
    };
    let mut deltas = Vec::new();
    let mut added = at("response.content_part.added");
    added["part"] = json!({"type": "output_text", "text": "", "annotations": []});
    deltas.push(added);
    let (first, second) = halves(text);
    for piece in [first, second] {
        let mut delta = at("response.output_text.delta");
        delta["delta"] = json!(piece);
        deltas.push(delta);
    }
    let mut text_done = at("response.output_text.done");
    text_done["text"] = json!(text);
    deltas.push(text_done);
    let mut part_done = at("response.content_part.done");
    part_done["part"] = part;
    deltas.push(part_done);
    responses_stream(&item, &done, deltas)
}

/// The turn after a call: the final answer naming `token` when `results` (the tool results
/// the client sent) hold it.
fn final_answer(results: &[&Value], token: &str) -> String {
    if results.iter().any(|r| r.to_string().contains(token)) {
        format!("{ANSWER} {token}.")
    } else {
        "The tool result did not come back.".to_owned()
    }
}

/// The request's method and path, without the query (Claude Code adds `?beta=true`).
fn request_path(request: &Request) -> (&str, &str) {
    let mut parts = request.line.split(' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    (method, target.split('?').next().unwrap_or_default())
}

/// A fake of the Anthropic Messages API: the first turn calls `Bash` with `ls`, the next
/// answers from the `tool_result` it got.
fn fake_messages_api(token: String) -> impl Fn(&Request) -> Reply + Send + Sync + 'static {
    move |request: &Request| {
        if request_path(request) != ("POST", "/v1/messages") {
            return Reply::Status {
                status: 404,
                body: json!({"type": "error", "error": {"type": "not_found_error",
                    "message": "not faked here"}})
                .to_string(),
            };
        }
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let results: Vec<&Value> = messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|block| block["type"] == "tool_result")
            .collect();
        let events = if results.is_empty() {
            messages_tool_use("Bash", &json!({"command": "ls"}))
        } else {
            messages_text(&final_answer(&results, &token))
        };
        Reply::events(&events)
    }
}

/// A fake of the OpenAI Responses API: the first turn calls `exec_command` with `ls`, the
/// next answers from the `function_call_output` it got.
fn fake_responses_api(token: String) -> impl Fn(&Request) -> Reply + Send + Sync + 'static {
    move |request: &Request| {
        if request_path(request) != ("POST", "/v1/responses") {
            return Reply::Status {
                status: 404,
                body: json!({"error": {"message": "not faked here"}}).to_string(),
            };
        }
        let input = request.body["input"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let results: Vec<&Value> = input
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .collect();
        let events = if results.is_empty() {
            responses_function_call("exec_command", &json!({"cmd": "ls"}))
        } else {
            responses_message(&final_answer(&results, &token))
        };
        Reply::events(&events)
    }
}

/// The root URL of a server whose `base_url` ends in `/v1`.
fn root_url(server: &Server) -> String {
    server.base_url.trim_end_matches("/v1").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_runs_its_shell_tool_on_a_hand_written_messages_stream() {
    let Some(clis) = clis() else { return };
    let scratch = Scratch::new();
    let api = Server::scripted(fake_messages_api(scratch.token.clone())).await;
    let run = tokio::task::block_in_place(|| run_claude(clis, &scratch, &root_url(&api)));
    let report = describe_run(&run, &describe_requests("the fake Messages API", &api));
    assert_answered(
        "Claude Code on the fake Messages API",
        &run,
        &scratch.token,
        &report,
    );
    let lines: Vec<String> = api.requests().iter().map(|r| r.line.clone()).collect();
    assert_eq!(
        lines.len(),
        2,
        "one request for the call, one for the answer: {lines:?}\n{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_its_shell_tool_on_a_hand_written_responses_stream() {
    let Some(clis) = clis() else { return };
    let scratch = Scratch::new();
    let api = Server::scripted(fake_responses_api(scratch.token.clone())).await;
    let run = tokio::task::block_in_place(|| run_codex(clis, &scratch, &api.base_url));
    let report = describe_run(&run, &describe_requests("the fake Responses API", &api));
    assert_answered(
        "Codex on the fake Responses API",
        &run,
        &scratch.token,
        &report,
    );
    let lines: Vec<String> = api.requests().iter().map(|r| r.line.clone()).collect();
    assert_eq!(
        lines,
        ["POST /v1/responses HTTP/1.1", "POST /v1/responses HTTP/1.1"],
        "one request for the call, one for the answer\n{report}"
    );
}
