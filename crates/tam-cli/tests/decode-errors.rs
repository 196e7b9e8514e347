//! `tam decode` failures and the model's mistakes: usage errors exit 2, I/O errors exit 1,
//! and whatever the model (or its SSE stream) wrote exits 0 with diagnostics.

mod support;

use std::process::Stdio;

use serde_json::json;
use support::{Allowed, check_line, ndjson, run, test_path};

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        vec!["decode", "--protocol", "json"],
        vec!["decode", "--input", "websocket"],
        vec!["decode", "--dialect", "klingon"],
        vec!["decode", "--no-such-flag"],
        vec!["decode", "a.txt", "b.txt"],
        vec!["decode", "--protocol", "action", "--dialect", "vcp"],
        vec!["decode", "--protocol"],
        vec!["frobnicate"],
        vec![],
    ] {
        let output = run(&args, b"");
        assert_eq!(output.code, Some(2), "{args:?}: {}", output.stderr);
        assert_eq!(output.stdout, "", "{args:?}");
        assert!(
            output.stderr.starts_with("error:") || output.stderr.contains("Usage: tam"),
            "{args:?}: {}",
            output.stderr
        );
    }
}

#[test]
fn a_usage_error_says_what_is_wrong() {
    let bad_value = run(&["decode", "--input", "websocket"], b"");
    assert!(
        bad_value.stderr.contains("invalid value 'websocket'"),
        "{}",
        bad_value.stderr
    );
    assert!(
        bad_value.stderr.contains("raw, deltas, sse"),
        "{}",
        bad_value.stderr
    );
    let conflict = run(&["decode", "--protocol", "action", "--dialect", "tam"], b"");
    assert!(conflict.stderr.contains("--dialect"), "{}", conflict.stderr);
    assert!(
        conflict.stderr.contains("Usage: tam decode"),
        "{}",
        conflict.stderr
    );
}

#[test]
fn a_missing_file_is_an_io_error() {
    let output = run(&["decode", "/no/such/dir/model-output.txt"], b"");
    assert_eq!(output.code, Some(1));
    assert_eq!(output.stdout, "");
    assert_eq!(
        output.stderr,
        "tam: cannot read /no/such/dir/model-output.txt: No such file or directory (os error 2)\n"
    );
}

#[test]
fn a_file_that_cannot_be_read_is_an_io_error() {
    let dir = test_path("golden");
    let output = run(&["decode", dir.to_str().unwrap()], b"");
    assert_eq!(output.code, Some(1), "{}", output.stderr);
    assert!(
        output
            .stderr
            .starts_with(&format!("tam: cannot read {}", dir.display())),
        "{}",
        output.stderr
    );

    let directory_on_stdin = std::process::Command::new(support::TAM)
        .args(["decode", "-"])
        .stdin(std::fs::File::open(&dir).unwrap())
        .output()
        .unwrap();
    assert_eq!(directory_on_stdin.status.code(), Some(1));
    let message = String::from_utf8(directory_on_stdin.stderr).unwrap();
    assert!(
        message.starts_with("tam: cannot read standard input: "),
        "{message}"
    );
}

#[test]
fn malformed_sse_gives_diagnostics_and_exit_0() {
    let input = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abc\"}}]}\n\n",
        "data: {not json}\n\n",
        "<html>502 Bad Gateway</html>\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[1]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"def\"}}]}\n\n",
    );
    let output = run(&["decode", "--input", "sse"], input.as_bytes());
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let lines = ndjson(&output.stdout);
    for line in &lines {
        check_line(line, Allowed::default());
    }
    // The HTML line is not an SSE field: the standard says to ignore it.
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0], json!({"type": "text", "text": "abc"}));
    assert_eq!(lines[1]["code"], "malformed_sse");
    assert_eq!(lines[1]["severity"], "error");
    assert_eq!(
        lines[1]["span"],
        json!([3, 3]),
        "at the decoded offset reached"
    );
    assert!(
        lines[1]["message"]
            .as_str()
            .unwrap()
            .contains("input line 3"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2]["code"], "malformed_sse");
    assert!(
        lines[2]["message"].as_str().unwrap().contains("an array"),
        "{}",
        lines[2]
    );
    assert_eq!(lines[3], json!({"type": "text", "text": "def"}));
}

#[test]
fn invalid_utf8_gives_diagnostics_and_exit_0() {
    let output = run(
        &["decode"],
        b"ok \xc3\x28 <ACTION><A><v>x\xffy</v></A></ACTION>",
    );
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let lines = ndjson(&output.stdout);
    for line in &lines {
        check_line(line, Allowed::default());
    }
    let bad = lines
        .iter()
        .find(|l| l["type"] == "diagnostic")
        .expect("a diagnostic line");
    assert_eq!(bad["code"], "invalid_utf8");
    assert_eq!(bad["span"], json!([3, 4]), "the lone lead byte");
    let block = lines
        .iter()
        .find(|l| l["type"] == "tool_calls")
        .expect("the block still decodes");
    assert_eq!(block["calls"][0]["tool"], "A");
    assert_eq!(block["diagnostics"][0]["code"], "invalid_utf8");

    let deltas = run(&["decode", "--input", "deltas"], b"\"a\xfe\"\n");
    assert_eq!(deltas.code, Some(0));
    let lines = ndjson(&deltas.stdout);
    assert_eq!(lines[0]["code"], "invalid_utf8");
    assert_eq!(lines[1], json!({"type": "text", "text": "a\u{fffd}"}));
}

#[test]
fn a_closed_output_pipe_ends_the_run_quietly() {
    let mut child = support::spawn(&["decode"]);
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // Enough prose that tam writes after the reader is gone.
    let prose = "lorem ipsum ".repeat(20_000);
    let _ = std::io::Write::write_all(&mut stdin, prose.as_bytes());
    drop(stdin);
    let output = support::finish(child);
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert_eq!(output.stderr, "");
}

#[test]
fn every_command_has_help() {
    for command in ["decode", "schema", "prompt", "demo"] {
        let output = std::process::Command::new(support::TAM)
            .args([command, "--help"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{command}");
        let help = String::from_utf8(output.stdout).unwrap();
        assert!(
            help.contains(&format!("Usage: tam {command}")),
            "{command}: {help}"
        );
    }
    let decode = run(&["decode", "--help"], b"");
    for documented in [
        "block_start",
        "command_seen",
        "--progress",
        "malformed_sse",
        "[DONE]",
        "Exit status",
    ] {
        assert!(
            decode.stdout.contains(documented),
            "decode --help documents {documented}"
        );
    }
}

/// `--input sse`: a stream the server ends with `finish_reason: "length"` (or an error
/// event) was cut, so the block open at its end yields no call, even one whose call
/// elements all closed (the repair a normal end allows); the same stream ended normally
/// gets that repair.
#[test]
fn an_sse_stream_cut_at_the_token_limit_runs_no_call_from_its_open_block() {
    let event = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk =
            serde_json::json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let body = event(
        serde_json::json!({"content": "Writing.\n<ACTION><write_file><path>a.rs</path><content>fn main() {}</content></write_file>"}),
        None,
    );
    let calls = |stream: String| {
        let output = support::run(&["decode", "--input", "sse"], stream.as_bytes());
        assert_eq!(output.code, Some(0), "{}", output.stderr);
        let lines = support::ndjson(&output.stdout);
        let calls: usize = lines
            .iter()
            .filter(|l| l["type"] == "tool_calls")
            .map(|l| l["calls"].as_array().map_or(0, Vec::len))
            .sum();
        // The cut is reported: on its own line, or in the block's diagnostics.
        let cut = output.stdout.contains("\"unterminated_block\"");
        (calls, cut)
    };
    let normal = format!(
        "{body}{}data: [DONE]\n\n",
        event(serde_json::json!({}), Some("stop"))
    );
    assert_eq!(calls(normal), (1, false));
    let length = format!(
        "{body}{}data: [DONE]\n\n",
        event(serde_json::json!({}), Some("length"))
    );
    assert_eq!(calls(length), (0, true));
    let error = format!("{body}data: {{\"error\": {{\"message\": \"upstream died\"}}}}\n\n");
    assert_eq!(calls(error), (0, true));
}
