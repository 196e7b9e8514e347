//! `tam-eval e2e --bfcl FILE`: a BFCL case file through `tam serve` (TAM and ACTION
//! protocols) and through the upstream's own (native) tool calling, each reply scored by
//! BFCL's AST rules ([`score`], reported by [`report`]).
//!
//! Each case is sent as BFCL's OpenAI runner does: `POST …/chat/completions` with `model`,
//! the case's `messages` and `tools`, `temperature: 0`, `max_tokens`, `stream: true` and
//! no `tool_choice`; the native path adds `parallel_tool_calls: true` (older llama-server
//! builds default it to off, which caps the parallel categories). The streamed reply is
//! accumulated as openai-python does: tool-call deltas merged by `index`, `id`,
//! `function.name` and `function.arguments` concatenated, `type` replaced. An SSE `error`
//! event, an event that is not JSON, a tool-call delta without an integer `index`, an HTTP
//! error status or a failed transfer is recorded in the line's `error` (and the case
//! fails); oddities are listed in `notes`. No retries. A request is given up after 600 s
//! without a byte (the runner's per-read time-out), however long the whole reply takes.
//!
//! The results directory gets `run.json` beside the result files: the model, the `tam
//! serve` arguments, the case file and the options of the run; every report names them.

pub(crate) mod native_prompt;
mod python;
pub(crate) mod report;
mod score;
mod stream;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tam::{Protocol, UnknownProtocol};

use crate::server::start_proxy;
use crate::setup::ModelPin;
use crate::{Clock, MODEL_ALIAS, http};
use report::{Case, clip};
use stream::run_case;

/// Which way a case goes to the model; named on the command line (`--paths`) by the
/// protocol's name or `native`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BfclPath {
    /// Through `tam serve --protocol P`.
    Proxy(Protocol),
    /// Straight to the upstream, its own tool calling.
    Native,
}

impl BfclPath {
    /// Every path, in the order run by default.
    pub(crate) const ALL: [BfclPath; 3] = [
        BfclPath::Proxy(Protocol::Tam),
        BfclPath::Proxy(Protocol::Action),
        BfclPath::Native,
    ];

    /// `tam`, `action` ([`Protocol::as_str`]) or `native`: the `--paths` value, and the
    /// name of the path's files.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BfclPath::Proxy(protocol) => protocol.as_str(),
            BfclPath::Native => "native",
        }
    }

    /// The `tam serve` protocol of the path; `None` for native.
    pub(crate) fn protocol(self) -> Option<Protocol> {
        match self {
            BfclPath::Proxy(protocol) => Some(protocol),
            BfclPath::Native => None,
        }
    }

    /// What `--help` says of the path's `--paths` value.
    pub(crate) fn help(self) -> String {
        match self {
            BfclPath::Proxy(protocol) => format!("Through `tam serve --protocol {protocol}`"),
            BfclPath::Native => "Straight to the upstream, its own tool calling".to_owned(),
        }
    }

    fn describe(self) -> String {
        match self {
            BfclPath::Proxy(protocol) => format!("tam serve --protocol {protocol}"),
            BfclPath::Native => {
                "the upstream's native tool calling, parallel_tool_calls: true".to_owned()
            }
        }
    }
}

/// `native`, else a protocol's name as [`Protocol`]'s `FromStr` reads it.
impl std::str::FromStr for BfclPath {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == BfclPath::Native.name() {
            return Ok(BfclPath::Native);
        }
        s.parse().map(BfclPath::Proxy)
    }
}

/// The options of `tam-eval e2e --bfcl FILE`.
#[derive(Debug)]
pub(crate) struct BfclOptions {
    /// The case file.
    pub(crate) file: PathBuf,
    /// Only the first N cases of each category.
    pub(crate) per_category: Option<usize>,
    /// The paths, in the order run.
    pub(crate) paths: Vec<BfclPath>,
    pub(crate) max_tokens: u32,
    /// Where `<path>.jsonl` go.
    pub(crate) out: PathBuf,
    /// An OpenAI base URL (`…/v1`) of a running server, instead of starting llama-server.
    pub(crate) base_url: Option<String>,
}

/// What a BFCL run goes against, and what its reports say about it.
pub(crate) struct Run<'a> {
    /// The OpenAI base URL of the upstream.
    pub(crate) upstream: &'a str,
    /// The line naming the model and the `tam serve` arguments.
    pub(crate) heading: String,
    pub(crate) model: &'a ModelPin,
    /// Given to every `tam serve` after the harness's own arguments.
    pub(crate) serve_args: &'a [String],
}

/// The file beside the results that names what the run was.
pub(crate) const RUN_FILE: &str = "run.json";

/// The cases to run: all, or the first `per_category` of each category (file order).
pub(crate) fn select(cases: &[Case], per_category: Option<usize>) -> Vec<Case> {
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
/// `--base-url` fails at once with a clear message rather than once per case. When the
/// server is a llama-server (its `/props` names the model file) serving another file than
/// `model`'s, a warning says so: the reports would name the wrong model.
pub(crate) fn probe(base_url: &str, model: &ModelPin) -> Result<(), String> {
    let client = http::client(Duration::from_secs(30))?;
    if let Err(e) = http::get_status(&client, &format!("{base_url}/models")) {
        return Err(format!(
            "--base-url {base_url}: nothing answers there ({e}). Start a server first, e.g. \
             `cargo xtask e2e --keep-server` (it prints the URL to use), or leave out \
             --base-url to start llama-server"
        ));
    }
    let root = native_prompt::server_root(base_url);
    if let Ok((200, props)) = http::get_text(&client, &format!("{root}/props"))
        && let Some(path) = serde_json::from_str::<Value>(&props)
            .ok()
            .and_then(|p| p.get("model_path")?.as_str().map(str::to_owned))
        && !path.ends_with(&model.file)
    {
        eprintln!(
            "tam-eval e2e: WARNING: the server at {base_url} serves {path}, not {} \
             (--model {}); the reports name the model given",
            model.file, model.id
        );
    }
    Ok(())
}

/// The `run.json` of a run: what was run, against what, with which arguments.
fn run_record(cases: &[Case], opts: &BfclOptions, run: &Run<'_>) -> Value {
    json!({
        "model": run.model.name,
        "model_id": run.model.id,
        "model_file": run.model.file,
        "model_sha256": run.model.sha256,
        "serve_args": run.serve_args,
        "cases_file": opts.file,
        "cases": cases.len(),
        "per_category": opts.per_category,
        "paths": opts.paths.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "max_tokens": opts.max_tokens,
        "upstream": run.upstream,
        "heading": run.heading,
    })
}

/// Runs every selected path over `cases` against `upstream` (an OpenAI base URL), writes
/// `OUT/<path>.jsonl`, and prints a table per path. Fails only when a path cannot run
/// (`tam serve` does not start, a file cannot be written), not on the model's answers.
pub(crate) fn run(
    cases: &[Case],
    opts: &BfclOptions,
    run: &Run<'_>,
    clock: &mut Clock,
) -> Result<(), String> {
    let upstream = run.upstream;
    fs::create_dir_all(&opts.out).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    let record = opts.out.join(RUN_FILE);
    let text = serde_json::to_string_pretty(&run_record(cases, opts, run))
        .map_err(|e| format!("{}: {e}", record.display()))?;
    fs::write(&record, text + "\n").map_err(|e| format!("{}: {e}", record.display()))?;
    eprintln!("tam-eval e2e: BFCL: {}", run.heading);
    eprintln!(
        "tam-eval e2e: BFCL: {} case(s) of {} through {} (upstream {upstream}, max_tokens {}); \
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
            "tam-eval e2e: BFCL: native prompt sizes of {n} case(s) in {}",
            counts.display()
        ),
        Err(e) => {
            let _ = fs::remove_file(&counts);
            eprintln!(
                "tam-eval e2e: BFCL: no native prompt sizes (the prompt ratio is left out): {e}"
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
                run.serve_args,
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
    let mut report = format!("BFCL {}", run.heading);
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
        "tam-eval e2e: BFCL {}: {} case(s) -> {url}",
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

/// The request of one case, as BFCL's OpenAI runner builds it (streaming).
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
    fn selection_keeps_the_first_cases_of_each_category() {
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
