//! [`StreamDecoder`]: the one shape every streaming decoder of the family has (this crate's
//! [`Decoder`](crate::Decoder), action-xml's decoders, the `tam` front door), so that one
//! [`EventStream`](crate::stream::EventStream) and one [`Codec`](crate::codec::Codec)
//! serve them all.

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
