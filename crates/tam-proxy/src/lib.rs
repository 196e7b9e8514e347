//! An OpenAI-compatible server that gives native tool calling to any model that can follow
//! a text protocol (`tam serve`).
//!
//! A client sends `POST /v1/chat/completions` with `tools`, as to OpenAI. The proxy writes
//! tool-schema's complete [`SystemPrompt`](tool_schema::SystemPrompt) (role, tool list,
//! decision rules, examples, result rules; English) for its [`Protocol`] (TAM or ACTION
//! XML; `Both` teaches TAM) after the client's own system message, rewrites the
//! history (an assistant message's `tool_calls` → the protocol's block, a `tool` message →
//! its `Observation: …` line), asks the upstream server — any OpenAI-compatible server,
//! through [`OpenAiModel`] — without `tools`, and decodes the upstream's text as it
//! streams: prose comes back as `delta.content`, each call as `delta.tool_calls` chunks
//! whose arguments are a JSON object typed by the tool's schema, string arguments
//! streaming while the model writes them ("Arguments that stream").
//!
//! ```no_run
//! use tam::Protocol;
//! use tam_model::openai::OpenAiConfig;
//! use tam_proxy::{ProxyConfig, serve};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ProxyConfig::new(OpenAiConfig::new("http://127.0.0.1:8081/v1", ""))
//!     .with_protocol(Protocol::Action)
//!     .with_client_keys(["a-long-random-key"]); // none: open to anyone who reaches it
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // With its connection cap and header time-out; `tam_proxy::router(config)` is the
//! // same proxy as an axum::Router to mount in your own server.
//! serve(listener, config, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Endpoints
//!
//! * `POST /v1/chat/completions` — `stream` true (server-sent events, `data: [DONE]` at
//!   the end) or false (one `chat.completion`).
//! * `GET /v1/models`, `GET /v1/models/{id}` — passed through to the upstream (status,
//!   content type and body as they come).
//! * `GET /health` — `200 {"status":"ok"}` without asking the upstream and without a key
//!   (a liveness check; it says nothing of the upstream).
//!
//! # Access
//!
//! Every route but `/health` (unknown paths included) first applies, in this order:
//!
//! * **`Origin`.** A request with an `Origin` header comes from a web page; it gets 403
//!   `origin_not_allowed` unless the origin is one of [`ProxyConfig::allowed_origins`]
//!   (compared exactly, as the browser writes it: `https://app.example`). Allowed origins
//!   also get CORS answers (preflight included; methods GET and POST, headers
//!   `Authorization` and `Content-Type`). None are allowed by default: the proxy's clients
//!   are programs, and a page the operator visits must not be able to use it.
//! * **Client keys.** With [`ProxyConfig::client_keys`], a request must send one as
//!   `Authorization: Bearer KEY` (the scheme in any case; no other header is read), else
//!   401 `invalid_api_key` with `WWW-Authenticate: Bearer`. Keys are compared in constant
//!   time ([`ClientKeys`]). Without keys the proxy is open to anyone who reaches it; it
//!   listens where it is told, so keep it on loopback or behind a firewall then.
//! * **JSON only.** A POST's `Content-Type` must be `application/json` (parameters such as
//!   `charset` allowed), else 415 `unsupported_media_type`: the bodies a web page can send
//!   without a CORS preflight (`text/plain`, forms) are never read.
//!
//! Then the body must arrive within [`ProxyConfig::body_timeout`] (30 s; else 408
//! `request_timeout`) and be at most [`ProxyConfig::max_request_bytes`] (4 MiB; else 413).
//! A request that would contact the upstream while
//! [`ProxyConfig::max_upstream_concurrency`] (64) upstream requests are under way gets 503
//! `server_busy` with `Retry-After: 1` at once, without waiting: a client that retries
//! with backoff (OpenAI's clients do) gets in when a slot frees, and a burst never piles
//! up behind a slow upstream. A streamed reply holds its slot until it ends.
//!
//! [`serve`] adds two limits of its own (a [`router`] mounted elsewhere gets its
//! server's): at most [`ProxyConfig::max_connections`] (256) open connections — one
//! over it is answered `503` `too_many_connections` at once, as far as the socket takes
//! it, and closed, so clients over the cap are refused rather than left waiting — and a
//! request's header must arrive within [`ProxyConfig::header_timeout`] (10 s, counted
//! from when the connection waits for a request: an idle kept-alive connection is closed
//! after it too), else the connection is closed unanswered. Every answer carries an
//! `x-request-id` header, the id of its log line.
//!
//! # Logs
//!
//! One [`tracing`] event per request (not `/health`), target `tam_proxy::request`, level
//! INFO, written when the answer is complete (for a stream: when it ends, or when the
//! client goes away, outcome `client_closed`). Fields: `request_id`, `method`, `path`,
//! `status`, `model`, `calls`, `prompt_tokens` and `completion_tokens` when the upstream
//! reported usage, `outcome` (the finish reason or the error code) and `latency_ms`.
//! Never a key (client or upstream), never a message or an argument of the request or the
//! reply. The crate installs no subscriber: `tam serve` prints them on standard error.
//!
//! # What a request becomes
//!
//! * `tools` (function definitions with JSON Schema parameters) → tool-schema definitions;
//!   the protocol's instructions and the tool list follow the first system message's text
//!   (after a blank line), or make a new first system message. `developer` messages are
//!   system messages.
//! * `tool_choice`: `auto` (default); `none` → no tool prompt and the text passes through
//!   undecoded; `required` → the prompt asks for a call; a named function → only that tool
//!   is offered and the prompt asks for it. `parallel_tool_calls: false` → the prompt asks
//!   for one call and only the first call is a tool call.
//! * The upstream request has no `tools`, `tool_choice`, `parallel_tool_calls`,
//!   `stream_options` or `n` (`n` over 1 is refused: one choice is returned); it always
//!   streams. `max_tokens`, `stop` and `seed` go through [`ModelOptions`](tam_model::ModelOptions);
//!   every other field (`temperature`, `top_p`, `response_format`, vendor fields …) goes
//!   through unchanged as an extra body field, so numbers keep their exact JSON text.
//!   The upstream config's [`extra_body`](OpenAiConfig::extra_body) overrides the client's.
//! * The client's `Authorization` header is not forwarded: the upstream gets the key of
//!   the upstream config ([`OpenAiConfig::api_key`]), or none; a client key (see
//!   "Access") is the proxy's own.
//! * Message content may be a string or text parts (joined by a line break); an image,
//!   audio or file part is refused (400 `unsupported_content`): the upstream is a text model.
//! * History: an assistant message's `tool_calls` are written after its text as one block
//!   of the protocol (a TAM chain for several calls; non-string TAM values as their JSON
//!   text, which coercion reads back); a call the renderer cannot write (a key that is not
//!   a TAM key or an XML name, arguments that are not a JSON object) as the line
//!   `Tool call: NAME ARGUMENTS` — ARGUMENTS the client's JSON text, or its text as one
//!   JSON string when it is not JSON; NAME a JSON string unless it is a plain name; every
//!   `<` written `\u003c` — so the line holds no block marker or reasoning tag: the
//!   model's turn never shows a block it did not write. A `tool` message becomes
//!   `Observation: Tool NAME executed successfully. Result: CONTENT`, or
//!   `Observation: Error - Tool NAME failed: MESSAGE` when its content is a result object
//!   with `"success": false`; NAME comes from the call its `tool_call_id` answers. A run
//!   of `tool` messages is one user message, one observation per line (chat templates
//!   want user and assistant turns to alternate).
//!
//! # What a reply becomes
//!
//! * Prose → `delta.content`, as early as the decoder decides it (it holds back at most a
//!   possible marker prefix); `reasoning_content` / `reasoning` → `delta.reasoning_content`,
//!   and so does a `<think>…</think>` section of the text (the decoder's reasoning, SPEC
//!   §2.2: never decoded into calls).
//! * A closed block whose calls all name offered tools (names compared exactly) and that
//!   decoded without an error → one call per block call, in order: a chunk with `index`,
//!   `id` (`call_…`, unique in the process), `type: "function"`, `function.name` and empty
//!   arguments, then the arguments' JSON text. The arguments are coerced by the tool's
//!   schema (`"3"` → `3` for an integer, TAM keys matched canonically), per argument: an
//!   argument that does not validate is sent as the model wrote it, and so is an unknown
//!   key, while the others are still typed (the client validates, as it must with OpenAI
//!   too). In a streaming request, calls and string arguments stream while the
//!   block is written (below); without `stream`, the reply is made from whole blocks.
//! * A block naming a tool the request did not offer, a block with a decode error, an
//!   ACTION block after the first, and a block left open by a cut stream come back as
//!   their raw text in `delta.content`: never as calls. A block over the decoder's size
//!   limit, whose bytes the decoder drops, comes back as a bracketed note with the error
//!   (`[tool block not shown (CODE): MESSAGE]`), whether it closed or not; a call streamed
//!   from it is never completed (see "Arguments that stream").
//! * Past the call limit (`parallel_tool_calls: false`), further calls come back as content,
//!   re-rendered in the protocol.
//! * Native `delta.tool_calls` the upstream sends anyway pass through when they name an
//!   offered tool (indexes after the proxy's own, the upstream's ids); a native call to a
//!   tool the request did not offer (or with no name) is never a call: it comes back at
//!   the end of the content as the line `Tool call: NAME ARGUMENTS`.
//! * `finish_reason` is `tool_calls` when any call was emitted (and every streamed call
//!   was completed), else the upstream's (`stop` for an upstream `tool_calls` whose calls
//!   were not passed on). A `length` finish or a transport error cuts the reply: no call
//!   from a block open at the cut (SPEC §5), and a reply with native calls is not
//!   `tool_calls` (their arguments may be cut short): it finishes `length`.
//!
//! # Arguments that stream
//!
//! SPEC §8 wants long string values streamed while the model writes them. A streaming
//! request's reply is decoded with the parsers' argument events, by these rules:
//!
//! * **When a call is a call.** As soon as the tool id is known and offered and the call
//!   limit allows: an ACTION call element's start tag is complete (`CallStart`) in the
//!   reply's first ACTION block, or a TAM block's unchained `command` value closed
//!   (`CommandSeen`, chain number 0; chained `command1`… calls, and the later calls of a
//!   block without chain numbers — a second `command`, a repeated key —
//!   are emitted whole at the block's close). Then the call's first chunk goes out
//!   (`index`, `id`, `function.name`, empty `arguments`).
//! * **Which parameters stream.** A parameter of such a call written after that point
//!   whose key is exactly a property of the tool's schema with `"type": "string"`, the
//!   first time the key appears in the call. Its JSON text streams: `{"key":"` (or
//!   `,"key":"`), the value's pieces JSON-escaped as they arrive, then `"`. TAM values
//!   stream verbatim. ACTION values follow the block's edge rules (action-xml's crate
//!   docs): leading whitespace and blank text runs are dropped, trailing whitespace is
//!   held until more text follows, a leading CDATA section loses one line break and the
//!   last keeps its final line break; a run of pieces after a gap of exactly the length of
//!   `<![CDATA[` (9 bytes) or `]]><![CDATA[` (12) is taken as CDATA content (pieces have
//!   no CDATA flag).
//! * **The rest at the close.** Every other argument (typed: integers, booleans, objects,
//!   keys matched canonically, parameters written before the call was known) goes out
//!   when the block closes, coerced by the schema as for whole blocks, then `}`. The
//!   concatenated `arguments` are then valid JSON equal to the block's typed arguments
//!   (key order: streamed keys first).
//! * **The block is authoritative.** At the close, every streamed value must equal the
//!   block's final (coerced) value of that key, the call must still be there under the
//!   same tool, and the block must be calls (no decode error, every call offered). Chunks
//!   cannot be taken back, so when this fails the call's arguments are never completed
//!   (they stay invalid JSON), the block's raw text follows as `delta.content` (nothing
//!   the model wrote is dropped), and the event stream ends with an error event, code
//!   `streamed_call_invalid` (502 body), and no finish chunk and no `[DONE]`: the client
//!   must not run the call. A block never closed at a normal end is the same.
//! * **A cut reply.** A `length` finish with a streamed call's block still open: the
//!   call's arguments are never completed, the block's text follows as content, and
//!   `finish_reason` is `length`, not `tool_calls`. A transport error: the same, then the
//!   error event as below. A call the model did not finish never completes.

//! # Errors
//!
//! Errors are OpenAI error bodies, `{"error":{"message","type","code","param"}}`, see
//! [`ProxyError`]: the upstream's status and message for an upstream HTTP error, 502 for an
//! unreachable upstream or a broken upstream stream, 504 for the upstream time-out
//! ([`ProxyConfig::with_upstream_timeout`], 120 s by default), 413 for a body over
//! [`ProxyConfig::max_request_bytes`], 400 for a request the proxy cannot serve, and the
//! answers of "Access": 401, 403, 415, 408, 503.
//! The proxy waits for the upstream's first item before it answers, so an upstream error
//! arrives with its status even for a streaming request. An upstream that ignores
//! `stream` and answers one whole JSON `chat.completion` is read as that reply (tam-model's
//! OpenAI client), and a whole JSON error object as the upstream's error (502
//! `server_error`). An error after that (the stream
//! broke mid-reply) ends the event stream with a `data: {"error":…}` event and no
//! `[DONE]`; the text decided before it was sent.
//!
//! # Cancellation and limits
//!
//! A client that disconnects — mid-stream, or while waiting for a whole reply — drops its
//! response (or the handler's future), which drops the upstream request: the upstream sees
//! its connection closed. Memory per stream is the decoder's (at most a
//! block, [`tam_parse::Config::max_block_bytes`], 1 MiB by default, plus 64 KiB) and one
//! upstream event ([`SseConfig::max_event_bytes`](tam_model::sse::SseConfig), 1 MiB by
//! default); a request body is at most [`ProxyConfig::max_request_bytes`] (4 MiB).
//!
//! # The turn ends at the call
//!
//! Models go on writing after a block: an invented `Observation: …`, then more calls built
//! on it. The proxy asks the upstream to stop at the protocol's end marker (a `stop`
//! sequence, before the client's own), and once a block with calls has closed it closes
//! the upstream request and finishes the reply (`finish_reason: "tool_calls"`): nothing the
//! model writes after that block reaches the client. A reply the upstream stopped at the
//! sequence ends where the end marker would begin: at a `stop` finish a block still open
//! is closed by its marker, and its decoder decides whether it holds calls (a value or a
//! call element still open is no call). A block the marker would take past the decoder's
//! size limit is not closed: its bytes were dropped, and it is a block that never closed. A block that yields no call does not end the turn.
//!
//! # Usage
//!
//! The upstream is always asked for `usage` (`stream_options.include_usage`); the proxy
//! reports it in a whole reply's `usage`, and in a stream as OpenAI does when the client
//! asked (`stream_options.include_usage`: a last chunk with empty `choices`), else on the
//! finish chunk, as llama-server does. A reply whose turn ended at a call before the
//! upstream finished (a server that ignores the stop sequence) has no usage to report.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod access;
mod error;
mod history;
mod prompt;
mod request;
mod response;
mod server;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use access::{ClientKeyError, ClientKeys};
pub use error::ProxyError;

use access::{LogsItself, RequestInfo, RequestLog, Summary};

use request::Translated;
use response::{ChunkWriter, Completion, Translator, unique_id};
pub use tam::Protocol;
use tam_model::openai::{OpenAiConfig, OpenAiError, OpenAiModel};
use tam_model::{BoxError, LanguageModel, ModelItem, ModelRequest};

/// Default of [`ProxyConfig::max_request_bytes`]: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;
/// Default of [`ProxyConfig::max_connections`]: 256.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default of [`ProxyConfig::max_upstream_concurrency`]: 64.
pub const DEFAULT_MAX_UPSTREAM_CONCURRENCY: usize = 64;
/// Default of [`ProxyConfig::header_timeout`]: 10 s.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`ProxyConfig::body_timeout`]: 30 s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How the proxy reaches its upstream and reads its replies.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// The upstream: base URL (up to and without `/chat/completions`, e.g.
    /// `http://127.0.0.1:8081/v1`), API key, idle time-out, SSE event limit, fields added to
    /// every request. Its `model` is used when a request names none (empty: required).
    pub upstream: OpenAiConfig,
    /// The protocol the upstream model is asked to write. Default: [`Protocol::Tam`].
    pub protocol: Protocol,
    /// Largest request body; a larger one gets 413. Default: [`DEFAULT_MAX_REQUEST_BYTES`]
    /// (4 MiB).
    pub max_request_bytes: usize,
    /// The TAM decoder's limits (block size, calls per block). Default: tam-parse's.
    pub tam: tam_parse::Config,
    /// The ACTION decoder's limits (block size, depth, nodes). Default: action-xml's.
    pub action: action_xml::Config,
    /// The keys a client must present (`Authorization: Bearer KEY`) on every route but
    /// `/health`. Default: none, and the proxy is open to anyone who reaches it.
    pub client_keys: ClientKeys,
    /// Web origins (`https://app.example`, as a browser writes its `Origin` header) whose
    /// requests are served, with CORS answers. A request with any other `Origin` gets 403.
    /// Default: none (no browser request is served).
    pub allowed_origins: Vec<String>,
    /// Open connections at most, in [`serve`]; one over it is answered 503 and closed at
    /// once. 0: no cap. Default: [`DEFAULT_MAX_CONNECTIONS`] (256).
    pub max_connections: usize,
    /// Upstream requests under way at most (chat completions and model lists); a request
    /// over it gets 503 `server_busy` with `Retry-After: 1` at once. 0: no cap. Default:
    /// [`DEFAULT_MAX_UPSTREAM_CONCURRENCY`] (64).
    pub max_upstream_concurrency: usize,
    /// In [`serve`]: a request's header must arrive within this, counted from the moment
    /// the connection waits for a request (an idle kept-alive connection is closed after
    /// it). Zero: no time-out. Default: [`DEFAULT_HEADER_TIMEOUT`] (10 s).
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this after its header, else 408. Zero: no
    /// time-out. Default: [`DEFAULT_BODY_TIMEOUT`] (30 s).
    pub body_timeout: Duration,
}

impl ProxyConfig {
    /// A proxy to `upstream` with the defaults.
    pub fn new(upstream: OpenAiConfig) -> Self {
        Self {
            upstream,
            protocol: Protocol::Tam,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            tam: tam_parse::Config::default(),
            action: action_xml::Config::default(),
            client_keys: ClientKeys::default(),
            allowed_origins: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_upstream_concurrency: DEFAULT_MAX_UPSTREAM_CONCURRENCY,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }

    /// This configuration with `protocol`.
    #[must_use]
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// This configuration with `max_request_bytes`.
    #[must_use]
    pub fn with_max_request_bytes(mut self, max_request_bytes: usize) -> Self {
        self.max_request_bytes = max_request_bytes;
        self
    }

    /// This configuration with `client_keys` ([`ClientKeys::new`]): a request must present
    /// one of them. An empty list leaves the proxy open.
    #[must_use]
    pub fn with_client_keys(mut self, client_keys: impl Into<ClientKeys>) -> Self {
        self.client_keys = client_keys.into();
        self
    }

    /// This configuration with `origin` among [`ProxyConfig::allowed_origins`].
    #[must_use]
    pub fn with_allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// This configuration with `max_connections` (0: no cap).
    #[must_use]
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// This configuration with `max_upstream_concurrency` (0: no cap).
    #[must_use]
    pub fn with_max_upstream_concurrency(mut self, max_upstream_concurrency: usize) -> Self {
        self.max_upstream_concurrency = max_upstream_concurrency;
        self
    }

    /// This configuration with `header_timeout` (zero: none).
    #[must_use]
    pub fn with_header_timeout(mut self, header_timeout: Duration) -> Self {
        self.header_timeout = header_timeout;
        self
    }

    /// This configuration with `body_timeout` (zero: none).
    #[must_use]
    pub fn with_body_timeout(mut self, body_timeout: Duration) -> Self {
        self.body_timeout = body_timeout;
        self
    }

    /// This configuration with the upstream's idle time-out
    /// ([`OpenAiConfig::idle_timeout`]): the longest wait for the upstream's answer
    /// header or for the next bytes of its stream, and for a connection to it.
    #[must_use]
    pub fn with_upstream_timeout(mut self, timeout: Duration) -> Self {
        self.upstream.idle_timeout = timeout;
        self
    }
}

/// What every handler shares.
struct Shared {
    config: ProxyConfig,
    /// The upstream model; each request gets a copy with its own model name and fields,
    /// sharing the connection pool.
    model: OpenAiModel,
    /// For `GET /v1/models`.
    http: reqwest::Client,
    /// One permit per upstream request under way.
    upstream_slots: Arc<Semaphore>,
}

impl Shared {
    /// A permit for one upstream request, or [`ProxyError::Busy`].
    fn upstream_slot(&self) -> Result<OwnedSemaphorePermit, ProxyError> {
        self.upstream_slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| ProxyError::Busy {
                limit: self.config.max_upstream_concurrency,
            })
    }
}

impl<K: AsRef<str>> From<Vec<K>> for ClientKeys {
    fn from(keys: Vec<K>) -> Self {
        ClientKeys::new(keys)
    }
}

impl<K: AsRef<str>, const N: usize> From<[K; N]> for ClientKeys {
    fn from(keys: [K; N]) -> Self {
        ClientKeys::new(keys)
    }
}

/// The proxy as an axum [`Router`] (a tower service): mount it in an application or serve
/// it with [`serve`]. Any other path answers 404 with an OpenAI error body. The router
/// applies the client keys, the `Origin` and `Content-Type` rules, the body time-out and
/// the upstream concurrency cap; the connection cap and the header time-out are
/// [`serve`]'s.
///
/// # Errors
/// [`OpenAiError::Client`] when the HTTP client cannot be built.
pub fn router(config: ProxyConfig) -> Result<Router, OpenAiError> {
    let model = OpenAiModel::new(config.upstream.clone())?;
    let http = reqwest::Client::builder()
        .connect_timeout(config.upstream.idle_timeout)
        .build()
        .map_err(|e| OpenAiError::Client(e.to_string()))?;
    let limit = config.max_request_bytes;
    let upstream_slots = Arc::new(Semaphore::new(match config.max_upstream_concurrency {
        0 => Semaphore::MAX_PERMITS,
        n => n.min(Semaphore::MAX_PERMITS),
    }));
    let cors = cors(&config.allowed_origins);
    let shared = Arc::new(Shared {
        config,
        model,
        http,
        upstream_slots,
    });
    let guarded = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{*id}", get(model_by_id))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            access::guard,
        ));
    let app = Router::new()
        .route("/health", get(health))
        .merge(guarded)
        .with_state(shared);
    Ok(match cors {
        Some(cors) => app.layer(cors),
        None => app,
    })
}

/// The CORS answers for the allowed origins (none: no CORS layer, and a browser's
/// preflight gets 404/405).
fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
            .expose_headers([header::HeaderName::from_static("x-request-id")]),
    )
}

/// Serves the proxy on `listener` until `shutdown` completes (then finishes the requests
/// in flight), HTTP/1.1, with [`ProxyConfig::max_connections`] and
/// [`ProxyConfig::header_timeout`].
///
/// # Errors
/// The router's error, or an I/O error of the server.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: ProxyConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = server::Limits {
        max_connections: config.max_connections,
        header_timeout: config.header_timeout,
    };
    let app = router(config).map_err(std::io::Error::other)?;
    server::run(listener, app, limits, shutdown).await
}

/// `GET /health`: `{"status":"ok"}`, without a key and without asking the upstream.
async fn health() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"ok"}"#,
    )
        .into_response()
}

async fn not_found(uri: Uri) -> Response {
    ProxyError::NotFound(uri.path().to_owned()).into_response()
}

async fn chat_completions(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let info = request.extensions().get::<RequestInfo>().cloned();
    let mut summary = Summary::default();
    match complete(&shared, request, info, &mut summary).await {
        Ok(mut response) => {
            response.extensions_mut().insert(summary);
            response
        }
        Err(error) => {
            summary.outcome = Some(error.code().to_owned());
            let mut response = error.into_response();
            response.extensions_mut().insert(summary);
            response
        }
    }
}

/// The request's body, within the size limit and the body time-out.
async fn read_body(config: &ProxyConfig, request: Request) -> Result<Bytes, ProxyError> {
    let read = Bytes::from_request(request, &());
    let body = if config.body_timeout.is_zero() {
        read.await
    } else {
        tokio::time::timeout(config.body_timeout, read)
            .await
            .map_err(|_| ProxyError::RequestTimeout(config.body_timeout))?
    };
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ProxyError::BodyTooLarge {
                limit: config.max_request_bytes,
            }
        } else {
            ProxyError::invalid("invalid_json", rejection.body_text())
        }
    })
}

async fn complete(
    shared: &Shared,
    request: Request,
    info: Option<RequestInfo>,
    summary: &mut Summary,
) -> Result<Response, ProxyError> {
    let config = &shared.config;
    let body = read_body(config, request).await?;
    let request = request::translate(&body, config.protocol, &config.upstream.model)?;
    summary.model = Some(request.model.clone());
    let slot = shared.upstream_slot()?;
    let Translated {
        model: model_name,
        messages,
        mut options,
        mut extra,
        stream,
        include_usage,
        offered,
        decode,
        max_calls,
    } = request;
    let id = unique_id();
    let translator = Translator::new(
        config.protocol,
        decode,
        stream,
        offered,
        max_calls,
        config.tam,
        config.action,
        id.clone(),
    );
    // The model's turn ends at its call (SPEC §5): the protocol's end markers go upstream
    // as stop sequences, before the client's own.
    let mut stop = translator.stop_sequences();
    if !stop.is_empty() {
        for own in options.stop.drain(..) {
            if !stop.contains(&own) {
                stop.push(own);
            }
        }
        options.stop = stop;
    }
    // Usage is always asked for (the proxy streams from the upstream), and reported to the
    // client as OpenAI does: in a whole reply, and in a stream when the client asked.
    extra.insert(
        "stream_options".into(),
        serde_json::json!({"include_usage": true}),
    );
    let mut upstream_config = config.upstream.clone();
    upstream_config.model.clone_from(&model_name);
    // The client's fields first; the operator's `extra_body` wins.
    let mut fields = extra;
    fields.extend(std::mem::take(&mut upstream_config.extra_body));
    upstream_config.extra_body = fields;
    let model = shared.model.with_config(upstream_config);
    let mut upstream = model.stream(&ModelRequest::new(messages, options));

    // The first item decides the status: an upstream error is answered with its own.
    let first = match upstream.next().await {
        Some(Err(error)) => return Err(ProxyError::from_upstream(&*error)),
        other => other,
    };
    if stream {
        let log = info.map(|info| RequestLog::new(info, 200, std::mem::take(summary)));
        let mut response = stream_response(
            first,
            upstream,
            translator,
            ChunkWriter::new(&id, &model_name),
            include_usage,
            Held {
                slot: Some(slot),
                log,
            },
        );
        response.extensions_mut().insert(LogsItself);
        Ok(response)
    } else {
        let (value, translator) = gather(first, upstream, translator, &id, &model_name).await?;
        drop(slot);
        summary.calls = translator.calls();
        summary.usage = translator.usage().cloned();
        summary.outcome = value["choices"][0]["finish_reason"]
            .as_str()
            .map(str::to_owned);
        Ok((
            [(header::CONTENT_TYPE, "application/json")],
            value.to_string(),
        )
            .into_response())
    }
}

/// What a streamed response holds until it ends: its upstream slot and its log line.
struct Held {
    /// `None` once the upstream request is closed.
    slot: Option<OwnedSemaphorePermit>,
    log: Option<RequestLog>,
}

type Upstream = BoxStream<'static, Result<ModelItem, BoxError>>;

/// A request without `stream`: the whole reply in one `chat.completion`.
async fn gather(
    first: Option<Result<ModelItem, BoxError>>,
    mut upstream: Upstream,
    mut translator: Translator,
    id: &str,
    model: &str,
) -> Result<(serde_json::Value, Translator), ProxyError> {
    let mut completion = Completion::default();
    let mut next = first;
    while let Some(item) = next {
        match item {
            Ok(item) => translator.feed(item),
            Err(error) => return Err(ProxyError::from_upstream(&*error)),
        }
        for piece in translator.drain() {
            completion.push(piece);
        }
        if translator.turn_over() {
            // The turn ended at the call: the upstream request is closed now, whatever
            // the model would write next (SPEC §5).
            break;
        }
        next = upstream.next().await;
    }
    drop(upstream);
    let finish_reason = translator.finish(false);
    for piece in translator.drain() {
        completion.push(piece);
    }
    let mut value = completion.into_json(id, model, &finish_reason);
    if let Some(usage) = translator.usage() {
        value["usage"] = serde_json::Value::Object(usage.clone());
    }
    Ok((value, translator))
}

/// The state of one streamed response.
struct Streaming {
    first: Option<Option<Result<ModelItem, BoxError>>>,
    /// `None` once the turn ended at a call: the upstream request is dropped then.
    upstream: Option<Upstream>,
    translator: Translator,
    writer: ChunkWriter,
    /// The client asked for `usage` (`stream_options.include_usage`).
    include_usage: bool,
    done: bool,
    /// Released when the response ends or is dropped (the client went away): the
    /// upstream slot, and the log line, written then.
    held: Held,
}

impl Streaming {
    /// The events of the next upstream item (none, or the last ones).
    async fn step(&mut self) -> Vec<Event> {
        let next = match (self.first.take(), &mut self.upstream) {
            (Some(first), _) => first,
            (None, Some(upstream)) => upstream.next().await,
            (None, None) => None,
        };
        let mut events = Vec::new();
        match next {
            Some(Ok(item)) => {
                self.translator.feed(item);
                self.drain_into(&mut events);
                if self.translator.turn_over() {
                    // The turn ended at the call (SPEC §5): close the upstream request
                    // now; the next step finishes the reply.
                    self.upstream = None;
                    self.held.slot = None;
                }
            }
            Some(Err(error)) => {
                self.translator.finish(true);
                self.drain_into(&mut events);
                let error = ProxyError::from_upstream(&*error);
                events.push(Event::default().data(error.body().to_string()));
                self.log(error.code());
                self.done = true;
            }
            None => {
                let finish_reason = self.translator.finish(false);
                self.drain_into(&mut events);
                if let Some(error) = self.translator.failure() {
                    // A streamed call the block did not confirm: chunks cannot be taken
                    // back, so the reply ends as a broken stream.
                    events.push(Event::default().data(error.body().to_string()));
                    self.log(error.code());
                } else {
                    self.log(&finish_reason);
                    let mut finish = self.writer.finish(&finish_reason);
                    match self.translator.usage() {
                        Some(usage) if self.include_usage => {
                            events.push(json_event(&finish));
                            events.push(json_event(&self.writer.usage(usage)));
                        }
                        // Not asked for: on the finish chunk, as llama-server sends it.
                        Some(usage) => {
                            finish["usage"] = serde_json::Value::Object(usage.clone());
                            events.push(json_event(&finish));
                        }
                        None => events.push(json_event(&finish)),
                    }
                    events.push(Event::default().data("[DONE]"));
                }
                self.done = true;
            }
        }
        events
    }

    /// Fills in the log line's outcome (written when the response is dropped).
    fn log(&mut self, outcome: &str) {
        if let Some(log) = &mut self.held.log {
            log.summary.outcome = Some(outcome.to_owned());
        }
    }

    fn drain_into(&mut self, events: &mut Vec<Event>) {
        for piece in self.translator.drain() {
            events.push(json_event(&self.writer.piece(piece)));
        }
    }
}

fn json_event(value: &serde_json::Value) -> Event {
    Event::default().data(value.to_string())
}

/// A request with `stream: true`: one event per piece, as the upstream streams. Dropping
/// the response (the client went away) drops the upstream stream and its connection.
fn stream_response(
    first: Option<Result<ModelItem, BoxError>>,
    upstream: Upstream,
    translator: Translator,
    writer: ChunkWriter,
    include_usage: bool,
    mut held: Held,
) -> Response {
    let role = json_event(&writer.role());
    if let Some(log) = &mut held.log {
        // Until the reply ends, the outcome is that the client went away.
        log.summary.outcome = Some("client_closed".to_owned());
    }
    let state = Streaming {
        first: Some(first),
        upstream: Some(upstream),
        translator,
        writer,
        include_usage,
        done: false,
        held,
    };
    let events = stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let events = state.step().await;
        Some((stream::iter(events), state))
    })
    .flatten();
    let all = stream::once(async { role })
        .chain(events)
        .map(Ok::<Event, Infallible>);
    Sse::new(all).into_response()
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if let Some(log) = &mut self.held.log {
            log.summary.calls = self.translator.calls();
            log.summary.usage = self.translator.usage().cloned();
        }
    }
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    pass_models(&shared, "").await
}

async fn model_by_id(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match model_segment(&id) {
        Some(segment) => pass_models(&shared, &format!("/{segment}")).await,
        None => ProxyError::invalid("invalid_model", format!("'{id}' is not a model id"))
            .into_response(),
    }
}

/// A model id as one path segment of `{upstream}/models/…`: every byte but the URL's
/// unreserved ones percent-encoded (a `/` in the id included), so the id can never name
/// another path on the upstream (`../../admin/keys` stays inside `/models`). `None` for
/// an empty id and for `.` and `..`, which a URL reads as a step up.
fn model_segment(id: &str) -> Option<String> {
    if id.is_empty() || id == "." || id == ".." {
        return None;
    }
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    Some(out)
}

/// `GET {upstream}/models{suffix}`, answered with the upstream's status, content type and
/// body (streamed, not buffered).
async fn pass_models(shared: &Shared, suffix: &str) -> Response {
    let _slot = match shared.upstream_slot() {
        Ok(slot) => slot,
        Err(error) => return error.into_response(),
    };
    let upstream = &shared.config.upstream;
    let url = format!("{}/models{suffix}", upstream.base_url.trim_end_matches('/'));
    let mut request = shared.http.get(url);
    if let Some(key) = &upstream.api_key {
        request = request.bearer_auth(key);
    }
    let response = match tokio::time::timeout(upstream.idle_timeout, request.send()).await {
        Err(_) => {
            return ProxyError::Timeout(format!(
                "no answer from the upstream for {:?}",
                upstream.idle_timeout
            ))
            .into_response();
        }
        Ok(Err(error)) => return ProxyError::Unreachable(error.to_string()).into_response(),
        Ok(Ok(response)) => response,
    };
    let status =
        StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| header::HeaderValue::from_static("application/json"));
    let body = Body::from_stream(response.bytes_stream());
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::model_segment;

    #[test]
    fn a_model_id_is_one_segment_that_cannot_step_out() {
        assert_eq!(model_segment("qwen").as_deref(), Some("qwen"));
        assert_eq!(
            model_segment("../../admin/keys").as_deref(),
            Some("..%2F..%2Fadmin%2Fkeys")
        );
        assert_eq!(
            model_segment("meta-llama/Llama 3?x#y").as_deref(),
            Some("meta-llama%2FLlama%203%3Fx%23y")
        );
        assert_eq!(model_segment("模型").as_deref(), Some("%E6%A8%A1%E5%9E%8B"));
        for refused in ["", ".", ".."] {
            assert_eq!(model_segment(refused), None, "{refused:?}");
        }
    }
}

/// This crate's README example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
