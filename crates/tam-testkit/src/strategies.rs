//! Proptest strategies for ACTION streams, calls and limits (feature `proptest`): the inputs the
//! ACTION decoder's and the front door's property tests feed every way.

use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::SmallLimits;

/// Pieces that reach every state of the scanner, the pre-scan and the repairs.
pub const PIECES: &[&str] = &[
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

/// Streams of [`PIECES`]: ACTION-like text with every kind of markup.
pub fn action_like() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
}

/// Small ACTION limits (block bytes, depth, nodes), for `action_config`
/// ([`action_harness!`](crate::action_harness)).
pub fn small_limits() -> impl Strategy<Value = SmallLimits> {
    (16usize..400, 1usize..6, 4u32..100).prop_map(|(block_bytes, depth, nodes)| SmallLimits {
        block_bytes,
        depth,
        nodes,
    })
}

/// Element and key names, prefixed and not, ASCII and not.
pub fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a", "key_1", "x-y.z", "名前", "p:k", "q:v", "Path", "_u",
    ])
    .prop_map(str::to_owned)
}

/// String values full of what XML must escape or quote.
pub fn string_value() -> impl Strategy<Value = String> {
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
pub fn value() -> impl Strategy<Value = Value> {
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

/// A tool name and its arguments ([`value`]s).
pub fn call() -> impl Strategy<Value = (String, Map<String, Value>)> {
    let tool = prop::sample::select(vec!["tool", "workflow:summarize_text", "读取", "a.b-c"]);
    (
        tool.prop_map(str::to_owned),
        prop::collection::vec((name(), value()), 0..4)
            .prop_map(|kv| kv.into_iter().collect::<Map<String, Value>>()),
    )
}
