//! What a streaming language model gives a tool-calling runtime, and one client for the
//! servers most people run.
//!
//! * [`LanguageModel`]: streams [`ModelItem`]s — text, reasoning, native tool-call chunks,
//!   token usage and a [`FinishReason`] — for a [`ModelRequest`] (the [`Message`]s and
//!   [`ModelOptions`]). Implement it over any client (async-openai, genai, rig, your own);
//!   the agent of `tool-dispatch` and the proxy of `tam-proxy` take any implementation.
//! * [`ThinkSplitter`]: splits a `<think>…</think>` section at the start of a reply out of
//!   its text, across deltas.
//! * [`sse`]: a sans-IO server-sent-event reader with a per-event size limit.
//! * [`Constraint`]: what a server that constrains its own sampling is asked to enforce
//!   (a lazy GBNF grammar for llama.cpp, a structural tag for vLLM and SGLang), carried by
//!   a [`ModelRequest`]; the grammar itself is built by the caller.
//! * [`openai`] (feature `openai`): [`openai::OpenAiModel`], a [`LanguageModel`] for any
//!   OpenAI-compatible `chat/completions` server (llama.cpp's `llama-server`, vLLM, SGLang,
//!   Ollama's `/v1`, OpenAI) over reqwest with rustls, under an idle time-out;
//!   [`openai::LlamaCompletionModel`], the same for llama-server's native `/completion`
//!   (where a lazy grammar is honoured); [`openai::detect_upstream_kind`], which of these
//!   servers answers at a URL.
//!
//! # A cut stream
//!
//! A reply the server stopped at its token limit ends with [`FinishReason::Length`]; one
//! whose connection broke ends with an error item. Either way the reply is cut: a consumer
//! must not run a tool call the model had not finished writing when the stream stopped.
//!
//! # Crate features
//!
//! * `openai` — the [`openai`] module (reqwest, rustls, tokio's timer). Off by default: the
//!   rest of the crate does no I/O.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod chunk;
mod model;
#[cfg(feature = "openai")]
pub mod openai;
pub mod sse;

pub use model::{
    Constraint, ContentPiece, FinishReason, LanguageModel, Message, ModelItem, ModelOptions,
    ModelRequest, Role, ThinkSplitter, ToolCallChunk,
};

/// A boxed error from a model or other user code.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// This crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
