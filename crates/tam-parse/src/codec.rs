//! A `tokio_util::codec::Decoder`: bytes in, owned [`Event`](crate::Event)s out (feature `codec`).
//!
//! ```
//! use tokio_util::codec::Decoder as _;
//! use bytes::BytesMut;
//! use tam_parse::{codec::TamCodec, Config, Event};
//!
//! let mut codec = TamCodec::new(Config::default());
//! let mut buf = BytesMut::from("hi <|[REQUEST_TOOL]|>command:「始」x「末」<|[END_TOOL]|>");
//! let mut events = Vec::new();
//! while let Some(e) = codec.decode(&mut buf).unwrap() { events.push(e); }
//! while let Some(e) = codec.decode_eof(&mut buf).unwrap() { events.push(e); }
//! assert!(matches!(&events[0], Event::Text { text, .. } if text == "hi "));
//! // Text, BlockStart, the `command` entry streamed, CommandSeen, Block.
//! assert!(matches!(events.last(), Some(Event::Block(b)) if &*b.calls[0].tool == "x"));
//! ```

use std::collections::VecDeque;

use bytes::BytesMut;

use crate::decoder::{Config, Decoder};
use crate::drive::StreamDecoder;

/// Decodes a byte stream (e.g. a `FramedRead` over a socket or a child's stdout) with this
/// crate's [`Decoder`] by default, or any [`StreamDecoder`] ([`Codec::with_decoder`]).
///
/// Every call to `decode` consumes all buffered bytes, so `FramedRead`'s buffer never
/// grows; events wait in a queue until taken one by one. `decode_eof` ends the decoder
/// normally.
#[derive(Debug)]
pub struct Codec<D: StreamDecoder = Decoder> {
    decoder: D,
    queue: VecDeque<D::OwnedEvent>,
    finished: bool,
}

/// The codec over this crate's TAM [`Decoder`].
pub type TamCodec = Codec<Decoder>;

impl Codec {
    /// A codec over a TAM decoder with `config`.
    pub fn new(config: Config) -> Self {
        Codec::with_decoder(Decoder::new(config))
    }
}

impl<D: StreamDecoder> Codec<D> {
    /// A codec over `decoder`.
    pub fn with_decoder(decoder: D) -> Self {
        Codec {
            decoder,
            queue: VecDeque::new(),
            finished: false,
        }
    }
}

impl<D: StreamDecoder> tokio_util::codec::Decoder for Codec<D> {
    type Item = D::OwnedEvent;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if !src.is_empty() {
            let queue = &mut self.queue;
            self.decoder
                .feed_bytes_owned(src, &mut |e| queue.push_back(e));
            src.clear();
        }
        Ok(self.queue.pop_front())
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if let Some(e) = self.decode(src)? {
            return Ok(Some(e));
        }
        if !self.finished {
            self.finished = true;
            let queue = &mut self.queue;
            self.decoder.end_owned(false, &mut |e| queue.push_back(e));
        }
        Ok(self.queue.pop_front())
    }
}
