//! `tam::Decoder` through its public API only (no test kit: this file ships in the .crate):
//! the same events whatever the split, a cut block gives no call, the turn helpers.

use tam::turn::{ACTION_END, StoppedAt, close_stopped_block, stop_sequences, stopped_block_closes};
use tam::{Config, Decoder, Event, ProtocolChoice};

const REPLY: &str = "Sure — `<ACTION>` is quoted here.\n<think>maybe <ACTION><No/></ACTION></think>\n\
    I'll check 東京 🌦.\n<|[REQUEST_TOOL]|>command:「始」GetWeather「末」city:「始」Tōkyō「末」<|[END_TOOL]|>\n\
    and <ACTION><Write><code>if a < b && c { Vec::<u8>::new() }</code></Write></ACTION> done.";

/// The text and span of a piece whose split is free: prose, reasoning, argument text.
fn piece<'e, 'a>(
    e: &'e mut Event<'a>,
) -> Option<(&'e mut std::borrow::Cow<'a, str>, &'e mut tam::Span)> {
    match e {
        Event::Text { text, span }
        | Event::Reasoning { text, span }
        | Event::ParamText { text, span, .. } => Some((text, span)),
        _ => None,
    }
}

/// Every event, owned, adjacent pieces of one kind joined (their split is free).
fn run(config: Config, pieces: &[&[u8]], cut: bool) -> Vec<Event<'static>> {
    let mut events: Vec<Event<'static>> = Vec::new();
    let mut push = |e: Event<'_>| {
        let mut e = e.into_owned();
        if let Some(last) = events.last_mut()
            && std::mem::discriminant(last) == std::mem::discriminant(&e)
            && let (Some((text, span)), Some((more, s))) = (piece(last), piece(&mut e))
            && span.end == s.start
        {
            text.to_mut().push_str(more);
            span.end = s.end;
            return;
        }
        events.push(e);
    };
    let mut decoder = Decoder::new(config);
    for piece in pieces {
        decoder.feed_bytes(piece, &mut push);
    }
    if cut {
        decoder.finish_cut(&mut push);
    } else {
        decoder.finish(&mut push);
    }
    events
}

fn tools(events: &[Event<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::TamBlock(b) => out.extend(b.calls.iter().map(|c| c.tool.to_string())),
            Event::ActionBlock(b) => out.extend(b.calls.iter().map(|c| c.tool.clone())),
            _ => {}
        }
    }
    out
}

#[test]
fn every_split_gives_the_same_events() {
    let bytes = REPLY.as_bytes();
    for protocol in [
        ProtocolChoice::Auto,
        ProtocolChoice::Tam,
        ProtocolChoice::Action,
    ] {
        let config = Config::for_protocol(protocol);
        let whole = run(config, &[bytes], false);
        let ones: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(
            run(config, &ones, false),
            whole,
            "{protocol}: 1-byte deltas"
        );
        for at in 0..=bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(
                run(config, &[a, b], false),
                whole,
                "{protocol}: split at {at}"
            );
        }
        let expected: &[&str] = match protocol {
            ProtocolChoice::Auto => &["GetWeather", "Write"],
            ProtocolChoice::Tam => &["GetWeather"],
            ProtocolChoice::Action => &["Write"],
        };
        assert_eq!(tools(&whole), expected, "{protocol}");
    }
}

#[test]
fn nothing_the_model_wrote_is_lost() {
    let events = run(
        Config::default().with_param_events(false),
        &[REPLY.as_bytes()],
        false,
    );
    let mut covered = 0;
    for e in &events {
        let span = match e {
            Event::Text { span, .. }
            | Event::ReasoningStart { span }
            | Event::Reasoning { span, .. }
            | Event::ReasoningEnd { span } => *span,
            Event::TamBlock(b) => b.span,
            Event::ActionBlock(b) => b.span,
            _ => continue,
        };
        assert!(span.start >= covered, "{e:?}");
        covered = span.end;
    }
    assert_eq!(covered, REPLY.len());
}

#[test]
fn a_block_open_at_a_cut_gives_no_call_at_any_cut() {
    let reply =
        "Writing.\n<ACTION><Write><path>a.rs</path><code>fn main() {}</code></Write></ACTION>";
    for at in 0..reply.len() {
        if !reply.is_char_boundary(at) {
            continue;
        }
        let events = run(Config::default(), &[&reply.as_bytes()[..at]], true);
        assert!(tools(&events).is_empty(), "cut at {at}: {events:?}");
    }
    assert_eq!(
        tools(&run(Config::default(), &[reply.as_bytes()], true)),
        ["Write"]
    );
}

#[test]
fn a_reply_stopped_at_the_end_marker_is_closed_by_the_turn_helper() {
    let stop = stop_sequences(
        ProtocolChoice::Auto,
        "<|[END_TOOL]|>",
        ["\n\nUser:".to_owned()],
    );
    assert_eq!(stop, ["<|[END_TOOL]|>", ACTION_END, "\n\nUser:"]);
    let mut decoder = Decoder::new(Config::for_protocol(ProtocolChoice::Action));
    decoder.feed("<ACTION><Ping><n>1</n></Ping>", |_| {});
    let events = close_stopped_block(&mut decoder, ACTION_END, StoppedAt::Unreported);
    assert_eq!(tools(&events), ["Ping"]);
    // A mention that gives no call comes back as the text the model wrote, marker left out.
    let mut decoder = Decoder::new(Config::for_protocol(ProtocolChoice::Action));
    decoder.feed("Use <ACTION> blocks.", |_| {});
    let events = close_stopped_block(&mut decoder, ACTION_END, StoppedAt::Sequence(ACTION_END));
    assert!(tools(&events).is_empty(), "{events:?}");
}

const TAM_END: &str = "<|[END_TOOL]|>";

/// The decoder's events for `reply` fed in `pieces` (every split of the same text), then
/// stopped: closed by `marker` as the helper decides, then finished.
fn stopped(
    protocol: ProtocolChoice,
    reply: &str,
    cut: usize,
    marker: &str,
    at: StoppedAt<'_>,
) -> Vec<Event<'static>> {
    let mut decoder = Decoder::new(Config::for_protocol(protocol));
    let mut events = Vec::new();
    let (a, b) = reply.split_at(cut);
    for piece in [a, b] {
        decoder.feed(piece, |e| events.push(e.into_owned()));
    }
    events.extend(close_stopped_block(&mut decoder, marker, at));
    decoder.finish(|e| events.push(e.into_owned()));
    events
}

/// All the text an event sequence shows: prose, and the raw text of blocks and
/// diagnostics that are not calls.
fn shown(events: &[Event<'_>]) -> String {
    let mut out = String::new();
    for event in events {
        match event {
            Event::Text { text, .. } => out.push_str(text),
            Event::Diagnostic(d) => out.push_str(d.raw.as_deref().unwrap_or("")),
            Event::TamBlock(b) if b.calls.is_empty() => out.push_str(&b.raw),
            Event::ActionBlock(b) if b.calls.is_empty() => out.push_str(&b.raw),
            _ => {}
        }
    }
    out
}

/// A server that stops at a stop sequence leaves the end marker out, so a `stop` finish
/// inside a block may be a stop at the marker; but a reply that merely mentions a start
/// marker and ends by itself finishes with `stop` too. Without the server saying where it
/// stopped, the block is closed only when it can end there; with it, only when it stopped
/// at the marker. Every split of the reply, both protocols, and `Auto`.
#[test]
fn a_mention_that_ends_by_itself_is_never_closed_as_stopped() {
    let tam_mention = "To call it you write <|[REQUEST_TOOL]|> then command:「始」delete_all「末」 and the \
        arguments; I will not call it now. The answer is 42.";
    let action_mention = "An ACTION block looks like <ACTION><delete_all> with a path inside; I will not call it. The answer is 42.";
    let tam_call =
        "Deleting.\n<|[REQUEST_TOOL]|>\ncommand:「始」delete_all「末」\npath:「始」/tmp「末」\n";
    let action_call = "Deleting.\n<ACTION>\n<delete_all><path>/tmp</path></delete_all>\n";
    for (protocols, reply, marker, closes) in [
        (
            [ProtocolChoice::Tam, ProtocolChoice::Auto],
            tam_mention,
            TAM_END,
            false,
        ),
        (
            [ProtocolChoice::Action, ProtocolChoice::Auto],
            action_mention,
            ACTION_END,
            false,
        ),
        (
            [ProtocolChoice::Tam, ProtocolChoice::Auto],
            tam_call,
            TAM_END,
            true,
        ),
        (
            [ProtocolChoice::Action, ProtocolChoice::Auto],
            action_call,
            ACTION_END,
            true,
        ),
    ] {
        for protocol in protocols {
            for cut in (0..=reply.len()).filter(|&i| reply.is_char_boundary(i)) {
                let events = stopped(protocol, reply, cut, marker, StoppedAt::Unreported);
                if closes {
                    assert_eq!(
                        tools(&events),
                        ["delete_all"],
                        "{protocol:?} {reply:?} at {cut}"
                    );
                } else {
                    assert!(
                        tools(&events).is_empty(),
                        "{protocol:?} {reply:?} at {cut}: {events:?}"
                    );
                    // Nothing the model wrote is dropped.
                    assert_eq!(shown(&events), reply, "{protocol:?} at {cut}");
                }
                // The server named where it stopped: the marker closes the block whatever
                // it holds (it decides whether that is a call); another sequence never (the
                // decoder's own end-of-stream rules then decide, as for a natural end).
                let at_marker = stopped(protocol, reply, cut, marker, StoppedAt::Sequence(marker));
                let mut decoder = Decoder::new(Config::for_protocol(protocol));
                decoder.feed(reply, |_| {});
                assert!(
                    close_stopped_block(&mut decoder, marker, StoppedAt::Sequence("\n\nUser:"))
                        .is_empty(),
                    "{protocol:?} {reply:?}"
                );
                if closes {
                    assert_eq!(tools(&at_marker), ["delete_all"], "{protocol:?} at {cut}");
                }
            }
        }
    }
}

/// What can end where a server stopped, without its word: the last entry or call element
/// complete, nothing but blank space after it.
#[test]
fn a_block_can_end_where_its_last_entry_or_element_is_complete() {
    let closes =
        |block: &str, marker: &str| stopped_block_closes(block, marker, StoppedAt::Unreported);
    for tam in [
        "<|[REQUEST_TOOL]|>command:「始」a「末」",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」\n  \n",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」\ntext:「始ESCAPE」x「末」y「末ESCAPE」\n",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」\nunit:「celsius」\n",
    ] {
        assert!(closes(tam, TAM_END), "{tam:?}");
    }
    for tam in [
        "<|[REQUEST_TOOL]|>",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」 and more",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」\ntext:「始」unfinished",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」\ntext:「始ESCAPE」x「末」\n",
        "<|[REQUEST_TOOL]|>\ncommand:「始」a「末」\n# a comment\n",
    ] {
        assert!(!closes(tam, TAM_END), "{tam:?}");
    }
    for action in [
        "<ACTION><a/>",
        "<ACTION>\n<a><x>1</x></a>\n\n",
        "<ACTION><a><code>Vec<u8> and a < b</code></a>",
        "<ACTION><a><x>1</x></a><b><y>2</y></b >",
    ] {
        assert!(closes(action, ACTION_END), "{action:?}");
    }
    for action in [
        "<ACTION>",
        "<ACTION> blocks are how you call",
        "<ACTION><a><x>1</x></a> and then",
        "<ACTION><a><x>1</x>",
        "<ACTION><a><x>1</x></a><b>",
        "<ACTION><a><x>1</x></a><b",
        "<ACTION><a> with a path inside. The answer is 42.",
    ] {
        assert!(!closes(action, ACTION_END), "{action:?}");
    }
    // The server named the sequence: only the marker closes.
    assert!(stopped_block_closes(
        "<ACTION>",
        ACTION_END,
        StoppedAt::Sequence(ACTION_END)
    ));
    assert!(!stopped_block_closes(
        "<ACTION><a/>",
        ACTION_END,
        StoppedAt::Sequence("STOP")
    ));
}

#[cfg(feature = "stream")]
#[test]
fn the_stream_adapter_gives_the_decoders_events() {
    use futures_util::{StreamExt, stream};
    let pieces: Vec<String> = REPLY.chars().map(String::from).collect();
    let streamed: Vec<Event<'static>> = futures_util::FutureExt::now_or_never(
        tam::stream::EventStream::with_decoder(
            stream::iter(pieces),
            Decoder::new(Config::default()),
        )
        .collect(),
    )
    .unwrap();
    assert_eq!(tools(&streamed), ["GetWeather", "Write"]);
}

#[cfg(feature = "codec")]
#[test]
fn the_codec_gives_the_decoders_events() {
    use tokio_util::codec::Decoder as _;
    let mut codec = tam::codec::Codec::with_decoder(Decoder::new(Config::default()));
    let mut events = Vec::new();
    for piece in REPLY.as_bytes().chunks(7) {
        let mut buf = bytes::BytesMut::from(piece);
        while let Some(e) = codec.decode(&mut buf).unwrap() {
            events.push(e);
        }
    }
    let mut rest = bytes::BytesMut::new();
    while let Some(e) = codec.decode_eof(&mut rest).unwrap() {
        events.push(e);
    }
    assert_eq!(tools(&events), ["GetWeather", "Write"]);
}

#[test]
fn a_stopped_block_over_the_size_limit_keeps_its_diagnostic() {
    let mut config = Config::for_protocol(ProtocolChoice::Action);
    config.action.max_block_bytes = 64;
    let mut decoder = Decoder::new(config);
    let mut seen = Vec::new();
    let body = "x".repeat(200);
    decoder.feed(
        &format!("<ACTION><Write><text>{body}</text></Write>"),
        |e| seen.push(e.into_owned()),
    );
    let mut closed = close_stopped_block(&mut decoder, ACTION_END, StoppedAt::Sequence(ACTION_END));
    // A block past the size limit has had its bytes dropped: it is not closed, and the
    // decoder's finish reports it.
    assert!(closed.is_empty(), "{closed:?}");
    decoder.finish(|e| closed.push(e.into_owned()));
    assert!(tools(&closed).is_empty(), "{closed:?}");
    let all: Vec<&Event<'_>> = seen.iter().chain(&closed).collect();
    assert!(
        all.iter().any(|e| matches!(
            e,
            Event::ActionBlock(b) if b.diagnostics.iter().any(|d| d.code.as_str() == "block_too_large")
        )),
        "{all:?}"
    );
}

/// `reply` decoded by `config` whole, byte by byte and split at every byte: the same
/// events every way, which are returned.
fn every_way(config: Config, reply: &str) -> Vec<Event<'static>> {
    let bytes = reply.as_bytes();
    let whole = run(config, &[bytes], false);
    let ones: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(run(config, &ones, false), whole, "1-byte deltas: {reply:?}");
    for at in 1..bytes.len() {
        let (a, b) = bytes.split_at(at);
        assert_eq!(
            run(config, &[a, b], false),
            whole,
            "split at {at}: {reply:?}"
        );
    }
    whole
}

#[test]
fn a_closed_action_block_without_an_element_is_prose() {
    let mention = "Write <ACTION> to start a block and </ACTION> to end it.\n";
    let reply = format!("{mention}<ACTION><Ping/></ACTION>");
    for protocol in [ProtocolChoice::Action, ProtocolChoice::Auto] {
        let events = every_way(Config::for_protocol(protocol), &reply);
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Event::Text { text, .. } => Some(&**text),
                _ => None,
            })
            .collect();
        assert_eq!(text, mention, "{protocol}");
        let warnings: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::Diagnostic(d) => Some(d.code.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(warnings, ["marker_in_prose"], "{protocol}");
        // The real block is the first: it runs.
        let blocks: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::ActionBlock(b) => Some(b),
                _ => None,
            })
            .collect();
        assert_eq!(blocks.len(), 1, "{protocol}: {events:?}");
        assert_eq!(blocks[0].index, 0);
        assert!(
            blocks[0].diagnostics.is_empty(),
            "{:?}",
            blocks[0].diagnostics
        );
        assert_eq!(tools(&events), ["Ping"], "{protocol}");
    }
}

#[test]
fn an_action_stream_ending_inside_a_tag_runs_no_call() {
    let written = "Writing.\n<ACTION><write_file><path>a.txt</path></write_file>";
    for protocol in [ProtocolChoice::Action, ProtocolChoice::Auto] {
        let config = Config::for_protocol(protocol);
        for tail in ["<", "<d", "<delete_all", "<delete_all a=\"x", "</get_wea"] {
            let events = every_way(config, &format!("{written}{tail}"));
            assert!(tools(&events).is_empty(), "{protocol} {tail:?}: {events:?}");
            assert!(
                events.iter().any(|e| matches!(
                    e,
                    Event::ActionBlock(b) if b.diagnostics.iter().any(|d| d.code.as_str() == "unterminated_block")
                )),
                "{protocol} {tail:?}: {events:?}"
            );
        }
        // The beginning of the block's close tag: the calls were written; they run.
        let events = every_way(config, &format!("{written}</ACTI"));
        assert_eq!(tools(&events), ["write_file"], "{protocol}");
    }
}

/// Given the offered tools, the front door reads a call element written without
/// `<ACTION>` as a call for ACTION and for both protocols, whatever the split; TAM alone
/// has no such rule and keeps no names.
#[test]
fn a_call_element_without_action_is_a_call_given_the_offered_tools() {
    let reply =
        "```xml\n<get_weather><city>Paris</city></get_weather>\n```\n<lookup><q>x</q></lookup>\n";
    for protocol in [ProtocolChoice::Action, ProtocolChoice::Auto] {
        let run = |pieces: Vec<&[u8]>| {
            let mut decoder = Decoder::new(Config::for_protocol(protocol))
                .with_bare_call_tools(["get_weather", "search"]);
            assert_eq!(decoder.bare_call_tools(), ["get_weather", "search"]);
            let mut tools = Vec::new();
            let mut warnings = Vec::new();
            for piece in pieces {
                decoder.feed_bytes(piece, |e| {
                    if let Event::ActionBlock(b) = e {
                        tools.extend(b.calls.iter().map(|c| c.tool.clone()));
                        warnings.extend(b.diagnostics.iter().map(|d| d.code.as_str()));
                    }
                });
            }
            decoder.finish(|_| {});
            (tools, warnings)
        };
        let whole = run(vec![reply.as_bytes()]);
        assert_eq!(whole.0, ["get_weather"], "{protocol:?}");
        assert_eq!(whole.1, ["fenced_block", "missing_action_wrapper"]);
        assert_eq!(run(reply.as_bytes().chunks(1).collect()), whole);
        for i in 1..reply.len() {
            let (a, b) = reply.as_bytes().split_at(i);
            assert_eq!(run(vec![a, b]), whole, "{protocol:?} split at {i}");
        }
    }
    let tam = Decoder::new(Config::for_protocol(ProtocolChoice::Tam))
        .with_bare_call_tools(["get_weather"]);
    assert!(tam.bare_call_tools().is_empty());
}
