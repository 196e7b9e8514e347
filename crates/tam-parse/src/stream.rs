//! A `futures_core::Stream` of owned [`Event`]s over a stream of text deltas (feature
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
//! // BlockStart, CommandSeen, Block.
//! assert!(matches!(&events[2], Event::Block(b) if &*b.calls[0].tool == "a"));
//! # }).unwrap();
//! ```

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::decoder::{Config, Decoder, Event};

/// Decodes a stream of text deltas into a stream of events. A block's event is yielded as
/// soon as the delta carrying its end marker arrives.
#[derive(Debug)]
pub struct EventStream<S> {
    inner: S,
    decoder: Option<Decoder>,
    queue: VecDeque<Event<'static>>,
}

impl<S> EventStream<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, config: Config) -> Self {
        EventStream {
            inner,
            decoder: Some(Decoder::new(config)),
            queue: VecDeque::new(),
        }
    }
}

impl<S, T> Stream for EventStream<S>
where
    S: Stream<Item = T> + Unpin,
    T: AsRef<str>,
{
    type Item = Event<'static>;

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
                    decoder.feed(delta.as_ref(), |e| queue.push_back(e.into_owned()));
                }
                Poll::Ready(None) => {
                    let queue = &mut this.queue;
                    if let Some(d) = this.decoder.take() {
                        d.finish(|e| queue.push_back(e.into_owned()));
                    }
                }
            }
        }
    }
}
