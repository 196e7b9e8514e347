//! Benchmark support for the workspace: the corpora the decoding benchmarks read, the
//! generator that writes them, and the naive baseline the streaming decoder is compared to.
//!
//! * [`action`] — the ACTION blocks of the `action_xml` benchmark.
//! * [`corpus`] — the four workloads (`prose`, `prose_tam`, `code`, `cjk`) as committed in
//!   `benches/data/`: a 64 KiB model reply and its token deltas, and messages of any size
//!   built from them.
//! * [`synth`] — the deterministic text generator behind `cargo run -p tam-benches --bin
//!   gen-corpora`, which also cuts the text into o200k tokens (tiktoken-rs) regrouped at
//!   UTF-8 boundaries.
//! * [`naive`] — what most clients do today: accumulate the reply and, after every delta,
//!   search the whole of it again for blocks and re-extract them.
//!
//! The benchmarks themselves are in `benches/benches/`; `benches/README.md` says what each
//! measures and how to read the report that `bench-report` writes to `docs/`.

pub mod action;
pub mod corpus;
pub mod naive;
pub mod synth;

/// The workspace README's Rust examples, compiled and run as doctests (here, in an
/// unpublished member that has the libraries as dependencies, because the README is not
/// inside any published package).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
