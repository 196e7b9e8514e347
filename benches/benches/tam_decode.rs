//! Decoding TAM replies (tam-parse), one criterion group per workload
//! (`tam_decode/prose`, `tam_decode/prose_tam`, `tam_decode/code`, `tam_decode/cjk`), each
//! at message sizes from 1 KiB to 1 MiB, all with `Throughput::Bytes` of the message:
//!
//! * `whole` — a decoder fed the message as one `&str`, then finished;
//! * `tokens` — fed in its o200k token deltas (`&str`, from `benches/data/NAME.deltas`);
//! * `bytes` — fed one byte at a time (`feed_bytes`: deltas split UTF-8 characters);
//! * `delta_16`, `delta_64`, `delta_256`, `delta_4096` — at 64 KiB only, fed in byte deltas
//!   of that size (for the plot of throughput against delta size);
//! * `memmem` — baseline: `memchr::memmem::find_iter` of the start marker over the same
//!   bytes, the floor for finding blocks at all;
//! * `naive` — baseline: the reply accumulated in a `String` and re-parsed from the start
//!   after every token delta (`tam_benches::naive`), what most clients do today. Quadratic,
//!   so only up to 64 KiB.
//!
//! `tam_decode/one_delta` feeds 1, 2, 4 and 8 MiB of prose with a block every ~400 bytes
//! as ONE delta (`whole`; `whole_params` with argument streaming on): throughput must stay
//! flat as the size grows (a scanner that copies the rest of the delta per block is
//! quadratic here).
//!
//! `bench-report` turns the results into the ratios of `docs/performance.md`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use memchr::memmem;
use tam_benches::corpus::{Corpus, Message, SIZES, Workload};
use tam_benches::naive::Reparser;
use tam_parse::{Config, Decoder, Dialect, Event};

/// The naive baseline stops here: beyond it one run takes seconds.
const NAIVE_MAX: usize = 64 * 1024;

/// The message size at which fixed delta sizes are measured too.
const DELTA_SWEEP_SIZE: usize = 64 * 1024;

/// Fixed delta sizes (`delta_N`, fed as bytes) for the throughput-against-delta-size plot.
const DELTA_SIZES: [usize; 4] = [16, 64, 256, 4096];

/// What the decoder found, so that no work can be optimised away.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Found {
    text_bytes: usize,
    blocks: usize,
    calls: usize,
}

impl Found {
    fn see(&mut self, event: Event<'_>) {
        match event {
            Event::Text { text, .. } => self.text_bytes += text.len(),
            Event::Block(b) => {
                self.blocks += 1;
                self.calls += b.calls.len();
            }
            _ => {}
        }
    }
}

fn decode_whole(text: &str) -> Found {
    let mut found = Found::default();
    let mut decoder = Decoder::new(Config::default().with_param_events(false));
    decoder.feed(text, |e| found.see(e));
    decoder.finish(|e| found.see(e));
    found
}

/// [`decode_whole`] with argument streaming on (`Config::param_events`, the default).
fn decode_whole_params(text: &str) -> Found {
    let mut found = Found::default();
    let mut decoder = Decoder::new(Config::default());
    decoder.feed(text, |e| found.see(e));
    decoder.finish(|e| found.see(e));
    found
}

fn decode_tokens(message: &Message) -> Found {
    let mut found = Found::default();
    let mut decoder = Decoder::new(Config::default().with_param_events(false));
    for delta in message.token_deltas() {
        decoder.feed(delta, |e| found.see(e));
    }
    decoder.finish(|e| found.see(e));
    found
}

fn decode_chunks(text: &str, delta: usize) -> Found {
    let mut found = Found::default();
    let mut decoder = Decoder::new(Config::default().with_param_events(false));
    for chunk in text.as_bytes().chunks(delta) {
        decoder.feed_bytes(chunk, |e| found.see(e));
    }
    decoder.finish(|e| found.see(e));
    found
}

fn start_markers(text: &str) -> usize {
    memmem::find_iter(text.as_bytes(), Dialect::Tam.start_marker().as_bytes()).count()
}

fn reparse_tokens(message: &Message) -> usize {
    let mut client = Reparser::new(Dialect::Tam);
    let mut blocks = 0;
    for delta in message.token_deltas() {
        blocks = client.push(delta).blocks;
    }
    blocks
}

/// The sizes to run: all under `cargo bench`; under `cargo test` (no `--bench` flag, each
/// benchmark runs once as a smoke test, unoptimised) only the small ones, so that the
/// quadratic baseline and the 1 MiB setup stay cheap.
fn sizes() -> &'static [usize] {
    if std::env::args().any(|a| a == "--bench") {
        &SIZES
    } else {
        &SIZES[..2]
    }
}

fn bench_workload(c: &mut Criterion, workload: Workload) {
    let corpus = Corpus::load(workload)
        .unwrap_or_else(|e| panic!("benches/data/{}: {e} (run gen-corpora)", workload.name()));
    let mut group = c.benchmark_group(format!("tam_decode/{}", workload.name()));
    let sizes = sizes();
    let sweep_size = sizes
        .iter()
        .copied()
        .filter(|&s| s <= DELTA_SWEEP_SIZE)
        .max();
    for &size in sizes {
        let message = corpus.message(size);
        let text = message.text.as_str();
        // The ways of feeding must agree, and the naive client must see the same blocks.
        let whole = decode_whole(text);
        assert_eq!(decode_tokens(&message), whole, "{} {size}", workload.name());
        if size <= NAIVE_MAX {
            assert_eq!(
                reparse_tokens(&message),
                whole.blocks,
                "{} {size}",
                workload.name()
            );
        }

        group.throughput(Throughput::Bytes(message.len() as u64));
        group.bench_with_input(BenchmarkId::new("whole", size), text, |b, t| {
            b.iter(|| decode_whole(black_box(t)))
        });
        group.bench_with_input(BenchmarkId::new("tokens", size), &message, |b, m| {
            b.iter(|| decode_tokens(black_box(m)))
        });
        group.bench_with_input(BenchmarkId::new("bytes", size), text, |b, t| {
            b.iter(|| decode_chunks(black_box(t), 1))
        });
        if Some(size) == sweep_size {
            for delta in DELTA_SIZES {
                assert_eq!(decode_chunks(text, delta), whole);
                let id = BenchmarkId::new(format!("delta_{delta}"), size);
                group.bench_with_input(id, text, |b, t| {
                    b.iter(|| decode_chunks(black_box(t), delta))
                });
            }
        }
        group.bench_with_input(BenchmarkId::new("memmem", size), text, |b, t| {
            b.iter(|| start_markers(black_box(t)))
        });
        if size <= NAIVE_MAX {
            group.bench_with_input(BenchmarkId::new("naive", size), &message, |b, m| {
                b.iter(|| reparse_tokens(black_box(m)))
            });
        }
    }
    group.finish();
}

/// Prose with many blocks, `size` bytes (whole units).
fn many_blocks(size: usize) -> String {
    const UNIT: &str = "The model explains what it will do next, with code like `a < b && c > d` and \
        <b>markup</b>; then it calls the tool.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Write「末」\n\
        path:「始」/tmp/out.txt「末」\ncontent:「始」fn main() { let v: Vec<u8> = vec![]; }\n「末」\n\
        <|[END_TOOL]|>\nDone; the file is written.\n";
    UNIT.repeat(size / UNIT.len())
}

fn bench_one_delta(c: &mut Criterion) {
    let mut group = c.benchmark_group("tam_decode/one_delta");
    let sizes: &[usize] = if std::env::args().any(|a| a == "--bench") {
        &[1 << 20, 2 << 20, 4 << 20, 8 << 20]
    } else {
        &[64 << 10]
    };
    for &size in sizes {
        let text = many_blocks(size);
        let found = decode_whole(&text);
        assert_eq!(found.blocks, start_markers(&text));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("whole", size), text.as_str(), |b, t| {
            b.iter(|| decode_whole(black_box(t)))
        });
        group.bench_with_input(
            BenchmarkId::new("whole_params", size),
            text.as_str(),
            |b, t| b.iter(|| decode_whole_params(black_box(t))),
        );
    }
    group.finish();
}

fn tam_decode(c: &mut Criterion) {
    for workload in Workload::ALL {
        bench_workload(c, workload);
    }
    bench_one_delta(c);
}

criterion_group! {
    name = benches;
    // 128 benchmarks: short warm-ups and measurements keep a full run near ten minutes.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = tam_decode
}
criterion_main!(benches);
