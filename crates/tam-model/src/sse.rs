//! A sans-IO reader of server-sent events (the WHATWG HTML standard's
//! `text/event-stream`, §9.2.6): feed it bytes as they arrive, in chunks of any size; it
//! calls back with each event the moment its blank line arrives.
//!
//! ```
//! use tam_model::sse::{SseConfig, SseReader};
//!
//! let mut reader = SseReader::new(SseConfig::default());
//! let mut events = Vec::new();
//! for chunk in ["data: {\"a\"", ":1}\r", "\n\r\ndata: [DONE]\n", "\n"] {
//!     reader.feed(chunk.as_bytes(), |event| events.push(event.unwrap().data));
//! }
//! assert_eq!(events, ["{\"a\":1}", "[DONE]"]);
//! ```
//!
//! # What the standard says, and what this reader does
//!
//! * A line ends in CR, LF or CRLF; a CR ending one chunk and an LF starting the next are
//!   one line end.
//! * A line starting with `:` is a comment. Otherwise the field name runs to the first `:`
//!   (the whole line when there is none) and one space after the colon is stripped.
//! * `data` lines of one event are joined with `\n`; `event` sets the event type; `id`
//!   sets the last event id (kept across events, ignored when it holds NUL); `retry` and
//!   every other field are ignored (there is no reconnection here).
//! * A blank line dispatches the event, unless no `data` line came since the last one.
//! * A byte order mark at the very start of the stream is skipped.
//! * Bytes that are not UTF-8 are read with U+FFFD in their place, as the standard's
//!   decoder does; the event says so ([`SseEvent::invalid_utf8`]).
//! * At the end of the stream the standard discards an event that lacks its blank line;
//!   [`SseReader::finish`] hands it back instead, for a caller that wants it (reading a
//!   file whose last event has no blank line), and [`SseReader::feed`] never dispatches it.
//!
//! # Bounded memory
//!
//! [`SseConfig::max_event_bytes`] (default 1 MiB) bounds what the reader holds for one
//! event: its fields as received plus the line being read. An event that would go past it
//! is reported once as [`SseError::EventTooLarge`], its bytes are dropped as they arrive,
//! and reading resumes after the next blank line. So a gigabyte without any line end, or
//! an endless run of `data:` lines without a blank line, holds at most the limit: each of
//! the reader's four buffers (line, data, event type, last id) stays within it, so
//! [`SseReader::buffered_bytes`] ≤ 4 × the limit + 1. Each byte is looked at once.
//!
//! # Why not a crate
//!
//! `eventsource-stream` (the reader under `reqwest-eventsource`) and `sse-stream` are
//! `Stream` adapters over an async body, not sans-IO, and neither bounds an event or a line:
//! `sse-stream` 0.2 appends a chunk without a line end to its unfinished line without limit
//! and fails on a line without a colon or with an unknown field (the standard ignores
//! both); `eventsource-stream` has no size limit either. The CLI (reading a file or a pipe
//! without a runtime) and the fuzz target need a push reader, and every reader needs the
//! bound, so the workspace keeps this one. Measured: `tam decode --input sse` fed `data: `
//! and then 1 GiB of `a` without any line end peaks at 19.8 MB resident (debug build,
//! `/usr/bin/time -v`), where the CLI's earlier line reader used 944 MB.

use memchr::{memchr, memchr2};

/// Default of [`SseConfig::max_event_bytes`]: 1 MiB, far above any chat-completion chunk.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// The byte order mark a stream may start with.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// Limits of an [`SseReader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseConfig {
    /// Most bytes held for one event (its fields plus the line being read). A larger event
    /// is an [`SseError::EventTooLarge`] and is skipped up to the next blank line.
    /// Default: [`DEFAULT_MAX_EVENT_BYTES`] (1 MiB).
    pub max_event_bytes: usize,
}

impl Default for SseConfig {
    fn default() -> Self {
        Self {
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

impl SseConfig {
    /// This configuration with `max_event_bytes` set (at least 1).
    #[must_use]
    pub fn with_max_event_bytes(mut self, max_event_bytes: usize) -> Self {
        self.max_event_bytes = max_event_bytes.max(1);
        self
    }
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event` field, when the event had one (the standard's default type is
    /// `message`).
    pub event: Option<String>,
    /// The `data` lines, joined with `\n`: at most [`SseConfig::max_event_bytes`] bytes
    /// as received (three times that when invalid bytes read as U+FFFD).
    pub data: String,
    /// The last event id seen so far in the stream (it carries over to later events), when
    /// it is not empty.
    pub id: Option<String>,
    /// The number, from 1, of the line holding the event's first `data` field.
    pub line: u64,
    /// Whether some bytes of the event were not UTF-8 (they read as U+FFFD).
    pub invalid_utf8: bool,
}

/// What went wrong in a stream. The reader goes on after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event grew past [`SseConfig::max_event_bytes`]; it is skipped up to the next blank
    /// line.
    #[error(
        "the server-sent event starting at line {line} is larger than {limit} bytes; it was skipped"
    )]
    EventTooLarge {
        /// The limit.
        limit: usize,
        /// The line, from 1, where the event began (its first field, or the overlong line).
        line: u64,
    },
}

impl SseError {
    /// The stable code of the error: `sse_event_too_large`.
    pub fn code(&self) -> &'static str {
        match self {
            SseError::EventTooLarge { .. } => "sse_event_too_large",
        }
    }
}

/// The push reader: see the [module docs](self).
#[derive(Debug, Clone)]
pub struct SseReader {
    max: usize,
    /// Bytes of the byte order mark matched at the start; `None` once past the start.
    bom: Option<usize>,
    /// The last chunk ended in CR: an LF starting the next one belongs to that line end.
    after_cr: bool,
    /// The line being read (only while not skipping).
    line: Vec<u8>,
    /// Number of the line being read, from 1.
    line_no: u64,
    /// The event's data: each `data` value followed by LF.
    data: Vec<u8>,
    /// The line of the event's first `data` field, once there is one.
    data_line: Option<u64>,
    /// The line of the event's first field, once there is one.
    event_line: Option<u64>,
    event_type: Vec<u8>,
    last_id: Vec<u8>,
    /// An oversized event is being dropped up to the next blank line.
    skipping: bool,
    /// While skipping: the line being skipped has bytes (so its end is not a blank line).
    skipped_line_has_bytes: bool,
}

impl Default for SseReader {
    fn default() -> Self {
        Self::new(SseConfig::default())
    }
}

impl SseReader {
    /// A reader at the start of a stream.
    pub fn new(config: SseConfig) -> Self {
        Self {
            max: config.max_event_bytes.max(1),
            bom: Some(0),
            after_cr: false,
            line: Vec::new(),
            line_no: 1,
            data: Vec::new(),
            data_line: None,
            event_line: None,
            event_type: Vec::new(),
            last_id: Vec::new(),
            skipping: false,
            skipped_line_has_bytes: false,
        }
    }

    /// Reads the next bytes of the stream, calling `on_event` with each event they complete
    /// (and each error), in order. Bytes of an unfinished line or event are kept for the
    /// next call, within the limit.
    pub fn feed(&mut self, bytes: &[u8], mut on_event: impl FnMut(Result<SseEvent, SseError>)) {
        let mut bytes = bytes;
        if let Some(matched) = self.bom {
            let mut matched = matched;
            while matched < BOM.len() {
                match bytes.split_first() {
                    None => {
                        self.bom = Some(matched);
                        return;
                    }
                    Some((&b, rest)) if b == BOM[matched] => {
                        matched += 1;
                        bytes = rest;
                    }
                    Some(_) => break,
                }
            }
            self.bom = None;
            if matched < BOM.len() {
                // Not a byte order mark after all: the bytes matched so far are content.
                self.read(&BOM[..matched], &mut on_event);
            }
        }
        self.read(bytes, &mut on_event);
    }

    /// Ends the stream. Returns the event that had `data` but no blank line after it (the
    /// standard discards it; a caller decides), after reading a last line that had no line
    /// end.
    pub fn finish(mut self) -> Option<SseEvent> {
        if let Some(matched) = self.bom.take() {
            let mut ignore = |_| {};
            self.read(&BOM[..matched], &mut ignore);
        }
        if self.skipping {
            return None;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.field(&line);
        }
        self.take_event()
    }

    /// Bytes the reader holds (its buffers' capacities): at most 4 ×
    /// [`SseConfig::max_event_bytes`] + 1.
    pub fn buffered_bytes(&self) -> usize {
        self.line.capacity()
            + self.data.capacity()
            + self.event_type.capacity()
            + self.last_id.capacity()
    }

    /// Splits bytes into lines; each byte is looked at once.
    fn read(&mut self, mut bytes: &[u8], on_event: &mut impl FnMut(Result<SseEvent, SseError>)) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while !bytes.is_empty() {
            let Some(end) = memchr2(b'\r', b'\n', bytes) else {
                self.append(bytes, on_event);
                return;
            };
            self.append(&bytes[..end], on_event);
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    None => self.after_cr = true,
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                }
            }
            self.end_line(on_event);
        }
    }

    /// Adds bytes to the line being read, or drops them once the event is too large.
    fn append(&mut self, bytes: &[u8], on_event: &mut impl FnMut(Result<SseEvent, SseError>)) {
        if bytes.is_empty() {
            return;
        }
        if self.skipping {
            self.skipped_line_has_bytes = true;
            return;
        }
        let held = self.line.len() + self.data.len() + self.event_type.len();
        if held + bytes.len() > self.max {
            let line = self.event_line.unwrap_or(self.line_no);
            on_event(Err(SseError::EventTooLarge {
                limit: self.max,
                line,
            }));
            self.line = Vec::new();
            self.data = Vec::new();
            self.event_type = Vec::new();
            self.data_line = None;
            self.event_line = None;
            self.skipping = true;
            self.skipped_line_has_bytes = true;
            return;
        }
        reserve_within(&mut self.line, bytes.len(), self.max);
        self.line.extend_from_slice(bytes);
    }

    /// A line end: a blank line dispatches, any other line is a field.
    fn end_line(&mut self, on_event: &mut impl FnMut(Result<SseEvent, SseError>)) {
        let line_no = self.line_no;
        self.line_no += 1;
        if self.skipping {
            if !self.skipped_line_has_bytes {
                self.skipping = false;
            }
            self.skipped_line_has_bytes = false;
            return;
        }
        if self.line.is_empty() {
            if let Some(event) = self.take_event() {
                on_event(Ok(event));
            }
            return;
        }
        let line = std::mem::take(&mut self.line);
        self.event_line.get_or_insert(line_no);
        self.field_at(&line, line_no);
        // Keep the line's buffer for the next line.
        self.line = line;
        self.line.clear();
    }

    fn field(&mut self, line: &[u8]) {
        let line_no = self.line_no;
        self.event_line.get_or_insert(line_no);
        self.field_at(line, line_no);
    }

    /// Interprets one non-blank line.
    fn field_at(&mut self, line: &[u8], line_no: u64) {
        if line[0] == b':' {
            return;
        }
        let (name, value) = match memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                self.data_line.get_or_insert(line_no);
                reserve_within(&mut self.data, value.len() + 1, self.max + 1);
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.event_type.clear();
                reserve_within(&mut self.event_type, value.len(), self.max);
                self.event_type.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => {
                self.last_id.clear();
                reserve_within(&mut self.last_id, value.len(), self.max);
                self.last_id.extend_from_slice(value);
            }
            _ => {}
        }
    }

    /// The event read so far, if it had data; resets the event's fields either way.
    fn take_event(&mut self) -> Option<SseEvent> {
        self.event_line = None;
        let event_type = std::mem::take(&mut self.event_type);
        let line = self.data_line.take()?;
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        let mut invalid_utf8 = false;
        let mut text = |bytes: Vec<u8>| match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => {
                invalid_utf8 = true;
                String::from_utf8_lossy(error.as_bytes()).into_owned()
            }
        };
        let data = text(data);
        let event = (!event_type.is_empty()).then(|| text(event_type));
        let id = (!self.last_id.is_empty()).then(|| text(self.last_id.clone()));
        Some(SseEvent {
            event,
            data,
            id,
            line,
            invalid_utf8,
        })
    }
}

/// Reserves room for `additional` bytes, growing by doubling but never past `limit`, so a
/// buffer's capacity stays within the limit it is held to.
fn reserve_within(buffer: &mut Vec<u8>, additional: usize, limit: usize) {
    let needed = buffer.len() + additional;
    if needed > buffer.capacity() {
        let target = (buffer.capacity() * 2).max(needed).min(limit.max(needed));
        buffer.reserve_exact(target - buffer.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Item = Result<SseEvent, SseError>;

    fn read_chunks<'a>(
        config: SseConfig,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> (Vec<Item>, Option<SseEvent>) {
        let mut reader = SseReader::new(config);
        let mut items = Vec::new();
        for chunk in chunks {
            reader.feed(chunk, |item| items.push(item));
        }
        let pending = reader.finish();
        (items, pending)
    }

    /// Reads `input` whole, byte by byte, and split in two at every offset; all must agree.
    fn read_all_ways(config: SseConfig, input: &[u8]) -> (Vec<Item>, Option<SseEvent>) {
        let whole = read_chunks(config, [input]);
        let bytes = read_chunks(config, input.chunks(1));
        assert_eq!(bytes, whole, "byte by byte");
        for split in 0..=input.len() {
            let (a, b) = input.split_at(split);
            assert_eq!(read_chunks(config, [a, b]), whole, "split at {split}");
            let (a, rest) = input.split_at(split / 2);
            let (b, c) = rest.split_at(rest.len() / 2);
            assert_eq!(
                read_chunks(config, [a, b, c]),
                whole,
                "three pieces at {split}"
            );
        }
        whole
    }

    fn data(input: &str) -> Vec<String> {
        let (items, _) = read_all_ways(SseConfig::default(), input.as_bytes());
        items.into_iter().map(|item| item.unwrap().data).collect()
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_all_end_lines() {
        assert_eq!(data("data: a\n\ndata: b\n\n"), ["a", "b"]);
        assert_eq!(data("data: a\r\n\r\ndata: b\r\n\r\n"), ["a", "b"]);
        assert_eq!(data("data: a\r\rdata: b\r\r"), ["a", "b"]);
        assert_eq!(data("data: a\r\n\rdata: b\n\r\n"), ["a", "b"]);
    }

    #[test]
    fn a_cr_at_a_chunk_end_and_an_lf_after_it_are_one_line_end() {
        let (items, _) = read_chunks(
            SseConfig::default(),
            [&b"data: a\r"[..], b"\ndata: b\r", b"\n\r", b"\n"],
        );
        let data: Vec<_> = items.into_iter().map(|i| i.unwrap().data).collect();
        // Had the LF after the first CR counted as a blank line, `a` would be alone.
        assert_eq!(data, ["a\nb"]);
    }

    #[test]
    fn data_lines_join_with_lf_and_one_space_is_stripped() {
        assert_eq!(
            data("data: one\ndata:two\ndata:  three\n\n"),
            ["one\ntwo\n three"]
        );
        assert_eq!(data("data\n\n"), [""]);
        assert_eq!(data("data:\ndata:\n\n"), ["\n"]);
        assert_eq!(data("data: a:b: c\n\n"), ["a:b: c"]);
    }

    #[test]
    fn comments_and_other_fields_are_ignored() {
        assert_eq!(
            data(": keep-alive\n\n: x\ndata: a\nretry: 10\nfoo: bar\nnot a field\n\n"),
            ["a"]
        );
        // A blank line after comments alone dispatches nothing.
        assert_eq!(data(":\n\n:\n\n"), Vec::<String>::new());
    }

    #[test]
    fn event_and_id_are_exposed_and_the_id_carries_over() {
        let (items, _) = read_all_ways(
            SseConfig::default(),
            b"event: delta\nid: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\0y\ndata: d\n\n",
        );
        let events: Vec<_> = items.into_iter().map(Result::unwrap).collect();
        assert_eq!(events[0].event.as_deref(), Some("delta"));
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[1].event, None, "the type is per event");
        assert_eq!(events[1].id.as_deref(), Some("7"), "the id carries over");
        assert_eq!(events[2].id, None, "an empty id resets it");
        assert_eq!(events[3].id, None, "an id with NUL is ignored");
        assert_eq!(events[0].line, 3);
        assert_eq!(events[1].line, 5);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_stripped_once() {
        assert_eq!(data("\u{feff}data: a\n\n"), ["a"]);
        // A second one is part of the field name, so the line is not a data field.
        assert_eq!(data("\u{feff}\u{feff}data: a\n\ndata: b\n\n"), ["b"]);
        // Bytes that start like a mark but are not one are content.
        let (items, _) = read_all_ways(SseConfig::default(), b"\xEF\xBBdata: a\n\ndata: b\n\n");
        assert_eq!(items.len(), 1);
        let (items, pending) = read_all_ways(SseConfig::default(), b"\xEF");
        assert!(items.is_empty() && pending.is_none());
    }

    #[test]
    fn invalid_utf8_is_replaced_and_flagged() {
        let (items, _) = read_all_ways(SseConfig::default(), b"data: a\xFFb\n\ndata: ok\n\n");
        let first = items[0].as_ref().unwrap();
        assert_eq!(first.data, "a\u{fffd}b");
        assert!(first.invalid_utf8);
        assert!(!items[1].as_ref().unwrap().invalid_utf8);
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched_but_handed_back() {
        let (items, pending) = read_all_ways(SseConfig::default(), b"data: a\n\ndata: b\ndata: c");
        assert_eq!(items.len(), 1);
        assert_eq!(pending.unwrap().data, "b\nc");
        let (_, pending) = read_all_ways(SseConfig::default(), b"data: a\n\n: comment");
        assert_eq!(pending, None);
    }

    #[test]
    fn an_oversized_event_is_reported_once_and_reading_resumes_after_the_blank_line() {
        let config = SseConfig::default().with_max_event_bytes(16);
        let input =
            b"data: short\n\ndata: 0123456789\ndata: 0123456789\ndata: more\n\ndata: after\n\n";
        let (items, _) = read_all_ways(config, input);
        assert_eq!(items.len(), 3, "{items:?}");
        assert_eq!(items[0].as_ref().unwrap().data, "short");
        let error = items[1].as_ref().unwrap_err();
        assert_eq!(error, &SseError::EventTooLarge { limit: 16, line: 3 });
        assert_eq!(error.code(), "sse_event_too_large");
        assert_eq!(items[2].as_ref().unwrap().data, "after");
        // One overlong line, then a normal event.
        let (items, _) = read_all_ways(
            config,
            b": a comment far longer than sixteen bytes\r\rdata: x\r\r",
        );
        assert!(items[0].is_err());
        assert_eq!(items[1].as_ref().unwrap().data, "x");
        assert_eq!(items.len(), 2);
    }

    #[test]
    fn memory_stays_bounded_without_any_line_end() {
        let config = SseConfig::default().with_max_event_bytes(64 << 10);
        let mut reader = SseReader::new(config);
        let chunk = vec![b'a'; 64 << 10];
        let mut errors = 0;
        reader.feed(b"data: ", |_| {});
        // 128 MiB without a line end, then without a blank line.
        for round in 0..4096 {
            let piece: &[u8] = if round < 2048 {
                &chunk
            } else {
                b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
            };
            reader.feed(piece, |item| {
                assert!(item.is_err());
                errors += 1;
            });
            assert!(
                reader.buffered_bytes() <= 2 * (64 << 10) + 64,
                "{}",
                reader.buffered_bytes()
            );
        }
        assert_eq!(errors, 1);
        let mut events = Vec::new();
        reader.feed(b"\ndata: back\n\n", |item| events.push(item.unwrap().data));
        assert_eq!(events, ["back"]);
        // Many data lines without a blank line are bounded too.
        let mut reader = SseReader::new(config);
        let mut errors = 0;
        for _ in 0..100_000 {
            reader.feed(b"data: 0123456789\n", |_| errors += 1);
        }
        assert_eq!(errors, 1);
        assert!(reader.buffered_bytes() <= 2 * (64 << 10) + 64);
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// Bytes that matter to the reader, so short inputs reach every state.
        fn stream() -> impl Strategy<Value = Vec<u8>> {
            let byte = prop::sample::select(vec![
                b'd', b'a', b't', b':', b' ', b'\r', b'\n', b'e', b'v', b'n', b'i', b'x', 0, 0xEF,
                0xBB, 0xBF, 0xFF, 0xC3, 0xA9,
            ]);
            let piece = prop_oneof![
                prop::collection::vec(byte, 0..8),
                prop::sample::select(vec![
                    b"data: ".to_vec(),
                    b"data:".to_vec(),
                    b"event: e".to_vec(),
                    b"id: 1".to_vec(),
                    b": c".to_vec(),
                    b"\r\n".to_vec(),
                    b"\n\n".to_vec(),
                    b"\r\r".to_vec(),
                    b"\xEF\xBB\xBF".to_vec(),
                ]),
            ];
            prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
        }

        proptest! {
            #[test]
            fn any_split_gives_the_events_of_the_whole_stream_within_the_bound(
                input in stream(),
                cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
                limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 1usize..24],
            ) {
                let config = SseConfig::default().with_max_event_bytes(limit);
                let whole = read_chunks(config, [&input[..]]);
                let mut points: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
                points.extend([0, input.len()]);
                points.sort_unstable();
                let pieces: Vec<&[u8]> = points.windows(2).map(|w| &input[w[0]..w[1]]).collect();
                prop_assert_eq!(read_chunks(config, pieces.iter().copied()), whole.clone());
                prop_assert_eq!(read_chunks(config, input.chunks(1)), whole.clone());
                let mut reader = SseReader::new(config);
                for byte in input.chunks(1) {
                    reader.feed(byte, |_| {});
                    prop_assert!(reader.buffered_bytes() <= 4 * limit + 1);
                }
                for event in whole.0.iter().flatten() {
                    // Each invalid byte reads as U+FFFD (3 bytes).
                    let bound = if event.invalid_utf8 { 3 * limit } else { limit };
                    prop_assert!(event.data.len() <= bound);
                }
            }
        }
    }
}
