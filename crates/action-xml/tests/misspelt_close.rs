//! A misspelt close tag (SPEC §3 repairs, `mismatched_close_tag`): a real model writes a
//! parameter's value, closes it with another element's tag, and goes on with the call.
//! Recorded from Qwen2.5-Coder-1.5B-Instruct on BFCL (`simple_python_380`,
//! `multiple_160`, `parallel_multiple_170`, ACTION through `tam serve`): before the
//! repair each block was malformed, and no call ran.

mod common;

use action_xml::{ActionBlock, codes};
use serde_json::json;

/// The one block of `input`, decoded every way (whole, char by char, every prefix, random
/// splits: the same events each time).
fn block(input: &str) -> ActionBlock {
    let events = common::decode(input);
    let blocks = common::blocks(&events);
    assert_eq!(blocks.len(), 1);
    blocks[0].clone()
}

fn warned(block: &ActionBlock) -> usize {
    block
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::MISMATCHED_CLOSE_TAG)
        .count()
}

#[test]
fn a_value_closed_by_another_parameters_tag_ends_there() {
    let b = block(
        "<ACTION>\n<hotel_booking><location>New York</location><room_type>single</room_type><duration>3</duration><start_date>March 10th, 2023</room_type><preferences><item>pet friendly</item></preferences></hotel_booking>\n</ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(
        serde_json::Value::Object(b.calls[0].args.clone()),
        json!({"location": "New York", "room_type": "single", "duration": "3",
               "start_date": "March 10th, 2023", "preferences": ["pet friendly"]})
    );
    assert_eq!(b.calls[0].source("start_date"), Some("March 10th, 2023"));
}

#[test]
fn a_misspelt_close_tag_then_the_calls_close_tag() {
    let b = block(
        "<ACTION>\n<create_player_profile><player_name>DragonSlayer</player_name><class_type>Warrior</class_type><starting_level>5</class_type></create_player_profile>\n<concert_find_nearby><location>New York, NY</location><genre>Rock</genre></concert_find_nearby>\n</ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 1);
    let tools: Vec<&str> = b.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["create_player_profile", "concert_find_nearby"]);
    assert_eq!(b.calls[0].get_str("starting_level"), Some("5"));
}

#[test]
fn text_after_the_misspelt_tag_is_stray_text_of_the_call() {
    let b = block(
        "<ACTION>\n<get_sculpture_info><artist_name>James Plensa</detail>true</get_sculpture_info>\n</ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(b.calls[0].get_str("artist_name"), Some("James Plensa"));
    assert!(b.diagnostics.iter().any(|d| d.code == codes::STRAY_TEXT));
}

/// Code with a close tag that matches nothing, in a value that closes properly: text, as
/// before (`unescaped_lt`), no `mismatched_close_tag`.
#[test]
fn an_unmatched_close_tag_in_a_value_that_closes_is_text() {
    let b = block(
        "<ACTION><write_file><path>a.js</path><content>let s = \"</div>\";</content></write_file></ACTION>",
    );
    assert!(!b.has_errors(), "{:?}", b.diagnostics);
    assert_eq!(warned(&b), 0);
    assert_eq!(b.calls[0].get_str("content"), Some("let s = \"</div>\";"));
}

/// Two close tags that match nothing, then the call's: which one was meant is a guess, so
/// no repair; the block stays malformed and nothing runs.
#[test]
fn two_unmatched_close_tags_are_no_repair() {
    let b = block("<ACTION><t><a>x</b>y</c></t></ACTION>");
    assert!(b.calls.is_empty());
    assert_eq!(warned(&b), 0);
    assert!(b.diagnostics.iter().any(|d| d.code == codes::MALFORMED_XML));
}

/// A block the stream ended in without `</ACTION>`: the repair applies the same, and the
/// call, closed, runs (the missing `</ACTION>` repair).
#[test]
fn the_repair_applies_at_the_end_of_the_stream() {
    let b = block("<ACTION><t><a>x</b></t>");
    assert_eq!(warned(&b), 1);
    assert_eq!(b.calls.len(), 1);
    assert_eq!(b.calls[0].get_str("a"), Some("x"));
}
