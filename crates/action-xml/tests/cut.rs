//! A stream that ends or is cut inside an ACTION block (docs/protocol/action-xml.md §8).

use action_xml::{ActionBlock, Config, Decoder, Event, codes};

/// Feeds `input` in `step`-byte deltas and ends the stream with `finish_cut` (or `finish`).
fn decode(input: &str, step: usize, cut: bool) -> (Vec<ActionBlock>, String, Vec<String>) {
    let mut blocks = Vec::new();
    let mut text = String::new();
    let mut codes_seen = Vec::new();
    let mut on = |e: Event<'_>| match e {
        Event::Block(b) => {
            codes_seen.extend(b.diagnostics.iter().map(|d| d.code.as_str().to_owned()));
            blocks.push(b);
        }
        Event::Text { text: t, .. } => text.push_str(&t),
        Event::Diagnostic(d) => codes_seen.push(d.code.as_str().to_owned()),
        _ => {}
    };
    let mut decoder = Decoder::new(Config::default());
    for chunk in input.as_bytes().chunks(step) {
        decoder.feed_bytes(chunk, &mut on);
    }
    if cut {
        decoder.finish_cut(&mut on);
    } else {
        decoder.finish(&mut on);
    }
    (blocks, text, codes_seen)
}

#[test]
fn a_cut_stream_runs_no_call_even_when_every_call_closed() {
    let input = "Ok.\n<ACTION><read_file><path>a.txt</path></read_file>";
    for step in [1, 3, input.len()] {
        let (blocks, text, seen) = decode(input, step, true);
        assert_eq!(text, "Ok.\n");
        assert_eq!(blocks.len(), 1);
        assert!(blocks[0].calls.is_empty());
        let err = blocks[0].first_error().unwrap();
        assert_eq!(err.code, codes::UNTERMINATED_BLOCK);
        assert!(err.message.contains("cut"), "{}", err.message);
        assert_eq!(err.raw.as_deref(), Some(&input[4..]));
        assert!(!seen.contains(&"missing_close_tag".to_owned()));
        // The same stream ending normally is repaired: every call closed.
        let (blocks, _, seen) = decode(input, step, false);
        assert_eq!(blocks[0].calls[0].tool, "read_file");
        assert!(seen.contains(&"missing_close_tag".to_owned()));
    }
}

#[test]
fn a_call_cut_mid_value_never_runs() {
    let input = "<ACTION><write_to_file>\n<path>a.rs</path><content>fn main() { let x = 1;";
    for cut in [false, true] {
        let (blocks, _, _) = decode(input, 2, cut);
        assert!(blocks[0].calls.is_empty());
        assert_eq!(
            blocks[0].first_error().unwrap().code,
            codes::UNTERMINATED_BLOCK
        );
    }
}

#[test]
fn a_prose_mention_is_text_also_when_cut() {
    let input =
        "Use an <ACTION> block with a tag such as <DeleteAllFiles> inside it. The answer is 42.";
    for cut in [false, true] {
        let (blocks, text, seen) = decode(input, 5, cut);
        assert!(blocks.is_empty());
        assert_eq!(text, input);
        assert_eq!(seen, ["marker_in_prose"]);
    }
}
