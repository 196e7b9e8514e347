//! The decoder of both protocols in one stream streams both protocols' arguments through
//! `Event`. For every split, the pieces of each parameter joined are its final value:
//! exactly for TAM (matched by the entry's span), trimmed of XML whitespace for ACTION
//! string values.

mod common;

use std::collections::HashMap;

use common::Front;
use proptest::prelude::*;
use tam::{Config, Decoder, Event, Protocol};
use tam_parse::Span;
use tam_testkit::{Harness, random_cuts, str_pieces};

/// Checks the streamed pieces of `events` (merged by the harness) against the blocks.
fn check_values(events: &[Event<'static>], input: &str) {
    let mut open: Option<(Protocol, String, String)> = None;
    let mut tam: HashMap<Span, String> = HashMap::new();
    let mut action: Vec<(String, String)> = Vec::new();
    let (mut tam_params, mut action_params) = (0, 0);
    for e in events {
        match e {
            Event::ParamStart { protocol, key, .. } => {
                assert!(open.is_none(), "nested ParamStart in {input:?}");
                open = Some((*protocol, key.to_string(), String::new()));
            }
            Event::ParamText { protocol, text, .. } => {
                let (p, _, value) = open.as_mut().expect("ParamText outside a parameter");
                assert_eq!(p, protocol);
                value.push_str(text);
            }
            Event::ParamEnd { protocol, span } => {
                let (p, key, value) = open.take().expect("ParamEnd without ParamStart");
                assert_eq!(p, *protocol);
                match p {
                    Protocol::Tam => {
                        tam.insert(*span, value);
                    }
                    Protocol::Action => action.push((key, value)),
                }
            }
            Event::TamBlock(b) => {
                for call in &b.calls {
                    for param in &call.params {
                        tam_params += 1;
                        assert_eq!(
                            tam.get(&param.span).map(String::as_str),
                            Some(&*param.value),
                            "TAM value of {} in {input:?}",
                            param.key
                        );
                    }
                }
            }
            Event::ActionBlock(b) => {
                for call in &b.calls {
                    for (key, value) in &call.args {
                        if let Some(s) = value.as_str() {
                            action_params += 1;
                            let streamed = action
                                .iter()
                                .find(|(k, _)| k == key)
                                .unwrap_or_else(|| panic!("{key} did not stream in {input:?}"));
                            assert_eq!(
                                streamed.1.trim_matches([' ', '\t', '\n', '\r']),
                                s,
                                "{input:?}"
                            );
                        }
                    }
                }
                action.clear();
            }
            _ => {}
        }
    }
    assert_eq!(tam_params, 2, "{input:?}");
    assert_eq!(action_params, 2, "{input:?}");
}

fn check(input: &str) {
    let harness = Front(Config::default());
    let whole = harness.run_str([input]);
    check_values(&whole, input);
    for seed in 1..=6 {
        let cuts = random_cuts(input.len(), seed);
        let split = harness.run_str(str_pieces(input, &cuts));
        assert_eq!(split, whole, "seed {seed}: {input:?}");
    }
    let chars: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    assert_eq!(harness.run_str(chars), whole, "{input:?}");
}

/// Values that models write: code with `<`, `&`, generics, markup, CJK, brackets.
fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "fn main() {",
            " x ",
            "a < b",
            "&&",
            "Vec<String>",
            "<b>bold</b>",
            "\n",
            "中文",
            "if a<b {}",
            "「",
            "]]",
        ]),
        1..8,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Pieces joined are the final values of both protocols, however the input is split.
    #[test]
    fn pieces_join_to_the_final_values_in_both_protocols(a in value(), b in value()) {
        let xml = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;");
        let input = format!(
            "Both.\n<|[REQUEST_TOOL]|>\ncommand:「始」Write「末」\npath:「始」{a}「末」\ncontent:「始」{b}「末」\n<|[END_TOOL]|>\nthen\n<ACTION>\n<write>\n<path>{}</path>\n<content>{}</content>\n</write>\n</ACTION>\n",
            xml(&a),
            xml(&b),
        );
        check(&input);
    }
}

#[test]
fn tam_arguments_stream_before_the_block_closes() {
    let mut decoder = Decoder::new(Config::default());
    let mut seen = Vec::new();
    decoder.feed(
        "<|[REQUEST_TOOL]|>command:「始」Write「末」content:「始」fn x() { a && b",
        |e| seen.push(e.into_owned()),
    );
    let pieces: String = seen
        .iter()
        .filter_map(|e| match e {
            Event::ParamText {
                protocol: Protocol::Tam,
                text,
                ..
            } => Some(text.as_ref()),
            _ => None,
        })
        .collect();
    // Only a possible close-marker prefix may be held back.
    assert!(pieces.ends_with("fn x() { a && b"), "{pieces}");
    assert!(seen.iter().any(|e| matches!(e, Event::CommandSeen { .. })));
    assert!(!seen.iter().any(|e| matches!(e, Event::TamBlock(_))));
}

#[test]
fn param_events_off_emits_none_for_either_protocol() {
    let input = "<|[REQUEST_TOOL]|>command:「始」A「末」x:「始」1「末」<|[END_TOOL]|><ACTION><B><y>2</y></B></ACTION>";
    let off = Front(Config::default().with_param_events(false)).run_str([input]);
    assert!(!off.iter().any(Event::is_argument_event), "{off:?}");
    let on = Front(Config::default()).run_str([input]);
    let kinds: Vec<&str> = on
        .iter()
        .filter_map(|e| match e {
            Event::CallStart { .. } => Some("call_start"),
            Event::ParamStart { protocol, .. } => Some(protocol.as_str()),
            Event::ParamEnd { .. } => Some("param_end"),
            Event::CallEnd { .. } => Some("call_end"),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "tam",
            "param_end",
            "tam",
            "param_end",
            "call_start",
            "action",
            "param_end",
            "call_end"
        ]
    );
    // Everything else is the same with streaming on or off.
    let rest: Vec<_> = on.into_iter().filter(|e| !e.is_argument_event()).collect();
    assert_eq!(rest, off);
}
