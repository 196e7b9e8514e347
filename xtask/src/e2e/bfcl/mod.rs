//! `cargo xtask e2e --bfcl FILE`: a BFCL case file through `tam serve` (TAM and ACTION
//! protocols) and through the upstream's own (native) tool calling, each reply scored by
//! BFCL's AST rules ([`score`], reported by [`report`]).
//!
//! Each case is sent as the reference sender `run.py` does: `POST …/chat/completions` with
//! `model`, the case's `messages` and `tools`, `temperature: 0`, `max_tokens`, `stream:
//! true` and no `tool_choice`; the native path adds `parallel_tool_calls: true` (older
//! llama-server builds default it to off, which caps the parallel categories). The
//! streamed reply is accumulated as openai-python does: tool-call deltas merged by
//! `index`, `id`, `function.name` and `function.arguments` concatenated, `type`
//! replaced. An SSE `error` event, an event that is not JSON, a tool-call delta without an
//! integer `index`, an HTTP error status or a failed transfer is recorded in the line's
//! `error` (and the case fails); oddities are listed in `notes`. No retries.
//!
//! HTTP goes through `curl` as a child process, as the other legs do: no HTTP client crate
//! in the xtask, and curl's low-speed limit (`--speed-limit 1 --speed-time 600`: abort
//! when under 1 byte/s for 600 s) gives run.py's per-read timeout of 600 s, which a
//! client crate's whole-body timeout would not (a 512-token reply on two busy cores may
//! take longer than that in all).

pub(crate) mod native_prompt;
mod python;
pub(crate) mod report;
mod score;
mod stream;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use super::server::start_proxy;
use super::{Clock, MODEL_ALIAS, Protocol};
use report::{Case, clip};
use stream::run_case;

/// Which way a case goes to the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum BfclPath {
    /// Through `tam serve --protocol tam`.
    Tam,
    /// Through `tam serve --protocol action`.
    Action,
    /// Straight to the upstream, its own tool calling.
    Native,
}

impl BfclPath {
    const ALL: [BfclPath; 3] = [BfclPath::Tam, BfclPath::Action, BfclPath::Native];

    fn name(self) -> &'static str {
        match self {
            BfclPath::Tam => "tam",
            BfclPath::Action => "action",
            BfclPath::Native => "native",
        }
    }

    /// The `tam serve` protocol of the path; `None` for native.
    pub(super) fn protocol(self) -> Option<Protocol> {
        match self {
            BfclPath::Tam => Some(Protocol::Tam),
            BfclPath::Action => Some(Protocol::Action),
            BfclPath::Native => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            BfclPath::Tam => "tam serve --protocol tam",
            BfclPath::Action => "tam serve --protocol action",
            BfclPath::Native => "the upstream's native tool calling, parallel_tool_calls: true",
        }
    }
}

/// The options of `cargo xtask e2e --bfcl FILE`.
#[derive(Debug)]
pub(super) struct BfclOptions {
    /// The case file.
    pub(super) file: PathBuf,
    /// Only the first N cases of each category.
    pub(super) per_category: Option<usize>,
    /// The paths, in the order run.
    pub(super) paths: Vec<BfclPath>,
    pub(super) max_tokens: u32,
    /// Where `<path>.jsonl` go.
    pub(super) out: PathBuf,
    /// An OpenAI base URL (`…/v1`) of a running server, instead of starting llama-server.
    pub(super) base_url: Option<String>,
}

impl BfclOptions {
    /// From `(option, value)` pairs; `default_out` is `CACHE/logs/bfcl`.
    pub(super) fn parse(
        file: PathBuf,
        args: &[(String, String)],
        default_out: &Path,
    ) -> Result<BfclOptions, String> {
        let mut opts = BfclOptions {
            file,
            per_category: None,
            paths: BfclPath::ALL.to_vec(),
            max_tokens: 512,
            out: default_out.to_path_buf(),
            base_url: None,
        };
        let number = |name: &str, value: &str| -> Result<u32, String> {
            value
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or(format!("{name} needs a number above 0, not {value:?}"))
        };
        for (name, value) in args {
            match name.as_str() {
                "--per-category" => opts.per_category = Some(number(name, value)? as usize),
                "--max-tokens" => opts.max_tokens = number(name, value)?,
                "--out" => opts.out = PathBuf::from(value),
                "--base-url" => {
                    if !(value.starts_with("http://") || value.starts_with("https://")) {
                        return Err(format!(
                            "--base-url needs an http:// URL such as http://127.0.0.1:8080/v1, \
                             not {value:?}"
                        ));
                    }
                    opts.base_url = Some(value.trim_end_matches('/').to_owned());
                }
                "--paths" => {
                    let mut paths = Vec::new();
                    for word in value.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                        let path =
                            BfclPath::ALL
                                .into_iter()
                                .find(|p| p.name() == word)
                                .ok_or(format!(
                                    "--paths: unknown path {word:?} (tam, action, native)"
                                ))?;
                        if !paths.contains(&path) {
                            paths.push(path);
                        }
                    }
                    if paths.is_empty() {
                        return Err("--paths needs at least one of tam, action, native".into());
                    }
                    opts.paths = paths;
                }
                other => return Err(format!("e2e --bfcl: unknown option {other}")),
            }
        }
        for p in [&mut opts.file, &mut opts.out] {
            if p.is_relative() {
                *p = std::env::current_dir()
                    .map_err(|e| format!("current directory: {e}"))?
                    .join(&*p);
            }
        }
        if let Ok(file) = fs::canonicalize(&opts.file) {
            opts.file = file;
        }
        Ok(opts)
    }
}

/// The cases to run: all, or the first `per_category` of each category (file order).
pub(super) fn select(cases: &[Case], per_category: Option<usize>) -> Vec<Case> {
    let mut count = BTreeMap::new();
    cases
        .iter()
        .filter(|c| {
            let n = count.entry(c.category.as_str()).or_insert(0);
            *n += 1;
            per_category.is_none_or(|max| *n <= max)
        })
        .cloned()
        .collect()
}

/// Checks that something answers HTTP at `base_url` (any status will do), so a wrong
/// `--base-url` fails at once with a clear message rather than once per case.
pub(super) fn probe(base_url: &str) -> Result<(), String> {
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "30",
        ])
        .arg(format!("{base_url}/models"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start curl: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "--base-url {base_url}: nothing answers there ({}). Start a server first, e.g. \
         `cargo xtask e2e --keep-server` (it prints the URL to use), or leave out --base-url \
         to start llama-server",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Runs every selected path over `cases` against `upstream` (an OpenAI base URL), writes
/// `OUT/<path>.jsonl`, and prints a table per path. Fails only when a path cannot run
/// (`tam serve` does not start, a file cannot be written), not on the model's answers.
pub(super) fn run(
    cases: &[Case],
    opts: &BfclOptions,
    upstream: &str,
    clock: &mut Clock,
) -> Result<(), String> {
    fs::create_dir_all(&opts.out).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    eprintln!(
        "xtask e2e: BFCL: {} case(s) of {} through {} (upstream {upstream}, max_tokens {}); \
         results in {}",
        cases.len(),
        opts.file.display(),
        opts.paths
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
        opts.max_tokens,
        opts.out.display()
    );
    // The native template's size of every case, for the prompt-size goal; only
    // llama-server can say (its own endpoints), and a run goes on without it.
    let counts = opts.out.join(native_prompt::FILE);
    match native_prompt::count(cases, upstream, &counts) {
        Ok(n) => eprintln!(
            "xtask e2e: BFCL: native prompt sizes of {n} case(s) in {}",
            counts.display()
        ),
        Err(e) => {
            let _ = fs::remove_file(&counts);
            eprintln!(
                "xtask e2e: BFCL: no native prompt sizes (the prompt ratio is left out): {e}"
            );
        }
    }
    let mut files = Vec::new();
    for &path in &opts.paths {
        let started = Instant::now();
        let out_path = opts.out.join(format!("{}.jsonl", path.name()));
        // Stopped (dropped) when the path is done.
        let proxy = match path.protocol() {
            Some(protocol) => Some(start_proxy(
                upstream,
                protocol,
                &opts.out.join(format!("serve-{}.log", path.name())),
            )?),
            None => None,
        };
        let base = match &proxy {
            Some(proxy) => format!("http://127.0.0.1:{}/v1", proxy.port),
            None => upstream.to_owned(),
        };
        let url = format!("{base}/chat/completions");
        run_path(cases, path, &url, opts.max_tokens, &out_path)?;
        drop(proxy);
        clock.steps.push((
            format!("BFCL {} ×{}", path.name(), cases.len()),
            started.elapsed(),
            "done",
        ));
        files.push((path, out_path));
    }
    let mut report = String::new();
    for (path, out_path) in &files {
        let results = report::load_results(out_path)?;
        let scored = report::score(cases, &results, false, true);
        report.push_str(&format!(
            "\n== BFCL {} ({}): {}\n{}{}{}",
            path.name(),
            path.describe(),
            out_path.display(),
            scored.table(),
            report::reply_stats(&results),
            report::beside_native(out_path)?
        ));
    }
    println!("{report}");
    eprintln!(
        "xtask e2e: BFCL: cross-check with python3 score.py {} {}/<path>.jsonl",
        opts.file.display(),
        opts.out.display()
    );
    Ok(())
}

/// Sends every case along one path, writing one result line per case as it comes.
fn run_path(
    cases: &[Case],
    path: BfclPath,
    url: &str,
    max_tokens: u32,
    out_path: &Path,
) -> Result<(), String> {
    let mut out = fs::File::create(out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    eprintln!(
        "xtask e2e: BFCL {}: {} case(s) -> {url}",
        path.name(),
        cases.len()
    );
    for (n, case) in cases.iter().enumerate() {
        let body = request_body(case, max_tokens, path == BfclPath::Native);
        let line = run_case(case, url, &body);
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("{}: {e}", out_path.display()))?;
        let what = match line.get("error").and_then(Value::as_str) {
            Some(error) => error.to_owned(),
            None => {
                let names: Vec<&str> = line["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("name").and_then(Value::as_str))
                    .collect();
                format!("{} call(s) {names:?}", names.len())
            }
        };
        eprintln!(
            "{}",
            clip(
                &format!(
                    "[{}/{}] {} {} {}s {what}",
                    n + 1,
                    cases.len(),
                    path.name(),
                    case.id,
                    line["time_s"]
                ),
                300
            )
        );
    }
    Ok(())
}

/// The request of one case, as run.py builds it (streaming).
fn request_body(case: &Case, max_tokens: u32, native: bool) -> Value {
    let mut body = json!({
        "model": MODEL_ALIAS,
        "messages": case.line["messages"],
        "tools": case.line["tools"],
        "temperature": 0,
        "max_tokens": max_tokens,
        "stream": true,
    });
    if native {
        body["parallel_tool_calls"] = json!(true);
        // llama-server sends `usage` in a stream only when asked (the proxy asks on its
        // own); with it the native path's prompt and completion tokens are known too.
        body["stream_options"] = json!({ "include_usage": true });
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    #[test]
    fn options_and_selection() {
        let args = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let o =
            BfclOptions::parse(PathBuf::from("c.jsonl"), &args(&[]), Path::new("/tmp/x")).unwrap();
        assert_eq!(o.paths, BfclPath::ALL);
        assert_eq!(o.max_tokens, 512);
        assert!(o.file.is_absolute());
        let o = BfclOptions::parse(
            PathBuf::from("/c.jsonl"),
            &args(&[
                ("--paths", "native,tam,native"),
                ("--per-category", "2"),
                ("--base-url", "http://127.0.0.1:8080/v1/"),
            ]),
            Path::new("/tmp/x"),
        )
        .unwrap();
        assert_eq!(o.paths, [BfclPath::Native, BfclPath::Tam]);
        assert_eq!(o.per_category, Some(2));
        assert_eq!(o.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        for bad in [
            ("--paths", "tam,xml"),
            ("--paths", ","),
            ("--max-tokens", "0"),
            ("--base-url", "127.0.0.1:8080"),
        ] {
            assert!(
                BfclOptions::parse(PathBuf::from("c"), &args(&[bad]), Path::new("/tmp")).is_err(),
                "{bad:?}"
            );
        }
        let mk = |id: &str, cat: &str| Case {
            id: id.into(),
            category: cat.into(),
            line: Map::new(),
        };
        let cases = [
            mk("a", "simple"),
            mk("b", "simple"),
            mk("c", "multiple"),
            mk("d", "simple"),
        ];
        let ids: Vec<String> = select(&cases, Some(1)).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(select(&cases, None).len(), 4);
    }
}
