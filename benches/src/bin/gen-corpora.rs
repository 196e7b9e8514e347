//! Writes the decoding corpora to `benches/data/` (or the directory given as the only
//! argument): for each workload, `NAME.txt` (the reply of `tam_benches::synth`) and
//! `NAME.deltas` (its o200k tokens from tiktoken-rs, regrouped so that each delta ends on
//! a UTF-8 boundary, as byte lengths). Deterministic: rerunning changes nothing.
//!
//! `cargo run -p tam-benches --bin gen-corpora`

use std::path::PathBuf;
use std::process::ExitCode;

use tam_benches::corpus::{Corpus, Workload, data_dir};
use tam_benches::synth;

/// Token byte lengths of `text`, merged so that every delta ends on a character boundary.
fn token_deltas(bpe: &tiktoken_rs::CoreBPE, text: &str) -> Result<Vec<usize>, String> {
    let mut deltas = Vec::new();
    let mut at = 0;
    let mut pending = 0;
    for token in bpe.encode_ordinary(text) {
        let bytes = bpe
            .decode_bytes(&[token])
            .map_err(|e| format!("token {token}: {e:?}"))?;
        pending += bytes.len();
        if text.is_char_boundary(at + pending) {
            deltas.push(pending);
            at += pending;
            pending = 0;
        }
    }
    if at != text.len() {
        return Err(format!("tokens cover {at} of {} bytes", text.len()));
    }
    Ok(deltas)
}

fn run() -> Result<(), String> {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(data_dir, PathBuf::from);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bpe = tiktoken_rs::o200k_base().map_err(|e| format!("o200k vocabulary: {e}"))?;
    for workload in Workload::ALL {
        let text = synth::reply(workload);
        let deltas = token_deltas(&bpe, &text)?;
        let corpus = Corpus { text, deltas };
        corpus.check()?;
        corpus
            .save_to(&dir, workload)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        println!(
            "{}: {} bytes, {} token deltas ({:.2} bytes per delta)",
            workload.name(),
            corpus.text.len(),
            corpus.deltas.len(),
            corpus.text.len() as f64 / corpus.deltas.len() as f64
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen-corpora: {e}");
            ExitCode::FAILURE
        }
    }
}
