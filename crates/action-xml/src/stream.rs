//! Arguments that stream: calls, parameters and pieces of parameter values
//! reported while the block is still being written, driven by the scanner's
//! `block_progress` hook.
//!
//! The streamer reads the block buffer once, left to right, up to what the scanner has
//! settled, and keeps its place between deltas: the work over a block is O(n) however it
//! is split. It is a light reading of the structure, not the parser: the closed block
//! ([`crate::Event::Block`]) stays authoritative.
//!
//! * Nothing streams unless the body begins with an element's start tag, blanks and a
//!   leading code fence line aside ([`Start`]): the rule by which a block the stream ends
//!   in is a prose mention, decided on the body's first bytes whatever the deltas (a
//!   comment or CDATA section first is no exception).
//! * Between calls, an element's start tag is a call: [`Event::CallStart`] once the tag is
//!   complete; its close tag (also in another case, as the pre-scan's case repair reads
//!   it) is [`Event::CallEnd`]. An `<ACTION>` tag there (the block's own `<ACTION>` was
//!   prose) is passed over; its children are calls.
//! * Inside a call, an element's start tag is a parameter: [`Event::ParamStart`]. Its
//!   content streams as [`Event::ParamText`] pieces until its close tag (a start tag of
//!   the same name inside it nests, so `<p><p>x</p></p>` ends at the second `</p>`), then
//!   [`Event::ParamEnd`].
//! * A close tag with blanks between `</` and its name (`</ name>`) whose name is the open
//!   call's or parameter's, also in another case, is its close tag, as the pre-scan's
//!   `noncanonical_tag` repair reads it; any other is what it was before that repair.
//! * The call's close tag inside a parameter's value (as written, in another case or with
//!   blanks) ends the parameter, never closed, and then the call ([`Event::ParamEnd`] with
//!   its span up to the tag, [`Event::CallEnd`]) where the pre-scan's `missing_close_tag`
//!   repair does: the elements opened in the value are closed and no close tag in it
//!   matched nothing (the value's tags are read as the pre-scan reads them, only when such
//!   a tag comes: [`ValueTags`]). Elsewhere it is text, as before that repair.
//! * The pieces are the content **as written, markup included**, with entity and
//!   character references decoded (a decoded reference is a piece of its own, not
//!   borrowed from the block), CDATA
//!   sections' content verbatim without their markers (flagged `cdata`), comments dropped,
//!   line ends in text read as XML reads them (`\r\n` and a lone `\r` are `\n`, a piece
//!   of their own; CDATA content keeps them as written). So for a string value the pieces through
//!   [`crate::ValueEdges`] are the value; for code with tags they are the code; for an
//!   object or array parameter they are its child elements' markup, and its value is in the
//!   block.
//! * Text that needs no decoding is borrowed from the block buffer: no allocation per
//!   delta. A possible reference or close tag cut by the delta's end waits for the next.
//! * A call or parameter still open when the block ends gets no end event: what the model
//!   did not finish never ends.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::Span;

use crate::event::Event;
use crate::fence::is_fence_line;
use crate::prescan::{RegionKind, RegionRef};
use tam_parse::scan::{Stops, find3, tail_mask};

use crate::xml_chars::{is_name_char_at, is_xml_space, name_end, reference_len, space_end};

/// Where the streamer is in the block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum State {
    /// Between calls.
    #[default]
    Top,
    /// Inside a call: the call's index, name and open tag start.
    Call {
        index: usize,
        name: Range<usize>,
        start: usize,
    },
    /// Inside a parameter value.
    Param {
        call: (usize, Range<usize>, usize),
        name: Range<usize>,
        start: usize,
        /// Where the value begins (its start tag's end).
        body: usize,
        /// Open elements of the parameter's own name (1 for the parameter itself).
        same: usize,
        /// The value's tags as the pre-scan reads them, read when the call's close tag
        /// comes inside the value (none until then: boxed, they keep the state small).
        tags: Option<Box<ValueTags>>,
    },
}

/// The streaming reader of one open block.
#[derive(Debug, Clone, Default)]
pub(crate) struct Streamer {
    /// Buffer offset read up to.
    pos: usize,
    state: State,
    calls: usize,
    /// Index into the block's regions of the next one not yet passed.
    next_region: usize,
    /// What the start of the body says: nothing streams before it is known to be an
    /// element, nor ever when it is not (see [`Start`]).
    start: Start,
}

/// How the body of the block begins: the rule that makes a block the stream ended in a
/// prose mention (`marker_in_prose`): its body does not begin with an element's
/// start tag, blanks and a leading code fence line aside. The streamer applies the same
/// rule to the same bytes, so a block later read as prose never streamed anything, and the
/// decision is taken on the body's first bytes alone, whatever the deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Skipping XML whitespace from buffer offset `from`; `fenced` once a code fence line
    /// was passed (only the first non-blank line may be one).
    Blanks { from: usize, fenced: bool },
    /// The first non-blank line starts at `line` with a backtick or a tilde: a code fence
    /// line if it is one when its line break comes (none up to `scanned`).
    Fence { line: usize, scanned: usize },
    /// The body begins with an element: it streams.
    Element,
    /// The body begins with anything else (prose, a comment, CDATA, a close tag, …): maybe
    /// a mention of `<ACTION>` in prose; nothing of it streams.
    Prose,
}

impl Default for Start {
    fn default() -> Self {
        Start::Blanks {
            from: 0,
            fenced: false,
        }
    }
}

/// How a look at a `<` or `&` at the read position ended.
enum Look {
    /// Decided: go on at this offset.
    Next(usize),
    /// Cannot be decided before more of the block arrives.
    Wait,
}

/// A `<` with no `>` this far is text: tags are short, and this bounds what is looked at
/// again when a delta ends inside one.
const MAX_TAG: usize = 4096;

/// Up to this many new bytes, [`Streamer::advance`] looks at them one by one for a `<` or
/// `&` before taking the general way.
const SHORT_PIECE: usize = 64;

/// Below this many new bytes, [`Streamer::advance`] looks at each for a `<`, `&` or `\r`
/// before it looks for a stop.
const QUIET_LOOK: usize = 16;

impl Streamer {
    /// True while the streamer has handed out nothing of its block (no call began): read
    /// from the start instead, it would give every event of the block.
    pub(crate) fn untouched(&self) -> bool {
        self.calls == 0 && self.state == State::Top
    }

    /// Starts on a block whose body begins at buffer offset `body_start`.
    pub(crate) fn new(body_start: usize) -> Self {
        Streamer {
            pos: body_start,
            start: Start::Blanks {
                from: body_start,
                fenced: false,
            },
            ..Streamer::default()
        }
    }

    /// Takes [`Start`] as far as `b[..settled]` allows. The work is O(n) over the block:
    /// every byte is looked at once (a fence line's once more, when its line break comes).
    fn decide_start(&mut self, buf: &str, settled: usize) {
        let b = buf.as_bytes();
        loop {
            match self.start {
                Start::Element | Start::Prose => return,
                Start::Blanks { from, fenced } => {
                    let from = from.min(settled);
                    let Some(at) = b[from..settled]
                        .iter()
                        .position(|&c| !is_xml_space(c))
                        .map(|i| from + i)
                    else {
                        self.start = Start::Blanks {
                            from: settled,
                            fenced,
                        };
                        return;
                    };
                    self.start = match b[at] {
                        b'`' | b'~' if !fenced => Start::Fence {
                            line: at,
                            scanned: at,
                        },
                        b'<' => match b.get(at + 1).filter(|_| at + 1 < settled) {
                            None => {
                                // The next byte decides.
                                self.start = Start::Blanks { from: at, fenced };
                                return;
                            }
                            Some(&c) if c >= 0x80 || c == b'_' || c.is_ascii_alphabetic() => {
                                Start::Element
                            }
                            Some(_) => Start::Prose,
                        },
                        _ => Start::Prose,
                    };
                }
                Start::Fence { line, scanned } => {
                    let scanned = scanned.min(settled);
                    let Some(end) =
                        memchr::memchr(b'\n', &b[scanned..settled]).map(|i| scanned + i)
                    else {
                        self.start = Start::Fence {
                            line,
                            scanned: settled,
                        };
                        return;
                    };
                    self.start = if is_fence_line(&buf[line..end]) {
                        Start::Blanks {
                            from: end,
                            fenced: true,
                        }
                    } else {
                        Start::Prose
                    };
                }
            }
        }
    }

    /// Reads `buf[..settled]` on from where it stopped. `regions` are the block's closed
    /// regions so far and `open_region` the one open (kind, opener start); `span` turns
    /// buffer ranges into stream spans.
    #[inline(always)]
    pub(crate) fn advance(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        // A token-sized delta inside a value, the common case: no region open or waiting,
        // and nothing in what arrived that needs a look — no `<`, `&` or `\r`, or only
        // ones that are text as they stand (code's `a < b`, `&self`, `Vec<u8>`: what
        // [`next_stop_in_value`] passes over). It is one piece, borrowed — what the loop
        // of [`Streamer::read`] would hand out, for a look at a few bytes.
        if self.start == Start::Element
            && let State::Param {
                name: own, call, ..
            } = &self.state
            && self.next_region == regions.len()
            && open_region.is_none()
        {
            let settled = settled.min(buf.len());
            if self.pos >= settled {
                return;
            }
            let b = buf.as_bytes();
            let new = &b[self.pos..settled];
            // A few bytes are looked at one by one first; past that, most pieces of code
            // hold a `<` or `&`, and the look for a stop is the one to make.
            let quiet = |new: &[u8]| !new.iter().any(|&c| matches!(c, b'<' | b'&' | b'\r'));
            // [`QUIET_LOOK`] to [`SHORT_PIECE`] new bytes: [`Streamer::advance_on`]'s
            // short path, out of line.
            if new.len() < QUIET_LOOK {
                let to = if quiet(new) {
                    settled
                } else {
                    let names = [b[own.start], b[call.1.start].to_ascii_lowercase()];
                    match short_stop(&b[..settled], self.pos, names) {
                        Short::To(to) => to,
                        Short::Reference(at) => {
                            return self.advance_references(
                                at,
                                buf,
                                settled,
                                regions,
                                open_region,
                                span,
                                out,
                            );
                        }
                        Short::General => {
                            return self.advance_general(
                                buf,
                                settled,
                                regions,
                                open_region,
                                span,
                                out,
                            );
                        }
                    }
                };
                return self.text_to(buf, to, span, out);
            }
        }
        self.advance_on(buf, settled, regions, open_region, span, out);
    }

    /// The value's text from `self.pos` up to `to` as one borrowed [`Event::ParamText`]
    /// (none when it is empty), and `self.pos` moved there: the short paths' one emit.
    #[inline(always)]
    fn text_to(
        &mut self,
        buf: &str,
        to: usize,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        if to > self.pos {
            out(Event::ParamText {
                text: Cow::Borrowed(&buf[self.pos..to]),
                span: span(self.pos..to),
                cdata: false,
            });
        }
        self.pos = to;
    }

    /// The short path of [`Streamer::advance`] for [`QUIET_LOOK`] to [`SHORT_PIECE`] new
    /// bytes inside a value (`settled` is within `buf`), its stops from one mask
    /// ([`short_stop_by_mask`]): what the short path did with [`short_stop`].
    fn advance_by_mask(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let b = buf.as_bytes();
        let State::Param {
            name: own, call, ..
        } = &self.state
        else {
            return self.advance_general(buf, settled, regions, open_region, span, out);
        };
        let names = [b[own.start], b[call.1.start].to_ascii_lowercase()];
        let to = match short_stop_by_mask(&b[..settled], self.pos, names) {
            Short::To(to) => to,
            Short::Reference(at) => {
                return self.advance_references(at, buf, settled, regions, open_region, span, out);
            }
            Short::General => {
                return self.advance_general(buf, settled, regions, open_region, span, out);
            }
        };
        self.text_to(buf, to, span, out);
    }

    /// [`Streamer::advance`] from a whole reference at `at` in a token-sized delta inside
    /// a value: the text before it, then its decoded piece, as [`Streamer::reference`]
    /// gives them, and on to the next stop the same way — the general way's set-up only
    /// for a stop that is not a reference. Out of line, so that the common case in
    /// [`Streamer::advance`] stays small.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn advance_references(
        &mut self,
        mut at: usize,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let b = &buf.as_bytes()[..settled];
        let State::Param {
            name: own, call, ..
        } = &self.state
        else {
            return self.advance_general(buf, settled, regions, open_region, span, out);
        };
        let names = [b[own.start], b[call.1.start].to_ascii_lowercase()];
        loop {
            // `b[at]` is an `&`.
            let Some(len) = reference_len(b, at) else {
                return self.advance_general(buf, settled, regions, open_region, span, out);
            };
            self.text_to(buf, at, span, out);
            out(Event::ParamText {
                text: crate::xml_chars::reference_text(&buf[at..at + len]),
                span: span(at..at + len),
                cdata: false,
            });
            self.pos = at + len;
            let to = match short_stop(b, self.pos, names) {
                Short::To(to) => to,
                Short::Reference(next) => {
                    at = next;
                    continue;
                }
                Short::General => {
                    return self.advance_general(buf, settled, regions, open_region, span, out);
                }
            };
            return self.text_to(buf, to, span, out);
        }
    }

    /// [`Streamer::advance`] past its common case: the short path for a token-sized delta
    /// of [`QUIET_LOOK`] to [`SHORT_PIECE`] new bytes inside a value
    /// ([`Streamer::advance_by_mask`]), else the general way.
    #[inline(never)]
    fn advance_on(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        if self.start == Start::Element
            && matches!(self.state, State::Param { .. })
            && self.next_region == regions.len()
            && open_region.is_none()
        {
            let settled = settled.min(buf.len());
            if (QUIET_LOOK..=SHORT_PIECE).contains(&settled.saturating_sub(self.pos)) {
                return self.advance_by_mask(buf, settled, regions, open_region, span, out);
            }
        }
        self.advance_general(buf, settled, regions, open_region, span, out);
    }

    /// [`Streamer::advance`] in general.
    #[inline(never)]
    fn advance_general(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let mut em = Emit {
            buf,
            span,
            out,
            pending: None,
        };
        self.read(buf, settled, regions, open_region, &mut em);
        em.flush();
    }

    /// [`Streamer::advance`], its events through `em`.
    fn read(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        em: &mut Emit<'_, '_>,
    ) {
        let settled = settled.min(buf.len());
        self.decide_start(buf, settled);
        if self.start != Start::Element {
            return;
        }
        let b = buf.as_bytes();
        let mut stops = Stops::new(&b[..settled], b'<', b'&', b'\r');
        while self.pos < settled {
            // Regions behind: one the read position is inside (it was open at the last
            // look) ends now; its CDATA content's rest streams.
            while let Some(r) = regions
                .get(self.next_region)
                .filter(|r| r.full.start < self.pos)
            {
                if r.full.end > self.pos {
                    if r.full.end > settled {
                        return;
                    }
                    if r.kind == RegionKind::Cdata && matches!(self.state, State::Param { .. }) {
                        let from = self.pos.max(r.content.start);
                        if from < r.content.end {
                            em.cdata(from..r.content.end);
                        }
                    }
                    self.pos = r.full.end;
                }
                self.next_region += 1;
            }
            if self.pos >= settled {
                return;
            }
            if let Some(r) = regions
                .get(self.next_region)
                .filter(|r| r.full.start == self.pos)
            {
                if r.full.end > settled {
                    return;
                }
                if r.kind == RegionKind::Cdata && matches!(self.state, State::Param { .. }) {
                    em.cdata(r.content.clone());
                }
                self.pos = r.full.end;
                self.next_region += 1;
                continue;
            }
            if let Some((kind, start)) = open_region
                && start <= self.pos
            {
                // Inside the region still open: CDATA content streams as far as settled.
                let content_start = start
                    + match kind {
                        RegionKind::Cdata => "<![CDATA[".len(),
                        RegionKind::Comment => "<!--".len(),
                    };
                if kind == RegionKind::Cdata && matches!(self.state, State::Param { .. }) {
                    let from = self.pos.max(content_start);
                    if from < settled {
                        em.cdata(from..settled);
                    }
                }
                self.pos = settled.max(self.pos);
                return;
            }
            let in_param = matches!(self.state, State::Param { .. });
            let stop = if let State::Param {
                name: own, call, ..
            } = &self.state
            {
                let region_at = regions
                    .get(self.next_region)
                    .map_or(usize::MAX, |r| r.full.start);
                let open_at = open_region.map_or(usize::MAX, |(_, s)| s);
                next_stop_in_value(
                    &b[..settled],
                    self.pos,
                    [b[own.start], b[call.1.start].to_ascii_lowercase()],
                    [region_at, open_at],
                    |from| stops.next(from),
                )
            } else {
                memchr::memchr(b'<', &b[self.pos..settled]).map(|i| self.pos + i)
            };
            let Some(at) = stop else {
                if in_param {
                    em.text(self.pos..settled);
                }
                self.pos = settled;
                return;
            };
            if in_param && at > self.pos {
                em.text(self.pos..at);
            }
            self.pos = at;
            if regions
                .get(self.next_region)
                .is_some_and(|r| r.full.start == at)
                || open_region.is_some_and(|(_, s)| s == at)
            {
                continue;
            }
            let look = if b[at] == b'&' {
                self.reference(buf, at, settled, em)
            } else if b[at] == b'\r' {
                line_end(b, at, settled, em)
            } else {
                self.markup(buf, at, settled, regions, em)
            };
            match look {
                Look::Next(next) => self.pos = next,
                Look::Wait => return,
            }
        }
    }

    /// An `&` at `at` inside a value.
    fn reference(&mut self, buf: &str, at: usize, settled: usize, em: &mut Emit<'_, '_>) -> Look {
        let b = &buf.as_bytes()[..settled];
        if let Some(len) = reference_len(b, at) {
            em.event(Event::ParamText {
                text: crate::xml_chars::reference_text(&buf[at..at + len]),
                span: em.span(at..at + len),
                cdata: false,
            });
            return Look::Next(at + len);
        }
        // Could it still become a reference?
        if may_become_reference(&b[at + 1..]) {
            return Look::Wait;
        }
        em.text(at..at + 1);
        Look::Next(at + 1)
    }

    /// A `<` at `at`; `regions` are the block's closed regions.
    fn markup(
        &mut self,
        buf: &str,
        at: usize,
        settled: usize,
        regions: &[RegionRef],
        em: &mut Emit<'_, '_>,
    ) -> Look {
        let b = &buf.as_bytes()[..settled];
        let Some(&next) = b.get(at + 1) else {
            return Look::Wait;
        };
        let closing = next == b'/';
        let name_at = at + 1 + usize::from(closing);
        if closing && b.get(name_at).is_some_and(|&c| is_xml_space(c)) && self.state != State::Top {
            return self.spaced_close(buf, at, settled, regions, em);
        }
        // Inside a value only the parameter's own tags matter, and the call's close tag
        // ([`Streamer::not_own`]); the rest is text, read on (references in it decoded).
        // The name is compared with the parameter's first: one that already differs in
        // what arrived needs no look for where it ends.
        let own_name = match &self.state {
            State::Param { name: own, .. } => {
                let own = &buf.as_bytes()[own.clone()];
                let arrived = b.get(name_at..).unwrap_or_default();
                let k = own.len().min(arrived.len());
                if arrived[..k] != own[..k] {
                    return self.not_own(buf, at, closing, settled, regions, em);
                }
                let after = name_at + own.len();
                match after < settled {
                    // A longer name is another element's.
                    true if is_name_char_at(buf, after) => {
                        return self.not_own(buf, at, closing, settled, regions, em);
                    }
                    true => Some(name_at..after),
                    // Cannot tell yet: the general look below waits.
                    false => None,
                }
            }
            _ => None,
        };
        let name = match own_name {
            Some(name) => name,
            None => {
                let name = name_at..name_end(buf, name_at).min(settled);
                if name.is_empty() {
                    if name_at >= settled {
                        return Look::Wait;
                    }
                    return self.text_lt(at, em);
                }
                if name.end >= settled {
                    // The name may go on.
                    return Look::Wait;
                }
                if let State::Param {
                    name: param_name, ..
                } = &self.state
                    && buf[param_name.clone()] != buf[name.clone()]
                {
                    return self.not_own(buf, at, closing, settled, regions, em);
                }
                name
            }
        };
        // The tag's end: `>` (or `/>`), outside quotes.
        let mut j = name.end;
        let mut quote = None;
        let tag_end = loop {
            let Some(&c) = b.get(j) else {
                return Look::Wait;
            };
            if j - at > MAX_TAG {
                return self.text_lt(at, em);
            }
            match (quote, c) {
                (None, b'"' | b'\'') if !closing => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                (None, b'>') => break j + 1,
                (None, b'<') => return self.text_lt(at, em),
                (None, c) if closing && !is_xml_space(c) => {
                    return self.text_lt(at, em);
                }
                _ => {}
            }
            j += 1;
        };
        let empty = !closing && b[tag_end - 2] == b'/';
        let tag = &buf[name.clone()];
        match std::mem::take(&mut self.state) {
            State::Top => {
                if tag.eq_ignore_ascii_case("ACTION") || closing {
                    // A nested <ACTION> (or its close): its children are the calls.
                    return Look::Next(tag_end);
                }
                let index = self.calls;
                self.calls += 1;
                em.event(Event::CallStart {
                    index,
                    tool: tag.to_owned(),
                    span: em.span(at..tag_end),
                });
                if empty {
                    em.event(Event::CallEnd {
                        index,
                        span: em.span(at..tag_end),
                    });
                } else {
                    self.state = State::Call {
                        index,
                        name,
                        start: at,
                    };
                }
            }
            State::Call {
                index,
                name: call_name,
                start,
            } => {
                if closing {
                    let state = State::Call {
                        index,
                        name: call_name,
                        start,
                    };
                    // Also in another case: the pre-scan's case repair (`noncanonical_tag`).
                    if buf[state_name(&state)].eq_ignore_ascii_case(tag) {
                        self.close_own(state, at, tag_end, em);
                    } else {
                        self.state = state;
                    }
                    return Look::Next(tag_end);
                }
                em.event(Event::ParamStart {
                    key: Cow::Borrowed(tag),
                    span: em.span(at..tag_end),
                });
                let call = (index, call_name, start);
                if empty {
                    em.event(Event::ParamEnd {
                        span: em.span(at..tag_end),
                    });
                    self.state = State::Call {
                        index: call.0,
                        name: call.1,
                        start: call.2,
                    };
                } else {
                    self.state = State::Param {
                        call,
                        name,
                        start: at,
                        body: tag_end,
                        same: 1,
                        tags: None,
                    };
                }
            }
            mut state @ State::Param { .. } => {
                let mine = buf[state_name(&state)] == *tag;
                match (mine, closing, empty) {
                    (true, true, _) => self.close_own(state, at, tag_end, em),
                    (mine, _, empty) => {
                        if let (true, false, State::Param { same, .. }) = (mine, empty, &mut state)
                        {
                            *same += 1;
                        }
                        em.text(at..tag_end);
                        self.state = state;
                    }
                }
            }
        }
        Look::Next(tag_end)
    }

    /// The close tag `at..tag_end` of the open call or parameter, `state` (taken from
    /// `self.state`): a call ends ([`Event::CallEnd`]); in a parameter it closes the
    /// innermost element of the parameter's name, the parameter itself when no other is
    /// open ([`Event::ParamEnd`], back in the call), else it is text of the value.
    fn close_own(&mut self, state: State, at: usize, tag_end: usize, em: &mut Emit<'_, '_>) {
        match state {
            State::Top => {}
            State::Call { index, start, .. } => em.event(Event::CallEnd {
                index,
                span: em.span(start..tag_end),
            }),
            State::Param {
                call,
                start,
                same: 1,
                ..
            } => {
                em.event(Event::ParamEnd {
                    span: em.span(start..tag_end),
                });
                self.state = State::Call {
                    index: call.0,
                    name: call.1,
                    start: call.2,
                };
            }
            mut state @ State::Param { .. } => {
                if let State::Param { same, .. } = &mut state {
                    *same -= 1;
                }
                em.text(at..tag_end);
                self.state = state;
            }
        }
    }

    /// A close tag with blanks between `</` and its name at `at` (`</ name>`, `</  name >`):
    /// the pre-scan reads it as `</name>` (warning `noncanonical_tag`), so here it closes
    /// the call or parameter open when its name is that element's, also ignoring case (as
    /// the pre-scan's case repair); inside a value, one of the call's name ends the value
    /// and the call ([`Streamer::call_close_in_value`]). Anything else is what it was
    /// before that repair: a `<` that begins no tag. Waits while the name or what follows
    /// it has not arrived.
    #[cold]
    fn spaced_close(
        &mut self,
        buf: &str,
        at: usize,
        settled: usize,
        regions: &[RegionRef],
        em: &mut Emit<'_, '_>,
    ) -> Look {
        let b = &buf.as_bytes()[..settled];
        let skip_space = |j: usize| space_end(b, j);
        let name_at = skip_space(at + 2);
        if name_at - at > MAX_TAG {
            return self.text_lt(at, em);
        }
        if name_at >= settled {
            return Look::Wait;
        }
        let name = name_at..name_end(buf, name_at).min(settled);
        if name.is_empty() {
            return self.text_lt(at, em);
        }
        if name.end >= settled {
            // The name may go on.
            return Look::Wait;
        }
        let (own, call) = match &self.state {
            State::Call { name, .. } => (name.clone(), None),
            State::Param { name, call, .. } => (name.clone(), Some(call.1.clone())),
            State::Top => return self.text_lt(at, em),
        };
        let written = &buf[name.clone()];
        let of_call = if buf[own].eq_ignore_ascii_case(written) {
            false
        } else if call.is_some_and(|call| buf[call].eq_ignore_ascii_case(written)) {
            true
        } else {
            return self.text_lt(at, em);
        };
        let gt = skip_space(name.end);
        if gt - at > MAX_TAG {
            return self.text_lt(at, em);
        }
        match b.get(gt) {
            None => return Look::Wait,
            Some(b'>') => {}
            Some(_) => return self.text_lt(at, em),
        }
        let tag_end = gt + 1;
        if of_call {
            return self.call_closes_value(buf, at, name, true, tag_end, regions, em);
        }
        let state = std::mem::take(&mut self.state);
        self.close_own(state, at, tag_end, em);
        Look::Next(tag_end)
    }

    /// A tag at `at` inside a value whose name is not the parameter's: text, but for the
    /// call's close tag (`closing`), which [`Streamer::call_close_in_value`] looks at.
    fn not_own(
        &mut self,
        buf: &str,
        at: usize,
        closing: bool,
        settled: usize,
        regions: &[RegionRef],
        em: &mut Emit<'_, '_>,
    ) -> Look {
        if closing {
            return self.call_close_in_value(buf, at, settled, regions, em);
        }
        self.text_lt(at, em)
    }

    /// A close tag at `at` (`</`, then a name) inside a value: when its name is the call's,
    /// as written or in another case, then blanks and `>`, the parameter was never closed
    /// and the call's close tag ends it, as the pre-scan reads it (`missing_close_tag`):
    /// [`Streamer::call_closes_value`]. Anything else is text. Waits while the name or
    /// what follows it has not arrived.
    #[cold]
    fn call_close_in_value(
        &mut self,
        buf: &str,
        at: usize,
        settled: usize,
        regions: &[RegionRef],
        em: &mut Emit<'_, '_>,
    ) -> Look {
        let State::Param { call, .. } = &self.state else {
            return self.text_lt(at, em);
        };
        let b = &buf.as_bytes()[..settled];
        let name = &buf.as_bytes()[call.1.clone()];
        let name_at = at + 2;
        let arrived = b.get(name_at..).unwrap_or_default();
        let k = name.len().min(arrived.len());
        if !arrived[..k].eq_ignore_ascii_case(&name[..k]) {
            return self.text_lt(at, em);
        }
        // Bytes equal but for ASCII case: `after` is at a character boundary.
        let after = name_at + name.len();
        if after >= settled {
            return Look::Wait;
        }
        if is_name_char_at(buf, after) {
            return self.text_lt(at, em);
        }
        let mut gt = after;
        while b.get(gt).is_some_and(|&c| is_xml_space(c)) {
            gt += 1;
        }
        if gt - at > MAX_TAG {
            return self.text_lt(at, em);
        }
        match b.get(gt) {
            None => Look::Wait,
            Some(b'>') => {
                self.call_closes_value(buf, at, name_at..after, false, gt + 1, regions, em)
            }
            Some(_) => self.text_lt(at, em),
        }
    }

    /// The call's close tag, `at..tag_end`, its name at `name` (`spaced`: written with
    /// blanks before it), inside a value. The value's tags up to it, read as the pre-scan
    /// reads them ([`ValueTags`]), tell what it does: when the parameter was never closed
    /// and no close tag in it matched nothing, it ends the parameter there and then the call
    /// ([`Event::ParamEnd`], its span up to the tag, and [`Event::CallEnd`]): the
    /// pre-scan's `missing_close_tag` repair. Otherwise it is text: it closes an element of
    /// its name opened in the value (`<c><p>x <c>y</c>`), or the pre-scan reads the
    /// parameter otherwise (a misspelt close tag in it, `mismatched_close_tag`) or not at
    /// all (`malformed_xml`), and the value streams on as before that repair.
    #[allow(clippy::too_many_arguments)]
    fn call_closes_value(
        &mut self,
        buf: &str,
        at: usize,
        name: Range<usize>,
        spaced: bool,
        tag_end: usize,
        regions: &[RegionRef],
        em: &mut Emit<'_, '_>,
    ) -> Look {
        let State::Param {
            call,
            name: param,
            start,
            body,
            same,
            tags,
        } = std::mem::take(&mut self.state)
        else {
            return Look::Next(tag_end);
        };
        let mut tags = tags.unwrap_or_else(|| Box::new(ValueTags::new(body)));
        let names = TagNames {
            buf,
            param: param.clone(),
            call: call.1.clone(),
        };
        tags.read_to(&names, at, regions);
        if !tags.parted && tags.close(&names, name, spaced) == Closes::LeftOpen {
            em.event(Event::ParamEnd {
                span: em.span(start..at),
            });
            em.event(Event::CallEnd {
                index: call.0,
                span: em.span(call.2..tag_end),
            });
            return Look::Next(tag_end);
        }
        tags.read = tag_end;
        em.text(at..tag_end);
        // The elements of the parameter's name open in it, as the pre-scan reads them (one
        // closed by an outer element's close tag was text).
        let same = if tags.parted {
            same
        } else {
            let own = &buf[param.clone()];
            1 + tags
                .open
                .iter()
                .filter(|(n, _)| &buf[n.clone()] == own)
                .count()
        };
        self.state = State::Param {
            call,
            name: param,
            start,
            body,
            same,
            tags: Some(tags),
        };
        Look::Next(tag_end)
    }

    /// A `<` that begins no tag: text inside a value, nothing elsewhere.
    fn text_lt(&mut self, at: usize, em: &mut Emit<'_, '_>) -> Look {
        if matches!(self.state, State::Param { .. }) {
            em.text(at..at + 1);
        }
        Look::Next(at + 1)
    }
}

/// The next `&`, `<` or `\r` at or after `from` in `b` (a value's settled bytes) that
/// needs a look (every `\r` does): a `<` whose name (or close tag's name) already differs from the parameter's in its
/// first byte `own` is text like the bytes around it (as [`Streamer::markup`] would find)
/// — unless it is a close tag whose name's first byte is the call's `call` (lower case)
/// ignoring case ([`Streamer::call_close_in_value`]) —
/// and so is an `&` that begins no reference and cannot become one (as
/// [`Streamer::reference`] would find) — unless a region starts there (`regions`: where
/// the next ones begin).
/// `find` is the search for the next `<`, `&` or `\r` from an offset on: [`find3`] for a
/// few bytes, a [`Stops`] for a value's worth.
#[inline]
fn next_stop_in_value(
    b: &[u8],
    mut from: usize,
    [own, call]: [u8; 2],
    regions: [usize; 2],
    mut find: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    loop {
        let at = find(from)?;
        if b[at] == b'\r' {
            return Some(at);
        }
        if regions.contains(&at) {
            return Some(at);
        }
        if b[at] == b'&' {
            if reference_len(b, at).is_some() || may_become_reference(&b[at + 1..]) {
                return Some(at);
            }
            from = at + 1;
            continue;
        }
        let first = match b.get(at + 1) {
            Some(b'/') => match b.get(at + 2) {
                // `</ name>`: maybe the parameter's close tag ([`Streamer::spaced_close`]).
                Some(&c) if is_xml_space(c) => return Some(at),
                // Maybe the call's close tag, which ends a parameter left open.
                Some(&c) if c.to_ascii_lowercase() == call => return Some(at),
                other => other,
            },
            other => other,
        };
        match first {
            Some(&c) if c != own => from = at + 1,
            _ => return Some(at),
        }
    }
}

/// Where the short path of [`Streamer::advance`] goes from a look at `b[from..]` (`b` is
/// what has settled) inside a value whose parameter and call names begin with `names`.
enum Short {
    /// The text up to here goes out as one piece: the end (no stop), or a stop whose look
    /// needs what has not arrived (a `<`, `\r` or an `&` that may begin a reference, cut by
    /// the delta's end), which waits — what the general way does.
    To(usize),
    /// A whole reference begins here (`&amp;` in a comment of code):
    /// [`Streamer::advance_references`].
    Reference(usize),
    /// Any other stop: the general way.
    General,
}

#[inline(always)]
fn short_stop(b: &[u8], from: usize, names: [u8; 2]) -> Short {
    short(
        b,
        next_stop_in_value(b, from, names, [usize::MAX; 2], |from| {
            find3(b, from, b'<', b'&', b'\r')
        }),
    )
}

/// [`short_stop`] for a look at [`QUIET_LOOK`] bytes or more: the stops of `b[from..]`
/// from one mask of the last 64 bytes ([`tail_mask`]) — code's stops come every few words,
/// and [`find3`] would start again at each — or, when it does not fit there, as
/// [`short_stop`] finds them.
#[inline(always)]
fn short_stop_by_mask(b: &[u8], from: usize, names: [u8; 2]) -> Short {
    let Some(mask) = tail_mask(b, from, [b'<', b'&', b'\r']) else {
        return short_stop(b, from, names);
    };
    // Bit `i` of `mask` is `b[from + i]`; the looks go forward from `from`.
    let stop = next_stop_in_value(b, from, names, [usize::MAX; 2], |at| {
        let ahead = mask.checked_shr((at - from) as u32).unwrap_or(0);
        (ahead != 0).then(|| at + ahead.trailing_zeros() as usize)
    });
    short(b, stop)
}

/// Where the short path goes from the first stop of a look, as [`short_stop`] says.
#[inline(always)]
fn short(b: &[u8], stop: Option<usize>) -> Short {
    match stop {
        None => Short::To(b.len()),
        Some(at) if waits_at(b, at) => Short::To(at),
        Some(at) if b[at] == b'&' => Short::Reference(at),
        Some(_) => Short::General,
    }
}

/// The name of the open call or parameter of `state` (empty at the top).
fn state_name(state: &State) -> Range<usize> {
    match state {
        State::Top => 0..0,
        State::Call { name, .. } | State::Param { name, .. } => name.clone(),
    }
}

/// The names a value's tags are told by: the parameter's and the call's, in `buf`.
struct TagNames<'b> {
    buf: &'b str,
    param: Range<usize>,
    call: Range<usize>,
}

/// What a close tag inside a value does, as the pre-scan's `Prescan::closes` finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closes {
    /// It closes the element open in the value at this index (those after it were text).
    Inner(usize),
    /// It closes the parameter.
    Param,
    /// The call's, the parameter never closed and nothing unmatched in it: the pre-scan's
    /// `missing_close_tag` repair.
    LeftOpen,
    /// The call's, the parameter's only close tag that matched nothing was its own,
    /// misspelt (`mismatched_close_tag`).
    Misspelt,
    /// The call's, with close tags that matched nothing in the parameter or the elements
    /// open in it: `malformed_xml`.
    Unwound,
    /// It matches no open element.
    Nothing,
}

/// A parameter's value read as the pre-scan reads its tags (`Prescan::start_tag`,
/// `close_tag`, `closes`), regions aside: the elements opened in it and still open, and
/// the close tags that matched nothing. Read only when the call's close tag comes inside
/// the value ([`Streamer::call_closes_value`]), each time from where the last read
/// stopped: a value that closes properly costs nothing, one that does not is read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ValueTags {
    /// Read up to this buffer offset.
    read: usize,
    /// The elements open in the value, innermost last: the name, and whether a close tag
    /// directly in it matched nothing.
    open: Vec<(Range<usize>, bool)>,
    /// Close tags directly in the parameter that matched nothing.
    unmatched: usize,
    /// The pre-scan's reading and the streamer's parted (it closed the parameter, or the
    /// call's close tag was no repair): the call's close tags in the value stay text.
    parted: bool,
}

impl ValueTags {
    /// A value whose content begins at `read`.
    fn new(read: usize) -> Self {
        ValueTags {
            read,
            ..ValueTags::default()
        }
    }

    /// Reads the tags from where the last read stopped to `to`, outside `regions`.
    fn read_to(&mut self, names: &TagNames<'_>, to: usize, regions: &[RegionRef]) {
        let b = &names.buf.as_bytes()[..to];
        let mut j = self.read.min(to);
        while !self.parted
            && let Some(lt) = memchr::memchr(b'<', &b[j..]).map(|i| j + i)
        {
            let r = regions.partition_point(|r| r.full.end <= lt);
            if let Some(r) = regions.get(r).filter(|r| r.full.start <= lt) {
                j = r.full.end.clamp(lt + 1, to);
                continue;
            }
            j = lt + 1;
            match b.get(lt + 1) {
                Some(b'/') => {
                    if let Some((name, spaced, end)) = close_tag_at(names.buf, lt, to) {
                        self.close(names, name, spaced);
                        j = end;
                    }
                }
                // A processing instruction is dropped whole; `<!` begins no tag here.
                Some(b'?') => {
                    if let Some(end) = memchr::memmem::find(&b[lt + 2..], b"?>") {
                        j = lt + 2 + end + 2;
                    }
                }
                Some(b'!') => {}
                _ => {
                    if let Some((name, empty, end)) = start_tag_at(names.buf, lt, to) {
                        if !empty {
                            self.open.push((name, false));
                        }
                        j = end;
                    }
                }
            }
        }
        self.read = to;
    }

    /// A close tag of `name` (`spaced`: with blanks before it, which the pre-scan takes
    /// only where it closes an element) does what it does in the pre-scan, as far as the
    /// value goes; returns what that is.
    fn close(&mut self, names: &TagNames<'_>, name: Range<usize>, spaced: bool) -> Closes {
        let b = names.buf.as_bytes();
        let name = &b[name];
        let param = &b[names.param.clone()];
        let call = &b[names.call.clone()];
        let top = self.open.last().map_or(param, |(n, _)| &b[n.clone()]);
        let clear = || self.unmatched == 0 && self.open.iter().all(|&(_, u)| !u);
        let closes = if top.eq_ignore_ascii_case(name) {
            match self.open.len() {
                0 => Closes::Param,
                n => Closes::Inner(n - 1),
            }
        } else if let Some(k) = self.open.iter().rposition(|(n, _)| &b[n.clone()] == name) {
            Closes::Inner(k)
        } else if param == name {
            Closes::Param
        } else if call == name {
            if self.open.is_empty() && self.unmatched == 1 {
                Closes::Misspelt
            } else if clear() {
                Closes::LeftOpen
            } else {
                Closes::Unwound
            }
        } else if call.eq_ignore_ascii_case(name) && clear() {
            Closes::LeftOpen
        } else {
            Closes::Nothing
        };
        match closes {
            Closes::Inner(k) => self.open.truncate(k),
            // The streamer reads the value on; the pre-scan does not.
            Closes::Param | Closes::LeftOpen | Closes::Misspelt => self.parted = true,
            // Written with blanks, a close tag the pre-scan does not take is text.
            Closes::Unwound | Closes::Nothing if spaced => {}
            Closes::Unwound => self.parted = true,
            Closes::Nothing => match self.open.last_mut() {
                Some((_, unmatched)) => *unmatched = true,
                None => self.unmatched += 1,
            },
        }
        closes
    }
}

/// The close tag at `lt` in `buf[..to]`, as the pre-scan takes it: `</name>` (blanks
/// before the `>`) or `</ name>` (`spaced`); its name, whether spaced, and its end.
fn close_tag_at(buf: &str, lt: usize, to: usize) -> Option<(Range<usize>, bool, usize)> {
    let b = &buf.as_bytes()[..to];
    let skip_space = |j: usize| space_end(b, j);
    let start = skip_space(lt + 2);
    let end = name_end(buf, start).min(to);
    if end == start {
        return None;
    }
    let gt = skip_space(end);
    (b.get(gt) == Some(&b'>')).then_some((start..end, start > lt + 2, gt + 1))
}

/// The start tag at `lt` in `buf[..to]`, as the pre-scan takes it (`<name>`, `<name/>`,
/// attributes with quoted values without `<`): its name, whether empty, and its end.
pub(crate) fn start_tag_at(buf: &str, lt: usize, to: usize) -> Option<(Range<usize>, bool, usize)> {
    let b = &buf.as_bytes()[..to];
    let skip_space = |j: usize| space_end(b, j);
    let name = lt + 1..name_end(buf, lt + 1).min(to);
    if name.is_empty() {
        return None;
    }
    let mut j = name.end;
    loop {
        let after = skip_space(j);
        let had_space = after > j;
        j = after;
        match b.get(j)? {
            b'>' => return Some((name, false, j + 1)),
            b'/' => return (b.get(j + 1) == Some(&b'>')).then_some((name, true, j + 2)),
            _ if !had_space => return None,
            _ => {}
        }
        // An attribute: name = "value" or 'value'.
        let attribute = name_end(buf, j).min(to);
        if attribute == j {
            return None;
        }
        j = skip_space(attribute);
        if b.get(j) != Some(&b'=') {
            return None;
        }
        j = skip_space(j + 1);
        let quote = *b.get(j).filter(|&&q| q == b'"' || q == b'\'')?;
        let len = memchr::memchr(quote, &b[j + 1..])?;
        if memchr::memchr(b'<', &b[j + 1..j + 1 + len]).is_some() {
            return None;
        }
        j += 1 + len + 1;
    }
}

/// True when the look at a stop at `at` in a value (`b`: its settled bytes) waits for more
/// in every state: a `<` or `\r` that is the last byte, or an `&` that begins no
/// reference yet may still become one ([`Streamer::markup`], [`line_end`],
/// [`Streamer::reference`]).
#[inline]
fn waits_at(b: &[u8], at: usize) -> bool {
    match b[at] {
        b'<' | b'\r' => at + 1 >= b.len(),
        b'&' => reference_len(b, at).is_none() && may_become_reference(&b[at + 1..]),
        _ => false,
    }
}

/// A `\r` at `at` in a value's text: a line end, read as XML reads it (`\r\n` and a lone
/// `\r` are one `\n`, as in the block's value), a piece of its own. Waits while the byte
/// after it has not arrived.
fn line_end(b: &[u8], at: usize, settled: usize, em: &mut Emit<'_, '_>) -> Look {
    if at + 1 >= settled.min(b.len()) {
        return Look::Wait;
    }
    let len = if b[at + 1] == b'\n' { 2 } else { 1 };
    em.event(Event::ParamText {
        text: Cow::Borrowed("\n"),
        span: em.span(at..at + len),
        cdata: false,
    });
    Look::Next(at + len)
}

/// True when `rest`, the settled bytes after an `&` that begins no reference, may still
/// become one when more arrives: it begins one of the references [`reference_len`] takes
/// (`lt`, `gt`, `amp`, `apos`, `quot`; `#` and up to eight digits, `#x` and up to eight
/// hex digits), its `;` not there yet. Code's `&mut`, `&str` or `&self` cut by a delta's
/// end is text at once, not a wait for the next delta.
#[inline(always)]
fn may_become_reference(rest: &[u8]) -> bool {
    // Most often `rest` is long (the `&` is far from what arrived last): one look at its
    // length tells, but for `#`.
    match rest {
        [] | [b'l' | b'g'] | [b'l' | b'g', b't'] => true,
        [b'a'] | [b'a', b'm'] | [b'a', b'm', b'p'] => true,
        [b'a', b'p'] | [b'a', b'p', b'o'] | [b'a', b'p', b'o', b's'] => true,
        [b'q'] | [b'q', b'u'] | [b'q', b'u', b'o'] | [b'q', b'u', b'o', b't'] => true,
        [b'#', more @ ..] => {
            let (hex, digits) = match more {
                [b'x', digits @ ..] => (true, digits),
                digits => (false, digits),
            };
            digits.len() <= 8
                && digits.iter().all(|c| {
                    if hex {
                        c.is_ascii_hexdigit()
                    } else {
                        c.is_ascii_digit()
                    }
                })
        }
        _ => false,
    }
}

/// Hands the streamer's events to the caller, joining borrowed pieces of one kind (text,
/// or one CDATA section's content) that touch: a `<` that is text (`Vec<String>`, `a < b`,
/// the tags of an object parameter's children) or a bare `&` does not cut the text around
/// it into three pieces (fewer events, the same text and spans once adjacent pieces are
/// joined).
pub(crate) struct Emit<'b, 'o> {
    buf: &'b str,
    span: &'o dyn Fn(Range<usize>) -> Span,
    out: &'o mut dyn FnMut(Event<'_>),
    /// Borrowed text not handed out yet, and whether it is CDATA content.
    pending: Option<(Range<usize>, bool)>,
}

impl Emit<'_, '_> {
    /// The stream span of buffer range `r`.
    fn span(&self, r: Range<usize>) -> Span {
        (self.span)(r)
    }

    /// A piece of text borrowed from the buffer (nothing for an empty range).
    fn text(&mut self, r: Range<usize>) {
        self.piece(r, false);
    }

    /// A piece of a CDATA section's content borrowed from the buffer.
    fn cdata(&mut self, r: Range<usize>) {
        self.piece(r, true);
    }

    fn piece(&mut self, r: Range<usize>, cdata: bool) {
        if r.start >= r.end {
            return;
        }
        match &mut self.pending {
            Some((p, kind)) if p.end == r.start && *kind == cdata => p.end = r.end,
            _ => {
                self.flush();
                self.pending = Some((r, cdata));
            }
        }
    }

    /// Any other event: the pending text goes first.
    fn event(&mut self, e: Event<'_>) {
        self.flush();
        (self.out)(e);
    }

    fn flush(&mut self) {
        if let Some((r, cdata)) = self.pending.take() {
            (self.out)(Event::ParamText {
                text: Cow::Borrowed(&self.buf[r.clone()]),
                span: (self.span)(r),
                cdata,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reference [`reference_len`] takes, cut anywhere before its `;`, may still
    /// become one: a wait, never text that the block reads as a reference.
    #[test]
    fn every_cut_reference_may_become_one() {
        let mut references: Vec<String> = ["&lt;", "&gt;", "&amp;", "&apos;", "&quot;"]
            .map(String::from)
            .to_vec();
        for c in [
            '\t',
            '\n',
            ' ',
            'A',
            'é',
            '中',
            '🚀',
            '\u{FFFD}',
            '\u{10FFFF}',
        ] {
            let n = u32::from(c);
            references.push(format!("&#{n};"));
            references.push(format!("&#{n:08};"));
            references.push(format!("&#x{n:x};"));
            references.push(format!("&#x{n:X};"));
            references.push(format!("&#x{n:08x};"));
        }
        for reference in &references {
            let b = reference.as_bytes();
            assert_eq!(reference_len(b, 0), Some(b.len()), "{reference}");
            for cut in 1..b.len() {
                assert!(
                    may_become_reference(&b[1..cut]),
                    "{reference} cut at {cut}: {:?}",
                    &reference[..cut]
                );
            }
        }
    }

    /// The text of a value streamed after each delta: what can no longer change goes at
    /// once; a `<`, or an `&` that may begin a reference, cut by the delta's end waits.
    #[test]
    fn a_value_streams_up_to_what_may_still_change() {
        let steps = [
            ("<ACTION><write><content>let x = &mu", "let x = &mu"),
            ("t y; if a <", "let x = &mut y; if a "),
            (" b { s.push(&", "let x = &mut y; if a < b { s.push("),
            ("a", "let x = &mut y; if a < b { s.push("),
            ("mp;str) }", "let x = &mut y; if a < b { s.push(&str) }"),
            (" Vec<", "let x = &mut y; if a < b { s.push(&str) } Vec"),
            (
                "u8> &#x4",
                "let x = &mut y; if a < b { s.push(&str) } Vec<u8> ",
            ),
            (
                "E; ok",
                "let x = &mut y; if a < b { s.push(&str) } Vec<u8> N ok",
            ),
        ];
        let mut decoder = crate::Decoder::default();
        let mut streamed = String::new();
        for (delta, want) in steps {
            decoder.feed(delta, |e| {
                if let Event::ParamText { text, .. } = e {
                    streamed.push_str(&text);
                }
            });
            assert_eq!(streamed, want, "after {delta:?}");
        }
    }

    /// What begins none of them is text at once: code's `&` cut by a delta's end.
    #[test]
    fn code_ampersands_are_text_at_once() {
        for rest in [
            "m",
            "mu",
            "mut",
            "s",
            "self",
            "str",
            "&",
            " ",
            "ltx",
            "ampx",
            "a1",
            "#a",
            "#x1G",
            "#123456789",
            "#x123456789",
            "q2",
            "=",
            "'",
        ] {
            assert!(!may_become_reference(rest.as_bytes()), "&{rest}");
        }
        for rest in [
            "",
            "l",
            "lt",
            "g",
            "a",
            "am",
            "amp",
            "ap",
            "apo",
            "apos",
            "q",
            "quo",
            "#",
            "#1",
            "#x",
            "#xA",
            "#12345678",
        ] {
            assert!(may_become_reference(rest.as_bytes()), "&{rest}");
        }
    }
}
