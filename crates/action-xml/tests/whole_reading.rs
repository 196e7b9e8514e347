//! A block that closes before anything of it streamed (a reply fed whole, a delta holding
//! the whole block) gets its argument events from the block's own reading, not from a
//! second reading by the streamer: the events must be those of every other split. Each
//! input here is decoded whole, char by char, byte by byte, in random splits and cut at
//! every prefix (`decode_all_ways`); debug builds also check the two readings against each
//! other inside the decoder. The inputs are the shapes that reading handles (references,
//! line ends, CDATA, children of a parameter, empty elements) and the shapes it leaves to
//! the streamer (an element named as its parameter or call inside a value, a carriage
//! return in a value with elements).

mod common;

use std::borrow::Cow;

use action_xml::{Config, Event};
use common::Action;
use tam_parse::Span;
use tam_testkit::decode_all_ways;

fn args(events: &[Event<'static>]) -> Vec<Event<'static>> {
    events
        .iter()
        .filter(|e| common::is_streamed(e))
        .cloned()
        .collect()
}

fn text(s: &str, start: usize, end: usize, cdata: bool) -> Event<'static> {
    Event::ParamText {
        text: Cow::Owned(s.to_owned()),
        span: Span::new(start, end),
        cdata,
    }
}

#[test]
fn a_block_fed_whole_streams_references_line_ends_and_cdata_as_in_deltas() {
    let input =
        "Run it.\n<ACTION><w><content>a &lt; b\r\nc<![CDATA[<x>]]>d</content><n/></w></ACTION>";
    let events = decode_all_ways(Action(Config::default()), input.as_bytes());
    let at = |needle: &str| input.find(needle).unwrap();
    let value = at("a &lt;");
    let cdata = at("<x>");
    let d = at("d</content>");
    let n = at("<n/>");
    assert_eq!(
        args(&events),
        vec![
            Event::CallStart {
                index: 0,
                tool: "w".into(),
                span: Span::new(at("<w>"), at("<w>") + 3),
            },
            Event::ParamStart {
                key: "content".into(),
                span: Span::new(at("<content>"), value),
            },
            text("a < b\nc", value, at("<![CDATA["), false),
            text("<x>", cdata, cdata + 3, true),
            text("d", d, d + 1, false),
            Event::ParamEnd {
                span: Span::new(at("<content>"), at("<n/>")),
            },
            Event::ParamStart {
                key: "n".into(),
                span: Span::new(n, n + 4),
            },
            Event::ParamEnd {
                span: Span::new(n, n + 4),
            },
            Event::CallEnd {
                index: 0,
                span: Span::new(at("<w>"), at("</ACTION>")),
            },
        ]
    );
}

#[test]
fn shapes_of_real_replies_stream_the_same_fed_whole_and_in_deltas() {
    let inputs = [
        // Code: `<` and `&` as text, generics never closed, a close tag matching nothing.
        "<ACTION><write_to_file><path>a.rs</path><content>fn f<T: Into<String>>(a: &mut T) -> bool { a < b && c > d }\nlet s = \"</div>\";\n</content></write_to_file></ACTION>",
        // HTML in a value: children of the parameter, streamed as written.
        "<ACTION><save><content><div><b>hi</b> &amp; <i>there</i></div></content></save></ACTION>",
        // An object and a list parameter, a blank reference between parameters.
        "<ACTION><t><o><a>1</a><b>x &#x41;</b></o>&#32;<l><item>1</item><item>2</item></l></t></ACTION>",
        // Two calls, an empty call, line ends of every kind.
        "<ACTION>\r\n<a><p>x\ry\r\nz\n</p></a>\r\n<b/>\r\n<c><q></q></c></ACTION>",
        // Left to the streamer: an element named as its parameter or its call in a value.
        "<ACTION><t><p>a<p>b</p>c</p></t></ACTION>",
        "<ACTION><t><p>a<T>b</T>c</p></t></ACTION>",
        "<ACTION><t><P>a<p/>c</P></t></ACTION>",
        "<ACTION><t><t>x</t></t></ACTION>",
        // An element of the parameter's name never closed in its value: text to the
        // block's reading, nesting to the streamer's (found by a property test).
        "<ACTION>\n<write_file><other>March 10</mode></path><path>a.txt<other>x </path></other></write_file>\n</ACTION>",
        "<ACTION><t><p>Vec<P> x</p></t></ACTION>",
        "<ACTION><t><p>Vec<t> x</p></t></ACTION>",
        "<ACTION><t><p>Vec<p, q> x</p></t></ACTION>",
        "<ACTION><t><p>a <p =1> b</p></t></ACTION>",
        "<ACTION><t><p>HashMap<P, t> x</p></t></ACTION>",
        // The streamer hands a tag of the parameter's own name out as written, line end
        // and all: the one shape where the two readings differ.
        "<ACTION><t><p>a<p\r\n/>c</p></t></ACTION>",
        // A carriage return in a value with elements, in their tags too.
        "<ACTION><t><p><a\r\n>x</a\r\n>\r\n</p></t></ACTION>",
        // Not read directly at all: a comment, a fence, a block cut by the stream's end.
        "<ACTION><t><p>a<!-- c -->b</p></t></ACTION>",
        "<ACTION>\n```xml\n<t><p>a</p></t>\n```\n</ACTION>",
        "<ACTION><t><p>a</p></t>",
        // A marker mentioned in prose, a block, then text after it the model invented.
        "Use `<ACTION>` like this:\n<ACTION><t><p>x</p></t></ACTION>\nObservation: done.",
    ];
    for input in inputs {
        let events = decode_all_ways(Action(Config::default()), input.as_bytes());
        let calls = events
            .iter()
            .filter(|e| matches!(e, Event::CallStart { .. }))
            .count();
        assert!(calls > 0 || input.ends_with("</t>"), "{input}: {events:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Values made of what makes the two readings part ways if anything does: one or two
    /// tags of the parameter's or the call's name in some case and shape (kept, never
    /// closed, spaced, text that only looks like one) among code, line ends, references,
    /// CDATA and child elements the block's reader takes.
    #[test]
    fn values_with_tags_of_their_own_names_stream_the_same_every_way(
        call in proptest::sample::select(vec!["t", "T", "write"]),
        param in proptest::sample::select(vec!["p", "P", "content"]),
        before in proptest::collection::vec(proptest::sample::select(BENIGN.to_vec()), 0..5),
        risky in proptest::collection::vec(proptest::sample::select(RISKY.to_vec()), 1..3),
        after in proptest::collection::vec(proptest::sample::select(BENIGN.to_vec()), 0..5),
    ) {
        let value: String = [before.concat(), risky.concat(), after.concat()].concat();
        let input = format!(
            "Go.\n<ACTION>\n<{call}><{param}>{value}</{param}><r>1</r></{call}>\n</ACTION>\nDone."
        );
        decode_all_ways(Action(Config::default()), input.as_bytes());
    }
}

/// What the block's reader and the streamer read alike.
const BENIGN: [&str; 14] = [
    "x",
    " ",
    "\n",
    "\r\n",
    "\r",
    "a < b",
    "&amp;",
    "& ",
    "&#x41;",
    "HashMap<K, V>",
    "<q/>",
    "<q>y</q>",
    "Vec<q>",
    "<![CDATA[a\r\n<p>]]>",
];

/// Tags of the parameter's or call's names, or text that looks like one.
const RISKY: [&str; 24] = [
    "<p>",
    "</p>",
    "<p/>",
    "<P>",
    "</P>",
    "<p, q>",
    "</ p>",
    "< p>",
    "<p\r\n>",
    "<p\r\n/>",
    "<t>",
    "</t>",
    "</T>",
    "</ t>",
    "<T, u>",
    "Vec<p>",
    "Vec<t>",
    "<content>",
    "</content>",
    "</write>",
    "<write/>",
    "\"</div\"",
    "<q>Vec<p></q>",
    "<q>Vec<T></q>",
];

/// A reasoning section that writes a block, then the real block: the one in reasoning is
/// never read as a call; the real one streams the same fed whole and in deltas.
#[test]
fn a_block_after_reasoning_streams_the_same_every_way() {
    let input = "<think>I could write <ACTION><t><p>no</p></t></ACTION> here.</think>\n<ACTION><t><p>a &lt; b</p></t></ACTION>";
    let config = Config::default().with_reasoning_tags(true);
    let events = decode_all_ways(Action(config), input.as_bytes());
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b.calls.len()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![1], "{events:?}");
    assert!(
        args(&events)
            .iter()
            .any(|e| matches!(e, Event::ParamText { text, .. } if text == "a < b")),
        "{events:?}"
    );
}
