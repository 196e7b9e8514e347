//! Property tests of the decoder of both protocols: any split gives the events of the
//! whole input and spans tile it, and arbitrary bytes never panic.

use action_xml::{Config, render_action};
use proptest::prelude::*;
use serde_json::{Map, Value};
use tam_testkit::Front;

/// Pieces that reach every state of the scanner, the pre-scan and the repairs.
const PIECES: &[&str] = &[
    "<ACTION>",
    "</ACTION>",
    "<action >",
    "< ACTION\t>",
    "<ACT",
    "ION>",
    "</ACT",
    "<![CDATA[",
    "]]>",
    "]]",
    "<!--",
    "-->",
    "<t>",
    "</t>",
    "<a>",
    "</a>",
    "<A>",
    "<item>",
    "</item>",
    "<p:x>",
    "</p:x>",
    "<e/>",
    "<a b='1'>",
    " x=\"&\"",
    "x",
    "中",
    "🙂",
    "&",
    "&amp;",
    "&#x41;",
    "&lol;",
    "<",
    ">",
    "</",
    "\n",
    "\r\n",
    " ",
    "\t",
    "```",
    "```xml\n",
    "<!DOCTYPE x>",
    "<?pi x?>",
    "<?",
    "<|[REQUEST_TOOL]|>",
    "<|[END_TOOL]|>",
    "command:",
    "「始」",
    "「末」",
];

fn action_like() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
}

fn small_config() -> impl Strategy<Value = Config> {
    (16usize..400, 1usize..6, 4u32..100).prop_map(|(block, depth, nodes)| {
        let mut c = Config::default();
        c.max_block_bytes = block;
        c.max_depth = depth;
        c.max_nodes = nodes;
        c
    })
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a", "key_1", "x-y.z", "名前", "p:k", "q:v", "Path", "_u",
    ])
    .prop_map(str::to_owned)
}

fn string_value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "<",
            "&",
            "]]>",
            "]]",
            "]",
            ">",
            "\n",
            "\r\n",
            "\r",
            " ",
            "\t",
            "中文",
            "🙂",
            "<![CDATA[",
            "<!--",
            "-->",
            "&amp;",
            "x y",
            "</ACTION>",
            "<ACTION>",
            "<b>",
            "\"'",
        ]),
        0..8,
    )
    .prop_map(|v| v.concat())
}

/// JSON values the renderer carries exactly: strings, non-empty arrays, non-empty objects.
fn value() -> impl Strategy<Value = Value> {
    string_value()
        .prop_map(Value::String)
        .prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 1..4).prop_map(Value::Array),
                prop::collection::vec((name(), inner), 1..4).prop_map(|kv| {
                    Value::Object(kv.into_iter().collect::<Map<String, Value>>())
                }),
            ]
        })
}

fn call() -> impl Strategy<Value = (String, Map<String, Value>)> {
    let tool = prop::sample::select(vec!["tool", "workflow:summarize_text", "读取", "a.b-c"]);
    (
        tool.prop_map(str::to_owned),
        prop::collection::vec((name(), value()), 0..4)
            .prop_map(|kv| kv.into_iter().collect::<Map<String, Value>>()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any split of any input gives the events of the whole input, and spans tile it,
    /// argument-streaming events included, with small ACTION limits.
    #[test]
    fn any_split_gives_the_same_mixed_events(input in action_like(), config in small_config()) {
        let mut mixed = tam::Config::default();
        mixed.action = config;
        tam_testkit::decode_all_ways(Front(mixed), input.as_bytes());
    }

    /// Any split gives the same events, argument-streaming events included (adjacent
    /// pieces merged), with limits no generated block reaches.
    #[test]
    fn any_split_gives_the_same_streamed_events(input in action_like()) {
        tam_testkit::decode_all_ways(Front(tam::Config::default()), input.as_bytes());
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
        let mut mixed = tam::Config::default();
        mixed.action = config;
        tam_testkit::decode_all_ways(Front(mixed), text.as_bytes());
    }

    /// Arbitrary bytes never panic, and splitting still does not matter.
    #[test]
    fn arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..200)) {
        tam_testkit::decode_all_ways(Front(tam::Config::default()), &input);
    }
}
