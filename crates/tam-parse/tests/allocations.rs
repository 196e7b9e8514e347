//! Feeding a 1 MiB stream in 4-byte deltas allocates nothing per delta: a counting global
//! allocator checks that allocations grow with the number of blocks, not of deltas. It
//! counts per thread, so only the allocations of the thread under test are counted.

// A global allocator cannot be written without `unsafe`; the library itself forbids it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tam_parse::{Config, Decoder, Event};

struct Counting;

// The counters are per thread: each test reads what its own thread allocated, so the test
// harness's threads, and tests running in parallel, never count as the decoder's
// allocations. `const` initialisation with `Cell`: no lazy set-up, no destructor, so the
// allocator itself never allocates to reach them.
thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    /// Bytes requested (allocations and reallocations' new sizes): what the decoder copies
    /// into buffers is bounded by it.
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: a thread being torn down may still allocate after its locals are gone.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    let _ = BYTES.try_with(|n| n.set(n.get() + bytes));
}

/// Allocations made so far by the calling thread.
fn allocations_so_far() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes requested so far by the calling thread.
fn bytes_so_far() -> usize {
    BYTES.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Feeds `input` in 4-byte deltas (char-aligned), counting allocations and blocks.
fn allocations_while_feeding(input: &str) -> (usize, usize, usize) {
    allocations_and_pieces(input).0
}

/// Like [`allocations_while_feeding`], also counting the `ParamText` pieces streamed.
fn allocations_and_pieces(input: &str) -> ((usize, usize, usize), usize) {
    allocations_with(input, Config::default().with_param_events(true))
}

/// [`allocations_and_pieces`] with `config`.
fn allocations_with(input: &str, config: Config) -> ((usize, usize, usize), usize) {
    let mut decoder = Decoder::new(config);
    let mut pieces = 0usize;
    let mut blocks = 0usize;
    let mut deltas = 0usize;
    let before = allocations_so_far();
    let mut i = 0;
    while i < input.len() {
        let mut j = (i + 4).min(input.len());
        while !input.is_char_boundary(j) {
            j += 1;
        }
        decoder.feed(&input[i..j], |e| match e {
            Event::Block(b) => {
                blocks += 1;
                assert!(!b.calls.is_empty());
            }
            Event::ParamText { .. } => pieces += 1,
            _ => {}
        });
        deltas += 1;
        i = j;
    }
    let after = allocations_so_far();
    ((after - before, blocks, deltas), pieces)
}

#[test]
fn prose_allocates_nothing_per_delta() {
    // Prose with marker-like fragments that force hold-back across deltas.
    let unit = "Some prose with <tags>, <|[ partial markers <|[REQUEST and 「始」 values. 文字🙂\n";
    let big = unit.repeat((1 << 20) / unit.len());
    let small = unit.repeat((1 << 14) / unit.len());
    // Warm-up: first-use allocations of the standard library (stdout, thread info).
    allocations_while_feeding(&small);
    let (big_allocations, blocks, deltas) = allocations_while_feeding(&big);
    let (small_allocations, _, small_deltas) = allocations_while_feeding(&small);
    assert_eq!(blocks, 0);
    assert!(deltas > 200_000 && deltas > 50 * small_deltas);
    // The held-back buffer is allocated once (a few growth steps); after that, nothing.
    assert_eq!(
        big_allocations, small_allocations,
        "allocations grew with the deltas"
    );
    assert!(big_allocations <= 2, "{big_allocations} allocations");
}

/// The prose context (inline code, `>` lines, code fences) and reasoning sections are
/// counters and borrowed pieces: nothing is allocated per delta for them either.
#[test]
fn prose_context_and_reasoning_allocate_nothing_per_delta() {
    let unit = "Use `ls` and ``a ` b`` here.\n> quoted <b>\n```text\ncode <|[\n```\n<think>\nplan <|[REQUEST with </thin and </think >\n</think>\n~~~\n~~~\n";
    let config = Config::default().with_reasoning_tags(true);
    let big = unit.repeat((1 << 20) / unit.len());
    let small = unit.repeat((1 << 14) / unit.len());
    allocations_with(&small, config); // warm-up: first-use allocations
    let ((big_allocations, blocks, deltas), _) = allocations_with(&big, config);
    let ((small_allocations, _, small_deltas), _) = allocations_with(&small, config);
    assert_eq!(blocks, 0);
    assert!(deltas > 200_000 && deltas > 50 * small_deltas);
    assert_eq!(
        big_allocations, small_allocations,
        "allocations grew with the deltas"
    );
    assert!(big_allocations <= 2, "{big_allocations} allocations");
}

#[test]
fn blocks_allocate_per_block_not_per_delta() {
    let unit = "I will call it.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Write「末」\npath:「始」/tmp/x「末」\ncontent:「始」hello\nworld「末」\n<|[END_TOOL]|>\nDone.\n";
    let input = unit.repeat((1 << 20) / unit.len());
    let ((allocations, blocks, deltas), pieces) = allocations_and_pieces(&input);
    assert!(blocks > 5_000);
    // The values were streamed piece by piece (several pieces per value), and that
    // allocated nothing either: pieces borrow the block buffer.
    assert!(pieces > 4 * blocks, "{pieces} pieces for {blocks} blocks");
    let per_block = allocations as f64 / blocks as f64;
    // Block buffer growth, the calls and params vectors, canonical keys, the CommandSeen
    // tool: a small constant per block, independent of the ~35 deltas each block spans.
    assert!(
        per_block <= 24.0,
        "{allocations} allocations for {blocks} blocks and {deltas} deltas ({per_block:.1} per block)"
    );
}

/// Feeds `input` as ONE delta; returns (bytes allocated, allocations, blocks, params
/// streamed).
fn one_delta(input: &str) -> (usize, usize, usize, usize) {
    let mut decoder = Decoder::new(Config::default().with_param_events(true));
    let mut blocks = 0usize;
    let mut params = 0usize;
    let bytes = bytes_so_far();
    let allocations = allocations_so_far();
    decoder.feed(input, |e| match e {
        Event::Block(b) => {
            blocks += 1;
            assert_eq!(b.calls.len(), 1);
        }
        Event::ParamEnd { .. } => params += 1,
        _ => {}
    });
    (
        bytes_so_far() - bytes,
        allocations_so_far() - allocations,
        blocks,
        params,
    )
}

/// Regression test for quadratic copying: a delta holding 1, 10, 100 and 1000
/// blocks costs the same bytes allocated (a bound on bytes copied into block buffers) and
/// the same allocations per block. Copying the rest of the delta into each block's buffer,
/// as a naive scanner does, makes the per-block bytes grow with the number of blocks.
#[test]
fn many_blocks_in_one_delta_cost_the_same_per_block() {
    let unit = "Some prose, with <b>tags</b> & code `a < b`.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Write「末」\npath:「始」/tmp/x「末」\ncontent:「始」fn f<T>() {}\n「末」\n<|[END_TOOL]|>\n";
    one_delta(&unit.repeat(10)); // warm-up
    let mut per_block = Vec::new();
    for n in [1usize, 10, 100, 1000] {
        let input = unit.repeat(n);
        let (bytes, allocations, blocks, params) = one_delta(&input);
        assert_eq!(blocks, n);
        assert_eq!(params, 3 * n);
        per_block.push((n, bytes as f64 / n as f64, allocations as f64 / n as f64));
    }
    let (_, base_bytes, base_allocations) = per_block[0];
    for &(n, bytes, allocations) in &per_block {
        assert!(
            bytes <= 1.5 * base_bytes && allocations <= 1.5 * base_allocations,
            "{n} blocks in one delta: {bytes:.0} bytes and {allocations:.1} allocations per block, against {base_bytes:.0} and {base_allocations:.1} for one: {per_block:?}"
        );
    }
    // And it is a small multiple of the block itself (its buffer, its calls, its params).
    assert!(base_bytes < 16.0 * unit.len() as f64, "{per_block:?}");
}
