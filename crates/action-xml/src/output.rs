//! The front door: one sans-IO decoder for "TAM, ACTION or both", one event type.

use crate::decoder::Decoder;
use crate::mixed::{MixedConfig, MixedDecoder, MixedEvent};
use crate::protocol::ProtocolChoice;

#[derive(Debug)]
enum Inner {
    Tam(tam_parse::Decoder),
    Action(Decoder),
    Auto(MixedDecoder),
}

/// The front door: a streaming, sans-IO decoder of a model's output for the protocol(s)
/// of [`MixedConfig::protocol`], reporting [`MixedEvent`]s whatever the choice.
///
/// * [`ProtocolChoice::Tam`] runs tam-parse's [`tam_parse::Decoder`] with
///   [`MixedConfig::tam`] (its own `max_block_bytes`), [`ProtocolChoice::Action`] this
///   crate's [`Decoder`] with [`MixedConfig::action`], [`ProtocolChoice::Auto`] the
///   [`MixedDecoder`] (one scanner, `action.max_block_bytes` for both). Each gives exactly
///   its decoder's events, converted with the `From` impls of [`MixedEvent`].
/// * [`MixedConfig::param_events`] switches argument streaming for every choice, and
///   [`MixedConfig::reasoning_tags`] (default on) reasoning sections.
///
/// ```
/// use action_xml::{MixedConfig, MixedEvent, OutputDecoder, ProtocolChoice};
///
/// let config = MixedConfig::for_protocol(ProtocolChoice::Action);
/// let mut decoder = OutputDecoder::new(config);
/// let mut pieces = String::new();
/// let mut tools = Vec::new();
/// let mut on_event = |e: MixedEvent<'_>| match e {
///     MixedEvent::ParamText { text, .. } => pieces.push_str(&text),
///     MixedEvent::ActionBlock(b) => tools.extend(b.calls.iter().map(|c| c.tool.clone())),
///     _ => {}
/// };
/// decoder.feed("<ACTION><write><path>a.rs</pa", &mut on_event);
/// decoder.feed("th></write></ACTION>", &mut on_event);
/// decoder.finish(&mut on_event);
/// assert_eq!(pieces, "a.rs");
/// assert_eq!(tools, ["write"]);
/// ```
#[derive(Debug)]
pub struct OutputDecoder {
    inner: Inner,
    param_events: bool,
}

impl Default for OutputDecoder {
    fn default() -> Self {
        OutputDecoder::new(MixedConfig::default())
    }
}

/// `out` fed from another decoder's events, without argument events unless
/// `param_events`.
fn convert<'e, E: Into<MixedEvent<'e>>>(
    param_events: bool,
    out: &mut impl FnMut(MixedEvent<'_>),
    event: E,
) {
    let event = event.into();
    if param_events || !event.is_argument_event() {
        out(event);
    }
}

impl OutputDecoder {
    /// A decoder for `config.protocol`.
    pub fn new(config: MixedConfig) -> Self {
        let param_events = config.param_events;
        let inner = match config.protocol {
            ProtocolChoice::Tam => Inner::Tam(tam_parse::Decoder::new(
                config
                    .tam
                    .with_param_events(param_events)
                    .with_reasoning_tags(config.reasoning_tags),
            )),
            ProtocolChoice::Action => Inner::Action(
                Decoder::new(config.action.with_reasoning_tags(config.reasoning_tags))
                    .with_param_events(param_events),
            ),
            ProtocolChoice::Auto => Inner::Auto(MixedDecoder::new(config)),
        };
        OutputDecoder {
            inner,
            param_events,
        }
    }

    /// The protocol choice this decoder was made for.
    pub fn protocol(&self) -> ProtocolChoice {
        match self.inner {
            Inner::Tam(_) => ProtocolChoice::Tam,
            Inner::Action(_) => ProtocolChoice::Action,
            Inner::Auto(_) => ProtocolChoice::Auto,
        }
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        match &self.inner {
            Inner::Tam(d) => d.position(),
            Inner::Action(d) => d.position(),
            Inner::Auto(d) => d.position(),
        }
    }

    /// Bytes held: prose held back (a possible marker prefix) or the open block.
    pub fn buffered(&self) -> usize {
        match &self.inner {
            Inner::Tam(d) => d.buffered(),
            Inner::Action(d) => d.buffered(),
            Inner::Auto(d) => d.buffered(),
        }
    }

    /// Feeds one text delta; events go to `on_event` as soon as they are decided.
    pub fn feed(&mut self, delta: &str, mut on_event: impl FnMut(MixedEvent<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.feed(delta, |e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.feed(delta, |e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.feed(delta, on_event),
        }
    }

    /// Feeds one byte delta (a UTF-8 character may be split across deltas; bytes that
    /// are not UTF-8 give an `invalid_utf8` diagnostic).
    pub fn feed_bytes(&mut self, delta: &[u8], mut on_event: impl FnMut(MixedEvent<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.feed_bytes(delta, |e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.feed_bytes(delta, |e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.feed_bytes(delta, on_event),
        }
    }

    /// Ends the stream: emits held-back prose and closes a block left open (with the
    /// protocols' end-of-stream repairs).
    pub fn finish(mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        self.finish_in_place(on_event);
    }

    /// Like [`OutputDecoder::finish`], leaving the decoder ready for a new stream.
    pub fn finish_in_place(&mut self, mut on_event: impl FnMut(MixedEvent<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.finish_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.finish_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.finish_in_place(on_event),
        }
    }

    /// Ends a stream that was cut (`finish_reason: "length"`, a transport error): no
    /// end-of-stream repair applies to a block open at the cut (SPEC §5): it yields no
    /// call.
    pub fn finish_cut(mut self, on_event: impl FnMut(MixedEvent<'_>)) {
        self.finish_cut_in_place(on_event);
    }

    /// Like [`OutputDecoder::finish_cut`], leaving the decoder ready for a new stream.
    pub fn finish_cut_in_place(&mut self, mut on_event: impl FnMut(MixedEvent<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.finish_cut_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.finish_cut_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.finish_cut_in_place(on_event),
        }
    }
}
