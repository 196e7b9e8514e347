//! The mixed decoder: both protocols in one stream, each decoded exactly as its own
//! decoder would.

mod common;

use action_xml::{Config, MixedConfig, MixedEvent};
use proptest::prelude::*;
use tam_testkit::{Action, Harness, Mixed, Tam};

/// The mixed events an ACTION-only decoder's events stand for.
fn from_action(events: Vec<action_xml::Event<'static>>) -> Vec<MixedEvent<'static>> {
    events.into_iter().map(MixedEvent::from).collect()
}

/// The mixed events a TAM-only decoder's events stand for.
fn tam_events(input: &[u8], config: tam_parse::Config) -> Vec<MixedEvent<'static>> {
    Tam(config)
        .run_bytes([input])
        .into_iter()
        .map(MixedEvent::from)
        .collect()
}

#[test]
fn both_protocols_in_stream_order() {
    let input = "a <|[REQUEST_TOOL]|>command:「始」T「末」<|[END_TOOL]|> b <ACTION><X/></ACTION> c";
    let events = tam_testkit::decode_all_ways(Mixed(MixedConfig::default()), input.as_bytes());
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            MixedEvent::Text { .. } => "text",
            MixedEvent::BlockStart { protocol, .. } => protocol.as_str(),
            MixedEvent::CommandSeen { .. } => "command",
            MixedEvent::TamBlock(_) => "tam_block",
            MixedEvent::ActionBlock(_) => "action_block",
            MixedEvent::CallStart { .. } => "call_start",
            MixedEvent::CallEnd { .. } => "call_end",
            MixedEvent::ParamStart { .. } => "param_start",
            MixedEvent::ParamText { .. } => "param_text",
            MixedEvent::ParamEnd { .. } => "param_end",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "tam",
            "param_start",
            "param_text",
            "param_end",
            "command",
            "tam_block",
            "text",
            "action",
            "call_start",
            "call_end",
            "action_block",
            "text"
        ]
    );
}

#[test]
fn vcp_dialect_and_action() {
    let mut config = MixedConfig::default();
    config.tam = tam_parse::Config::with_dialect(tam_parse::Dialect::Vcp);
    let input =
        "<<<[TOOL_REQUEST]>>>tool_name:「始」V「末」<<<[END_TOOL_REQUEST]>>><ACTION><A/></ACTION>";
    let events = tam_testkit::decode_all_ways(Mixed(config), input.as_bytes());
    let tools: Vec<String> = events
        .iter()
        .flat_map(|e| match e {
            MixedEvent::TamBlock(b) => b.calls.iter().map(|c| c.tool.to_string()).collect(),
            MixedEvent::ActionBlock(b) => b.calls.iter().map(|c| c.tool.clone()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(tools, ["V", "A"]);
}

const ACTION_PIECES: &[&str] = &[
    "<ACTION>",
    "</ACTION>",
    "<action >",
    "<ACT",
    "ION>",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<t>",
    "</t>",
    "<a>",
    "</a>",
    "x",
    "中",
    "&",
    "<",
    "\n",
    " ",
    "```\n",
    "「始」",
    "command:",
];

const TAM_PIECES: &[&str] = &[
    "<|[REQUEST_TOOL]|>",
    "<|[END_TOOL]|>",
    "<|[",
    "command:",
    "command1:",
    "path:",
    "「始」",
    "「末」",
    "「始ESCAPE」",
    "「末ESCAPE」",
    "#",
    "\n",
    " ",
    "v",
    "文",
    "<",
    "<t>",
    "]]>",
];

fn from(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..30).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Without TAM markers the mixed decoder reports what the ACTION decoder does.
    #[test]
    fn action_only_streams_match_the_action_decoder(input in from(ACTION_PIECES)) {
        let action = from_action(Action(Config::default()).run_str([input.as_str()]));
        let mixed = Mixed(MixedConfig::default()).run_str([input.as_str()]);
        prop_assert_eq!(
            tam_testkit::normalize::<Mixed>(mixed),
            tam_testkit::normalize::<Mixed>(action)
        );
    }

    /// Without ACTION tags the mixed decoder reports what the TAM decoder does (argument
    /// events included: the mixed decoder streams them by default).
    #[test]
    fn tam_only_streams_match_the_tam_decoder(input in from(TAM_PIECES)) {
        let tam = tam_events(input.as_bytes(), tam_parse::Config::default().with_param_events(true));
        let mixed = Mixed(MixedConfig::default()).run_bytes([input.as_bytes()]);
        prop_assert_eq!(
            tam_testkit::normalize::<Mixed>(mixed),
            tam_testkit::normalize::<Mixed>(tam)
        );
    }
}
