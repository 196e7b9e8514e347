//! Who may use the proxy and how each request is logged: client keys (compared in
//! constant time), the `Origin` and `Content-Type` rules, the request id, and the one log
//! line per request.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Map, Value};
use subtle::{Choice, ConstantTimeEq};

use crate::{ProxyError, Shared};

/// The keys a client may present (`Authorization: Bearer KEY`). Empty: the proxy is open
/// to anyone who reaches it.
///
/// A presented key is compared with every configured key, each comparison in time that
/// depends on the configured key's length only, with no early exit, so the time of an
/// answer tells nothing about how much of a key was right. An empty presented key never
/// matches, even an empty configured one. `Debug` shows how many keys there are, never
/// a key.
#[derive(Clone, Default)]
pub struct ClientKeys {
    keys: Arc<[Box<[u8]>]>,
}

/// Why a list of client keys was refused. The message never contains a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientKeyError {
    /// The text holds no key.
    #[error("no client key in the list")]
    Empty,
    /// A key has a character other than visible ASCII, or a space or comma inside.
    #[error(
        "client key number {number} has a character that is not visible ASCII (or a space or comma inside)"
    )]
    Invalid {
        /// The key's place in the list, from 1.
        number: usize,
    },
}

impl ClientKeys {
    /// These keys, as they are. Keys an HTTP header cannot carry never match.
    pub fn new<K: AsRef<str>>(keys: impl IntoIterator<Item = K>) -> Self {
        let keys: Vec<Box<[u8]>> = keys
            .into_iter()
            .map(|key| Box::<[u8]>::from(key.as_ref().as_bytes()))
            .collect();
        Self { keys: keys.into() }
    }

    /// The keys of a list: separated by commas or line breaks, each trimmed of spaces and
    /// tabs; empty entries and lines starting with `#` are skipped. A key is visible
    /// ASCII (`!` to `~`) without a comma.
    ///
    /// # Errors
    /// [`ClientKeyError::Empty`] when no key is left, [`ClientKeyError::Invalid`] for a
    /// key with another character.
    pub fn parse(text: &str) -> Result<Self, ClientKeyError> {
        let mut keys = Vec::new();
        for line in text.lines() {
            let line = line.trim_matches([' ', '\t', '\r']);
            if line.starts_with('#') {
                continue;
            }
            for key in line.split(',') {
                let key = key.trim_matches([' ', '\t']);
                if key.is_empty() {
                    continue;
                }
                if !key.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(ClientKeyError::Invalid {
                        number: keys.len() + 1,
                    });
                }
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(ClientKeyError::Empty);
        }
        Ok(Self::new(keys))
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No key: the proxy is open.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether `presented` is one of the keys (constant time, see the type's docs).
    pub fn matches(&self, presented: &[u8]) -> bool {
        let mut any = Choice::from(0);
        for key in self.keys.iter() {
            any |= equal(presented, key);
        }
        bool::from(any) && !presented.is_empty()
    }
}

/// `presented == key`, in time that depends on `key.len()` only.
fn equal(presented: &[u8], key: &[u8]) -> Choice {
    let mut same = (presented.len() as u64).ct_eq(&(key.len() as u64));
    for (at, byte) in key.iter().enumerate() {
        // Past the end of a shorter presented key: a byte that differs or not, the
        // lengths already differ.
        let theirs = presented.get(at).copied().unwrap_or(!*byte);
        same &= theirs.ct_eq(byte);
    }
    same
}

impl fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientKeys({} keys)", self.keys.len())
    }
}

/// The key of a request: `Authorization: Bearer KEY` (the scheme in any case), else
/// `x-api-key: KEY` (Anthropic's clients send either).
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let from_authorization = || {
        let value = headers.get(header::AUTHORIZATION)?.as_bytes();
        let scheme = value.get(..7)?;
        if !scheme.eq_ignore_ascii_case(b"bearer ") {
            return None;
        }
        Some(value[7..].trim_ascii())
    };
    from_authorization().or_else(|| Some(headers.get("x-api-key")?.as_bytes().trim_ascii()))
}

/// Whether the `Content-Type` is `application/json` (parameters such as `charset`
/// allowed, any case).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media_type = value.split(';').next().unwrap_or_default().trim();
    media_type.eq_ignore_ascii_case("application/json")
}

/// A request's id: `req_` and a number unique in the process.
fn request_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("req_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// What the handlers know of the request they serve: its id, when it arrived, what it
/// asked for, how long it waited for an upstream slot.
#[derive(Debug, Clone)]
pub(crate) struct RequestInfo {
    pub(crate) id: String,
    pub(crate) start: Instant,
    pub(crate) method: Method,
    pub(crate) path: String,
    /// Milliseconds waited in the upstream queue, written by [`QueueClock`].
    pub(crate) queued_ms: Arc<AtomicU64>,
}

tokio::task_local! {
    /// The queue time of the request being handled, for [`QueueClock`]: set by [`guard`]
    /// around the handler, so the handler's call for an upstream slot needs no argument.
    static QUEUED_MS: Arc<AtomicU64>;
}

/// Times one wait in the upstream queue and writes it into the request's
/// [`RequestInfo::queued_ms`] when dropped: when the wait ends, or when the waiting request
/// is dropped (its client went away).
pub(crate) struct QueueClock {
    start: Instant,
    cell: Option<Arc<AtomicU64>>,
}

impl QueueClock {
    /// Starts the clock (in the handler's task: a request outside [`guard`] has no log
    /// line to write into).
    pub(crate) fn start() -> Self {
        Self {
            start: Instant::now(),
            cell: QUEUED_MS.try_with(Arc::clone).ok(),
        }
    }

    /// The time waited so far.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

impl Drop for QueueClock {
    fn drop(&mut self) {
        if let Some(cell) = &self.cell {
            cell.store(millis(self.start.elapsed()), Ordering::Relaxed);
        }
    }
}

/// Whole milliseconds, saturated.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A response's facts for the log line, put in its extensions by the handler.
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    pub(crate) model: Option<String>,
    pub(crate) calls: usize,
    pub(crate) usage: Option<Map<String, Value>>,
    /// The finish reason, or the error code.
    pub(crate) outcome: Option<String>,
    /// Whether the reply was constrained (strict calls); `None` for a request whose reply
    /// is not decoded into calls.
    pub(crate) constrained: Option<bool>,
}

/// On a response whose body logs the request itself when it ends (a stream).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogsItself;

/// The log line of one request, written once: by the middleware for a whole answer, or
/// when a stream ends or is dropped (the client went away).
#[derive(Debug)]
pub(crate) struct RequestLog {
    info: RequestInfo,
    status: u16,
    pub(crate) summary: Summary,
    written: bool,
}

impl RequestLog {
    pub(crate) fn new(info: RequestInfo, status: u16, summary: Summary) -> Self {
        Self {
            info,
            status,
            summary,
            written: false,
        }
    }

    /// Marks the line written without writing it: another line tells of the request.
    fn discard(mut self) {
        self.written = true;
    }

    /// Writes the line (once): `tam_proxy::request` at level INFO, its fields
    /// `request_id`, `method`, `path`, `status`, `model`, `calls`, `prompt_tokens`,
    /// `completion_tokens`, `outcome`, `constrained` (requests with tools), `queued_ms`,
    /// `latency_ms`. Never a key, never a
    /// prompt (that is a line of its own, when asked).
    pub(crate) fn write(&mut self) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let tokens = |key: &str| {
            self.summary
                .usage
                .as_ref()
                .and_then(|usage| usage.get(key))
                .and_then(Value::as_u64)
        };
        let latency_ms = millis(self.info.start.elapsed());
        let queued_ms = self.info.queued_ms.load(Ordering::Relaxed);
        tracing::info!(
            target: "tam_proxy::request",
            request_id = %self.info.id,
            method = %self.info.method,
            path = %self.info.path,
            status = self.status,
            model = self.summary.model.as_deref().map(tracing::field::display),
            calls = self.summary.calls,
            prompt_tokens = tokens("prompt_tokens"),
            completion_tokens = tokens("completion_tokens"),
            outcome = self.summary.outcome.as_deref().map(tracing::field::display),
            constrained = self.summary.constrained,
            queued_ms,
            latency_ms,
            "request"
        );
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        self.write();
    }
}

/// The status logged for a request whose client went away before its answer (nothing was
/// sent): 499, as nginx logs it.
const CLIENT_CLOSED_STATUS: u16 = 499;

/// The handler of a request, and the log line written when it is dropped before it
/// answers (the client went away: hyper drops the handler). The handler is declared first,
/// so it is dropped first: what it held (an upstream slot, a place in the queue, the
/// upstream request) is released, and its queue time written, before the line.
struct Answered<F> {
    handler: Pin<Box<F>>,
    unanswered: Option<RequestLog>,
}

impl<F: Future<Output = Response>> Future for Answered<F> {
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let this = self.get_mut();
        let response = ready!(this.handler.as_mut().poll(cx));
        if let Some(log) = this.unanswered.take() {
            log.discard();
        }
        Poll::Ready(response)
    }
}

/// The middleware in front of every route but `/health`: the `Origin` rule, the client
/// key, the `Content-Type` of a POST; then the request id (`x-request-id` on the answer)
/// and the log line.
pub(crate) async fn guard(
    State(shared): State<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let info = RequestInfo {
        id: request_id(),
        start: Instant::now(),
        method: request.method().clone(),
        path: request.uri().path().to_owned(),
        queued_ms: Arc::default(),
    };
    let config = &shared.config;
    let headers = request.headers();
    let refused = if let Some(origin) = headers.get(header::ORIGIN)
        && !config
            .allowed_origins
            .iter()
            .any(|allowed| allowed.as_bytes() == origin.as_bytes())
    {
        Some(ProxyError::OriginNotAllowed(
            String::from_utf8_lossy(origin.as_bytes())
                .chars()
                .take(200)
                .collect(),
        ))
    } else if !config.client_keys.is_empty()
        && !bearer(headers).is_some_and(|key| config.client_keys.matches(key))
    {
        Some(ProxyError::Unauthorized {
            missing: bearer(headers).is_none_or(<[u8]>::is_empty),
        })
    } else if request.method() == Method::POST && !is_json(headers) {
        Some(ProxyError::UnsupportedMediaType)
    } else {
        None
    };
    let mut response = match refused {
        Some(error) => error.into_shaped_response(crate::api::ErrorShape::of_path(&info.path)),
        None => {
            request.extensions_mut().insert(info.clone());
            let handler = QUEUED_MS.scope(info.queued_ms.clone(), next.run(request));
            Answered {
                handler: Box::pin(handler),
                unanswered: Some(RequestLog::new(
                    info.clone(),
                    CLIENT_CLOSED_STATUS,
                    Summary {
                        outcome: Some("client_closed".to_owned()),
                        ..Summary::default()
                    },
                )),
            }
            .await
        }
    };
    if let Ok(id) = HeaderValue::from_str(&info.id) {
        response.headers_mut().insert("x-request-id", id);
    }
    if response.extensions().get::<LogsItself>().is_none() {
        let summary = response
            .extensions()
            .get::<Summary>()
            .cloned()
            .unwrap_or_default();
        let mut log = RequestLog::new(info, response.status().as_u16(), summary);
        if log.summary.outcome.is_none()
            && let Some(code) = response.extensions().get::<crate::error::ErrorCode>()
        {
            log.summary.outcome = Some(code.0.to_owned());
        }
        log.write();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_exactly() {
        let keys = ClientKeys::new(["alpha", "beta-2"]);
        assert!(keys.matches(b"alpha"));
        assert!(keys.matches(b"beta-2"));
        for wrong in [
            &b""[..],
            b"alph",
            b"alphaa",
            b"beta-",
            b"beta-3",
            b"ALPHA",
            b"x",
        ] {
            assert!(!keys.matches(wrong), "{wrong:?}");
        }
        assert!(!ClientKeys::new([""]).matches(b""));
        assert!(!ClientKeys::default().matches(b"alpha"));
        assert_eq!(format!("{keys:?}"), "ClientKeys(2 keys)");
    }

    #[test]
    fn a_key_list_splits_at_commas_and_lines() {
        let keys = ClientKeys::parse("a1, b2\n# comment\n\n c3 \r\n,d4,").unwrap();
        assert_eq!(keys.len(), 4);
        for key in ["a1", "b2", "c3", "d4"] {
            assert!(keys.matches(key.as_bytes()), "{key}");
        }
        assert_eq!(
            ClientKeys::parse(" \n#x\n,").unwrap_err(),
            ClientKeyError::Empty
        );
        assert_eq!(
            ClientKeys::parse("ok\nnot ok").unwrap_err(),
            ClientKeyError::Invalid { number: 2 }
        );
        assert_eq!(
            ClientKeys::parse("clé").unwrap_err(),
            ClientKeyError::Invalid { number: 1 }
        );
    }

    #[test]
    fn bearer_and_content_type() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  k1 "),
        );
        assert_eq!(bearer(&headers), Some(&b"k1"[..]));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic k1"));
        assert_eq!(bearer(&headers), None);
        assert!(!is_json(&headers));
        for (value, json) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
            ("application/jsonx", false),
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(is_json(&headers), json, "{value}");
        }
    }
}
