//! Arguments that stream. For every split, the pieces of a string parameter through
//! `ValueEdges` are its final value; the events are those of the whole input.

mod common;

use action_xml::{Config, Event, ValueEdges};
use common::Action;
use proptest::prelude::*;
use tam_testkit::{Harness, random_cuts, str_pieces};

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

/// A reply cut at every prefix, fed whole and one byte at a time: what streamed of the
/// value before the cut is the start of what the complete reply streams (nothing streams
/// that more input would take back: a cut `&mu`, `&am`, `&#x4`, `<`, `\r`), the two feeds
/// stream the same text, and no call or parameter of a cut block ends.
#[test]
fn a_reply_cut_anywhere_streams_a_prefix_of_the_value() {
    let reply = "Writing.\n<ACTION>\n<write_to_file>\n<path>src/a.rs</path>\n<content>\n\
        fn f(s: &str, v: &mut Vec<u8>) -> bool { s.len() < v.len() && !v.is_empty() }\r\n\
        // escape & as &amp; and < as &lt;, 'A' is &#x41; &#65;\n\
        let m: HashMap<String, &'a T> = x &ampy; &ltz\n\
        </content>\n</write_to_file>\n</ACTION>\nDone.";
    let streamed = |input: &str, one_byte: bool| {
        let mut decoder = action_xml::Decoder::new(Config::default());
        let mut text = String::new();
        let mut ended = false;
        let mut on = |e: Event<'_>| match e {
            Event::ParamText { text: t, .. } => text.push_str(&t),
            Event::ParamEnd { .. } | Event::CallEnd { .. } => ended = true,
            _ => {}
        };
        if one_byte {
            for b in input.as_bytes().chunks(1) {
                decoder.feed_bytes(b, &mut on);
            }
        } else {
            decoder.feed(input, &mut on);
        }
        decoder.finish_cut(&mut on);
        (text, ended)
    };
    let (full, _) = streamed(reply, false);
    assert!(full.ends_with("x &ampy; &ltz\n"), "{full:?}");
    assert!(
        full.contains("escape & as & and < as <, 'A' is A A\n"),
        "{full:?}"
    );
    let content_close = reply.find("</content>").unwrap();
    for cut in 0..content_close {
        if !reply.is_char_boundary(cut) {
            continue;
        }
        let prefix = &reply[..cut];
        let (whole, ended) = streamed(prefix, false);
        let (bytes, _) = streamed(prefix, true);
        assert!(full.starts_with(&whole), "cut at {cut}: {whole:?}");
        assert_eq!(bytes, whole, "cut at {cut}");
        // `path` ended before `content` began; nothing of `content` or the call did.
        let path_end = reply.find("</path>").unwrap() + "</path>".len();
        assert_eq!(ended, cut >= path_end, "cut at {cut}");
    }
}
