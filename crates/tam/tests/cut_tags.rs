//! A block the stream ended in, inside a tag: an element's start or close tag cut off at
//! the end of the stream (`…</write_file><delete_all`) means the stream was cut while the
//! model wrote a call, so no call of the block runs (`unterminated_block`); the beginning
//! of the block's own close tag (`</ACTI`), blanks and text are no such tag. Every input is
//! decoded every way (whole, char by char, byte by byte, random splits, every prefix +
//! rest) by `action_xml::Decoder` and by the front door `tam::Decoder` for ACTION and for
//! both protocols.

mod common;

use action_xml::{Config, Event, codes};
use common::{Summary, decode_action, decode_front};
use tam::ProtocolChoice;

const WRITTEN: &str = "Writing.\n<ACTION><write_file><path>/tmp/report.txt</path><content>a &lt; b</content></write_file>";
const NEXT_TAG: &str = "<delete_all";

/// `input` decoded every way by `action_xml::Decoder` and by `tam::Decoder` (ACTION, and
/// both protocols); all of them must see the same, which is returned.
fn decode(input: &str) -> Summary {
    let seen = decode_action(input).summary();
    for choice in [ProtocolChoice::Action, ProtocolChoice::Auto] {
        let front = decode_front(input, choice).summary();
        assert_eq!(front, seen, "tam::Decoder ({choice}) on {input:?}");
    }
    seen
}

/// The stream ended inside a tag of a call: one block, no call, `unterminated_block`
/// carrying the block's raw text; the prose before it is text.
fn assert_cut_mid_call(input: &str, block_start: usize) {
    let seen = decode(input);
    assert_eq!(seen.text, input[..block_start], "{input:?}");
    assert!(seen.outside.is_empty(), "{input:?}: {:?}", seen.outside);
    let [block] = seen.blocks.as_slice() else {
        panic!("{input:?}: {:?}", seen.blocks);
    };
    assert!(block.calls.is_empty(), "{input:?} ran {:?}", block.calls);
    let error = block.first_error().expect("an error");
    assert_eq!(error.code, codes::UNTERMINATED_BLOCK, "{input:?}");
    assert_eq!(
        error.raw.as_deref(),
        Some(&input[block_start..]),
        "{input:?}"
    );
}

/// Every call closed and the stream ended: the calls run (`missing_close_tag`).
fn assert_runs(input: &str, tools: &[&str]) -> Summary {
    let seen = decode(input);
    let [block] = seen.blocks.as_slice() else {
        panic!("{input:?}: {:?}", seen.blocks);
    };
    let ran: Vec<&str> = block.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(ran, tools, "{input:?}: {:?}", block.diagnostics);
    assert!(
        block
            .diagnostics
            .iter()
            .any(|d| d.code == codes::MISSING_CLOSE_TAG),
        "{input:?}: {:?}",
        block.diagnostics
    );
    seen
}

#[test]
fn a_stream_cut_inside_the_next_start_tag_runs_no_call() {
    // Every prefix of the next call's start tag, `<` alone included.
    for end in 1..=NEXT_TAG.len() {
        let input = format!("{WRITTEN}{}", &NEXT_TAG[..end]);
        assert_cut_mid_call(&input, "Writing.\n".len());
        let block = &decode(&input).blocks[0];
        let error = block.first_error().unwrap();
        assert!(
            error.message.contains(&format!("'{}'", &NEXT_TAG[..end])),
            "{}",
            error.message
        );
    }
    // One byte later the call element is open: the same outcome, as before.
    let input = format!("{WRITTEN}{NEXT_TAG}>");
    assert_cut_mid_call(&input, "Writing.\n".len());
    // Without the cut tag the written call runs.
    assert_runs(WRITTEN, &["write_file"]);
}

#[test]
fn a_start_tag_cut_inside_its_attributes_is_a_cut_tag() {
    for tail in [
        "<delete_all ",
        "<delete_all a",
        "<delete_all a=",
        "<delete_all a=\"",
        "<delete_all a=\"x",
        "<delete_all a=\"x\"",
        "<delete_all a='x' b='y",
        "<delete_all/",
        "<delete_all /",
        "<ns:delete_all",
        "<_x",
        "<削除",
    ] {
        assert_cut_mid_call(&format!("{WRITTEN}{tail}"), "Writing.\n".len());
    }
}

#[test]
fn a_stream_cut_inside_a_close_tag_runs_no_call() {
    let block = "<ACTION><get_weather><city>Paris</city></get_weather>";
    for tail in [
        // The close tag of the call open: a call element open, as before.
        "<get_weather><city>Bern</city></get_wea",
        "<get_weather><city>Bern</ci",
        "<get_weather><city>Bern</city></",
        // A close tag with nothing of its name open.
        "</get_wea",
        "</get_weather",
        "</get_weather ",
        "</ get_wea",
        "</x",
    ] {
        assert_cut_mid_call(&format!("{block}{tail}"), 0);
    }
}

#[test]
fn the_beginning_of_the_blocks_close_tag_is_no_cut_call() {
    // The calls were written and `</ACTION>` was being written: as when it is missing
    // altogether, every call closed and the calls run.
    for tail in [
        "</",
        "</A",
        "</ACT",
        "</ACTION",
        "</action",
        "</Act",
        "</ ",
        "</ ACTION",
        "</ACTION ",
        "</\tACT",
    ] {
        assert_runs(&format!("{WRITTEN}{tail}"), &["write_file"]);
    }
}

#[test]
fn blanks_text_comments_and_declarations_are_no_cut_tag() {
    for tail in [
        "",
        "\n",
        "  \n\t",
        "<!-",
        "<!--",
        "<!-- a comment",
        "<![CD",
        "<![CDATA[x",
        "<?x",
        "<?xml version",
    ] {
        assert_runs(&format!("{WRITTEN}{tail}"), &["write_file"]);
    }
    // Text between calls is stray text, not a tag.
    let seen = assert_runs(&format!("{WRITTEN}\nand then"), &["write_file"]);
    assert!(
        seen.blocks[0]
            .diagnostics
            .iter()
            .any(|d| d.code == codes::STRAY_TEXT)
    );
}

#[test]
fn a_block_that_is_only_a_cut_tag_is_cut_mid_call() {
    // The body begins with an element (being written): the call was cut, as one byte later
    // with `<delete_all>` complete.
    for input in [
        "<ACTION><d",
        "<ACTION><delete_all",
        "<ACTION>\n  <delete_all",
        "<ACTION><delete_all>",
    ] {
        assert_cut_mid_call(input, 0);
    }
    // A body that does not begin with an element stays a prose mention.
    for input in ["I write <ACTION><", "I write <ACTION> then <delete_all"] {
        let seen = decode(input);
        assert!(seen.blocks.is_empty(), "{input:?}");
        assert_eq!(seen.text, input);
        assert_eq!(seen.outside, ["marker_in_prose"]);
    }
}

#[test]
fn a_cut_tag_inside_a_nested_action_element_is_cut_mid_call() {
    // An `<ACTION>` element inside the block: its children are the calls.
    let input = "<ACTION>\n<ACTION><read><path>a</path></read><dele";
    let seen = decode(input);
    let [block] = seen.blocks.as_slice() else {
        panic!("{:?}", seen.blocks);
    };
    assert!(block.calls.is_empty());
    assert_eq!(block.first_error().unwrap().code, codes::UNTERMINATED_BLOCK);
}

#[test]
fn a_cut_stream_stays_unterminated() {
    // `finish_cut` was never repaired; the cut tag changes nothing there.
    let input = format!("{WRITTEN}{NEXT_TAG}");
    let mut decoder = action_xml::Decoder::new(Config::default());
    let mut blocks = Vec::new();
    let mut on = |e: Event<'_>| {
        if let Event::Block(b) = e {
            blocks.push(b);
        }
    };
    decoder.feed(&input, &mut on);
    decoder.finish_cut(&mut on);
    assert!(blocks[0].calls.is_empty());
    let error = blocks[0].first_error().unwrap();
    assert_eq!(error.code, codes::UNTERMINATED_BLOCK);
    assert!(error.message.contains("cut"), "{}", error.message);
}
