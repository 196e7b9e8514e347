//! Streaming guarantees through the public API: what is held back, when blocks come out,
//! the adapters, and reuse of the scanner with other grammars.

mod common;

use tam_parse::scan::{
    BlockEnd, BlockSyntax, BlockView, ClosedBlock, Grammar, Pattern, Region, ScanHandler, Scanner,
};
use tam_parse::{BlockParser, Config, Decoder, Dialect, Event, Span};

fn feed_collect(decoder: &mut Decoder, delta: &str) -> Vec<Event<'static>> {
    let mut out = Vec::new();
    decoder.feed(delta, |e| out.push(e.into_owned()));
    out
}

#[test]
fn block_comes_out_of_the_feed_with_the_end_markers_last_byte() {
    let input = "ok <|[REQUEST_TOOL]|>command:「始」Now「末」<|[END_TOOL]|> and more";
    let end = input.find("<|[END_TOOL]|>").unwrap() + "<|[END_TOOL]|>".len();
    let mut decoder = Decoder::default();
    let mut seen_block_at = None;
    for (i, c) in input[..end + 4].char_indices() {
        let events = feed_collect(&mut decoder, &input[i..i + c.len_utf8()]);
        if events.iter().any(|e| matches!(e, Event::Block(_))) {
            seen_block_at = Some(i + c.len_utf8());
        }
    }
    assert_eq!(seen_block_at, Some(end));
}

#[test]
fn only_a_possible_marker_prefix_is_held_back() {
    let mut decoder = Decoder::default();
    let events = feed_collect(&mut decoder, "hello <|[REQ");
    assert_eq!(common::text(&events), "hello ");
    assert_eq!(decoder.buffered(), "<|[REQ".len());
    let events = feed_collect(&mut decoder, "UIRE");
    assert_eq!(common::text(&events), "<|[REQUIRE");
    assert_eq!(decoder.buffered(), 0);
    // An end marker outside a block is prose and is not held back once decided.
    let events = feed_collect(&mut decoder, " <|[END_TOOL]|> x");
    assert_eq!(common::text(&events), " <|[END_TOOL]|> x");
}

#[test]
fn incomplete_utf8_is_held_back_across_byte_deltas() {
    let mut decoder = Decoder::default();
    let bytes = "a文".as_bytes();
    let mut events = Vec::new();
    decoder.feed_bytes(&bytes[..2], |e| events.push(e.into_owned()));
    assert_eq!(common::text(&events), "a");
    decoder.feed_bytes(&bytes[2..], |e| events.push(e.into_owned()));
    assert_eq!(common::text(&events), "a文");
}

#[test]
fn command_seen_precedes_the_block() {
    let mut decoder = Decoder::new(Config::default().with_param_events(false));
    let events = feed_collect(&mut decoder, "<|[REQUEST_TOOL]|>command1:「始」A「末」");
    // Argument streaming off: the call's announcement only.
    assert!(matches!(&events[1], Event::CommandSeen { call: 1, tool, .. } if &**tool == "A"));
    assert_eq!(events.len(), 2);
    // On by default.
    let mut decoder = Decoder::default();
    let events = feed_collect(&mut decoder, "<|[REQUEST_TOOL]|>command1:「始」A「末」");
    // BlockStart, then the entry streamed (ParamStart, ParamText, ParamEnd), then the call.
    assert!(matches!(&events[1], Event::ParamStart { key, .. } if key == "command1"));
    assert!(matches!(&events[2], Event::ParamText { text, .. } if text == "A"));
    assert!(matches!(&events[3], Event::ParamEnd { .. }));
    assert!(matches!(&events[4], Event::CommandSeen { call: 1, tool, .. } if &**tool == "A"));
    assert_eq!(events.len(), 5);
}

#[test]
fn call_lookup_is_by_canonical_key() {
    let events = tam_parse::decode(
        "<|[REQUEST_TOOL]|>command:「始」T「末」file_path:「始」/x「末」<|[END_TOOL]|>",
        Config::default(),
    );
    let block = common::blocks(&events)[0].clone();
    assert_eq!(block.calls[0].get("filePath"), Some("/x"));
    assert_eq!(block.calls[0].get("FILE-PATH"), Some("/x"));
    assert_eq!(block.calls[0].get("other"), None);
    assert!(!block.has_errors());
}

#[test]
fn finish_in_place_readies_the_decoder_for_a_new_stream() {
    let mut decoder = Decoder::default();
    let mut events = Vec::new();
    decoder.feed("<|[REQUEST_TOOL]|>command:「始」A「末」", |e| {
        events.push(e.into_owned())
    });
    decoder.finish_in_place(|e| events.push(e.into_owned()));
    assert!(
        matches!(events.last(), Some(Event::Diagnostic(d)) if d.code.as_str() == "unterminated_block")
    );
    assert_eq!(decoder.position(), 0);
    let again = feed_collect(&mut decoder, "fresh");
    assert_eq!(again[0].span(), Span::new(0, 5));
}

/// A handler that runs TAM blocks (kind 0) through a [`BlockParser`] and records the other
/// kind's blocks raw: the shape of a decoder for two protocols in one stream.
struct Mixed {
    tam: BlockParser,
    events: Vec<String>,
}

impl ScanHandler for Mixed {
    fn text(&mut self, text: &str, _span: Span) {
        match self.events.last_mut() {
            Some(last) if last.starts_with("text:") => last.push_str(text),
            _ => self.events.push(format!("text:{text}")),
        }
    }
    fn block_opened(&mut self, kind: usize, marker: Span) {
        if kind == 0 {
            self.tam.block_opened(marker, &mut |_| {});
        }
    }
    fn region_opened(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        marker: std::ops::Range<usize>,
    ) {
        if view.kind() == 0 {
            self.tam.region_opened(view, region, marker);
        }
    }
    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: std::ops::Range<usize>,
        marker: std::ops::Range<usize>,
    ) {
        if view.kind() == 0 {
            self.tam
                .region_closed(view, region, content, marker, &mut |_| {});
        } else {
            self.events.push(format!("cdata:{}", &view.buf()[content]));
        }
    }
    fn block_closed(&mut self, closed: ClosedBlock) {
        if closed.kind == 0 {
            let events = &mut self.events;
            self.tam.block_closed(closed, &mut |e| {
                if let Event::Block(b) = e {
                    events.push(format!("tam:{}", b.calls[0].tool));
                }
            });
        } else {
            assert_eq!(closed.end, BlockEnd::Marker);
            self.events
                .push(format!("action:{}", &closed.raw[closed.body.clone()]));
        }
    }
}

#[test]
fn one_scanner_two_protocols() {
    let grammar = Grammar::new(vec![
        Dialect::Tam.block_syntax(),
        BlockSyntax {
            start: Pattern::tag("ACTION"),
            end: Pattern::closing_tag("ACTION"),
            regions: vec![Region {
                open: Pattern::exact("<![CDATA["),
                close: Pattern::exact("]]>"),
                block_markers_inside: false,
            }],
            restart_on_start: false,
        },
    ])
    .unwrap();
    let input = "a <|[REQUEST_TOOL]|>command:「始」T「末」<|[END_TOOL]|> b < action ><X><![CDATA[</ACTION>]]></X></Action  > c";
    let run = |pieces: &[&str]| {
        let mut scanner = Scanner::new(grammar.clone(), 1 << 20);
        let mut h = Mixed {
            tam: BlockParser::new(Config::default()),
            events: Vec::new(),
        };
        for p in pieces {
            scanner.feed(p, &mut h);
        }
        scanner.finish(&mut h);
        h.events
    };
    let whole = run(&[input]);
    assert_eq!(
        whole,
        [
            "text:a ",
            "tam:T",
            "text: b ",
            "cdata:</ACTION>",
            "action:<X><![CDATA[</ACTION>]]></X>",
            "text: c"
        ]
    );
    let chars: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    assert_eq!(run(&chars), whole);
}

#[test]
fn grammar_rejects_bad_patterns() {
    let bad = |start: &str| {
        Grammar::new(vec![BlockSyntax {
            start: Pattern::exact(start),
            end: Pattern::exact("x"),
            regions: vec![],
            restart_on_start: false,
        }])
        .is_err()
    };
    assert!(bad(""));
    assert!(bad(&"y".repeat(65)));
    assert!(bad("\u{FFFD}"));
    assert!(Grammar::new(vec![]).is_err());
}

#[cfg(feature = "codec")]
#[tokio::test]
async fn codec_yields_each_block_before_the_input_ends() {
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;
    use tokio_util::codec::FramedRead;

    let (mut writer, reader) = tokio::io::duplex(4096);
    let mut frames = FramedRead::new(reader, tam_parse::codec::TamCodec::new(Config::default()));
    writer
        .write_all("x <|[REQUEST_TOOL]|>command:「始」Early「末」<|[END_TOOL]|>".as_bytes())
        .await
        .unwrap();
    // The writer is still open: the block must arrive anyway.
    let mut got_block = false;
    while let Some(event) = frames.next().await {
        if let Event::Block(b) = event.unwrap() {
            assert_eq!(&*b.calls[0].tool, "Early");
            got_block = true;
            break;
        }
    }
    assert!(got_block);
    writer.write_all(" \u{4e2d}".as_bytes()).await.unwrap();
    drop(writer);
    let rest: Vec<_> = frames.map(|e| e.unwrap()).collect().await;
    assert_eq!(common::text(&rest), " \u{4e2d}");
}

#[cfg(feature = "stream")]
#[tokio::test]
async fn stream_adapter_over_string_deltas() {
    use futures_util::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let deltas =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|d| (d, rx)) });
    let mut events = tam_parse::stream::EventStream::new(Box::pin(deltas), Config::default());
    tx.send("<|[REQUEST_TOOL]|>command:「始」S「末」".into())
        .unwrap();
    tx.send("<|[END_TOOL]|>".into()).unwrap();
    let mut tools = Vec::new();
    while let Some(e) = events.next().await {
        if let Event::Block(b) = e {
            tools.push(b.calls[0].tool.to_string());
            break;
        }
    }
    assert_eq!(tools, ["S"]);
    drop(tx);
    assert!(events.next().await.is_none());
}

#[test]
fn an_idle_decoder_is_small() {
    // The documented budget: an idle decoder is at most 256 bytes plus its buffer (which
    // is empty until prose is held back or a block opens).
    let size = std::mem::size_of::<Decoder>();
    assert!(size <= 256, "Decoder is {size} bytes");
    let decoder = Decoder::default();
    assert_eq!(decoder.buffered(), 0);
}

/// Records text (merged) and blocks, for the line-start test.
#[derive(Default)]
struct Lines {
    events: Vec<String>,
}

impl ScanHandler for Lines {
    fn text(&mut self, text: &str, _span: Span) {
        match self.events.last_mut() {
            Some(last) if last.starts_with("text:") => last.push_str(text),
            _ => self.events.push(format!("text:{text}")),
        }
    }
    fn block_closed(&mut self, closed: ClosedBlock) {
        self.events.push(format!("block:{}", &*closed.raw));
    }
}

/// A start marker made with `at_line_start` opens a block only where it begins a prose
/// line — after blanks, inside a fence too, whatever the deltas — and is prose mid-line or
/// on a `>` line.
#[test]
fn line_start_start_markers_follow_the_prose_line_across_deltas() {
    let grammar = Grammar::new(vec![BlockSyntax {
        start: Pattern::exact("<go>").at_line_start(),
        end: Pattern::exact("</go>"),
        regions: Vec::new(),
        restart_on_start: false,
    }])
    .unwrap();
    let input = "say <go>a</go>\n  <go>b</go> x\n> <go>c</go>\n```\n<go>d</go>\n```\n`<go>e</go>";
    let run = |pieces: &[&str]| {
        let mut scanner = Scanner::new(grammar.clone(), 1 << 20);
        let mut h = Lines::default();
        for p in pieces {
            scanner.feed(p, &mut h);
        }
        scanner.finish(&mut h);
        h.events
    };
    let whole = run(&[input]);
    assert_eq!(
        whole,
        [
            "text:say <go>a</go>\n  ",
            "block:<go>b</go>",
            "text: x\n> <go>c</go>\n```\n",
            "block:<go>d</go>",
            "text:\n```\n`<go>e</go>",
        ]
    );
    for i in 1..input.len() {
        assert_eq!(run(&[&input[..i], &input[i..]]), whole, "split at {i}");
    }
    let bytes: Vec<&str> = (0..input.len()).map(|i| &input[i..i + 1]).collect();
    assert_eq!(run(&bytes), whole);
}
