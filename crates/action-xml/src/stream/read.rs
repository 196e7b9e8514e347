//! The streamer's general reading: the loop over stops, references, markup (start and
//! close tags of calls and parameters, regions), and the close tags that end a value.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::scan::Stops;

use super::emit::Emit;
use super::stops::{line_end, may_become_reference, next_stop_in_value};
use super::value_tags::{Closes, TagNames, ValueTags, state_name};
use super::{Look, MAX_TAG, Start, State, Streamer};
use crate::event::Event;
use crate::prescan::{RegionKind, RegionRef};
use crate::xml_chars::{is_name_char_at, is_xml_space, name_end, reference_len, space_end};

impl Streamer {
    /// [`Streamer::advance`], its events through `em`.
    pub(super) fn read(
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
    pub(super) fn reference(
        &mut self,
        buf: &str,
        at: usize,
        settled: usize,
        em: &mut Emit<'_, '_>,
    ) -> Look {
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
    pub(super) fn markup(
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
            State::Top | State::Call { .. } => None,
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
    pub(super) fn close_own(
        &mut self,
        state: State,
        at: usize,
        tag_end: usize,
        em: &mut Emit<'_, '_>,
    ) {
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
    pub(super) fn spaced_close(
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
    pub(super) fn not_own(
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
    pub(super) fn call_close_in_value(
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
    pub(super) fn call_closes_value(
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
    pub(super) fn text_lt(&mut self, at: usize, em: &mut Emit<'_, '_>) -> Look {
        if matches!(self.state, State::Param { .. }) {
            em.text(at..at + 1);
        }
        Look::Next(at + 1)
    }
}
