//! What the crate is without its runtime (as tam-proxy takes it): the calls of decoded
//! blocks as `ToolCall`s with their stable ids, and the prompt and grammar for a protocol
//! choice. Runs with any feature set. Each reply is decoded whole, byte by byte, as every
//! prefix + rest and in random splits, with the same blocks.

use serde_json::json;
use tool_dispatch::{Protocol, ProtocolChoice, ToolCall, diagnostic_observation, taught_protocol};
use tool_schema::KeyMatch;

/// The blocks and diagnostics of a reply fed to the front door (both protocols) in
/// `deltas`.
fn decode<'a>(deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<tam::Event<'static>> {
    let mut decoder = tam::Decoder::new(tam::Config::default());
    let mut events = Vec::new();
    let mut keep = |e: tam::Event<'_>| {
        if matches!(
            e,
            tam::Event::TamBlock(_) | tam::Event::ActionBlock(_) | tam::Event::Diagnostic(_)
        ) {
            events.push(e.into_owned());
        }
    };
    for delta in deltas {
        decoder.feed_bytes(delta, &mut keep);
    }
    decoder.finish(&mut keep);
    events
}

/// The blocks and diagnostics of `reply`: the same whether it is fed whole, byte by byte,
/// as every prefix + rest or in random splits.
fn blocks(reply: &str) -> Vec<tam::Event<'static>> {
    let bytes = reply.as_bytes();
    let whole = decode([bytes]);
    assert_eq!(decode(bytes.chunks(1)), whole, "byte by byte");
    for i in 1..bytes.len() {
        assert_eq!(
            decode([&bytes[..i], &bytes[i..]]),
            whole,
            "prefix {i} + rest"
        );
    }
    for seed in 1..=8 {
        let cuts = tam_testkit::random_cuts(bytes.len(), seed);
        let pieces = tam_testkit::byte_pieces(bytes, &cuts);
        assert_eq!(decode(pieces), whole, "random splits (seed {seed})");
    }
    whole
}

#[test]
fn an_action_block_gives_exact_calls_with_sources_and_stable_ids() {
    // A marker quoted in prose opens no block; text after the block stays text.
    let reply = "Reading both (the `<ACTION>` form).\n<ACTION><read_file><path>a.rs</path></read_file><read_file><path>b&amp;c</path></read_file></ACTION>\nBoth read.";
    let at = reply.find("\n<ACTION>").unwrap() + 1;
    let events = blocks(reply);
    let [
        tam::Event::Diagnostic(quoted),
        tam::Event::ActionBlock(block),
    ] = events.as_slice()
    else {
        panic!("a quoted-marker warning and one ACTION block expected: {events:?}");
    };
    assert_eq!(quoted.code.as_str(), "marker_in_prose");
    // A warning is not fed back to the model.
    assert_eq!(diagnostic_observation(quoted), None);
    let calls = ToolCall::from_action_block(block);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].tool, "read_file");
    assert_eq!(calls[0].args["path"], json!("a.rs"));
    assert_eq!(calls[0].key_match, KeyMatch::Exact);
    assert_eq!(calls[1].args["path"], json!("b&c"));
    assert_eq!(calls[1].sources["path"], "b&amp;c");
    assert_eq!(calls[0].id, Some(format!("action-{at}-0")));
    assert_eq!(calls[1].id, Some(format!("action-{at}-1")));
}

#[test]
fn a_tam_block_gives_canonical_calls_in_order() {
    let reply = "<|[REQUEST_TOOL]|>\ncommand1:「始」get_weather「末」\ncity1:「始」Paris「末」\ncommand2:「始」get_time「末」\nzone2:「始」CET「末」\n<|[END_TOOL]|>";
    let events = blocks(reply);
    let [tam::Event::TamBlock(block)] = events.as_slice() else {
        panic!("one TAM block expected: {events:?}");
    };
    let calls = ToolCall::from_tam_block(block);
    let got: Vec<_> = calls
        .iter()
        .map(|c| (c.tool.as_str(), c.id.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("get_weather", Some("tam-0-0")),
            ("get_time", Some("tam-0-1"))
        ]
    );
    assert_eq!(calls[0].args["city"], json!("Paris"));
    assert_eq!(calls[1].key_match, KeyMatch::Canonical);
}

#[test]
fn auto_teaches_tam_and_an_unterminated_block_reads_as_an_error() {
    assert_eq!(taught_protocol(ProtocolChoice::Auto), Protocol::Tam);
    assert_eq!(taught_protocol(ProtocolChoice::Action), Protocol::Action);
    let events = blocks("<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\n");
    let observations: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            tam::Event::Diagnostic(d) => diagnostic_observation(d),
            _ => None,
        })
        .collect();
    assert_eq!(observations.len(), 1, "{events:?}");
    assert!(
        observations[0].starts_with("Observation: Error - Unterminated TAM block"),
        "{observations:?}"
    );
}
