//! Reads criterion's results and writes the performance report: `docs/performance.md` (the
//! goal ratios, every measurement, the idle decoder's memory) and two plots,
//! `docs/throughput-vs-message-size.svg` and `docs/throughput-vs-delta-size.svg`.
//!
//! `cargo run --release -p tam-benches --bin bench-report [CRITERION_DIR [DOCS_DIR]]`
//!
//! Criterion's directory is the argument, else `$CRITERION_HOME`, else
//! `$CARGO_TARGET_DIR/criterion`, else `target/criterion` of the workspace — where
//! `cargo bench` left it. Each `new/benchmark.json` names a benchmark and its throughput;
//! the `new/estimates.json` beside it gives its time (criterion's slope estimate, or the
//! mean when there is none). Every ratio is taken between results of the same run.

// A global allocator cannot be written without `unsafe`: it counts the heap an idle
// decoder holds (the only unsafe code in the workspace outside a test).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicIsize, Ordering};

use serde_json::Value;
use tam_benches::corpus::{Corpus, SIZES, Workload};

mod chart;
use chart::{delta_size_plot, message_size_plot};

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// One measured benchmark.
#[derive(Debug, Clone)]
struct Measurement {
    group: String,
    function: String,
    parameter: String,
    /// Nanoseconds per iteration.
    ns: f64,
    /// Bytes per iteration, when the benchmark declared `Throughput::Bytes`.
    bytes: Option<u64>,
    /// Elements per iteration, when it declared `Throughput::Elements`.
    elements: Option<u64>,
}

impl Measurement {
    fn mib_per_s(&self) -> Option<f64> {
        self.bytes
            .map(|b| b as f64 / self.ns * 1e9 / (1024.0 * 1024.0))
    }
}

type Results = BTreeMap<(String, String, String), Measurement>;

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn collect(dir: &Path, out: &mut Results) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if !path.is_dir() {
            continue;
        }
        let benchmark = path.join("new/benchmark.json");
        if benchmark.is_file() {
            let id = read_json(&benchmark)?;
            let estimates = read_json(&path.join("new/estimates.json"))?;
            let ns = ["slope", "mean"]
                .iter()
                .find_map(|k| estimates[k]["point_estimate"].as_f64())
                .ok_or_else(|| format!("{}: no estimate", path.display()))?;
            let text = |k: &str| id[k].as_str().unwrap_or_default().to_owned();
            let m = Measurement {
                group: text("group_id"),
                function: text("function_id"),
                parameter: text("value_str"),
                ns,
                bytes: id["throughput"]["Bytes"].as_u64(),
                elements: id["throughput"]["Elements"].as_u64(),
            };
            out.insert(
                (m.group.clone(), m.function.clone(), m.parameter.clone()),
                m,
            );
        } else if path.file_name().is_some_and(|n| n != "report") {
            collect(&path, out)?;
        }
    }
    Ok(())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ lives in the workspace")
        .to_path_buf()
}

fn criterion_dir() -> PathBuf {
    if let Some(dir) = std::env::args_os().nth(1) {
        return dir.into();
    }
    if let Some(dir) = std::env::var_os("CRITERION_HOME") {
        return dir.into();
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir).join("criterion");
    }
    workspace_root().join("target/criterion")
}

fn get<'r>(
    r: &'r Results,
    group: &str,
    function: &str,
    parameter: usize,
) -> Option<&'r Measurement> {
    r.get(&(group.to_owned(), function.to_owned(), parameter.to_string()))
}

/// The measurement of `function` in `group`, whatever its parameter (the `action_xml/deltas`
/// groups have one size each, the reply's bytes).
fn find<'r>(r: &'r Results, group: &str, function: &str) -> Option<&'r Measurement> {
    r.values()
        .find(|m| m.group == group && m.function == function)
}

/// The ACTION replies fed in deltas (`benches/benches/action_xml.rs`, `bench_deltas`).
const ACTION_DELTA_CORPORA: [&str; 2] = ["code", "plain"];
/// Their feeds: deltas of 1, 4 and 30 code points, and whole.
const ACTION_FEEDS: [&str; 4] = ["c1", "c4", "c30", "whole"];

fn action_deltas_group(corpus: &str) -> String {
    format!("action_xml/deltas/{corpus}")
}

/// Goals of the ACTION decoder fed in token-sized deltas: argument events on against off
/// (token deltas), code-heavy against plain (every feed), fed whole against roxmltree.
fn action_delta_goals(r: &Results, goals: &mut Vec<Goal>) {
    // Argument events on against off, at the same deltas.
    let mut worst: Option<(f64, String)> = None;
    let mut all = Vec::new();
    for corpus in ACTION_DELTA_CORPORA {
        let g = action_deltas_group(corpus);
        for feed in &ACTION_FEEDS[..3] {
            let on = find(r, &g, feed);
            let off = find(r, &g, &format!("{feed}_no_param_events"));
            if let (Some(on), Some(off)) = (on, off) {
                let x = off.ns / on.ns;
                all.push(format!("{corpus} {feed}: {x:.2}×"));
                if worst.as_ref().is_none_or(|(v, _)| x < *v) {
                    worst = Some((x, format!("{corpus} {feed}")));
                }
            }
        }
    }
    if let Some((x, at)) = worst {
        goals.push(Goal {
            name: "ACTION, token deltas (1, 4, 30 code points): argument events on ≥ 0.6× off"
                .into(),
            measured: format!("min {x:.2}× ({at}; {})", all.join(", ")),
            met: x >= 0.6,
        });
    }
    // Code with `<` and `&` in every line against the same size without.
    let code = action_deltas_group("code");
    let plain = action_deltas_group("plain");
    let mut worst: Option<(f64, &str)> = None;
    let mut all = Vec::new();
    for feed in ACTION_FEEDS {
        let (Some(c), Some(p)) = (find(r, &code, feed), find(r, &plain, feed)) else {
            continue;
        };
        // Per byte: the two replies differ by a few bytes.
        let x = (c.ns / c.bytes.unwrap_or(1) as f64) / (p.ns / p.bytes.unwrap_or(1) as f64);
        all.push(format!("{feed}: {x:.2}×"));
        if worst.is_none_or(|(v, _)| x > v) {
            worst = Some((x, feed));
        }
    }
    if let Some((x, at)) = worst {
        goals.push(Goal {
            name: "ACTION, a 64 KiB value of code with `<` and `&` ≤ 1.25× the time per byte of plain code (deltas and whole)".into(),
            measured: format!("max {x:.2}× ({at}; {})", all.join(", ")),
            met: x <= 1.25,
        });
    }
    // Fed whole against roxmltree of the same content, escaped.
    for corpus in ACTION_DELTA_CORPORA {
        let g = action_deltas_group(corpus);
        if let (Some(m), Some(base)) = (find(r, &g, "whole"), find(r, &g, "roxmltree_body")) {
            let x = m.ns / base.ns;
            goals.push(Goal {
                name: format!("ACTION reply fed whole ({g}) ≤ 1.5× roxmltree of the escaped body"),
                measured: format!("{x:.2}× ({} vs {})", time_label(m.ns), time_label(base.ns)),
                met: x <= 1.5,
            });
        }
    }
}

fn size_label(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn time_label(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "**missed**" }
}

/// A goal: what it asks, what was measured, whether it holds.
struct Goal {
    name: String,
    measured: String,
    met: bool,
}

/// The memory of an idle decoder.
struct IdleMemory {
    struct_bytes: usize,
    heap_new: isize,
    heap_after_prose: isize,
    buffered_after_prose: usize,
    heap_after_block: isize,
}

fn idle_memory() -> IdleMemory {
    use tam_parse::{Config, Decoder};
    // The grammar is built once per process: build it before counting; so is the input.
    drop(Decoder::new(Config::default()));
    let prose = Corpus::load(Workload::Prose).map(|c| c.message(16 * 1024));
    let before = live();
    let mut decoder = Decoder::new(Config::default());
    let heap_new = live() - before;
    if let Ok(m) = &prose {
        for delta in m.token_deltas() {
            decoder.feed(delta, |_| {});
        }
    }
    let heap_after_prose = live() - before;
    let buffered_after_prose = decoder.buffered();
    decoder.feed(
        "<|[REQUEST_TOOL]|>\ncommand:「始」FileOperator.ReadFile「末」\nfilePath:「始」/tmp/a.txt「末」\n<|[END_TOOL]|>\n",
        |e| drop(e.into_owned()),
    );
    let heap_after_block = live() - before;
    drop(decoder);
    IdleMemory {
        struct_bytes: std::mem::size_of::<Decoder>(),
        heap_new,
        heap_after_prose,
        buffered_after_prose,
        heap_after_block,
    }
}

/// The decoding benchmarks' functions, in table order, with how they feed the decoder.
const FEEDS: [(&str, &str); 5] = [
    ("whole", "decoder, whole"),
    ("tokens", "decoder, token deltas"),
    ("bytes", "decoder, 1-byte deltas"),
    ("memmem", "memmem start marker"),
    ("naive", "naive re-parse, token deltas"),
];

fn group_of(w: Workload) -> String {
    format!("tam_decode/{}", w.name())
}

fn mean_token_bytes(w: Workload) -> Option<f64> {
    let c = Corpus::load(w).ok()?;
    Some(c.text.len() as f64 / c.deltas.len() as f64)
}

fn goals(r: &Results, idle: &IdleMemory) -> Vec<Goal> {
    let mut goals = Vec::new();
    let ratio = |a: Option<&Measurement>, b: Option<&Measurement>| Some(b?.ns / a?.ns);

    // Prose, whole buffer, against memmem of the start marker.
    let prose = group_of(Workload::Prose);
    let per_size: Vec<(usize, f64)> = SIZES
        .iter()
        .filter_map(|&s| {
            Some((
                s,
                ratio(get(r, &prose, "whole", s), get(r, &prose, "memmem", s))?,
            ))
        })
        .collect();
    if let Some(min) = per_size.iter().map(|p| p.1).reduce(f64::min) {
        let list: Vec<String> = per_size
            .iter()
            .map(|(s, x)| format!("{}: {x:.2}×", size_label(*s)))
            .collect();
        goals.push(Goal {
            name: "prose, whole buffer ≥ 0.5× memmem of the start marker".into(),
            measured: format!("min {min:.2}× ({})", list.join(", ")),
            met: min >= 0.5,
        });
    }

    // Token deltas against the same decoder fed whole.
    let mut worst: Option<(f64, String)> = None;
    for w in Workload::ALL {
        for s in SIZES {
            let g = group_of(w);
            if let Some(x) = ratio(get(r, &g, "tokens", s), get(r, &g, "whole", s))
                && worst.as_ref().is_none_or(|(v, _)| x < *v)
            {
                worst = Some((x, format!("{} at {}", w.name(), size_label(s))));
            }
        }
    }
    if let Some((x, at)) = worst {
        goals.push(Goal {
            name: "token deltas ≥ 0.25× the decoder fed whole (every workload and size)".into(),
            measured: format!("min {x:.3}× ({at})"),
            met: x >= 0.25,
        });
    }

    // One-byte deltas: per-byte cost flat within 2× across sizes.
    for w in Workload::ALL {
        let g = group_of(w);
        let per_byte: Vec<f64> = SIZES
            .iter()
            .filter_map(|&s| {
                let m = get(r, &g, "bytes", s)?;
                Some(m.ns / m.bytes? as f64)
            })
            .collect();
        if per_byte.len() >= 2 {
            let lo = per_byte.iter().copied().fold(f64::MAX, f64::min);
            let hi = per_byte.iter().copied().fold(0.0, f64::max);
            goals.push(Goal {
                name: format!(
                    "{}: 1-byte deltas, per-byte cost 1 KiB…1 MiB within 2×",
                    w.name()
                ),
                measured: format!("{lo:.2}…{hi:.2} ns/byte ({:.2}×)", hi / lo),
                met: hi / lo <= 2.0,
            });
        }
    }

    // Against the naive re-parse at 64 KiB.
    for w in Workload::ALL {
        let g = group_of(w);
        if let Some(x) = ratio(get(r, &g, "tokens", 1 << 16), get(r, &g, "naive", 1 << 16)) {
            goals.push(Goal {
                name: format!(
                    "{}: token deltas ≥ 100× the naive re-parse at 64 KiB",
                    w.name()
                ),
                measured: format!("{x:.0}×"),
                met: x >= 100.0,
            });
        }
    }

    // ACTION against roxmltree alone (benches/benches/action_xml.rs).
    for ((group, function, parameter), m) in r {
        if group.starts_with("action_xml/") && function == "action_xml_block" {
            let key = (
                group.clone(),
                "roxmltree_body".to_owned(),
                parameter.clone(),
            );
            if let Some(base) = r.get(&key) {
                let x = m.ns / base.ns;
                goals.push(Goal {
                    name: format!("ACTION block ({group}, {parameter} B) ≤ 1.5× roxmltree alone"),
                    measured: format!("{x:.2}× ({} vs {})", time_label(m.ns), time_label(base.ns)),
                    met: x <= 1.5,
                });
            }
        }
    }

    action_delta_goals(r, &mut goals);

    let idle_heap = idle.heap_new.max(0) as usize;
    goals.push(Goal {
        name: "idle decoder ≤ 256 bytes plus its buffer".into(),
        measured: format!(
            "`size_of::<Decoder>()` = {} B; heap of a new decoder {} B",
            idle.struct_bytes, idle.heap_new
        ),
        met: idle.struct_bytes + idle_heap <= 256,
    });
    goals
}

/// The first lines of the report: it is generated, and written over whole by each run.
const NOTICE: &str = "<!-- Generated by `cargo xtask bench` (benches/src/bin/bench-report): \
    each run writes this file over whole. Design notes and their measurements are in \
    design.md. -->";

/// Where criterion's results were read, for the report: relative to the workspace when
/// they are inside it (`target/criterion`), as given when given relative, else not named —
/// the report names no path of the machine that wrote it.
fn criterion_label(criterion: &Path, root: &Path) -> String {
    let shown = if criterion.is_relative() {
        Some(criterion)
    } else {
        criterion.strip_prefix(root).ok()
    };
    match shown {
        Some(path) if !path.as_os_str().is_empty() => format!(" in `{}`", path.display()),
        _ => String::new(),
    }
}

fn report(r: &Results, idle: &IdleMemory, criterion: &Path) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "{NOTICE}\n\n# Performance\n");
    let _ = writeln!(
        md,
        "Written by `bench-report` from criterion's results{} (`cargo xtask bench`). \
         Every ratio is between two results of the same run. Inputs: `benches/data/` \
         (see `benches/README.md`). Machine: {}.\n",
        criterion_label(criterion, &workspace_root()),
        machine()
    );
    let _ = writeln!(md, "## Goals\n\n| goal | measured | |\n|---|---|---|");
    for g in goals(r, idle) {
        let _ = writeln!(md, "| {} | {} | {} |", g.name, g.measured, verdict(g.met));
    }

    let _ = writeln!(
        md,
        "\n## Decoding (tam-parse)\n\nThroughput in MiB/s of message bytes; ratios: token deltas \
         and 1-byte deltas over whole, whole over memmem, naive time over token-delta time.\n"
    );
    for w in Workload::ALL {
        let g = group_of(w);
        if !SIZES.iter().any(|&s| get(r, &g, "whole", s).is_some()) {
            continue;
        }
        let token = mean_token_bytes(w)
            .map_or(String::new(), |b| format!(", {b:.2} bytes per token delta"));
        let _ = writeln!(md, "### `{g}`{token}\n");
        let mut header = String::from("| size |");
        for (_, label) in FEEDS {
            let _ = write!(header, " {label} |");
        }
        header.push_str(" tokens / whole | bytes / whole | whole / memmem | naive / tokens |");
        let _ = writeln!(md, "{header}\n|{}", "---|".repeat(FEEDS.len() + 5));
        for s in SIZES {
            let mut row = format!("| {} |", size_label(s));
            for (f, _) in FEEDS {
                let cell = get(r, &g, f, s)
                    .and_then(Measurement::mib_per_s)
                    .map_or("–".into(), |v| format!("{v:.1}"));
                let _ = write!(row, " {cell} |");
            }
            let t = |f: &str| get(r, &g, f, s).map(|m| m.ns);
            let cell = |x: Option<f64>, digits: usize| {
                x.map_or("–".into(), |x| format!("{x:.digits$}×"))
            };
            let tokens = t("tokens");
            let whole = t("whole");
            let _ = writeln!(
                row,
                " {} | {} | {} | {} |",
                cell(whole.zip(tokens).map(|(w, t)| w / t), 2),
                cell(whole.zip(t("bytes")).map(|(w, b)| w / b), 2),
                cell(t("memmem").zip(whole).map(|(m, w)| m / w), 2),
                cell(t("naive").zip(tokens).map(|(n, t)| n / t), 0),
            );
            md.push_str(&row);
        }
        let sweep: Vec<String> = [16, 64, 256, 4096]
            .iter()
            .filter_map(|d| {
                let v = get(r, &g, &format!("delta_{d}"), 1 << 16)?.mib_per_s()?;
                Some(format!("{d} B: {v:.1}"))
            })
            .collect();
        if !sweep.is_empty() {
            let _ = writeln!(
                md,
                "\nFixed byte deltas at 64 KiB (MiB/s): {}.",
                sweep.join(", ")
            );
        }
        md.push('\n');
    }

    if ACTION_DELTA_CORPORA
        .iter()
        .any(|c| find(r, &action_deltas_group(c), "whole").is_some())
    {
        let _ = writeln!(
            md,
            "## ACTION in token deltas (action-xml)\n\n\
             One `write_to_file` call in an ACTION block, its value 64 KiB of code, fed to \
             `action_xml::Decoder` in deltas of 1, 4 and 30 code points and whole \
             (`benches/benches/action_xml.rs`). MiB/s of reply bytes, argument events on \
             (the default) / off; ratios: on over off, and the time per byte of `code` \
             (`<` and `&` in almost every line) over `plain`.\n"
        );
        let _ = writeln!(
            md,
            "| reply | feed | events on | events off | on / off | code / plain |\n|---|---|---|---|---|---|"
        );
        for corpus in ACTION_DELTA_CORPORA {
            let g = action_deltas_group(corpus);
            for feed in ACTION_FEEDS {
                let on = find(r, &g, feed);
                let off = find(r, &g, &format!("{feed}_no_param_events"));
                let speed = |m: Option<&Measurement>| {
                    m.and_then(Measurement::mib_per_s)
                        .map_or("–".into(), |v| format!("{v:.1}"))
                };
                let ratio = on
                    .zip(off)
                    .map_or("–".into(), |(on, off)| format!("{:.2}×", off.ns / on.ns));
                let per_byte = |c: &str| {
                    let m = find(r, &action_deltas_group(c), feed)?;
                    Some(m.ns / m.bytes? as f64)
                };
                let vs_plain = match (corpus, per_byte("code"), per_byte("plain")) {
                    ("code", Some(c), Some(p)) => format!("{:.2}×", c / p),
                    _ => String::new(),
                };
                let _ = writeln!(
                    md,
                    "| `{corpus}` | {feed} | {} | {} | {ratio} | {vs_plain} |",
                    speed(on),
                    speed(off)
                );
            }
            if let Some(m) = find(r, &g, "roxmltree_body") {
                let _ = writeln!(
                    md,
                    "| `{corpus}` | roxmltree, escaped body | {} | | | |",
                    m.mib_per_s().map_or("–".into(), |v| format!("{v:.1}"))
                );
            }
        }
        md.push('\n');
    }

    let _ = writeln!(
        md,
        "## Other benchmarks\n\n| benchmark | time | throughput |\n|---|---|---|"
    );
    for m in r.values().filter(|m| {
        !m.group.starts_with("tam_decode/") && !m.group.starts_with("action_xml/deltas/")
    }) {
        let name = [m.group.as_str(), m.function.as_str(), m.parameter.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        let throughput = match (m.mib_per_s(), m.elements) {
            (Some(v), _) => format!("{v:.1} MiB/s"),
            (None, Some(n)) => format!("{:.0} /s", n as f64 / m.ns * 1e9),
            _ => String::new(),
        };
        let _ = writeln!(md, "| `{name}` | {} | {throughput} |", time_label(m.ns));
    }

    let _ = writeln!(
        md,
        "\n## Memory of an idle decoder\n\n(Measured by `bench-report` itself when it writes this file, with a counting allocator.)\n\n\
         - `size_of::<tam_parse::Decoder>()`: {} bytes\n\
         - heap of a new decoder (the shared grammar is built once per process and not counted): {} bytes\n\
         - heap after 16 KiB of prose in token deltas: {} bytes ({} bytes held back)\n\
         - heap after a block closed, idle again: {} bytes (the block buffer is kept for the next block)\n",
        idle.struct_bytes,
        idle.heap_new,
        idle.heap_after_prose,
        idle.buffered_after_prose,
        idle.heap_after_block
    );
    let _ = writeln!(
        md,
        "## Plots\n\n![throughput against message size](throughput-vs-message-size.svg)\n\n\
         ![throughput against delta size](throughput-vs-delta-size.svg)"
    );
    md
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

fn run() -> Result<(), String> {
    let criterion = criterion_dir();
    let docs = std::env::args_os()
        .nth(2)
        .map_or_else(|| workspace_root().join("docs"), PathBuf::from);
    let mut results = Results::new();
    collect(&criterion, &mut results)?;
    if results.is_empty() {
        return Err(format!(
            "no criterion results under {}",
            criterion.display()
        ));
    }
    let idle = idle_memory();
    std::fs::create_dir_all(&docs).map_err(|e| format!("{}: {e}", docs.display()))?;
    let write = |name: &str, text: String| {
        let path = docs.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write("performance.md", report(&results, &idle, &criterion))?;
    write(
        "throughput-vs-message-size.svg",
        message_size_plot(&results),
    )?;
    write("throughput-vs-delta-size.svg", delta_size_plot(&results))?;
    println!(
        "bench-report: {} results → {}",
        results.len(),
        docs.join("performance.md").display()
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-report: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> IdleMemory {
        IdleMemory {
            struct_bytes: 216,
            heap_new: 0,
            heap_after_prose: 8,
            buffered_after_prose: 0,
            heap_after_block: 472,
        }
    }

    #[test]
    fn the_report_begins_with_the_generated_notice() {
        let root = workspace_root();
        let md = report(&Results::new(), &idle(), &root.join("target/criterion"));
        assert!(
            md.starts_with("<!-- Generated by `cargo xtask bench`"),
            "{md}"
        );
        assert!(md.lines().next().unwrap().ends_with("-->"));
        assert!(md.contains("\n# Performance\n"));
        assert!(
            md.contains("criterion's results in `target/criterion`"),
            "{md}"
        );
    }

    #[test]
    fn the_report_names_no_absolute_path() {
        let root = workspace_root();
        let outside = std::env::temp_dir().join("elsewhere/criterion");
        for dir in [root.join("target/criterion"), outside.clone(), root.clone()] {
            let md = report(&Results::new(), &idle(), &dir);
            for path in [&root, &outside] {
                let path = path.display().to_string();
                assert!(!md.contains(&path), "{path} in {md}");
            }
        }
        assert_eq!(criterion_label(&outside, &root), "");
        assert_eq!(criterion_label(&root, &root), "");
        assert_eq!(
            criterion_label(Path::new("target/criterion"), &root),
            " in `target/criterion`"
        );
    }
}
