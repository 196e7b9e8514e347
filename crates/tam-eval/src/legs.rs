//! The legs of `tam-eval e2e` against the model: the proof request, `tam run`, and one
//! streamed request through `tam serve`.

use std::fmt::Write as _;
use std::fs;
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tam::Protocol;

use crate::http;
use crate::judge::{
    ServeVerdict, describe_follow_up, judge_decoded, judge_run_output, judge_serve_stream,
};
use crate::server::{Server, start_proxy};
use crate::setup::{Cache, tam_binary};
use crate::{MODEL_ALIAS, root};

/// Most seconds one model request or one `tam run` may take (2 busy cores: be generous).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(900);
/// Most tokens one proof reply may have.
const PROOF_MAX_TOKENS: u32 = 512;

fn read_prompt(name: &str) -> Result<String, String> {
    let path = root().join("e2e/prompts").join(name);
    fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The system prompt `tam run --tools demo --protocol P` sends, as `tam prompt --full
/// --protocol P --tools demo` prints it (without the line break after it).
fn product_prompt(cache: &Cache, protocol: Protocol) -> Result<String, String> {
    let out_path = cache
        .logs()
        .join(format!("proof-{}.system.txt", protocol.as_str()));
    let (ok, out, err) = run_with_timeout(
        Command::new(tam_binary()).args([
            "prompt",
            "--full",
            "--protocol",
            protocol.as_str(),
            "--tools",
            "demo",
        ]),
        &out_path,
        Duration::from_secs(60),
    )?;
    if !ok {
        return Err(format!(
            "tam prompt --full --tools demo failed: {}",
            err.trim()
        ));
    }
    Ok(out.strip_suffix('\n').unwrap_or(&out).to_owned())
}

/// Runs `cmd` with standard output and error to files (no pipe to fill up), killed after
/// `timeout`; returns (success, stdout, stderr).
fn run_with_timeout(
    cmd: &mut Command,
    out_path: &Path,
    timeout: Duration,
) -> Result<(bool, String, String), String> {
    let err_path = out_path.with_extension("stderr");
    let out = fs::File::create(out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let err = fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{cmd:?} timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("{cmd:?}: {e}")),
        }
    };
    let read = |p: &Path| fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned());
    Ok((
        status.success(),
        read(out_path).map_err(|e| format!("{}: {e}", out_path.display()))?,
        read(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?,
    ))
}

/// The proof leg: one chat request in `protocol`; the reply must decode to the expected
/// call. Returns the summary line.
pub(crate) fn proof_leg(
    cache: &Cache,
    server: &Server,
    protocol: Protocol,
) -> Result<String, String> {
    let system = product_prompt(cache, protocol)?;
    let user = read_prompt("user.txt")?;
    let body = json!({
        "model": MODEL_ALIAS,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user.trim_end()},
        ],
        "temperature": 0,
        "cache_prompt": false,
        "max_tokens": PROOF_MAX_TOKENS,
        "stream": false,
    })
    .to_string();
    let name = format!("proof-{}", protocol.as_str());
    let body_path = cache.logs().join(format!("{name}.request.json"));
    fs::write(&body_path, &body).map_err(|e| format!("{}: {e}", body_path.display()))?;
    let started = Instant::now();
    // The whole reply within the time-out: one wait, as the client times each operation.
    let client = http::client(REQUEST_TIMEOUT)?;
    let url = format!("{}/chat/completions", server.openai_url());
    let (_, response) =
        http::post_json(&client, &url, &body).map_err(|e| format!("{name}: {e}"))?;
    let took = started.elapsed();
    let response_path = cache.logs().join(format!("{name}.response.json"));
    fs::write(&response_path, &response)
        .map_err(|e| format!("{}: {e}", response_path.display()))?;
    let reply = chat_reply(&response).map_err(|e| format!("{name}: {e}"))?;
    let reply_path = cache.logs().join(format!("{name}.reply.txt"));
    fs::write(&reply_path, &reply.content).map_err(|e| format!("{}: {e}", reply_path.display()))?;
    eprintln!(
        "tam-eval e2e: {name}: the model replied in {:.1} s ({} tokens):\n----\n{}\n----",
        took.as_secs_f64(),
        reply.tokens.as_deref().unwrap_or("?"),
        reply.content
    );

    let decoded = decode_reply(cache, protocol, &name, &reply.content)?;
    let verdict = judge_decoded(&decoded);
    let line = format!(
        "e2e proof  --protocol {:<6}: {} ({:.1} s){}",
        protocol.as_str(),
        verdict.describe(),
        took.as_secs_f64(),
        verdict.warnings_note()
    );
    if verdict.call && verdict.errors.is_empty() {
        Ok(line)
    } else {
        Err(format!("{line}\n  reply: {}", reply_path.display()))
    }
}

/// A chat completion's text and token count.
struct Reply {
    content: String,
    tokens: Option<String>,
}

/// `choices[0].message.content` of a `chat.completion`, or the server's error.
fn chat_reply(response: &str) -> Result<Reply, String> {
    let v: Value = serde_json::from_str(response)
        .map_err(|e| format!("{e}; the server answered: {response}"))?;
    if let Some(error) = v.get("error") {
        return Err(format!("the server answered an error: {error}"));
    }
    let content = v
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no choices[0].message.content in {response}"))?;
    let tokens = match v.get("usage").and_then(|u| u.get("completion_tokens")) {
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    Ok(Reply {
        content: content.to_owned(),
        tokens,
    })
}

/// `tam decode --protocol P` over `reply`: its JSON lines.
fn decode_reply(
    cache: &Cache,
    protocol: Protocol,
    name: &str,
    reply: &str,
) -> Result<String, String> {
    let input = cache.logs().join(format!("{name}.reply.txt"));
    fs::write(&input, reply).map_err(|e| format!("{}: {e}", input.display()))?;
    let (ok, out, err) = run_with_timeout(
        Command::new(tam_binary())
            .args(["decode", "--protocol", protocol.as_str()])
            .arg(&input),
        &cache.logs().join(format!("{name}.decoded.jsonl")),
        Duration::from_secs(60),
    )?;
    if !ok {
        return Err(format!("tam decode failed: {}", err.trim()));
    }
    Ok(out)
}

/// Whether the `tam` binary has a `run` command.
pub(crate) fn tam_has_run() -> bool {
    Command::new(tam_binary())
        .args(["run", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The `tam run` leg in `protocol`, `tries` times. Returns the summary line and whether
/// every try passed.
pub(crate) fn run_leg(
    cache: &Cache,
    server: &Server,
    protocol: Protocol,
    tries: u32,
) -> Result<(String, bool), String> {
    let user = read_prompt("user.txt")?;
    let mut passed = 0;
    let mut notes = Vec::new();
    let mut times = Vec::new();
    for attempt in 1..=tries {
        let name = format!("run-{}-{attempt}", protocol.as_str());
        let started = Instant::now();
        let (ok, out, err) = run_with_timeout(
            Command::new(tam_binary())
                .arg("run")
                .args(["--base-url", &server.openai_url()])
                .args(["--model", MODEL_ALIAS, "--protocol", protocol.as_str()])
                .args(["--tools", "demo", "--temperature", "0", "--json"])
                .arg(user.trim_end()),
            &cache.logs().join(format!("{name}.jsonl")),
            REQUEST_TIMEOUT,
        )?;
        times.push(started.elapsed().as_secs_f64());
        let verdict = judge_run_output(&out);
        let pass = ok && verdict.call && verdict.observation;
        eprintln!(
            "tam-eval e2e: {name}: exit {}, {}, observation {}{} ({:.1} s; output in {})",
            if ok { "0" } else { "non-zero" },
            verdict.describe(),
            if verdict.observation {
                "returned"
            } else {
                "MISSING"
            },
            verdict.warnings_note(),
            started.elapsed().as_secs_f64(),
            cache.logs().join(format!("{name}.jsonl")).display()
        );
        if !ok && !err.trim().is_empty() {
            eprintln!("tam-eval e2e: {name}: stderr: {}", err.trim());
        }
        if pass {
            passed += 1;
        } else {
            notes.push(format!("try {attempt}: {}", verdict.describe()));
        }
    }
    let mean = times.iter().sum::<f64>() / f64::from(tries);
    let mut line = format!(
        "e2e tam run --protocol {:<6}: {passed}/{tries} passed (mean {mean:.1} s)",
        protocol.as_str()
    );
    if !notes.is_empty() {
        let _ = write!(line, " — {}", notes.join("; "));
    }
    Ok((line, passed == tries))
}

/// The tool the `tam serve` leg offers, as an OpenAI `tools` entry: the demo's
/// `GetPlayerInfo`.
const SERVE_TOOL: &str = r#"{"type":"function","function":{"name":"GetPlayerInfo","description":"Looks up a player by id and returns their profile (name, level).","parameters":{"type":"object","properties":{"player_id":{"type":"string","description":"The player's id, e.g. player123."}},"required":["player_id"]}}}"#;

/// The result the `tam serve` leg's second round gives for the call (what the demo's
/// `GetPlayerInfo` returns for player123).
const SERVE_RESULT: &str = r#"{"name":"Alice","level":7}"#;

/// The `tam serve` leg in `protocol`: `tam serve` in front of the server, one streaming
/// request offering [`SERVE_TOOL`] with the user prompt of `e2e/prompts/user.txt`; when
/// the model calls the tool, a second request as a client sends it after running the tool
/// (the conversation, the call, its result [`SERVE_RESULT`]), whose reply is described:
/// answered with the result or without it, called again, wrote a block as text, or said
/// nothing. Returns the summary line; fails (Err) on a proxy failure only, not on the
/// model's choices.
pub(crate) fn serve_leg(
    cache: &Cache,
    server: &Server,
    protocol: Protocol,
    serve_args: &[String],
) -> Result<String, String> {
    let name = format!("serve-{}", protocol.as_str());
    let proxy = start_proxy(
        &server.openai_url(),
        protocol,
        serve_args,
        &cache.logs().join(format!("{name}.log")),
    )?;
    let user = read_prompt("user.txt")?;
    let tool: Value = serde_json::from_str(SERVE_TOOL).map_err(|e| format!("SERVE_TOOL: {e}"))?;
    let body = |messages: Value| {
        json!({
            "model": MODEL_ALIAS,
            "messages": messages,
            "tools": [tool],
            "temperature": 0,
            "cache_prompt": false,
            "max_tokens": PROOF_MAX_TOKENS,
            "stream": true,
        })
    };
    let ask = json!({"role": "user", "content": user.trim_end()});
    let (verdict, took) = serve_request(cache, &name, proxy.port, &body(json!([ask])))?;
    let mut line = format!(
        "e2e tam serve --protocol {:<6}: {} ({:.1} s)",
        protocol.as_str(),
        verdict.describe(),
        took.as_secs_f64()
    );
    if let Some(error) = &verdict.error {
        return Err(format!("{line} — PROXY FAILURE: {error}"));
    }
    if verdict.call {
        let (tool_name, arguments) = verdict.raw_calls[0].clone();
        let messages = json!([
            ask,
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_e2e_1", "type": "function",
                "function": {"name": tool_name, "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "call_e2e_1", "content": SERVE_RESULT},
        ]);
        let (reply, took) = serve_request(
            cache,
            &format!("{name}-result"),
            proxy.port,
            &body(messages),
        )?;
        if let Some(error) = &reply.error {
            return Err(format!(
                "{line} — PROXY FAILURE in the second round: {error}"
            ));
        }
        let _ = write!(
            line,
            "; given the result: {} ({:.1} s)",
            describe_follow_up(&reply),
            took.as_secs_f64()
        );
    }
    drop(proxy);
    eprintln!("tam-eval e2e: {name}: {line}");
    Ok(line)
}

/// One streaming request of the `tam serve` leg to the proxy on `port`: the body and the
/// stream go to the logs (`NAME.request.json`, `NAME.response.sse`); the stream judged.
fn serve_request(
    cache: &Cache,
    name: &str,
    port: u16,
    body: &Value,
) -> Result<(ServeVerdict, Duration), String> {
    let body_path = cache.logs().join(format!("{name}.request.json"));
    fs::write(&body_path, body.to_string()).map_err(|e| format!("{}: {e}", body_path.display()))?;
    let out_path = cache.logs().join(format!("{name}.response.sse"));
    let started = Instant::now();
    let client = http::client(REQUEST_TIMEOUT)?;
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let mut reply =
        http::post_stream(&client, &url, &body.to_string()).map_err(|e| format!("{name}: {e}"))?;
    // The body whatever the status: an error answer is judged as what came.
    let mut response = Vec::new();
    reply
        .read_to_end(&mut response)
        .map_err(|e| format!("{name}: reading the stream: {}", http::error_text(&e)))?;
    let took = started.elapsed();
    fs::write(&out_path, &response).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let response = String::from_utf8_lossy(&response);
    eprintln!("tam-eval e2e: {name}: stream in {}", out_path.display());
    Ok((judge_serve_stream(&response), took))
}
