//! The one driver of the family's decoders, and the one shape they show.
//!
//! * [`Driver`] runs the [`Scanner`] for a [`Layer`] — what a decoder adds beside the
//!   scanner (this crate's block parser, action-xml's ACTION reader, both at once) — and
//!   does, once for all of them, what every decoder does with a delta and at the end of a
//!   stream. A decoder's `feed`, `feed_bytes`, `finish*` and `finish_cut*` are the
//!   driver's, written out by [`decoder_methods!`](crate::decoder_methods).
//! * [`StreamDecoder`] is the one shape every streaming decoder of the family has (this
//!   crate's [`Decoder`](crate::Decoder), action-xml's decoders, the `tam` front door), so
//!   that one [`EventStream`](crate::stream::EventStream) and one
//!   [`Codec`](crate::codec::Codec) serve them all.

use crate::scan::{ScanHandler, Scanner};

/// What a decoder adds beside the [`Scanner`]: its state, and the handler of the
/// scanner's callbacks that turns them into its events.
pub trait Layer {
    /// The decoder's event, borrowing from the delta or the block buffer.
    type Event<'e>;

    /// The scanner's callbacks for one delta (`delta`: its bytes; empty when the stream
    /// ends), sending events to `out`.
    fn handler<'s, F: FnMut(Self::Event<'_>)>(
        &'s mut self,
        delta: &'s [u8],
        out: &'s mut F,
    ) -> impl ScanHandler + 's;

    /// Called after each delta, once the scanner is done with it.
    fn delta_done(&mut self, delta: &[u8]) {
        let _ = delta;
    }

    /// Called after the stream ended: the layer is ready for a new stream.
    fn stream_done(&mut self) {}
}

/// A [`Scanner`] and a [`Layer`]: the body of every decoder of the family.
#[derive(Debug)]
pub struct Driver<L> {
    scanner: Scanner,
    layer: L,
}

impl<L: Layer> Driver<L> {
    /// `layer` on `scanner` (built with the grammar and limits the layer expects).
    pub fn new(scanner: Scanner, layer: L) -> Self {
        Driver { scanner, layer }
    }

    /// The layer.
    pub fn layer(&self) -> &L {
        &self.layer
    }

    /// The layer, to change before the first delta.
    pub fn layer_mut(&mut self) -> &mut L {
        &mut self.layer
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        self.scanner.position()
    }

    /// Bytes held: prose held back (a possible marker prefix) or the open block.
    pub fn buffered(&self) -> usize {
        self.scanner.buffered()
    }

    /// The open block as written so far ([`Scanner::open_block_text`]).
    pub fn open_block_text(&self) -> Option<&str> {
        self.scanner.open_block_text()
    }

    /// Feeds one text delta.
    #[inline]
    pub fn feed(&mut self, delta: &str, mut on_event: impl FnMut(L::Event<'_>)) {
        let mut handler = self.layer.handler(delta.as_bytes(), &mut on_event);
        self.scanner.feed(delta, &mut handler);
        drop(handler);
        self.layer.delta_done(delta.as_bytes());
    }

    /// Feeds one byte delta (a UTF-8 character may be split across deltas).
    #[inline]
    pub fn feed_bytes(&mut self, delta: &[u8], mut on_event: impl FnMut(L::Event<'_>)) {
        let mut handler = self.layer.handler(delta, &mut on_event);
        self.scanner.feed_bytes(delta, &mut handler);
        drop(handler);
        self.layer.delta_done(delta);
    }

    /// Ends the stream (`cut`: it was cut, so a block open at the end gives no call) and
    /// readies the driver for a new one.
    pub fn finish(&mut self, cut: bool, mut on_event: impl FnMut(L::Event<'_>)) {
        let mut handler = self.layer.handler(&[], &mut on_event);
        if cut {
            self.scanner.finish_cut(&mut handler);
        } else {
            self.scanner.finish(&mut handler);
        }
        drop(handler);
        self.layer.stream_done();
    }
}

/// Writes out a decoder's `feed`, `feed_bytes`, `finish`, `finish_in_place`, `finish_cut`
/// and `finish_cut_in_place` (the family's shape, with its documentation) over the
/// [`Driver`] in field `$driver`: `decoder_methods!(driver, Event)` inside `impl Decoder`.
#[macro_export]
#[doc(hidden)]
macro_rules! decoder_methods {
    ($driver:ident, $event:ident) => {
        /// Feeds one text delta; events go to `on_event` as soon as they are decided.
        pub fn feed(&mut self, delta: &str, on_event: impl FnMut($event<'_>)) {
            self.$driver.feed(delta, on_event);
        }

        /// Feeds one byte delta. A UTF-8 character may be split across byte deltas;
        /// invalid UTF-8 gets an `invalid_utf8` diagnostic (inside a block, U+FFFD stands
        /// in for it).
        pub fn feed_bytes(&mut self, delta: &[u8], on_event: impl FnMut($event<'_>)) {
            self.$driver.feed_bytes(delta, on_event);
        }

        /// Ends the stream: emits held-back prose and closes a block left open by the
        /// end-of-stream rules of the crate docs.
        pub fn finish(mut self, on_event: impl FnMut($event<'_>)) {
            self.$driver.finish(false, on_event);
        }

        /// Like `finish`, leaving the decoder ready for a new stream.
        pub fn finish_in_place(&mut self, on_event: impl FnMut($event<'_>)) {
            self.$driver.finish(false, on_event);
        }

        /// Ends a stream that was cut (`finish_reason: "length"`, a transport error):
        /// like `finish`, but no end-of-stream repair applies to a block open at the cut:
        /// it yields no call.
        pub fn finish_cut(mut self, on_event: impl FnMut($event<'_>)) {
            self.$driver.finish(true, on_event);
        }

        /// Like `finish_cut`, leaving the decoder ready for a new stream.
        pub fn finish_cut_in_place(&mut self, on_event: impl FnMut($event<'_>)) {
            self.$driver.finish(true, on_event);
        }

        /// Stream offset of the next byte to be fed.
        pub fn position(&self) -> usize {
            self.$driver.position()
        }

        /// Bytes held: prose held back (a possible marker prefix, or reasoning tag) or
        /// the open block.
        pub fn buffered(&self) -> usize {
            self.$driver.buffered()
        }

        /// The open block as written so far, its start marker included: `None` outside a
        /// block, and for a block past its size limit (its bytes are being dropped).
        pub fn open_block_text(&self) -> Option<&str> {
            self.$driver.open_block_text()
        }
    };
}

/// A streaming decoder: bytes or text in, in pieces of any size, owned events out.
///
/// The decoders' inherent methods (`feed`, `feed_bytes`, `finish`, `finish_cut`) hand out
/// borrowed events without copying; this trait is what the adapters need: owned events
/// and one way to end a stream, normally or cut.
pub trait StreamDecoder {
    /// The decoder's event with no borrow left.
    type OwnedEvent: 'static;

    /// Feeds one text delta.
    fn feed_owned(&mut self, delta: &str, out: &mut dyn FnMut(Self::OwnedEvent));

    /// Feeds one byte delta (a UTF-8 character may be split across deltas; bytes that are
    /// not UTF-8 are reported as the decoder reports them).
    fn feed_bytes_owned(&mut self, delta: &[u8], out: &mut dyn FnMut(Self::OwnedEvent));

    /// Ends the stream, leaving the decoder ready for a new one: `cut` when the stream was
    /// cut (token limit, transport error), so a block open at the end gives no call.
    fn end_owned(&mut self, cut: bool, out: &mut dyn FnMut(Self::OwnedEvent));
}

/// Implements [`StreamDecoder`] for a decoder whose inherent methods have the family's
/// shape (`feed`, `feed_bytes`, `finish_in_place`, `finish_cut_in_place`, each calling back
/// with events that have `into_owned`): `impl_stream_decoder!(Decoder, Event<'static>)`.
#[macro_export]
#[doc(hidden)]
macro_rules! impl_stream_decoder {
    ($decoder:ty, $owned:ty) => {
        impl $crate::StreamDecoder for $decoder {
            type OwnedEvent = $owned;

            fn feed_owned(&mut self, delta: &str, out: &mut dyn FnMut(Self::OwnedEvent)) {
                self.feed(delta, |e| out(e.into_owned()));
            }

            fn feed_bytes_owned(&mut self, delta: &[u8], out: &mut dyn FnMut(Self::OwnedEvent)) {
                self.feed_bytes(delta, |e| out(e.into_owned()));
            }

            fn end_owned(&mut self, cut: bool, out: &mut dyn FnMut(Self::OwnedEvent)) {
                if cut {
                    self.finish_cut_in_place(|e| out(e.into_owned()));
                } else {
                    self.finish_in_place(|e| out(e.into_owned()));
                }
            }
        }
    };
}

impl_stream_decoder!(crate::Decoder, crate::Event<'static>);
