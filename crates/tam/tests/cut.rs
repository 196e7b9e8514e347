//! A stream that ends or is cut inside an ACTION block (docs/protocol/action-xml.md §8),
//! read by the decoder of both protocols.

use tam::{Config, Decoder, Event};

#[test]
fn the_mixed_decoder_applies_the_same_rules() {
    let input = "<ACTION><t><a>1</a></t>";
    for (cut, calls) in [(false, 1), (true, 0)] {
        let mut decoder = Decoder::new(Config::default());
        let mut got = Vec::new();
        let mut on = |e: Event<'_>| {
            if let Event::ActionBlock(b) = e {
                got.push(b);
            }
        };
        decoder.feed(input, &mut on);
        if cut {
            decoder.finish_cut(&mut on);
        } else {
            decoder.finish(&mut on);
        }
        assert_eq!(got[0].calls.len(), calls);
    }
    let mut decoder = Decoder::new(Config::default());
    let mut text = String::new();
    let mut on = |e: Event<'_>| {
        if let Event::Text { text: t, .. } = e {
            text.push_str(&t);
        }
    };
    decoder.feed("I write <ACTION> tags.", &mut on);
    decoder.finish_cut(&mut on);
    assert_eq!(text, "I write <ACTION> tags.");
}
