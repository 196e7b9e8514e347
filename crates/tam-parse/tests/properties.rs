//! Property tests: split invariance, span tiling, render → decode round trips, and no
//! panic on arbitrary bytes.

mod common;

use proptest::prelude::*;
use tam_parse::{Config, Dialect, Event, render_block, render_call};

/// Pieces that exercise every state of the scanner and the entry grammar.
const PIECES: &[&str] = &[
    "<|[REQUEST_TOOL]|>",
    "<|[END_TOOL]|>",
    "<|[",
    "<|[REQ",
    "_TOOL]|>",
    "command:",
    "command1:",
    "command2：",
    "path1:",
    "path:",
    "x_2:",
    "「始」",
    "「末」",
    "「始ESCAPE」",
    "「末ESCAPE」",
    "「始",
    "末」",
    "#",
    "# c\n",
    "\n",
    " ",
    "\t",
    "value",
    "文字",
    "🙂",
    "<",
    ":",
    "<<<[TOOL_REQUEST]>>>",
    "<<<[END_TOOL_REQUEST]>>>",
    "tool_name:",
];

fn tam_like() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
}

fn small_config() -> impl Strategy<Value = Config> {
    (prop::bool::ANY, 16usize..400, 1usize..4, 1usize..12).prop_map(|(vcp, block, calls, key)| {
        let mut c = Config::with_dialect(if vcp { Dialect::Vcp } else { Dialect::Tam });
        c.max_block_bytes = block;
        c.max_calls = calls;
        c.max_key_len = key;
        c.with_param_events(true)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any split of any input gives the events of the whole input, and spans tile it.
    #[test]
    fn any_split_gives_the_same_events(input in tam_like(), config in small_config()) {
        // decode_all_ways asserts invariance and tiling for every way of feeding.
        common::decode_str(&input, config);
    }

    /// Arbitrary bytes never panic, and splitting still does not matter.
    #[test]
    fn arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..200)) {
        common::decode_all_ways(&input, Config::default());
    }

    /// Arbitrary bytes mixed with markers (more likely to reach deep states).
    #[test]
    fn marker_heavy_bytes(parts in prop::collection::vec(
        prop_oneof![
            prop::sample::select(PIECES).prop_map(|s| s.as_bytes().to_vec()),
            prop::collection::vec(any::<u8>(), 1..4),
        ], 0..30)) {
        let input = parts.concat();
        common::decode_all_ways(&input, Config::default().with_param_events(true));
    }
}

fn key() -> impl Strategy<Value = String> {
    // Keys: no whitespace, ':', '：', '「', not starting with '#', not ending in a digit
    // (so they are also valid in chains), never the command key.
    "[a-zA-Z_\u{4e00}-\u{4e20}][a-zA-Z0-9_\u{4e00}-\u{4e20}-]{0,8}[a-zA-Z\u{4e00}-\u{4e20}]"
        .prop_filter("command keys are reserved", |k| {
            !tam_parse::canonical_key(k).is_empty()
                && !tam_parse::canonical_key(k).starts_with("command")
                && tam_parse::canonical_key(k) != "toolname"
        })
}

fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec![
                "「末」",
                "「始」",
                "<|[END_TOOL]|>",
                "<|[REQUEST_TOOL]|>",
                "\n",
                "  ",
                "#",
                "文字",
                "🙂",
                "「末ESCAP",
                "末」",
            ])
            .prop_map(str::to_owned),
            "[ -~]{0,6}",
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
    .prop_filter("unrepresentable", |v| {
        !(v.contains("「末」") && v.contains("「末ESCAPE」"))
    })
}

fn tool() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_.:]{0,12}"
}

fn call() -> impl Strategy<Value = (String, Vec<(String, String)>)> {
    (
        tool(),
        prop::collection::vec((key(), value()), 0..5).prop_map(|mut kv| {
            let mut seen = std::collections::HashSet::new();
            kv.retain(|(k, _)| seen.insert(tam_parse::canonical_key(k)));
            kv
        }),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// render → decode gives back the tool ids, keys and values.
    #[test]
    fn render_then_decode_round_trips(calls in prop::collection::vec(call(), 1..4), vcp in any::<bool>()) {
        let dialect = if vcp { Dialect::Vcp } else { Dialect::Tam };
        let text = render_block(
            calls.iter().map(|(t, ps)| (t.as_str(), ps.iter().map(|(k, v)| (k.as_str(), v.as_str())))),
            dialect,
        ).unwrap();
        let events = common::decode_str(&text, Config::with_dialect(dialect));
        let decoded: Vec<(String, Vec<(String, String)>)> = events.iter().filter_map(|e| match e {
            Event::Block(b) => Some(b.calls.iter().map(|c| (
                c.tool.to_string(),
                c.params.iter().map(|p| (p.key.to_string(), p.value.to_string())).collect(),
            )).collect::<Vec<_>>()),
            _ => None,
        }).flatten().collect();
        prop_assert_eq!(decoded, calls);
    }

    /// A single call renders unsuffixed and round-trips, keys ending in digits included.
    #[test]
    fn render_call_round_trips(tool in tool(), params in prop::collection::vec(("[a-z][a-z0-9]{0,6}", value()), 0..4)) {
        let mut seen = std::collections::HashSet::new();
        let params: Vec<(String, String)> = params.into_iter()
            .filter(|(k, _)| !k.starts_with("command") && seen.insert(k.clone()))
            .collect();
        let text = render_call(&tool, params.iter().map(|(k, v)| (k.as_str(), v.as_str())), Dialect::Tam).unwrap();
        let events = common::decode_str(&text, Config::default());
        let blocks = common::blocks(&events);
        prop_assert_eq!(blocks.len(), 1);
        let c = &blocks[0].calls[0];
        prop_assert_eq!(&*c.tool, tool.as_str());
        let got: Vec<(String, String)> = c.params.iter().map(|p| (p.key.to_string(), p.value.to_string())).collect();
        prop_assert_eq!(got, params);
    }
}

/// Feeds `input` cut at `cuts` (moved back to character boundaries) and checks the
/// argument-streaming events against the blocks: each `ParamText` is borrowed, pieces of
/// one entry are adjacent, and for every parameter and command of every closed block the
/// concatenated pieces of its entry (matched by span) are its value exactly.
fn check_param_pieces(input: &str, cuts: &[usize], config: Config) -> usize {
    use std::borrow::Cow;
    use tam_parse::{Block, Decoder, Span};

    let mut decoder = Decoder::new(config.with_param_events(true));
    let mut entries: Vec<(Span, String)> = Vec::new();
    let mut open: Option<(String, Option<usize>)> = None;
    let mut blocks: Vec<Block> = Vec::new();
    let mut on_event = |e: Event<'_>| match e {
        Event::ParamStart { .. } => open = Some((String::new(), None)),
        Event::ParamText { text, span } => {
            assert!(matches!(text, Cow::Borrowed(_)), "a piece was allocated");
            assert_eq!(text.len(), span.len());
            let (value, end) = open.as_mut().expect("a piece outside a value");
            if let Some(end) = end {
                assert_eq!(*end, span.start, "pieces are not adjacent");
            }
            *end = Some(span.end);
            value.push_str(&text);
        }
        Event::ParamEnd { span } => {
            let (value, _) = open.take().expect("ParamEnd without ParamStart");
            entries.push((span, value));
        }
        Event::Block(b) => blocks.push(b),
        _ => {}
    };
    for piece in tam_testkit::str_pieces(input, cuts) {
        decoder.feed(piece, &mut on_event);
    }
    decoder.finish(&mut on_event);
    let streamed = |span: Span| {
        entries
            .iter()
            .find(|(s, _)| *s == span)
            .map(|(_, v)| v.as_str())
    };
    let mut checked = 0;
    for b in &blocks {
        for c in &b.calls {
            let command = streamed(c.span).expect("the command entry was not streamed");
            assert_eq!(command.trim(), &*c.tool);
            for p in &c.params {
                assert_eq!(streamed(p.span), Some(&*p.value), "param {:?}", p.key);
                checked += 1;
            }
        }
    }
    checked
}

fn prose() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "Let me check. ",
            "write <|[REQUEST_TOOL]|> then the entries. ",
            "if a < b && c > d { x } ",
            "<div class=\"x\">&amp;</div>\n",
            "文字🙂 ",
            "unit:「celsius」 ",
            "\n",
        ]),
        0..4,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// For every split, the concatenated pieces of each parameter equal its final value
    /// (plain and ESCAPE values, values holding markers, bare brackets, replies cut off).
    #[test]
    fn streamed_pieces_are_the_final_values(
        calls in prop::collection::vec(call(), 1..3),
        before in prose(),
        after in prose(),
        bare in prop::option::of(("[a-z]{1,6}", "[ -~&&[^」]]{0,10}")),
        noise in tam_like(),
        seed in any::<u64>(),
        vcp in any::<bool>(),
        drop_last_close in any::<bool>(),
    ) {
        let dialect = if vcp { Dialect::Vcp } else { Dialect::Tam };
        let mut block = render_block(
            calls.iter().map(|(t, ps)| (t.as_str(), ps.iter().map(|(k, v)| (k.as_str(), v.as_str())))),
            dialect,
        ).unwrap();
        if let Some((k, v)) = &bare {
            // A bare-bracket entry just before the end marker.
            let end = dialect.end_marker();
            let at = block.rfind(end).unwrap();
            block.insert_str(at, &format!("\nbare{k}:「{v}」\n"));
        }
        if drop_last_close {
            // The model forgot the last value's close marker: at the end of the stream the
            // value is recovered (docs/protocol/tam.md §6.1), and what was streamed must
            // still match.
            let plain = block.rfind(tam_parse::VALUE_CLOSE);
            let escape = block.rfind(tam_parse::ESCAPE_CLOSE);
            match (plain, escape) {
                (Some(p), e) if e.is_none_or(|e| p > e) => {
                    block.replace_range(p..p + tam_parse::VALUE_CLOSE.len(), "");
                }
                (_, Some(e)) => block.replace_range(e..e + tam_parse::ESCAPE_CLOSE.len(), ""),
                _ => {}
            }
        }
        let input = format!("{before}{block}{after}{noise}");
        let config = Config::with_dialect(dialect);
        let checked = check_param_pieces(&input, &tam_testkit::random_cuts(input.len(), seed), config);
        let whole = check_param_pieces(&input, &[0, input.len()], config);
        prop_assert_eq!(checked, whole);
        let bytes: Vec<usize> = (0..=input.len()).collect();
        prop_assert_eq!(check_param_pieces(&input, &bytes, config), whole);
    }

    /// The same on marker-heavy noise with tiny limits: whatever closes, its pieces match.
    #[test]
    fn streamed_pieces_match_on_noise(input in tam_like(), config in small_config(), seed in any::<u64>()) {
        let whole = check_param_pieces(&input, &[0, input.len()], config);
        let split = check_param_pieces(&input, &tam_testkit::random_cuts(input.len(), seed), config);
        prop_assert_eq!(split, whole);
    }
}
