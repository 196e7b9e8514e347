//! The demo's language model: plays the [script] back the way a real
//! model streams, in token-sized deltas with a small pause before each.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use tool_dispatch::{BoxError, LanguageModel, ModelItem, ModelRequest};

use super::script;

/// Longest delta, in bytes (one character may be longer).
const MAX_TOKEN_BYTES: usize = 8;

/// How deltas are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pacing {
    /// No pause at all.
    Instant,
    /// A pause before each delta, between the two bounds (inclusive).
    Streamed {
        /// Shortest pause.
        min: Duration,
        /// Longest pause.
        max: Duration,
    },
}

/// A model that answers from the script, one round per request.
#[derive(Debug)]
pub(crate) struct ScriptedModel {
    rounds_served: AtomicUsize,
    pacing: Pacing,
}

impl ScriptedModel {
    /// A model that paces its deltas by `pacing`.
    pub(crate) fn new(pacing: Pacing) -> Self {
        ScriptedModel {
            rounds_served: AtomicUsize::new(0),
            pacing,
        }
    }
}

impl LanguageModel for ScriptedModel {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        let round = self.rounds_served.fetch_add(1, Ordering::Relaxed);
        let reply = script::reply(round, &request.messages);
        let mut pauses = PauseSequence::new(self.pacing, round);
        let deltas: Vec<(String, Duration)> = token_deltas(&reply)
            .into_iter()
            .map(|delta| (delta.to_owned(), pauses.next_pause()))
            .collect();
        stream::iter(deltas)
            .then(|(delta, pause)| async move {
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                Ok(ModelItem::Text(delta))
            })
            .boxed()
    }
}

/// Deterministic pauses spread over the pacing's range (xorshift: the demo looks the same
/// on every run without a random number crate).
struct PauseSequence {
    pacing: Pacing,
    state: u64,
}

impl PauseSequence {
    fn new(pacing: Pacing, round: usize) -> Self {
        PauseSequence {
            pacing,
            state: 0x9E37_79B9_7F4A_7C15 ^ (round as u64 + 1),
        }
    }

    fn next_pause(&mut self) -> Duration {
        let Pacing::Streamed { min, max } = self.pacing else {
            return Duration::ZERO;
        };
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let span = max.saturating_sub(min).as_micros() as u64;
        min + Duration::from_micros(self.state % (span + 1))
    }
}

/// How a character groups into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharClass {
    /// Letters and digits (any script).
    Word,
    /// A blank, which starts the word after it (` word`).
    Blank,
    /// A line break or tab; runs of them form one token.
    Break,
    /// Anything else: one token per character, as tokenizers split markup.
    Symbol,
}

fn class(c: char) -> CharClass {
    if c.is_alphanumeric() {
        CharClass::Word
    } else if c == ' ' {
        CharClass::Blank
    } else if c.is_whitespace() {
        CharClass::Break
    } else {
        CharClass::Symbol
    }
}

/// Splits `text` roughly as a model's tokenizer would: ` word` pieces of at most
/// [`MAX_TOKEN_BYTES`], each symbol alone (so `<|[REQUEST_TOOL]|>` arrives in nine pieces),
/// runs of line breaks together. The pieces concatenate to `text`.
pub(crate) fn token_deltas(text: &str) -> Vec<&str> {
    let mut deltas = Vec::new();
    let mut start = 0;
    let mut previous: Option<CharClass> = None;
    for (index, c) in text.char_indices() {
        let current = class(c);
        let boundary = match previous {
            None => false,
            Some(before) => {
                index - start >= MAX_TOKEN_BYTES
                    || current == CharClass::Symbol
                    || before == CharClass::Symbol
                    || (current == CharClass::Blank)
                    || (current == CharClass::Break) != (before == CharClass::Break)
            }
        };
        if boundary {
            deltas.push(&text[start..index]);
            start = index;
        }
        previous = Some(current);
    }
    if start < text.len() {
        deltas.push(&text[start..]);
    }
    deltas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_are_token_sized_and_give_the_text_back() {
        let text =
            "I'll check.\n<|[REQUEST_TOOL]|>\ncommand:「始」GetPlayerInfo「末」\n\n  indented";
        let deltas = token_deltas(text);
        assert_eq!(deltas.concat(), text);
        assert!(
            deltas
                .iter()
                .all(|d| d.len() <= MAX_TOKEN_BYTES || d.chars().count() == 1)
        );
        assert_eq!(&deltas[..4], ["I", "'", "ll", " check"]);
        assert!(deltas.contains(&"REQUEST"), "{deltas:?}");
        assert!(deltas.contains(&"\n\n"), "{deltas:?}");
        assert!(
            deltas.contains(&"GetPlaye"),
            "long words are cut: {deltas:?}"
        );
    }

    #[test]
    fn pauses_stay_in_range_and_vary() {
        let pacing = Pacing::Streamed {
            min: Duration::from_millis(5),
            max: Duration::from_millis(20),
        };
        let mut pauses = PauseSequence::new(pacing, 0);
        let drawn: Vec<Duration> = (0..200).map(|_| pauses.next_pause()).collect();
        assert!(
            drawn.iter().all(|p| (5..=20).contains(&p.as_millis())),
            "{drawn:?}"
        );
        assert!(
            drawn.iter().any(|p| p.as_millis() < 10) && drawn.iter().any(|p| p.as_millis() > 15)
        );
        assert_eq!(
            PauseSequence::new(Pacing::Instant, 0).next_pause(),
            Duration::ZERO
        );
    }

    #[tokio::test]
    async fn each_request_plays_the_next_round() {
        let model = ScriptedModel::new(Pacing::Instant);
        let text = |item: Result<ModelItem, BoxError>| match item.unwrap() {
            ModelItem::Text(text) => text,
            other => panic!("the demo model streams text only: {other:?}"),
        };
        let request = ModelRequest::default();
        let first: Vec<String> = model.stream(&request).map(text).collect().await;
        let second: Vec<String> = model.stream(&request).map(text).collect().await;
        assert!(first.concat().contains("<|[END_TOOL]|>"));
        assert!(second.concat().contains("<playerId>"));
        assert!(first.len() > 50, "streamed in many deltas");
    }
}
