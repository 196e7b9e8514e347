//! The proxy's settings and the state its routes share.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use tam_model::openai::{OpenAiConfig, OpenAiModel};

use crate::*;

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
/// Default of [`ProxyConfig::stream_after_bytes`]: 256 bytes.
pub const DEFAULT_STREAM_AFTER_BYTES: usize = 256;

/// How the proxy reaches its upstream and reads its replies.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// The upstream: base URL (up to and without `/chat/completions`, e.g.
    /// `http://127.0.0.1:8081/v1`), API key, idle time-out, SSE event limit, fields added to
    /// every request. Its `model` is used when a request names none (empty: required).
    pub upstream: OpenAiConfig,
    /// The protocol the upstream model is asked to write. Default: [`Protocol::Action`],
    /// the protocol that small models called tools with best through the proxy: on the
    /// BFCL cases of the repository's `e2e/README.md` (Qwen2.5-Coder-1.5B-Instruct), ACTION
    /// answered 79 % of the development set and 72 % of a held-out set right, TAM 70 % and
    /// 56 %, at the same prompt size and time. [`Protocol::Tam`] stays one call away.
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
    /// Log each request's prompt: the messages as the upstream gets them (tool prompt and
    /// history included), one line at INFO on target `tam_proxy::prompt` with the request
    /// id. Off by default: prompts hold what users wrote.
    pub log_prompts: bool,
    /// In a streaming reply, a call's chunks go out before its block closes only once one
    /// of its string values has grown to this many bytes (code, a file's content): from
    /// then on the call and that value stream as the model writes them. A call whose
    /// values stay shorter goes out whole when its block closes and decodes, so a block
    /// that turns out not to be calls (a close tag that matches nothing, a block never
    /// closed) comes back as content and never voids a call already sent. 0: every call
    /// streams from its tool id and every plain string value from its first byte (a
    /// block that then fails ends the reply with `streamed_call_invalid`). Default:
    /// [`DEFAULT_STREAM_AFTER_BYTES`] (256).
    pub stream_after_bytes: usize,
}

impl ProxyConfig {
    /// A proxy to `upstream` with the defaults.
    pub fn new(upstream: OpenAiConfig) -> Self {
        Self {
            upstream,
            protocol: Protocol::Action,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            tam: tam_parse::Config::default(),
            action: action_xml::Config::default(),
            client_keys: ClientKeys::default(),
            allowed_origins: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_upstream_concurrency: DEFAULT_MAX_UPSTREAM_CONCURRENCY,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            log_prompts: false,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            stream_after_bytes: DEFAULT_STREAM_AFTER_BYTES,
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

    /// This configuration with `stream_after_bytes` ([`ProxyConfig::stream_after_bytes`]).
    #[must_use]
    pub fn with_stream_after_bytes(mut self, stream_after_bytes: usize) -> Self {
        self.stream_after_bytes = stream_after_bytes;
        self
    }

    /// This configuration logging prompts or not ([`ProxyConfig::log_prompts`]).
    pub fn with_log_prompts(mut self, on: bool) -> Self {
        self.log_prompts = on;
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
pub(crate) struct Shared {
    pub(crate) config: ProxyConfig,
    /// The upstream model; each request gets a copy with its own model name and fields,
    /// sharing the connection pool.
    pub(crate) model: OpenAiModel,
    /// For `GET /v1/models`.
    pub(crate) http: reqwest::Client,
    /// One permit per upstream request under way.
    pub(crate) upstream_slots: Arc<Semaphore>,
}

impl Shared {
    /// A permit for one upstream request, or [`ProxyError::Busy`].
    pub(crate) fn upstream_slot(&self) -> Result<OwnedSemaphorePermit, ProxyError> {
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
