//! The proxy's settings and the state its routes share.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use tam_model::openai::{OpenAiConfig, OpenAiModel, UpstreamChoice, UpstreamKind};

use crate::{ClientKeys, ProtocolChoice, ProxyError, access, default_max_connections};

/// Default of [`ProxyConfig::max_request_bytes`]: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;
/// Default of [`ProxyConfig::max_upstream_concurrency`]: 64.
pub const DEFAULT_MAX_UPSTREAM_CONCURRENCY: usize = 64;
/// Default of [`ProxyConfig::upstream_queue`]: 1 024 requests.
pub const DEFAULT_UPSTREAM_QUEUE: usize = 1024;
/// Default of [`ProxyConfig::upstream_queue_timeout`]: 60 s.
pub const DEFAULT_UPSTREAM_QUEUE_TIMEOUT: Duration = Duration::from_secs(60);
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
    /// The decoder's settings ([`tam::Config`]):
    ///
    /// * `protocol`, the protocol the upstream model is asked to write. Default:
    ///   [`ProtocolChoice::Action`], the protocol that small models called tools with best
    ///   through the proxy: on the BFCL cases of the repository's `e2e/README.md`
    ///   (Qwen2.5-Coder-1.5B-Instruct), ACTION answered 79 % of the development set and
    ///   72 % of a held-out set right, TAM 70 % and 56 %, at the same prompt size and time.
    ///   [`ProtocolChoice::Tam`] stays one call away ([`ProxyConfig::with_protocol`]).
    /// * `tam`, the TAM decoder's limits (block size, calls per block), and `action`, the
    ///   ACTION decoder's (block size, depth, nodes). Default: the protocol crates'.
    /// * `reasoning_tags`: `<think>` sections are reasoning, never calls. Default: `true`.
    ///
    /// Its `param_events` is not looked at: the proxy always reads arguments while blocks
    /// are written.
    pub decoder: tam::Config,
    /// Largest request body; a larger one gets 413. Default: [`DEFAULT_MAX_REQUEST_BYTES`]
    /// (4 MiB).
    pub max_request_bytes: usize,
    /// The keys a client must present (`Authorization: Bearer KEY`) on every route but
    /// `/health`. Default: none, and the proxy is open to anyone who reaches it.
    pub client_keys: ClientKeys,
    /// Web origins (`https://app.example`, as a browser writes its `Origin` header) whose
    /// requests are served, with CORS answers. A request with any other `Origin` gets 403.
    /// Default: none (no browser request is served).
    pub allowed_origins: Vec<String>,
    /// Open connections at most, in [`serve`](crate::serve). A new connection over it closes the oldest
    /// open connection that is not serving a request (one still sending its header, or
    /// an idle kept-alive one); when every open connection is serving a request, the new
    /// one is answered 503 `too_many_connections` and closed at once. 0: no cap. Default:
    /// [`default_max_connections`] when the configuration is made: half the process's
    /// soft open-file limit, at most [`MAX_DEFAULT_CONNECTIONS`](crate::MAX_DEFAULT_CONNECTIONS) (raise the limit first
    /// with [`raise_open_file_limit`](crate::raise_open_file_limit), as `tam serve` does).
    pub max_connections: usize,
    /// Upstream requests under way at most (chat completions and model lists); a request
    /// over it waits in the queue ([`ProxyConfig::upstream_queue`]). 0: no cap. Default:
    /// [`DEFAULT_MAX_UPSTREAM_CONCURRENCY`] (64).
    pub max_upstream_concurrency: usize,
    /// Requests that may wait for an upstream slot when
    /// [`ProxyConfig::max_upstream_concurrency`] are under way; they get slots in the
    /// order they came. A request that finds the queue full gets 503 `server_busy` with
    /// `Retry-After: 1` at once. A client that goes away while its request waits leaves
    /// the queue. 0: no queue, a request over the cap is refused at once. Default:
    /// [`DEFAULT_UPSTREAM_QUEUE`] (1 024): with the default 64 slots, sixteen requests
    /// wait per slot, enough to absorb a burst of a few hundred clients (a batch
    /// evaluation, an agent fleet starting at once), while a queued request holds no
    /// more than its connection and its request (its body at most
    /// [`ProxyConfig::max_request_bytes`]).
    pub upstream_queue: usize,
    /// The longest a request waits in the queue; then it gets 503 `server_busy` with
    /// `Retry-After: 1`. Zero: no limit. Default: [`DEFAULT_UPSTREAM_QUEUE_TIMEOUT`] (60 s):
    /// the wait is counted in the client's own time-out, and a minute is longer than most
    /// replies take on a local model (a few hundred tokens at 20 to 50 tokens a second) and
    /// shorter than the time-outs of OpenAI's clients (10 minutes), so a client that gives
    /// up on a slow upstream gets an answer it can retry on rather than a cut connection.
    pub upstream_queue_timeout: Duration,
    /// In [`serve`](crate::serve): a request's header must arrive within this, counted from the moment
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
    /// Strict calls: where the upstream can constrain its own sampling
    /// ([`ProxyConfig::upstream_kind`]), a request that offers tools (and whose
    /// `tool_choice` is not `none`) asks it to, so that once the model starts a block it
    /// can only write calls of the offered tools with their parameters and value types
    /// (see "Strict calls" in the crate docs). Default: on. Off, every upstream gets the
    /// prompt alone.
    pub strict: bool,
    /// Which server the upstream is, for what it can constrain: detected
    /// ([`UpstreamChoice::Auto`], the default: [`serve`](crate::serve) asks once, at start, and a
    /// [`router`](crate::router) at its first request with tools) or named.
    pub upstream_kind: UpstreamChoice,
}

impl ProxyConfig {
    /// A proxy to `upstream` with the defaults.
    pub fn new(upstream: OpenAiConfig) -> Self {
        Self {
            upstream,
            decoder: tam::Config::for_protocol(ProtocolChoice::Action),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            client_keys: ClientKeys::default(),
            allowed_origins: Vec::new(),
            max_connections: default_max_connections(),
            max_upstream_concurrency: DEFAULT_MAX_UPSTREAM_CONCURRENCY,
            upstream_queue: DEFAULT_UPSTREAM_QUEUE,
            upstream_queue_timeout: DEFAULT_UPSTREAM_QUEUE_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            log_prompts: false,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            stream_after_bytes: DEFAULT_STREAM_AFTER_BYTES,
            strict: true,
            upstream_kind: UpstreamChoice::Auto,
        }
    }

    /// This configuration with strict calls on or off ([`ProxyConfig::strict`]).
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// This configuration with `upstream_kind` ([`ProxyConfig::upstream_kind`]).
    #[must_use]
    pub fn with_upstream_kind(mut self, upstream_kind: UpstreamChoice) -> Self {
        self.upstream_kind = upstream_kind;
        self
    }

    /// This configuration with `protocol` (the `protocol` of [`ProxyConfig::decoder`]).
    #[must_use]
    pub fn with_protocol(mut self, protocol: ProtocolChoice) -> Self {
        self.decoder.protocol = protocol;
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

    /// This configuration with `upstream_queue` ([`ProxyConfig::upstream_queue`]; 0: no
    /// queue).
    #[must_use]
    pub fn with_upstream_queue(mut self, upstream_queue: usize) -> Self {
        self.upstream_queue = upstream_queue;
        self
    }

    /// This configuration with `upstream_queue_timeout`
    /// ([`ProxyConfig::upstream_queue_timeout`]; zero: no limit).
    #[must_use]
    pub fn with_upstream_queue_timeout(mut self, upstream_queue_timeout: Duration) -> Self {
        self.upstream_queue_timeout = upstream_queue_timeout;
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
    /// One permit per request waiting for an upstream slot.
    pub(crate) queue_places: Semaphore,
    /// The upstream's kind, once known (named, or detected at the first request that
    /// could be constrained).
    pub(crate) kind: tokio::sync::OnceCell<UpstreamKind>,
}

impl Shared {
    /// The upstream's kind: the one named, else detected once (and logged).
    pub(crate) async fn upstream_kind(&self) -> UpstreamKind {
        *self
            .kind
            .get_or_init(|| async {
                let kind = self
                    .config
                    .upstream_kind
                    .resolve(&self.config.upstream)
                    .await;
                log_upstream_kind(kind, self.config.upstream_kind);
                kind
            })
            .await
    }
}

/// The log line that says which upstream the proxy serves and whether its replies can be
/// constrained.
pub(crate) fn log_upstream_kind(kind: UpstreamKind, choice: UpstreamChoice) {
    let how = match choice {
        UpstreamChoice::Auto => "detected",
        UpstreamChoice::Kind(_) => "named",
    };
    tracing::info!(
        target: "tam_proxy::upstream",
        upstream_kind = %kind,
        how,
        strict_calls = strict_form(kind).unwrap_or("none (the prompt alone)"),
        "upstream kind"
    );
}

/// How strict calls reach an upstream of `kind`: a lazy GBNF grammar on llama-server's
/// `/completion`, or a structural tag as `response_format`; `None` for any other server.
pub(crate) fn strict_form(kind: UpstreamKind) -> Option<&'static str> {
    match kind {
        UpstreamKind::LlamaCpp => Some("gbnf"),
        UpstreamKind::Vllm | UpstreamKind::Sglang => Some("structural_tag"),
        _ => None,
    }
}

impl Shared {
    /// A permit for one upstream request: at once when one is free, else after waiting in
    /// the queue; [`ProxyError::Busy`] when the queue is full or the wait ran out. The
    /// time waited goes into the request's log line (`queued_ms`). Dropping the future
    /// (the client went away) leaves the queue.
    pub(crate) async fn upstream_slot(&self) -> Result<OwnedSemaphorePermit, ProxyError> {
        // Permits a request releases go to the requests waiting, in order, before any
        // newcomer: this finds none free while the queue is not empty.
        if let Ok(slot) = self.upstream_slots.clone().try_acquire_owned() {
            return Ok(slot);
        }
        let limit = self.config.max_upstream_concurrency;
        let Ok(_place) = self.queue_places.try_acquire() else {
            return Err(ProxyError::Busy {
                limit,
                waited: Duration::ZERO,
            });
        };
        let clock = access::QueueClock::start();
        let wait = self.upstream_slots.clone().acquire_owned();
        let timeout = self.config.upstream_queue_timeout;
        let slot = if timeout.is_zero() {
            wait.await
        } else {
            match tokio::time::timeout(timeout, wait).await {
                Ok(slot) => slot,
                Err(_) => {
                    return Err(ProxyError::Busy {
                        limit,
                        waited: timeout,
                    });
                }
            }
        };
        // The semaphore is never closed: an error here cannot happen.
        slot.map_err(|_| ProxyError::Busy {
            limit,
            waited: clock.elapsed(),
        })
    }
}

/// The semaphore of `limit` permits, `0` meaning no limit.
pub(crate) fn permits(limit: usize) -> Semaphore {
    Semaphore::new(match limit {
        0 => Semaphore::MAX_PERMITS,
        n => n.min(Semaphore::MAX_PERMITS),
    })
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
