//! A `tokio_util::codec::Decoder`: bytes in, owned [`Event`]s out (feature `codec`).
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
//! // Text, BlockStart, CommandSeen, Block.
//! assert!(matches!(&events[3], Event::Block(b) if &*b.calls[0].tool == "x"));
//! ```

use std::collections::VecDeque;

use bytes::BytesMut;

use crate::decoder::{Config, Decoder, Event};

/// Decodes a byte stream (e.g. a `FramedRead` over a socket or a child's stdout).
///
/// Every call to `decode` consumes all buffered bytes, so `FramedRead`'s buffer never
/// grows; events wait in a queue until taken one by one.
#[derive(Debug)]
pub struct TamCodec {
    decoder: Decoder,
    queue: VecDeque<Event<'static>>,
    finished: bool,
}

impl TamCodec {
    /// A codec over a decoder with `config`.
    pub fn new(config: Config) -> Self {
        TamCodec {
            decoder: Decoder::new(config),
            queue: VecDeque::new(),
            finished: false,
        }
    }
}

impl tokio_util::codec::Decoder for TamCodec {
    type Item = Event<'static>;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if !src.is_empty() {
            let queue = &mut self.queue;
            self.decoder
                .feed_bytes(src, |e| queue.push_back(e.into_owned()));
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
            self.decoder
                .finish_in_place(|e| queue.push_back(e.into_owned()));
        }
        Ok(self.queue.pop_front())
    }
}
