//! The test kit of the workspace: one place that knows how to feed a stream to a decoder
//! cut every way and what must hold of the events, how golden files are compared and
//! rewritten, and how a scripted OpenAI-compatible server answers. The decoders'
//! integration tests, the fuzz targets, and the model clients', agent's and command line's
//! tests use it.
//!
//! The kit depends on none of the decoders, so it is packaged and published before them
//! and their packaged tests run against it. A test names its decoder through a
//! [`Harness`]; the harnesses of the workspace's decoders are written once, here, as
//! macros that expand in the test crate, which has the decoder as a dependency:
//!
//! * [`tam_harness!`] — `Tam` (the TAM decoder, `tam_parse::Decoder`) and `TamCut` (the
//!   same, its stream ended as cut);
//! * [`action_harness!`] — `Action` (`action_xml::Decoder`) and `ActionTools` (given the
//!   offered tools' names), and `decode_action`: what the ACTION decoder makes of a
//!   stream decoded every way, as `Seen` items, in a form the front door's is compared on;
//! * [`front_harness!`] — `Front` (the front door, `tam::Decoder`), `FrontTools` and
//!   `decode_front` (after [`action_harness!`] in the same module);
//! * [`dump_fns!`] — `span`, `diagnostic` (and, given `action`, `action_block`): pieces of
//!   the events' stable renderings in golden files.
//!
//! ```text
//! // tests/common/mod.rs of a crate that depends on action-xml
//! tam_testkit::action_harness!();
//! // a test
//! let events = tam_testkit::decode_all_ways(Action(action_xml::Config::default()), input);
//! ```
//!
//! What the kit checks:
//! * [`Harness`] — a decoder under test: feeds `&str` or byte deltas, finishes, and returns
//!   owned events with adjacent text events merged ([`push`]) — text may be split
//!   anywhere, so merged text is what two feedings can be compared on.
//! * [`assert_tiles`] / [`assert_text_is_input`] — the spans of text, block and top-level
//!   diagnostic events tile `[0, n)`; each text event is the input under its span.
//! * [`decode_all_ways`] — whole (bytes and `&str`), char by char, byte by byte, 8 random
//!   byte splittings, 4 random `&str` splittings, every prefix + rest: all must agree.
//! * [`check_cuts`] — the cheaper check the fuzz targets run on every input: whole, cut at
//!   given points (as bytes and as `&str`), and optionally byte by byte.
//! * `strategies` — proptest strategies for ACTION streams, calls and small limits
//!   (feature `proptest`).
//! * [`golden`] — golden files: inputs beside what they must give, compared, rewritten
//!   when `UPDATE_GOLDEN` is set.
//! * `round_trip` — a value through JSON and back (feature `serde`).
//!
//! Feature `upstream`: module `upstream`, a scripted OpenAI-compatible server on loopback.
#![forbid(unsafe_code)]

use std::fmt::Debug;
use std::ops::Range;

pub mod golden;
mod harnesses;
#[cfg(feature = "proptest")]
pub mod strategies;
#[cfg(feature = "upstream")]
pub mod upstream;

/// A streaming decoder under test, giving owned events. Spans are byte ranges of the
/// stream.
pub trait Harness: Copy {
    /// The owned event type.
    type Event: PartialEq + Debug;
    /// Feeds text deltas to a new decoder, finishes it, returns the events (merged by
    /// [`push`]).
    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event>;
    /// Feeds byte deltas to a new decoder, finishes it, returns the events (merged by
    /// [`push`]).
    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event>;
    /// The text and span of a text event.
    fn text(e: &Self::Event) -> Option<(&str, Range<usize>)>;
    /// Appends `text` at `span` to `last` if `last` is a text event that ends where `span`
    /// starts; says whether it did.
    fn extend_text(last: &mut Self::Event, text: &str, span: Range<usize>) -> bool;
    /// The span of a text, block or top-level diagnostic event (those tile the stream).
    fn tiling_span(e: &Self::Event) -> Option<Range<usize>>;
    /// Appends `next` to `last` when both are pieces of one streamed value that may be
    /// split anywhere (adjacent `ParamText` events); says whether it did. Default: never.
    fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
        let _ = (last, next);
        false
    }
    /// The text and span of a reasoning event (reasoning is the input under its span, as
    /// text is). Default: none.
    fn reasoning(e: &Self::Event) -> Option<(&str, Range<usize>)> {
        let _ = e;
        None
    }
}

/// Appends an owned event; a text event right after an adjacent text event is merged into
/// it in place, and empty text is dropped; so are adjacent value pieces
/// ([`Harness::extend_piece`]).
pub fn push<H: Harness>(events: &mut Vec<H::Event>, e: H::Event) {
    if let Some(last) = events.last_mut()
        && H::extend_piece(last, &e)
    {
        return;
    }
    if let Some((text, span)) = H::text(&e) {
        if text.is_empty() {
            return;
        }
        if let Some(last) = events.last_mut()
            && H::extend_text(last, text, span)
        {
            return;
        }
    }
    events.push(e);
}

/// Events collected some other way, merged as [`push`] does.
pub fn normalize<H: Harness>(events: Vec<H::Event>) -> Vec<H::Event> {
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        push::<H>(&mut out, e);
    }
    out
}

/// Asserts that the tiling spans cover `[0, n)` with no gap and no overlap.
pub fn assert_tiles<H: Harness>(events: &[H::Event], n: usize) {
    let mut at = 0;
    for e in events {
        let Some(span) = H::tiling_span(e) else {
            continue;
        };
        assert_eq!(span.start, at, "gap or overlap before {e:?}");
        assert!(span.end >= span.start, "reversed span in {e:?}");
        at = span.end;
    }
    assert_eq!(at, n, "spans do not reach the end of the stream");
}

/// Asserts, when `stream` is UTF-8, that each text (and reasoning) event is the input under
/// its span.
pub fn assert_text_is_input<H: Harness>(events: &[H::Event], stream: &[u8]) {
    let Ok(input) = std::str::from_utf8(stream) else {
        return;
    };
    for e in events {
        if let Some((text, span)) = H::text(e) {
            assert_eq!(
                input.get(span.start..span.end),
                Some(text),
                "text event is not the input under its span"
            );
        }
        if let Some((text, span)) = H::reasoning(e) {
            assert_eq!(
                input.get(span.start..span.end),
                Some(text),
                "reasoning event is not the input under its span"
            );
        }
    }
}

/// This crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Small ACTION decoder limits, for property tests that drive a block past them
/// (`strategies::small_limits`; `action_config` of [`action_harness!`] makes the config).
#[derive(Debug, Clone, Copy)]
pub struct SmallLimits {
    /// A block's most bytes.
    pub block_bytes: usize,
    /// The deepest element nesting.
    pub depth: usize,
    /// The most nodes in a block.
    pub nodes: u32,
}

/// A small deterministic generator (xorshift64) for split points.
#[derive(Debug, Clone)]
pub struct XorShift(pub u64);

impl XorShift {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Random cut points of `len` bytes, pieces of 1 to 13 bytes: `0, …, len`.
pub fn random_cuts(len: usize, seed: u64) -> Vec<usize> {
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut cuts = vec![0];
    let mut at = 0;
    while at < len {
        at = (at + 1 + (rng.next_u64() % 13) as usize).min(len);
        cuts.push(at);
    }
    cuts
}

/// `input` cut at `cuts` (increasing, from 0 to `input.len()`).
pub fn byte_pieces<'a>(input: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> {
    cuts.windows(2).map(move |w| &input[w[0]..w[1]])
}

/// `text` cut at `cuts` moved back to character boundaries (empty pieces dropped).
pub fn str_pieces<'a>(text: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut at = 0;
    let mut out = Vec::with_capacity(cuts.len());
    for &c in cuts {
        let mut c = c.min(text.len());
        while !text.is_char_boundary(c) {
            c -= 1;
        }
        if c > at {
            out.push(&text[at..c]);
            at = c;
        }
    }
    if at < text.len() {
        out.push(&text[at..]);
    }
    out
}

/// Decodes `input` every way, asserts identical events, tiled spans and text equal to the
/// input under it; returns the events.
pub fn decode_all_ways<H: Harness>(harness: H, input: &[u8]) -> Vec<H::Event> {
    let whole = harness.run_bytes([input]);
    assert_tiles::<H>(&whole, input.len());
    assert_text_is_input::<H>(&whole, input);
    let check = |how: &str, events: Vec<H::Event>| {
        assert_eq!(events, whole, "events differ when fed {how}");
    };
    if let Ok(text) = std::str::from_utf8(input) {
        check("whole as &str", harness.run_str([text]));
        let chars: Vec<&str> = text
            .char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect();
        check("char by char", harness.run_str(chars));
        for (i, _) in text.char_indices().skip(1) {
            check(
                &format!("as &str prefix {i} + rest"),
                harness.run_str([&text[..i], &text[i..]]),
            );
        }
        for seed in 1..=4 {
            let cuts = random_cuts(input.len(), seed);
            check(
                &format!("as &str in random splits (seed {seed})"),
                harness.run_str(str_pieces(text, &cuts)),
            );
        }
    }
    check("byte by byte", harness.run_bytes(input.chunks(1)));
    for seed in 1..=8 {
        let cuts = random_cuts(input.len(), seed);
        check(
            &format!("in random splits (seed {seed})"),
            harness.run_bytes(byte_pieces(input, &cuts)),
        );
    }
    for i in 1..input.len() {
        check(
            &format!("as prefix {i} + rest"),
            harness.run_bytes([&input[..i], &input[i..]]),
        );
    }
    whole
}

/// The fuzz targets' check: `stream` fed whole is the reference (tiled, text equal to the
/// input); fed cut at `cuts` (increasing, from 0 to `stream.len()`) as bytes, as `&str`
/// whole and cut at `cuts` moved back to character boundaries, and — if `byte_by_byte` —
/// one byte at a time, it gives the same events.
pub fn check_cuts<H: Harness>(harness: H, stream: &[u8], cuts: &[usize], byte_by_byte: bool) {
    let whole = harness.run_bytes([stream]);
    assert_tiles::<H>(&whole, stream.len());
    assert_text_is_input::<H>(&whole, stream);
    let split = harness.run_bytes(byte_pieces(stream, cuts));
    assert_eq!(
        split, whole,
        "byte deltas {cuts:?} differ from the whole stream"
    );
    if let Ok(text) = std::str::from_utf8(stream) {
        let as_str = harness.run_str([text]);
        assert_eq!(as_str, whole, "the whole stream as &str differs from bytes");
        let split = harness.run_str(str_pieces(text, cuts));
        assert_eq!(split, whole, "&str deltas differ from the whole stream");
    }
    if byte_by_byte {
        let bytes = harness.run_bytes(stream.chunks(1));
        assert_eq!(
            bytes, whole,
            "byte-by-byte feeding differs from the whole stream"
        );
    }
}

/// `value` → JSON → back: the JSON is `expected` and the value read back equals `value`
/// (the decoders' serde tests).
#[cfg(feature = "serde")]
pub fn round_trip<T>(value: &T, expected: serde_json::Value)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).unwrap();
    assert_eq!(json, expected);
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder that gives its input as text, and loses the last byte of the stream when
    /// told to, for the kit's own checks.
    #[derive(Clone, Copy)]
    struct Echo {
        lose_last_byte: bool,
    }

    #[derive(Debug, PartialEq)]
    struct Text(String, Range<usize>);

    impl Harness for Echo {
        type Event = Text;

        fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Text> {
            self.run_bytes(deltas.into_iter().map(str::as_bytes))
        }

        fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Text> {
            let mut stream = Vec::new();
            for delta in deltas {
                stream.extend_from_slice(delta);
            }
            if self.lose_last_byte {
                stream.pop();
            }
            let text = String::from_utf8_lossy(&stream).into_owned();
            let n = text.len();
            let mut events = Vec::new();
            push::<Self>(&mut events, Text(text, 0..n));
            events
        }

        fn text(e: &Text) -> Option<(&str, Range<usize>)> {
            Some((&e.0, e.1.clone()))
        }

        fn extend_text(last: &mut Text, text: &str, span: Range<usize>) -> bool {
            if last.1.end != span.start {
                return false;
            }
            last.0.push_str(text);
            last.1.end = span.end;
            true
        }

        fn tiling_span(e: &Text) -> Option<Range<usize>> {
            Some(e.1.clone())
        }
    }

    #[test]
    fn str_pieces_cut_at_char_boundaries_and_cover_the_text() {
        let text = "a始b末";
        let pieces = str_pieces(text, &[0, 2, 3, 4, 5, 7]);
        assert_eq!(pieces.concat(), text);
        assert_eq!(pieces, ["a", "始", "b", "末"]);
        assert_eq!(str_pieces("", &[0, 0]), Vec::<&str>::new());
    }

    #[test]
    fn random_cuts_cover_the_length() {
        for len in [0, 1, 13, 100] {
            let cuts = random_cuts(len, 3);
            assert_eq!(cuts.first(), Some(&0));
            assert_eq!(cuts.last(), Some(&len));
            assert!(cuts.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn push_merges_adjacent_text_only() {
        let t = |s: &str, a: usize| Text(s.to_owned(), a..a + s.len());
        let mut events = Vec::new();
        push::<Echo>(&mut events, t("ab", 0));
        push::<Echo>(&mut events, t("", 2));
        push::<Echo>(&mut events, t("c", 2));
        push::<Echo>(&mut events, t("e", 4));
        assert_eq!(events, vec![t("abc", 0), t("e", 4)]);
    }

    #[test]
    fn a_decoder_that_loses_text_fails_the_checks() {
        let good = Echo {
            lose_last_byte: false,
        };
        assert_eq!(decode_all_ways(good, "héllo".as_bytes()).len(), 1);
        let events = good.run_str(["hello"]);
        assert_tiles::<Echo>(&events, 5);
        assert!(std::panic::catch_unwind(|| assert_tiles::<Echo>(&events, 6)).is_err());
        let lossy = Echo {
            lose_last_byte: true,
        };
        assert!(std::panic::catch_unwind(|| decode_all_ways(lossy, b"hello")).is_err());
    }
}
