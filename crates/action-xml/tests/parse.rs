//! The one-shot `parse`: the protocol's own examples as the runtime
//! reads them (response text, tool id, parameters), and how `Parsed` gathers the events.

use action_xml::{Config, Decoder, Event, codes, parse, parse_with};
use serde_json::json;

#[test]
fn seed_5_1_simple_call() {
    let out = parse(
        "Okay, I need to check the current weather to answer the player's question.\n<ACTION>\n    <ReadWorldStateTool>\n        <path>environment.weather.current_conditions</path>\n        <default_value>unknown</default_value>\n    </ReadWorldStateTool>\n</ACTION>\n",
    );
    assert_eq!(
        out.response_text,
        "Okay, I need to check the current weather to answer the player's question."
    );
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].tool, "ReadWorldStateTool");
    assert_eq!(
        serde_json::Value::Object(out.calls[0].args.clone()),
        json!({"path": "environment.weather.current_conditions", "default_value": "unknown"})
    );
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    assert_eq!(out.trailing_text, "");
}

#[test]
fn seed_5_2_repeated_tags_become_an_array() {
    let out = parse(
        "I need to read both the main application file and the utility functions to understand the context.\n<ACTION>\n    <read_file>\n        <args>\n            <file>\n                <path>src/app.ts</path>\n            </file>\n            <file>\n                <path>src/utils.ts</path>\n            </file>\n        </args>\n    </read_file>\n</ACTION>\n",
    );
    assert_eq!(out.calls[0].tool, "read_file");
    assert_eq!(
        out.calls[0].args["args"],
        json!({"file": [{"path": "src/app.ts"}, {"path": "src/utils.ts"}]})
    );
}

#[test]
fn seed_5_3_cdata_keeps_the_diff_verbatim() {
    let out = parse(include_str!("golden/seed_5_3_cdata.txt"));
    assert_eq!(out.calls[0].tool, "ApplyProjectDiff");
    assert_eq!(
        out.calls[0].get_str("diff_patch").unwrap(),
        "--- a/config/settings.json\n+++ b/config/settings.json\n@@ -1,5 +1,5 @@\n {\n-  \"feature_enabled\": false,\n+  \"feature_enabled\": true,\n   \"api_key\": \"old_key_value\"\n }\n"
    );
}

#[test]
fn seed_5_4_plain_text_has_no_calls() {
    let text = "The weather is currently sunny and pleasant. It's a great day for an adventure!";
    let out = parse(text);
    assert_eq!(out.response_text, text);
    assert!(out.calls.is_empty() && out.blocks.is_empty() && out.diagnostics.is_empty());
}

#[test]
fn seed_5_5_comment_after_parameter_is_ignored() {
    let out = parse(include_str!("golden/seed_5_5_round1.txt"));
    assert_eq!(out.response_text, "I'll try to get the player's name.");
    assert_eq!(out.calls[0].tool, "GetPlayerInfo");
    assert_eq!(out.calls[0].get_str("playerId"), Some("player123"));
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    let out = parse(include_str!("golden/seed_5_5_round2.txt"));
    assert_eq!(out.calls[0].get_str("player_id"), Some("player123"));
}

#[test]
fn first_block_runs_later_ones_are_reported() {
    let out = parse("One.\n<ACTION><a/></ACTION>\nTwo.\n<ACTION><b/></ACTION>\nThree.");
    assert_eq!(out.response_text, "One.");
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].tool, "a");
    assert_eq!(out.blocks.len(), 2);
    assert_eq!(out.blocks[1].calls[0].tool, "b");
    assert_eq!(out.blocks[1].index, 1);
    assert_eq!(out.trailing_text, "Two.\n\nThree.");
    let extra: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::EXTRA_ACTION_BLOCK)
        .collect();
    assert_eq!(extra.len(), 1);
    assert_eq!(extra[0].span, out.blocks[1].span);
}

#[test]
fn fences_around_the_block_leave_response_and_trailing_text() {
    let out = parse("Sure, here it is.\n```xml\n<ACTION>\n<ping/>\n</ACTION>\n```\nDone.");
    assert_eq!(out.response_text, "Sure, here it is.");
    assert_eq!(out.trailing_text, "Done.");
    assert_eq!(out.calls[0].tool, "ping");
    assert_eq!(out.diagnostics[0].code, codes::FENCED_BLOCK);
    // Unfenced trailing text that starts with backticks is kept.
    let out = parse("<ACTION><ping/></ACTION>\n```\ncode\n```");
    assert_eq!(out.trailing_text, "```\ncode\n```");
}

#[test]
fn parse_is_feeding_the_whole_text_once() {
    let text = include_str!("golden/extra_action_block.txt");
    let mut blocks = Vec::new();
    let mut diagnostics = Vec::new();
    let mut decoder = Decoder::new(Config::default());
    let mut on_event = |e: Event<'_>| {
        if let Event::Block(b) = e {
            diagnostics.extend(b.diagnostics.clone());
            blocks.push(b);
        }
    };
    decoder.feed(text, &mut on_event);
    decoder.finish(&mut on_event);
    let out = parse_with(text, Config::default());
    assert_eq!(out.blocks, blocks);
    assert_eq!(out.diagnostics, diagnostics);
}

#[test]
fn malformed_xml_error_reads_as_an_observation() {
    let out = parse("Line one.\nLine two:\n<ACTION>\n<t>\n<a x=>1</a>\n</t>\n</ACTION>");
    assert!(out.calls.is_empty());
    let error = out.blocks[0].first_error().unwrap();
    assert_eq!(error.code, codes::MALFORMED_XML);
    assert_eq!(
        format!("Malformed XML in ACTION block: {}", error.message),
        "Malformed XML in ACTION block: expected a quote not '>' at line 5, column 6"
    );
    assert_eq!(
        error.raw.as_deref(),
        Some("<ACTION>\n<t>\n<a x=>1</a>\n</t>\n</ACTION>")
    );
    assert!(out.has_errors());
}

/// Every parameter keeps the exact source of its content.
#[test]
fn parameters_keep_their_exact_source() {
    let input = "Go.\n<ACTION><edit><html><div><p>hi</p></div></html><n> 1 &amp; 2 </n><e/></edit></ACTION>";
    let out = action_xml::parse(input);
    let call = &out.calls[0];
    // Read as XML, <html> is an object; its source is the markup as written.
    assert_eq!(call.args["html"], serde_json::json!({"div": {"p": "hi"}}));
    assert_eq!(call.source("html"), Some("<div><p>hi</p></div>"));
    assert_eq!(call.get_str("n"), Some("1 & 2"));
    assert_eq!(call.source("n"), Some(" 1 &amp; 2 "));
    assert_eq!(call.source("e"), Some(""));
    assert_eq!(call.source("missing"), None);
    let keys: Vec<&str> = call.params.iter().map(|p| &*p.key).collect();
    assert_eq!(keys, ["html", "n", "e"]);
    for p in &call.params {
        assert_eq!(&input[p.content_span.start..p.content_span.end], &*p.source);
    }
}
