//! The test kit of the workspace: one place that knows how to feed a stream to a decoder
//! cut every way and what must hold of the events, how golden files are compared and
//! rewritten, and how a scripted OpenAI-compatible server answers. The decoders'
//! integration tests, the fuzz targets, and the model clients', agent's and command line's
//! tests use it.
//!
//! * [`Harness`] — a decoder under test (implemented for the TAM [`Tam`] (and [`TamCut`],
//!   which ends the stream as cut), ACTION
//!   [`Action`] and front door [`Front`] decoders, and [`ActionTools`] and [`FrontTools`]:
//!   those two given the offered tools' names): feeds `&str` or byte deltas, finishes, and
//!   returns owned events with adjacent text events merged ([`push`]) — text may be split
//!   anywhere, so merged text is what two feedings can be compared on.
//! * [`assert_tiles`] / [`assert_text_is_input`] — the spans of text, block and top-level
//!   diagnostic events tile `[0, n)`; each text event is the input under its span.
//! * [`decode_all_ways`] — whole (bytes and `&str`), char by char, byte by byte, 8 random
//!   byte splittings, 4 random `&str` splittings, every prefix + rest: all must agree.
//! * [`check_cuts`] — the cheaper check the fuzz targets run on every input: whole, cut at
//!   given points (as bytes and as `&str`), and optionally byte by byte.
//! * [`seen`] — what the ACTION decoder and the front door make of an ACTION stream,
//!   decoded every way, in a form the two are compared on (feature `action`).
//! * `strategies` — proptest strategies for ACTION streams and calls (feature
//!   `proptest`).
//! * [`dump`] — pieces of the events' text renderings in golden files.
//! * [`golden`] — golden files: inputs beside what they must give, compared, rewritten
//!   when `UPDATE_GOLDEN` is set.
//!
//! Feature `upstream`: module `upstream`, a scripted OpenAI-compatible server on loopback.
//!
//! Feature `action` (default): the [`Action`] and [`Front`] harnesses, which need
//! action-xml and tam. tam-parse's tests turn it off so the kit does not depend back on action-xml
//! (action-xml depends on tam-parse).
#![forbid(unsafe_code)]

use std::fmt::Debug;

use tam_parse::Span;

pub mod dump;
pub mod golden;
#[cfg(feature = "action")]
pub mod seen;
#[cfg(feature = "proptest")]
pub mod strategies;
#[cfg(feature = "upstream")]
pub mod upstream;

/// A streaming decoder under test, giving owned events.
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
    fn text(e: &Self::Event) -> Option<(&str, Span)>;
    /// Appends `text` at `span` to `last` if `last` is a text event that ends where `span`
    /// starts; says whether it did.
    fn extend_text(last: &mut Self::Event, text: &str, span: Span) -> bool;
    /// The span of a text, block or top-level diagnostic event (those tile the stream).
    fn tiling_span(e: &Self::Event) -> Option<Span>;
    /// Appends `next` to `last` when both are pieces of one streamed value that may be
    /// split anywhere (adjacent `ParamText` events); says whether it did. Default: never.
    fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
        let _ = (last, next);
        false
    }
    /// The text and span of a reasoning event (reasoning is the input under its span, as
    /// text is). Default: none.
    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
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

/// The [`Harness`] methods `run_str` and `run_bytes` for decoder type `$decoder`, built
/// from the harness's config in field 0 (or by `$h => $make`, the harness named `$h`),
/// ended with `$finish` (default `finish`).
macro_rules! runs {
    ($($decoder:ident)::+) => {
        runs!(h => $($decoder)::+::new(h.0), finish);
    };
    ($($decoder:ident)::+, $finish:ident) => {
        runs!(h => $($decoder)::+::new(h.0), $finish);
    };
    ($h:ident => $make:expr, $finish:ident) => {
        fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
            let mut events = Vec::new();
            let $h = self;
            let mut decoder = $make;
            for delta in deltas {
                decoder.feed(delta, |e| push::<Self>(&mut events, e.into_owned()));
            }
            decoder.$finish(|e| push::<Self>(&mut events, e.into_owned()));
            events
        }

        fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
            let mut events = Vec::new();
            let $h = self;
            let mut decoder = $make;
            for delta in deltas {
                decoder.feed_bytes(delta, |e| push::<Self>(&mut events, e.into_owned()));
            }
            decoder.$finish(|e| push::<Self>(&mut events, e.into_owned()));
            events
        }
    };
}

/// The [`Harness`] methods that read and extend the text variant `$text`.
macro_rules! text_methods {
    ($($text:ident)::+) => {
        fn text(e: &Self::Event) -> Option<(&str, Span)> {
            match e {
                $($text)::+ { text, span } => Some((text, *span)),
                _ => None,
            }
        }

        fn extend_text(last: &mut Self::Event, text: &str, span: Span) -> bool {
            match last {
                $($text)::+ { text: prev, span: prev_span } if prev_span.end == span.start => {
                    prev.to_mut().push_str(text);
                    prev_span.end = span.end;
                    true
                }
                _ => false,
            }
        }
    };
}

/// The TAM decoder with a config.
#[derive(Clone, Copy, Debug)]
pub struct Tam(pub tam_parse::Config);

/// The TAM decoder with a config, ended with `finish_cut` (a stream cut at the token limit
/// or by a transport error).
#[derive(Clone, Copy, Debug)]
pub struct TamCut(pub tam_parse::Config);

/// A `marker_in_prose` warning annotates text events that cover its bytes: it does not
/// tile.
fn tam_tiling_span(e: &tam_parse::Event<'static>) -> Option<Span> {
    match e {
        tam_parse::Event::Text { span, .. }
        | tam_parse::Event::ReasoningStart { span }
        | tam_parse::Event::Reasoning { span, .. }
        | tam_parse::Event::ReasoningEnd { span } => Some(*span),
        tam_parse::Event::Block(b) => Some(b.span),
        tam_parse::Event::Diagnostic(d) if d.code != tam_parse::Code::MARKER_IN_PROSE => {
            Some(d.span)
        }
        _ => None,
    }
}

/// Adjacent `ParamText` pieces merge, and so do adjacent `Reasoning` pieces.
fn tam_extend_piece(
    last: &mut tam_parse::Event<'static>,
    next: &tam_parse::Event<'static>,
) -> bool {
    match (last, next) {
        (
            tam_parse::Event::ParamText {
                text: prev,
                span: prev_span,
            },
            tam_parse::Event::ParamText { text, span },
        )
        | (
            tam_parse::Event::Reasoning {
                text: prev,
                span: prev_span,
            },
            tam_parse::Event::Reasoning { text, span },
        ) if prev_span.end == span.start => {
            prev.to_mut().push_str(text);
            prev_span.end = span.end;
            true
        }
        _ => false,
    }
}

impl Harness for Tam {
    type Event = tam_parse::Event<'static>;

    runs!(tam_parse::Decoder);

    text_methods!(tam_parse::Event::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        tam_tiling_span(e)
    }

    fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
        tam_extend_piece(last, next)
    }

    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
        tam_reasoning(e)
    }
}

fn tam_reasoning<'e>(e: &'e tam_parse::Event<'static>) -> Option<(&'e str, Span)> {
    match e {
        tam_parse::Event::Reasoning { text, span } => Some((text, *span)),
        _ => None,
    }
}

impl Harness for TamCut {
    type Event = tam_parse::Event<'static>;

    runs!(tam_parse::Decoder, finish_cut);

    text_methods!(tam_parse::Event::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        tam_tiling_span(e)
    }

    fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
        tam_extend_piece(last, next)
    }

    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
        tam_reasoning(e)
    }
}

/// The ACTION decoder with a config.
#[cfg(feature = "action")]
#[derive(Clone, Copy, Debug)]
pub struct Action(pub action_xml::Config);

#[cfg(feature = "action")]
impl Harness for Action {
    type Event = action_xml::Event<'static>;

    runs!(action_xml::Decoder);

    text_methods!(action_xml::Event::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        match e {
            action_xml::Event::Text { span, .. }
            | action_xml::Event::ReasoningStart { span }
            | action_xml::Event::Reasoning { span, .. }
            | action_xml::Event::ReasoningEnd { span } => Some(*span),
            action_xml::Event::Block(b) => Some(b.span),
            action_xml::Event::Diagnostic(d) => Some(d.span),
            _ => None,
        }
    }

    fn extend_piece(last: &mut Self::Event, e: &Self::Event) -> bool {
        use action_xml::Event::{ParamText, Reasoning};
        match (last, e) {
            (
                ParamText { text, span, cdata },
                ParamText {
                    text: more,
                    span: s,
                    cdata: c,
                },
            ) if cdata == c && span.end == s.start => {
                text.to_mut().push_str(more);
                span.end = s.end;
                true
            }
            (
                Reasoning { text, span },
                Reasoning {
                    text: more,
                    span: s,
                },
            ) if span.end == s.start => {
                text.to_mut().push_str(more);
                span.end = s.end;
                true
            }
            _ => false,
        }
    }

    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
        match e {
            action_xml::Event::Reasoning { text, span } => Some((text, *span)),
            _ => None,
        }
    }
}

/// The front door (`tam::Decoder`) with a config: TAM and ACTION blocks in one stream
/// with the default [`tam::Config::protocol`] (`Auto`), or one protocol.
#[cfg(feature = "action")]
#[derive(Clone, Copy, Debug)]
pub struct Front(pub tam::Config);

#[cfg(feature = "action")]
impl Harness for Front {
    type Event = tam::Event<'static>;

    runs!(tam::Decoder);

    text_methods!(tam::Event::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        match e {
            tam::Event::Text { span, .. }
            | tam::Event::ReasoningStart { span }
            | tam::Event::Reasoning { span, .. }
            | tam::Event::ReasoningEnd { span } => Some(*span),
            tam::Event::TamBlock(b) => Some(b.span),
            tam::Event::ActionBlock(b) => Some(b.span),
            tam::Event::Diagnostic(d) if d.code != tam_parse::Code::MARKER_IN_PROSE => Some(d.span),
            _ => None,
        }
    }

    fn extend_piece(last: &mut Self::Event, e: &Self::Event) -> bool {
        use tam::Event::ParamText;
        match (last, e) {
            (
                ParamText {
                    protocol,
                    text,
                    span,
                    cdata,
                },
                ParamText {
                    protocol: p,
                    text: more,
                    span: s,
                    cdata: c,
                },
            ) if protocol == p && cdata == c && span.end == s.start => {
                text.to_mut().push_str(more);
                span.end = s.end;
                true
            }
            (
                tam::Event::Reasoning { text, span },
                tam::Event::Reasoning {
                    text: more,
                    span: s,
                },
            ) if span.end == s.start => {
                text.to_mut().push_str(more);
                span.end = s.end;
                true
            }
            _ => false,
        }
    }

    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
        match e {
            tam::Event::Reasoning { text, span } => Some((text, *span)),
            _ => None,
        }
    }
}

/// The ACTION decoder with a config and the names of the offered tools, whose call
/// elements count without `<ACTION>` (`action_xml::Decoder::with_bare_call_tools`).
#[cfg(feature = "action")]
#[derive(Clone, Copy, Debug)]
pub struct ActionTools(pub action_xml::Config, pub &'static [&'static str]);

#[cfg(feature = "action")]
impl Harness for ActionTools {
    type Event = action_xml::Event<'static>;

    runs!(h => action_xml::Decoder::new(h.0).with_bare_call_tools(h.1), finish);

    fn text(e: &Self::Event) -> Option<(&str, Span)> {
        Action::text(e)
    }

    fn extend_text(last: &mut Self::Event, text: &str, span: Span) -> bool {
        Action::extend_text(last, text, span)
    }

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        Action::tiling_span(e)
    }

    fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
        Action::extend_piece(last, next)
    }

    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
        Action::reasoning(e)
    }
}

/// The front door with a config and the names of the offered tools, whose call elements
/// count without `<ACTION>` (`tam::Decoder::with_bare_call_tools`).
#[cfg(feature = "action")]
#[derive(Clone, Copy, Debug)]
pub struct FrontTools(pub tam::Config, pub &'static [&'static str]);

#[cfg(feature = "action")]
impl Harness for FrontTools {
    type Event = tam::Event<'static>;

    runs!(h => tam::Decoder::new(h.0).with_bare_call_tools(h.1), finish);

    fn text(e: &Self::Event) -> Option<(&str, Span)> {
        Front::text(e)
    }

    fn extend_text(last: &mut Self::Event, text: &str, span: Span) -> bool {
        Front::extend_text(last, text, span)
    }

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        Front::tiling_span(e)
    }

    fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
        Front::extend_piece(last, next)
    }

    fn reasoning(e: &Self::Event) -> Option<(&str, Span)> {
        Front::reasoning(e)
    }
}

/// The workspace README's Rust examples, compiled and run as doctests (here, in the
/// unpublished kit, because the README is not inside any published package).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

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
        let t = |s: &str, a: usize| tam_parse::Event::Text {
            text: s.to_owned().into(),
            span: Span::new(a, a + s.len()),
        };
        let mut events = Vec::new();
        push::<Tam>(&mut events, t("ab", 0));
        push::<Tam>(&mut events, t("", 2));
        push::<Tam>(&mut events, t("c", 2));
        push::<Tam>(&mut events, t("e", 4));
        assert_eq!(events, vec![t("abc", 0), t("e", 4)]);
    }

    #[test]
    fn a_decoder_that_loses_text_fails_the_tiling_check() {
        let events = Tam(tam_parse::Config::default()).run_str(["hello"]);
        assert_tiles::<Tam>(&events, 5);
        let result = std::panic::catch_unwind(|| assert_tiles::<Tam>(&events, 6));
        assert!(result.is_err());
    }
}
