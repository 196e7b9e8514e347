//! Runs one decoding case in a loop, for a profiler (`valgrind --tool=callgrind`, `perf`):
//! nothing else runs, so the profile is the case alone.
//!
//! `profile-decode WORKLOAD SIZE MODE [ITERATIONS]` with WORKLOAD one of `prose`,
//! `prose_tam`, `code`, `cjk`; SIZE in bytes; MODE `whole`, `tokens` or `bytes`.
//!
//! `profile-decode action REPEAT MODE [ITERATIONS]` parses the `action_xml` benchmark's
//! block (`REPEAT` rounds of parameters: 1 is `typical`, 128 is `large`) with MODE `whole`,
//! `quiet` (whole, argument events off), `deltas` (64 bytes, as the benchmark) or
//! `roxmltree` (the baseline: its body alone).
//!
//! `profile-decode write code|plain MODE [ITERATIONS]` decodes the reply of the
//! `action_xml/deltas` groups (one `write_to_file` of 64 KiB of code with `<` and `&`, or of
//! plain code) with MODE `whole`, `c1`, `c4` or `c30` (deltas of that many code points);
//! `whole_quiet`, `c30_quiet`, … turn argument events off.
//!
//! `cargo build --release -p tam-benches --bin profile-decode && valgrind --tool=callgrind
//! target/release/profile-decode prose 65536 tokens 20`

use std::hint::black_box;
use std::process::ExitCode;

use tam_benches::action;
use tam_benches::corpus::{Corpus, Workload};
use tam_parse::{Config, Decoder, Event};

fn run() -> Result<usize, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, size, mode, rest @ ..] = args.as_slice() else {
        return Err("usage: profile-decode WORKLOAD SIZE MODE [ITERATIONS]".into());
    };
    if workload == "action" {
        return action(size, mode, rest);
    }
    if workload == "write" {
        return write(size, mode, rest);
    }
    let workload =
        Workload::from_name(workload).ok_or_else(|| format!("no workload {workload}"))?;
    let size: usize = size.parse().map_err(|e| format!("size: {e}"))?;
    let iterations: usize = match rest.first() {
        Some(n) => n.parse().map_err(|e| format!("iterations: {e}"))?,
        None => 10,
    };
    let message = Corpus::load(workload)
        .map_err(|e| e.to_string())?
        .message(size);
    let mut seen = 0usize;
    let mut see = |e: Event<'_>| {
        if let Event::Text { text, .. } = &e {
            seen += text.len();
        }
    };
    for _ in 0..iterations {
        let mut decoder = Decoder::new(Config::default());
        match mode.as_str() {
            "whole" => decoder.feed(black_box(&message.text), &mut see),
            "tokens" => {
                for delta in message.token_deltas() {
                    decoder.feed(black_box(delta), &mut see);
                }
            }
            "bytes" => {
                for byte in message.text.as_bytes().chunks(1) {
                    decoder.feed_bytes(black_box(byte), &mut see);
                }
            }
            other => return Err(format!("no mode {other}")),
        }
        decoder.finish(&mut see);
    }
    Ok(seen)
}

/// The `action` workload: one ACTION block parsed `ITERATIONS` times.
fn action(repeat: &str, mode: &str, rest: &[String]) -> Result<usize, String> {
    let repeat: usize = repeat.parse().map_err(|e| format!("repeat: {e}"))?;
    let iterations: usize = match rest.first() {
        Some(n) => n.parse().map_err(|e| format!("iterations: {e}"))?,
        None => 10,
    };
    let body = action::body(repeat);
    let block = action::block(repeat);
    let mut seen = 0usize;
    for _ in 0..iterations {
        let mut see = |e: action_xml::Event<'_>| {
            if let action_xml::Event::Block(b) = e {
                seen += b.calls.iter().map(|c| c.args.len()).sum::<usize>();
            }
        };
        let mut decoder = action_xml::Decoder::new(action_xml::Config::default())
            .with_param_events(mode != "quiet");
        match mode {
            "whole" | "quiet" => decoder.feed(black_box(&block), &mut see),
            "deltas" => {
                for delta in block.as_bytes().chunks(64) {
                    decoder.feed_bytes(black_box(delta), &mut see);
                }
            }
            "roxmltree" => {
                let doc =
                    roxmltree::Document::parse(black_box(&body)).map_err(|e| e.to_string())?;
                black_box(doc.descendants().count());
            }
            other => return Err(format!("no mode {other}")),
        }
        decoder.finish(&mut see);
    }
    Ok(seen)
}

/// The `write` workload: the `action_xml/deltas` reply fed `ITERATIONS` times.
fn write(kind: &str, mode: &str, rest: &[String]) -> Result<usize, String> {
    let markup = match kind {
        "code" => true,
        "plain" => false,
        other => return Err(format!("no write workload {other} (code, plain)")),
    };
    let iterations: usize = match rest.first() {
        Some(n) => n.parse().map_err(|e| format!("iterations: {e}"))?,
        None => 10,
    };
    let reply = action::write_call(&action::code_value(64 << 10, markup));
    let (cut, quiet) = match mode.strip_suffix("_quiet") {
        Some(cut) => (cut, true),
        None => (mode, false),
    };
    let deltas = match cut {
        "whole" => vec![reply.as_str()],
        c => {
            let n = c
                .strip_prefix('c')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("no mode {mode}"))?;
            action::code_point_deltas(&reply, n)
        }
    };
    let mut seen = 0usize;
    for _ in 0..iterations {
        let mut see = |e: action_xml::Event<'_>| {
            seen += 1;
            black_box(&e);
        };
        let mut decoder =
            action_xml::Decoder::new(action_xml::Config::default()).with_param_events(!quiet);
        for delta in &deltas {
            decoder.feed(black_box(delta), &mut see);
        }
        decoder.finish(&mut see);
    }
    Ok(seen)
}

fn main() -> ExitCode {
    match run() {
        Ok(seen) => {
            println!("{seen} bytes of text");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("profile-decode: {e}");
            ExitCode::FAILURE
        }
    }
}
