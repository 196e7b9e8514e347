//! The streaming scanner state machine.

use std::sync::Arc;

use bytestring::ByteString;

use super::grammar::Grammar;
use super::handler::{BlockEnd, BlockView, ClosedBlock, ScanHandler};
use super::line::{LineFloor, is_line_start};
use super::offsets::OffsetMap;
use super::pattern::{MAX_PATTERN_LEN, MatchAt};
use super::pattern_set::{Action, Found};
use super::prose::{ProseContext, Quote};
use crate::diagnostic::Span;

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
    /// (see [`ClosedBlock::dropped`]).
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
                        _ => None,
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

    /// Calls [`ScanHandler::block_progress`] after a push into the open block (before
    /// [`Scanner::check_overflow`]), unless the block had overflowed before it (a block
    /// opened by a restart during the push has not). `settled` is capped at
    /// `max_block_bytes` (moved back to a character boundary), so what is reported does
    /// not depend on how the input was split even for a block that overflows in this push.
    fn report_progress(&mut self, h: &mut impl ScanHandler) {
        self.report_progress_to(self.scan_from, h);
    }

    /// [`Scanner::report_progress`] with `buf[..settled]` decided; also called right before
    /// a block closes (its end or restart marker at `settled`), so that a block closed in
    /// the push that opened it reports what a byte-by-byte feed would have.
    fn report_progress_to(&mut self, settled: usize, h: &mut impl ScanHandler) {
        if self.overflow || !self.in_block() {
            return;
        }
        let mut settled = settled.min(self.max_block_bytes).min(self.buf.len());
        while !self.buf.is_char_boundary(settled) {
            settled -= 1;
        }
        let view = BlockView::new(&self.buf, &self.offsets, self.kind());
        h.block_progress(&view, settled);
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

    /// What a start marker or reasoning tag matched at stream offset `start`, whose first
    /// byte is `first`, does in its prose context.
    fn decide(&self, action: Action, first: u8, start: usize) -> Decision {
        let ctx = self.prose.before(first, start);
        match action {
            Action::Open(kind) => match ctx.quote {
                Some(quote) => Decision::Quoted { kind, quote },
                None => Decision::Open { kind },
            },
            Action::Think(tag) if ctx.line_start => Decision::Think { tag },
            _ => Decision::Prose,
        }
    }

    /// A marker or tag that opens no block, `marker` at `span`: prose (after a
    /// `quoted_marker` report for a start marker) or the open tag of reasoning.
    fn marker_not_opened(
        &mut self,
        decision: Decision,
        marker: &str,
        span: Span,
        h: &mut impl ScanHandler,
    ) {
        match decision {
            Decision::Think { tag } => {
                h.reasoning_start(marker, span);
                self.state = State::Reasoning { tag };
            }
            Decision::Quoted { kind, quote } => {
                h.quoted_marker(kind, span, quote);
                prose_text(&mut self.prose, h, marker, span);
            }
            Decision::Prose | Decision::Open { .. } => {
                prose_text(&mut self.prose, h, marker, span);
            }
        }
    }

    /// Consumes reasoning from `d` until its close tag; returns the unconsumed rest.
    fn feed_reasoning<'d>(&mut self, tag: usize, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
        let p0 = self.pos;
        let grammar = Arc::clone(&self.grammar);
        let set = &grammar.think_close;
        let lf = LineFloor {
            floor: 0,
            floor_is_line_start: true,
        };
        if !self.buf.is_empty() {
            let held = self.buf.len();
            let mut window = [0u8; 2 * MAX_PATTERN_LEN];
            window[..held].copy_from_slice(self.buf.as_bytes());
            let take = d.len().min(MAX_PATTERN_LEN);
            window[held..held + take].copy_from_slice(&d.as_bytes()[..take]);
            let held_start = p0 - held;
            match set.find(&window[..held + take], 0, false, lf) {
                Found::Match { at, len, action } if at < held => {
                    let used = at + len - held;
                    if at > 0 {
                        h.reasoning(&self.buf[..at], Span::new(held_start, held_start + at));
                    }
                    self.buf.drain(..at);
                    self.buf.push_str(&d[..used]);
                    self.pos = p0 + used;
                    let span = Span::new(held_start + at, self.pos);
                    self.end_tag(tag, action, span, h);
                    return &d[used..];
                }
                Found::Partial { at } if at < held => {
                    if at > 0 {
                        h.reasoning(&self.buf[..at], Span::new(held_start, held_start + at));
                        self.buf.drain(..at);
                    }
                    self.buf.push_str(d);
                    self.pos = p0 + d.len();
                    return "";
                }
                _ => {
                    h.reasoning(&self.buf, Span::new(held_start, p0));
                    self.buf.clear();
                }
            }
        }
        match set.find(d.as_bytes(), 0, false, lf) {
            Found::Match { at, len, action } => {
                if at > 0 {
                    h.reasoning(&d[..at], Span::new(p0, p0 + at));
                }
                self.buf.push_str(&d[at..at + len]);
                self.pos = p0 + at + len;
                self.end_tag(tag, action, Span::new(p0 + at, self.pos), h);
                &d[at + len..]
            }
            Found::Partial { at } => {
                if at > 0 {
                    h.reasoning(&d[..at], Span::new(p0, p0 + at));
                }
                self.buf.push_str(&d[at..]);
                self.pos = p0 + d.len();
                ""
            }
            Found::None => {
                h.reasoning(d, Span::new(p0, p0 + d.len()));
                self.pos = p0 + d.len();
                ""
            }
        }
    }

    /// `buf` holds a reasoning close tag at `span`: the end of the section opened by
    /// `THINK_TAGS[tag]` when it is that tag's, reasoning content otherwise.
    fn end_tag(&mut self, tag: usize, action: Action, span: Span, h: &mut impl ScanHandler) {
        if action == Action::ThinkEnd(tag) {
            h.reasoning_end(&self.buf, span);
            self.state = State::Outside;
            self.prose.interrupt();
        } else {
            h.reasoning(&self.buf, span);
        }
        self.buf.clear();
    }

    /// Consumes prose from `d` until a block or a reasoning section opens; returns the
    /// unconsumed rest.
    fn feed_outside<'d>(&mut self, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
        let p0 = self.pos;
        // Token-sized prose deltas: one pass over a few bytes decides them.
        let starts = &self.grammar.starts;
        let think = self.reasoning;
        if self.buf.is_empty()
            && d.len() <= 64
            && !d
                .bytes()
                .any(|b| starts[usize::from(b)] || (think && b == b'<'))
        {
            prose_text(&mut self.prose, h, d, Span::new(p0, p0 + d.len()));
            self.pos = p0 + d.len();
            return "";
        }
        let grammar = Arc::clone(&self.grammar);
        let set = if self.reasoning {
            &grammar.outside_think
        } else {
            &grammar.outside
        };
        let lf = LineFloor {
            floor: 0,
            floor_is_line_start: true,
        };
        if !self.buf.is_empty() {
            // Resolve the held-back bytes with the head of `d`. Patterns are at most
            // MAX_PATTERN_LEN long, so a window of that much of `d` decides every candidate
            // that begins in the held bytes.
            let held = self.buf.len();
            let mut window = [0u8; 2 * MAX_PATTERN_LEN];
            window[..held].copy_from_slice(self.buf.as_bytes());
            let take = d.len().min(MAX_PATTERN_LEN);
            window[held..held + take].copy_from_slice(&d.as_bytes()[..take]);
            let held_start = p0 - held;
            match set.find(&window[..held + take], 0, false, lf) {
                Found::Match { at, len, action } if at < held => {
                    let used = at + len - held;
                    if at > 0 {
                        let span = Span::new(held_start, held_start + at);
                        prose_text(&mut self.prose, h, &self.buf[..at], span);
                    }
                    self.buf.drain(..at);
                    self.buf.push_str(&d[..used]);
                    self.pos = p0 + used;
                    let start = held_start + at;
                    let first = self.buf.as_bytes()[0];
                    match self.decide(action, first, start) {
                        Decision::Open { kind } => {
                            // The marker's first byte ends the prose before it (a backtick
                            // run, a fence's opening run): the context the block is in.
                            self.prose.feed(&[first], start);
                            self.open_block(kind, start, d.len() - used, h);
                        }
                        decision => {
                            let marker = std::mem::take(&mut self.buf);
                            self.marker_not_opened(
                                decision,
                                &marker,
                                Span::new(start, self.pos),
                                h,
                            );
                            // Keep the allocation.
                            self.buf = marker;
                            self.buf.clear();
                        }
                    }
                    return &d[used..];
                }
                Found::Partial { at } if at < held => {
                    // Only possible when all of `d` is in the window.
                    if at > 0 {
                        let span = Span::new(held_start, held_start + at);
                        prose_text(&mut self.prose, h, &self.buf[..at], span);
                        self.buf.drain(..at);
                    }
                    self.buf.push_str(d);
                    self.pos = p0 + d.len();
                    return "";
                }
                _ => {
                    prose_text(&mut self.prose, h, &self.buf, Span::new(held_start, p0));
                    self.buf.clear();
                }
            }
        }
        match set.find(d.as_bytes(), 0, false, lf) {
            Found::Match { at, len, action } => {
                if at > 0 {
                    prose_text(&mut self.prose, h, &d[..at], Span::new(p0, p0 + at));
                }
                let start = p0 + at;
                match self.decide(action, d.as_bytes()[at], start) {
                    Decision::Open { kind } => {
                        self.prose.feed(&d.as_bytes()[at..=at], start);
                        self.buf.push_str(&d[at..at + len]);
                        self.pos = start + len;
                        self.open_block(kind, start, d.len() - (at + len), h);
                    }
                    decision => {
                        self.pos = start + len;
                        let span = Span::new(start, self.pos);
                        self.marker_not_opened(decision, &d[at..at + len], span, h);
                    }
                }
                &d[at + len..]
            }
            Found::Partial { at } => {
                if at > 0 {
                    prose_text(&mut self.prose, h, &d[..at], Span::new(p0, p0 + at));
                }
                self.buf.push_str(&d[at..]);
                self.pos = p0 + d.len();
                ""
            }
            Found::None => {
                prose_text(&mut self.prose, h, d, Span::new(p0, p0 + d.len()));
                self.pos = p0 + d.len();
                ""
            }
        }
    }

    /// `buf` holds exactly the start marker, which ends at `self.pos`; `ahead` bytes of the
    /// delta follow it. The buffer is sized in one allocation for the last block's size, or
    /// for the first block for what the delta holds (up to [`CHUNK`]).
    fn open_block(&mut self, kind: usize, start: usize, ahead: usize, h: &mut impl ScanHandler) {
        let expect = match self.last_block_len {
            0 => ahead.min(CHUNK),
            n => n,
        };
        self.buf
            .reserve(expect.min(self.max_block_bytes) + MAX_PATTERN_LEN);
        self.state = State::Body { kind };
        self.next_push = FIRST_PUSH;
        self.block_start = start;
        self.body_start = self.buf.len();
        self.scan_from = self.buf.len();
        self.floor = LineFloor {
            floor: self.buf.len(),
            floor_is_line_start: true,
        };
        self.offsets = OffsetMap::new(start);
        self.overflow = false;
        h.block_opened(kind, Span::new(start, start + self.buf.len()));
    }

    /// Consumes block bytes from `d` until the block closes; returns the unconsumed rest.
    fn feed_inside<'d>(&mut self, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
        // Push in chunks so that the buffer never grows far past the limit.
        // The push grows geometrically from FIRST_PUSH: bytes copied past the end marker
        // (given back below) stay within twice the block's own size, so a large delta
        // holding many blocks is still copied O(1) times per byte.
        let room = if self.overflow {
            0
        } else {
            (self.max_block_bytes + MAX_PATTERN_LEN).saturating_sub(self.buf.len())
        }
        .max(CHUNK);
        let mut n = d.len().min(room).min(self.next_push);
        self.next_push = (self.next_push * 2).min(CHUNK);
        while !d.is_char_boundary(n) {
            n += 1;
        }
        let p0 = self.pos;
        self.buf.push_str(&d[..n]);
        self.pos = p0 + n;
        let kind_before = self.kind();
        if let Some(closed) = self.scan_block(h, false) {
            // The bytes after the end marker came from this chunk: give them back.
            let used = closed.stream_end - p0;
            self.pos = closed.stream_end;
            let kind = self.kind();
            debug_assert_eq!(kind, kind_before);
            self.close_block(kind, BlockEnd::Marker, closed.body_end, closed.end, None, h);
            return &d[used..];
        }
        self.report_progress(h);
        self.check_overflow();
        &d[n..]
    }

    /// Past the limit, keeps only the undecided tail of the buffer. Nothing is dropped while
    /// the undecided tail begins within the limit (a restart there would end a block that
    /// is not too large, whose raw text is kept); the buffer is then at most the limit plus
    /// one pattern.
    fn check_overflow(&mut self) {
        if !self.overflow && self.scan_from <= self.max_block_bytes {
            return;
        }
        self.overflow = true;
        if self.scan_from == 0 {
            return;
        }
        let cut = self.scan_from;
        let floor_is_line_start = is_line_start(self.buf.as_bytes(), cut, self.floor);
        self.buf.drain(..cut);
        self.offsets.drop_front(cut);
        self.scan_from = 0;
        self.floor = LineFloor {
            floor: 0,
            floor_is_line_start,
        };
        if let State::Region {
            kind,
            region,
            content_start,
        } = self.state
        {
            self.state = State::Region {
                kind,
                region,
                content_start: content_start.saturating_sub(cut),
            };
        }
    }

    /// Runs the block state machine over `buf[scan_from..]`, following restarts. Returns
    /// where the block's end marker ends when it was found; the caller closes the block.
    fn scan_block(&mut self, h: &mut impl ScanHandler, eof: bool) -> Option<MarkerClose> {
        let grammar = Arc::clone(&self.grammar);
        loop {
            let (kind, set) = match self.state {
                State::Outside | State::Reasoning { .. } => return None,
                State::Body { kind } => (kind, &grammar.sets[kind].body),
                State::Region { kind, region, .. } => (kind, &grammar.sets[kind].regions[region].0),
            };
            match set.find(self.buf.as_bytes(), self.scan_from, eof, self.floor) {
                Found::None => {
                    self.scan_from = self.buf.len();
                    return None;
                }
                Found::Partial { at } => {
                    self.scan_from = at;
                    return None;
                }
                Found::Match { at, len, action } => match action {
                    Action::Close => {
                        self.report_progress_to(at, h);
                        return Some(MarkerClose {
                            body_end: at,
                            end: at + len,
                            stream_end: self.offsets.stream(at + len),
                        });
                    }
                    Action::Restart => {
                        self.report_progress_to(at, h);
                        self.close_block(kind, BlockEnd::Restart, at, at, None, h);
                    }
                    Action::EnterRegion(region) => {
                        if self.within_limit(at + len) {
                            let view = BlockView::new(&self.buf, &self.offsets, kind);
                            if !h.accept_region(&view, region, at..at + len) {
                                self.scan_from = at + len;
                                continue;
                            }
                        }
                        self.state = State::Region {
                            kind,
                            region,
                            content_start: at + len,
                        };
                        self.scan_from = at + len;
                        if self.within_limit(at + len) {
                            let view = BlockView::new(&self.buf, &self.offsets, kind);
                            h.region_opened(&view, region, at..at + len);
                        }
                    }
                    Action::LeaveRegion => {
                        let State::Region {
                            region,
                            content_start,
                            ..
                        } = self.state
                        else {
                            unreachable!("leaving a region from inside one")
                        };
                        self.state = State::Body { kind };
                        self.scan_from = at + len;
                        if self.within_limit(at + len) {
                            let view = BlockView::new(&self.buf, &self.offsets, kind);
                            h.region_closed(&view, region, content_start..at, at..at + len);
                        }
                    }
                    Action::Open(_) | Action::Think(_) | Action::ThinkEnd(_) => {
                        unreachable!("not a block action")
                    }
                },
            }
        }
    }

    /// True when a block buffer offset lies within `max_block_bytes`. Whether a region event
    /// is reported and whether a block is too large depend on offsets only, never on how the
    /// input was split into deltas.
    fn within_limit(&self, end: usize) -> bool {
        !self.overflow && end <= self.max_block_bytes
    }

    /// Hands the block over, the buffer truncated at `end`. For a restart, `buf[end..]`
    /// (the new start marker and what followed it) becomes the new block.
    fn close_block(
        &mut self,
        kind: usize,
        how: BlockEnd,
        body_end: usize,
        end: usize,
        open_region: Option<(usize, usize)>,
        h: &mut impl ScanHandler,
    ) {
        let stream_end = self.offsets.stream(end);
        let span = Span::new(self.block_start, stream_end);
        let mut buf = std::mem::take(&mut self.buf);
        let rest = (how == BlockEnd::Restart).then(|| buf.split_off(end));
        let mut offsets = std::mem::take(&mut self.offsets);
        let rest_offsets = rest.as_ref().map(|_| {
            let mut o = offsets.clone();
            o.drop_front(end);
            o
        });
        let too_large = !self.within_limit(end);
        self.last_block_len = end;
        let (raw, body) = if too_large {
            (ByteString::new(), 0..0)
        } else {
            buf.truncate(end);
            // The raw text outlives the scanner inside the events: do not let it pin much
            // more memory than it holds.
            if buf.capacity() > 2 * buf.len() + MAX_PATTERN_LEN {
                buf.shrink_to_fit();
            }
            (
                ByteString::from(buf),
                self.body_start.min(body_end)..body_end,
            )
        };
        if too_large {
            offsets = OffsetMap::new(span.end);
        }
        let dropped = if too_large { span.len() } else { 0 };
        self.state = State::Outside;
        self.overflow = false;
        self.prose.interrupt();
        h.block_closed(ClosedBlock {
            kind,
            end: how,
            span,
            raw,
            body,
            open_region,
            dropped,
            offsets,
            fence: self.prose.fence_span(self.block_start),
        });
        if let (Some(mut rest), Some(rest_offsets)) = (rest, rest_offsets) {
            let MatchAt::Full(marker_len) =
                self.grammar.syntaxes[kind].start.match_at(rest.as_bytes())
            else {
                unreachable!("the restart marker was matched")
            };
            let tail = rest.split_off(marker_len);
            self.buf = rest;
            self.open_block(kind, stream_end, tail.len(), h);
            self.offsets = rest_offsets;
            self.buf.push_str(&tail);
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
