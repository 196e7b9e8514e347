//! `tam decode` writes each event while the input is still arriving: a call is on standard
//! output before the model's stream (standard input) has ended.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{LiveRun, merge_text};

const SHORT_WAIT: Duration = support::LINE_WAIT;

#[test]
fn a_tam_call_is_written_before_the_input_ends() {
    let mut run = LiveRun::start(&["decode", "--protocol", "tam"]);
    run.write("I'll read it.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Read「末」\n".as_bytes());
    run.write("path:「始」/tmp/a.txt「末」\n<|[END_TOOL]|>".as_bytes());
    let (before, calls) = run.read_until_type("tool_calls");
    assert_eq!(
        merge_text(before),
        [json!({"type": "text", "text": "I'll read it.\n"})]
    );
    assert_eq!(
        calls["calls"],
        json!([{"tool": "File.Read", "args": {"path": "/tmp/a.txt"}}])
    );
    assert!(
        run.is_running(),
        "the call came while standard input was open"
    );

    run.write(b" Reading now.");
    let (code, rest) = run.close();
    assert_eq!(code, Some(0));
    assert_eq!(
        merge_text(rest),
        [json!({"type": "text", "text": " Reading now."})]
    );
}

#[test]
fn prose_is_written_as_it_arrives() {
    let mut run = LiveRun::start(&["decode"]);
    run.write(b"Hello, wor");
    let (_, text) = run.read_until_type("text");
    assert_eq!(
        text["text"], "Hello, wor",
        "no marker can start in it: nothing held back"
    );
    run.write(b"ld <|[REQ");
    let line = run
        .next_line(SHORT_WAIT)
        .expect("the text before the possible marker");
    assert_eq!(line, r#"{"type":"text","text":"ld "}"#);
    assert_eq!(
        run.next_line(Duration::from_millis(300)),
        None,
        "a possible marker prefix is held back"
    );
    run.write(b"UEST_TOOL]|>command:\xe3\x80\x8c\xe5\xa7\x8b\xe3\x80\x8dT\xe3\x80\x8c\xe6\x9c\xab\xe3\x80\x8d<|[END_TOOL]|>");
    let (_, calls) = run.read_until_type("tool_calls");
    assert_eq!(calls["calls"][0]["tool"], "T");
    assert_eq!(run.close().0, Some(0));
}

#[test]
fn an_sse_call_is_written_before_done() {
    let mut run = LiveRun::start(&["decode", "--input", "sse", "--progress"]);
    let event = |content: &str| {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": content}}]});
        format!("data: {chunk}\n\n")
    };
    run.write(event("Checking.\n<ACTION><GetPlayerInfo>").as_bytes());
    let (_, start) = run.read_until_type("block_start");
    assert_eq!(
        start,
        json!({"type": "block_start", "protocol": "action", "span": [10, 18]})
    );
    run.write(event("<player_id>player123</player_id></GetPlayerInfo></ACTION>").as_bytes());
    let (_, calls) = run.read_until_type("tool_calls");
    assert_eq!(
        calls["calls"],
        json!([{"tool": "GetPlayerInfo", "args": {"player_id": "player123"}}])
    );
    assert!(run.is_running(), "the call came before data: [DONE]");
    run.write(b"data: [DONE]\n\n");
    let (code, rest) = run.close();
    assert_eq!(code, Some(0));
    assert_eq!(rest, Vec::<serde_json::Value>::new());
}

#[test]
fn a_delta_call_is_written_before_the_input_ends() {
    let mut run = LiveRun::start(&["decode", "--input", "deltas"]);
    let delta_line = |delta: &str| format!("{}\n", serde_json::to_string(delta).unwrap());
    for delta in [
        "Sure. <|[REQUEST_TOOL]|>comm",
        "and:「始」A「末」<|[END_",
        "TOOL]|>",
    ] {
        run.write(delta_line(delta).as_bytes());
    }
    let (before, calls) = run.read_until_type("tool_calls");
    assert_eq!(
        merge_text(before),
        [json!({"type": "text", "text": "Sure. "})]
    );
    assert_eq!(calls["protocol"], "tam");
    assert!(
        run.is_running(),
        "the call came while standard input was open"
    );
    run.write(delta_line(" Done.").as_bytes());
    let (code, rest) = run.close();
    assert_eq!(code, Some(0));
    assert_eq!(
        merge_text(rest),
        [json!({"type": "text", "text": " Done."})]
    );
}
