//! One face over the three stream decoders `tam decode` can run: tam-parse's TAM decoder,
//! action-xml's ACTION decoder, and action-xml's mixed decoder for streams with both.
//!
//! Every decoder's events are reported as [`MixedEvent`]s (action-xml's `From`
//! conversions), the richest of the three event types, so the output writer has one event
//! type to handle.

use action_xml::{MixedConfig, MixedDecoder, MixedEvent};
use tam_parse::Dialect;

/// Which blocks a [`ProtocolDecoder`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocks {
    /// TAM blocks only; `<ACTION>` is prose.
    Tam,
    /// ACTION blocks only; TAM markers are prose.
    Action,
    /// Both, in one stream.
    Both,
}

/// A stream decoder for the protocol(s) chosen on the command line.
#[derive(Debug)]
pub(crate) enum ProtocolDecoder {
    Tam(tam_parse::Decoder),
    Action(action_xml::Decoder),
    Both(MixedDecoder),
}

impl ProtocolDecoder {
    /// A decoder for `blocks`, reading TAM blocks in `dialect`, with every limit at its
    /// default.
    pub(crate) fn new(blocks: Blocks, dialect: Dialect) -> Self {
        let tam = tam_parse::Config::with_dialect(dialect);
        match blocks {
            Blocks::Tam => ProtocolDecoder::Tam(tam_parse::Decoder::new(tam)),
            Blocks::Action => ProtocolDecoder::Action(action_xml::Decoder::default()),
            Blocks::Both => {
                let mut config = MixedConfig::default();
                config.tam = tam;
                ProtocolDecoder::Both(MixedDecoder::new(config))
            }
        }
    }

    /// Stream offset of the next byte to be fed: the length of the decoded content so far.
    pub(crate) fn position(&self) -> usize {
        match self {
            ProtocolDecoder::Tam(decoder) => decoder.position(),
            ProtocolDecoder::Action(decoder) => decoder.position(),
            ProtocolDecoder::Both(decoder) => decoder.position(),
        }
    }

    /// Feeds one text delta.
    pub(crate) fn feed(&mut self, delta: &str, mut on_event: impl FnMut(MixedEvent<'_>)) {
        match self {
            ProtocolDecoder::Tam(decoder) => decoder.feed(delta, |e| on_event(e.into())),
            ProtocolDecoder::Action(decoder) => {
                decoder.feed(delta, |e| on_event(e.into()));
            }
            ProtocolDecoder::Both(decoder) => decoder.feed(delta, on_event),
        }
    }

    /// Feeds one byte delta (a UTF-8 character may be split across deltas; bytes that are
    /// not UTF-8 give an `invalid_utf8` diagnostic).
    pub(crate) fn feed_bytes(&mut self, delta: &[u8], mut on_event: impl FnMut(MixedEvent<'_>)) {
        match self {
            ProtocolDecoder::Tam(decoder) => {
                decoder.feed_bytes(delta, |e| on_event(e.into()));
            }
            ProtocolDecoder::Action(decoder) => {
                decoder.feed_bytes(delta, |e| on_event(e.into()));
            }
            ProtocolDecoder::Both(decoder) => decoder.feed_bytes(delta, on_event),
        }
    }

    /// Ends the stream: held-back prose, and a block left open.
    pub(crate) fn finish(self, mut on_event: impl FnMut(MixedEvent<'_>)) {
        match self {
            ProtocolDecoder::Tam(decoder) => decoder.finish(|e| on_event(e.into())),
            ProtocolDecoder::Action(decoder) => {
                decoder.finish(|e| on_event(e.into()));
            }
            ProtocolDecoder::Both(decoder) => decoder.finish(on_event),
        }
    }
}
