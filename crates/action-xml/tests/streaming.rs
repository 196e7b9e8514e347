//! Streaming behaviour: text streams out as it arrives, calls come out of the feed that
//! delivers `</ACTION>`, what is held back, reuse after `finish_in_place`.

mod common;

use action_xml::{Config, Decoder, Event, Span, codes};

/// Feeds `deltas` one by one and returns, per delta, the events it produced.
fn per_delta(deltas: &[&str]) -> (Vec<Vec<Event<'static>>>, Vec<Event<'static>>) {
    let mut decoder = Decoder::new(Config::default());
    let mut out = Vec::new();
    for d in deltas {
        let mut events = Vec::new();
        decoder.feed(d, |e| events.push(e.into_owned()));
        out.push(events);
    }
    let mut tail = Vec::new();
    decoder.finish(|e| tail.push(e.into_owned()));
    (out, tail)
}

#[test]
fn text_streams_and_only_a_tag_prefix_is_held_back() {
    let (out, tail) = per_delta(&["Hello <", "b>wor", "ld <AC", "TIONS> end"]);
    assert_eq!(common::text(&out[0]), "Hello ");
    assert_eq!(common::text(&out[1]), "<b>wor");
    assert_eq!(common::text(&out[2]), "ld ");
    assert_eq!(common::text(&out[3]), "<ACTIONS> end");
    assert!(tail.is_empty());
}

#[test]
fn calls_come_out_of_the_feed_that_delivers_the_close_tag() {
    let deltas = [
        "Go.\n<ACTION><ping>",
        "<a>1</a></ping></ACT",
        "ION>",
        " after",
    ];
    let (out, _) = per_delta(&deltas);
    // The block starts, then the call streams as it arrives (CallStart for `<ping>`).
    assert!(matches!(&out[0][1], Event::BlockStart { span } if *span == Span::new(4, 12)));
    assert!(
        matches!(out[0].last(), Some(Event::CallStart { index: 0, tool, .. }) if tool == "ping")
    );
    assert!(common::blocks(&out[1]).is_empty());
    assert!(matches!(
        out[1].last(),
        Some(Event::CallEnd { index: 0, .. })
    ));
    let blocks = common::blocks(&out[2]);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].calls[0].tool, "ping");
    assert_eq!(common::text(&out[3]), " after");
}

#[test]
fn close_tag_in_cdata_or_comment_does_not_close() {
    let (out, _) = per_delta(&[
        "<ACTION><w><c><![CDATA[</ACTION>",
        "]]></c></w><!-- </ACTION> -->",
        "</ACTION>",
    ]);
    assert!(common::blocks(&out[0]).is_empty());
    assert!(common::blocks(&out[1]).is_empty());
    let blocks = common::blocks(&out[2]);
    assert_eq!(blocks[0].calls[0].get("c").unwrap(), "</ACTION>");
}

#[test]
fn held_back_bytes_are_bounded_by_the_tag_length() {
    let mut decoder = Decoder::new(Config::default());
    decoder.feed("prose <  ACTION  ", |_| {});
    assert!(decoder.buffered() <= 23, "{}", decoder.buffered());
    decoder.feed("x", |_| {});
    assert_eq!(decoder.buffered(), 0);
    assert_eq!(decoder.position(), 18);
}

#[test]
fn finish_in_place_starts_a_new_stream() {
    let mut decoder = Decoder::new(Config::default());
    let mut first = Vec::new();
    decoder.feed("a\n<ACTION><x/></ACTION><ACTION><y/>", |e| {
        first.push(e.into_owned())
    });
    decoder.finish_in_place(|e| first.push(e.into_owned()));
    let mut second = Vec::new();
    decoder.feed("<ACTION><z/></ACTION>", |e| second.push(e.into_owned()));
    decoder.finish(|e| second.push(e.into_owned()));
    let blocks = common::blocks(&second);
    assert_eq!(blocks[0].span, Span::new(0, 21));
    assert_eq!(blocks[0].index, 0, "block numbering restarts");
    assert!(!common::codes(&second).contains(&codes::EXTRA_ACTION_BLOCK.as_str()));
    assert_eq!(
        common::codes(&first),
        ["extra_action_block", "missing_close_tag"]
    );
}

#[test]
fn error_line_counts_the_whole_stream_however_it_arrives() {
    // Two close tags that match nothing: no repair guesses which was meant.
    let text = "l1\nl2\nl3 <ACTION>\n<t>\n  <a>1</b></c>\n</t></ACTION>";
    let events = common::decode(text);
    let block = common::blocks(&events)[0];
    let error = block.first_error().unwrap();
    assert_eq!(error.code, codes::MALFORMED_XML);
    assert_eq!(
        error.message,
        "expected 'a' tag, not 'b' at line 5, column 7"
    );
    assert_eq!(&text[error.span.start..], "</b></c>\n</t></ACTION>");
    assert_eq!(error.span.len(), 1);
}

#[test]
fn byte_deltas_may_split_characters() {
    let text = "中文 <ACTION><读><路径>文档</路径></读></ACTION>";
    let events = common::decode(text);
    let block = common::blocks(&events)[0];
    assert_eq!(block.calls[0].tool, "读");
    assert_eq!(block.calls[0].get_str("路径"), Some("文档"));
}

#[test]
fn events_detach_from_the_delta() {
    let mut decoder = Decoder::new(Config::default());
    let mut owned = Vec::new();
    {
        let delta = String::from("text <ACTION><a/></ACTION>");
        decoder.feed(&delta, |e| owned.push(e.into_owned()));
    }
    assert_eq!(owned[0].span(), Span::new(0, 5));
    assert!(matches!(&owned[0], Event::Text { text, .. } if text == "text "));
}
