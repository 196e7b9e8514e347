//! [`Decoder`]: one sans-IO decoder for "TAM, ACTION or both", one event type.

use action_xml::BareCallTools;
use tam_parse::drive::Driver;

use crate::both::Both;
use crate::config::Config;
use crate::event::Event;
use crate::protocol::ProtocolChoice;

#[derive(Debug)]
enum Inner {
    Tam(tam_parse::Decoder),
    Action(action_xml::Decoder),
    /// Both protocols: one scanner whose grammar has both syntaxes ([`crate::grammar`]).
    Auto(Driver<Both>),
}

/// A streaming, sans-IO decoder of a model's output for the protocol(s) of
/// [`Config::protocol`], reporting [`Event`]s whatever the choice.
///
/// * [`ProtocolChoice::Tam`] runs tam-parse's [`tam_parse::Decoder`] with [`Config::tam`] (its
///   own `max_block_bytes`), [`ProtocolChoice::Action`] action-xml's [`action_xml::Decoder`]
///   with [`Config::action`]; each gives exactly its decoder's events, converted to
///   [`Event`]. [`ProtocolChoice::Auto`] runs this crate's engine for both protocols: one
///   scanner whose [`grammar`](crate::grammar) has both syntaxes, TAM blocks read by
///   tam-parse's [`tam_parse::BlockParser`] and ACTION blocks by action-xml's
///   [`action_xml::ActionLayer`], `action.max_block_bytes` for both (see the crate docs,
///   "Both protocols in one stream").
/// * [`Config::param_events`] (default on) switches argument streaming for every choice,
///   and [`Config::reasoning_tags`] (default on) reasoning sections.
/// * Feed text with [`Decoder::feed`] or bytes with [`Decoder::feed_bytes`] (a UTF-8
///   character may be split across byte deltas), in pieces of any size: the events are the
///   same whatever the split. End with [`Decoder::finish`] when the model finished its
///   reply, with [`Decoder::finish_cut`] when the reply was cut (token limit, transport
///   error): a block open at a cut gives no call.
///
/// ```
/// use tam::{Config, Decoder, Event, ProtocolChoice};
///
/// let mut decoder = Decoder::new(Config::for_protocol(ProtocolChoice::Action));
/// let mut pieces = String::new();
/// let mut tools = Vec::new();
/// let mut on_event = |e: Event<'_>| match e {
///     Event::ParamText { text, .. } => pieces.push_str(&text),
///     Event::ActionBlock(b) => tools.extend(b.calls.iter().map(|c| c.tool.clone())),
///     _ => {}
/// };
/// decoder.feed("<ACTION><write><path>a.rs</pa", &mut on_event);
/// decoder.feed("th></write></ACTION>", &mut on_event);
/// decoder.finish(&mut on_event);
/// assert_eq!(pieces, "a.rs");
/// assert_eq!(tools, ["write"]);
/// ```
#[derive(Debug)]
pub struct Decoder {
    inner: Inner,
    param_events: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Config::default())
    }
}

/// `out` fed from another decoder's events, without argument events unless
/// `param_events`.
fn convert<'e, E: Into<Event<'e>>>(param_events: bool, out: &mut impl FnMut(Event<'_>), event: E) {
    let event = event.into();
    if param_events || !event.is_argument_event() {
        out(event);
    }
}

impl Decoder {
    /// A decoder for `config.protocol`.
    pub fn new(config: Config) -> Self {
        let param_events = config.param_events;
        let inner = match config.protocol {
            ProtocolChoice::Tam => Inner::Tam(tam_parse::Decoder::new(
                config
                    .tam
                    .with_param_events(param_events)
                    .with_reasoning_tags(config.reasoning_tags),
            )),
            ProtocolChoice::Action => Inner::Action(
                action_xml::Decoder::new(config.action.with_reasoning_tags(config.reasoning_tags))
                    .with_param_events(param_events),
            ),
            ProtocolChoice::Auto => Inner::Auto(Both::driver(config, BareCallTools::default())),
        };
        Decoder {
            inner,
            param_events,
        }
    }

    /// This decoder reading a call element of one of `tools` written without `<ACTION>`
    /// (`<get_weather><city>Paris</city></get_weather>` as the whole reply) as a one-call
    /// ACTION block with warning `missing_action_wrapper`, for [`ProtocolChoice::Action`] and
    /// [`ProtocolChoice::Auto`]; pass the names of the tools offered to the model. TAM has no
    /// such rule: [`ProtocolChoice::Tam`] ignores the names. The rules (a complete, well-formed
    /// element of an offered tool opening a line; the names left out) are
    /// [`action_xml::Decoder::with_bare_call_tools`]'s. No names (the default): every
    /// call element outside `<ACTION>` is prose. Call it before the first `feed`.
    pub fn with_bare_call_tools<S: AsRef<str>>(self, tools: impl IntoIterator<Item = S>) -> Self {
        let inner = match self.inner {
            Inner::Tam(d) => Inner::Tam(d),
            Inner::Action(d) => Inner::Action(d.with_bare_call_tools(tools)),
            Inner::Auto(d) => {
                Inner::Auto(Both::driver(d.layer().config(), BareCallTools::new(tools)))
            }
        };
        Decoder { inner, ..self }
    }

    /// The tool names whose call elements count without `<ACTION>` (see
    /// [`Decoder::with_bare_call_tools`]); none for [`ProtocolChoice::Tam`].
    pub fn bare_call_tools(&self) -> &[String] {
        match &self.inner {
            Inner::Tam(_) => &[],
            Inner::Action(d) => d.bare_call_tools(),
            Inner::Auto(d) => d.layer().bare_call_tools(),
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

    /// The open block as written so far, its start marker included: `None` outside a
    /// block, and for a block past its size limit (its bytes are being dropped). What
    /// [`turn::close_stopped_block`](crate::turn::close_stopped_block) reads to tell
    /// whether a block can end where a server stopped.
    pub fn open_block_text(&self) -> Option<&str> {
        match &self.inner {
            Inner::Tam(d) => d.open_block_text(),
            Inner::Action(d) => d.open_block_text(),
            Inner::Auto(d) => d.open_block_text(),
        }
    }

    /// Feeds one text delta; events go to `on_event` as soon as they are decided.
    pub fn feed(&mut self, delta: &str, mut on_event: impl FnMut(Event<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.feed(delta, |e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.feed(delta, |e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.feed(delta, on_event),
        }
    }

    /// Feeds one byte delta (a UTF-8 character may be split across deltas; bytes that
    /// are not UTF-8 give an `invalid_utf8` diagnostic).
    pub fn feed_bytes(&mut self, delta: &[u8], mut on_event: impl FnMut(Event<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.feed_bytes(delta, |e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.feed_bytes(delta, |e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.feed_bytes(delta, on_event),
        }
    }

    /// Ends the stream: emits held-back prose and closes a block left open (with the
    /// protocols' end-of-stream repairs).
    pub fn finish(mut self, on_event: impl FnMut(Event<'_>)) {
        self.finish_in_place(on_event);
    }

    /// Like [`Decoder::finish`], leaving the decoder ready for a new stream.
    pub fn finish_in_place(&mut self, mut on_event: impl FnMut(Event<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.finish_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.finish_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.finish(false, on_event),
        }
    }

    /// Ends a stream that was cut (`finish_reason: "length"`, a transport error): no
    /// end-of-stream repair applies to a block open at the cut: it yields no
    /// call.
    pub fn finish_cut(mut self, on_event: impl FnMut(Event<'_>)) {
        self.finish_cut_in_place(on_event);
    }

    /// Like [`Decoder::finish_cut`], leaving the decoder ready for a new stream.
    pub fn finish_cut_in_place(&mut self, mut on_event: impl FnMut(Event<'_>)) {
        let on = self.param_events;
        match &mut self.inner {
            Inner::Tam(d) => d.finish_cut_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Action(d) => d.finish_cut_in_place(|e| convert(on, &mut on_event, e)),
            Inner::Auto(d) => d.finish(true, on_event),
        }
    }
}

tam_parse::impl_stream_decoder!(Decoder, Event<'static>);
