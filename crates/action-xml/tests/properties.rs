//! Property tests: any split gives the events of the whole input and spans tile it,
//! arbitrary bytes never panic, and rendered calls parse back to themselves.

mod common;

use action_xml::{Config, Event, codes, parse, render_action};
use common::{Action, action_config};
use proptest::prelude::*;
use serde_json::{Map, Value};
use tam_testkit::Harness;
use tam_testkit::strategies::{PIECES, action_like, call, small_limits};

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any split of any input gives the events of the whole input, and spans tile it,
    /// argument-streaming events included, with small limits (a block that overflows
    /// streams what lies within the limit, the same every way).
    #[test]
    fn any_split_gives_the_same_events(input in action_like(), limits in small_limits()) {
        tam_testkit::decode_all_ways(Action(action_config(limits)), input.as_bytes());
    }

    /// Any split gives the same events, argument-streaming events included (adjacent
    /// pieces merged), with limits no generated block reaches.
    #[test]
    fn any_split_gives_the_same_streamed_events(input in action_like()) {
        tam_testkit::decode_all_ways(Action(Config::default()), input.as_bytes());
    }

    /// Rendered blocks in prose, past a small `max_block_bytes`: the streamed prefix and
    /// everything else are the same whatever the split.
    #[test]
    fn overflowing_blocks_stream_the_same_events(
        calls in prop::collection::vec(call(), 1..3),
        limit in 16usize..300,
    ) {
        let block = render_action(calls.iter().map(|(t, a)| (t.as_str(), a))).unwrap();
        let text = format!("Thinking…\n{block}\nDone.");
        let mut config = Config::default();
        config.max_block_bytes = limit;
        tam_testkit::decode_all_ways(Action(config), text.as_bytes());
    }

    /// A block read as prose (`marker_in_prose`) because its body does not begin with an
    /// element streamed nothing. (One whose body begins with an element but, read by the
    /// pre-scan, holds no call element — `<ACTION><t a>` — may have streamed a light
    /// reading of its tags: the streamer cannot know the tags will be refused.)
    #[test]
    fn a_prose_mention_never_streamed(input in action_like()) {
        let events = Action(Config::default()).run_str([input.as_str()]);
        let mut streamed_in_block = 0;
        let mut mention = false;
        for e in &events {
            match e {
                // A quoted start tag (inline code, a `>` line) is a mention with no block
                // of its own: what streamed before it belongs to the block that closed.
                Event::BlockStart { .. } | Event::Block(_) => streamed_in_block = 0,
                Event::Diagnostic(d) if d.code == codes::MARKER_IN_PROSE => mention = true,
                Event::Text { text, .. } if mention => {
                    mention = false;
                    let body = text[text.find('>').map_or(text.len(), |i| i + 1)..]
                        .trim_start_matches([' ', '\t', '\n', '\r']);
                    let b = body.as_bytes();
                    let element_first = b.first() == Some(&b'<')
                        && b.get(1).is_some_and(|&c| c >= 0x80 || c == b'_' || c.is_ascii_alphabetic());
                    let fence_first = b.first().is_some_and(|&c| c == b'`' || c == b'~');
                    if !element_first && !fence_first {
                        prop_assert_eq!(streamed_in_block, 0, "{:#?}", events);
                    }
                }
                e if common::is_streamed(e) => streamed_in_block += 1,
                _ => {}
            }
        }
    }

    /// Arbitrary bytes never panic, and splitting still does not matter.
    #[test]
    fn arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..200)) {
        tam_testkit::decode_all_ways(Action(Config::default()), &input);
    }

    /// Arbitrary bytes mixed with markup (more likely to reach deep states).
    #[test]
    fn markup_heavy_bytes(parts in prop::collection::vec(
        prop_oneof![
            prop::sample::select(PIECES).prop_map(|s| s.as_bytes().to_vec()),
            prop::collection::vec(any::<u8>(), 1..4),
        ], 0..30)) {
        let input = parts.concat();
        tam_testkit::decode_all_ways(Action(Config::default()), &input);
    }

    /// Rendered calls parse back to the same tools and values.
    #[test]
    fn render_then_parse_round_trips(calls in prop::collection::vec(call(), 1..4)) {
        let text = render_action(calls.iter().map(|(t, a)| (t.as_str(), a))).unwrap();
        let out = parse(&text);
        prop_assert!(
            out.diagnostics.iter().all(|d| d.code.as_str() == "undeclared_prefix"),
            "{}\n{:?}", text, out.diagnostics
        );
        let got: Vec<(String, Map<String, Value>)> =
            out.calls.into_iter().map(|c| (c.tool, c.args)).collect();
        prop_assert_eq!(got, calls, "{}", text);
    }

    /// A rendered block embedded in prose and fed in pieces gives the same calls.
    #[test]
    fn rendered_block_in_a_stream(call in call(), cut in any::<prop::sample::Index>()) {
        let block = render_action([(call.0.as_str(), &call.1)]).unwrap();
        let text = format!("Thinking…\n{block}\nDone.");
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let events = tam_testkit::normalize::<Action>(
            <Action as tam_testkit::Harness>::run_str(Action(Config::default()), [&text[..at], &text[at..]]),
        );
        let blocks = common::blocks(&events);
        prop_assert_eq!(blocks.len(), 1);
        prop_assert_eq!(&blocks[0].calls[0].args, &call.1);
        prop_assert_eq!(common::text(&events), "Thinking…\n\n\nDone.");
    }
}
