//! A start marker the model quotes opens no block, a block in a code fence is a
//! call (warning `fenced_block`), and reasoning is never decoded into calls. Every case is
//! decoded every way (whole, char by char, byte by byte, random splits, every prefix +
//! rest), so a backtick, a `>`, a fence or a `<think>` tag split across deltas is covered.

mod common;

use common::{blocks, codes, decode_str, reasoning, text};
use tam_parse::{Code, Config, Event};

const BLOCK: &str =
    "<|[REQUEST_TOOL]|>command:「始」DeleteAllFiles「末」path:「始」/「末」<|[END_TOOL]|>";

fn tools(events: &[Event<'static>]) -> Vec<String> {
    blocks(events)
        .iter()
        .flat_map(|b| b.calls.iter().map(|c| c.tool.to_string()))
        .collect()
}

fn count(events: &[Event<'static>], code: Code) -> usize {
    codes(events)
        .iter()
        .filter(|c| **c == code.as_str())
        .count()
}

fn think() -> Config {
    Config::default().with_reasoning_tags(true)
}

#[test]
fn a_marker_in_inline_code_is_prose() {
    let input = format!("Never write `{BLOCK}` unless asked.");
    let events = decode_str(&input, Config::default());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(text(&events), input);
    assert_eq!(codes(&events), ["marker_in_prose"]);
    let warning = events
        .iter()
        .find_map(|e| match e {
            Event::Diagnostic(d) => Some(d),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        &input[warning.span.start..warning.span.end],
        "<|[REQUEST_TOOL]|>"
    );
    assert!(warning.message.contains("inline code"), "{warning}");
}

#[test]
fn a_marker_on_a_quoted_line_is_prose() {
    let input = format!("The user wrote:\n  > Please run {BLOCK}\n> and more\n");
    let events = decode_str(&input, Config::default());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(text(&events), input);
    assert_eq!(count(&events, Code::MARKER_IN_PROSE), 1);
    // The VCP dialect too.
    let vcp = "> <<<[TOOL_REQUEST]>>>tool_name:「始」X「末」<<<[END_TOOL_REQUEST]>>>";
    let events = decode_str(vcp, Config::with_dialect(tam_parse::Dialect::Vcp));
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(text(&events), vcp);
}

#[test]
fn a_block_after_a_closed_code_span_is_a_call() {
    for input in [
        format!("Use `ls` then {BLOCK}"),
        format!("Use ``a ` b`` then {BLOCK}"),
        format!("`a` `b` {BLOCK}"),
    ] {
        let events = decode_str(&input, Config::default());
        assert_eq!(tools(&events), ["DeleteAllFiles"], "{input}");
        assert_eq!(codes(&events), Vec::<&str>::new(), "{input}");
    }
}

#[test]
fn inline_code_ends_at_the_line_end() {
    let input = format!("An unclosed ` here\n{BLOCK}");
    let events = decode_str(&input, Config::default());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    // And a quoted line ends at its line end.
    let input = format!("> quoted\n{BLOCK}");
    assert_eq!(
        tools(&decode_str(&input, Config::default())),
        ["DeleteAllFiles"]
    );
}

#[test]
fn a_fenced_block_is_a_call_with_a_warning() {
    for (input, fence) in [
        (format!("Here:\n```\n{BLOCK}\n```\nDone."), "```"),
        (format!("~~~text\n{BLOCK}\n~~~"), "~~~text"),
        (format!("  ````\n> {BLOCK}\n````"), "  ````"),
        (format!("```xml {BLOCK}\n```"), "```xml "),
    ] {
        let events = decode_str(&input, Config::default());
        assert_eq!(tools(&events), ["DeleteAllFiles"], "{input}");
        let block = blocks(&events)[0];
        assert_eq!(block.diagnostics[0].code, Code::FENCED_BLOCK, "{input}");
        let span = block.diagnostics[0].span;
        assert_eq!(&input[span.start..span.end], fence, "{input}");
        assert_eq!(codes(&events), ["fenced_block"], "{input}");
    }
}

#[test]
fn a_block_after_the_fence_closed_is_not_fenced() {
    for input in [
        format!("```\ncode `x\n```\n{BLOCK}"),
        format!("```\ncode\n`````  \nthen {BLOCK}"),
        format!("~~~\n~~~\n{BLOCK}"),
    ] {
        let events = decode_str(&input, Config::default());
        assert_eq!(tools(&events), ["DeleteAllFiles"], "{input}");
        assert_eq!(codes(&events), Vec::<&str>::new(), "{input}");
    }
    // A shorter run or text after the run does not close it.
    for input in [
        format!("````\n```\n{BLOCK}"),
        format!("```\n``` x\n{BLOCK}"),
        format!("```\n~~~\n{BLOCK}"),
    ] {
        let events = decode_str(&input, Config::default());
        assert_eq!(codes(&events), ["fenced_block"], "{input}");
    }
}

#[test]
fn reasoning_is_never_decoded() {
    let input = format!("<think>\nI could run {BLOCK} but no.\n</think>\nDone.");
    let events = decode_str(&input, think());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(
        reasoning(&events),
        format!("\nI could run {BLOCK} but no.\n")
    );
    assert_eq!(text(&events), "\nDone.");
    assert!(matches!(events[0], Event::ReasoningStart { span } if span.len() == 7));
    assert!(events.iter().any(
        |e| matches!(e, Event::ReasoningEnd { span } if &input[span.start..span.end] == "</think>")
    ));
    assert_eq!(codes(&events), Vec::<&str>::new());
}

#[test]
fn an_unclosed_reasoning_runs_to_the_end() {
    let input = format!("\n  <thinking>plan: {BLOCK}\n</think> still thinking </thinki");
    let events = decode_str(&input, think());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(
        reasoning(&events),
        format!("plan: {BLOCK}\n</think> still thinking </thinki")
    );
    assert_eq!(text(&events), "\n  ");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ReasoningEnd { .. }))
    );
}

#[test]
fn a_call_after_the_reasoning_runs() {
    let input = format!("<THINK >plan</think>\n{BLOCK}\n<think>again</think>");
    let events = decode_str(&input, think());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert_eq!(reasoning(&events), "planagain");
}

#[test]
fn a_think_tag_split_across_deltas() {
    let input = format!("<think>x {BLOCK}</think>");
    let mut decoder = tam_parse::Decoder::new(think());
    let mut events = Vec::new();
    for delta in [
        "<th",
        "in",
        "k>x ",
        &BLOCK[..5],
        &BLOCK[5..],
        "</thi",
        "nk>",
    ] {
        decoder.feed(delta, |e| events.push(e.into_owned()));
    }
    decoder.finish(|e| events.push(e.into_owned()));
    assert!(tools(&events).is_empty());
    assert_eq!(reasoning(&events), format!("x {BLOCK}"));
    assert_eq!(
        tam_testkit::normalize::<common::Tam>(events),
        decode_str(&input, think())
    );
}

#[test]
fn a_think_tag_not_opening_a_line_or_unfinished_is_prose() {
    for input in [
        format!("I use <thinking tags, then {BLOCK}"),
        format!("<thinking about it\n{BLOCK}"),
        format!("Text <think> then {BLOCK}"),
        format!("```\n<think>\n```\n{BLOCK}"),
        format!("<thinker>{BLOCK}"),
    ] {
        let events = decode_str(&input, think());
        assert_eq!(tools(&events), ["DeleteAllFiles"], "{input}");
        assert_eq!(reasoning(&events), "", "{input}");
    }
}

#[test]
fn without_reasoning_tags_think_is_prose() {
    let input = format!("<think>{BLOCK}</think>");
    let events = decode_str(&input, Config::default());
    assert_eq!(tools(&events), ["DeleteAllFiles"]);
    assert_eq!(text(&events), "<think></think>");
}

#[test]
fn invalid_bytes_in_reasoning_and_in_quoted_prose_keep_every_byte() {
    let input = b"<think>a\xffb </thi\xfenk> c</think>\n`x\xff <|[REQUEST_TOOL]|>` y";
    let events = common::decode_all_ways(input, think());
    assert!(tools(&events).is_empty(), "{events:?}");
    assert_eq!(reasoning(&events), "ab </think> c");
    assert_eq!(
        codes(&events),
        [
            "invalid_utf8",
            "invalid_utf8",
            "invalid_utf8",
            "marker_in_prose"
        ]
    );
}

/// Markers around prose (a sentence that names both, an empty block, a malformed line
/// that holds no entry) give no block: nothing in them could run, and their text stays
/// text, with one `marker_in_prose` warning. A block with an entry stays a block.
#[test]
fn a_closed_block_holding_no_entry_is_prose() {
    for input in [
        "Write <|[REQUEST_TOOL]|> then your entries, then <|[END_TOOL]|> to call a tool.",
        "Empty: <|[REQUEST_TOOL]|><|[END_TOOL]|>.",
        "<|[REQUEST_TOOL]|>\ntool: get_weather city: Paris\n<|[END_TOOL]|>\nDone.",
    ] {
        let events = decode_str(input, Config::default());
        assert!(blocks(&events).is_empty(), "{input}: {events:?}");
        assert_eq!(text(&events), input);
        assert_eq!(codes(&events), ["marker_in_prose"], "{input}");
    }
    // An entry without a command is still a block, with its error.
    let events = decode_str(
        "<|[REQUEST_TOOL]|>city:「始」Paris「末」<|[END_TOOL]|>",
        Config::default(),
    );
    assert_eq!(blocks(&events).len(), 1);
    assert_eq!(count(&events, Code::MISSING_COMMAND), 1);
}
