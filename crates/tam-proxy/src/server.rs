//! The proxy's own accept loop: hyper's HTTP/1 connections with a header-read time-out
//! and a bounded read buffer, a cap on open connections that makes room by closing the
//! oldest connection not serving a request (and answers 503 at once only when every open
//! connection is serving one), graceful shutdown.
//!
//! Each connection is registered with its accept order, a count of the requests it is
//! serving and a way to close it. A request is served from the moment hyper calls the
//! service (its header has arrived) until the last bytes of its answer are handed to the
//! socket: the response body is wrapped to notice its end (or its drop), and the socket
//! to notice the flush that follows, so a connection is never closed under an answer that
//! is still being written.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};

/// The answer written to a connection over the cap before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 138\r\n\
\r\n\
{\"error\":{\"message\":\"the server has as many connections open as it allows\",\"type\":\"api_error\",\"code\":\"too_many_connections\",\"param\":null}}";

/// The most a connection's read buffer holds: a request header larger than this is
/// answered 431 and the connection closed. 16 KiB, as Node.js allows by default: a chat
/// client's header is well under 2 KiB, and it bounds what a connection that sends part of
/// a header and then nothing can make the server hold.
pub(crate) const MAX_HEADER_BYTES: usize = 16 << 10;

/// The limits the accept loop applies.
pub(crate) struct Limits {
    /// Open connections at most (0: no cap).
    pub(crate) max_connections: usize,
    /// A request's header must arrive within this, counted from the moment the
    /// connection waits for it (zero: no time-out).
    pub(crate) header_timeout: Duration,
}

/// One open connection, as the accept loop sees it.
#[derive(Default)]
struct Connection {
    /// Requests being served: from the service call until their answer's last bytes are
    /// handed to the socket.
    serving: AtomicUsize,
    /// Of those, the answers whose body has ended (or was dropped): served once the
    /// connection's next flush completes.
    ending: AtomicUsize,
    /// Fired to close the connection (to make room, or at shutdown): closed at once when
    /// it serves no request, else after the one it serves.
    close: Notify,
}

impl Connection {
    fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Acquire) > 0
    }

    /// Everything written so far has reached the socket: the answers that had ended are
    /// served.
    fn flushed(&self) {
        let ended = self.ending.swap(0, Ordering::AcqRel);
        if ended > 0 {
            self.serving.fetch_sub(ended, Ordering::AcqRel);
        }
    }
}

/// The open connections by accept order (the oldest first).
type Registry = Arc<Mutex<BTreeMap<u64, Arc<Connection>>>>;

fn lock(registry: &Registry) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Connection>>> {
    // The map holds no invariant a panic elsewhere could break.
    registry.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the accept loop does with a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtCap {
    /// Under the cap: served.
    Under,
    /// At the cap: served, an older connection serving no request closed for room.
    Closing,
    /// At the cap, every connection serving a request: refused.
    Refusing,
}

/// How often at most the accept loop logs what it did at the cap.
const CAP_LOG_EVERY: Duration = Duration::from_secs(60);

/// The accept loop's log of the cap: the first connection closed or refused at once,
/// then at most one line a minute with the counts since the last, so a flood of
/// connections never becomes a flood of log lines.
struct CapLog {
    max_connections: usize,
    closed: u64,
    refused: u64,
    last: Option<Instant>,
}

impl CapLog {
    fn record(&mut self, at_cap: AtCap) {
        match at_cap {
            AtCap::Under => return,
            AtCap::Closing => self.closed += 1,
            AtCap::Refusing => self.refused += 1,
        }
        if self.last.is_some_and(|last| last.elapsed() < CAP_LOG_EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        tracing::warn!(
            target: "tam_proxy::request",
            max_connections = self.max_connections,
            closed_for_room = self.closed,
            refused = self.refused,
            "at the connection cap: connections serving no request closed to make room, new \
             connections refused while every one was serving a request"
        );
        self.closed = 0;
        self.refused = 0;
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then lets the connections
/// finish the requests they serve (closing the others at once) and waits for them.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let builder = http1_builder(&limits);
    let registry: Registry = Arc::default();
    // Each connection's task holds a sender; when all are gone, every task has ended.
    let (running, mut all_ended) = mpsc::channel::<Infallible>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut cap_log = CapLog {
        max_connections: limits.max_connections,
        closed: 0,
        refused: 0,
        last: None,
    };
    let mut next_id = 0u64;
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    accept_failed(&error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let connection = Arc::new(Connection::default());
        {
            let mut open = lock(&registry);
            let now = make_room(&mut open, limits.max_connections);
            cap_log.record(now);
            if now == AtCap::Refusing {
                drop(open);
                let _ = stream.try_write(BUSY);
                continue;
            }
            next_id += 1;
            open.insert(next_id, connection.clone());
        }
        let id = next_id;
        spawn_connection(&builder, stream, &app, connection, &registry, id, &running);
    }
    drop(listener);
    for connection in std::mem::take(&mut *lock(&registry)).into_values() {
        connection.close.notify_one();
    }
    drop(running);
    // `None` once every connection's task has ended.
    let _ = all_ended.recv().await;
    Ok(())
}

/// The HTTP/1 connection builder: the header-read time-out and the read buffer's bound.
fn http1_builder(limits: &Limits) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    builder
        .header_read_timeout((!limits.header_timeout.is_zero()).then_some(limits.header_timeout));
    builder.max_buf_size(MAX_HEADER_BYTES);
    builder
}

/// Whether a new connection is served, closing the oldest `open` one serving no request
/// when at the cap.
fn make_room(open: &mut BTreeMap<u64, Arc<Connection>>, max_connections: usize) -> AtCap {
    if max_connections == 0 || open.len() < max_connections {
        AtCap::Under
    } else if let Some(oldest_idle) = open
        .iter()
        .find(|(_, connection)| !connection.is_serving())
        .map(|(id, _)| *id)
    {
        if let Some(closed) = open.remove(&oldest_idle) {
            closed.close.notify_one();
        }
        AtCap::Closing
    } else {
        AtCap::Refusing
    }
}

/// Serves `stream` as connection `id` in a task of its own, which leaves `registry` when
/// the connection ends.
fn spawn_connection(
    builder: &http1::Builder,
    stream: TcpStream,
    app: &Router,
    connection: Arc<Connection>,
    registry: &Registry,
    id: u64,
    running: &mpsc::Sender<Infallible>,
) {
    let _ = stream.set_nodelay(true);
    let io = TrackedIo {
        io: TokioIo::new(stream),
        connection: connection.clone(),
    };
    let service = TrackedService {
        app: TowerToHyperService::new(app.clone()),
        connection: connection.clone(),
    };
    let served = builder.serve_connection(io, service);
    let registry = registry.clone();
    let running = running.clone();
    tokio::spawn(async move {
        let mut served = std::pin::pin!(served);
        tokio::select! {
            biased;
            () = connection.close.notified() => {
                if connection.is_serving() {
                    // Its request finishes first (hyper closes the connection after
                    // it); one that is not serving is dropped here, closed at once.
                    served.as_mut().graceful_shutdown();
                    let _ = served.await;
                }
            }
            // A connection error (a time-out, a client that went away) ends only its
            // connection.
            _ = served.as_mut() => {}
        }
        lock(&registry).remove(&id);
        drop(running);
    });
}

/// After a failed `accept`: go on at once when only that connection failed; wait a
/// second when the process is out of resources (file descriptors), which a retry at once
/// would only spin on.
async fn accept_failed(error: &io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(target: "tam_proxy::request", %error, "accept failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One request being served on a connection: counted from its creation; at its answer's
/// end (or drop) handed over to [`Connection::ending`].
struct Serving {
    connection: Option<Arc<Connection>>,
}

impl Serving {
    fn new(connection: Arc<Connection>) -> Self {
        connection.serving.fetch_add(1, Ordering::AcqRel);
        Self {
            connection: Some(connection),
        }
    }

    /// The answer's body has ended: served at the next completed flush.
    fn ended(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.ending.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Serving {
    /// Dropped before its answer (the client went away during the handler): no longer
    /// served.
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.serving.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The router as hyper's service, counting the requests it serves.
struct TrackedService {
    app: TowerToHyperService<Router>,
    connection: Arc<Connection>,
}

type Answer = Response<TrackedBody>;

impl hyper::service::Service<Request<Incoming>> for TrackedService {
    type Response = Answer;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let serving = Serving::new(self.connection.clone());
        let answer = self.app.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| TrackedBody { body, serving }))
        })
    }
}

/// A response body that tells its connection when it has ended or is dropped.
struct TrackedBody {
    body: Body,
    serving: Serving,
}

impl hyper::body::Body for TrackedBody {
    type Data = <Body as hyper::body::Body>::Data;
    type Error = <Body as hyper::body::Body>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        if frame.is_none() {
            this.serving.ended();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for TrackedBody {
    /// hyper drops a body it has read to its end (or knows whole), then writes and
    /// flushes what it holds of it; a body dropped because the connection failed ends
    /// with the connection.
    fn drop(&mut self) {
        self.serving.ended();
    }
}

/// A connection's socket, telling the connection when a flush completes: hyper flushes
/// the socket only once it has written everything it buffered.
struct TrackedIo {
    io: TokioIo<TcpStream>,
    connection: Arc<Connection>,
}

impl hyper::rt::Read for TrackedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for TrackedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = ready!(Pin::new(&mut this.io).poll_flush(cx));
        if flushed.is_ok() {
            this.connection.flushed();
        }
        Poll::Ready(flushed)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_busy_answer_has_its_length() {
        let text = std::str::from_utf8(super::BUSY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.ends_with(&format!("\r\ncontent-length: {}", body.len())));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "too_many_connections");
    }
}
