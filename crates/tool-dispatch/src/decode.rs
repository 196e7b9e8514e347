//! The protocol choice and block kinds, shared with action-xml's front door
//! ([`action_xml::OutputDecoder`]), which the agent loop decodes with.

/// The tool-call protocol(s) the model writes: action-xml's [`ProtocolChoice`]
/// (`Tam`, `Action`, `Auto` for both in one stream), re-exported.
///
/// [`ProtocolChoice`]: action_xml::ProtocolChoice
pub use action_xml::ProtocolChoice;

/// The protocol one block was written in: action-xml's [`Protocol`](action_xml::Protocol)
/// (`Tam`, `Action`), re-exported under the name the agent's events use.
pub use action_xml::Protocol as BlockKind;

/// The ACTION protocol's end tag, as a stop sequence.
pub(crate) const ACTION_END: &str = "</ACTION>";

/// The stop sequences that end a model's turn at its block (SPEC §5): the end marker of
/// each protocol decoded (`tam_end`: the TAM dialect's), then the caller's own, each once.
pub(crate) fn stop_sequences(
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

/// A reply a server stopped at a stop sequence, inside a block: the server left the end
/// marker out, so `marker` (the block's end marker) is fed to `decoder` as the model wrote
/// it. When the block then gives calls, its events are returned as decoded. When it gives
/// none (a prose mention, a block without a command), the marker is not shown: the events
/// are one text event holding what the model wrote, without the marker.
pub(crate) fn close_stopped_block(
    decoder: &mut action_xml::OutputDecoder,
    marker: &str,
) -> Vec<action_xml::MixedEvent<'static>> {
    use action_xml::MixedEvent;
    let mut events = Vec::new();
    decoder.feed(marker, |event| events.push(event.into_owned()));
    let calls = events.iter().any(|event| match event {
        MixedEvent::TamBlock(block) => !block.calls.is_empty(),
        MixedEvent::ActionBlock(block) => !block.calls.is_empty(),
        _ => false,
    });
    if calls {
        return events;
    }
    let mut text = String::new();
    let mut span: Option<tam_parse::Span> = None;
    for event in &events {
        let piece: &str = match event {
            MixedEvent::Text { text, .. } => text,
            MixedEvent::TamBlock(block) => &block.raw,
            MixedEvent::ActionBlock(block) => &block.raw,
            MixedEvent::Diagnostic(diagnostic) => diagnostic.raw.as_deref().unwrap_or(""),
            _ => "",
        };
        if piece.is_empty() {
            continue;
        }
        text.push_str(piece);
        let at = event.span();
        span = Some(match span {
            Some(s) => tam_parse::Span::new(s.start.min(at.start), s.end.max(at.end)),
            None => at,
        });
    }
    if let Some(kept) = text.strip_suffix(marker) {
        text.truncate(kept.len());
    }
    match span {
        Some(span) if !text.is_empty() => vec![MixedEvent::Text {
            text: text.into(),
            span: tam_parse::Span::new(span.start, span.end.saturating_sub(marker.len())),
        }],
        _ => Vec::new(),
    }
}
