//! A model's turn ends at its call: the stop sequences that end a reply at a block's end
//! marker, and how to close a block a server stopped at one.
//!
//! A model that writes a tool call and goes on writing invents the call's result (and
//! sometimes further calls built on it). So a reply ends at the first block that gives a
//! call: ask the server to stop at the protocols' end markers ([`stop_sequences`]); a
//! server that stopped there leaves the marker out of the reply, so feed it back with
//! [`close_stopped_block`] before finishing the decoder — only where the block really
//! ended there ([`stopped_block_closes`]): a reply that mentions a start marker and ends
//! by itself finishes with `stop` too.

use crate::{Decoder, Event, ProtocolChoice, Span};

/// The ACTION protocol's end tag, as a stop sequence.
pub const ACTION_END: &str = "</ACTION>";

/// The stop sequences that end a model's turn at its block: the end marker of
/// each protocol decoded (`tam_end`: the TAM dialect's), then the caller's own, each once.
pub fn stop_sequences(
    protocol: ProtocolChoice,
    tam_end: &str,
    own: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut stop: Vec<String> = match protocol {
        ProtocolChoice::Tam => vec![tam_end.to_owned()],
        ProtocolChoice::Action => vec![ACTION_END.to_owned()],
        _ => vec![tam_end.to_owned(), ACTION_END.to_owned()],
    };
    for own in own {
        if !stop.contains(&own) {
            stop.push(own);
        }
    }
    stop
}

/// What a server said of a `stop` finish: the stop sequence it stopped at, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoppedAt<'a> {
    /// The server named the stop sequence it stopped at (vLLM's `stop_reason`, SGLang's
    /// `matched_stop`, llama-server `/completion`'s `stopping_word`, a Messages-style
    /// `stop_sequence`).
    Sequence(&'a str),
    /// The server said only that it stopped (llama-server's and most servers' Chat
    /// Completions): the model may have ended its reply by itself.
    Unreported,
}

/// Whether a block open at a `stop` finish is closed by `marker` (its end marker, which a
/// server that stopped there left out of the reply):
///
/// * when the server named the sequence it stopped at: only when that is `marker`;
/// * when it said nothing: only when the block can end there — its last entry (TAM) or
///   call element (ACTION) complete, and nothing but blank space after it. A reply that
///   merely mentions a start marker and ends by itself (`…you write <|[REQUEST_TOOL]|>
///   then command:「始」delete_all「末」 and the arguments; I will not.`) also finishes with
///   `stop`: its block never closed, and it gives no call.
///
/// `block` is the open block as written ([`Decoder::open_block_text`]), start marker included.
pub fn stopped_block_closes(block: &str, marker: &str, stopped: StoppedAt<'_>) -> bool {
    match stopped {
        StoppedAt::Sequence(sequence) => sequence == marker,
        StoppedAt::Unreported if marker == ACTION_END => action_can_end(block),
        StoppedAt::Unreported => tam_can_end(block),
    }
}

/// A TAM block can end here: no value open, and its last entry complete with nothing but
/// blank space after it (a value closed by `「末」` or `「末ESCAPE」`, or the last line an
/// entry in bare corner brackets, `unit:「celsius」`).
fn tam_can_end(block: &str) -> bool {
    const OPEN: &str = "「始」";
    const OPEN_ESCAPE: &str = "「始ESCAPE」";
    const CLOSE: &str = "「末」";
    const CLOSE_ESCAPE: &str = "「末ESCAPE」";
    let mut rest = block;
    // Outside values: find the next value opening; inside one: its close.
    loop {
        let escape = rest.find(OPEN_ESCAPE);
        let plain = rest.find(OPEN);
        let (at, open, close) = match (escape, plain) {
            (Some(e), Some(p)) if e <= p => (e, OPEN_ESCAPE, CLOSE_ESCAPE),
            (Some(e), None) => (e, OPEN_ESCAPE, CLOSE_ESCAPE),
            (_, Some(p)) => (p, OPEN, CLOSE),
            (None, None) => break,
        };
        let value = &rest[at + open.len()..];
        let Some(end) = value.find(close) else {
            // A value still open: the marker would be part of it.
            return false;
        };
        rest = &value[end + close.len()..];
    }
    let written = block.trim_end();
    if written.ends_with(CLOSE) || written.ends_with(CLOSE_ESCAPE) {
        return rest.trim().is_empty();
    }
    // An entry in bare corner brackets on the last line.
    let last_line = written.rsplit('\n').next().unwrap_or_default();
    written.ends_with('」')
        && (last_line.contains(":「") || last_line.contains("：「"))
        && !last_line.contains(OPEN)
}

/// An ACTION block can end here: read with its end tag, it gives calls without an error,
/// its last call element closes with its own close tag (or is empty, `<t/>`), and nothing
/// but blank space follows it.
fn action_can_end(block: &str) -> bool {
    let mut text = String::with_capacity(block.len() + ACTION_END.len());
    text.push_str(block);
    text.push_str(ACTION_END);
    let events = crate::decode(&text, crate::Config::for_protocol(ProtocolChoice::Action));
    let Some(read) = events.iter().find_map(|event| match event {
        Event::ActionBlock(read) => Some(read),
        Event::Text { .. }
        | Event::BlockStart { .. }
        | Event::CommandSeen { .. }
        | Event::TamBlock(_)
        | Event::Diagnostic(_)
        | Event::ReasoningStart { .. }
        | Event::Reasoning { .. }
        | Event::ReasoningEnd { .. }
        | Event::CallStart { .. }
        | Event::ParamStart { .. }
        | Event::ParamText { .. }
        | Event::ParamEnd { .. }
        | Event::CallEnd { .. } => None,
    }) else {
        return false;
    };
    let Some(last) = read.calls.last() else {
        return false;
    };
    if read.diagnostics.iter().any(|d| d.is_error()) {
        return false;
    }
    let (Some(element), Some(after)) = (
        block.get(last.span.start..last.span.end.min(block.len())),
        block.get(last.span.end.min(block.len())..),
    ) else {
        return false;
    };
    if !after.trim().is_empty() {
        return false;
    }
    let element = element.trim_end();
    let Some(tag) = element.strip_suffix('>') else {
        return false;
    };
    tag.ends_with('/')
        || tag
            .trim_end()
            .strip_suffix(last.tool.as_str())
            .is_some_and(|before| before.ends_with("</"))
}

/// A reply a server stopped at a stop sequence, inside a block: when the block closes
/// there ([`stopped_block_closes`]), `marker` (the block's end marker, which the server
/// left out) is fed to `decoder` as the model wrote it, and the block's events are
/// returned. When it does not, nothing is fed and nothing returned: the decoder's finish
/// then reports a block that never closed (no call; its text comes back). A closed
/// block that gives no call (a prose mention, a block without a command) does not show
/// the marker: the events are one text event holding what the model wrote, without the
/// marker, then what carries no text of its own: a block over the size limit (no calls,
/// its `block_too_large` error), a diagnostic without raw text.
pub fn close_stopped_block(
    decoder: &mut Decoder,
    marker: &str,
    stopped: StoppedAt<'_>,
) -> Vec<Event<'static>> {
    let closes = decoder
        .open_block_text()
        .is_some_and(|block| stopped_block_closes(block, marker, stopped));
    if !closes {
        return Vec::new();
    }
    let mut events = Vec::new();
    decoder.feed(marker, |event| events.push(event.into_owned()));
    let calls = events.iter().any(|event| match event {
        Event::TamBlock(block) => !block.calls.is_empty(),
        Event::ActionBlock(block) => !block.calls.is_empty(),
        Event::Text { .. }
        | Event::BlockStart { .. }
        | Event::CommandSeen { .. }
        | Event::Diagnostic(_)
        | Event::ReasoningStart { .. }
        | Event::Reasoning { .. }
        | Event::ReasoningEnd { .. }
        | Event::CallStart { .. }
        | Event::ParamStart { .. }
        | Event::ParamText { .. }
        | Event::ParamEnd { .. }
        | Event::CallEnd { .. } => false,
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
            Event::Text { .. }
            | Event::BlockStart { .. }
            | Event::CommandSeen { .. }
            | Event::ReasoningStart { .. }
            | Event::Reasoning { .. }
            | Event::ReasoningEnd { .. }
            | Event::CallStart { .. }
            | Event::ParamStart { .. }
            | Event::ParamText { .. }
            | Event::ParamEnd { .. }
            | Event::CallEnd { .. } => false,
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
            Event::BlockStart { .. }
            | Event::CommandSeen { .. }
            | Event::ReasoningStart { .. }
            | Event::Reasoning { .. }
            | Event::ReasoningEnd { .. }
            | Event::CallStart { .. }
            | Event::ParamStart { .. }
            | Event::ParamText { .. }
            | Event::ParamEnd { .. }
            | Event::CallEnd { .. } => "",
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
