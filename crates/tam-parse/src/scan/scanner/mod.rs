//! The streaming scanner state machine.

use std::sync::Arc;

use super::grammar::Grammar;
use super::handler::{BlockEnd, BlockView, ScanHandler};
use super::line::LineFloor;
use super::offsets::OffsetMap;
use super::prose::{ProseContext, Quote};
use crate::diagnostic::Span;

mod inside;
mod outside;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Outside,
    Body {
        kind: usize,
    },
    Region {
        kind: usize,
        region: usize,
        content_start: usize,
    },
    /// Inside a reasoning section opened by `THINK_TAGS[tag]`.
    Reasoning {
        tag: usize,
    },
}

/// What a matched start marker or reasoning tag does, given its prose context.
#[derive(Debug, Clone, Copy)]
enum Decision {
    Open { kind: usize },
    Quoted { kind: usize, quote: Quote },
    Think { tag: usize },
    Prose,
}

/// The streaming block scanner. See the [module documentation](super).
#[derive(Debug)]
pub struct Scanner {
    grammar: Arc<Grammar>,
    max_block_bytes: usize,
    state: State,
    /// Stream offset of the next byte the scanner will read.
    pos: usize,
    /// Outside: the held-back bytes that may begin a start marker. Inside: the block.
    buf: String,
    /// Inside: where the next search starts in `buf`.
    scan_from: usize,
    /// Inside: where the body starts (line-start floor).
    floor: LineFloor,
    offsets: OffsetMap,
    block_start: usize,
    body_start: usize,
    overflow: bool,
    /// Size of the last block, to size the next block's buffer in one allocation.
    last_block_len: usize,
    /// How much of a delta the next push into the open block takes.
    next_push: usize,
    utf8_pending: [u8; 4],
    utf8_pending_len: u8,
    /// Where in the markdown of the prose the scanner is.
    prose: ProseContext,
    /// `<think>` sections are reasoning.
    reasoning: bool,
}

impl Scanner {
    /// A scanner for `grammar`; a block larger than `max_block_bytes` has its bytes dropped
    /// (see [`ClosedBlock::dropped`](super::ClosedBlock::dropped)).
    pub fn new(grammar: Arc<Grammar>, max_block_bytes: usize) -> Self {
        Scanner {
            grammar,
            max_block_bytes,
            state: State::Outside,
            pos: 0,
            buf: String::new(),
            scan_from: 0,
            floor: LineFloor {
                floor: 0,
                floor_is_line_start: true,
            },
            offsets: OffsetMap::default(),
            block_start: 0,
            body_start: 0,
            overflow: false,
            last_block_len: 0,
            next_push: FIRST_PUSH,
            utf8_pending: [0; 4],
            utf8_pending_len: 0,
            prose: ProseContext::default(),
            reasoning: false,
        }
    }

    /// This scanner with reasoning sections on or off (default: off). On, a `<think>` or
    /// `<thinking>` tag (ASCII case-insensitive, blanks allowed inside) that is the first
    /// non-blank text of a prose line outside a code fence opens a reasoning section, up to
    /// its matching close tag or the end of the stream: its content is reported through
    /// [`ScanHandler::reasoning`], and markers in it open nothing.
    pub fn with_reasoning(mut self, on: bool) -> Self {
        self.reasoning = on;
        self
    }

    /// Whether reasoning sections are read (see [`Scanner::with_reasoning`]).
    pub fn reasoning(&self) -> bool {
        self.reasoning
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        self.pos + usize::from(self.utf8_pending_len)
    }

    /// True while a block is open.
    pub fn in_block(&self) -> bool {
        matches!(self.state, State::Body { .. } | State::Region { .. })
    }

    /// True inside a reasoning section.
    pub fn in_reasoning(&self) -> bool {
        matches!(self.state, State::Reasoning { .. })
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.grammar
    }

    /// Bytes currently held (held-back prose or the open block).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The open block as written so far, its start marker included; `None` outside a block
    /// and for a block past `max_block_bytes` (whose bytes are being dropped).
    pub fn open_block_text(&self) -> Option<&str> {
        (self.in_block() && !self.overflow).then_some(self.buf.as_str())
    }

    /// Feeds a delta of text.
    pub fn feed(&mut self, delta: &str, h: &mut impl ScanHandler) {
        if self.utf8_pending_len > 0 {
            // A &str delta cannot complete a character split across byte deltas.
            self.flush_pending_utf8(h);
        }
        self.feed_str(delta, h);
    }

    /// Feeds a delta of bytes; a UTF-8 character may be split across deltas (up to 3 bytes
    /// are held back), and invalid sequences are reported through
    /// [`ScanHandler::invalid_utf8`], exactly as `std::str::from_utf8` delimits them on the
    /// whole stream (so the events do not depend on where the deltas split).
    pub fn feed_bytes(&mut self, mut delta: &[u8], h: &mut impl ScanHandler) {
        while self.utf8_pending_len > 0 {
            let Some((&b, rest)) = delta.split_first() else {
                return;
            };
            let have = usize::from(self.utf8_pending_len);
            let mut tmp = [0u8; 4];
            tmp[..have].copy_from_slice(&self.utf8_pending[..have]);
            tmp[have] = b;
            match std::str::from_utf8(&tmp[..=have]) {
                Ok(s) => {
                    self.utf8_pending_len = 0;
                    self.feed_str(s, h);
                    delta = rest;
                }
                Err(e) if e.error_len().is_none() => {
                    self.utf8_pending[have] = b;
                    self.utf8_pending_len += 1;
                    delta = rest;
                }
                Err(_) => {
                    // The pending bytes were the longest valid prefix; `b` starts afresh.
                    self.flush_pending_utf8(h);
                }
            }
        }
        loop {
            match std::str::from_utf8(delta) {
                Ok(s) => {
                    self.feed_str(s, h);
                    return;
                }
                Err(e) => {
                    let (valid, rest) = delta.split_at(e.valid_up_to());
                    if let Ok(valid) = std::str::from_utf8(valid) {
                        self.feed_str(valid, h);
                    }
                    match e.error_len() {
                        Some(n) => {
                            self.invalid(&rest[..n], h);
                            delta = &rest[n..];
                        }
                        None => {
                            self.utf8_pending[..rest.len()].copy_from_slice(rest);
                            self.utf8_pending_len = rest.len() as u8;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: held-back prose is emitted and an open block is closed as
    /// [`BlockEnd::Eof`]. The scanner is then ready for a new stream (positions restart at 0).
    pub fn finish(&mut self, h: &mut impl ScanHandler) {
        self.finish_as(BlockEnd::Eof, h);
    }

    /// Like [`Scanner::finish`] for a stream that was cut (a token limit, a transport
    /// error): an open block is closed as [`BlockEnd::Cut`].
    pub fn finish_cut(&mut self, h: &mut impl ScanHandler) {
        self.finish_as(BlockEnd::Cut, h);
    }

    fn finish_as(&mut self, how: BlockEnd, h: &mut impl ScanHandler) {
        self.flush_pending_utf8(h);
        loop {
            let kind = match self.state {
                State::Outside => {
                    self.flush_held(h);
                    break;
                }
                State::Reasoning { .. } => {
                    self.flush_reasoning(h);
                    break;
                }
                State::Body { kind } | State::Region { kind, .. } => kind,
            };
            // Decide what is left with the end-of-stream rule (a partial marker is no marker).
            match self.scan_block(h, true) {
                Some(closed) => {
                    let tail = self.buf.split_off(closed.end);
                    self.pos = closed.stream_end;
                    self.close_block(kind, BlockEnd::Marker, closed.body_end, closed.end, None, h);
                    self.feed_str(&tail, h);
                }
                None => {
                    let open_region = match self.state {
                        State::Region {
                            region,
                            content_start,
                            ..
                        } => Some((region, content_start)),
                        State::Outside | State::Body { .. } | State::Reasoning { .. } => None,
                    };
                    let len = self.buf.len();
                    self.close_block(kind, how, len, len, open_region, h);
                }
            }
        }
        *self = Scanner::new(Arc::clone(&self.grammar), self.max_block_bytes)
            .with_reasoning(self.reasoning);
    }

    fn flush_pending_utf8(&mut self, h: &mut impl ScanHandler) {
        if self.utf8_pending_len > 0 {
            let bad = self.utf8_pending;
            let n = usize::from(self.utf8_pending_len);
            self.utf8_pending_len = 0;
            self.invalid(&bad[..n], h);
        }
    }

    fn invalid(&mut self, bytes: &[u8], h: &mut impl ScanHandler) {
        let span = Span::new(self.pos, self.pos + bytes.len());
        if self.state == State::Outside {
            // No marker contains invalid UTF-8: what was held back is prose.
            self.flush_held(h);
            self.prose.feed(bytes, span.start);
            h.invalid_utf8(bytes, span, false);
            self.pos = span.end;
            return;
        }
        if let State::Reasoning { .. } = self.state {
            self.flush_reasoning(h);
            h.invalid_utf8(bytes, span, false);
            self.pos = span.end;
            return;
        }
        if !self.overflow {
            self.buf.push('\u{FFFD}');
        }
        self.offsets.anchors.push((self.buf.len(), span.end));
        self.pos = span.end;
        h.invalid_utf8(bytes, span, true);
        // A partial marker before the replacement is now decided; keep memory bounded.
        if let Some(closed) = self.scan_block(h, false) {
            let kind = self.kind();
            self.close_block(kind, BlockEnd::Marker, closed.body_end, closed.end, None, h);
        } else {
            self.report_progress(h);
            self.check_overflow();
        }
    }

    /// Calls [`ScanHandler::block_progress`] after the last push of a delta into the open
    /// block, or the push that takes it past its limit (before [`Scanner::check_overflow`]), unless the block had overflowed before it (a block
    /// opened by a restart during the push has not). `settled` is capped at
    /// `max_block_bytes` (moved back to a character boundary), so what is reported does
    /// not depend on how the input was split even for a block that overflows in this push.
    fn report_progress(&mut self, h: &mut impl ScanHandler) {
        self.report_progress_to(self.scan_from, false, h);
    }

    /// [`Scanner::report_progress`] with `buf[..settled]` decided; also called right before
    /// a block closes (its end or restart marker at `settled`; `closing` when the block is
    /// kept, within its limit: reported through [`ScanHandler::block_closing`]), so that a
    /// block closed in the push that opened it reports what a byte-by-byte feed would have.
    fn report_progress_to(&mut self, settled: usize, closing: bool, h: &mut impl ScanHandler) {
        if self.overflow || !self.in_block() {
            return;
        }
        let mut settled = settled.min(self.max_block_bytes).min(self.buf.len());
        while !self.buf.is_char_boundary(settled) {
            settled -= 1;
        }
        let view = BlockView::new(&self.buf, &self.offsets, self.kind());
        if closing {
            h.block_closing(&view, settled);
        } else {
            h.block_progress(&view, settled);
        }
    }

    fn kind(&self) -> usize {
        match self.state {
            State::Body { kind } | State::Region { kind, .. } => kind,
            State::Outside | State::Reasoning { .. } => 0,
        }
    }

    /// Emits held-back bytes as prose.
    fn flush_held(&mut self, h: &mut impl ScanHandler) {
        if self.state == State::Outside && !self.buf.is_empty() {
            let start = self.pos - self.buf.len();
            prose_text(&mut self.prose, h, &self.buf, Span::new(start, self.pos));
            self.buf.clear();
        }
    }

    /// Emits held-back bytes (a possible close tag) as reasoning.
    fn flush_reasoning(&mut self, h: &mut impl ScanHandler) {
        if !self.buf.is_empty() {
            let start = self.pos - self.buf.len();
            h.reasoning(&self.buf, Span::new(start, self.pos));
            self.buf.clear();
        }
    }

    fn feed_str(&mut self, delta: &str, h: &mut impl ScanHandler) {
        let mut d = delta;
        while !d.is_empty() {
            d = match self.state {
                State::Outside => self.feed_outside(d, h),
                State::Reasoning { tag } => self.feed_reasoning(tag, d, h),
                State::Body { .. } | State::Region { .. } => self.feed_inside(d, h),
            };
        }
    }
}

/// Prose `text` at `span`: through the prose context, then to the handler.
fn prose_text(ctx: &mut ProseContext, h: &mut impl ScanHandler, text: &str, span: Span) {
    ctx.feed(text.as_bytes(), span.start);
    h.text(text, span);
}

/// Where an end marker was found in the block buffer.
#[derive(Debug, Clone, Copy)]
struct MarkerClose {
    body_end: usize,
    end: usize,
    stream_end: usize,
}

/// Input is pushed into an open block at most this much at a time once it is near its
/// limit, which bounds memory to `max_block_bytes + CHUNK`.
const CHUNK: usize = 64 * 1024;

/// The first push into a newly opened block.
const FIRST_PUSH: usize = 256;
