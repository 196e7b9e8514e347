//! A scripted OpenAI-compatible server on 127.0.0.1 (port chosen by the system) (feature
//! `upstream`): it reads each request (request line, headers, a `Content-Length` body),
//! records it, and answers with the next scripted reply or the reply a script makes of the
//! request, written byte for byte (chunked transfer encoding for streams) so a test controls
//! event framing, line ends, pauses, headers that never come and a connection dropped
//! mid-stream. Each test's server stops when the test drops it.
//!
//! ```no_run
//! # async fn demo() {
//! use tam_testkit::upstream::{Reply, Server, text_stream};
//!
//! let server = Server::start(vec![Reply::events(&text_stream("Hi.", 2, "stop", "\n"))]).await;
//! // … point a client at `server.base_url` …
//! assert_eq!(server.requests().len(), 0);
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Longer than any test run: only a client's time-out ends a wait this long.
pub const FOREVER: Duration = Duration::from_secs(3600);

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200 text/event-stream`: each piece is written as one HTTP chunk after its pause;
    /// with `drop` the connection closes in the middle of one more chunk (a transport error).
    Stream {
        /// The pieces of the body, each after its pause.
        pieces: Vec<(Duration, Vec<u8>)>,
        /// Close the connection inside one more chunk instead of ending the body.
        drop: bool,
    },
    /// Any status with a JSON (or other) body, `content-type: application/json`.
    Status {
        /// The HTTP status.
        status: u16,
        /// The body, as written.
        body: String,
    },
    /// `200 text/event-stream` like [`Reply::Stream`], and then its last piece again, after
    /// its pause, until the peer goes away.
    Endless {
        /// The pieces of the body, each after its pause; the last one repeats.
        pieces: Vec<(Duration, Vec<u8>)>,
    },
    /// `200 text/event-stream`: the pieces without pauses, but the one at `hold_at` waits
    /// until the test calls `release.notify_one()` (what a client sent on before it, it
    /// sent early).
    Held {
        /// The pieces of the body.
        pieces: Vec<Vec<u8>>,
        /// The piece that waits.
        hold_at: usize,
        /// What it waits for.
        release: Arc<Notify>,
    },
    /// Headers never come.
    Silent,
}

impl Reply {
    /// A stream of `events` (each a complete `data: …` event text) with no pauses.
    pub fn events<S: AsRef<str>>(events: &[S]) -> Self {
        Reply::Stream {
            pieces: events
                .iter()
                .map(|e| (Duration::ZERO, e.as_ref().as_bytes().to_vec()))
                .collect(),
            drop: false,
        }
    }

    /// A stream of `text` in pieces cut at `cuts` (byte offsets, ascending), no pauses.
    pub fn cut(text: &[u8], cuts: &[usize]) -> Self {
        let mut pieces = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&text.len())) {
            if cut > start {
                pieces.push((Duration::ZERO, text[start..cut].to_vec()));
                start = cut;
            }
        }
        Reply::Stream {
            pieces,
            drop: false,
        }
    }

    /// A stream of `text` in one piece.
    pub fn stream(text: impl AsRef<[u8]>) -> Self {
        Self::cut(text.as_ref(), &[])
    }

    /// `200` with `body`.
    pub fn ok(body: Value) -> Self {
        Reply::Status {
            status: 200,
            body: body.to_string(),
        }
    }

    /// `404` with llama-server's body for an unknown path.
    pub fn not_found() -> Self {
        Reply::Status {
            status: 404,
            body: r#"{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}"#
                .into(),
        }
    }
}

/// One request the server read.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST /v1/chat/completions HTTP/1.1` and so on.
    pub line: String,
    /// `GET`, `POST`.
    pub method: String,
    /// `/v1/chat/completions` and so on.
    pub path: String,
    /// Header lines, as received.
    pub headers: Vec<String>,
    /// The body as JSON (`null` when there is none).
    pub body: Value,
}

impl Request {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|h| {
            let (key, value) = h.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// `"POST /completion"`.
    pub fn route(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// What answers a request: the request, already recorded, to the reply (`None`: a 500).
type Answer = Arc<dyn Fn(&Request) -> Option<Reply> + Send + Sync>;

/// The questions that tell a server's kind.
const PROBES: [&str; 3] = ["/props", "/version", "/get_server_info"];

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:PORT/v1`: the base URL a client is configured with.
    pub base_url: String,
    /// The requests read so far, in order.
    pub requests: Arc<Mutex<Vec<Request>>>,
    /// Streams whose peer went away before their end.
    pub closed: Arc<AtomicUsize>,
    /// Streams written to their end.
    pub finished: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

/// What the connections share: the recorded requests, the answer, the counters.
struct Shared {
    seen: Arc<Mutex<Vec<Request>>>,
    answer: Answer,
    probes: bool,
    closed: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Starts a server answering requests with `replies`, in order (a request beyond them
    /// gets a 500).
    pub async fn start(replies: Vec<Reply>) -> Server {
        let replies = Mutex::new(VecDeque::from(replies));
        Self::answering(
            Arc::new(move |_: &Request| replies.lock().unwrap().pop_front()),
            false,
        )
        .await
    }

    /// Starts a server answering each request with what `script` makes of it: a scripted
    /// model that reads the conversation, or a fake of another API (any path is accepted).
    pub async fn scripted(script: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        Self::answering(
            Arc::new(move |request: &Request| Some(script(request))),
            false,
        )
        .await
    }

    /// Like [`Server::scripted`], and the questions that tell a server's kind (`GET
    /// /props`, `/version`, `/get_server_info`) reach the script too. The other servers
    /// answer them 404, unrecorded: they are none of the kinds asked about, and the
    /// question is not one of a test's requests.
    pub async fn scripted_with_probes(
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Self::answering(
            Arc::new(move |request: &Request| Some(script(request))),
            true,
        )
        .await
    }

    async fn answering(answer: Answer, probes: bool) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            seen: Arc::default(),
            answer,
            probes,
            closed: Arc::default(),
            finished: Arc::default(),
        });
        let requests = shared.seen.clone();
        let closed = shared.closed.clone();
        let finished = shared.finished.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, &shared).await;
                });
            }
        });
        Server {
            base_url,
            requests,
            closed,
            finished,
            task,
        }
    }

    /// The requests read so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let read = socket.read(&mut chunk).await?;
        if read == 0 || buffer.len() > 1 << 20 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<String> = lines.map(str::to_owned).collect();
    let length: usize = headers
        .iter()
        .find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            return Ok(());
        }
        body.extend_from_slice(&chunk[..read]);
    }
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let request = Request {
        line,
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let probe = request.method == "GET" && PROBES.contains(&request.path.as_str());
    let reply = if probe && !shared.probes {
        Some(Reply::Status {
            status: 404,
            body: "{}".to_owned(),
        })
    } else {
        shared.seen.lock().unwrap().push(request.clone());
        (shared.answer)(&request)
    };
    match reply {
        Some(Reply::Stream { pieces, drop }) => {
            let body = Body {
                pieces,
                endless: false,
                hold: None,
                drop,
            };
            return stream(socket, body, shared).await;
        }
        Some(Reply::Endless { pieces }) => {
            let body = Body {
                pieces,
                endless: true,
                hold: None,
                drop: false,
            };
            return stream(socket, body, shared).await;
        }
        Some(Reply::Held {
            pieces,
            hold_at,
            release,
        }) => {
            let body = Body {
                pieces: pieces.into_iter().map(|p| (Duration::ZERO, p)).collect(),
                endless: false,
                hold: Some((hold_at, release)),
                drop: false,
            };
            return stream(socket, body, shared).await;
        }
        Some(Reply::Status { status, body }) => {
            let head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Some(Reply::Silent) => {
            tokio::time::sleep(FOREVER).await;
            return Ok(());
        }
        None => {
            socket
                .write_all(
                    b"HTTP/1.1 500 Scripted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await?;
        }
    }
    socket.flush().await?;
    socket.shutdown().await
}

/// A streamed body: pieces after their pauses, the last one repeated (`endless`), one held
/// until released, the connection dropped inside one more chunk (`drop`).
struct Body {
    pieces: Vec<(Duration, Vec<u8>)>,
    endless: bool,
    hold: Option<(usize, Arc<Notify>)>,
    drop: bool,
}

/// How a streamed body ended on the server's side.
enum Ending {
    /// Written to its end.
    Finished,
    /// Dropped inside a chunk, as scripted.
    Dropped,
}

/// Writes `body` as `200 text/event-stream`, each piece one HTTP chunk, while watching for
/// the peer to go away; counts the stream as finished or closed.
async fn stream(mut socket: TcpStream, body: Body, shared: &Shared) -> std::io::Result<()> {
    let (mut reader, mut writer) = socket.split();
    let gone = async {
        let mut sink = [0u8; 512];
        while let Ok(1..) = reader.read(&mut sink).await {}
    };
    let write = async {
        writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
            .await?;
        writer.flush().await?;
        let mut at = 0;
        loop {
            let (pause, piece) = match body.pieces.get(at) {
                Some(piece) => piece,
                None if body.endless && !body.pieces.is_empty() => {
                    &body.pieces[body.pieces.len() - 1]
                }
                None => break,
            };
            if let Some((hold_at, release)) = &body.hold
                && *hold_at == at
            {
                release.notified().await;
            }
            if !pause.is_zero() {
                tokio::time::sleep(*pause).await;
            }
            at += 1;
            if piece.is_empty() {
                continue;
            }
            writer
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await?;
            writer.write_all(piece).await?;
            writer.write_all(b"\r\n").await?;
            writer.flush().await?;
        }
        if body.drop {
            // Announce a chunk and close before it is complete.
            writer.write_all(b"40\r\ndata: {\"choi").await?;
            writer.flush().await?;
            return Ok(Ending::Dropped);
        }
        writer.write_all(b"0\r\n\r\n").await?;
        writer.flush().await?;
        Ok::<_, std::io::Error>(Ending::Finished)
    };
    // A body written to its end counts as finished even if the peer went away right after.
    let ending = tokio::select! {
        biased;
        ending = write => ending.ok(),
        () = gone => None,
    };
    match ending {
        Some(Ending::Finished) => {
            shared.finished.fetch_add(1, Ordering::SeqCst);
        }
        Some(Ending::Dropped) => return Ok(()),
        None => {
            shared.closed.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        }
    }
    socket.shutdown().await
}

/// A `chat.completion.chunk` event whose delta is `delta`, with `finish` as its
/// `finish_reason`; `end` is the event's line end (`"\n"`, `"\r\n"`, `"\r"`).
pub fn chunk(delta: Value, finish: Option<&str>, end: &str) -> String {
    let chunk = serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}{end}{end}")
}

/// Content deltas of `text` in pieces of `size` bytes (at char boundaries), then a finish
/// chunk with `finish` and `data: [DONE]`, all with line end `end`.
pub fn text_stream(text: &str, size: usize, finish: &str, end: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut stop = (start + size).min(text.len());
        while !text.is_char_boundary(stop) {
            stop += 1;
        }
        events.push(chunk(
            serde_json::json!({"content": &text[start..stop]}),
            None,
            end,
        ));
        start = stop;
    }
    events.push(chunk(serde_json::json!({}), Some(finish), end));
    events.push(format!("data: [DONE]{end}{end}"));
    events
}
