//! The NDJSON of `tam decode` (`src/decode/ndjson.rs`), field by field, and its defaults
//! (`--protocol auto`, `--dialect tam`, `--input raw`).

mod support;

use serde_json::json;
use support::{Allowed, check_line, merge_text, ndjson, run};

const MIXED: &str = "Plan:\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Read「末」\nfilePath:「始」/a「末」\n<|[END_TOOL]|>\n\
<ACTION><Publish><tags><item>x</item></tags><event><kind>k</kind></event><note> hi </note></Publish></ACTION>\n\
<<<[TOOL_REQUEST]>>>tool_name:「始」V「末」<<<[END_TOOL_REQUEST]>>>";

#[test]
fn lines_are_exactly_the_spec_objects() {
    let output = run(&["decode"], MIXED.as_bytes());
    assert_eq!(output.code, Some(0));
    let lines: Vec<&str> = output.stdout.lines().collect();
    let values = ndjson(&output.stdout);
    for line in &values {
        check_line(line, Allowed::default());
    }
    // The key order of the spec, as written.
    assert_eq!(lines[0], r#"{"type":"text","text":"Plan:\n"}"#);
    assert_eq!(
        lines[1],
        r#"{"type":"tool_calls","protocol":"tam","span":[6,105],"calls":[{"tool":"File.Read","args":{"filePath":"/a"}}],"diagnostics":[]}"#
    );
    assert_eq!(values[2], json!({"type": "text", "text": "\n"}));
    assert_eq!(
        values[3],
        json!({
            "type": "tool_calls",
            "protocol": "action",
            "span": [106, 215],
            "calls": [{"tool": "Publish", "args": {"tags": ["x"], "event": {"kind": "k"}, "note": "hi"}}],
            "diagnostics": []
        })
    );
    let rest: String = values[4..]
        .iter()
        .map(|line| {
            line["text"]
                .as_str()
                .expect("the VCP block is prose by default")
        })
        .collect();
    assert_eq!(
        rest,
        "\n<<<[TOOL_REQUEST]>>>tool_name:「始」V「末」<<<[END_TOOL_REQUEST]>>>"
    );
}

#[test]
fn one_protocol_leaves_the_other_as_prose() {
    for protocol in ["tam", "action"] {
        let output = run(&["decode", "--protocol", protocol], MIXED.as_bytes());
        let protocols: Vec<String> = ndjson(&output.stdout)
            .iter()
            .filter_map(|line| line["protocol"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(protocols, [protocol], "only {protocol} blocks are decoded");
    }
}

#[test]
fn the_vcp_dialect_reads_vcp_blocks() {
    let output = run(&["decode", "--dialect", "vcp"], MIXED.as_bytes());
    let calls: Vec<(String, String)> = ndjson(&output.stdout)
        .iter()
        .filter(|line| line["type"] == "tool_calls")
        .map(|line| {
            (
                line["protocol"].to_string(),
                line["calls"][0]["tool"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("\"action\"".to_owned(), "\"Publish\"".to_owned()),
            ("\"tam\"".to_owned(), "\"V\"".to_owned())
        ]
    );
}

#[test]
fn block_diagnostics_sit_inside_their_block() {
    let input = "<|[REQUEST_TOOL]|>\ncommand1:「始」A「末」\nx2:「始」1「末」\n<|[END_TOOL]|>";
    let lines = ndjson(&run(&["decode"], input.as_bytes()).stdout);
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0]["diagnostics"],
        json!([{
            "severity": "error",
            "code": "orphan_parameter",
            "message": "parameter 'x2' belongs to no call: add a command with its number or an unsuffixed command",
            "span": [48, 70]
        }])
    );
}

#[test]
fn progress_and_raw_are_opt_in() {
    let input = "<|[REQUEST_TOOL]|>command:「始」A「末」";
    let plain = ndjson(&run(&["decode"], input.as_bytes()).stdout);
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0]["code"], "unterminated_block");
    assert_eq!(plain[0].get("raw"), None);

    let flags = ["decode", "--progress", "--with-raw"];
    let extra = ndjson(&run(&flags, input.as_bytes()).stdout);
    for line in &extra {
        check_line(line, Allowed::by_flags(&flags));
    }
    let types: Vec<&str> = extra.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "block_start",
            "param_start",
            "param_text",
            "param_end",
            "command_seen",
            "diagnostic"
        ]
    );
    assert_eq!(extra[5]["raw"], input);
}

/// `--progress` streams both protocols' arguments; a call cut at the end of the stream
/// gets argument lines but never a tool_calls line.
#[test]
fn progress_streams_arguments_of_both_protocols() {
    let input = "<|[REQUEST_TOOL]|>command:「始」Write「末」path:「始」a<b.rs「末」<|[END_TOOL]|>\n<ACTION><write><content>if a &lt; b {}</content></write></ACTION>\n<ACTION><write><content>fn main() {";
    let flags = ["decode", "--progress"];
    let lines = merge_text(ndjson(&run(&flags, input.as_bytes()).stdout));
    for line in &lines {
        check_line(line, Allowed::by_flags(&flags));
    }
    let pieces: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "param_text")
        .map(|l| (l["protocol"].as_str().unwrap(), l["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pieces,
        [
            ("tam", "Write"),
            ("tam", "a<b.rs"),
            ("action", "if a < b {}"),
            ("action", "fn main() {")
        ]
    );
    let call_ends = lines.iter().filter(|l| l["type"] == "call_end").count();
    assert_eq!(call_ends, 1, "the cut call never ends");
    let calls: Vec<usize> = lines
        .iter()
        .filter(|l| l["type"] == "tool_calls")
        .map(|l| l["calls"].as_array().unwrap().len())
        .collect();
    assert_eq!(calls, [1, 1, 0], "the cut block yields no call");
}

/// A model that repeats a start marker (open, quoted, in ACTION or TAM) gets output about
/// the size of its text: touching text is one line, and at most 16 diagnostics of one code
/// are written, then one `diagnostics_suppressed` warning counts the rest. No text is lost.
#[test]
fn a_repeated_marker_gives_output_about_its_size() {
    let cases = [
        ("<|[REQUEST_TOOL]|>".repeat(2000), "marker_in_prose"),
        ("`<ACTION>` ".repeat(2000), "marker_in_prose"),
        ("`<|[REQUEST_TOOL]|>` ".repeat(2000), "marker_in_prose"),
    ];
    for (input, code) in cases {
        let output = run(&["decode"], input.as_bytes());
        assert_eq!(output.code, Some(0));
        assert!(
            output.stdout.len() < input.len() * 3 / 2,
            "{} bytes of output for {} of input",
            output.stdout.len(),
            input.len()
        );
        let values = ndjson(&output.stdout);
        let text: String = values.iter().filter_map(|l| l["text"].as_str()).collect();
        assert_eq!(text, input, "every byte is text");
        let of_code = values.iter().filter(|l| l["code"] == code).count();
        assert_eq!(of_code, 16);
        let notes: Vec<_> = values
            .iter()
            .filter(|l| l["code"] == "diagnostics_suppressed")
            .collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        let message = notes[0]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{} more '{code}'", 2000 - 16)),
            "{message}"
        );
    }
}

/// Blocks keep their lines; past 16, a block's diagnostics of a code already written 16
/// times are left out of its line and counted at the end.
#[test]
fn blocks_keep_their_lines_and_diagnostics_are_capped_per_code() {
    // Each block holds a call and stray text (a block with no element at all is prose).
    let input = "<ACTION>x<a/></ACTION>".repeat(20);
    let output = run(&["decode"], input.as_bytes());
    let values = ndjson(&output.stdout);
    let blocks: Vec<_> = values
        .iter()
        .filter(|l| l["type"] == "tool_calls")
        .collect();
    assert_eq!(blocks.len(), 20);
    let stray: usize = blocks
        .iter()
        .map(|b| {
            b["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["code"] == "stray_text")
                .count()
        })
        .sum();
    assert_eq!(stray, 16);
    assert!(
        values.iter().any(|l| l["code"] == "diagnostics_suppressed"
            && l["message"]
                .as_str()
                .unwrap()
                .starts_with("4 more 'stray_text'")),
        "{values:?}"
    );
}
