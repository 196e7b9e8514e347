//! Feeds the peer workloads to `action_xml::Decoder` with its defaults, in deltas of 1, 4
//! and 30 code points and whole, and prints MB/s (10⁶ bytes of the reply per second) and
//! the calls decoded, to compare two builds of the decoder on the same replies (see
//! `docs/design.md`).
//!
//! `action-workloads DIR [NAME…]`: DIR holds the output of the dev set's
//! `perf/make_workloads.py` (`xml_4k.txt`, `xml_64k.txt`, …); NAME defaults to `xml_4k
//! xml_64k xml_1m`. Each Cline-style call of the file (`<write_to_file>…</write_to_file>`,
//! `<read_file>…</read_file>`) is wrapped in `<ACTION>` … `</ACTION>`; the deltas are the
//! wrapped text cut every N code points, as the generator's `split_cp` cuts. A cell feeds
//! the reply as many times as fit in 0.4 s (at least 3) and takes the mean.
//!
//! It uses only `Decoder::new`, `feed`, `finish` and `Event::Block`, so the same file builds
//! on older checkouts unchanged: copy it into that checkout's `benches/src/bin/` and
//! `cargo build --release -p tam-benches --bin action-workloads`.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use action_xml::{Config, Decoder, Event};

const TOOLS: [&str; 2] = ["write_to_file", "read_file"];

/// The reply with each call wrapped in an `<ACTION>` block.
fn wrap(text: &str) -> String {
    let mut out = text.to_owned();
    for tool in TOOLS {
        out = out
            .replace(&format!("<{tool}>"), &format!("<ACTION>\n<{tool}>"))
            .replace(&format!("</{tool}>"), &format!("</{tool}>\n</ACTION>"));
    }
    out
}

/// `text` cut every `n` code points: the twin of `tam_benches::action::code_point_deltas`,
/// written again here because the first landing's `tam-benches` does not have it and this
/// file must build there unchanged.
fn split(text: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (at, _)) in text.char_indices().enumerate() {
        if count > 0 && count % n == 0 {
            out.push(&text[start..at]);
            start = at;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Decodes `deltas` once; the calls of its blocks.
fn decode(deltas: &[&str]) -> usize {
    let mut calls = 0;
    let mut count = |event: Event<'_>| {
        if let Event::Block(block) = &event {
            calls += block.calls.len();
        }
        black_box(&event);
    };
    let mut decoder = Decoder::new(Config::default());
    for delta in deltas {
        decoder.feed(black_box(delta), &mut count);
    }
    decoder.finish(&mut count);
    calls
}

/// MB/s over `bytes` for `deltas`, and the calls.
fn measure(deltas: &[&str], bytes: usize) -> (f64, usize) {
    let calls = decode(deltas);
    let start = Instant::now();
    let mut runs = 0u32;
    while runs < 3 || start.elapsed() < Duration::from_millis(400) {
        black_box(decode(deltas));
        runs += 1;
    }
    let seconds = start.elapsed().as_secs_f64() / f64::from(runs);
    (bytes as f64 / seconds / 1e6, calls)
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: action-workloads DIR [NAME…]")?;
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = ["xml_4k", "xml_64k", "xml_1m"].map(String::from).to_vec();
    }
    println!("workload\tbytes\tc1 MB/s\tc4 MB/s\tc30 MB/s\twhole MB/s\tcalls");
    for name in names {
        let path = format!("{dir}/{name}.txt");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let reply = wrap(&text);
        let mut row = format!("{name}\t{}", reply.len());
        let mut calls = Vec::new();
        for n in [1, 4, 30] {
            let (speed, c) = measure(&split(&reply, n), reply.len());
            row.push_str(&format!("\t{speed:.1}"));
            calls.push(c);
        }
        let (speed, c) = measure(&[reply.as_str()], reply.len());
        row.push_str(&format!("\t{speed:.1}"));
        calls.push(c);
        calls.dedup();
        row.push_str(&format!("\t{calls:?}"));
        println!("{row}");
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("action-workloads: {e}");
            ExitCode::FAILURE
        }
    }
}
