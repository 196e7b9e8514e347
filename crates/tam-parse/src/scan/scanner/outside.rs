//! The scanner outside a block: prose, quoted markers, reasoning sections, a block's start.

use std::sync::Arc;

use super::{CHUNK, Decision, FIRST_PUSH, Scanner, State, prose_text};
use crate::diagnostic::Span;
use crate::scan::handler::ScanHandler;
use crate::scan::line::LineFloor;
use crate::scan::offsets::OffsetMap;
use crate::scan::pattern::MAX_PATTERN_LEN;
use crate::scan::pattern_set::{Action, Found};

impl Scanner {
    /// What a start marker or reasoning tag matched at stream offset `start`, whose first
    /// byte is `first`, does in its prose context.
    pub(super) fn decide(&self, action: Action, first: u8, start: usize) -> Decision {
        let ctx = self.prose.before(first, start);
        match action {
            // A start marker that must begin its line (`Pattern::at_line_start`) is judged
            // by the prose line, across deltas, inside a fence too; mid-line it is prose.
            Action::Open(kind)
                if self.grammar.syntaxes[kind].start.line_start && !ctx.first_on_line =>
            {
                Decision::Prose
            }
            Action::Open(kind) => match ctx.quote {
                Some(quote) => Decision::Quoted { kind, quote },
                None => Decision::Open { kind },
            },
            Action::Think(tag) if ctx.line_start => Decision::Think { tag },
            Action::Think(_)
            | Action::Close
            | Action::Restart
            | Action::EnterRegion(_)
            | Action::LeaveRegion
            | Action::ThinkEnd(_) => Decision::Prose,
        }
    }

    /// A marker or tag that opens no block, `marker` at `span`: prose (after a
    /// `quoted_marker` report for a start marker) or the open tag of reasoning.
    pub(super) fn marker_not_opened(
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
    pub(super) fn feed_reasoning<'d>(
        &mut self,
        tag: usize,
        d: &'d str,
        h: &mut impl ScanHandler,
    ) -> &'d str {
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
                Found::Match { .. } | Found::Partial { .. } | Found::None => {
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
    pub(super) fn end_tag(
        &mut self,
        tag: usize,
        action: Action,
        span: Span,
        h: &mut impl ScanHandler,
    ) {
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
    pub(super) fn feed_outside<'d>(&mut self, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
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
                        decision @ (Decision::Quoted { .. }
                        | Decision::Think { .. }
                        | Decision::Prose) => {
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
                Found::Match { .. } | Found::Partial { .. } | Found::None => {
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
                    decision @ (Decision::Quoted { .. }
                    | Decision::Think { .. }
                    | Decision::Prose) => {
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
    pub(super) fn open_block(
        &mut self,
        kind: usize,
        start: usize,
        ahead: usize,
        h: &mut impl ScanHandler,
    ) {
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
}
