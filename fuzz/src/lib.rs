//! What the streaming fuzz targets share: the input layout (flags, split points, stream)
//! and the checks every decoder must pass whatever the input.
//!
//! # Input layout
//!
//! `[flags] [k] [k × u16 LE split points] [stream bytes …]`. `flags` picks the decoder's
//! settings (each target says how); the split points (each taken modulo the stream length
//! + 1) cut the stream into deltas. A short input falls back to no flags and no splits, so
//! any byte string is a valid input. Seeds (`fuzz/seeds/<target>/`) are golden inputs with
//! the two header bytes `00 00` in front.
//!
//! # Checks
//!
//! For every input, the events of the stream fed whole (as bytes) are the reference:
//! - their spans — of text, block and top-level diagnostic events — tile `[0, n)` exactly;
//! - when the stream is UTF-8, each text event is exactly the input under its span;
//! - fed in the chosen byte deltas, fed as `&str` (whole, and cut at the split points moved
//!   back to character boundaries) and, when flag bit 7 is set, byte by byte, the events
//!   are the same once adjacent text events are merged (as they are collected).

use std::fmt::Debug;

use action_xml::{MixedDecoder, MixedEvent};
use tam_parse::Span;

/// Most split points read from an input.
const MAX_SPLITS: usize = 32;

/// Flag bit: also feed the stream one byte at a time.
pub const FLAG_BYTE_BY_BYTE: u8 = 0x80;

/// A fuzz input taken apart.
#[derive(Debug)]
pub struct Input<'a> {
    /// Settings bits (meaning per target; bit 7 is [`FLAG_BYTE_BY_BYTE`]).
    pub flags: u8,
    /// Delta boundaries: strictly increasing, from 0 to `stream.len()`.
    pub cuts: Vec<usize>,
    /// The model output.
    pub stream: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads the layout described in the crate documentation.
    pub fn parse(raw: &'a [u8]) -> Input<'a> {
        let (flags, rest) = match raw.split_first() {
            Some((&f, rest)) => (f, rest),
            None => (0, raw),
        };
        let (k, rest) = match rest.split_first() {
            Some((&k, rest)) => (usize::from(k) % (MAX_SPLITS + 1), rest),
            None => (0, rest),
        };
        let k = k.min(rest.len() / 2);
        let (points, stream) = rest.split_at(2 * k);
        let n = stream.len();
        let mut cuts: Vec<usize> = points
            .chunks_exact(2)
            .map(|p| usize::from(u16::from_le_bytes([p[0], p[1]])) % (n + 1))
            .collect();
        cuts.push(0);
        cuts.push(n);
        cuts.sort_unstable();
        cuts.dedup();
        if n == 0 {
            cuts = vec![0, 0];
        }
        Input {
            flags,
            cuts,
            stream,
        }
    }

    /// The stream cut at the split points.
    pub fn byte_deltas(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.cuts.windows(2).map(|w| &self.stream[w[0]..w[1]])
    }

    /// The stream as text cut at the split points moved back to character boundaries, if it
    /// is UTF-8.
    pub fn str_deltas(&self) -> Option<Vec<&'a str>> {
        let text = std::str::from_utf8(self.stream).ok()?;
        let mut cuts: Vec<usize> = self
            .cuts
            .iter()
            .map(|&c| {
                (0..=c)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0)
            })
            .collect();
        cuts.dedup();
        if cuts.len() < 2 {
            cuts = vec![0, text.len()];
        }
        Some(cuts.windows(2).map(|w| &text[w[0]..w[1]]).collect())
    }
}

/// One streaming decoder under test, giving owned events.
pub trait Harness: Copy {
    /// The owned event type.
    type Event: PartialEq + Debug;
    /// Feeds text deltas, finishes, returns the events.
    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event>;
    /// Feeds byte deltas, finishes, returns the events.
    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event>;
    /// The text and span of a text event.
    fn text(e: &Self::Event) -> Option<(&str, Span)>;
    /// Appends `text` at `span` to `last` if `last` is a text event that ends where `span`
    /// starts; says whether it did.
    fn extend_text(last: &mut Self::Event, text: &str, span: Span) -> bool;
    /// The span of a text, block or top-level diagnostic event (those tile the stream).
    fn tiling_span(e: &Self::Event) -> Option<Span>;
}

/// Appends an owned event; a text event right after an adjacent text event is merged
/// into it in place (text events may be split anywhere), and empty text is dropped.
pub fn push<H: Harness>(events: &mut Vec<H::Event>, e: H::Event) {
    if let Some((text, span)) = H::text(&e) {
        if text.is_empty() {
            return;
        }
        if let Some(last) = events.last_mut() {
            if H::extend_text(last, text, span) {
                return;
            }
        }
    }
    events.push(e);
}

/// Asserts that tiling spans cover `[0, n)` with no gap and no overlap, and (for UTF-8
/// input) that each text event is the input under its span.
pub fn assert_tiles<H: Harness>(events: &[H::Event], stream: &[u8]) {
    let text = std::str::from_utf8(stream).ok();
    let mut at = 0;
    for e in events {
        let Some(span) = H::tiling_span(e) else {
            continue;
        };
        assert_eq!(span.start, at, "gap or overlap before {e:?}");
        assert!(span.end >= span.start, "reversed span in {e:?}");
        at = span.end;
        if let (Some(input), Some((t, _))) = (text, H::text(e)) {
            assert_eq!(
                input.get(span.start..span.end),
                Some(t),
                "text event is not the input under its span"
            );
        }
    }
    assert_eq!(at, stream.len(), "spans do not reach the end of the stream");
}

/// Runs every check of the crate documentation on one input.
pub fn check<H: Harness>(harness: H, input: &Input<'_>) {
    let whole = harness.run_bytes([input.stream]);
    assert_tiles::<H>(&whole, input.stream);
    let split = harness.run_bytes(input.byte_deltas());
    assert_eq!(
        split, whole,
        "byte deltas {:?} differ from the whole stream",
        input.cuts
    );
    if let Some(deltas) = input.str_deltas() {
        let text = std::str::from_utf8(input.stream).expect("checked by str_deltas");
        let as_str = harness.run_str([text]);
        assert_eq!(as_str, whole, "the whole stream as &str differs from bytes");
        let split = harness.run_str(deltas);
        assert_eq!(split, whole, "&str deltas differ from the whole stream");
    }
    if input.flags & FLAG_BYTE_BY_BYTE != 0 {
        let bytes = harness.run_bytes(input.stream.chunks(1));
        assert_eq!(
            bytes, whole,
            "byte-by-byte feeding differs from the whole stream"
        );
    }
}

/// Feeds `deltas` to a new decoder with `$feed`, finishes it and collects the events.
macro_rules! feed_all {
    ($decoder:expr, $deltas:expr, $feed:ident) => {{
        let mut events = Vec::new();
        let mut decoder = $decoder;
        for delta in $deltas {
            decoder.$feed(delta, |e| push::<Self>(&mut events, e.into_owned()));
        }
        decoder.finish(|e| push::<Self>(&mut events, e.into_owned()));
        events
    }};
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

/// The TAM decoder.
#[derive(Clone, Copy, Debug)]
pub struct Tam(pub tam_parse::Config);

impl Tam {
    /// Settings from flag bits: bit 0 VCP dialect, bit 1 tiny limits.
    pub fn from_flags(flags: u8) -> Tam {
        Tam(tam_config(flags))
    }
}

fn tam_config(flags: u8) -> tam_parse::Config {
    let dialect = if flags & 1 != 0 {
        tam_parse::Dialect::Vcp
    } else {
        tam_parse::Dialect::Tam
    };
    let mut c = tam_parse::Config::with_dialect(dialect);
    if flags & 2 != 0 {
        c.max_block_bytes = 24 + usize::from(flags & 0x3c) * 4;
        c.max_calls = 2;
        c.max_key_len = 6;
    }
    c
}

fn action_config(flags: u8) -> action_xml::Config {
    let mut c = action_xml::Config::default();
    if flags & 2 != 0 {
        c.max_block_bytes = 24 + usize::from(flags & 0x3c) * 4;
        c.max_depth = 3;
        c.max_nodes = 12;
    }
    c
}

impl Harness for Tam {
    type Event = tam_parse::Event<'static>;

    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
        feed_all!(tam_parse::Decoder::new(self.0), deltas, feed)
    }

    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
        feed_all!(tam_parse::Decoder::new(self.0), deltas, feed_bytes)
    }

    text_methods!(tam_parse::Event::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        match e {
            tam_parse::Event::Text { span, .. } => Some(*span),
            tam_parse::Event::Block(b) => Some(b.span),
            tam_parse::Event::Diagnostic(d) => Some(d.span),
            _ => None,
        }
    }
}

/// The ACTION decoder.
#[derive(Clone, Copy, Debug)]
pub struct Action(pub action_xml::Config);

impl Action {
    /// Settings from flag bits: bit 1 tiny limits.
    pub fn from_flags(flags: u8) -> Action {
        Action(action_config(flags))
    }
}

impl Harness for Action {
    type Event = action_xml::Event<'static>;

    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
        feed_all!(action_xml::Decoder::new(self.0), deltas, feed)
    }

    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
        feed_all!(action_xml::Decoder::new(self.0), deltas, feed_bytes)
    }

    text_methods!(action_xml::Event::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        match e {
            action_xml::Event::Text { span, .. } => Some(*span),
            action_xml::Event::Block(b) => Some(b.span),
            action_xml::Event::Diagnostic(d) => Some(d.span),
            _ => None,
        }
    }
}

/// The decoder of TAM and ACTION blocks in one stream.
#[derive(Clone, Copy, Debug)]
pub struct Mixed(pub action_xml::MixedConfig);

impl Mixed {
    /// Settings from flag bits: bit 0 VCP dialect, bit 1 tiny limits.
    pub fn from_flags(flags: u8) -> Mixed {
        let mut c = action_xml::MixedConfig::default();
        c.tam = tam_config(flags);
        c.action = action_config(flags);
        Mixed(c)
    }
}

impl Harness for Mixed {
    type Event = MixedEvent<'static>;

    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
        feed_all!(MixedDecoder::new(self.0), deltas, feed)
    }

    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
        feed_all!(MixedDecoder::new(self.0), deltas, feed_bytes)
    }

    text_methods!(MixedEvent::Text);

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        match e {
            MixedEvent::Text { span, .. } => Some(*span),
            MixedEvent::TamBlock(b) => Some(b.span),
            MixedEvent::ActionBlock(b) => Some(b.span),
            MixedEvent::Diagnostic(d) => Some(d.span),
            _ => None,
        }
    }
}
