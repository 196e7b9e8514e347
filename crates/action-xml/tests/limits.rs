//! Input safety: depth, size and node limits, DTDs, no panic and no stack overflow on
//! hostile input.

mod common;

use action_xml::{Config, Decoder, Event, codes, parse, parse_with};
use common::Action;
use tam_testkit::Harness;

fn deep(n: usize) -> String {
    format!("<ACTION>{}x{}</ACTION>", "<a>".repeat(n), "</a>".repeat(n))
}

#[test]
fn hundred_thousand_nested_elements_are_refused_without_recursion() {
    let input = deep(100_000);
    let out = parse(&input);
    assert!(out.calls.is_empty());
    let error = out.blocks[0].first_error().unwrap();
    assert_eq!(error.code, codes::NESTING_TOO_DEEP);
    // The error points at the deepest element (the 100 000th `<a>`).
    assert_eq!(
        error.message,
        "elements nested deeper than 64 levels at line 1, column 300006"
    );
    // Split arbitrarily, the same.
    let split: Vec<Event<'static>> = tam_testkit::normalize::<Action>(
        Action(Config::default()).run_bytes(input.as_bytes().chunks(4093)),
    );
    assert_eq!(
        split,
        tam_testkit::normalize::<Action>(Action(Config::default()).run_str([input.as_str()]))
    );
}

#[test]
fn a_huge_depth_setting_is_capped() {
    let mut config = Config::default();
    config.max_depth = usize::MAX;
    let out = parse_with(&deep(100_000), config);
    let error = out.blocks[0].first_error().unwrap();
    assert_eq!(error.code, codes::NESTING_TOO_DEEP);
    assert!(
        error
            .message
            .starts_with("elements nested deeper than 256 levels")
    );
    // Within the cap, deep values are built.
    let out = parse_with(&deep(200), config);
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    let mut value = &out.calls[0].args["a"];
    for _ in 0..198 {
        value = &value["a"];
    }
    assert_eq!(value, "x");
}

#[test]
fn depth_limit_counts_calls_as_level_one() {
    let mut config = Config::default();
    config.max_depth = 2;
    assert!(
        parse_with("<ACTION><t><p>1</p></t></ACTION>", config)
            .diagnostics
            .is_empty()
    );
    let out = parse_with("<ACTION><t><p><q>1</q></p></t></ACTION>", config);
    assert_eq!(out.diagnostics[0].code, codes::NESTING_TOO_DEEP);
}

#[test]
fn nesting_inside_cdata_is_just_text() {
    let body = "<a>".repeat(100_000);
    let out = parse(&format!(
        "<ACTION><t><v><![CDATA[{body}]]></v></t></ACTION>"
    ));
    assert_eq!(out.calls[0].get_str("v"), Some(body.as_str()));
}

#[test]
fn oversized_block_is_dropped_with_bounded_memory() {
    let mut config = Config::default();
    config.max_block_bytes = 64 * 1024;
    let mut decoder = Decoder::new(config);
    let mut events = Vec::new();
    let mut peak = 0;
    decoder.feed("before <ACTION><t><v>", |e| events.push(e.into_owned()));
    let chunk = "0123456789abcdef".repeat(256);
    for _ in 0..1024 {
        decoder.feed(&chunk, |e| events.push(e.into_owned()));
        peak = peak.max(decoder.buffered());
    }
    decoder.feed("</v></t></ACTION> after", |e| events.push(e.into_owned()));
    decoder.finish(|e| events.push(e.into_owned()));
    assert!(
        peak <= config.max_block_bytes + 64 * 1024,
        "held {peak} bytes"
    );
    let events = tam_testkit::normalize::<Action>(events);
    let n = 7 + 14 + 4 * 1024 * 1024 + 23;
    tam_testkit::assert_tiles::<Action>(&events, n);
    let block = common::blocks(&events)[0];
    assert!(block.calls.is_empty() && block.raw.is_empty());
    assert_eq!(block.diagnostics[0].code, codes::BLOCK_TOO_LARGE);
    assert_eq!(common::text(&events), "before  after");
}

#[test]
fn node_limit_stops_wide_blocks() {
    let items = "<item>x</item>".repeat(40_000);
    let out = parse(&format!("<ACTION><t><list>{items}</list></t></ACTION>"));
    assert_eq!(out.diagnostics[0].code, codes::TOO_MANY_NODES);
    let mut config = Config::default();
    config.max_nodes = 200_000;
    let out = parse_with(
        &format!("<ACTION><t><list>{items}</list></t></ACTION>"),
        config,
    );
    assert_eq!(out.calls[0].args["list"].as_array().unwrap().len(), 40_000);
}

#[test]
fn dtds_are_refused_and_entities_never_expand() {
    let laughs = "<ACTION><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]><t><a>&lol2;</a></t></ACTION>";
    let out = parse(laughs);
    assert!(out.calls.is_empty());
    assert_eq!(out.diagnostics[0].code, codes::MALFORMED_XML);
    assert!(
        out.diagnostics[0]
            .message
            .starts_with("document type declarations are not allowed")
    );
    let xxe = "<ACTION>\n<!ENTITY xxe SYSTEM \"file:///etc/passwd\">\n<t><a>&xxe;</a></t></ACTION>";
    assert_eq!(parse(xxe).diagnostics[0].code, codes::MALFORMED_XML);
    // An entity reference without a DTD is text, never a lookup.
    let out = parse("<ACTION><t><a>&xxe;</a></t></ACTION>");
    assert_eq!(out.calls[0].get_str("a"), Some("&xxe;"));
}

#[test]
fn many_repeated_and_many_distinct_names_decode() {
    // 20 000 distinct keys, each given twice: every one becomes an array.
    let mut body = String::new();
    for i in 0..20_000 {
        body.push_str(&format!("<k{i}>a</k{i}><k{i}>b</k{i}>"));
    }
    let mut config = Config::default();
    config.max_nodes = 200_000;
    let out = parse_with(&format!("<ACTION><t>{body}</t></ACTION>"), config);
    assert_eq!(out.calls[0].args.len(), 20_000);
    assert_eq!(out.calls[0].args["k19999"], serde_json::json!(["a", "b"]));
    // That the time is linear in the number of names is a goal of the benchmark
    // `action_xml/many_members` (2 000 against 20 000 names), not a timing assertion here.
}
