//! A `futures_core::Stream` of owned [`Event`](crate::Event)s over a stream of text deltas (feature
//! `stream`).
//!
//! async-openai, genai and ollama-rs deliver a model's output as a stream of chunks; map
//! each chunk to its text (and handle errors) first, then wrap:
//!
//! ```
//! # futures_util::FutureExt::now_or_never(async {
//! use futures_util::{stream, StreamExt};
//! use tam_parse::{stream::EventStream, Config, Event};
//!
//! let deltas = stream::iter(["<|[REQUEST_TOOL]|>command:「始」a「末」", "<|[END_TOOL]|>"]);
//! let events: Vec<Event<'static>> = EventStream::new(deltas, Config::default()).collect().await;
//! // BlockStart, the `command` entry streamed (ParamStart, ParamText, ParamEnd),
//! // CommandSeen, Block.
//! assert!(matches!(events.last(), Some(Event::Block(b)) if &*b.calls[0].tool == "a"));
//! # }).unwrap();
//! ```

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::decoder::{Config, Decoder};
use crate::drive::StreamDecoder;

/// Decodes a stream of text deltas into a stream of owned events, with this crate's
/// [`Decoder`] by default or any [`StreamDecoder`] ([`EventStream::with_decoder`]). A
/// block's event is yielded as soon as the delta carrying its end marker arrives; the end
/// of the inner stream ends the decoder normally.
#[derive(Debug)]
pub struct EventStream<S, D: StreamDecoder = Decoder> {
    inner: S,
    decoder: Option<D>,
    queue: VecDeque<D::OwnedEvent>,
}

impl<S> EventStream<S> {
    /// Wraps `inner` with a TAM [`Decoder`] made with `config`.
    pub fn new(inner: S, config: Config) -> Self {
        EventStream::with_decoder(inner, Decoder::new(config))
    }
}

impl<S, D: StreamDecoder> EventStream<S, D> {
    /// Wraps `inner` with `decoder`.
    pub fn with_decoder(inner: S, decoder: D) -> Self {
        EventStream {
            inner,
            decoder: Some(decoder),
            queue: VecDeque::new(),
        }
    }
}

impl<S, T, D> Stream for EventStream<S, D>
where
    S: Stream<Item = T> + Unpin,
    T: AsRef<str>,
    D: StreamDecoder + Unpin,
    D::OwnedEvent: Unpin,
{
    type Item = D::OwnedEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(e) = this.queue.pop_front() {
                return Poll::Ready(Some(e));
            }
            let Some(decoder) = this.decoder.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(delta)) => {
                    let queue = &mut this.queue;
                    decoder.feed_owned(delta.as_ref(), &mut |e| queue.push_back(e));
                }
                Poll::Ready(None) => {
                    let queue = &mut this.queue;
                    if let Some(mut d) = this.decoder.take() {
                        d.end_owned(false, &mut |e| queue.push_back(e));
                    }
                }
            }
        }
    }
}
