//! The front door: `tam::Decoder` for TAM only, ACTION only or both, one event type.

mod common;

use common::{Action, Front, Tam};
use tam::{Config, Event, ProtocolChoice};
use tam_testkit::{Harness, decode_all_ways};

const BOTH: &str = "a <|[REQUEST_TOOL]|>command:「始」T「末」x:「始」1 < 2「末」<|[END_TOOL]|> b <ACTION><X><y>if a &lt; b</y></X></ACTION> c";

fn blocks(events: &[Event<'static>]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TamBlock(_) => Some("tam"),
            Event::ActionBlock(_) => Some("action"),
            _ => None,
        })
        .collect()
}

#[test]
fn each_choice_reads_its_protocols_only() {
    for (choice, expected) in [
        (ProtocolChoice::Tam, &["tam"][..]),
        (ProtocolChoice::Action, &["action"][..]),
        (ProtocolChoice::Auto, &["tam", "action"][..]),
    ] {
        let events = decode_all_ways(Front(Config::for_protocol(choice)), BOTH.as_bytes());
        assert_eq!(blocks(&events), expected, "{choice}");
    }
}

#[test]
fn single_protocol_choices_are_their_decoders() {
    let tam = Tam(tam_parse::Config::default().with_param_events(true))
        .run_str([BOTH])
        .into_iter()
        .map(Event::from)
        .collect::<Vec<_>>();
    let front = Front(Config::for_protocol(ProtocolChoice::Tam)).run_str([BOTH]);
    assert_eq!(front, tam);
    assert!(front.iter().any(|e| matches!(e, Event::ParamText { .. })));

    let action = Action(action_xml::Config::default())
        .run_str([BOTH])
        .into_iter()
        .map(Event::from)
        .collect::<Vec<_>>();
    let front = Front(Config::for_protocol(ProtocolChoice::Action)).run_str([BOTH]);
    assert_eq!(front, action);
}

#[test]
fn param_events_off_for_every_choice() {
    for choice in ProtocolChoice::ALL {
        let config = Config::for_protocol(choice).with_param_events(false);
        let events = Front(config).run_str([BOTH]);
        assert!(!events.iter().any(Event::is_argument_event), "{choice}");
        assert!(!blocks(&events).is_empty(), "{choice}");
    }
}

#[test]
fn choice_names_round_trip() {
    for choice in ProtocolChoice::ALL {
        assert_eq!(choice.as_str().parse::<ProtocolChoice>(), Ok(choice));
        assert_eq!(choice.to_string(), choice.as_str());
    }
    assert_eq!("BOTH".parse::<ProtocolChoice>(), Ok(ProtocolChoice::Auto));
    let err = "xml".parse::<ProtocolChoice>().unwrap_err();
    assert!(err.to_string().contains("tam or action (or auto"), "{err}");
    assert_eq!(ProtocolChoice::default(), ProtocolChoice::Auto);
}
