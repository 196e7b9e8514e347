//! HTTP for the harness: a blocking client (one request at a time is all a run makes), and
//! streamed replies read as server-sent events with the workspace's own reader
//! ([`tam_model::sse`]).
//!
//! The client's time-out is per operation: connecting, waiting for the response head, and
//! each read of the body. So a streamed reply is given up after that long without a byte
//! (BFCL's runner does the same with 600 s), while a long reply that keeps coming is never
//! cut; a request that must end within a time in all (the proof leg's) sets it on its own.
//! The servers are the ones the harness starts on 127.0.0.1 or the one `--base-url` names:
//! no proxy from the environment is used.

use std::io::Read;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use tam_model::sse::{SseConfig, SseEvent, SseReader};

/// Most seconds to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A client whose every operation (the response head, each read of the body) may take up
/// to `timeout`.
pub(crate) fn client(timeout: Duration) -> Result<Client, String> {
    Client::builder()
        .timeout(timeout)
        .connect_timeout(CONNECT_TIMEOUT)
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_text(&e)))
}

/// A request error with its causes (reqwest's own message names only the outermost one:
/// "error sending request", where the cause says "Connection refused").
pub(crate) fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `GET url`: its status.
pub(crate) fn get_status(client: &Client, url: &str) -> Result<u16, String> {
    client
        .get(url)
        .send()
        .map(|r| r.status().as_u16())
        .map_err(|e| format!("GET {url}: {}", error_text(&e)))
}

/// `GET url`: its status and body.
pub(crate) fn get_text(client: &Client, url: &str) -> Result<(u16, String), String> {
    let response = client
        .get(url)
        .send()
        .map_err(|e| format!("GET {url}: {}", error_text(&e)))?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .map_err(|e| format!("GET {url}: reading the reply: {}", error_text(&e)))?;
    Ok((status, text))
}

/// `POST url` with the JSON text `body`, answered whole: its status and body.
pub(crate) fn post_json(client: &Client, url: &str, body: &str) -> Result<(u16, String), String> {
    let response = post(client, url, body, "application/json")?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .map_err(|e| format!("POST {url}: reading the reply: {}", error_text(&e)))?;
    Ok((status, text))
}

/// `POST url` with the JSON text `body`, asking for an event stream: the response, its
/// body not yet read.
pub(crate) fn post_stream(client: &Client, url: &str, body: &str) -> Result<Response, String> {
    post(client, url, body, "text/event-stream")
}

fn post(client: &Client, url: &str, body: &str, accept: &str) -> Result<Response, String> {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(body.to_owned())
        .send()
        .map_err(|e| format!("POST {url}: {}", error_text(&e)))
}

/// What [`read_events`] hands each event: go on reading, or stop (the rest of the body is
/// left unread).
pub(crate) enum Next {
    More,
    Stop,
}

/// Reads the event stream of `body` as it arrives, calling `on_event` with each event; an
/// event that lacks its blank line at the end of the body is handed over too. Returns
/// whether `on_event` stopped the reading. A read that fails (a dropped connection, the
/// time-out) or an event over the reader's size limit is an error; `tee` gets every byte
/// read (a log of the stream).
pub(crate) fn read_events(
    mut body: impl Read,
    mut tee: impl FnMut(&[u8]),
    mut on_event: impl FnMut(SseEvent) -> Result<Next, String>,
) -> Result<bool, String> {
    let mut reader = SseReader::new(SseConfig::default());
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = body
            .read(&mut buf)
            .map_err(|e| format!("reading the stream: {}", error_text(&e)))?;
        if n == 0 {
            break;
        }
        tee(&buf[..n]);
        let mut events = Vec::new();
        reader.feed(&buf[..n], |event| events.push(event));
        for event in events {
            let event = event.map_err(|e| format!("protocol: {e}"))?;
            if let Next::Stop = on_event(event)? {
                return Ok(true);
            }
        }
    }
    match reader.finish() {
        Some(event) => Ok(matches!(on_event(event)?, Next::Stop)),
        None => Ok(false),
    }
}

/// The `data` of every event in a whole event-stream text, in order (a stream read from a
/// log, or received whole).
pub(crate) fn event_data(text: &str) -> Result<Vec<String>, String> {
    let mut data = Vec::new();
    read_events(
        text.as_bytes(),
        |_| {},
        |event| {
            data.push(event.data);
            Ok(Next::More)
        },
    )?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events split anywhere come out whole, the last one without its blank line too; the
    /// reading stops where the callback says.
    #[test]
    fn events_are_read_across_any_split() {
        let text = "data: {\"a\":1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\ndata: [DONE]";
        for size in [1, 2, 5, 1000] {
            let chunks: Vec<&[u8]> = text.as_bytes().chunks(size).collect();
            let body = ChunkedReader { chunks, at: 0 };
            let mut seen = Vec::new();
            let mut logged = Vec::new();
            let stopped = read_events(
                body,
                |bytes| logged.extend_from_slice(bytes),
                |event| {
                    seen.push(event.data);
                    Ok(Next::More)
                },
            )
            .unwrap();
            assert!(!stopped);
            assert_eq!(seen, ["{\"a\":1}", "x\ny", "[DONE]"], "chunks of {size}");
            assert_eq!(logged, text.as_bytes());
        }
        let mut seen = 0;
        let stopped = read_events(
            text.as_bytes(),
            |_| {},
            |_| {
                seen += 1;
                Ok(if seen == 2 { Next::Stop } else { Next::More })
            },
        )
        .unwrap();
        assert!(stopped);
        assert_eq!(seen, 2);
        assert_eq!(event_data("data: a\n\n").unwrap(), ["a"]);
        assert!(event_data("").unwrap().is_empty());
    }

    struct ChunkedReader<'a> {
        chunks: Vec<&'a [u8]>,
        at: usize,
    }

    impl Read for ChunkedReader<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some(chunk) = self.chunks.get(self.at) else {
                return Ok(0);
            };
            self.at += 1;
            buf[..chunk.len()].copy_from_slice(chunk);
            Ok(chunk.len())
        }
    }

    #[test]
    fn nobody_listening_is_a_clear_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = client(Duration::from_secs(5)).unwrap();
        let err = get_status(&client, &format!("http://127.0.0.1:{port}/health")).unwrap_err();
        assert!(err.starts_with("GET http://127.0.0.1:"), "{err}");
        assert!(err.to_lowercase().contains("connect"), "{err}");
    }
}
