//! A closed `<ACTION>` block with no element between its tags (`Write <ACTION> to start a
//! block and </ACTION> to end it.`) is a mention of the tags in prose: warning
//! `marker_in_prose`, then its bytes as text; it takes no block index and nothing of it
//! runs or streams. A body that holds an element stays a block. Every input is decoded
//! every way (whole, char by char, byte by byte, random splits, every prefix + rest) by
//! `action_xml::Decoder` and by the front door `tam::Decoder` for ACTION and for both
//! protocols.

mod common;

use action_xml::{ActionBlock, codes};
use common::{Seen, decode_action, decode_front};
use tam::ProtocolChoice;

/// `input` decoded every way by `action_xml::Decoder` and by `tam::Decoder` (ACTION, and
/// both protocols); all must see the same (text, blocks, diagnostics outside blocks, in
/// order), which is returned with whether argument events streamed.
fn decode(input: &str) -> (Vec<Seen>, bool) {
    let seen = decode_action(input);
    for choice in [ProtocolChoice::Action, ProtocolChoice::Auto] {
        let front = decode_front(input, choice);
        assert_eq!(
            front.seen, seen.seen,
            "tam::Decoder ({choice}) on {input:?}"
        );
        assert_eq!(
            front.streamed, seen.streamed,
            "tam::Decoder ({choice}) on {input:?}"
        );
    }
    (seen.seen, seen.streamed)
}

/// `input` is prose whose mentions of `<ACTION>` start at `tags`: for each, warning
/// `marker_in_prose` at the tag, and all of the input comes out as text, in order.
fn assert_prose(input: &str, tags: &[usize]) {
    let (seen, streamed) = decode(input);
    assert!(!streamed, "{input:?} streamed arguments");
    let mut text = String::new();
    let mut warnings = Vec::new();
    for s in &seen {
        match s {
            Seen::Text(t) => text.push_str(t),
            Seen::Diagnostic(code, at) => {
                assert_eq!(*code, "marker_in_prose", "{input:?}");
                // The warning comes right before the tag's text.
                assert_eq!(text.len(), *at, "{input:?}");
                warnings.push(*at);
            }
            Seen::Block(b) => panic!("{input:?} gave a block: {b:?}"),
        }
    }
    assert_eq!(text, input);
    assert_eq!(warnings, tags, "{input:?}");
}

#[test]
fn a_closed_block_with_no_element_is_prose() {
    assert_prose(
        "Write <ACTION> to start a block and </ACTION> to end it.",
        &[6],
    );
    for input in [
        "<ACTION></ACTION>",
        "<ACTION>  </ACTION>",
        "<ACTION>\n</ACTION>",
        "<action></Action >",
        "<ACTION><!-- nothing --></ACTION>",
        "<ACTION><![CDATA[<write_file/>]]></ACTION>",
        "<ACTION>if a < b && c</ACTION>",
        "<ACTION>a <b and c</ACTION>",
        "<ACTION></stray></ACTION>",
        "<ACTION><1></ACTION>",
        "<ACTION><?pi x?></ACTION>",
        "<ACTION><!DOCTYPE x></ACTION>",
        "<ACTION>\n```\n```\n</ACTION>",
    ] {
        assert_prose(input, &[0]);
    }
    // In a fenced code block, where a real block would be a call, too.
    assert_prose("```xml\n<ACTION></ACTION>\n```\n", &[7]);
    // Two on a line.
    assert_prose(
        "Use <ACTION> and </ACTION>, or <action> and </action>.",
        &[4, 31],
    );
}

#[test]
fn a_prose_block_takes_no_block_index() {
    let input = "Write <ACTION> to start a block and </ACTION> to end it.\n\
                 <ACTION><read_file><path>a.txt</path></read_file></ACTION>";
    let (seen, _) = decode(input);
    let blocks: Vec<&ActionBlock> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Block(b) => Some(&**b),
            _ => None,
        })
        .collect();
    let [block] = blocks.as_slice() else {
        panic!("{seen:?}");
    };
    // The real block is the first: it runs, with no `extra_action_block`.
    assert_eq!(block.index, 0);
    assert_eq!(block.calls[0].tool, "read_file");
    assert!(block.diagnostics.is_empty(), "{:?}", block.diagnostics);
    assert_eq!(
        seen[0],
        Seen::Text("Write ".to_owned()),
        "the prose before the mention"
    );
    assert_eq!(seen[1], Seen::Diagnostic("marker_in_prose", 6));
    assert_eq!(
        seen[2],
        Seen::Text("<ACTION> to start a block and </ACTION> to end it.\n".to_owned())
    );
    // `parse` agrees: the real block's calls are the reply's.
    let parsed = action_xml::parse(input);
    assert_eq!(parsed.calls[0].tool, "read_file");
    assert_eq!(
        parsed.response_text.trim_end(),
        "Write <ACTION> to start a block and </ACTION> to end it."
    );
}

/// The one block of `input`.
fn block_of(input: &str) -> ActionBlock {
    let (seen, _) = decode(input);
    let mut blocks = seen.into_iter().filter_map(|s| match s {
        Seen::Block(b) => Some(*b),
        _ => None,
    });
    let block = blocks
        .next()
        .unwrap_or_else(|| panic!("{input:?}: no block"));
    assert!(blocks.next().is_none(), "{input:?}");
    block
}

#[test]
fn a_body_holding_an_element_stays_a_block() {
    // Only a nested <ACTION>, an element that is no call: a block without calls.
    for input in ["<ACTION><ACTION/></ACTION>", "<ACTION><ACTION></ACTION>"] {
        let block = block_of(input);
        assert!(block.calls.is_empty());
        assert!(
            block
                .diagnostics
                .iter()
                .any(|d| d.code == codes::EMPTY_BLOCK),
            "{input:?}: {:?}",
            block.diagnostics
        );
    }
    // An element after prose: a call, the prose stray text.
    let block = block_of("<ACTION>Use <read_file/> now</ACTION>");
    assert_eq!(block.calls[0].tool, "read_file");
    assert!(
        block
            .diagnostics
            .iter()
            .any(|d| d.code == codes::STRAY_TEXT)
    );
    // A body that begins with an element the parser refuses: an error, no call.
    let block = block_of("<ACTION><t a></ACTION>");
    assert!(block.calls.is_empty());
    assert_eq!(block.first_error().unwrap().code, codes::MALFORMED_XML);
}

#[test]
fn a_block_that_never_closes_keeps_its_rules() {
    // Nothing changed for a block the stream ended in: prose without an element first.
    assert_prose("I write <ACTION> then nothing.", &[8]);
    let block = block_of("<ACTION><read_file><path>a</path></read_file>");
    assert_eq!(block.calls[0].tool, "read_file");
}
