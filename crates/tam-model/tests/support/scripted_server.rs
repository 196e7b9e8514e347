//! A scripted HTTP server on 127.0.0.1 (port chosen by the system) for the model tests: it
//! reads each request (request line, headers, a `Content-Length` body), records it, and
//! answers with what the test's script makes of it, written byte for byte (chunked
//! transfer encoding for streams) so a test controls event framing, pauses and a
//! connection dropped mid-stream. The server stops when the test drops it.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Longer than any test run: only a client's time-out ends a wait this long.
pub const FOREVER: Duration = Duration::from_secs(3600);

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200 text/event-stream`: each piece is written as one HTTP chunk after its pause;
    /// with `drop` the connection closes in the middle of one more chunk (a transport error).
    Stream {
        pieces: Vec<(Duration, Vec<u8>)>,
        drop: bool,
    },
    /// Any status with a JSON (or other) body, `content-type: application/json`.
    Json { status: u16, body: String },
    /// Headers never come.
    Silent,
}

impl Reply {
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
        Reply::Json {
            status: 200,
            body: body.to_string(),
        }
    }

    /// `404` with llama-server's body for an unknown path.
    pub fn not_found() -> Self {
        Reply::Json {
            status: 404,
            body: r#"{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}"#
                .into(),
        }
    }
}

/// One request the server read.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`.
    pub method: String,
    /// `/completion` and so on.
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

type Script = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// A running server.
pub struct Server {
    /// `http://127.0.0.1:PORT/v1`: the base URL a client is configured with.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Starts a server answering each request with what `script` makes of it.
    pub async fn start(script: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let script: Script = Arc::new(script);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                let script = script.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, seen, script).await;
                });
            }
        });
        Server {
            base_url,
            requests,
            task,
        }
    }

    /// The requests read so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    seen: Arc<Mutex<Vec<Request>>>,
    script: Script,
) -> std::io::Result<()> {
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
    let request = Request {
        method: parts.next().unwrap_or_default().to_owned(),
        path: parts.next().unwrap_or_default().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    seen.lock().unwrap().push(request.clone());
    match script(&request) {
        Reply::Stream { pieces, drop } => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
                .await?;
            socket.flush().await?;
            for (pause, piece) in pieces {
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                if piece.is_empty() {
                    continue;
                }
                socket
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                socket.write_all(&piece).await?;
                socket.write_all(b"\r\n").await?;
                socket.flush().await?;
            }
            if drop {
                // Announce a chunk and close before it is complete.
                socket.write_all(b"40\r\ndata: {\"cont").await?;
                socket.flush().await?;
                return Ok(());
            }
            socket.write_all(b"0\r\n\r\n").await?;
        }
        Reply::Json { status, body } => {
            let head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Reply::Silent => {
            tokio::time::sleep(FOREVER).await;
            return Ok(());
        }
    }
    socket.flush().await?;
    socket.shutdown().await
}
