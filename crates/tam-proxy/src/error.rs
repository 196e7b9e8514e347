//! What the proxy answers when it cannot give a completion: an OpenAI error body
//! (`{"error":{"message","type","code","param"}}`) with an HTTP status.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use tam_model::openai::OpenAiError;

/// Why a request got no completion. Each maps to an HTTP status and a stable `code`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The request is not a chat completion request the proxy can serve (400).
    #[error("{message}")]
    InvalidRequest {
        /// Stable code: `invalid_json`, `invalid_messages`, `invalid_tools`,
        /// `unsupported_content`, `unsupported_n`, `missing_model`.
        code: &'static str,
        /// What is wrong, for the client's developer.
        message: String,
    },
    /// The body is larger than [`ProxyConfig::max_request_bytes`](super::ProxyConfig) (413).
    #[error("the request body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The upstream answered with an error status; the proxy answers with the same status.
    #[error("{message}")]
    Upstream {
        /// The upstream's HTTP status.
        status: u16,
        /// The upstream's message.
        message: String,
    },
    /// The upstream could not be reached or broke the connection (502).
    #[error("the upstream cannot be reached: {0}")]
    Unreachable(String),
    /// The upstream sent nothing for the idle time-out (504).
    #[error("{0}")]
    Timeout(String),
    /// The upstream's stream broke the protocol: an invalid chunk, an event over the size
    /// limit, an error event (502).
    #[error("{message}")]
    BadUpstream {
        /// The upstream model's error code (`invalid_chunk`, `sse_event_too_large`,
        /// `server_error`), or `streamed_call_invalid`: a call whose chunks were streamed
        /// was not confirmed by its block (see the module docs, "Arguments that stream").
        code: &'static str,
        /// What went wrong.
        message: String,
    },
    /// No route for this method and path (404).
    #[error("unknown endpoint {0}")]
    NotFound(String),
    /// Client keys are configured and the request presents none of them in
    /// `Authorization: Bearer KEY` (401, code `invalid_api_key`, with
    /// `WWW-Authenticate: Bearer`).
    #[error("{}", if *missing {
        "this server needs a client key: send it as 'Authorization: Bearer KEY'"
    } else {
        "the client key is not valid"
    })]
    Unauthorized {
        /// No key was presented at all.
        missing: bool,
    },
    /// The request carries an `Origin` header that is not allowed: it comes from a web
    /// page (403, code `origin_not_allowed`). Carries the origin.
    #[error("requests from the web origin '{0}' are not allowed")]
    OriginNotAllowed(String),
    /// A POST whose `Content-Type` is not `application/json` (415, code
    /// `unsupported_media_type`).
    #[error("the request body must be JSON, sent with 'Content-Type: application/json'")]
    UnsupportedMediaType,
    /// The request body did not arrive within the body time-out (408, code
    /// `request_timeout`).
    #[error("the request body did not arrive within {0:?}")]
    RequestTimeout(std::time::Duration),
    /// As many upstream requests as allowed are under way, and the request could not wait
    /// for one to end: the queue was full, or its wait ran out (503, code `server_busy`,
    /// with `Retry-After: 1`).
    #[error("{}", if waited.is_zero() {
        format!("the server is busy: {limit} upstream requests are under way and the queue is full; retry shortly")
    } else {
        format!("the server is busy: no upstream slot came free within {waited:?} ({limit} requests under way); retry shortly")
    })]
    Busy {
        /// The limit, [`ProxyConfig::max_upstream_concurrency`](super::ProxyConfig).
        limit: usize,
        /// How long the request waited in the queue: zero when it found the queue full
        /// ([`ProxyConfig::upstream_queue`](super::ProxyConfig)), else the wait limit
        /// ([`ProxyConfig::upstream_queue_timeout`](super::ProxyConfig)).
        waited: std::time::Duration,
    },
}

/// The `code` of an error answer, in the response's extensions (for the request log).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorCode(pub(crate) &'static str);

impl ProxyError {
    /// A 400 with `code`.
    pub(crate) fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        ProxyError::InvalidRequest {
            code,
            message: message.into(),
        }
    }

    /// The error of an upstream model stream (an [`OpenAiError`] inside the boxed error).
    pub(crate) fn from_upstream(error: &(dyn std::error::Error + Send + Sync + 'static)) -> Self {
        let Some(error) = error.downcast_ref::<OpenAiError>() else {
            return ProxyError::Unreachable(error.to_string());
        };
        // `OpenAiError` is tam-model's and #[non_exhaustive]: the rest are bad upstreams.
        #[allow(clippy::wildcard_enum_match_arm)]
        match error {
            OpenAiError::Http { status, message } => ProxyError::Upstream {
                status: *status,
                message: message.clone(),
            },
            OpenAiError::IdleTimeout(_) => ProxyError::Timeout(error.to_string()),
            OpenAiError::Transport(_)
            | OpenAiError::Client(_)
            | OpenAiError::MissingApiKey { .. } => ProxyError::Unreachable(error.to_string()),
            other => ProxyError::BadUpstream {
                code: other.code(),
                message: other.to_string(),
            },
        }
    }

    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
            ProxyError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ProxyError::Upstream { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY)
            }
            ProxyError::Unreachable(_) | ProxyError::BadUpstream { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::NotFound(_) => StatusCode::NOT_FOUND,
            ProxyError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            ProxyError::OriginNotAllowed(_) => StatusCode::FORBIDDEN,
            ProxyError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ProxyError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ProxyError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The stable `code` of the error body: the request codes above, `request_too_large`,
    /// `upstream_error`, `upstream_unreachable`, `upstream_timeout`, the upstream model's
    /// code for a broken stream, `not_found`, `invalid_api_key`, `origin_not_allowed`,
    /// `unsupported_media_type`, `request_timeout`, `server_busy`.
    pub fn code(&self) -> &'static str {
        match self {
            ProxyError::InvalidRequest { code, .. } | ProxyError::BadUpstream { code, .. } => code,
            ProxyError::BodyTooLarge { .. } => "request_too_large",
            ProxyError::Upstream { .. } => "upstream_error",
            ProxyError::Unreachable(_) => "upstream_unreachable",
            ProxyError::Timeout(_) => "upstream_timeout",
            ProxyError::NotFound(_) => "not_found",
            ProxyError::Unauthorized { .. } => "invalid_api_key",
            ProxyError::OriginNotAllowed(_) => "origin_not_allowed",
            ProxyError::UnsupportedMediaType => "unsupported_media_type",
            ProxyError::RequestTimeout(_) => "request_timeout",
            ProxyError::Busy { .. } => "server_busy",
        }
    }

    /// The OpenAI error `type`: `invalid_request_error` for 4xx answers the client can fix
    /// (`authentication_error` for 401/403, `rate_limit_error` for 429), else `api_error`.
    pub fn kind(&self) -> &'static str {
        match self.status().as_u16() {
            401 | 403 => "authentication_error",
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        }
    }

    /// The error body: `{"error":{"message","type","code","param":null}}`.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.to_string(),
            "type": self.kind(),
            "code": self.code(),
            "param": null,
        }})
    }
}

impl ProxyError {
    /// The error's `type` in Anthropic's error bodies, by status.
    pub(crate) fn anthropic_kind(&self) -> &'static str {
        match self.status().as_u16() {
            400 | 408 | 415 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            503 | 529 => "overloaded_error",
            504 => "timeout_error",
            _ => "api_error",
        }
    }

    /// The body in Anthropic's shape: `{"type":"error","error":{"type","message"}}`.
    pub(crate) fn anthropic_body(&self) -> Value {
        json!({"type": "error", "error": {"type": self.anthropic_kind(), "message": self.to_string()}})
    }

    /// The error answered in the shape of the API it happened in.
    pub(crate) fn into_shaped_response(self, shape: crate::api::ErrorShape) -> Response {
        match shape {
            crate::api::ErrorShape::OpenAi => self.into_response(),
            crate::api::ErrorShape::Anthropic => {
                let body = self.anthropic_body().to_string();
                self.respond(body)
            }
        }
    }

    /// `body` with the error's status and headers.
    fn respond(self, body: String) -> Response {
        let mut response = (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        match self {
            ProxyError::Unauthorized { .. } => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            ProxyError::Busy { .. } => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            }
            ProxyError::InvalidRequest { .. }
            | ProxyError::BodyTooLarge { .. }
            | ProxyError::Upstream { .. }
            | ProxyError::Unreachable(_)
            | ProxyError::Timeout(_)
            | ProxyError::BadUpstream { .. }
            | ProxyError::NotFound(_)
            | ProxyError::OriginNotAllowed(_)
            | ProxyError::UnsupportedMediaType
            | ProxyError::RequestTimeout(_) => {}
        }
        response.extensions_mut().insert(ErrorCode(self.code()));
        response
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let body = self.body().to_string();
        self.respond(body)
    }
}
