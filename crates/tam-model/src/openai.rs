//! A [`LanguageModel`] for any OpenAI-compatible server (llama.cpp's `llama-server`, vLLM,
//! SGLang, Ollama's `/v1`, OpenAI): `POST {base}/chat/completions` with `"stream": true`,
//! the response read with the crate's [SSE reader](crate::sse) one event at a time under an
//! idle time-out. Behind the `openai` feature.
//!
//! ```no_run
//! use futures_util::StreamExt;
//! use tam_model::openai::{OpenAiConfig, OpenAiModel};
//! use tam_model::{LanguageModel, Message, ModelItem, ModelOptions, ModelRequest};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "qwen3")
//!     .with_extra_body("cache_prompt", false.into());
//! let model = OpenAiModel::new(config)?;
//! let request = ModelRequest::new(
//!     vec![Message::user("Say hi.")],
//!     ModelOptions::new().with_temperature(0.0).with_max_tokens(64),
//! );
//! let mut stream = model.stream(&request);
//! while let Some(item) = stream.next().await {
//!     if let ModelItem::Text(text) = item? {
//!         print!("{text}");
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Constraints
//!
//! A request's [`Constraint::StructuralTag`] is sent as its `response_format` (vLLM and
//! SGLang constrain sampling by it). A [`Constraint::Gbnf`] is not sent: llama-server's
//! `chat/completions` replaces a caller's lazy grammar with the chat template's, so a GBNF
//! grammar goes through [`LlamaCompletionModel`] (llama-server's native `/completion`)
//! instead. [`detect_upstream_kind`] tells which server answers.
//!
//! # What a chunk becomes
//!
//! Of each `chat.completion.chunk`, the choice with `index` 0 (the first when none says):
//! `delta.reasoning_content` or `delta.reasoning` → [`ModelItem::Reasoning`],
//! `delta.content` → [`ModelItem::Text`], each of `delta.tool_calls` →
//! [`ModelItem::ToolCallChunk`], `finish_reason` → [`ModelItem::Finish`]; empty pieces are
//! skipped. `data: [DONE]` ends the stream.
//!
//! A server that ignores `stream` and answers 2xx with `Content-Type: application/json`
//! sends one whole `chat.completion`: it is read as one chunk whose choices' `message` is
//! their `delta` (the same items, at once), within [`SseConfig::max_event_bytes`]; an
//! `error` object in it is `Server`, a body that is not a JSON object `InvalidChunk`.
//!
//! # Errors, each ending the stream (a cut stream)
//!
//! | [`OpenAiError`] | code | when |
//! |---|---|---|
//! | `Http` | `http_status` | a non-2xx answer; carries the status and the server's message (llama-server answers an over-long prompt with 400 and a JSON error body) |
//! | `Transport` | `transport` | connecting, sending or reading failed; the server closed the stream before a finish reason or `[DONE]` |
//! | `IdleTimeout` | `idle_timeout` | no byte for [`OpenAiConfig::idle_timeout`] (response headers included) |
//! | `Sse` | `sse_event_too_large` | an event (or a whole JSON answer) over [`SseConfig::max_event_bytes`] |
//! | `InvalidChunk` | `invalid_chunk` | an event whose data is not a JSON object |
//! | `InvalidUtf8` | `invalid_utf8` | an event with bytes that are not UTF-8 inside the reply's text, reasoning or a native call's arguments (they would read as U+FFFD: the reply is cut before that event, so a call the bytes fall in never runs) |
//! | `Server` | `server_error` | an event carrying an `error` object |
//! | `InvalidTemplate` | `invalid_template` | ([`LlamaCompletionModel`]) `/apply-template` answered 2xx without a string `prompt`, or past [`DEFAULT_MAX_PROMPT_BYTES`] |
//! | `MissingApiKey` | `missing_api_key` | [`OpenAiConfig::with_api_key_env`] named an unset variable |
//! | `Client` | `client` | the HTTP client could not be built |

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use serde_json::{Map, Value, json};

use crate::BoxError;
use crate::chunk::{Chunk, ChunkError, read_chunk, read_llama_event};
use crate::model::{Constraint, LanguageModel, Message, ModelItem, ModelRequest};
use crate::sse::{SseConfig, SseError, SseEvent, SseReader};

mod llama;
mod upstream;

pub use llama::{DEFAULT_MAX_PROMPT_BYTES, LlamaCompletionModel};
pub use upstream::{
    DETECT_TIMEOUT, ParseUpstreamKindError, UpstreamChoice, UpstreamKind, detect_upstream_kind,
};

/// Default of [`OpenAiConfig::idle_timeout`]: 120 s (a local server may take long to read
/// a long prompt before its first byte).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Most bytes of a non-2xx body read for its message: 64 KiB.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Where and how to reach the server. `Debug` shows whether an API key is set, never the
/// key.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The API base, up to and without `/chat/completions` (e.g.
    /// `http://127.0.0.1:8080/v1`); a trailing `/` is ignored.
    pub base_url: String,
    /// The `model` field of each request.
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set. Default: none.
    pub api_key: Option<String>,
    /// Longest wait for the response headers or for the next bytes of the stream.
    /// Default: [`DEFAULT_IDLE_TIMEOUT`] (120 s).
    pub idle_timeout: Duration,
    /// Fields added to every request body, overriding the built ones (llama.cpp needs
    /// `"cache_prompt": false` for reproducible output). Default: none.
    pub extra_body: Map<String, Value>,
    /// The SSE reader's limits. Default: 1 MiB per event.
    pub sse: SseConfig,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("idle_timeout", &self.idle_timeout)
            .field("extra_body", &self.extra_body)
            .field("sse", &self.sse)
            .finish()
    }
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, with the defaults.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            extra_body: Map::new(),
            sse: SseConfig::default(),
        }
    }

    /// This configuration with `api_key`.
    #[must_use]
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// This configuration with the API key read from the environment variable `var`.
    ///
    /// # Errors
    /// [`OpenAiError::MissingApiKey`] when the variable is unset or not Unicode.
    pub fn with_api_key_env(self, var: &str) -> Result<Self, OpenAiError> {
        match std::env::var(var) {
            Ok(key) => Ok(self.with_api_key(key)),
            Err(_) => Err(OpenAiError::MissingApiKey {
                var: var.to_owned(),
            }),
        }
    }

    /// This configuration with `idle_timeout`.
    #[must_use]
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// This configuration with `key: value` added to every request body.
    #[must_use]
    pub fn with_extra_body(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra_body.insert(key.into(), value);
        self
    }

    /// This configuration with the SSE reader's limits.
    #[must_use]
    pub fn with_sse(mut self, sse: SseConfig) -> Self {
        self.sse = sse;
        self
    }

    /// The URL requests go to: `{base_url}/chat/completions`.
    pub fn completions_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The server's root: [`OpenAiConfig::base_url`] without its trailing `/` and `/v1`
    /// (`http://127.0.0.1:8080/v1/` → `http://127.0.0.1:8080`), where llama-server's native
    /// endpoints (`/props`, `/apply-template`, `/completion`), vLLM's `/version` and
    /// SGLang's `/get_server_info` are.
    pub fn server_url(&self) -> &str {
        let base = self.base_url.trim_end_matches('/');
        base.strip_suffix("/v1").unwrap_or(base)
    }
}

/// Why a stream from the server failed. Each ends the stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenAiError {
    /// The server answered with a status other than 2xx.
    #[error("the server answered HTTP {status}: {message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The server's message (`error.message` of a JSON body, else the body's text).
        message: String,
    },
    /// Connecting, sending or reading failed, or the stream ended unfinished.
    #[error("transport error: {0}")]
    Transport(String),
    /// Nothing arrived for this long.
    #[error("no data from the server for {0:?}")]
    IdleTimeout(Duration),
    /// The event stream broke a limit.
    #[error(transparent)]
    Sse(SseError),
    /// An event's data is not a JSON object.
    #[error("the server sent a chunk that is not a JSON object ({reason}): '{data}'")]
    InvalidChunk {
        /// Why it was rejected.
        reason: String,
        /// The data, cut to 200 characters.
        data: String,
    },
    /// An event's bytes were not UTF-8 where they carry the reply (its text, reasoning or
    /// a native call's arguments): the reply is cut before it rather than read with U+FFFD
    /// standing in, so no call holds bytes the model did not send.
    #[error("the server sent bytes that are not UTF-8 in the reply: it is cut before them")]
    InvalidUtf8,
    /// The server reported an error inside the stream.
    #[error("the server reported an error: {0}")]
    Server(String),
    /// llama-server's `/apply-template` answered 2xx without a prompt: a body that is not
    /// a JSON object with a string `prompt`, or one larger than the model's limit.
    #[error("the server's /apply-template answer holds no prompt: {0}")]
    InvalidTemplate(String),
    /// The named environment variable holds no API key.
    #[error("the environment variable {var} holding the API key is not set")]
    MissingApiKey {
        /// The variable.
        var: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl OpenAiError {
    /// The error's stable code (see the module table).
    pub fn code(&self) -> &'static str {
        match self {
            OpenAiError::Http { .. } => "http_status",
            OpenAiError::Transport(_) => "transport",
            OpenAiError::IdleTimeout(_) => "idle_timeout",
            OpenAiError::Sse(error) => error.code(),
            OpenAiError::InvalidChunk { .. } => "invalid_chunk",
            OpenAiError::InvalidUtf8 => "invalid_utf8",
            OpenAiError::Server(_) => "server_error",
            OpenAiError::InvalidTemplate(_) => "invalid_template",
            OpenAiError::MissingApiKey { .. } => "missing_api_key",
            OpenAiError::Client(_) => "client",
        }
    }

    /// The HTTP status, for [`OpenAiError::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            OpenAiError::Http { status, .. } => Some(*status),
            OpenAiError::Transport(_)
            | OpenAiError::IdleTimeout(_)
            | OpenAiError::Sse(_)
            | OpenAiError::InvalidChunk { .. }
            | OpenAiError::InvalidUtf8
            | OpenAiError::Server(_)
            | OpenAiError::InvalidTemplate(_)
            | OpenAiError::MissingApiKey { .. }
            | OpenAiError::Client(_) => None,
        }
    }
}

/// The model: cheap to clone (one shared connection pool).
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    client: reqwest::Client,
    config: Arc<OpenAiConfig>,
}

impl OpenAiModel {
    /// A model over `config`.
    ///
    /// # Errors
    /// [`OpenAiError::Client`] when the HTTP client cannot be built (TLS set-up).
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        Ok(Self {
            client: build_client(&config)?,
            config: Arc::new(config),
        })
    }

    /// A model over `config` sharing this model's HTTP client and connection pool (the
    /// connect time-out stays this model's); cheap, so a proxy makes one per request.
    pub fn with_config(&self, config: OpenAiConfig) -> Self {
        Self {
            client: self.client.clone(),
            config: Arc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The JSON body sent for `request`: model, messages, `stream: true`, the options that
    /// are set, a structural-tag constraint as `response_format` (a GBNF one is not sent:
    /// see the module documentation), then [`OpenAiConfig::extra_body`].
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), self.config.model.clone().into());
        body.insert("messages".into(), messages_json(&request.messages));
        body.insert("stream".into(), true.into());
        let options = &request.options;
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = options.max_tokens {
            body.insert("max_tokens".into(), n.into());
        }
        if !options.stop.is_empty() {
            body.insert("stop".into(), options.stop.clone().into());
        }
        if let Some(seed) = options.seed {
            body.insert("seed".into(), seed.into());
        }
        if let Some(Constraint::StructuralTag(format)) = &request.constraint {
            let mut format = format.clone();
            if let Some(object) = format.as_object_mut() {
                object
                    .entry("type")
                    .or_insert_with(|| "structural_tag".into());
            }
            body.insert("response_format".into(), format);
        }
        for (key, value) in &self.config.extra_body {
            body.insert(key.clone(), value.clone());
        }
        Value::Object(body)
    }

    /// The model's HTTP client (shared by the models made from this one).
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

/// The HTTP client of a model over `config`: its connect time-out is the idle time-out.
fn build_client(config: &OpenAiConfig) -> Result<reqwest::Client, OpenAiError> {
    reqwest::Client::builder()
        .connect_timeout(config.idle_timeout)
        .build()
        .map_err(|e| OpenAiError::Client(e.to_string()))
}

/// The messages in the OpenAI chat form: `[{"role": …, "content": …}, …]`.
fn messages_json(messages: &[Message]) -> Value {
    messages
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect()
}

impl LanguageModel for OpenAiModel {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        let start = post_json(
            &self.client,
            &self.config,
            self.config.completions_url(),
            &self.request_body(request),
        )
        .header("accept", "text/event-stream");
        let idle = self.config.idle_timeout;
        stream_items(
            connect(start, idle).boxed(),
            Dialect::ChatCompletions,
            &self.config,
        )
    }
}

type Body = BoxStream<'static, reqwest::Result<bytes::Bytes>>;

/// What a connection yields: the body of a 2xx answer, and whether it is one whole JSON
/// answer rather than an event stream.
type Connecting = BoxFuture<'static, Result<(Body, bool), OpenAiError>>;

/// A JSON `POST` of `body` to `url`, with the configured API key.
fn post_json(
    client: &reqwest::Client,
    config: &OpenAiConfig,
    url: String,
    body: &Value,
) -> reqwest::RequestBuilder {
    let builder = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    authorized(builder, config)
}

/// `builder` with `Authorization: Bearer` when a key is configured.
fn authorized(builder: reqwest::RequestBuilder, config: &OpenAiConfig) -> reqwest::RequestBuilder {
    match &config.api_key {
        Some(key) => builder.bearer_auth(key),
        None => builder,
    }
}

/// Which API a response comes from: how its events read and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `chat.completion.chunk` events, ended by `data: [DONE]` (or a finish reason and the
    /// end of the body).
    ChatCompletions,
    /// llama-server's native `/completion` events, the last with `"stop": true`.
    LlamaCompletion,
}

impl Dialect {
    /// Reads one event's data (or a whole JSON answer).
    fn read(self, data: &str) -> Result<Chunk, ChunkError> {
        match self {
            Dialect::ChatCompletions => read_chunk(data),
            Dialect::LlamaCompletion => read_llama_event(data),
        }
    }

    /// What a stream that closes unfinished lacked.
    fn missing_end(self) -> &'static str {
        match self {
            Dialect::ChatCompletions => "no finish_reason, no [DONE]",
            Dialect::LlamaCompletion => "no event with \"stop\": true",
        }
    }
}

/// The items of one response: `start` connects, then the body is read in `dialect` under
/// the configured idle time-out and SSE limits.
fn stream_items(
    start: Connecting,
    dialect: Dialect,
    config: &OpenAiConfig,
) -> BoxStream<'static, Result<ModelItem, BoxError>> {
    let state = Reading {
        start: Some(start),
        dialect,
        body: None,
        whole: None,
        max_whole: config.sse.max_event_bytes,
        reader: SseReader::new(config.sse),
        queue: VecDeque::new(),
        idle: config.idle_timeout,
        finished: false,
        done: false,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    })
    .boxed()
}

/// The state of one response.
struct Reading {
    start: Option<Connecting>,
    dialect: Dialect,
    body: Option<Body>,
    /// The body so far of a whole JSON answer (a server that ignored `stream`).
    whole: Option<Vec<u8>>,
    /// The most bytes of a whole JSON answer.
    max_whole: usize,
    reader: SseReader,
    queue: VecDeque<Result<ModelItem, BoxError>>,
    idle: Duration,
    /// A finish reason arrived.
    finished: bool,
    /// Nothing more will be read.
    done: bool,
}

impl Reading {
    async fn next(&mut self) -> Option<Result<ModelItem, BoxError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            if let Some(start) = self.start.take() {
                match start.await {
                    Ok((body, json)) => {
                        self.body = Some(body);
                        self.whole = json.then(Vec::new);
                    }
                    Err(error) => self.fail(error),
                }
                continue;
            }
            let Some(body) = self.body.as_mut() else {
                self.done = true;
                continue;
            };
            match tokio::time::timeout(self.idle, body.next()).await {
                Err(_) => self.fail(OpenAiError::IdleTimeout(self.idle)),
                Ok(Some(Err(error))) => self.fail(OpenAiError::Transport(error.to_string())),
                Ok(Some(Ok(bytes))) if self.whole.is_some() => self.gather(&bytes),
                Ok(Some(Ok(bytes))) => self.read(&bytes),
                Ok(None) if self.whole.is_some() => self.read_whole(),
                Ok(None) => {
                    if self.finished {
                        self.done = true;
                    } else {
                        self.fail(OpenAiError::Transport(format!(
                            "the server closed the stream before it finished ({})",
                            self.dialect.missing_end()
                        )));
                    }
                }
            }
        }
    }

    fn fail(&mut self, error: OpenAiError) {
        self.queue.push_back(Err(Box::new(error)));
        self.done = true;
        self.body = None;
    }

    /// Gathers the bytes of a whole JSON answer, within the limit.
    fn gather(&mut self, bytes: &[u8]) {
        let Some(whole) = &mut self.whole else { return };
        if whole.len() + bytes.len() > self.max_whole {
            let limit = self.max_whole;
            self.whole = None;
            return self.fail(OpenAiError::Sse(SseError::EventTooLarge { limit, line: 1 }));
        }
        whole.extend_from_slice(bytes);
    }

    /// A whole JSON answer, read as one event (a chat completion's choices' `message` as a
    /// chunk's `delta`).
    fn read_whole(&mut self) {
        let whole = self.whole.take().unwrap_or_default();
        self.done = true;
        self.body = None;
        let mut value: Value = match serde_json::from_slice(&whole) {
            Ok(value) => value,
            Err(error) => {
                return self.fail(OpenAiError::InvalidChunk {
                    reason: error.to_string(),
                    data: String::from_utf8_lossy(&whole).chars().take(200).collect(),
                });
            }
        };
        if let Some(choices) = value.get_mut("choices").and_then(Value::as_array_mut) {
            for choice in choices.iter_mut().filter_map(Value::as_object_mut) {
                if !choice.contains_key("delta")
                    && let Some(message) = choice.remove("message")
                {
                    choice.insert("delta".into(), message);
                }
            }
        }
        match self.dialect.read(&value.to_string()) {
            Ok(chunk) => self.queue.extend(chunk.items.into_iter().map(Ok)),
            Err(ChunkError::Server(message)) => self.fail(OpenAiError::Server(message)),
            Err(ChunkError::NotJson(reason)) => self.fail(OpenAiError::InvalidChunk {
                reason,
                data: value.to_string().chars().take(200).collect(),
            }),
        }
    }

    /// Feeds bytes to the SSE reader and queues what their events carry.
    fn read(&mut self, bytes: &[u8]) {
        let mut events = Vec::new();
        self.reader.feed(bytes, |event| events.push(event));
        for event in events {
            if self.done {
                return;
            }
            match event {
                Ok(event) => self.event(&event),
                Err(error) => self.fail(OpenAiError::Sse(error)),
            }
        }
    }

    /// One event: `[DONE]`, an error, or a chunk.
    fn event(&mut self, event: &SseEvent) {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            self.body = None;
            return;
        }
        match self.dialect.read(data) {
            Ok(chunk) if event.invalid_utf8 && chunk.items.iter().any(replaced) => {
                self.fail(OpenAiError::InvalidUtf8)
            }
            Ok(chunk) => {
                self.finished |= chunk.finished();
                self.queue.extend(chunk.items.into_iter().map(Ok));
            }
            Err(ChunkError::Server(message)) => self.fail(OpenAiError::Server(message)),
            Err(ChunkError::NotJson(reason)) => self.fail(OpenAiError::InvalidChunk {
                reason,
                data: data.chars().take(200).collect(),
            }),
        }
    }
}

/// Whether `item` carries a U+FFFD where the reply's text is: in an event that was not
/// UTF-8, that is where the bytes were.
fn replaced(item: &ModelItem) -> bool {
    const REPLACEMENT: char = '\u{FFFD}';
    match item {
        ModelItem::Text(text) | ModelItem::Reasoning(text) => text.contains(REPLACEMENT),
        ModelItem::ToolCallChunk(chunk) => {
            chunk.arguments.contains(REPLACEMENT)
                || chunk
                    .name
                    .as_deref()
                    .is_some_and(|n| n.contains(REPLACEMENT))
        }
        ModelItem::StopSequence(sequence) => sequence.contains(REPLACEMENT),
        ModelItem::Finish(_) | ModelItem::Usage(_) => false,
    }
}

/// Sends the request; a 2xx answer's body is the event stream (or, `true` with it, a whole
/// JSON answer), any other is an error.
async fn connect(
    start: reqwest::RequestBuilder,
    idle: Duration,
) -> Result<(Body, bool), OpenAiError> {
    let response = send(start, idle).await?;
    if !response.status().is_success() {
        return Err(error_answer(response, idle).await);
    }
    let json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    Ok((response.bytes_stream().boxed(), json))
}

/// Sends a request; its answer's headers arrive within `idle`.
async fn send(
    request: reqwest::RequestBuilder,
    idle: Duration,
) -> Result<reqwest::Response, OpenAiError> {
    match tokio::time::timeout(idle, request.send()).await {
        Err(_) => Err(OpenAiError::IdleTimeout(idle)),
        Ok(Err(error)) => Err(OpenAiError::Transport(error_chain(&error))),
        Ok(Ok(response)) => Ok(response),
    }
}

/// A non-2xx answer as [`OpenAiError::Http`]: its body read within a limit and the idle
/// time-out, for the server's message.
async fn error_answer(response: reqwest::Response, idle: Duration) -> OpenAiError {
    let status = response.status();
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    OpenAiError::Http {
        status: status.as_u16(),
        message: error_message(&body, status.canonical_reason()),
    }
}

/// A 2xx answer's whole body, each read under the idle time-out; `None` past `limit`
/// bytes.
async fn whole_body(
    response: reqwest::Response,
    idle: Duration,
    limit: usize,
) -> Result<Option<Vec<u8>>, OpenAiError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(OpenAiError::IdleTimeout(idle)),
            Ok(Some(Err(error))) => return Err(OpenAiError::Transport(error_chain(&error))),
            Ok(Some(Ok(bytes))) => {
                if body.len() + bytes.len() > limit {
                    return Ok(None);
                }
                body.extend_from_slice(&bytes);
            }
            Ok(None) => return Ok(Some(body)),
        }
    }
}

/// The server's message in an error body: `error.message`, `error` (a string) or
/// `message` of a JSON body, else the body's text, else the status's reason.
fn error_message(body: &[u8], reason: Option<&str>) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("error").filter(|e| e.is_string()))
            .or_else(|| value.get("message"))
            .and_then(Value::as_str);
        if let Some(message) = message {
            return message.to_owned();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        reason.unwrap_or("no message").to_owned()
    } else {
        text.chars().take(2000).collect()
    }
}

/// An error with its sources, as one line (reqwest's own message hides the cause).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
