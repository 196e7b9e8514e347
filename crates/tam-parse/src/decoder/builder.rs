//! Building one block from the scanner's callbacks: entries, values streamed piece by
//! piece, chained calls.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Range;

use bytestring::ByteString;
use memchr::memmem;

use super::config::REGION_VALUE;
use super::{Config, Dialect, Event, VALUE_CLOSE, VALUE_OPEN};
use crate::block::{Block, Entry, Place, build_calls};
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::entry::{
    CanonicalKey, SegmentItem, parse_segment, same_canonical, written_command_number,
};
use crate::scan::{BlockView, ClosedBlock};

/// Argument streaming of the keyed value being read.
#[derive(Debug, Clone)]
pub(super) struct OpenValue {
    pub(super) key: Range<usize>,
    /// `ParamStart` was emitted.
    pub(super) started: bool,
    /// `buf[..streamed]` of the value was emitted as `ParamText`.
    pub(super) streamed: usize,
    /// Where the next search for the block's end marker inside the value starts.
    pub(super) search_from: usize,
    /// `buf[..checked]` was looked at for blanks; `nonblank_end` is the end of its last
    /// non-blank byte (or the content start).
    pub(super) checked: usize,
    pub(super) nonblank_end: usize,
    /// The value holds the block's end marker: streaming stops here (the end-of-stream
    /// recovery may end the value before that marker).
    pub(super) frozen: Option<usize>,
}

pub(super) fn is_recovery_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl OpenValue {
    pub(super) fn new(key: Range<usize>, content_start: usize) -> Self {
        OpenValue {
            key,
            started: false,
            streamed: content_start,
            search_from: content_start,
            checked: content_start,
            nonblank_end: content_start,
            frozen: None,
        }
    }

    /// How far the value may be streamed when `buf[..settled]` is decided. Held back, on top
    /// of a possible close marker (already outside `settled`): whatever the end-of-stream
    /// end-of-stream recovery (`missing_value_close`) could still cut off — from the first end marker inside the
    /// value on, a tail that may begin an end marker, and the blanks before either.
    /// Each byte is looked at a bounded number of times over the value's life.
    pub(super) fn limit(&mut self, buf: &[u8], settled: usize, end_marker: &[u8]) -> usize {
        if let Some(f) = self.frozen {
            return f;
        }
        if settled <= self.streamed {
            return self.streamed;
        }
        if let Some(m) = memmem::find(&buf[self.search_from..settled], end_marker) {
            let at = self.search_from + m;
            let mut f = at;
            while f > self.streamed && is_recovery_blank(buf[f - 1]) {
                f -= 1;
            }
            self.frozen = Some(f);
            return f;
        }
        self.search_from = settled
            .saturating_sub(end_marker.len() - 1)
            .max(self.search_from);
        // The longest tail of `buf[..settled]` that is a proper prefix of the end marker.
        let mut lim = settled;
        for k in (1..end_marker.len()).rev() {
            if settled.checked_sub(k).is_some_and(|p| p >= self.streamed)
                && buf[..settled].ends_with(&end_marker[..k])
            {
                lim = settled - k;
                break;
            }
        }
        if lim > self.checked {
            if let Some(i) = buf[self.checked..lim]
                .iter()
                .rposition(|&b| !is_recovery_blank(b))
            {
                self.nonblank_end = self.checked + i + 1;
            }
            self.checked = lim;
        }
        self.nonblank_end.min(lim).max(self.streamed)
    }
}

/// Decides which call each entry of a block goes to as its key is read, so that
/// `CommandSeen` can announce a call before its first value streams. O(1) work per entry
/// (one hash of the key's canonical form), nothing read twice.
///
/// In a block without chain numbers, calls follow one another in the order written: a
/// `command` after the first starts a new call, and so does a parameter key the current
/// call already has (same canonical form). Parameters before the first command belong to
/// the first call; one given twice there is a duplicate (the last value wins). Once a key
/// canonicalising to `command<digits>` is read, the block is chained: calls are then built
/// from the keys at the block end, and a `command` is call 0 again.
#[derive(Debug, Default)]
pub(super) struct CallTracker {
    /// A `command<digits>` key was read.
    pub(super) chained: bool,
    /// A command was read.
    pub(super) commanded: bool,
    /// The current call.
    pub(super) call: u64,
    /// Index in the block's entries of the current call's first entry.
    pub(super) first: usize,
    /// Parameters in the current call.
    pub(super) params: usize,
    /// The current call's tool (trimmed, a range of the block buffer; `None` when blank)
    /// and command entry, once its command value closed.
    pub(super) tool: Option<(Range<usize>, Span)>,
    /// Hash of a parameter key's canonical form → the last entry with that hash. Only
    /// entries from `first` on are in the current call; older ones are ignored, so the map
    /// is not cleared per call.
    pub(super) keys: HashMap<u64, usize>,
}

impl CallTracker {
    pub(super) fn reset(&mut self) {
        // Clearing costs the map's capacity: a map grown by a large block is dropped.
        let mut keys = std::mem::take(&mut self.keys);
        if keys.capacity() > 256 {
            keys = HashMap::default();
        } else {
            keys.clear();
        }
        *self = CallTracker {
            keys,
            ..CallTracker::default()
        };
    }

    pub(super) fn start_call(&mut self, first: usize) {
        self.call += 1;
        self.first = first;
    }

    /// The place of the entry whose key is `buf[key]`, the next one after `entries`.
    pub(super) fn place(
        &mut self,
        buf: &str,
        key: Range<usize>,
        entries: &[Entry],
        dialect: Dialect,
    ) -> Place {
        let written = &buf[key];
        if dialect == Dialect::Vcp {
            return Place {
                command: same_canonical(written, "toolname"),
                ..Place::default()
            };
        }
        let index = entries.len();
        match written_command_number(written) {
            Some(Some(n)) => {
                self.chained = true;
                Place {
                    call: n,
                    command: true,
                    ..Place::default()
                }
            }
            Some(None) if self.chained => Place {
                command: true,
                ..Place::default()
            },
            Some(None) => {
                let starts = self.commanded;
                if starts {
                    self.start_call(index);
                    self.params = 0;
                }
                self.commanded = true;
                self.tool = None;
                Place {
                    call: self.call,
                    command: true,
                    starts,
                    ..Place::default()
                }
            }
            None if self.chained => Place::default(),
            None => self.place_parameter(buf, written, index, entries),
        }
    }

    pub(super) fn place_parameter(
        &mut self,
        buf: &str,
        written: &str,
        index: usize,
        entries: &[Entry],
    ) -> Place {
        let hash = self.keys.hasher().hash_one(CanonicalKey(written));
        let same = |e: &&Entry| !e.place.command && same_canonical(&buf[e.key.clone()], written);
        let repeat = match self.keys.get(&hash) {
            Some(&last) if last >= self.first => match entries.get(last) {
                Some(e) if same(&e) => Some(e.place.slot),
                // Another key with the same hash (rare): look through the current call.
                _ => entries
                    .get(self.first..)
                    .and_then(|call| call.iter().rev().find(same))
                    .map(|e| e.place.slot),
            },
            _ => None,
        };
        let place = match repeat {
            Some(_) if self.commanded => {
                self.start_call(index);
                self.params = 1;
                Place {
                    call: self.call,
                    starts: true,
                    repeats: self.tool.clone(),
                    ..Place::default()
                }
            }
            Some(slot) => Place {
                call: self.call,
                slot,
                duplicate: true,
                ..Place::default()
            },
            None => {
                self.params += 1;
                Place {
                    call: self.call,
                    slot: self.params - 1,
                    ..Place::default()
                }
            }
        };
        self.keys.insert(hash, index);
        place
    }

    /// `entry`, just complete: the current call's tool is known when it is its command.
    pub(super) fn entry_closed(&mut self, buf: &str, entry: &Entry) {
        if entry.place.command && !self.chained && entry.place.call == self.call {
            self.tool = tool_range(buf, entry).map(|r| (r, entry.span));
        }
    }
}

/// Builds one block from the scanner's region events (the TAM protocol layer).
#[derive(Debug, Default)]
pub(super) struct BlockBuilder {
    /// Where the text between values starts, in the block buffer.
    pub(super) seg_start: usize,
    pub(super) seg_line_start: bool,
    /// The key of the value being read, if it had one.
    pub(super) pending_key: Option<Range<usize>>,
    /// Its place (`None` for a key over the length limit).
    pub(super) pending_place: Option<Place>,
    /// Which call each entry goes to.
    pub(super) calls: CallTracker,
    /// The opener at this offset was accepted by `accept_region` (its segment is read).
    pub(super) accepted_at: Option<usize>,
    /// An open run of stray text (buffer range), reported when an entry, comment or the
    /// block end follows.
    pub(super) stray: Option<Range<usize>>,
    pub(super) entries: Vec<Entry>,
    pub(super) diags: Vec<Diagnostic>,
    /// Complete entries read (kept or dropped for a long key). A block that never closes
    /// is a cut call when this is non-zero, prose otherwise.
    pub(super) complete: usize,
    /// Entries the last finished block held (complete or not).
    pub(super) entries_read: usize,
    /// `entries[..announced]` had their `Param*` events emitted.
    pub(super) announced: usize,
    /// Streaming of the keyed value being read.
    pub(super) open: Option<OpenValue>,
    /// Emit `Param*` events.
    pub(super) param_events: bool,
}

/// A trimmed quote of at most 40 characters of the model's text, for a message.
pub(super) fn preview(text: &str) -> String {
    crate::preview(text.trim(), 40)
}

pub(super) fn flush_stray(
    stray: &mut Option<Range<usize>>,
    diags: &mut Vec<Diagnostic>,
    buf: &str,
    span: impl Fn(Range<usize>) -> Span,
) {
    if let Some(r) = stray.take() {
        let text = &buf[r.clone()];
        diags.push(Diagnostic::warning(
            Code::STRAY_TEXT,
            span(r),
            format!(
                "text in tool block is not an entry and was skipped: '{}'",
                preview(text)
            ),
        ));
    }
}

pub(super) fn key_too_long(key_len: usize, max: usize, span: Span, raw: &str) -> Diagnostic {
    Diagnostic::error(
        Code::KEY_TOO_LONG,
        span,
        format!("key of {key_len} bytes exceeds the limit of {max}; the entry is dropped"),
    )
    .with_raw(ByteString::from(raw))
}

/// The entry's value trimmed (a range of `buf`), if it is not blank.
pub(super) fn tool_range(buf: &str, entry: &Entry) -> Option<Range<usize>> {
    let value = &buf[entry.value.clone()];
    let tool = value.trim();
    if tool.is_empty() {
        return None;
    }
    let offset = tool.as_ptr() as usize - value.as_ptr() as usize;
    let start = entry.value.start + offset;
    Some(start..start + tool.len())
}

/// The `CommandSeen` of a command entry with a non-blank value.
pub(super) fn command_seen(buf: &str, entry: &Entry, out: &mut impl FnMut(Event<'_>)) {
    if !entry.place.command {
        return;
    }
    if let Some(tool) = tool_range(buf, entry) {
        out(Event::CommandSeen {
            call: entry.place.call,
            tool: ByteString::from(&buf[tool]),
            span: entry.span,
        });
    }
}

/// The `CommandSeen` of a call started by a parameter key: the tool it repeats, with the
/// span of that tool's command entry.
pub(super) fn repeat_seen(
    buf: &str,
    call: u64,
    repeats: Option<&(Range<usize>, Span)>,
    out: &mut impl FnMut(Event<'_>),
) {
    if let Some((tool, span)) = repeats {
        out(Event::CommandSeen {
            call,
            tool: ByteString::from(&buf[tool.clone()]),
            span: *span,
        });
    }
}

impl BlockBuilder {
    pub(super) fn reset(&mut self, body_start: usize) {
        self.seg_start = body_start;
        self.seg_line_start = true;
        self.pending_key = None;
        self.pending_place = None;
        self.calls.reset();
        self.accepted_at = None;
        self.stray = None;
        self.entries.clear();
        self.diags.clear();
        self.complete = 0;
        self.announced = 0;
        self.open = None;
    }

    /// Reads the text between values up to `end` (the next value's opener or the end
    /// marker): stray text, comments and bare-bracket entries; returns the entry key that
    /// ends it.
    pub(super) fn read_segment(
        &mut self,
        buf: &str,
        end: usize,
        expect_key: bool,
        config: &Config,
        span: impl Fn(Range<usize>) -> Span,
    ) -> Option<Range<usize>> {
        let base = self.seg_start;
        let line_start = self.seg_line_start;
        let BlockBuilder {
            stray,
            diags,
            entries,
            complete,
            calls,
            ..
        } = self;
        let key = parse_segment(&buf[base..end], line_start, expect_key, |item| match item {
            SegmentItem::Stray(r) => {
                let r = base + r.start..base + r.end;
                *stray = Some(match stray.take() {
                    Some(open) => open.start..r.end,
                    None => r,
                });
            }
            SegmentItem::Comment => flush_stray(stray, diags, buf, &span),
            SegmentItem::Bare { key, value, text } => {
                flush_stray(stray, diags, buf, &span);
                *complete += 1;
                let key = base + key.start..base + key.end;
                let value = base + value.start..base + value.end;
                let text = base + text.start..base + text.end;
                let entry_span = span(text.clone());
                if key.len() > config.max_key_len {
                    diags.push(key_too_long(
                        key.len(),
                        config.max_key_len,
                        entry_span,
                        &buf[text],
                    ));
                    return;
                }
                diags.push(Diagnostic::warning(
                    Code::BARE_BRACKETS,
                    entry_span,
                    format!(
                        "value of '{}' is written between bare brackets 「…」 without {VALUE_OPEN}/{VALUE_CLOSE}; it was read as '{}'",
                        &buf[key.clone()],
                        preview(&buf[value.clone()])
                    ),
                ));
                let place = calls.place(buf, key.clone(), entries, config.dialect);
                let entry = Entry {
                    key_span: span(key.clone()),
                    key,
                    value,
                    text,
                    span: entry_span,
                    place,
                };
                calls.entry_closed(buf, &entry);
                entries.push(entry);
            }
        });
        key.map(|k| base + k.start..base + k.end)
    }

    /// A value opener at `marker`: reads the segment before it. With a key before it the
    /// value opens (returns `true`); without one the opener is stray text and opens
    /// nothing (returns `false`; scanning goes on after it).
    pub(super) fn open_value(
        &mut self,
        view: &BlockView<'_>,
        marker: Range<usize>,
        config: &Config,
    ) -> bool {
        let buf = view.buf();
        let key = self.read_segment(buf, marker.start, true, config, |r| view.span(r));
        match key {
            Some(k) => {
                flush_stray(&mut self.stray, &mut self.diags, buf, |r| view.span(r));
                let kept = k.len() <= config.max_key_len;
                self.open =
                    (self.param_events && kept).then(|| OpenValue::new(k.clone(), marker.end));
                self.pending_place = kept.then(|| {
                    self.calls
                        .place(buf, k.clone(), &self.entries, config.dialect)
                });
                self.pending_key = Some(k);
                true
            }
            None => {
                let start = self.stray.as_ref().map_or(marker.start, |s| s.start);
                self.stray = Some(start..marker.end);
                self.pending_key = None;
                self.pending_place = None;
                self.open = None;
                self.seg_start = marker.end;
                self.seg_line_start = false;
                false
            }
        }
    }

    /// Emits the `Param*` events of bare-bracket entries read so far, then the open
    /// value's `ParamStart`; each preceded by the `CommandSeen` of the call it starts, when
    /// it starts one by repeating a key.
    pub(super) fn announce(
        &mut self,
        buf: &str,
        span: impl Fn(Range<usize>) -> Span,
        out: &mut impl FnMut(Event<'_>),
    ) {
        for e in &self.entries[self.announced..] {
            repeat_seen(buf, e.place.call, e.place.repeats.as_ref(), out);
            if !self.param_events {
                command_seen(buf, e, out);
                continue;
            }
            out(Event::ParamStart {
                key: Cow::Borrowed(&buf[e.key.clone()]),
                span: span(e.key.clone()),
            });
            if !e.value.is_empty() {
                out(Event::ParamText {
                    text: Cow::Borrowed(&buf[e.value.clone()]),
                    span: span(e.value.clone()),
                });
            }
            out(Event::ParamEnd { span: e.span });
            command_seen(buf, e, out);
        }
        self.announced = self.entries.len();
        if let Some(place) = &mut self.pending_place
            && let Some(repeats) = place.repeats.take()
        {
            repeat_seen(buf, place.call, Some(&repeats), out);
        }
        if let Some(open) = &mut self.open
            && !open.started
        {
            open.started = true;
            out(Event::ParamStart {
                key: Cow::Borrowed(&buf[open.key.clone()]),
                span: span(open.key.clone()),
            });
        }
    }

    /// Streams the open value up to what `buf[..settled]` decides.
    pub(super) fn progress(
        &mut self,
        view: &BlockView<'_>,
        settled: usize,
        dialect: Dialect,
        out: &mut impl FnMut(Event<'_>),
    ) {
        let call_starts = self
            .pending_place
            .as_ref()
            .is_some_and(|p| p.repeats.is_some());
        if self.open.is_none() && self.announced == self.entries.len() && !call_starts {
            return;
        }
        let buf = view.buf();
        self.announce(buf, |r| view.span(r), out);
        if let Some(open) = &mut self.open {
            let limit = open.limit(buf.as_bytes(), settled, dialect.end_marker().as_bytes());
            if limit > open.streamed {
                let r = open.streamed..limit;
                open.streamed = limit;
                out(Event::ParamText {
                    text: Cow::Borrowed(&buf[r.clone()]),
                    span: view.span(r),
                });
            }
        }
    }

    /// Records an entry when the value closes, and emits the rest of its `Param*` events
    /// and its `CommandSeen`.
    pub(super) fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
        config: &Config,
        out: &mut impl FnMut(Event<'_>),
    ) {
        let buf = view.buf();
        self.announce(buf, |r| view.span(r), out);
        self.seg_start = marker.end;
        self.seg_line_start = false;
        let open = self.open.take();
        let place = self.pending_place.take();
        let Some(key) = self.pending_key.take() else {
            if let Some(s) = &mut self.stray {
                s.end = marker.end;
            }
            return;
        };
        self.complete += 1;
        let span = view.span(key.start..marker.end);
        if key.len() > config.max_key_len {
            self.diags.push(key_too_long(
                key.len(),
                config.max_key_len,
                span,
                &buf[key.start..marker.end],
            ));
            return;
        }
        let value = &buf[content.clone()];
        if region == REGION_VALUE && memmem::find(value.as_bytes(), VALUE_OPEN.as_bytes()).is_some()
        {
            self.diags.push(Diagnostic::warning(
                Code::VALUE_CONTAINS_OPEN_MARKER,
                span,
                format!(
                    "value of '{}' contains {VALUE_OPEN}: a {VALUE_CLOSE} is probably missing before it",
                    &buf[key.clone()]
                ),
            ));
        }
        let entry = Entry {
            key: key.clone(),
            value: content.clone(),
            text: key.start..marker.end,
            span,
            key_span: view.span(key.clone()),
            place: place.unwrap_or_default(),
        };
        self.calls.entry_closed(buf, &entry);
        if let Some(open) = open {
            if content.end > open.streamed {
                let r = open.streamed..content.end;
                out(Event::ParamText {
                    text: Cow::Borrowed(&buf[r.clone()]),
                    span: view.span(r),
                });
            }
            out(Event::ParamEnd { span });
        }
        command_seen(buf, &entry, out);
        self.entries.push(entry);
        self.announced = self.entries.len();
    }

    pub(super) fn finish_block(
        &mut self,
        closed: &ClosedBlock,
        body_end: usize,
        config: &Config,
        out: &mut impl FnMut(Event<'_>),
    ) -> Block {
        let raw = &closed.raw;
        let span = |r: Range<usize>| closed.offsets.span(r);
        self.read_segment(raw, body_end, false, config, span);
        flush_stray(&mut self.stray, &mut self.diags, raw, span);
        self.open = None;
        self.announce(raw, span, out);
        let mut diags = std::mem::take(&mut self.diags);
        let calls = build_calls(
            raw,
            &self.entries,
            config.dialect.rules(),
            self.calls.chained,
            config.max_calls,
            closed.span,
            &mut diags,
        );
        self.entries_read = self.entries.len();
        self.entries.clear();
        self.announced = 0;
        Block {
            span: closed.span,
            calls,
            diagnostics: diags,
            raw: raw.clone(),
        }
    }
}
