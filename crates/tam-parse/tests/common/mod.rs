//! Shared test harness: every input is fed whole, char by char, byte by byte, in random
//! splits and as every prefix + rest, and all must give the same events.
#![allow(dead_code)]

use std::borrow::Cow;
use std::fmt::Write as _;

use tam_parse::{Config, Decoder, Event, Span};

/// Feeds `deltas` as byte deltas and collects owned events.
pub fn feed_bytes_deltas<'a>(
    deltas: impl IntoIterator<Item = &'a [u8]>,
    config: Config,
) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut d = Decoder::new(config);
    for delta in deltas {
        d.feed_bytes(delta, |e| events.push(e.into_owned()));
    }
    d.finish(|e| events.push(e.into_owned()));
    events
}

/// Feeds `deltas` as text deltas and collects owned events.
pub fn feed_str_deltas<'a>(
    deltas: impl IntoIterator<Item = &'a str>,
    config: Config,
) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut d = Decoder::new(config);
    for delta in deltas {
        d.feed(delta, |e| events.push(e.into_owned()));
    }
    d.finish(|e| events.push(e.into_owned()));
    events
}

/// Merges adjacent text events (they may be split anywhere).
pub fn normalize(events: Vec<Event<'static>>) -> Vec<Event<'static>> {
    let mut out: Vec<Event<'static>> = Vec::with_capacity(events.len());
    for e in events {
        if let Event::Text { text, span } = &e {
            if text.is_empty() {
                continue;
            }
            if let Some(Event::Text {
                text: prev,
                span: prev_span,
            }) = out.last_mut()
            {
                assert_eq!(prev_span.end, span.start, "text events out of order");
                let mut s = prev.to_string();
                s.push_str(text);
                *prev = Cow::Owned(s);
                prev_span.end = span.end;
                continue;
            }
        }
        out.push(e);
    }
    out
}

/// Asserts that the spans of text, block and top-level diagnostic events tile [0, n).
pub fn assert_tiles(events: &[Event<'static>], n: usize) {
    let mut at = 0;
    for e in events {
        let span = match e {
            Event::Text { span, .. } => *span,
            Event::Block(b) => b.span,
            Event::Diagnostic(d) => d.span,
            _ => continue,
        };
        assert_eq!(span.start, at, "gap or overlap before {e:?}");
        assert!(span.end >= span.start);
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

/// Random split points of `len` bytes.
pub fn random_splits(len: usize, seed: u64) -> Vec<usize> {
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
pub fn decode_all_ways(input: &[u8], config: Config) -> Vec<Event<'static>> {
    let whole = normalize(feed_bytes_deltas([input], config));
    assert_tiles(&whole, input.len());
    let check = |how: &str, events: Vec<Event<'static>>| {
        let events = normalize(events);
        assert_eq!(events, whole, "events differ when fed {how}");
    };
    if let Ok(text) = std::str::from_utf8(input) {
        check("whole as &str", feed_str_deltas([text], config));
        let chars: Vec<&str> = text
            .char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect();
        check("char by char", feed_str_deltas(chars, config));
        for (i, _) in text.char_indices().skip(1) {
            check(
                &format!("as &str prefix {i} + rest"),
                feed_str_deltas([&text[..i], &text[i..]], config),
            );
        }
    }
    check("byte by byte", feed_bytes_deltas(input.chunks(1), config));
    for seed in 1..=8 {
        let cuts = random_splits(input.len(), seed);
        check(
            &format!("in random splits (seed {seed})"),
            feed_bytes_deltas(pieces(input, &cuts), config),
        );
    }
    for i in 1..input.len() {
        check(
            &format!("as prefix {i} + rest"),
            feed_bytes_deltas([&input[..i], &input[i..]], config),
        );
    }
    whole
}

/// Shorthand for text input.
pub fn decode_str(input: &str, config: Config) -> Vec<Event<'static>> {
    decode_all_ways(input.as_bytes(), config)
}

fn span(s: Span) -> String {
    format!("{}..{}", s.start, s.end)
}

/// A stable text rendering of events, for golden files.
pub fn dump(events: &[Event<'static>]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Text { text, span: s } => {
                writeln!(out, "text {} {:?}", span(*s), text).unwrap();
            }
            Event::BlockStart { span: s } => writeln!(out, "block_start {}", span(*s)).unwrap(),
            Event::CommandSeen {
                call,
                tool,
                span: s,
            } => {
                writeln!(
                    out,
                    "command_seen {} call={call} tool={:?}",
                    span(*s),
                    &**tool
                )
                .unwrap();
            }
            Event::Block(b) => {
                writeln!(out, "block {}", span(b.span)).unwrap();
                for c in &b.calls {
                    writeln!(out, "  call {} {:?} {}", c.index, &*c.tool, span(c.span)).unwrap();
                    for p in &c.params {
                        writeln!(
                            out,
                            "    {:?} ({:?}) = {:?} {}",
                            &*p.key,
                            &*p.canonical,
                            &*p.value,
                            span(p.span)
                        )
                        .unwrap();
                    }
                }
                for d in &b.diagnostics {
                    writeln!(
                        out,
                        "  {} {} {}: {}",
                        d.severity,
                        d.code,
                        span(d.span),
                        d.message
                    )
                    .unwrap();
                    if let Some(raw) = &d.raw {
                        writeln!(out, "    raw {:?}", &**raw).unwrap();
                    }
                }
            }
            Event::Diagnostic(d) => {
                writeln!(
                    out,
                    "diagnostic {} {} {}: {}",
                    d.severity,
                    d.code,
                    span(d.span),
                    d.message
                )
                .unwrap();
                if let Some(raw) = &d.raw {
                    writeln!(out, "  raw {:?}", &**raw).unwrap();
                }
            }
            other => writeln!(out, "{other:?}").unwrap(),
        }
    }
    out
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

/// The blocks in the events.
pub fn blocks<'e>(events: &'e [Event<'static>]) -> Vec<&'e tam_parse::Block> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b),
            _ => None,
        })
        .collect()
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
