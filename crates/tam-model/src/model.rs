//! What the agent loop asks of a language model, and what a model's stream carries: text,
//! reasoning, native tool-call chunks and how the stream finished — the items of an
//! OpenAI-compatible `chat.completions` stream, for any model.

use std::sync::Arc;

use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::BoxError;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The user, or the runtime speaking for the tools (observations, by default).
    User,
    /// The model.
    Assistant,
    /// Tool results, for servers that accept a `tool` message without a native call id.
    /// The agent sends observations with this role only when
    /// `observation_role` setting says so:
    /// the text protocols' calls have no native call id, and the chat templates of most
    /// OpenAI-compatible servers reject or misplace a `tool` message without one.
    Tool,
}

impl Role {
    /// The role's name in the OpenAI chat format: `system`, `user`, `assistant`, `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What was written.
    pub content: String,
}

impl Message {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool-result message (see [`Role::Tool`]).
    pub fn tool(content: impl Into<String>) -> Self {
        Self::new(Role::Tool, content)
    }
}

/// The caller's sampling options; `None` (or an empty `stop`) leaves the server's default.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelOptions {
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Most tokens the model may write in one reply; past it the reply is cut
    /// ([`FinishReason::Length`]).
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Sampling seed, for reproducible output where the server supports it.
    pub seed: Option<u64>,
}

impl ModelOptions {
    /// No option set: every choice is the server's.
    pub fn new() -> Self {
        Self::default()
    }

    /// These options with `temperature`.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// These options with `max_tokens`.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// These options with `stop` sequences.
    #[must_use]
    pub fn with_stop<S: Into<String>>(mut self, stop: impl IntoIterator<Item = S>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// These options with `seed`.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
}

impl ModelOptions {
    /// These options with every option `other` sets put over them (`other` wins; an empty
    /// `other.stop` keeps these stop sequences): e.g. command-line flags over a node's
    /// `parameters`.
    #[must_use]
    pub fn overridden_by(self, other: ModelOptions) -> Self {
        Self {
            temperature: other.temperature.or(self.temperature),
            max_tokens: other.max_tokens.or(self.max_tokens),
            stop: if other.stop.is_empty() {
                self.stop
            } else {
                other.stop
            },
            seed: other.seed.or(self.seed),
        }
    }
}

/// One completion request: the conversation, the sampling options and, where the server
/// can enforce one, a [`Constraint`] on what the model may write.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Sampling options.
    pub options: ModelOptions,
    /// A constraint the server applies to its own sampling. Default: none. Each model
    /// sends the kinds its server understands and ignores the others (see each model's
    /// documentation): a constraint narrows what a reply may be, it never carries meaning
    /// the prompt lacks, so a server without it gets the prompt alone.
    pub constraint: Option<Constraint>,
}

impl ModelRequest {
    /// A request for `messages` with `options` and no constraint.
    pub fn new(messages: Vec<Message>, options: ModelOptions) -> Self {
        Self {
            messages,
            options,
            constraint: None,
        }
    }

    /// This request with `constraint`.
    #[must_use]
    pub fn with_constraint(mut self, constraint: Constraint) -> Self {
        self.constraint = Some(constraint);
        self
    }
}

/// A constraint a server applies while it samples the reply ("constrained decoding"):
/// once the model starts a tool-call block it can only write a block the grammar allows.
/// The grammar or tag structure is built by the caller; a model only passes it on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Constraint {
    /// A GBNF grammar (llama.cpp's grammar format), for llama.cpp's `llama-server`.
    ///
    /// With `lazy`, the server samples freely until the model writes one of `triggers`,
    /// then constrains the rest of the reply by `grammar`, whose root rule must match the
    /// text from the trigger on (the trigger included): prose before a block stays free.
    /// llama.cpp looks for a trigger anywhere in the reply written so far, so the first
    /// one switches the grammar on, a mention in prose too. Without `lazy` the whole reply
    /// follows the grammar (a reply that must be a call).
    Gbnf {
        /// The grammar's text, root rule `root`.
        grammar: String,
        /// Whether the grammar waits for a trigger.
        lazy: bool,
        /// The words that switch a lazy grammar on (a tool-call block's start marker). A
        /// lazy grammar needs at least one; llama-server refuses one without.
        triggers: Vec<String>,
        /// Regular expressions (ECMAScript, as llama-server's `std::regex` reads them) that
        /// switch a lazy grammar on too, where they match the reply written so far; the
        /// grammar applies from the match's first capture group (`tool_schema`'s
        /// `StrictGrammar::trigger_patterns`: a call element at a line's start). May be
        /// empty.
        patterns: Vec<String>,
    },
    /// A structural tag, for vLLM and SGLang: the whole `response_format` object of a
    /// Chat Completions request (`{"type": "structural_tag", …}`), sent as given; an
    /// object without a `type` gets `"type": "structural_tag"`.
    StructuralTag(serde_json::Value),
}

/// How a model's stream ended (`finish_reason`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its reply (or met a stop sequence).
    Stop,
    /// The reply hit the token limit: the stream is cut.
    Length,
    /// The model made native tool calls.
    ToolCalls,
    /// The server's content filter ended the reply.
    ContentFilter,
    /// Another reason, as the server named it.
    #[serde(untagged)]
    Other(String),
}

impl FinishReason {
    /// The reason a server names: `stop`, `length`, `tool_calls` (and the older
    /// `function_call`), `content_filter`, or any other name.
    pub fn from_name(name: &str) -> Self {
        match name {
            "stop" | "eos" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }

    /// The reason's name in the OpenAI format.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(name) => name,
        }
    }

    /// Whether the reply was cut before the model ended it (only [`FinishReason::Length`]):
    /// no call runs from a block open at the cut.
    pub fn is_cut(&self) -> bool {
        matches!(self, FinishReason::Length)
    }
}

/// One piece of a native tool call (`delta.tool_calls[i]`): the first piece of a call
/// usually carries its id and name, later ones pieces of the arguments' JSON text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallChunk {
    /// Which call of the reply the piece belongs to.
    pub index: usize,
    /// The call's id, when this piece carries it.
    pub id: Option<String>,
    /// The function name, when this piece carries it.
    pub name: Option<String>,
    /// A piece of the arguments' JSON text (may be empty).
    pub arguments: String,
}

impl ToolCallChunk {
    /// A piece of call `index`.
    pub fn new(
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            index,
            id,
            name,
            arguments: arguments.into(),
        }
    }
}

/// One item of a model's stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelItem {
    /// A piece of the reply's text (`delta.content`): what the protocol decoder reads.
    Text(String),
    /// A piece of the model's reasoning (`delta.reasoning_content` / `delta.reasoning`):
    /// shown, never decoded into calls.
    Reasoning(String),
    /// A piece of a native tool call (`delta.tool_calls`): reported, never run.
    ToolCallChunk(ToolCallChunk),
    /// How the reply ended (`finish_reason`); the last item of a complete stream.
    Finish(FinishReason),
    /// The stop sequence the server says the reply stopped at, sent before or with the
    /// finish: vLLM's `stop_reason`, SGLang's `matched_stop` (when a string), llama-server
    /// `/completion`'s `stopping_word`. A server that stopped at a stop sequence leaves it
    /// out of the text; one that says nothing (most Chat Completions servers) sends no
    /// such item.
    StopSequence(String),
    /// The server's token counts for the request (`usage`: `prompt_tokens`,
    /// `completion_tokens`, `total_tokens`, and whatever else it reports), as sent. Servers
    /// send it once, with or after the finish.
    Usage(serde_json::Map<String, serde_json::Value>),
}

impl From<&str> for ModelItem {
    fn from(text: &str) -> Self {
        ModelItem::Text(text.to_owned())
    }
}

impl From<String> for ModelItem {
    fn from(text: String) -> Self {
        ModelItem::Text(text)
    }
}

/// A language model that streams its reply.
///
/// The stream yields [`ModelItem`]s in order; an `Err` is a transport failure and ends the
/// stream (the reply is cut: a consumer runs no call the model had not finished). A stream that ends without a
/// [`ModelItem::Finish`] is taken as finished normally (`stop`): scripted and local models
/// need not send one.
pub trait LanguageModel: Send + Sync {
    /// Starts one completion of `request`.
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>>;
}

impl<M: LanguageModel + ?Sized> LanguageModel for &M {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        (**self).stream(request)
    }
}

impl<M: LanguageModel + ?Sized> LanguageModel for Box<M> {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        (**self).stream(request)
    }
}

impl<M: LanguageModel + ?Sized> LanguageModel for Arc<M> {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        (**self).stream(request)
    }
}

/// A piece of content after [`ThinkSplitter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentPiece<'a> {
    /// Reply text.
    Text(&'a str),
    /// Reasoning written inside `<think>…</think>`.
    Reasoning(&'a str),
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
/// Most blank held at the start while waiting for `<think>`; past it the reply is text.
const MAX_LEADING_BLANK: usize = 256;

/// Splits `<think>…</think>` reasoning out of a model's content as it streams (DeepSeek-R1,
/// Qwen3 and other reasoning models served without a reasoning parser).
///
/// The open tag counts only at the start of the reply (after blank), where these models
/// write it; a `<think>` later in the reply is text (prose about the tag, code). Everything
/// up to `</think>` is reasoning; the tags themselves are dropped, all else is passed on.
/// Bytes that may begin a tag are held back until the next delta decides (at most the
/// tag's length, plus up to 256 bytes of leading blank at the start);
/// [`ThinkSplitter::finish`] releases them.
/// The pieces are the same whatever the deltas, once adjacent pieces of a kind are joined.
#[derive(Debug, Clone, Default)]
pub struct ThinkSplitter {
    state: ThinkState,
    held: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum ThinkState {
    /// At the start of the reply: `held` is blank and perhaps the start of `<think>`.
    #[default]
    Start,
    /// Inside the reasoning: `held` is perhaps the start of `</think>`.
    Reasoning,
    /// Past the reasoning (or there was none): everything is text.
    Text,
}

impl ThinkSplitter {
    /// A splitter at the start of a reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Splits one delta, calling `out` with its pieces in order.
    pub fn feed(&mut self, delta: &str, mut out: impl FnMut(ContentPiece<'_>)) {
        let mut rest = delta;
        while !rest.is_empty() {
            match self.state {
                ThinkState::Text => {
                    out(ContentPiece::Text(rest));
                    return;
                }
                ThinkState::Start => {
                    let before = self.held.len();
                    self.held.push_str(rest);
                    let lead = self.held.len() - self.held.trim_start().len();
                    let trimmed = &self.held[lead..];
                    if trimmed.starts_with(THINK_OPEN) {
                        // The held bytes did not hold the whole tag, so it ends in `rest`.
                        let end = lead + THINK_OPEN.len();
                        rest = &rest[end.saturating_sub(before)..];
                        self.held.clear();
                        self.state = ThinkState::Reasoning;
                        continue;
                    }
                    rest = "";
                    if !THINK_OPEN.starts_with(trimmed) || self.held.len() > MAX_LEADING_BLANK {
                        self.state = ThinkState::Text;
                        let held = std::mem::take(&mut self.held);
                        out(ContentPiece::Text(&held));
                    }
                }
                ThinkState::Reasoning => {
                    if self.held.is_empty() {
                        match rest.find(THINK_CLOSE) {
                            Some(at) => {
                                if at > 0 {
                                    out(ContentPiece::Reasoning(&rest[..at]));
                                }
                                self.state = ThinkState::Text;
                                rest = &rest[at + THINK_CLOSE.len()..];
                            }
                            None => {
                                let keep = partial_suffix(rest, THINK_CLOSE);
                                let (now, later) = rest.split_at(rest.len() - keep);
                                if !now.is_empty() {
                                    out(ContentPiece::Reasoning(now));
                                }
                                self.held.push_str(later);
                                return;
                            }
                        }
                    } else {
                        // Finish or drop the held partial tag one character at a time.
                        let ch = rest.chars().next().map_or(0, char::len_utf8);
                        self.held.push_str(&rest[..ch]);
                        rest = &rest[ch..];
                        if self.held == THINK_CLOSE {
                            self.held.clear();
                            self.state = ThinkState::Text;
                        } else if !THINK_CLOSE.starts_with(self.held.as_str()) {
                            let held = std::mem::take(&mut self.held);
                            // All but the last character cannot start the tag any more;
                            // the last may (`<` after `</`).
                            let keep = partial_suffix(&held, THINK_CLOSE);
                            let (now, later) = held.split_at(held.len() - keep);
                            out(ContentPiece::Reasoning(now));
                            self.held.push_str(later);
                        }
                    }
                }
            }
        }
    }

    /// Ends the reply: releases held bytes (blank or a partial tag at the start as text, a
    /// partial `</think>` as reasoning).
    pub fn finish(self, mut out: impl FnMut(ContentPiece<'_>)) {
        if self.held.is_empty() {
            return;
        }
        match self.state {
            ThinkState::Reasoning => out(ContentPiece::Reasoning(&self.held)),
            ThinkState::Start | ThinkState::Text => out(ContentPiece::Text(&self.held)),
        }
    }

    /// Whether the reply is inside `<think>` now.
    pub fn in_reasoning(&self) -> bool {
        self.state == ThinkState::Reasoning
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.is_char_boundary(text.len() - n) && text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces joined by kind: ('t' or 'r', text).
    fn split(deltas: &[&str]) -> Vec<(char, String)> {
        let mut pieces: Vec<(char, String)> = Vec::new();
        let mut push = |piece: ContentPiece<'_>| {
            let (kind, text) = match piece {
                ContentPiece::Text(t) => ('t', t),
                ContentPiece::Reasoning(r) => ('r', r),
            };
            assert!(!text.is_empty(), "no empty piece");
            match pieces.last_mut() {
                Some((k, t)) if *k == kind => t.push_str(text),
                _ => pieces.push((kind, text.to_owned())),
            }
        };
        let mut splitter = ThinkSplitter::new();
        for delta in deltas {
            splitter.feed(delta, &mut push);
        }
        splitter.finish(&mut push);
        pieces
    }

    fn all_ways(input: &str) -> Vec<(char, String)> {
        let whole = split(&[input]);
        let chars: Vec<String> = input.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(split(&refs), whole, "char by char: {input:?}");
        for (at, _) in input.char_indices() {
            assert_eq!(
                split(&[&input[..at], &input[at..]]),
                whole,
                "split at {at}: {input:?}"
            );
        }
        whole
    }

    fn owned(pieces: &[(char, &str)]) -> Vec<(char, String)> {
        pieces.iter().map(|(k, t)| (*k, (*t).to_owned())).collect()
    }

    #[test]
    fn reasoning_at_the_start_is_split_out() {
        assert_eq!(
            all_ways("<think>plan: call A</think>\n\nAnswer."),
            owned(&[('r', "plan: call A"), ('t', "\n\nAnswer.")])
        );
        assert_eq!(
            all_ways("\n <think>x</</think>y"),
            owned(&[('r', "x</"), ('t', "y")])
        );
        assert_eq!(
            all_ways("<think>a <thin b </thi</think>"),
            owned(&[('r', "a <thin b </thi")])
        );
    }

    #[test]
    fn a_later_think_tag_is_text() {
        assert_eq!(
            all_ways("Use <think> tags.</think>"),
            owned(&[('t', "Use <think> tags.</think>")])
        );
        assert_eq!(all_ways("<thing>"), owned(&[('t', "<thing>")]));
        assert_eq!(all_ways("  <thi"), owned(&[('t', "  <thi")]));
        assert_eq!(all_ways("日本<think>"), owned(&[('t', "日本<think>")]));
    }

    #[test]
    fn an_unclosed_reasoning_keeps_every_byte() {
        assert_eq!(
            all_ways("<think>still thinking </thin"),
            owned(&[('r', "still thinking </thin")])
        );
        assert_eq!(all_ways("<think>"), Vec::<(char, String)>::new());
    }

    #[test]
    fn set_options_override_and_unset_ones_keep_the_base() {
        let base = ModelOptions::new()
            .with_temperature(0.7)
            .with_max_tokens(10)
            .with_stop(["X"])
            .with_seed(1);
        let flags = ModelOptions::new().with_max_tokens(20).with_seed(2);
        assert_eq!(
            base.clone().overridden_by(flags),
            ModelOptions::new()
                .with_temperature(0.7)
                .with_max_tokens(20)
                .with_stop(["X"])
                .with_seed(2)
        );
        let stop = ModelOptions::new().with_stop(["Y"]);
        assert_eq!(base.overridden_by(stop).stop, vec!["Y".to_owned()]);
    }
}
