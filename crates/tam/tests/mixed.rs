//! The decoder of both protocols in one stream ([`tam::ProtocolChoice::Auto`]): each
//! protocol decoded exactly as its own decoder would.

mod common;

use common::{Action, Front, Tam};
use proptest::prelude::*;
use tam::{Config, Event};
use tam_testkit::Harness;

/// The mixed events an ACTION-only decoder's events stand for.
fn from_action(events: Vec<action_xml::Event<'static>>) -> Vec<Event<'static>> {
    events.into_iter().map(Event::from).collect()
}

/// The mixed events a TAM-only decoder's events stand for.
fn tam_events(input: &[u8], config: tam_parse::Config) -> Vec<Event<'static>> {
    Tam(config)
        .run_bytes([input])
        .into_iter()
        .map(Event::from)
        .collect()
}

#[test]
fn both_protocols_in_stream_order() {
    let input = "a <|[REQUEST_TOOL]|>command:「始」T「末」<|[END_TOOL]|> b <ACTION><X/></ACTION> c";
    let events = tam_testkit::decode_all_ways(Front(Config::default()), input.as_bytes());
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::Text { .. } => "text",
            Event::BlockStart { protocol, .. } => protocol.as_str(),
            Event::CommandSeen { .. } => "command",
            Event::TamBlock(_) => "tam_block",
            Event::ActionBlock(_) => "action_block",
            Event::CallStart { .. } => "call_start",
            Event::CallEnd { .. } => "call_end",
            Event::ParamStart { .. } => "param_start",
            Event::ParamText { .. } => "param_text",
            Event::ParamEnd { .. } => "param_end",
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
    let mut config = Config::default();
    config.tam = tam_parse::Config::with_dialect(tam_parse::Dialect::Vcp);
    let input =
        "<<<[TOOL_REQUEST]>>>tool_name:「始」V「末」<<<[END_TOOL_REQUEST]>>><ACTION><A/></ACTION>";
    let events = tam_testkit::decode_all_ways(Front(config), input.as_bytes());
    let tools: Vec<String> = events
        .iter()
        .flat_map(|e| match e {
            Event::TamBlock(b) => b.calls.iter().map(|c| c.tool.to_string()).collect(),
            Event::ActionBlock(b) => b.calls.iter().map(|c| c.tool.clone()).collect(),
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
        let action = from_action(Action(action_xml::Config::default()).run_str([input.as_str()]));
        let mixed = Front(Config::default()).run_str([input.as_str()]);
        prop_assert_eq!(
            tam_testkit::normalize::<Front>(mixed),
            tam_testkit::normalize::<Front>(action)
        );
    }

    /// Without ACTION tags the mixed decoder reports what the TAM decoder does (argument
    /// events included: the mixed decoder streams them by default).
    #[test]
    fn tam_only_streams_match_the_tam_decoder(input in from(TAM_PIECES)) {
        let tam = tam_events(input.as_bytes(), tam_parse::Config::default().with_param_events(true));
        let mixed = Front(Config::default()).run_bytes([input.as_bytes()]);
        prop_assert_eq!(
            tam_testkit::normalize::<Front>(mixed),
            tam_testkit::normalize::<Front>(tam)
        );
    }
}
