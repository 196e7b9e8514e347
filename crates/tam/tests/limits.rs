//! Input safety of the decoder of both protocols: ACTION's depth limit applies as in
//! action-xml's decoder, without recursion.

use action_xml::codes;
use tam::{Config, Decoder, Event};

fn deep(n: usize) -> String {
    format!("<ACTION>{}x{}</ACTION>", "<a>".repeat(n), "</a>".repeat(n))
}

#[test]
fn mixed_decoder_applies_the_same_limits() {
    let mut decoder = Decoder::new(Config::default());
    let mut codes_seen = Vec::new();
    let mut on_event = |e: Event<'_>| {
        if let Event::ActionBlock(b) = e {
            codes_seen.extend(b.diagnostics.iter().map(|d| d.code));
        }
    };
    decoder.feed(&deep(100_000), &mut on_event);
    decoder.finish(&mut on_event);
    assert_eq!(codes_seen, [codes::NESTING_TOO_DEEP]);
}
