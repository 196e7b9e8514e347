//! Shared test harness: every input is fed whole, char by char (`&str` deltas), byte by
//! byte (`feed_bytes`), in random splits and as every prefix + rest, and all must give the
//! same events (adjacent text merged); the spans of text, block and top-level diagnostic
//! events must tile `[0, n)` exactly.
#![allow(dead_code)]

use std::borrow::Cow;
use std::fmt::Debug;
use std::fmt::Write as _;

use action_xml::{
    ActionBlock, Config, Decoder, Diagnostic, Event, MixedConfig, MixedDecoder, MixedEvent, Span,
};

/// A decoder under test: owned events in, for both ACTION-only and mixed decoding.
pub trait Harness: Copy {
    /// The owned event type.
    type Event: Clone + PartialEq + Debug;
    /// Feeds text deltas, finishes, returns the events.
    fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event>;
    /// Feeds byte deltas, finishes, returns the events.
    fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event>;
    /// The text of a text event.
    fn text(e: &Self::Event) -> Option<(&str, Span)>;
    /// A text event.
    fn make_text(text: String, span: Span) -> Self::Event;
    /// The span of a text, block or top-level diagnostic event (those tile the input).
    fn tiling_span(e: &Self::Event) -> Option<Span>;
}

/// `run_str` and `run_bytes` of a [`Harness`] over decoder type `$decoder`, built from the
/// harness's config in field 0.
macro_rules! runs {
    ($decoder:ty) => {
        fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
            let mut events = Vec::new();
            let mut d = <$decoder>::new(self.0);
            for delta in deltas {
                d.feed(delta, |e| events.push(e.into_owned()));
            }
            d.finish(|e| events.push(e.into_owned()));
            events
        }

        fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
            let mut events = Vec::new();
            let mut d = <$decoder>::new(self.0);
            for delta in deltas {
                d.feed_bytes(delta, |e| events.push(e.into_owned()));
            }
            d.finish(|e| events.push(e.into_owned()));
            events
        }
    };
}

/// The ACTION decoder with a config.
#[derive(Clone, Copy, Debug)]
pub struct Action(pub Config);

impl Harness for Action {
    type Event = Event<'static>;

    runs!(Decoder);

    fn text(e: &Self::Event) -> Option<(&str, Span)> {
        match e {
            Event::Text { text, span } => Some((text, *span)),
            _ => None,
        }
    }

    fn make_text(text: String, span: Span) -> Self::Event {
        Event::Text {
            text: Cow::Owned(text),
            span,
        }
    }

    fn tiling_span(e: &Self::Event) -> Option<Span> {
        match e {
            Event::Text { span, .. } => Some(*span),
            Event::Block(b) => Some(b.span),
            Event::Diagnostic(d) => Some(d.span),
            _ => None,
        }
    }
}

/// The mixed decoder with a config.
#[derive(Clone, Copy, Debug)]
pub struct Mixed(pub MixedConfig);

impl Harness for Mixed {
    type Event = MixedEvent<'static>;

    runs!(MixedDecoder);

    fn text(e: &Self::Event) -> Option<(&str, Span)> {
        match e {
            MixedEvent::Text { text, span } => Some((text, *span)),
            _ => None,
        }
    }

    fn make_text(text: String, span: Span) -> Self::Event {
        MixedEvent::Text {
            text: Cow::Owned(text),
            span,
        }
    }

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

/// Merges adjacent text events (they may be split anywhere) and drops empty ones.
pub fn normalize<H: Harness>(events: Vec<H::Event>) -> Vec<H::Event> {
    let mut out: Vec<H::Event> = Vec::with_capacity(events.len());
    for e in events {
        if let Some((text, span)) = H::text(&e) {
            if text.is_empty() {
                continue;
            }
            if let Some((prev, prev_span)) = out.last().and_then(H::text) {
                assert_eq!(prev_span.end, span.start, "text events out of order");
                let merged = H::make_text(
                    format!("{prev}{text}"),
                    Span::new(prev_span.start, span.end),
                );
                *out.last_mut().unwrap() = merged;
                continue;
            }
        }
        out.push(e);
    }
    out
}

/// Asserts that the spans of text, block and top-level diagnostic events tile `[0, n)`.
pub fn assert_tiles<H: Harness>(events: &[H::Event], n: usize) {
    let mut at = 0;
    for e in events {
        let Some(span) = H::tiling_span(e) else {
            continue;
        };
        assert_eq!(span.start, at, "gap or overlap before {e:?}");
        assert!(span.end >= span.start, "backwards span in {e:?}");
        at = span.end;
    }
    assert_eq!(at, n, "spans do not reach the end of the input");
}

/// A small deterministic generator for split points.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Random cut points of `len` bytes: 0, …, len.
pub fn random_cuts(len: usize, seed: u64) -> Vec<usize> {
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut cuts = vec![0];
    let mut at = 0;
    while at < len {
        at = (at + 1 + (rng.next() % 13) as usize).min(len);
        cuts.push(at);
    }
    cuts
}

fn pieces<'a>(input: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> {
    cuts.windows(2).map(move |w| &input[w[0]..w[1]])
}

/// Decodes `input` every way and asserts identical events and tiled spans. Returns the
/// normalised events.
pub fn decode_all_ways<H: Harness>(harness: H, input: &[u8]) -> Vec<H::Event> {
    let whole = normalize::<H>(harness.run_bytes([input]));
    assert_tiles::<H>(&whole, input.len());
    let check = |how: &str, events: Vec<H::Event>| {
        let events = normalize::<H>(events);
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
            let mut cuts = random_cuts(input.len(), seed);
            cuts.retain(|&c| text.is_char_boundary(c));
            let deltas: Vec<&str> = cuts.windows(2).map(|w| &text[w[0]..w[1]]).collect();
            check(
                &format!("as &str in random splits (seed {seed})"),
                harness.run_str(deltas),
            );
        }
    }
    check("byte by byte", harness.run_bytes(input.chunks(1)));
    for seed in 1..=8 {
        let cuts = random_cuts(input.len(), seed);
        check(
            &format!("in random splits (seed {seed})"),
            harness.run_bytes(pieces(input, &cuts)),
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

/// Shorthand: ACTION decoding of text with the default config, every way.
pub fn decode(input: &str) -> Vec<Event<'static>> {
    decode_all_ways(Action(Config::default()), input.as_bytes())
}

/// The blocks in the events.
pub fn blocks<'e>(events: &'e [Event<'static>]) -> Vec<&'e ActionBlock> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b),
            _ => None,
        })
        .collect()
}

/// All diagnostic codes in the events, blocks' included, in order.
pub fn codes(events: &[Event<'static>]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::Block(b) => out.extend(b.diagnostics.iter().map(|d| d.code.as_str())),
            Event::Diagnostic(d) => out.push(d.code.as_str()),
            _ => {}
        }
    }
    out
}

/// All text, concatenated.
pub fn text(events: &[Event<'static>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(&**text),
            _ => None,
        })
        .collect()
}

fn span(s: Span) -> String {
    format!("{}..{}", s.start, s.end)
}

fn dump_diagnostic(out: &mut String, indent: &str, d: &Diagnostic) {
    writeln!(
        out,
        "{indent}{} {} {}: {}",
        d.severity,
        d.code,
        span(d.span),
        d.message
    )
    .unwrap();
    if let Some(raw) = &d.raw {
        writeln!(out, "{indent}  raw {:?}", &**raw).unwrap();
    }
}

fn dump_action_block(out: &mut String, b: &ActionBlock) {
    writeln!(out, "block {} index={}", span(b.span), b.index).unwrap();
    for c in &b.calls {
        writeln!(out, "  call {:?} {}", c.tool, span(c.span)).unwrap();
        writeln!(
            out,
            "    args {}",
            serde_json::Value::Object(c.args.clone())
        )
        .unwrap();
    }
    for d in &b.diagnostics {
        dump_diagnostic(out, "  ", d);
    }
}

/// A stable text rendering of ACTION events, for golden files.
pub fn dump(events: &[Event<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Text { text, span: s } => writeln!(out, "text {} {:?}", span(*s), text).unwrap(),
            Event::BlockStart { span: s } => writeln!(out, "block_start {}", span(*s)).unwrap(),
            Event::Block(b) => dump_action_block(&mut out, b),
            Event::Diagnostic(d) => dump_diagnostic(&mut out, "diagnostic ", d),
            other => writeln!(out, "{other:?}").unwrap(),
        }
    }
    out
}

/// A stable text rendering of mixed events, for golden files.
pub fn dump_mixed(events: &[MixedEvent<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            MixedEvent::Text { text, span: s } => {
                writeln!(out, "text {} {:?}", span(*s), text).unwrap()
            }
            MixedEvent::BlockStart { protocol, span: s } => {
                writeln!(out, "block_start {} {}", protocol.as_str(), span(*s)).unwrap()
            }
            MixedEvent::CommandSeen {
                call,
                tool,
                span: s,
            } => writeln!(
                out,
                "command_seen {} call={call} tool={:?}",
                span(*s),
                &**tool
            )
            .unwrap(),
            MixedEvent::TamBlock(b) => {
                writeln!(out, "tam_block {}", span(b.span)).unwrap();
                for c in &b.calls {
                    writeln!(out, "  call {} {:?} {}", c.index, &*c.tool, span(c.span)).unwrap();
                    for p in &c.params {
                        writeln!(out, "    {:?} = {:?}", &*p.key, &*p.value).unwrap();
                    }
                }
                for d in &b.diagnostics {
                    dump_diagnostic(&mut out, "  ", d);
                }
            }
            MixedEvent::ActionBlock(b) => {
                out.push_str("action_");
                dump_action_block(&mut out, b);
            }
            MixedEvent::Diagnostic(d) => dump_diagnostic(&mut out, "diagnostic ", d),
            other => writeln!(out, "{other:?}").unwrap(),
        }
    }
    out
}
