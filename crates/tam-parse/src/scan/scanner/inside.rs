//! The scanner inside a block: its regions, its limit, its end.

use std::sync::Arc;

use bytestring::ByteString;

use super::{CHUNK, MarkerClose, Scanner, State};
use crate::diagnostic::Span;
use crate::scan::handler::{BlockEnd, BlockView, ClosedBlock, ScanHandler};
use crate::scan::line::{LineFloor, is_line_start};
use crate::scan::offsets::OffsetMap;
use crate::scan::pattern::{MAX_PATTERN_LEN, MatchAt};
use crate::scan::pattern_set::{Action, Found};

impl Scanner {
    /// Consumes block bytes from `d` until the block closes; returns the unconsumed rest.
    pub(super) fn feed_inside<'d>(&mut self, d: &'d str, h: &mut impl ScanHandler) -> &'d str {
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
        // Progress once the delta is in (a reply fed whole is pushed in several chunks, and
        // read whole at its close when it closes in this delta), and before an overflow
        // drops bytes: the same `settled` is reported either way.
        if n == d.len() || self.scan_from > self.max_block_bytes {
            self.report_progress(h);
        }
        self.check_overflow();
        &d[n..]
    }

    /// Past the limit, keeps only the undecided tail of the buffer. Nothing is dropped while
    /// the undecided tail begins within the limit (a restart there would end a block that
    /// is not too large, whose raw text is kept); the buffer is then at most the limit plus
    /// one pattern.
    pub(super) fn check_overflow(&mut self) {
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
    pub(super) fn scan_block(
        &mut self,
        h: &mut impl ScanHandler,
        eof: bool,
    ) -> Option<MarkerClose> {
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
                        // The last progress: the block's to read whole at its close, unless
                        // it is too large to keep.
                        let kept = self.within_limit(at + len);
                        self.report_progress_to(at, kept, h);
                        return Some(MarkerClose {
                            body_end: at,
                            end: at + len,
                            stream_end: self.offsets.stream(at + len),
                        });
                    }
                    Action::Restart => {
                        let kept = self.within_limit(at);
                        self.report_progress_to(at, kept, h);
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
    pub(super) fn within_limit(&self, end: usize) -> bool {
        !self.overflow && end <= self.max_block_bytes
    }

    /// Hands the block over, the buffer truncated at `end`. For a restart, `buf[end..]`
    /// (the new start marker and what followed it) becomes the new block.
    pub(super) fn close_block(
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
