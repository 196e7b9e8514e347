//! Arguments that stream. For every split, the pieces of a string parameter through
//! `ValueEdges` are its final value; the events are those of the whole input.

use action_xml::{Config, Event, ValueEdges};
use proptest::prelude::*;
use tam_testkit::{Action, Harness, random_cuts, str_pieces};

/// (key, pieces joined) per parameter that ended, and the block's calls' string values in
/// order, from events already merged by the harness.
/// (key, text) pairs.
type Values = Vec<(String, String)>;

fn streamed_and_final(events: &[Event<'static>]) -> (Values, Values) {
    let mut streamed = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut edges = ValueEdges::new();
    let mut finals = Vec::new();
    for e in events {
        match e {
            Event::ParamStart { key, .. } => current = Some((key.to_string(), String::new())),
            Event::ParamText { text, span, cdata } => {
                if let Some((_, v)) = &mut current {
                    edges.push(text, *span, *cdata, v);
                }
            }
            Event::ParamEnd { .. } => {
                if let Some((_, v)) = &mut current {
                    edges.finish(v);
                }
                streamed.extend(current.take())
            }
            Event::Block(b) => {
                for c in &b.calls {
                    for (k, v) in &c.args {
                        if let Some(s) = v.as_str() {
                            finals.push((k.clone(), s.to_owned()));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    (streamed, finals)
}

/// Values that models write: code with `<`, `&`, entities, generics, markup.
fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "fn main() {",
            " x ",
            "a < b",
            "&&",
            "&amp;",
            "&lt;tag&gt;",
            "&#x41;",
            "&mut self",
            "&str",
            "&ltx",
            "&apos",
            "&#x1F600;",
            "&#1234567890;",
            "Vec<String>",
            "<b>bold</b>",
            "\n",
            "中文",
            "if a<b {}",
            "</div>",
            "<br/>",
            "&",
            "-->",
            "]]",
            " \t",
            "\r\n",
            "<![CDATA[\n  x < y && z\n  ]]>",
            "<![CDATA[a]]>",
            "<![CDATA[\r\n]]>",
            "<![CDATA[ \n \t]]>",
            "<!-- note -->",
        ]),
        1..8,
    )
    .prop_map(|v| v.concat())
}

fn check(input: &str) {
    let whole = Action(Config::default()).run_str([input]);
    let (streamed, finals) = streamed_and_final(&whole);
    // Every parameter streamed (objects too: their pieces are their markup).
    assert_eq!(streamed.len(), 2, "{input}");
    for (key, value) in &finals {
        let got = streamed
            .iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("{key} did not stream in {input}"));
        assert_eq!(&got.1, value, "{input}");
    }
    for seed in 1..=6 {
        let cuts = random_cuts(input.len(), seed);
        let split = Action(Config::default()).run_str(str_pieces(input, &cuts));
        assert_eq!(split, whole, "seed {seed}: {input}");
    }
    let chars: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    assert_eq!(Action(Config::default()).run_str(chars), whole, "{input}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Pieces joined are the value, however the input is split.
    #[test]
    fn pieces_join_to_the_final_value(a in value(), b in value()) {
        let input = format!(
            "Working.\n<ACTION>\n<write_to_file>\n<path>{a}</path>\n<content>{b}</content>\n</write_to_file>\n</ACTION>\n"
        );
        check(&input);
    }
}

#[test]
fn events_stream_before_the_block_closes() {
    let mut decoder = action_xml::Decoder::new(Config::default());
    let mut seen = Vec::new();
    let mut on = |e: Event<'_>| seen.push(e.into_owned());
    decoder.feed("<ACTION><write><path>a.rs</path><content>fn x() ", &mut on);
    decoder.feed("{ a &amp;&amp; b }", &mut on);
    let pieces: Vec<String> = seen
        .iter()
        .filter_map(|e| match e {
            Event::ParamText { text, .. } => Some(text.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(pieces.concat(), "a.rsfn x() { a && b }");
    assert!(matches!(&seen[1], Event::CallStart { index: 0, tool, .. } if tool == "write"));
    assert!(!seen.iter().any(|e| matches!(e, Event::Block(_))));
    // Borrowed where no decoding was needed.
    let mut borrowed = 0;
    decoder.feed("more</content></write></ACTION>", |e| {
        if let Event::ParamText {
            text: std::borrow::Cow::Borrowed(_),
            ..
        } = e
        {
            borrowed += 1;
        }
    });
    assert!(borrowed >= 1);
}

#[test]
fn a_cut_call_never_ends() {
    let mut decoder = action_xml::Decoder::new(Config::default());
    let mut seen = Vec::new();
    decoder.feed("<ACTION><write><content>fn main() {", |e| {
        seen.push(e.into_owned())
    });
    decoder.finish_cut(|e| seen.push(e.into_owned()));
    assert!(seen.iter().any(|e| matches!(e, Event::CallStart { .. })));
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, Event::CallEnd { .. } | Event::ParamEnd { .. }))
    );
    let Some(Event::Block(b)) = seen.last() else {
        panic!()
    };
    assert!(b.calls.is_empty());
}
