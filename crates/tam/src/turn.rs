//! A model's turn ends at its call: the stop sequences that end a reply at a block's end
//! marker, and how to close a block a server stopped at one.
//!
//! A model that writes a tool call and goes on writing invents the call's result (and
//! sometimes further calls built on it). So a reply ends at the first block that gives a
//! call: ask the server to stop at the protocols' end markers ([`stop_sequences`]); a
//! server that stopped there leaves the marker out of the reply, so feed it back with
//! [`close_stopped_block`] before finishing the decoder.

use crate::{Decoder, Event, Protocol, Span};

/// The ACTION protocol's end tag, as a stop sequence.
pub const ACTION_END: &str = "</ACTION>";

/// The stop sequences that end a model's turn at its block: the end marker of
/// each protocol decoded (`tam_end`: the TAM dialect's), then the caller's own, each once.
pub fn stop_sequences(
    protocol: Protocol,
    tam_end: &str,
    own: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut stop: Vec<String> = match protocol {
        Protocol::Tam => vec![tam_end.to_owned()],
        Protocol::Action => vec![ACTION_END.to_owned()],
        _ => vec![tam_end.to_owned(), ACTION_END.to_owned()],
    };
    for own in own {
        if !stop.contains(&own) {
            stop.push(own);
        }
    }
    stop
}

/// A reply a server stopped at a stop sequence, inside a block: the server left the end
/// marker out, so `marker` (the block's end marker) is fed to `decoder` as the model wrote
/// it. When the block then gives calls, its events are returned as decoded. When it gives
/// none (a prose mention, a block without a command), the marker is not shown: the events
/// are one text event holding what the model wrote, without the marker, then what carries
/// no text of its own: a block over the size limit (no calls, its `block_too_large`
/// error), a diagnostic without raw text.
pub fn close_stopped_block(decoder: &mut Decoder, marker: &str) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    decoder.feed(marker, |event| events.push(event.into_owned()));
    let calls = events.iter().any(|event| match event {
        Event::TamBlock(block) => !block.calls.is_empty(),
        Event::ActionBlock(block) => !block.calls.is_empty(),
        _ => false,
    });
    if calls {
        return events;
    }
    let mut text = String::new();
    let mut span: Option<Span> = None;
    // What carries no text of its own — a block over the size limit (its bytes are not
    // kept: the block holds only its `block_too_large` error), a diagnostic without raw
    // text — tells something the text does not: it is kept, after the text.
    let mut kept = Vec::new();
    for event in &events {
        let textless = match event {
            Event::TamBlock(block) => block.raw.is_empty(),
            Event::ActionBlock(block) => block.raw.is_empty(),
            Event::Diagnostic(diagnostic) => diagnostic.raw.is_none(),
            _ => false,
        };
        if textless {
            kept.push(event.clone());
            continue;
        }
        let piece: &str = match event {
            Event::Text { text, .. } => text,
            Event::TamBlock(block) => &block.raw,
            Event::ActionBlock(block) => &block.raw,
            Event::Diagnostic(diagnostic) => diagnostic.raw.as_deref().unwrap_or(""),
            _ => "",
        };
        if piece.is_empty() {
            continue;
        }
        text.push_str(piece);
        let at = event.span();
        span = Some(match span {
            Some(s) => Span::new(s.start.min(at.start), s.end.max(at.end)),
            None => at,
        });
    }
    if let Some(kept) = text.strip_suffix(marker) {
        text.truncate(kept.len());
    }
    let mut out = match span {
        Some(span) if !text.is_empty() => vec![Event::Text {
            text: text.into(),
            span: Span::new(span.start, span.end.saturating_sub(marker.len())),
        }],
        _ => Vec::new(),
    };
    out.extend(kept);
    out
}
