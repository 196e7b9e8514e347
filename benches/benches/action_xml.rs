//! Parsing one ACTION block (action-xml: scanner, pre-scan with repairs and limits,
//! roxmltree, values to JSON) beside its baseline, `roxmltree::Document::parse` of the same
//! body alone, in the same run: the ratio is what the streaming layer, the checks and the
//! conversion to calls cost on top of the XML parser.
//!
//! Two corpora, generated here: `typical` (one call with text, a list, an object and a
//! CDATA diff: 568 bytes) and `large` (the same parameters repeated 128 times: 66 KiB).
//! Each is parsed fed whole (with argument events, the default, and without:
//! `action_xml_block_no_param_events`) and fed in 64-byte deltas, the way a model's output
//! arrives. Both are well-formed and plain, so action-xml reads them straight from its pull
//! parser (no DOM, no repairing pre-scan); a block that needs repairs or warnings costs a
//! roxmltree parse, and one more pass and parse when roxmltree rejected it as written.
//!
//! `many_blocks` feeds a reply of 1, 2, 4 and 8 MiB holding one small ACTION block per
//! ~1.8 KiB of output (582 blocks per MiB) as one delta: the time must grow linearly
//! (a quadratic scanner would show as time per byte growing with the size).
//!
//! `many_members` parses one call with 2 000 and 20 000 distinct parameter names, each
//! given twice (so each becomes an array): the time per name must stay flat; quadratic
//! bookkeeping of names would multiply it by ten from the first size to the second.
//!
//! `deltas/code` and `deltas/plain` feed a reply holding one `write_to_file` call of 64 KiB
//! to the ACTION decoder in deltas of 1, 4 and 30 code points (`c1`, `c4`, `c30`: token
//! sizes, as the peer workloads cut them) with its defaults (argument events on), beside
//! its baselines in the same run: the decoder fed the reply whole (`whole`), the same
//! feeds with argument events off (`…_no_param_events`), and `roxmltree_body`:
//! `roxmltree::Document::parse` of the block body with the value escaped (the same
//! content as well-formed XML). `code` is Rust-like code with `<` and `&` in almost every
//! line, as models write it (unescaped: the decoder repairs it); `plain` is the same size
//! of code without them. A regression shows as a ratio: deltas against whole, argument
//! events on against off, code against plain (`docs/performance.md`).
//!
//! `cargo bench -p tam-benches --bench action_xml`

use std::hint::black_box;

use action_xml::{Config, Decoder, Event};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tam_benches::action::{
    block as action_block, body, code_point_deltas, code_value, write_call, write_call_body_escaped,
};

fn parse_block(block: &str) -> usize {
    parse_block_with(block, true)
}

/// [`parse_block`] with argument events on (the default) or off.
fn parse_block_with(block: &str, param_events: bool) -> usize {
    parse_block_configured(block, Config::default(), param_events)
}

/// The arguments decoded from `block` fed whole to a decoder with `config`.
fn parse_block_configured(block: &str, config: Config, param_events: bool) -> usize {
    let mut decoder = Decoder::new(config).with_param_events(param_events);
    let mut n = 0;
    let mut count = |e: Event<'_>| {
        if let Event::Block(b) = e {
            n += b.calls.iter().map(|c| c.args.len()).sum::<usize>();
        }
    };
    decoder.feed(block, &mut count);
    decoder.finish(&mut count);
    n
}

fn parse_block_in_deltas(block: &str, delta: usize) -> usize {
    let mut decoder = Decoder::new(Config::default());
    let mut n = 0;
    let mut count = |e: Event<'_>| {
        if let Event::Block(b) = e {
            n += b.calls.iter().map(|c| c.args.len()).sum::<usize>();
        }
    };
    for chunk in block.as_bytes().chunks(delta) {
        decoder.feed_bytes(chunk, &mut count);
    }
    decoder.finish(&mut count);
    n
}

fn bench(c: &mut Criterion) {
    for (name, repeat) in [("typical", 1), ("large", 128)] {
        let body = body(repeat);
        let block = action_block(repeat);
        // The two must agree on what there is to read.
        assert_eq!(parse_block(&block), 5 * repeat);
        assert!(roxmltree::Document::parse(&body).is_ok());

        let mut group = c.benchmark_group(format!("action_xml/{name}"));
        group.throughput(Throughput::Bytes(block.len() as u64));
        group.bench_function(BenchmarkId::new("roxmltree_body", block.len()), |b| {
            b.iter(|| roxmltree::Document::parse(black_box(&body)).map(|d| d.descendants().count()))
        });
        group.bench_function(BenchmarkId::new("action_xml_block", block.len()), |b| {
            b.iter(|| parse_block(black_box(&block)))
        });
        group.bench_function(
            BenchmarkId::new("action_xml_block_no_param_events", block.len()),
            |b| b.iter(|| parse_block_with(black_box(&block), false)),
        );
        group.bench_function(
            BenchmarkId::new("action_xml_block_64b_deltas", block.len()),
            |b| b.iter(|| parse_block_in_deltas(black_box(&block), 64)),
        );
        group.finish();
    }
}

/// A reply of at least `bytes` bytes: prose and one small block, repeated.
fn many_blocks(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 2048);
    let filler = "x".repeat(1700);
    let mut n = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "Step {n}: reading.\n<ACTION><read_file><path>src/f{n}.rs</path><content>{filler}</content></read_file></ACTION>\n"
        ));
        n += 1;
    }
    out
}

fn bench_many_blocks(c: &mut Criterion) {
    let mut group = c.benchmark_group("action_xml/many_blocks");
    group.sample_size(10);
    for mib in [1, 2, 4, 8] {
        let reply = many_blocks(mib << 20);
        let blocks = reply.matches("</ACTION>").count();
        assert_eq!(parse_block(&reply), 2 * blocks);
        group.throughput(Throughput::Bytes(reply.len() as u64));
        group.bench_function(BenchmarkId::new("whole", format!("{mib}MiB")), |b| {
            b.iter(|| parse_block(black_box(&reply)))
        });
    }
    group.finish();
}

/// One call whose `names` distinct parameters are each given twice.
fn many_members(names: usize) -> String {
    let mut body = String::with_capacity(names * 24);
    for i in 0..names {
        body.push_str(&format!("<k{i}>a</k{i}><k{i}>b</k{i}>"));
    }
    format!("<ACTION><t>{body}</t></ACTION>")
}

fn bench_many_members(c: &mut Criterion) {
    let mut group = c.benchmark_group("action_xml/many_members");
    group.sample_size(10);
    for names in [2_000, 20_000] {
        let block = many_members(names);
        let mut config = Config::default();
        config.max_nodes = u32::try_from(10 * names).unwrap();
        let parse = |block: &str| parse_block_configured(block, config, true);
        assert_eq!(parse(&block), names);
        group.throughput(Throughput::Elements(names as u64));
        group.bench_function(BenchmarkId::new("names", names), |b| {
            b.iter(|| parse(black_box(&block)))
        });
    }
    group.finish();
}

/// The calls of `deltas` fed to a decoder with argument events `on`, and the text of the
/// argument pieces streamed (joined).
fn feed_deltas(deltas: &[&str], on: bool) -> (Vec<action_xml::ActionCall>, String) {
    let mut decoder = Decoder::new(Config::default()).with_param_events(on);
    let mut calls = Vec::new();
    let mut streamed = String::new();
    let mut see = |e: Event<'_>| match e {
        Event::Block(b) => calls.extend(b.calls),
        Event::ParamText { text, .. } => streamed.push_str(&text),
        _ => {}
    };
    for d in deltas {
        decoder.feed(d, &mut see);
    }
    decoder.finish(&mut see);
    (calls, streamed)
}

/// The number of events of `deltas` fed to a decoder with argument events `on`: what a
/// client looks at, nothing kept.
fn count_events(deltas: &[&str], on: bool) -> usize {
    let mut decoder = Decoder::new(Config::default()).with_param_events(on);
    let mut n = 0;
    let mut see = |e: Event<'_>| {
        n += 1;
        black_box(&e);
    };
    for d in deltas {
        decoder.feed(black_box(d), &mut see);
    }
    decoder.finish(&mut see);
    n
}

/// Value size of the `deltas` groups.
const DELTAS_VALUE: usize = 64 << 10;

fn bench_deltas(c: &mut Criterion) {
    for (name, markup) in [("code", true), ("plain", false)] {
        let value = code_value(DELTAS_VALUE, markup);
        let reply = write_call(&value);
        let body = write_call_body_escaped(&value);
        let cuts: Vec<(String, Vec<&str>)> = [1, 4, 30]
            .iter()
            .map(|&n| (format!("c{n}"), code_point_deltas(&reply, n)))
            .chain([("whole".to_owned(), vec![reply.as_str()])])
            .collect();
        // Every way of feeding reads the same call, whose content is the value (the two
        // references in its comments decoded); the pieces streamed hold it; roxmltree reads
        // the value from the escaped body.
        let decoded = value.replace("&lt;", "<").replace("&amp;", "&");
        let (want, _) = feed_deltas(&[reply.as_str()], false);
        assert_eq!(want.len(), 1);
        assert_eq!(want[0].get_str("content"), Some(decoded.trim()));
        for (_, deltas) in &cuts {
            for on in [true, false] {
                let (calls, streamed) = feed_deltas(deltas, on);
                assert_eq!(calls, want);
                assert_eq!(streamed.contains(decoded.trim()), on);
            }
        }
        let doc = roxmltree::Document::parse(&body).unwrap();
        let content = doc
            .descendants()
            .find(|n| n.has_tag_name("content"))
            .unwrap();
        assert_eq!(content.text().map(str::trim), Some(value.trim()));

        let mut group = c.benchmark_group(format!("action_xml/deltas/{name}"));
        group.throughput(Throughput::Bytes(reply.len() as u64));
        group.sample_size(20);
        for (cut, deltas) in &cuts {
            group.bench_function(BenchmarkId::new(cut.as_str(), reply.len()), |b| {
                b.iter(|| count_events(deltas, true))
            });
            group.bench_function(
                BenchmarkId::new(format!("{cut}_no_param_events"), reply.len()),
                |b| b.iter(|| count_events(deltas, false)),
            );
        }
        group.bench_function(BenchmarkId::new("roxmltree_body", reply.len()), |b| {
            b.iter(|| roxmltree::Document::parse(black_box(&body)).map(|d| d.descendants().count()))
        });
        group.finish();
    }
}

criterion_group!(
    benches,
    bench,
    bench_deltas,
    bench_many_blocks,
    bench_many_members
);
criterion_main!(benches);
