//! The proxy's own accept loop: a cap on open connections (over it a connection is
//! answered 503 at once, as far as the socket takes it, and closed) and hyper's HTTP/1
//! connections with a header-read time-out; graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The answer written to a connection over the cap before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 138\r\n\
\r\n\
{\"error\":{\"message\":\"the server has as many connections open as it allows\",\"type\":\"api_error\",\"code\":\"too_many_connections\",\"param\":null}}";

/// The limits the accept loop applies.
pub(crate) struct Limits {
    /// Open connections at most (0: no cap).
    pub(crate) max_connections: usize,
    /// A request's header must arrive within this, counted from the moment the
    /// connection waits for it (zero: no time-out).
    pub(crate) header_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for the
/// connections open to finish their requests.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(match limits.max_connections {
        0 => Semaphore::MAX_PERMITS,
        n => n.min(Semaphore::MAX_PERMITS),
    }));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new());
    builder
        .header_read_timeout((!limits.header_timeout.is_zero()).then_some(limits.header_timeout));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut refusing = false;
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            let _ = stream.try_write(BUSY);
            if !refusing {
                // Once per run of refusals, not once per connection: a flood of
                // connections must not become a flood of log lines.
                refusing = true;
                tracing::warn!(
                    target: "tam_proxy::request",
                    max_connections = limits.max_connections,
                    "refusing connections: as many are open as allowed"
                );
            }
            continue;
        };
        refusing = false;
        let _ = stream.set_nodelay(true);
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A connection error (a time-out, a client that went away) ends only its
            // connection.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// After a failed `accept`: go on at once when only that connection failed; wait a
/// second when the process is out of resources (file descriptors), which a retry at once
/// would only spin on.
async fn accept_failed(error: &std::io::Error) {
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
