//! The block scanner: finds marker-delimited blocks in a stream of text deltas.
//!
//! This is the one scanner of the workspace. [`crate::Decoder`] runs it with the TAM
//! grammar; `action-xml` runs it with `<ACTION>` … `</ACTION>` and CDATA/comment regions;
//! a client that wants both protocols in one stream gives one [`Grammar`] both syntaxes.
//!
//! A [`Grammar`] lists block syntaxes. Each has a start and an end [`Pattern`] and
//! [`Region`]s: spans inside a block (TAM values, XML CDATA sections, comments) in which
//! the block's markers are ordinary content — or, for regions with
//! [`Region::block_markers_inside`], in which only the other regions' openers are.
//!
//! The [`Scanner`] reports to a [`ScanHandler`]:
//! * prose outside blocks, borrowed from the delta, as early as possible: only bytes that may
//!   still begin a start marker are held back (fewer than the longest start pattern);
//! * each block's opening, each region's opening and closing (with offsets into the block
//!   buffer), and the block's closing with its raw text as one [`ByteString`](crate::ByteString) that the
//!   protocol layer slices without copying;
//! * bytes that are not UTF-8 ([`Scanner::feed_bytes`]);
//! * start markers the model quoted ([`ScanHandler::quoted_marker`]): the scanner tracks the
//!   markdown of the prose (`prose.rs`: inline code, `>` lines, code fences; O(1) state)
//!   and a marker inside inline code or on a `>` line opens no block; a block opened inside
//!   a code fence carries the fence in [`ClosedBlock::fence`];
//! * with [`Scanner::with_reasoning`], `<think>` sections: [`ScanHandler::reasoning_start`],
//!   [`ScanHandler::reasoning`] (borrowed, as early as possible), [`ScanHandler::reasoning_end`].
//!
//! Complexity: every byte is looked at a bounded number of times — the searches resume
//! where they stopped (the resume point is kept on the struct), and a candidate marker
//! position that could not be decided at the end of a delta is re-examined once more,
//! which costs at most the pattern length. Searches use `memchr`/`memmem`.
//!
//! Memory: outside blocks the scanner holds at most 63 bytes; inside a block it holds the
//! block (up to `max_block_bytes` plus one chunk of input); past the limit it keeps only
//! the bytes of an undecided marker and counts the rest as dropped.

//! # Layout
//!
//! One file per concern: [`Pattern`]s (`pattern.rs`), the pattern sets of each scanner
//! state (`pattern_set.rs`), [`Grammar`] and its syntaxes (`grammar.rs`), the line floor
//! (`line.rs`), the prose context (`prose.rs`), the [`OffsetMap`] (`offsets.rs`), the [`ScanHandler`] interface
//! (`handler.rs`), the byte searches for dense stops (`stops.rs`) and the [`Scanner`] state
//! machine (`scanner.rs`). `naive.rs` (tests only)
//! is a deliberately simple re-implementation on the whole input, the oracle of the
//! scanner's property tests.

mod grammar;
mod handler;
mod line;
#[cfg(test)]
mod naive;
mod offsets;
mod pattern;
mod pattern_set;
mod prose;
mod scanner;
mod stops;

pub use grammar::{BlockSyntax, Grammar, GrammarError, Region, THINK_TAGS};
pub use handler::{BlockEnd, BlockView, ClosedBlock, ScanHandler};
pub use offsets::OffsetMap;
pub use pattern::{MAX_PATTERN_LEN, Pattern};
pub use prose::Quote;
pub use scanner::Scanner;
pub use stops::{Stops, find3, tail_mask};
