//! The reply translator, tested without a server.

use serde_json::{Value, json};
use tam_model::ToolCallChunk;

use super::*;
use crate::api::chat::translate;

/// The offered tools of a request with `get_weather(city: string, days: integer)`.
fn offered() -> OfferedTools {
    let body = serde_json::json!({
        "model": "m", "messages": [],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}],
    });
    translate(body.to_string().as_bytes(), ProtocolChoice::Tam, "")
        .unwrap()
        .offered
}

fn translator(protocol: ProtocolChoice) -> Translator {
    Translator::new(
        tam::Config::for_protocol(protocol),
        true,
        None,
        offered(),
        usize::MAX,
        "t".into(),
    )
}

/// Pieces of `deltas` with adjacent content joined, and the finish reason.
fn run(
    protocol: ProtocolChoice,
    deltas: &[&str],
    finish: Option<FinishReason>,
) -> (Vec<Piece>, String) {
    let mut t = translator(protocol);
    let mut raw: Vec<Piece> = Vec::new();
    for delta in deltas {
        t.feed(ModelItem::Text((*delta).to_owned()));
        raw.extend(t.drain());
    }
    if let Some(finish) = finish {
        t.feed(ModelItem::Finish(finish));
    }
    let reason = t.finish(false).as_openai().to_owned();
    raw.extend(t.drain());
    let raw = without_call_ends(raw, &reason);
    let mut pieces: Vec<Piece> = Vec::new();
    for piece in raw {
        match (pieces.last_mut(), piece) {
            (Some(Piece::Content(previous)), Piece::Content(text))
            | (Some(Piece::Reasoning(previous)), Piece::Reasoning(text)) => {
                previous.push_str(&text);
            }
            (_, piece) => pieces.push(piece),
        }
    }
    (pieces, reason)
}

/// `pieces` without their `CallEnd`s, checked first: a call ends once, after its last
/// arguments, and in a reply that finished `tool_calls` every call ends.
fn without_call_ends(pieces: Vec<Piece>, reason: &str) -> Vec<Piece> {
    let mut started = Vec::new();
    let mut ended = Vec::new();
    for piece in &pieces {
        match piece {
            Piece::CallStart { index, .. } => started.push(*index),
            Piece::CallArguments { index, .. } => {
                assert!(
                    !ended.contains(index),
                    "arguments after the end: {pieces:?}"
                )
            }
            Piece::CallEnd { index } => {
                assert!(
                    started.contains(index) && !ended.contains(index),
                    "{pieces:?}"
                );
                ended.push(*index);
            }
            _ => {}
        }
    }
    if reason == "tool_calls" {
        started.sort_unstable();
        ended.sort_unstable();
        assert_eq!(started, ended, "every call ends: {pieces:?}");
    }
    pieces
        .into_iter()
        .filter(|p| !matches!(p, Piece::CallEnd { .. }))
        .collect()
}

/// The same pieces whole, in 1-character deltas and split at every character boundary.
fn every_split(protocol: ProtocolChoice, text: &str) -> (Vec<Piece>, String) {
    let whole = run(protocol, &[text], None);
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(run(protocol, &refs, None), whole, "1-char deltas");
    for (at, _) in text.char_indices().skip(1) {
        assert_eq!(
            run(protocol, &[&text[..at], &text[at..]], None),
            whole,
            "split at {at}"
        );
    }
    whole
}

fn call(index: usize, name: &str, args: &str) -> [Piece; 2] {
    [
        Piece::CallStart {
            index,
            id: format!("call_t_{index}"),
            name: name.into(),
        },
        Piece::CallArguments {
            index,
            text: args.into(),
        },
    ]
}

/// The turn ends at the call: what follows the block (here `Bye 日本`) is not shown.
#[test]
fn tam_calls_and_prose_are_the_same_for_every_split() {
    let text = "Look: a<b.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\ndays:「始」3「末」\n<|[END_TOOL]|>\nBye 日本";
    let (pieces, reason) = every_split(ProtocolChoice::Tam, text);
    let [start, args] = call(0, "get_weather", r#"{"city":"Paris","days":3}"#);
    assert_eq!(
        pieces,
        [Piece::Content("Look: a<b.\n".into()), start, args,]
    );
    assert_eq!(reason, "tool_calls");
}

#[test]
fn action_calls_and_extra_blocks_are_the_same_for_every_split() {
    let block = "<ACTION><get_weather><city>Rome &amp; Co</city></get_weather></ACTION>";
    let text = format!("Ok.\n{block}\n{block}");
    let (pieces, reason) = every_split(ProtocolChoice::Action, &text);
    let [start, args] = call(0, "get_weather", r#"{"city":"Rome & Co"}"#);
    assert_eq!(pieces, [Piece::Content("Ok.\n".into()), start, args,]);
    assert_eq!(reason, "tool_calls");
}

/// Both protocols decode in one reply; a block that gives no call (a tool not offered)
/// is its text and does not end the turn, the first block with calls does.
#[test]
fn both_protocols_decode_in_one_reply() {
    let tam = "<|[REQUEST_TOOL]|>\ncommand:「始」get_time「末」\n<|[END_TOOL]|>";
    let text = format!(
        "A.\n{tam}\nB.\n<ACTION><get_weather><days>2</days></get_weather></ACTION>\nC.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\n<|[END_TOOL]|>"
    );
    let (pieces, reason) = every_split(ProtocolChoice::Auto, &text);
    let [start, args] = call(0, "get_weather", r#"{"days":2}"#);
    assert_eq!(
        pieces,
        [Piece::Content(format!("A.\n{tam}\nB.\n")), start, args]
    );
    assert_eq!(reason, "tool_calls");
}

/// A `<think>` section of the text is reasoning (`delta.reasoning_content`), and the
/// block inside it is no call; a block after it is.
#[test]
fn a_think_section_is_reasoning_not_calls() {
    let block = "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\n<|[END_TOOL]|>";
    let text = format!("<think>\nplan {block}\n</think>\nOk.\n{block}");
    let (pieces, reason) = every_split(ProtocolChoice::Tam, &text);
    let [start, args] = call(0, "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(
        pieces,
        [
            Piece::Reasoning(format!("\nplan {block}\n")),
            Piece::Content("\nOk.\n".into()),
            start,
            args,
        ]
    );
    assert_eq!(reason, "tool_calls");
}

#[test]
fn a_cut_block_is_content_and_no_call() {
    let text =
        "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\n<|[END_TOOL]";
    let (pieces, reason) = run(ProtocolChoice::Tam, &[text], Some(FinishReason::Length));
    assert_eq!(pieces, [Piece::Content(text.into())]);
    assert_eq!(reason, "length");
    // The same text, finished normally: no end marker, still no call.
    let (pieces, reason) = run(ProtocolChoice::Tam, &[text], None);
    assert_eq!(pieces, [Piece::Content(text.into())]);
    assert_eq!(reason, "stop");
}

/// Native chunks of an offered tool pass through with indexes of their own; a decoded
/// call after them takes the next index and ends the turn: native chunks after it are
/// not passed on.
#[test]
fn native_chunks_pass_through_before_decoded_calls() {
    let mut t = translator(ProtocolChoice::Tam);
    t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
        0,
        Some("up_1".into()),
        Some("get_weather".into()),
        "{\"city\":",
    )));
    t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
        0,
        None,
        None,
        "\"Rome\"}",
    )));
    t.feed(ModelItem::Text(
        "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\n<|[END_TOOL]|>".into(),
    ));
    assert!(t.turn_over());
    t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
        1,
        Some("up_2".into()),
        Some("late".into()),
        "{}",
    )));
    let reason = t.finish(false).as_openai().to_owned();
    let pieces: Vec<Piece> = without_call_ends(t.drain().collect(), &reason);
    let [start, args] = call(1, "get_weather", "{}");
    assert_eq!(
        pieces,
        [
            Piece::CallStart {
                index: 0,
                id: "up_1".into(),
                name: "get_weather".into()
            },
            Piece::CallArguments {
                index: 0,
                text: "{\"city\":".into()
            },
            Piece::CallArguments {
                index: 0,
                text: "\"Rome\"}".into()
            },
            start,
            args,
        ]
    );
    assert_eq!(reason, "tool_calls");
}

/// The offered tools of a request with `write_file(path: string, content: string,
/// mode: integer, encoding: "utf8" | "latin1")`.
fn writer_tools() -> OfferedTools {
    let body = serde_json::json!({
        "model": "m", "messages": [],
        "tools": [{"type": "function", "function": {"name": "write_file", "parameters": {
            "type": "object", "properties": {"path": {"type": "string"},
            "content": {"type": "string"}, "mode": {"type": "integer"},
            "encoding": {"type": "string", "enum": ["utf8", "latin1"]}}}}}],
    });
    translate(body.to_string().as_bytes(), ProtocolChoice::Tam, "")
        .unwrap()
        .offered
}

/// A streaming translator's pieces after each delta (adjacent arguments of one call
/// and adjacent content joined within a delta), the finish reason and the failure; every
/// call streams from its tool id (`stream_after` 0), as the tests of streaming's rules
/// need (the default is [`a_short_call_goes_out_with_its_block`]'s).
fn run_streaming(
    protocol: ProtocolChoice,
    deltas: &[&str],
    finish: Option<FinishReason>,
) -> (Vec<Vec<Piece>>, String, Option<String>) {
    run_streaming_after(0, protocol, deltas, finish)
}

/// [`run_streaming`] of a reply the server stopped (`finish_reason: "stop"`), naming the
/// stop sequence it stopped at (`Some`) or not.
fn run_stopped(
    deltas: &[&str],
    stopped_at: Option<&str>,
) -> (Vec<Vec<Piece>>, String, Option<String>) {
    let mut t = Translator::new(
        tam::Config::for_protocol(ProtocolChoice::Action),
        true,
        Some(0),
        writer_tools(),
        usize::MAX,
        "t".into(),
    );
    let mut per_delta = Vec::new();
    for delta in deltas {
        t.feed(ModelItem::Text((*delta).to_owned()));
        per_delta.push(t.drain().collect());
    }
    if let Some(sequence) = stopped_at {
        t.feed(ModelItem::StopSequence(sequence.to_owned()));
    }
    t.feed(ModelItem::Finish(FinishReason::Stop));
    let reason = t.finish(false).as_openai().to_owned();
    per_delta.push(t.drain().collect());
    let failure = t.failure().map(|e| e.code().to_owned());
    (per_delta, reason, failure)
}

/// A block whose streamed value was still open when the server stopped without naming
/// the sequence it stopped at: it cannot end there (its call element is open), so it never
/// closed — its text comes back, and the call that streamed is void (an error event).
fn assert_open_value_voids_its_call(text: &str, deltas: &[&str]) {
    let (pieces, reason, failure) = run_stopped(deltas, None);
    let (content, calls) = gathered(&pieces);
    assert_eq!(content, text);
    assert_eq!(calls.len(), 1, "the call streamed");
    assert_eq!(
        (reason.as_str(), failure.as_deref()),
        ("stop", Some("streamed_call_invalid"))
    );
}

/// [`run_streaming`] with calls streaming once a string value is `after` bytes long.
fn run_streaming_after(
    after: usize,
    protocol: ProtocolChoice,
    deltas: &[&str],
    finish: Option<FinishReason>,
) -> (Vec<Vec<Piece>>, String, Option<String>) {
    let mut t = Translator::new(
        tam::Config::for_protocol(protocol),
        true,
        Some(after),
        writer_tools(),
        usize::MAX,
        "t".into(),
    );
    let mut per_delta = Vec::new();
    for delta in deltas {
        t.feed(ModelItem::Text((*delta).to_owned()));
        per_delta.push(t.drain().collect());
    }
    if let Some(finish) = finish {
        t.feed(ModelItem::Finish(finish));
    }
    let reason = t.finish(false).as_openai().to_owned();
    per_delta.push(t.drain().collect());
    let failure = t.failure().map(|e| e.code().to_owned());
    (per_delta, reason, failure)
}

/// Content, and each call's (name, arguments text), of all pieces.
/// No streamed call of a cut reply was closed: the arguments of each are not a JSON value.
fn assert_no_call_closed(calls: &[(String, String)], context: &str) {
    for (_, arguments) in calls {
        assert!(
            serde_json::from_str::<Value>(arguments).is_err(),
            "{context}: never closed: {arguments}"
        );
    }
}

fn gathered(pieces: &[Vec<Piece>]) -> (String, Vec<(String, String)>) {
    let mut content = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    for piece in pieces.iter().flatten() {
        match piece {
            Piece::Content(text) => content.push_str(text),
            Piece::CallStart { index, name, .. } => {
                assert_eq!(*index, calls.len());
                calls.push((name.clone(), String::new()));
            }
            Piece::CallArguments { index, text } => calls[*index].1.push_str(text),
            Piece::Reasoning(_) | Piece::CallEnd { .. } => {}
        }
    }
    (content, calls)
}

/// Streams `text` whole, in 1-char deltas and split at every character boundary:
/// the same content and calls every time; returns them.
fn streams_the_same(protocol: ProtocolChoice, text: &str) -> (String, Vec<(String, String)>) {
    let (whole, reason, failure) = run_streaming(protocol, &[text], None);
    assert_eq!((reason.as_str(), failure), ("tool_calls", None));
    let whole = gathered(&whole);
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    let (pieces, reason, failure) = run_streaming(protocol, &refs, None);
    assert_eq!((reason.as_str(), failure), ("tool_calls", None));
    assert_eq!(gathered(&pieces), whole, "1-char deltas");
    for (at, _) in text.char_indices().skip(1) {
        let (pieces, reason, failure) = run_streaming(protocol, &[&text[..at], &text[at..]], None);
        assert_eq!(
            (reason.as_str(), failure),
            ("tool_calls", None),
            "split at {at}"
        );
        assert_eq!(gathered(&pieces), whole, "split at {at}");
    }
    whole
}

/// How many argument pieces of call 0 went out before delta `upto` (exclusive).
fn argument_pieces_before(pieces: &[Vec<Piece>], upto: usize) -> String {
    pieces[..upto]
        .iter()
        .flatten()
        .filter_map(|p| match p {
            Piece::CallArguments { index: 0, text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

const CODE: &str =
    "fn main() {\n    let v: Vec<u8> = vec![1 & 2];\n    println!(\"<b>{v:?}</b>\");\n}\n";

#[test]
fn tam_string_arguments_stream_before_the_end_marker() {
    let text = format!(
        "Writing.\n<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\npath:「始」src/main.rs「末」\ncontent:「始」{CODE}「末」\nmode:「始」644「末」\n<|[END_TOOL]|>\nDone."
    );
    let (content, calls) = streams_the_same(ProtocolChoice::Tam, &text);
    // The turn ended at the call: `Done.` is not shown.
    assert_eq!(content, "Writing.\n");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "write_file");
    let args: Value = serde_json::from_str(&calls[0].1).unwrap();
    assert_eq!(
        args,
        json!({"path": "src/main.rs", "content": CODE, "mode": 644})
    );

    // Fed in 5-char deltas, the content value goes out in several pieces before the
    // end marker arrives.
    let chars: Vec<char> = text.chars().collect();
    let deltas: Vec<String> = chars.chunks(5).map(|c| c.iter().collect()).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let end = deltas
        .iter()
        .scan(String::new(), |seen, d| {
            seen.push_str(d);
            Some(seen.contains("<|[END_TOOL]"))
        })
        .position(|has| has)
        .unwrap();
    let (pieces, _, _) = run_streaming(ProtocolChoice::Tam, &refs, None);
    let early = argument_pieces_before(&pieces, end);
    assert!(
        early.starts_with(r#"{"path":"src/main.rs","content":"fn main() {\n"#),
        "{early}"
    );
    let early_pieces = pieces[..end]
        .iter()
        .flatten()
        .filter(|p| matches!(p, Piece::CallArguments { .. }))
        .count();
    assert!(
        early_pieces >= 5,
        "{early_pieces} pieces before the end marker"
    );
    // The typed `mode` comes at the close.
    assert!(!early.contains("mode"), "{early}");
}

#[test]
fn action_string_arguments_stream_trimmed_and_cdata_edges_kept() {
    let text = format!(
        "Ok.\n<ACTION>\n  <write_file>\n    <path>\n      src/a &amp; b.rs\n    </path>\n    <content><![CDATA[\n{CODE}]]></content>\n    <mode>644</mode>\n  </write_file>\n</ACTION>"
    );
    let (content, calls) = streams_the_same(ProtocolChoice::Action, &text);
    assert_eq!(content, "Ok.\n");
    let args: Value = serde_json::from_str(&calls[0].1).unwrap();
    assert_eq!(
        args,
        json!({"path": "src/a & b.rs", "content": CODE, "mode": 644})
    );
    // CDATA keeps its leading blanks and its last line break; blank text around it
    // goes.
    let indented = "<ACTION><write_file><content>\n  <![CDATA[  x < y\n  ]]>\n</content><path>p</path></write_file></ACTION>";
    let (_, indented_calls) = streams_the_same(ProtocolChoice::Action, indented);
    let args: Value = serde_json::from_str(&indented_calls[0].1).unwrap();
    assert_eq!(args, json!({"content": "  x < y\n", "path": "p"}));
    // The same through Auto.
    let (_, both) = streams_the_same(ProtocolChoice::Auto, &text);
    assert_eq!(both, calls);
}

#[test]
fn a_block_cut_after_its_call_streamed_finishes_with_length_and_no_call_closes() {
    let text = format!("<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\ncontent:「始」{CODE}");
    let (pieces, reason, failure) =
        run_streaming(ProtocolChoice::Tam, &[&text], Some(FinishReason::Length));
    assert_eq!(reason, "length");
    assert_eq!(failure, None);
    let (content, calls) = gathered(&pieces);
    assert_eq!(content, text, "the cut block's text comes back");
    assert_eq!(calls.len(), 1);
    assert!(
        serde_json::from_str::<Value>(&calls[0].1).is_err(),
        "never closed"
    );
}

/// The same in ACTION, as a real model wrote it: calls streamed one after the other
/// until `max_tokens` cut the block mid-call. A cut, not a stream error: `length`,
/// the block's text, no call completed (the cut ACTION block comes back from the
/// decoder as a block without calls, not as a diagnostic).
#[test]
fn an_action_block_cut_after_its_calls_streamed_finishes_with_length() {
    let call = |mode: u32| {
        format!("<write_file><path>a{mode}.rs</path><content>{CODE}</content></write_file>\n")
    };
    let text = format!("<ACTION>\n{}{}<write_file><path>a", call(1), call(2));
    let (pieces, reason, failure) =
        run_streaming(ProtocolChoice::Action, &[&text], Some(FinishReason::Length));
    assert_eq!(failure, None);
    assert_eq!(reason, "length");
    let (content, calls) = gathered(&pieces);
    assert_eq!(content, text, "the cut block's text comes back");
    assert!(!calls.is_empty());
    assert_no_call_closed(&calls, "action");
}

#[test]
fn a_call_to_a_tool_not_offered_beside_offered_ones_is_text_and_the_others_stay_calls() {
    // BFCL `parallel_140` through `tam serve`: two calls of the offered tool streamed, then
    // calls of tools the model imagined; the whole block was text then, and the streamed
    // calls void (`streamed_call_invalid`). Now the unoffered call is content,
    // the others complete, in every split of the stream.
    for (protocol, text, rendered) in [
        (
            ProtocolChoice::Action,
            "<ACTION><write_file><path>a</path></write_file><rm><p>/</p></rm><write_file><path>b</path></write_file></ACTION>",
            "<ACTION>\n<rm><p>/</p></rm>\n</ACTION>",
        ),
        (
            ProtocolChoice::Tam,
            "<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\npath:「始」a「末」\n\ncommand:「始」rm「末」\np:「始」/「末」\n<|[END_TOOL]|>",
            "<|[REQUEST_TOOL]|>\ncommand:「始」rm「末」\np:「始」/「末」\n<|[END_TOOL]|>",
        ),
    ] {
        let (content, calls) = streams_the_same(protocol, text);
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        let expected: &[&str] = match protocol {
            ProtocolChoice::Action => &["write_file", "write_file"],
            _ => &["write_file"],
        };
        assert_eq!(names, expected, "{protocol}");
        assert_eq!(calls[0].1, r#"{"path":"a"}"#, "{protocol}");
        assert_eq!(content, rendered, "{protocol}");
    }
}

/// A real reply (BFCL `simple_python_30`, ACTION): the model closed its call,
/// wrote the next parameter outside it, and the server stopped at `</ACTION>`. The element
/// it wrote outside the call reads as a call to a tool not offered (`distance`): it comes
/// back as written, its text `300` with it, not re-rendered from arguments it has none of;
/// the call before it stays a call. Whole, in 1-char deltas and at every split.
#[test]
fn an_element_outside_its_call_comes_back_as_written() {
    let text = "<ACTION>\n<write_file><path>a</path></write_file><mode>7</mode>";
    let expected = (
        "<ACTION>\n<mode>7</mode>\n</ACTION>".to_owned(),
        vec![("write_file".to_owned(), r#"{"path":"a"}"#.to_owned())],
    );
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let mut splits: Vec<Vec<&str>> = vec![vec![text], chars.iter().map(String::as_str).collect()];
    for (at, _) in text.char_indices().skip(1) {
        splits.push(vec![&text[..at], &text[at..]]);
    }
    for deltas in splits {
        let (pieces, reason, failure) =
            run_streaming(ProtocolChoice::Action, &deltas, Some(FinishReason::Stop));
        assert_eq!(
            (reason.as_str(), failure),
            ("tool_calls", None),
            "{deltas:?}"
        );
        assert_eq!(gathered(&pieces), expected, "{deltas:?}");
    }
}

#[test]
fn a_streamed_call_its_block_does_not_confirm_ends_in_a_failure() {
    // A block never closed at a normal end: a failure, never a finished call.
    let open = "<ACTION><write_file><path>a</path>";
    let (pieces, reason, failure) = run_streaming(ProtocolChoice::Action, &[open], None);
    assert_eq!(
        (reason.as_str(), failure.as_deref()),
        ("stop", Some("streamed_call_invalid"))
    );
    assert_eq!(gathered(&pieces).0, open);
}

#[test]
fn unoffered_tools_and_non_string_parameters_do_not_stream() {
    let text =
        "<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\nmode:「始」7「末」\n<|[END_TOOL]|>";
    let (pieces, reason, _) = run_streaming(ProtocolChoice::Tam, &[text], None);
    assert_eq!(reason, "tool_calls");
    let (_, calls) = gathered(&pieces);
    assert_eq!(
        calls,
        [("write_file".to_owned(), r#"{"mode":7}"#.to_owned())]
    );
    let other = "<|[REQUEST_TOOL]|>\ncommand:「始」rm「末」\np:「始」/「末」\n<|[END_TOOL]|>";
    let (pieces, reason, failure) = run_streaming(ProtocolChoice::Tam, &[other], None);
    assert_eq!((reason.as_str(), failure), ("stop", None));
    assert_eq!(gathered(&pieces), (other.to_owned(), Vec::new()));
}

/// Each call's arguments read as JSON, to compare as values: key order depends on
/// serde_json's `preserve_order`, which the workspace's feature unification may turn on.
fn as_json(calls: Vec<(String, String)>) -> Vec<(String, Value)> {
    calls
        .into_iter()
        .map(|(name, args)| (name, serde_json::from_str(&args).unwrap()))
        .collect()
}

/// A `write_file` call with `params`, written in TAM and in ACTION, streams the same in
/// every split (no failure, `tool_calls`) and its arguments end as `expected`.
fn write_file_streams_to(params: &[(&str, &str)], expected: &str) {
    let tam: String = params
        .iter()
        .map(|(k, v)| format!("{k}:「始」{v}「末」\n"))
        .collect();
    let action: String = params
        .iter()
        .map(|(k, v)| format!("<{k}>{v}</{k}>"))
        .collect();
    for (protocol, reply) in [
        (
            ProtocolChoice::Tam,
            format!("<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\n{tam}<|[END_TOOL]|>"),
        ),
        (
            ProtocolChoice::Action,
            format!("<ACTION><write_file>{action}</write_file></ACTION>"),
        ),
    ] {
        let (_, calls) = streams_the_same(protocol, &reply);
        // Values held to their end go out with the typed arguments: compared as JSON.
        let calls = as_json(calls);
        assert_eq!(
            calls,
            [(
                "write_file".to_owned(),
                serde_json::from_str::<Value>(expected).unwrap()
            )],
            "{protocol}"
        );
    }
}

#[test]
fn a_quoted_enum_member_ends_as_the_member_without_voiding_the_call() {
    // A model writing Python quotes its strings: `'utf8'` for an enum of strings is the
    // member `utf8` (tool-schema's coercion). Such a value changes at its close, so it does
    // not stream piece by piece: it goes out once, as the member (BFCL `irrelevance_48`
    // through `tam serve` gave `streamed_call_invalid` for `format: 'USD'` before).
    write_file_streams_to(
        &[("path", "a.txt"), ("encoding", "'utf8'")],
        r#"{"path":"a.txt","encoding":"utf8"}"#,
    );
}

/// What the e2e model wrote on BFCL `parallel_multiple_150` and `_160` (ACTION): every
/// string quoted as in Python (`<company_name>'Apple Inc.'</company_name>`). Coercion reads
/// one quoted literal as its text; a streaming value is held while it may still be one, so
/// what streamed is that text, however the reply is split.
#[test]
fn a_string_written_as_one_quoted_literal_streams_as_its_text() {
    write_file_streams_to(
        &[("path", "'a.txt'"), ("content", "\"Monday\"")],
        r#"{"path":"a.txt","content":"Monday"}"#,
    );
    // Text that only starts with a quote, or is more than one quoted part, or goes on to
    // another line, stays as written (and streams once it cannot be one literal).
    write_file_streams_to(
        &[("path", "'90s.txt"), ("content", "'a' and 'b'")],
        r#"{"path":"'90s.txt","content":"'a' and 'b'"}"#,
    );
    write_file_streams_to(
        &[("path", "rock 'n' roll"), ("content", "'first'\nsecond")],
        r#"{"path":"rock 'n' roll","content":"'first'\nsecond"}"#,
    );
}

/// A quoted value held back when the server stopped at `</ACTION>` (and said so): the
/// block closes it and the streamed call ends with the value as coercion reads it. Without
/// the server's word the block cannot end there: no call.
#[test]
fn a_quoted_value_open_when_its_stopped_block_closes_ends_as_its_text() {
    for (text, expected) in [
        (
            "<ACTION>\n<write_file><path>a</path><content>'Apple Inc.'\n",
            r#"{"path":"a","content":"Apple Inc."}"#,
        ),
        (
            "<ACTION>\n<write_file><path>a</path><content>'Apple Inc.\n",
            r#"{"path":"a","content":"'Apple Inc."}"#,
        ),
    ] {
        let splits = text
            .char_indices()
            .skip(1)
            .map(|(at, _)| vec![&text[..at], &text[at..]]);
        for deltas in [vec![text], one_char(text)].into_iter().chain(splits) {
            let (pieces, reason, failure) = run_stopped(&deltas, Some("</ACTION>"));
            let (content, calls) = gathered(&pieces);
            assert_eq!(content, "");
            assert_eq!(calls, [("write_file".to_owned(), expected.to_owned())]);
            assert_eq!((reason.as_str(), failure), ("tool_calls", None));
            assert_open_value_voids_its_call(text, &deltas);
        }
    }
}

/// A reply cut at the token limit while a value is held (it may still be a quoted literal
/// or `None`): the call the model did not finish is never completed, its arguments never
/// become JSON, and the cut block's text comes back, however the reply is split.
#[test]
fn a_reply_cut_while_a_value_is_held_completes_no_call() {
    for (protocol, text) in [
        (
            ProtocolChoice::Action,
            "Writing it.\n<ACTION>\n<write_file><path>a.txt</path><content>'Apple Inc.",
        ),
        (
            ProtocolChoice::Tam,
            "Writing it.\n<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\npath:「始」Non",
        ),
    ] {
        let splits = text
            .char_indices()
            .skip(1)
            .map(|(at, _)| vec![&text[..at], &text[at..]]);
        for deltas in [vec![text], one_char(text)].into_iter().chain(splits) {
            let (pieces, reason, failure) =
                run_streaming(protocol, &deltas, Some(FinishReason::Length));
            assert_eq!((reason.as_str(), failure), ("length", None), "{protocol}");
            let (content, calls) = gathered(&pieces);
            assert!(
                content.ends_with(text.trim_start_matches("Writing it.\n")),
                "{protocol}: {content}"
            );
            assert_no_call_closed(&calls, &protocol.to_string());
        }
    }
}

/// A key written twice in one ACTION call, its first value held (it may be a quoted
/// literal) and its second plain text: the second never streams in its place, so the call
/// completes as the block reads it, however the reply is split.
#[test]
fn a_held_value_written_again_does_not_stream_the_second_time() {
    for first in ["'a'", "a", "None"] {
        let reply = format!(
            "<ACTION><write_file><path>{first}</path><content>x</content><path>b</path></write_file></ACTION>"
        );
        let (_, calls) = streams_the_same(ProtocolChoice::Action, &reply);
        assert_eq!(calls.len(), 1, "{first}");
        assert_eq!(calls[0].0, "write_file");
    }
}

#[test]
fn none_written_for_optional_arguments_leaves_them_out_without_voiding_the_call() {
    // `None` (or `null`) for an optional string or integer leaves the argument out
    // (BFCL `multiple_26`, TAM: `mission: None`). A string value is held while it may
    // still be that word, so nothing of it streamed; text that only begins like it
    // (`Nonesuch`) streams as written.
    write_file_streams_to(
        &[("path", "None"), ("mode", "None"), ("content", "null")],
        r#"{}"#,
    );
    write_file_streams_to(
        &[("path", "Nonesuch"), ("content", "nullable")],
        r#"{"path":"Nonesuch","content":"nullable"}"#,
    );
}

/// A server stopped at `</ACTION>` in a block whose call streamed, and the block, closed
/// by the marker, gives no call (two close tags in a parameter that match nothing:
/// structure gone wrong beyond repair): the block's text comes back as content and the
/// streamed call is void (an error event), never a `tool_calls` finish with arguments that
/// are not JSON. (A parameter merely left open, `<mode>3</write_file>`, is repaired:
/// action-xml's `missing_close_tag`.)
#[test]
fn a_stopped_block_that_gives_no_call_voids_its_streamed_call() {
    let text =
        "<ACTION>\n<write_file><path>a</path><content>x</content><mode>3</a></b></write_file>\n";
    for deltas in [vec![text], one_char(text)] {
        let (pieces, reason, failure) =
            run_streaming(ProtocolChoice::Action, &deltas, Some(FinishReason::Stop));
        let (content, calls) = gathered(&pieces);
        assert_eq!(calls.len(), 1, "the call streamed");
        assert_eq!(content, text);
        assert_eq!(
            (reason.as_str(), failure.as_deref()),
            ("stop", Some("streamed_call_invalid"))
        );
    }
}

/// A string value still streaming when the server stopped at `</ACTION>` and said so: the
/// block, closed by the marker, closes the value, and the streamed call ends with the rest
/// of the value and its quote: the arguments are JSON, the value the block's. Without the
/// server's word the block cannot end there: no call.
#[test]
fn a_value_open_when_its_stopped_block_closes_ends_with_the_block() {
    let text = "<ACTION>\n<write_file><path>a</path><content>fn main() {\n";
    for deltas in [vec![text], one_char(text)] {
        assert_open_value_voids_its_call(text, &deltas);
        let (pieces, reason, failure) = run_stopped(&deltas, Some("</ACTION>"));
        let (content, calls) = gathered(&pieces);
        assert_eq!(content, "");
        assert_eq!(
            calls,
            [(
                "write_file".to_owned(),
                r#"{"path":"a","content":"fn main() {"}"#.to_owned()
            )]
        );
        assert_eq!((reason.as_str(), failure), ("tool_calls", None));
    }
}

fn one_char(text: &str) -> Vec<&str> {
    text.char_indices()
        .map(|(at, c)| &text[at..at + c.len_utf8()])
        .collect()
}

/// A real model's misspelt close tag (recorded on BFCL `simple_python_380`, ACTION): the
/// value `content` closed with another parameter's tag, the call goes on. The decoder
/// reads the value up to that tag (`mismatched_close_tag`); the proxy holds the
/// value's text back from a close tag naming the call's structure, so what streamed is
/// the block's value and the call completes, however the reply is split.
#[test]
fn a_misspelt_close_tag_in_a_streamed_value_completes_the_call() {
    let text = "<ACTION>\n<write_file><path>a.txt</path><content>March 10th, 2023</path><mode>3</mode></write_file>\n";
    let whole = run_streaming(ProtocolChoice::Action, &[text], Some(FinishReason::Stop));
    let expected = (
        String::new(),
        vec![(
            "write_file".to_owned(),
            r#"{"path":"a.txt","content":"March 10th, 2023","mode":3}"#.to_owned(),
        )],
    );
    assert_eq!(gathered(&whole.0), expected);
    assert_eq!((whole.1.as_str(), whole.2), ("tool_calls", None));
    let mut splits = vec![one_char(text)];
    splits.extend(
        text.char_indices()
            .skip(1)
            .map(|(at, _)| vec![&text[..at], &text[at..]]),
    );
    for deltas in splits {
        let (pieces, reason, failure) =
            run_streaming(ProtocolChoice::Action, &deltas, Some(FinishReason::Stop));
        assert_eq!(gathered(&pieces), expected, "{deltas:?}");
        assert_eq!(
            (reason.as_str(), failure),
            ("tool_calls", None),
            "{deltas:?}"
        );
    }
}

/// A value closed with its own tag misspelt, the call going on (recorded on BFCL cases
/// outside the dev set, ACTION: `<DNA_id>XYZ123</dna_id>`, `<_from>New York</from>`). The
/// decoder reads the value up to that tag (`noncanonical_tag`, `mismatched_close_tag`);
/// the proxy holds the value's text back from a close tag naming the value's own key but
/// for case and separators, so what streamed is the block's value and the call completes,
/// however the reply is split (before, the client got `streamed_call_invalid`).
#[test]
fn a_close_tag_naming_the_value_loosely_completes_the_call() {
    for (text, args) in [
        (
            "<ACTION>\n<write_file><path>a.txt</PATH><mode>3</mode></write_file>\n</ACTION>",
            r#"{"path":"a.txt","mode":3}"#,
        ),
        (
            "<ACTION>\n<write_file><path>a.txt</path><content>x = 1</_content><mode>3</mode></write_file>\n</ACTION>",
            r#"{"path":"a.txt","content":"x = 1","mode":3}"#,
        ),
    ] {
        let (content, calls) = streams_the_same(ProtocolChoice::Action, text);
        assert_eq!(content, "", "{text}");
        assert_eq!(
            calls,
            [("write_file".to_owned(), args.to_owned())],
            "{text}"
        );
    }
}

/// Code in a streamed value with close tags of its own (`</div>`) and one naming another
/// parameter (`</path>`, an SVG): the value streams up to that tag, waits, and all of it
/// comes at the value's close tag; the call is the block's.
#[test]
fn a_close_tag_naming_a_parameter_in_code_only_delays_the_rest_of_the_value() {
    let code = "<div>a &lt; b</div>\n<svg><path d=\"M0\"></path></svg>\nend";
    let text = format!(
        "<ACTION><write_file><path>a.html</path><content>{code}</content></write_file></ACTION>"
    );
    let (content, calls) = streams_the_same(ProtocolChoice::Action, &text);
    assert_eq!(content, "");
    let value = "<div>a < b</div>\n<svg><path d=\"M0\"></path></svg>\nend";
    let args = format!(
        r#"{{"path":"a.html","content":{}}}"#,
        serde_json::json!(value)
    );
    assert_eq!(calls, [("write_file".to_owned(), args)]);
    // Fed whole but the close tags: everything before `</path>` streamed at once.
    let at = text.find("</path></svg>").unwrap();
    let (pieces, ..) = run_streaming(
        ProtocolChoice::Action,
        &[&text[..at + 4], &text[at + 4..]],
        None,
    );
    let early = argument_pieces_before(&pieces, 1);
    assert!(early.ends_with(r#"<svg><path d=\"M0\">"#), "{early}");
}

/// The non-streaming translator's content and calls (name, arguments as JSON).
fn whole_reply(
    protocol: ProtocolChoice,
    text: &str,
    finish: FinishReason,
) -> (String, Vec<(String, Value)>) {
    let mut t = Translator::new(
        tam::Config::for_protocol(protocol),
        true,
        None,
        writer_tools(),
        usize::MAX,
        "t".into(),
    );
    t.feed(ModelItem::Text(text.to_owned()));
    t.feed(ModelItem::Finish(finish));
    t.finish(false);
    let pieces: Vec<Piece> = t.drain().collect();
    let (content, calls) = gathered(&[pieces]);
    let calls = calls
        .into_iter()
        .map(|(name, args)| {
            (
                name,
                serde_json::from_str(&args).expect("whole arguments are JSON"),
            )
        })
        .collect();
    (content, calls)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

    /// Whatever the model writes in an ACTION block — code with `<`, `&` and tags, close
    /// tags of other parameters, misspelt or missing close tags — and however the reply
    /// is split, a streamed reply ends in the failure event, or with `length` when it was
    /// cut (a streamed call then stays unfinished, as OpenAI's own), or gives, call for
    /// call, arguments that are a JSON object, and then exactly the non-streaming reply.
    #[test]
    fn a_streamed_reply_is_the_whole_reply_or_a_failure(
        params in proptest::collection::vec((0usize..5, 0usize..9, 0usize..4), 0..4),
        after in proptest::sample::select(vec![0usize, 12, crate::DEFAULT_STREAM_AFTER_BYTES]),
        closed in proptest::prelude::any::<bool>(),
        stop in proptest::prelude::any::<bool>(),
        cuts in proptest::collection::vec(0usize..512, 0..8),
    ) {
        const KEYS: [&str; 5] = ["path", "content", "mode", "encoding", "other"];
        const VALUES: [&str; 9] = [
            "a.txt", "fn f<T>(a: &T) -> bool { a < b && c }", "<div>x</div>", "3",
            "x </path>", "March 10</mode>", "\n  <![CDATA[<b>&</b>]]>\n", "a &amp; b", "utf8",
        ];
        let mut text = String::from("Ok.\n<ACTION>\n<write_file>");
        for (key, value, close) in &params {
            let key = KEYS[*key];
            text.push_str(&format!("<{key}>{}", VALUES[*value]));
            match close {
                0 => {}
                1 => text.push_str("</path>"),
                _ => text.push_str(&format!("</{key}>")),
            }
        }
        text.push_str("</write_file>\n");
        if closed {
            text.push_str("</ACTION>");
        }
        let finish = if stop { FinishReason::Stop } else { FinishReason::Length };
        let whole = whole_reply(ProtocolChoice::Action, &text, finish.clone());
        // Cut at the given offsets (taken within the text, moved back to character
        // boundaries).
        let mut at: Vec<usize> = cuts
            .iter()
            .map(|&c| {
                let mut c = c % (text.len() + 1);
                while !text.is_char_boundary(c) {
                    c -= 1;
                }
                c
            })
            .collect();
        at.push(0);
        at.push(text.len());
        at.sort_unstable();
        at.dedup();
        let deltas: Vec<&str> = at.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        let (pieces, reason, failure) =
            run_streaming_after(after, ProtocolChoice::Action, &deltas, Some(finish));
        // Short values wait for their block: no failure from this model's writing.
        proptest::prop_assert!(
            after < crate::DEFAULT_STREAM_AFTER_BYTES || failure.is_none(),
            "text {:?}",
            text
        );
        if failure.is_none() && reason != "length" {
            let (content, calls) = gathered(&pieces);
            let calls: Vec<(String, Value)> = calls
                .into_iter()
                .map(|(name, args)| {
                    let parsed: Value = serde_json::from_str(&args)
                        .unwrap_or_else(|e| panic!("{args:?} is not JSON ({e}), text {text:?}"));
                    proptest::prop_assert!(parsed.is_object());
                    Ok((name, parsed))
                })
                .collect::<Result<_, _>>()?;
            proptest::prop_assert_eq!(reason == "tool_calls", !calls.is_empty());
            proptest::prop_assert_eq!((content, calls), whole, "text {:?}", text);
        }
    }
}

/// A call naming an offered tool but for ASCII case and the separators `_`, `-` and `.`
/// (`prob_dist.binomial` for an offered `prob_dist_binomial`, recorded on BFCL
/// `parallel_160` in both protocols) is that tool's call, under the offered name;
/// streamed or not, however split.
#[test]
fn a_call_naming_an_offered_tool_loosely_is_that_tools_call() {
    let [start, args] = call(0, "get_weather", r#"{"city":"Rome"}"#);
    let action = "<ACTION><Get.Weather><city>Rome</city></Get.Weather></ACTION>";
    let (pieces, reason) = every_split(ProtocolChoice::Action, action);
    assert_eq!(
        (pieces, reason.as_str()),
        (vec![start.clone(), args.clone()], "tool_calls")
    );
    let tam = "<|[REQUEST_TOOL]|>\ncommand:「始」get-weather「末」\ncity:「始」Rome「末」\n<|[END_TOOL]|>";
    let (pieces, reason) = every_split(ProtocolChoice::Tam, tam);
    assert_eq!((pieces, reason.as_str()), (vec![start, args], "tool_calls"));
    let streamed = "<ACTION><write.file><path>a</path></write.file></ACTION>";
    let (content, calls) = streams_the_same(ProtocolChoice::Action, streamed);
    assert_eq!(content, "");
    assert_eq!(
        calls,
        [("write_file".to_owned(), r#"{"path":"a"}"#.to_owned())]
    );
}

/// What the e2e model wrote on BFCL `parallel_115` (outside the dev set, ACTION): four
/// calls of one tool, the second one's value closed by another parameter's tag and that
/// parameter's value then closed again (`<species1>human</species2>gorilla</species2>`), a
/// block that does not decode. With the default `stream_after_bytes`, no call of short
/// values goes out before its block decodes: the reply is the block's text, no call and
/// no stream error, as the whole reply, however it is split (streaming every call from its
/// tool id, the first call went out and the client got `streamed_call_invalid`).
#[test]
fn a_short_call_goes_out_with_its_block() {
    let text = "<ACTION>\n<write_file><path>human</path><content>chimpanzee</content></write_file>\n<write_file><path>human</content>gorilla</content></write_file>\n<write_file><path>human</content>gorilla</content></write_file>\n</ACTION>";
    let whole = whole_reply(ProtocolChoice::Action, text, FinishReason::Stop);
    assert_eq!(
        whole,
        (text.to_owned(), Vec::new()),
        "the block does not decode"
    );
    let after = crate::DEFAULT_STREAM_AFTER_BYTES;
    let mut splits = vec![vec![text], one_char(text)];
    splits.extend(
        text.char_indices()
            .skip(1)
            .map(|(at, _)| vec![&text[..at], &text[at..]]),
    );
    for deltas in &splits {
        let (pieces, reason, failure) = run_streaming_after(
            after,
            ProtocolChoice::Action,
            deltas,
            Some(FinishReason::Stop),
        );
        assert_eq!((reason.as_str(), failure), ("stop", None), "{deltas:?}");
        assert_eq!(
            gathered(&pieces),
            (text.to_owned(), Vec::new()),
            "{deltas:?}"
        );
    }
    let (pieces, _, failure) =
        run_streaming(ProtocolChoice::Action, &[text], Some(FinishReason::Stop));
    assert_eq!(failure.as_deref(), Some("streamed_call_invalid"));
    assert!(!gathered(&pieces).1.is_empty());
    // A clean block of short calls: they go out at its close, typed, in block order.
    let clean = "<ACTION><write_file><path>a</path><mode>3</mode></write_file><write_file><path>b</path></write_file></ACTION>";
    let (pieces, reason, failure) =
        run_streaming_after(after, ProtocolChoice::Action, &one_char(clean), None);
    assert_eq!((reason.as_str(), failure), ("tool_calls", None));
    let last = pieces.len() - 1;
    let before_close = clean.len() - "</ACTION>".len() + 1;
    assert!(
        pieces[..before_close].iter().all(Vec::is_empty),
        "nothing before the block closes: {pieces:?}"
    );
    let (content, calls) = gathered(&pieces[before_close..=last]);
    assert_eq!(content, "");
    let calls = as_json(calls);
    assert_eq!(
        calls,
        [
            ("write_file".to_owned(), json!({"path": "a", "mode": 3})),
            ("write_file".to_owned(), json!({"path": "b"}))
        ]
    );
}

/// A string value that grows to `stream_after_bytes` streams: its call's first chunk goes
/// out then (after the first chunks of the block's calls before it, so indexes follow the
/// block), and the value's pieces follow while the block is written; the calls complete
/// at the close with their other (typed) arguments, in TAM and in ACTION, however split.
#[test]
fn a_value_that_grows_long_streams_its_call_and_the_calls_before_it() {
    let long = CODE.repeat(4);
    assert!(long.len() > 256);
    for (protocol, text) in [
        (
            ProtocolChoice::Action,
            format!(
                "<ACTION><write_file><path>a</path></write_file><write_file><path>b</path><content>{}</content><mode>7</mode></write_file></ACTION>",
                long.replace('&', "&amp;").replace('<', "&lt;")
            ),
        ),
        (
            ProtocolChoice::Tam,
            format!(
                "<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\npath:「始」b「末」\ncontent:「始」{long}「末」\nmode:「始」7「末」\n<|[END_TOOL]|>"
            ),
        ),
    ] {
        let one = one_char(&text);
        let (pieces, reason, failure) = run_streaming_after(256, protocol, &one, None);
        assert_eq!(
            (reason.as_str(), failure),
            ("tool_calls", None),
            "{protocol}"
        );
        let (_, calls) = gathered(&pieces);
        let mut expected = Vec::new();
        if protocol == ProtocolChoice::Action {
            expected.push(json!({"path": "a"}));
        }
        // ACTION's edge rules drop the value's last line break.
        let value = match protocol {
            ProtocolChoice::Action => long.trim_end(),
            _ => long.as_str(),
        };
        expected.push(json!({"path": "b", "content": value, "mode": 7}));
        let got: Vec<Value> = calls
            .iter()
            .map(|(_, a)| serde_json::from_str(a).unwrap())
            .collect();
        assert_eq!(got, expected, "{protocol}");
        // Before the value's close tag: every call's first chunk and most of the value.
        let close = match protocol {
            ProtocolChoice::Action => "</content>",
            _ => "「末」\nmode",
        };
        let upto = text[..text.find(close).unwrap()].chars().count();
        let starts = pieces[..upto]
            .iter()
            .flatten()
            .filter(|p| matches!(p, Piece::CallStart { .. }))
            .count();
        assert_eq!(starts, expected.len(), "{protocol}");
        let last = expected.len() - 1;
        let early: String = pieces[..upto]
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Piece::CallArguments { index, text } if *index == last => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            early.starts_with(r#"{"content":"fn main"#),
            "{protocol}: {early}"
        );
        assert!(early.len() > 300, "{protocol}: {early}");
        // Fed whole: the same.
        let (whole, ..) = run_streaming_after(256, protocol, &[&text], None);
        assert_eq!(gathered(&whole), gathered(&pieces), "{protocol}");
    }
}
