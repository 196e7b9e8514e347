//! Argument streaming and the start of a block's body: a block streams only when its body
//! begins with an element (blanks and a code fence line aside), the rule that makes a
//! block the stream ends in a prose mention. Decided on the same bytes whatever the
//! deltas; a prose mention never streams a call. Also: a block past `max_block_bytes`
//! streams the same prefix every way.

mod common;

use action_xml::{Config, Decoder, Event, codes};
use common::Action;

fn streamed<'e>(events: &'e [Event<'static>]) -> Vec<&'e Event<'static>> {
    events.iter().filter(|e| common::is_streamed(e)).collect()
}

fn tools_started(events: &[Event<'static>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CallStart { tool, .. } => Some(tool.clone()),
            _ => None,
        })
        .collect()
}

/// The events of `deltas` fed one after the other, with how many events had come out
/// before the last delta was fed.
fn fed(deltas: &[&str]) -> (Vec<Event<'static>>, usize) {
    let mut decoder = Decoder::new(Config::default());
    let mut events = Vec::new();
    let mut before_last = 0;
    for (i, d) in deltas.iter().enumerate() {
        if i + 1 == deltas.len() {
            before_last = events.len();
        }
        decoder.feed(d, |e| events.push(e.into_owned()));
    }
    decoder.finish(|e| events.push(e.into_owned()));
    (events, before_last)
}

/// The minimal input proptest found (`markup_heavy_bytes`): prose, then a comment region,
/// then an element, and the stream ends. Fed char by char the comment used to hide the
/// prose from the streamer, which then streamed `<t>` as a call before the block turned
/// out to be a prose mention; fed whole, nothing streamed.
#[test]
fn prose_then_comment_then_element_streams_nothing_in_any_split() {
    let input = "<action >ION><!----><t>";
    let events = common::decode(input);
    assert!(streamed(&events).is_empty(), "{events:#?}");
    assert_eq!(common::codes(&events), [codes::MARKER_IN_PROSE.as_str()]);
    assert_eq!(common::text(&events), input);
    assert!(common::blocks(&events).is_empty());
}

/// The same shape with CDATA, and with the comment first.
#[test]
fn a_body_beginning_with_a_region_streams_nothing() {
    for input in [
        "<ACTION>x<![CDATA[y]]><t><p>v</p></t>",
        "<ACTION><!-- plan --><t><p>v</p></t>",
        "<ACTION>\n<![CDATA[x]]>\n<t><p>v</p></t>",
    ] {
        let events = common::decode(input);
        assert!(streamed(&events).is_empty(), "{input}: {events:#?}");
        assert_eq!(
            common::codes(&events),
            [codes::MARKER_IN_PROSE.as_str()],
            "{input}"
        );
        assert_eq!(common::text(&events), input);
    }
}

/// Closed, such a block runs (the close tag makes it a block) but streamed nothing: the
/// start of its body was decided before the close tag came.
#[test]
fn a_closed_block_beginning_with_a_comment_runs_without_streaming() {
    let input = "<ACTION><!-- read first --><read_file><path>a.rs</path></read_file></ACTION>";
    let events = common::decode(input);
    assert!(streamed(&events).is_empty(), "{events:#?}");
    let blocks = common::blocks(&events);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].calls[0].get_str("path"), Some("a.rs"));
}

/// A prose mention with a tag in it never streams a call, however it is split.
#[test]
fn a_prose_mention_with_a_tag_never_streams() {
    let input = "I write an <ACTION> block with a tag such as <DeleteAllFiles> inside it.";
    let events = common::decode(input);
    assert!(tools_started(&events).is_empty(), "{events:#?}");
    assert_eq!(common::codes(&events), [codes::MARKER_IN_PROSE.as_str()]);
    assert_eq!(common::text(&events), input);
}

/// Blanks and one code fence line before the first element: the block streams, and does
/// so before it closes.
#[test]
fn a_fence_line_before_the_first_element_still_streams() {
    let input = "<ACTION>\n  ```xml\n\n <t><p>a &amp; b</p></t>\n```\n</ACTION>";
    let events = common::decode(input);
    assert_eq!(tools_started(&events), ["t"]);
    let (events, before_last) = fed(&[
        "<ACTION>\n  ```xml\n\n <t><p>a &amp; b</p></t>\n```\n",
        "</ACTION>",
    ]);
    assert!(
        events[..before_last]
            .iter()
            .any(|e| matches!(e, Event::CallEnd { .. })),
        "{events:#?}"
    );
}

/// Not a fence line (no line break before the element, or a second fence line): the body
/// does not begin with an element; at the end of the stream it is a prose mention, and
/// nothing streamed.
#[test]
fn what_is_not_a_leading_fence_line_streams_nothing() {
    for input in [
        "<ACTION>```xml<t><p>v</p></t>",
        "<ACTION>\n```xml\n```\n<t><p>v</p></t>",
        "<ACTION>\n```xml x y\n<t><p>v</p></t>",
        "<ACTION>~<t><p>v</p></t>",
    ] {
        let events = common::decode(input);
        assert!(streamed(&events).is_empty(), "{input}: {events:#?}");
        assert_eq!(
            common::codes(&events),
            [codes::MARKER_IN_PROSE.as_str()],
            "{input}"
        );
    }
}

/// A `<` at the end of a delta decides nothing: the next byte says whether it begins an
/// element (`<t>`) or not (`< t>`, `<!--`, `</`).
#[test]
fn a_lt_at_the_end_of_a_delta_waits_for_the_next_byte() {
    let (events, before_last) = fed(&["<ACTION>\n<", "t><p>x</p>", "</t>"]);
    assert!(
        events[..before_last]
            .iter()
            .any(|e| matches!(e, Event::CallStart { tool, .. } if tool == "t")),
        "{events:#?}"
    );
    for second in [
        " t><p>x</p></t>",
        "!-- c --><t><p>x</p></t>",
        "/x><t><p>x</p></t>",
    ] {
        let (events, _) = fed(&["<ACTION>\n<", second]);
        assert!(streamed(&events).is_empty(), "{second}: {events:#?}");
    }
}

/// A block that overflows `max_block_bytes` streams what lies within the limit, the same
/// whatever the deltas (it used to depend on the split: fed whole, the overflowing push
/// reported no progress), then its block with `block_too_large` and no call.
#[test]
fn an_overflowing_block_streams_the_same_prefix_every_way() {
    let mut config = Config::default();
    config.max_block_bytes = 56;
    let input = "<ACTION><write><path>a.rs</path><content><![CDATA[fn main() { a < b && c }]]></content></write></ACTION>";
    let events = tam_testkit::decode_all_ways(Action(config), input.as_bytes());
    assert_eq!(tools_started(&events), ["write"]);
    let pieces: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ParamText { text, span, .. } => {
                assert!(span.end <= 56, "{span:?} streamed past the limit");
                Some(&**text)
            }
            _ => None,
        })
        .collect();
    assert_eq!(pieces, "a.rsfn mai");
    assert!(!events.iter().any(|e| matches!(e, Event::CallEnd { .. })));
    let blocks = common::blocks(&events);
    assert!(blocks[0].calls.is_empty());
    assert_eq!(common::codes(&events), [codes::BLOCK_TOO_LARGE.as_str()]);
}

/// What Qwen2.5-Coder-1.5B wrote in `cargo xtask e2e`'s ACTION proof on a machine without
/// AVX-512: the call element alone, no `<ACTION>` around it. For a decoder given no tool
/// names everything outside a block is prose: the reply is text, every way it is split, and
/// nothing streams or runs.
#[test]
fn a_call_element_without_action_around_it_is_text_and_runs_nothing() {
    let reply = "<GetPlayerInfo>\n  <player_id>player123</player_id>\n</GetPlayerInfo>";
    let events = common::decode(reply);
    assert_eq!(common::text(&events), reply);
    assert!(common::blocks(&events).is_empty());
    assert!(streamed(&events).is_empty());
    assert!(tools_started(&events).is_empty());
}
