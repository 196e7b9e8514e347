//! A block without chain numbers that repeats a key holds several calls (a
//! second `command`, or a parameter key the current call already has, starts one), warning
//! `implicit_call`; in a chained block a repeated key is a duplicate (the last wins).
//!
//! Every case is decoded every way (whole, `&str`, char by char, byte by byte, random
//! splits, every prefix + rest: `tam_testkit::decode_all_ways`), with argument streaming
//! off and on, and the early events are checked against the block: each call announced by
//! its `CommandSeen`, each parameter streamed after its call's. Generated blocks are
//! compared with a naive oracle that re-scans each call's keys.

mod common;

use proptest::prelude::*;
use tam_parse::{Block, Code, Config, Event, Span, canonical_key};

/// A call as (number, tool, [(key, value)]).
type Flat = (u64, String, Vec<(String, String)>);

/// The events of `input` decoded every way, argument streaming off then on; asserts that
/// both give the same blocks and top-level diagnostics, and checks the early events.
fn decode(input: &str) -> Vec<Event<'static>> {
    let off = common::decode_str(input, Config::default());
    let on = common::decode_str(input, Config::default().with_param_events(true));
    let lasting = |events: &[Event<'static>]| -> Vec<Event<'static>> {
        events
            .iter()
            .filter(|e| {
                !matches!(
                    e,
                    Event::ParamStart { .. } | Event::ParamText { .. } | Event::ParamEnd { .. }
                )
            })
            .cloned()
            .collect()
    };
    assert_eq!(
        lasting(&off),
        lasting(&on),
        "argument streaming changed other events"
    );
    check_announced(&off);
    check_announced(&on);
    on
}

fn blocks(events: &[Event<'static>]) -> Vec<Block> {
    common::blocks(events).into_iter().cloned().collect()
}

fn flat(block: &Block) -> Vec<Flat> {
    block
        .calls
        .iter()
        .map(|c| {
            (
                c.index,
                c.tool.to_string(),
                c.params
                    .iter()
                    .map(|p| (p.key.to_string(), p.value.to_string()))
                    .collect(),
            )
        })
        .collect()
}

fn codes(block: &Block) -> Vec<(&'static str, Span)> {
    block
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.span))
        .collect()
}

fn call(index: u64, tool: &str, params: &[(&str, &str)]) -> Flat {
    (
        index,
        tool.to_owned(),
        params
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

/// The span of the `n`th occurrence (from 0) of `needle` in `input`, as a stream span.
fn nth(input: &str, needle: &str, n: usize) -> Span {
    let at = input
        .match_indices(needle)
        .nth(n)
        .unwrap_or_else(|| panic!("{needle:?} #{n} not in the input"))
        .0;
    Span::new(at, at + needle.len())
}

/// What a UI reading the early events of a closed block without chain numbers can rely
/// on: the block's calls were each announced by one `CommandSeen` with their number and
/// tool, in order, and every parameter's `ParamStart` came after the `CommandSeen` of its
/// call and before any later one (parameters written before the first command: before any
/// `CommandSeen`, in call 0). Chained blocks are skipped (their calls are decided at the
/// block end).
fn check_announced(events: &[Event<'static>]) {
    let mut seen: Vec<(u64, String)> = Vec::new();
    let mut streamed: Vec<(Span, Option<u64>)> = Vec::new();
    let mut started: Option<Option<u64>> = None;
    for e in events {
        match e {
            Event::BlockStart { .. } => {
                seen.clear();
                streamed.clear();
            }
            Event::CommandSeen { call, tool, .. } => seen.push((*call, tool.to_string())),
            Event::ParamStart { .. } => started = Some(seen.last().map(|(c, _)| *c)),
            Event::ParamEnd { span } => {
                let call = started.take().expect("ParamEnd without ParamStart");
                streamed.push((*span, call));
            }
            Event::Block(b) => {
                let chained = b.raw.lines().any(|line| {
                    let key = line.split([':', '：']).next().unwrap_or("").trim();
                    let canonical = canonical_key(key);
                    canonical.len() > "command".len()
                        && canonical.starts_with("command")
                        && canonical["command".len()..]
                            .bytes()
                            .all(|b| b.is_ascii_digit())
                });
                if chained {
                    continue;
                }
                let calls: Vec<(u64, String)> = b
                    .calls
                    .iter()
                    .map(|c| (c.index, c.tool.to_string()))
                    .collect();
                assert_eq!(seen, calls, "CommandSeen events against the block's calls");
                let with_events = !streamed.is_empty();
                for c in &b.calls {
                    for p in &c.params {
                        let Some((_, call)) = streamed.iter().find(|(s, _)| *s == p.span) else {
                            assert!(!with_events, "parameter {:?} was not streamed", p.key);
                            continue;
                        };
                        let expected = if c.index == 0 && call.is_none() {
                            None
                        } else {
                            Some(c.index)
                        };
                        assert_eq!(
                            *call, expected,
                            "parameter {:?} streamed in another call",
                            p.key
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn one_tool_listed_twice_is_two_calls() {
    let input = "<|[REQUEST_TOOL]|>\ncommand:「始」spotify_play「末」\nartist:「始」Taylor Swift「末」\nduration:「始」20「末」\nartist:「始」Maroon 5「末」\nduration:「始」15「末」\n<|[END_TOOL]|>";
    let events = decode(input);
    let b = &blocks(&events)[0];
    assert_eq!(
        flat(b),
        vec![
            call(
                0,
                "spotify_play",
                &[("artist", "Taylor Swift"), ("duration", "20")]
            ),
            call(
                1,
                "spotify_play",
                &[("artist", "Maroon 5"), ("duration", "15")]
            ),
        ]
    );
    // The second call's span is the command entry that names its tool.
    assert_eq!(b.calls[0].span, b.calls[1].span);
    assert_eq!(
        codes(b),
        vec![(Code::IMPLICIT_CALL.as_str(), nth(input, "artist", 1))]
    );
    assert!(!b.has_errors());
}

#[test]
fn a_second_command_is_a_call_of_its_tool() {
    let input = "<|[REQUEST_TOOL]|>command:「始」A「末」 x:「始」1「末」 command:「始」B「末」 y:「始」2「末」<|[END_TOOL]|>";
    let b = &blocks(&decode(input))[0];
    assert_eq!(
        flat(b),
        vec![call(0, "A", &[("x", "1")]), call(1, "B", &[("y", "2")])]
    );
    assert_eq!(codes(b), vec![("implicit_call", nth(input, "command", 1))]);
}

#[test]
fn repeated_commands_without_parameters() {
    let input = "<|[REQUEST_TOOL]|>\ncommand:「始」Now「末」\nCOMMAND:「始」 Now 「末」\ncommand:「始」Later「末」\n<|[END_TOOL]|>";
    let b = &blocks(&decode(input))[0];
    assert_eq!(
        flat(b),
        vec![
            call(0, "Now", &[]),
            call(1, "Now", &[]),
            call(2, "Later", &[])
        ]
    );
    assert_eq!(
        codes(b),
        vec![
            ("implicit_call", nth(input, "COMMAND", 0)),
            ("implicit_call", nth(input, "command", 1)),
        ]
    );
}

#[test]
fn a_chained_block_keeps_the_last_value() {
    let input = "<|[REQUEST_TOOL]|>\ncommand1:「始」W「末」\npath1:「始」/a「末」\nPath_1:「始」/b「末」\ncommand2:「始」R「末」\npath2:「始」/c「末」\n<|[END_TOOL]|>";
    let b = &blocks(&decode(input))[0];
    assert_eq!(
        flat(b),
        vec![
            call(1, "W", &[("Path", "/b")]),
            call(2, "R", &[("path", "/c")])
        ]
    );
    assert_eq!(codes(b).len(), 1);
    assert_eq!(b.diagnostics[0].code, Code::DUPLICATE_PARAMETER);
    assert_eq!(b.diagnostics[0].span.start, nth(input, "Path_1", 0).start);
}

#[test]
fn a_chain_number_read_late_makes_the_block_chained() {
    let input = "<|[REQUEST_TOOL]|>\ncommand:「始」A「末」\nx:「始」1「末」\nx:「始」2「末」\ncommand1:「始」B「末」\n<|[END_TOOL]|>";
    let b = &blocks(&decode(input))[0];
    assert_eq!(
        flat(b),
        vec![call(0, "A", &[("x", "2")]), call(1, "B", &[])]
    );
    assert_eq!(codes(b)[0].0, "duplicate_parameter");
}

#[test]
fn prose_like_values_and_cjk() {
    let input = "Fixing both: `a < b && c > d`.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Write「末」\npath:「始」src/lib.rs「末」\ncontent:「始」fn lt<T: Ord>(a: &T, b: &T) -> bool { a < b && b > a }\n「末」\npath:「始」docs/说明.md「末」\ncontent:「始」<b>粗体</b> &amp; 「引用」：代码\n「末」\n<|[END_TOOL]|>\n完成。";
    let events = decode(input);
    let b = &blocks(&events)[0];
    assert_eq!(
        flat(b),
        vec![
            call(
                0,
                "File.Write",
                &[
                    ("path", "src/lib.rs"),
                    (
                        "content",
                        "fn lt<T: Ord>(a: &T, b: &T) -> bool { a < b && b > a }\n"
                    )
                ]
            ),
            call(
                1,
                "File.Write",
                &[
                    ("path", "docs/说明.md"),
                    ("content", "<b>粗体</b> &amp; 「引用」：代码\n")
                ]
            ),
        ]
    );
    assert_eq!(codes(b), vec![("implicit_call", nth(input, "path", 1))]);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(&**text),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Fixing both: `a < b && c > d`.\n\n完成。");
}

#[test]
fn a_block_cut_before_its_end_yields_no_call() {
    let input = "Songs.\n<|[REQUEST_TOOL]|>\ncommand:「始」play「末」\nartist:「始」A「末」\nartist:「始」B「末」\n";
    for events in [
        decode(input),
        common::decode_all_ways_cut(input.as_bytes(), Config::default().with_param_events(true)),
    ] {
        assert!(blocks(&events).is_empty());
        let Some(Event::Diagnostic(d)) = events.last() else {
            panic!("no diagnostic: {events:?}");
        };
        assert_eq!(d.code, Code::UNTERMINATED_BLOCK);
        // The second call was announced, and is superseded with the block.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::CommandSeen { call: 1, .. }))
        );
    }
}

#[test]
fn parameters_before_the_command_belong_to_the_first_call() {
    let input = "<|[REQUEST_TOOL]|>\ncity:「始」Paris「末」\nunit:「始」F「末」\nunit:「始」C「末」\ncommand:「始」Weather.Get「末」\ndays:「始」3「末」\ncity:「始」Rome「末」\n<|[END_TOOL]|>";
    let b = &blocks(&decode(input))[0];
    assert_eq!(
        flat(b),
        vec![
            call(
                0,
                "Weather.Get",
                &[("city", "Paris"), ("unit", "C"), ("days", "3")]
            ),
            call(1, "Weather.Get", &[("city", "Rome")]),
        ]
    );
    assert_eq!(
        codes(b)
            .iter()
            .map(|(code, span)| (*code, span.start))
            .collect::<Vec<_>>(),
        vec![
            ("duplicate_parameter", nth(input, "unit", 1).start),
            ("implicit_call", nth(input, "city", 1).start),
        ]
    );
}

#[test]
fn vcp_blocks_stay_one_call() {
    let input = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」S「末」\nq:「始」a「末」\nq:「始」b「末」\n<<<[END_TOOL_REQUEST]>>>";
    let events = common::decode_str(
        input,
        Config::with_dialect(tam_parse::Dialect::Vcp).with_param_events(true),
    );
    let b = &blocks(&events)[0];
    assert_eq!(flat(b), vec![call(0, "S", &[("q", "b")])]);
    assert_eq!(codes(b)[0].0, "duplicate_parameter");
}

/// The rule for a block without chain numbers (docs/protocol/tam.md §5.2), written the
/// naive way: each parameter looks through its call's keys.
fn oracle(entries: &[(String, String)]) -> Vec<Flat> {
    let mut calls: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut commanded = false;
    for (key, value) in entries {
        if calls.is_empty() {
            calls.push((String::new(), Vec::new()));
        }
        if canonical_key(key) == "command" {
            if commanded {
                calls.push((value.clone(), Vec::new()));
            } else if let Some(first) = calls.first_mut() {
                first.0 = value.clone();
            }
            commanded = true;
            continue;
        }
        let current = calls.last_mut().expect("a call");
        let had = current
            .1
            .iter()
            .position(|(k, _)| canonical_key(k) == canonical_key(key));
        match had {
            Some(_) if commanded => {
                let tool = current.0.clone();
                calls.push((tool, vec![(key.clone(), value.clone())]));
            }
            Some(i) => current.1[i] = (key.clone(), value.clone()),
            None => current.1.push((key.clone(), value.clone())),
        }
    }
    if !commanded {
        return Vec::new();
    }
    calls
        .into_iter()
        .enumerate()
        .filter(|(_, (tool, _))| !tool.trim().is_empty())
        .map(|(i, (tool, params))| (i as u64, tool.trim().to_owned(), params))
        .collect()
}

fn entry() -> impl Strategy<Value = (String, String, bool)> {
    let command = (
        prop::sample::select(vec!["command", "Command", "COM_MAND"]),
        prop::sample::select(vec!["spotify_play", " Weather.Get\n", "工具.查询", "  "]),
    );
    let parameter = (
        prop::sample::select(vec![
            "artist",
            "ARTIST",
            "duration",
            "du_ration",
            "x",
            "x-1",
            "路径",
        ]),
        prop::collection::vec(
            prop::sample::select(vec![
                "Taylor Swift",
                "20",
                "a < b && c > d",
                "<b>&amp;</b>",
                "fn f<T>() {}",
                "文字",
                "🙂",
                "「引用」",
                "\n",
                " ",
            ]),
            0..4,
        )
        .prop_map(|v| v.concat()),
    );
    (
        prop_oneof![
            1 => command.prop_map(|(k, v)| (k.to_owned(), v.to_owned())),
            3 => parameter.prop_map(|(k, v)| (k.to_owned(), v)),
        ],
        any::<bool>(),
    )
        .prop_map(|((k, v), bare)| (k, v, bare))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Generated blocks without chain numbers (keys repeated in every canonical spelling,
    /// values with markup, code and CJK, some written between bare brackets): the calls
    /// are the oracle's, however the block is fed, and the early events agree with them.
    #[test]
    fn implicit_calls_match_the_oracle(
        entries in prop::collection::vec(entry(), 0..10),
        before in prop::sample::select(vec!["", "Sure.\n", "a < b & 文字 "]),
        separator in prop::sample::select(vec!["\n", " ", "\n# next\n"]),
    ) {
        let mut input = format!("{before}<|[REQUEST_TOOL]|>\n");
        for (key, value, bare) in &entries {
            // A bare value runs to the last 」 of its line: only single-line values without
            // corner brackets or edge blanks are written bare, each on its own line.
            if *bare && !value.contains(['\n', '「', '」']) && !value.is_empty() && value.trim() == value {
                input.push_str(&format!("{key}:「{value}」\n"));
            } else {
                input.push_str(&format!("{key}:「始」{value}「末」{separator}"));
            }
        }
        input.push_str("<|[END_TOOL]|>\nDone.");
        let events = decode(&input);
        let found = blocks(&events);
        if entries.is_empty() {
            // A block that holds no entry is prose.
            prop_assert_eq!(found.len(), 0);
            return Ok(());
        }
        prop_assert_eq!(found.len(), 1);
        let pairs: Vec<(String, String)> =
            entries.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(flat(&found[0]), oracle(&pairs));
    }
}
