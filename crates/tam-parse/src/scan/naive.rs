//! A deliberately simple scanner, the oracle of the [`Scanner`]'s property tests (as
//! memchr tests its fast paths against `naive.rs`).
//!
//! It sees the whole input at once and tries every pattern at every position, in order: no
//! resume points, no held-back bytes, no pattern sets or candidate finders, no chunked
//! pushes, no limits. It shares only the one-position matcher [`Pattern::match_at`] with
//! the scanner (a partial match counts as none: the input is complete). Given the same
//! region-acceptance rule it must report exactly what the scanner reports for any split of
//! the input.

use super::grammar::Grammar;
use super::handler::BlockEnd;
use super::pattern::{MatchAt, Pattern};
use super::{BlockView, ClosedBlock, OffsetMap, Quote, ScanHandler, Scanner};
use crate::diagnostic::Span;

/// What a scanner reports, with stream offsets (no invalid UTF-8 in these tests, so a
/// block buffer offset is its stream offset minus the block's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seen {
    Text(String, Span),
    Quoted(usize, Span, Quote),
    BlockOpened(usize, Span),
    RegionOpened(usize, Span),
    RegionClosed(usize, Span, Span),
    BlockClosed {
        kind: usize,
        end: BlockEnd,
        span: Span,
        raw: String,
        body: Span,
        open_region: Option<(usize, usize)>,
    },
}

/// Appends `seen`, merging adjacent text (text may be split anywhere).
fn push(out: &mut Vec<Seen>, seen: Seen) {
    if let Seen::Text(t, s) = &seen {
        if t.is_empty() {
            return;
        }
        if let Some(Seen::Text(prev, ps)) = out.last_mut()
            && ps.end == s.start
        {
            prev.push_str(t);
            ps.end = s.end;
            return;
        }
    }
    out.push(seen);
}

/// The region-acceptance rule shared by the oracle and the handler under test: refuse an
/// opener right after `x` (it looks only at the bytes before the opener).
pub(super) fn accept(before: &[u8]) -> bool {
    before.last() != Some(&b'x')
}

fn full(p: &Pattern, hay: &[u8]) -> Option<usize> {
    match p.match_at(hay) {
        MatchAt::Full(n) => Some(n),
        MatchAt::Partial | MatchAt::No => None,
    }
}

/// `at` begins a line: only blanks (` `, `\t`, `\r`) between it and a `\n` or `floor`.
fn line_start(input: &[u8], at: usize, floor: usize) -> bool {
    input[floor..at]
        .iter()
        .rev()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'))
        .is_none_or(|&b| b == b'\n')
}

/// Whether a start marker at `at` is quoted, for inputs without code fences:
/// its line (from the last line break, or from `resume` — where prose resumed after a
/// block — when that is later) is a `>` line, or holds an unclosed backtick run before it.
fn quoted(input: &[u8], at: usize, resume: usize) -> Option<Quote> {
    let newline = input[..at].iter().rposition(|&b| b == b'\n').map(|i| i + 1);
    let from = match newline {
        Some(n) if n >= resume => {
            let first = input[n..at]
                .iter()
                .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'));
            if first == Some(&b'>') {
                return Some(Quote::QuoteLine);
            }
            n
        }
        _ if resume == 0 && newline.is_none() => {
            let first = input[..at]
                .iter()
                .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'));
            if first == Some(&b'>') {
                return Some(Quote::QuoteLine);
            }
            0
        }
        _ => resume,
    };
    // Backtick runs on the line: a run opens a span the next run of its length closes.
    let mut open = 0;
    let mut i = from;
    while i < at {
        if input[i] == b'`' {
            let n = input[i..at].iter().take_while(|&&b| b == b'`').count();
            if open == 0 {
                open = n;
            } else if open == n {
                open = 0;
            }
            i += n;
        } else {
            i += 1;
        }
    }
    (open > 0).then_some(Quote::InlineCode)
}

/// What may happen at one position inside a block.
#[derive(Debug, Clone, Copy)]
enum Step {
    Close,
    Restart,
    Enter(usize),
    Leave,
}

/// An open block: kind, start, body start, open region (index, content start).
type Open = (usize, usize, usize, Option<(usize, usize)>);

/// The longest full match among `candidates` at `at` (the first of equally long ones).
fn longest(
    candidates: &[(&Pattern, Step)],
    input: &[u8],
    at: usize,
    floor: usize,
) -> Option<(usize, Step)> {
    let mut best: Option<(usize, Step)> = None;
    for (p, step) in candidates {
        if let Some(n) = full(p, &input[at..])
            && (!p.line_start || line_start(input, at, floor))
            && best.is_none_or(|(l, _)| n > l)
        {
            best = Some((n, *step));
        }
    }
    best
}

/// Scans the whole of `input` with `grammar`.
pub(super) fn scan(grammar: &Grammar, input: &str) -> Vec<Seen> {
    let bytes = input.as_bytes();
    let syntaxes = grammar.syntaxes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut text_from = 0;
    // Where prose last resumed after a block (0: the stream's start).
    let mut resume = 0;
    let mut block: Option<Open> = None;
    let close = |out: &mut Vec<Seen>,
                 (kind, start, body, region): Open,
                 end: BlockEnd,
                 body_end: usize,
                 to: usize| {
        out.push(Seen::BlockClosed {
            kind,
            end,
            span: Span::new(start, to),
            raw: input[start..to].to_owned(),
            body: Span::new(body - start, body_end - start),
            open_region: region.map(|(r, c)| (r, c - start)),
        });
    };
    while i < bytes.len() {
        let Some((kind, start, body, region)) = block else {
            // Outside: the longest start marker here, else one character of prose.
            let starts: Vec<(&Pattern, Step)> = syntaxes
                .iter()
                .enumerate()
                .map(|(k, s)| (&s.start, Step::Enter(k)))
                .collect();
            match longest(&starts, bytes, i, 0) {
                Some((n, Step::Enter(k))) if quoted(bytes, i, resume).is_some() => {
                    push(
                        &mut out,
                        Seen::Text(input[text_from..i].to_owned(), Span::new(text_from, i)),
                    );
                    let quote = quoted(bytes, i, resume).unwrap_or(Quote::InlineCode);
                    out.push(Seen::Quoted(k, Span::new(i, i + n), quote));
                    text_from = i;
                    i += n;
                }
                Some((n, Step::Enter(k))) => {
                    push(
                        &mut out,
                        Seen::Text(input[text_from..i].to_owned(), Span::new(text_from, i)),
                    );
                    out.push(Seen::BlockOpened(k, Span::new(i, i + n)));
                    block = Some((k, i, i + n, None));
                    i += n;
                }
                _ => i += input[i..].chars().next().map_or(1, char::len_utf8),
            }
            continue;
        };
        let s = &syntaxes[kind];
        let mut candidates: Vec<(&Pattern, Step)> = Vec::new();
        match region {
            None => {
                candidates.push((&s.end, Step::Close));
                if s.restart_on_start {
                    candidates.push((&s.start, Step::Restart));
                }
                for (r, reg) in s.regions.iter().enumerate() {
                    candidates.push((&reg.open, Step::Enter(r)));
                }
            }
            Some((r, _)) => {
                let reg = &s.regions[r];
                candidates.push((&reg.close, Step::Leave));
                if reg.block_markers_inside {
                    candidates.push((&s.end, Step::Close));
                    if s.restart_on_start {
                        candidates.push((&s.start, Step::Restart));
                    }
                }
            }
        }
        match longest(&candidates, bytes, i, body) {
            Some((n, Step::Close)) => {
                close(
                    &mut out,
                    (kind, start, body, None),
                    BlockEnd::Marker,
                    i,
                    i + n,
                );
                block = None;
                i += n;
                text_from = i;
                resume = i;
            }
            Some((n, Step::Restart)) => {
                close(&mut out, (kind, start, body, None), BlockEnd::Restart, i, i);
                out.push(Seen::BlockOpened(kind, Span::new(i, i + n)));
                block = Some((kind, i, i + n, None));
                i += n;
            }
            Some((n, Step::Enter(r))) => {
                if accept(&bytes[start..i]) {
                    out.push(Seen::RegionOpened(r, Span::new(i, i + n)));
                    block = Some((kind, start, body, Some((r, i + n))));
                }
                i += n;
            }
            Some((n, Step::Leave)) => {
                let (r, content) = region.unwrap_or_default();
                out.push(Seen::RegionClosed(
                    r,
                    Span::new(content, i),
                    Span::new(i, i + n),
                ));
                block = Some((kind, start, body, None));
                i += n;
            }
            None => i += input[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    match block {
        Some(b) => close(&mut out, b, BlockEnd::Eof, bytes.len(), bytes.len()),
        None => push(
            &mut out,
            Seen::Text(
                input[text_from..].to_owned(),
                Span::new(text_from, bytes.len()),
            ),
        ),
    }
    out
}

/// Records what the [`Scanner`] reports, in the oracle's terms, and checks the
/// `block_progress` contract on the way.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    pub(super) seen: Vec<Seen>,
    settled: usize,
}

impl ScanHandler for Recorder {
    fn text(&mut self, text: &str, span: Span) {
        push(&mut self.seen, Seen::Text(text.to_owned(), span));
    }

    fn quoted_marker(&mut self, kind: usize, marker: Span, quote: Quote) {
        self.seen.push(Seen::Quoted(kind, marker, quote));
    }

    fn block_opened(&mut self, kind: usize, marker: Span) {
        self.settled = 0;
        self.seen.push(Seen::BlockOpened(kind, marker));
    }

    fn accept_region(
        &mut self,
        view: &BlockView<'_>,
        _region: usize,
        marker: std::ops::Range<usize>,
    ) -> bool {
        accept(&view.buf().as_bytes()[..marker.start])
    }

    fn region_opened(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        marker: std::ops::Range<usize>,
    ) {
        self.seen
            .push(Seen::RegionOpened(region, view.span(marker)));
    }

    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        assert!(settled >= self.settled, "settled went back");
        assert!(settled <= view.buf().len());
        assert!(view.buf().is_char_boundary(settled));
        self.settled = settled;
    }

    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: std::ops::Range<usize>,
        marker: std::ops::Range<usize>,
    ) {
        self.seen.push(Seen::RegionClosed(
            region,
            view.span(content),
            view.span(marker),
        ));
    }

    fn block_closed(&mut self, block: ClosedBlock) {
        assert_eq!(block.offsets, OffsetMap::new(block.span.start));
        self.seen.push(Seen::BlockClosed {
            kind: block.kind,
            end: block.end,
            span: block.span,
            raw: block.raw.to_string(),
            body: Span::new(block.body.start, block.body.end),
            open_region: block.open_region,
        });
    }
}

/// The [`Scanner`] fed `input` cut at `cuts` (moved back to character boundaries).
pub(super) fn run(grammar: &std::sync::Arc<Grammar>, input: &str, cuts: &[usize]) -> Vec<Seen> {
    let mut scanner = Scanner::new(std::sync::Arc::clone(grammar), usize::MAX / 4);
    let mut rec = Recorder::default();
    let mut at = 0;
    for &c in cuts.iter().chain([&input.len()]) {
        let mut c = c.min(input.len());
        while !input.is_char_boundary(c) {
            c -= 1;
        }
        if c > at {
            scanner.feed(&input[at..c], &mut rec);
            at = c;
        }
    }
    scanner.finish(&mut rec);
    rec.seen
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::Dialect;
    use crate::scan::{BlockSyntax, Region};

    /// TAM blocks and XML-like blocks (tags, CDATA and comment regions) in one grammar.
    fn grammar() -> Arc<Grammar> {
        Grammar::new(vec![
            Dialect::Tam.block_syntax(),
            BlockSyntax {
                start: Pattern::tag("action"),
                end: Pattern::closing_tag("action"),
                regions: vec![
                    Region {
                        open: Pattern::exact("<![CDATA["),
                        close: Pattern::exact("]]>"),
                        block_markers_inside: false,
                    },
                    Region {
                        open: Pattern::exact("<!--"),
                        close: Pattern::exact("-->"),
                        block_markers_inside: false,
                    },
                    Region {
                        open: Pattern::exact("//").at_line_start(),
                        close: Pattern::exact("\n"),
                        block_markers_inside: true,
                    },
                ],
                restart_on_start: false,
            },
        ])
        .unwrap()
    }

    const PIECES: &[&str] = &[
        "<|[REQUEST_TOOL]|>",
        "<|[END_TOOL]|>",
        "<|[",
        "「始」",
        "「末」",
        "「始ESCAPE」",
        "「末ESCAPE」",
        "#",
        "//",
        "\n",
        " ",
        "\t",
        "\r",
        "x",
        "k:",
        "文",
        "<ACTION>",
        "< action\t>",
        "</Action >",
        "</ ACTION>",
        "<act",
        "<![CDATA[",
        "]]>",
        "<!--",
        "-->",
        "<",
        ">",
        "`",
        "``",
        "> ",
        "\n>",
    ];

    /// Inputs without code fences (the oracle does not know them; the decoders' tests
    /// cover them).
    fn input() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..40)
            .prop_map(|v| v.concat())
            .prop_filter("no code fence", |s| !s.contains("```"))
    }

    /// Random cut points, pieces of 1 to 9 bytes.
    fn cuts(len: usize, seed: u64) -> Vec<usize> {
        let mut x = seed | 1;
        let mut at = 0;
        let mut out = Vec::new();
        while at < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            at += 1 + (x % 9) as usize;
            out.push(at);
        }
        out
    }

    #[test]
    fn oracle_reads_a_simple_stream() {
        let g = grammar();
        let input = "a<|[REQUEST_TOOL]|>k:「始」v「末」<|[END_TOOL]|>b";
        let seen = scan(&g, input);
        assert_eq!(seen, run(&g, input, &[]));
        assert!(matches!(&seen[0], Seen::Text(t, _) if t == "a"));
        assert!(matches!(&seen[2], Seen::RegionOpened(0, _)));
        assert!(matches!(
            &seen[4],
            Seen::BlockClosed {
                end: BlockEnd::Marker,
                ..
            }
        ));
        assert!(matches!(seen.last(), Some(Seen::Text(t, _)) if t == "b"));
    }

    #[test]
    fn line_start_patterns_skip_blanks_and_cr() {
        let g = grammar();
        for input in [
            "<ACTION>\r//a\n</ACTION>",
            "<ACTION>x\n \t//a\n</ACTION>",
            "<ACTION>x //a</ACTION>",
        ] {
            let seen = scan(&g, input);
            assert_eq!(seen, run(&g, input, &[9, 10, 11]), "{input:?}");
            let comment = seen.iter().any(|s| matches!(s, Seen::RegionOpened(2, _)));
            assert_eq!(comment, !input.contains("x //"), "{input:?}: {seen:?}");
        }
    }

    #[test]
    fn quoted_markers_open_no_block() {
        let g = grammar();
        for (input, quoted) in [
            ("a `<ACTION>x</ACTION>` b", true),
            ("> <|[REQUEST_TOOL]|>k:「始」v「末」<|[END_TOOL]|>", true),
            ("a `x` <ACTION>x</ACTION>", false),
            ("a `x\n<ACTION>x</ACTION>", false),
            ("<ACTION></ACTION> > <ACTION></ACTION>", false),
            ("a ``x ` <ACTION>", true),
        ] {
            let seen = scan(&g, input);
            assert_eq!(seen, run(&g, input, &[1, 2, 3, 5, 8, 13]), "{input:?}");
            let q = seen.iter().any(|s| matches!(s, Seen::Quoted(..)));
            assert_eq!(q, quoted, "{input:?}: {seen:?}");
        }
    }

    #[test]
    fn a_refused_opener_is_body_text() {
        let g = grammar();
        let input = "<|[REQUEST_TOOL]|>x「始」<|[END_TOOL]|>";
        let seen = run(&g, input, &[3, 20, 25]);
        assert_eq!(seen, scan(&g, input));
        assert_eq!(seen.len(), 2, "{seen:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// The scanner, fed whole, byte by byte or in random pieces, reports what the naive
        /// scanner finds on the whole input.
        #[test]
        fn scanner_matches_the_naive_oracle(input in input(), seed in any::<u64>()) {
            let g = grammar();
            let expected = scan(&g, &input);
            prop_assert_eq!(&run(&g, &input, &[]), &expected);
            prop_assert_eq!(&run(&g, &input, &cuts(input.len(), seed)), &expected);
            let every: Vec<usize> = (1..input.len()).collect();
            prop_assert_eq!(&run(&g, &input, &every), &expected);
        }
    }
}
