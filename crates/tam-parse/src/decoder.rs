//! The streaming TAM decoder.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytestring::ByteString;
use memchr::memmem;

use crate::block::{Block, CallRules, Entry, Place, build_calls};
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::entry::{
    CanonicalKey, SegmentItem, parse_segment, same_canonical, written_command_number,
};
use crate::scan::{
    BlockEnd, BlockSyntax, BlockView, ClosedBlock, Grammar, Pattern, Quote, Region, ScanHandler,
    Scanner,
};

/// Value open marker.
pub const VALUE_OPEN: &str = "「始」";
/// Value close marker.
pub const VALUE_CLOSE: &str = "「末」";
/// Open marker of the ESCAPE value form, inside which `「末」` is content.
pub const ESCAPE_OPEN: &str = "「始ESCAPE」";
/// Close marker of the ESCAPE value form.
pub const ESCAPE_CLOSE: &str = "「末ESCAPE」";

/// Region indices in the TAM block syntax.
const REGION_VALUE: usize = 0;
const REGION_ESCAPE: usize = 1;

/// Which markers delimit blocks and how calls are named.
///
/// With feature `serde`: `"tam"` or `"vcp"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Dialect {
    /// `<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`, tools named by `command` / `commandN`.
    #[default]
    Tam,
    /// VCPToolBox style: `<<<[TOOL_REQUEST]>>>` … `<<<[END_TOOL_REQUEST]>>>`, one call per
    /// block named by `tool_name`; every other key (`command`, `commandN` included) is a
    /// parameter.
    Vcp,
}

impl Dialect {
    /// The start marker.
    pub const fn start_marker(self) -> &'static str {
        match self {
            Dialect::Tam => "<|[REQUEST_TOOL]|>",
            Dialect::Vcp => "<<<[TOOL_REQUEST]>>>",
        }
    }

    /// The end marker.
    pub const fn end_marker(self) -> &'static str {
        match self {
            Dialect::Tam => "<|[END_TOOL]|>",
            Dialect::Vcp => "<<<[END_TOOL_REQUEST]>>>",
        }
    }

    /// The block syntax for the shared scanner: values (plain and ESCAPE) are regions in
    /// which markers are content; `#` comment lines are regions in which the block markers
    /// still act but values do not open.
    pub fn block_syntax(self) -> BlockSyntax {
        BlockSyntax {
            start: Pattern::exact(self.start_marker()),
            end: Pattern::exact(self.end_marker()),
            regions: vec![
                Region {
                    open: Pattern::exact(VALUE_OPEN),
                    close: Pattern::exact(VALUE_CLOSE),
                    block_markers_inside: false,
                },
                Region {
                    open: Pattern::exact(ESCAPE_OPEN),
                    close: Pattern::exact(ESCAPE_CLOSE),
                    block_markers_inside: false,
                },
                Region {
                    open: Pattern::exact("#").at_line_start(),
                    close: Pattern::exact("\n"),
                    block_markers_inside: true,
                },
            ],
            restart_on_start: true,
        }
    }

    /// The compiled grammar of this dialect alone (built once per process).
    pub fn grammar(self) -> Arc<Grammar> {
        static TAM: OnceLock<Arc<Grammar>> = OnceLock::new();
        static VCP: OnceLock<Arc<Grammar>> = OnceLock::new();
        let cell = match self {
            Dialect::Tam => &TAM,
            Dialect::Vcp => &VCP,
        };
        Arc::clone(cell.get_or_init(|| {
            Grammar::new(vec![self.block_syntax()]).expect("the built-in grammar is valid")
        }))
    }

    fn rules(self) -> CallRules {
        match self {
            Dialect::Tam => CallRules::Tam,
            Dialect::Vcp => CallRules::Vcp,
        }
    }
}

/// Decoder settings. Every limit bounds memory or work per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Marker dialect. Default: [`Dialect::Tam`].
    pub dialect: Dialect,
    /// Largest block kept, in bytes, markers included. A larger block gets error
    /// `block_too_large`; its bytes are dropped up to its end marker, and the decoder holds
    /// at most this plus 64 KiB meanwhile. Default: 1 MiB.
    pub max_block_bytes: usize,
    /// Most calls per block; later calls are dropped with error `too_many_calls`.
    /// Default: 64.
    pub max_calls: usize,
    /// Longest key, in bytes; an entry with a longer key is dropped with error
    /// `key_too_long`. Default: 128.
    pub max_key_len: usize,
    /// Stream arguments: emit [`Event::ParamStart`], [`Event::ParamText`] and
    /// [`Event::ParamEnd`] while values are written. Default: `false` (opt-in, so that
    /// consumers that do not know these events yet — the mixed decoder's event type,
    /// tool-dispatch — see none).
    pub param_events: bool,
    /// Read `<think>` … `</think>` and `<thinking>` … `</thinking>` sections of the prose
    /// as reasoning ([`Event::ReasoningStart`], [`Event::Reasoning`],
    /// [`Event::ReasoningEnd`]): never decoded into calls (SPEC §2.2). The open tag counts
    /// where it is the first non-blank text of a prose line outside a code fence; the
    /// section runs to its matching close tag, or to the end of the stream. Default:
    /// `false` (opt-in: off, the tags are prose). action-xml's front door turns it on.
    pub reasoning_tags: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dialect: Dialect::Tam,
            max_block_bytes: 1 << 20,
            max_calls: 64,
            max_key_len: 128,
            param_events: false,
            reasoning_tags: false,
        }
    }
}

impl Config {
    /// The default settings for `dialect`.
    pub fn with_dialect(dialect: Dialect) -> Self {
        Config {
            dialect,
            ..Config::default()
        }
    }

    /// These settings with argument streaming ([`Config::param_events`]) on or off.
    pub fn with_param_events(mut self, on: bool) -> Self {
        self.param_events = on;
        self
    }

    /// These settings with reasoning sections ([`Config::reasoning_tags`]) on or off.
    pub fn with_reasoning_tags(mut self, on: bool) -> Self {
        self.reasoning_tags = on;
        self
    }
}

/// What the decoder reports, in stream order.
///
/// Text and the argument-streaming events borrow from the delta just fed or from the
/// decoder's buffers; everything else owns its data. [`Event::into_owned`] detaches an
/// event from both.
///
/// `BlockStart`, `ParamStart`/`ParamText`/`ParamEnd` and `CommandSeen` are early news for
/// UIs; the [`Event::Block`] is authoritative. A block that never closes yields no block:
/// what was streamed of it is then superseded by its text (or its `unterminated_block`
/// diagnostic).
///
/// With feature `serde`: an object tagged by `"type"` — the variant's name in snake_case
/// (`text`, `block_start`, `param_start`, `param_text`, `param_end`, `command_seen`,
/// `block`, `diagnostic`, `reasoning_start`, `reasoning`, `reasoning_end`) — with the variant's fields, or for `Block` and `Diagnostic` the
/// fields of the [`Block`] or [`Diagnostic`]: `{"type":"text","text":"Hi","span":[0,2]}`.
/// Deserializing gives owned text and keys (`Cow::Owned`), so `Event<'static>` is
/// `DeserializeOwned` (`serde_json::from_reader`, `from_value`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "type", rename_all = "snake_case")
)]
pub enum Event<'a> {
    /// Prose outside blocks. Adjacent text events may be split anywhere.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// Its place in the stream.
        span: Span,
    },
    /// A start marker: a block is open. `span` covers the marker.
    BlockStart {
        /// The start marker's span.
        span: Span,
    },
    /// An entry's value begins (its key and `「始」` were read); `key` is as written.
    ParamStart {
        /// The key, as written (chain suffix not stripped).
        key: Cow<'a, str>,
        /// The key's span.
        span: Span,
    },
    /// A piece of the value being written, borrowed from the block buffer. Pieces may be
    /// split anywhere; consecutive pieces are adjacent in the stream, and the pieces of one
    /// entry concatenated are its value exactly.
    ParamText {
        /// The piece.
        text: Cow<'a, str>,
        /// Its span.
        span: Span,
    },
    /// The value closed; `span` is the whole entry (key to close marker), which is
    /// [`Param::span`](crate::Param::span) of the parameter it becomes.
    ParamEnd {
        /// The entry's span.
        span: Span,
    },
    /// A command value just closed (for UIs; the [`Event::Block`] is authoritative). This
    /// is the "call begins" event: the tool id is known.
    ///
    /// In a block without chain numbers, a key that starts a new call (SPEC §2.4) makes
    /// one too: a second `command` when its value closes, a repeated parameter key right
    /// after the key is read, before that value's [`Event::ParamStart`] (`tool` and `span`
    /// are then those of the call it repeats). The `Param*` events of a value belong to the
    /// call of the last `CommandSeen` before them (to call 0 before any), except a command
    /// entry's own, which come just before its `CommandSeen`.
    CommandSeen {
        /// The call's number: [`Call::index`](crate::Call::index) (chain number; 0 for VCP;
        /// in a block without chain numbers, the call's place in the block, from 0).
        call: u64,
        /// The tool id, trimmed.
        tool: ByteString,
        /// The span of the command entry that names the tool:
        /// [`Call::span`](crate::Call::span).
        span: Span,
    },
    /// A closed block, emitted by the feed that delivered the end marker's last byte.
    Block(Block),
    /// A reasoning section opens ([`Config::reasoning_tags`]): `span` covers its open tag
    /// (`<think>`, `<thinking>`).
    ReasoningStart {
        /// The open tag's span.
        span: Span,
    },
    /// Reasoning: the content of a `<think>` section, tags excluded, as early as possible.
    /// Adjacent pieces may be split anywhere. Never decoded into calls.
    Reasoning {
        /// The text.
        text: Cow<'a, str>,
        /// Its place in the stream.
        span: Span,
    },
    /// The reasoning section's close tag (a section the stream ends in gets none).
    ReasoningEnd {
        /// The close tag's span.
        span: Span,
    },
    /// A problem outside any block: an unterminated block (with its raw text), a start
    /// marker read as prose (`marker_in_prose`, a warning next to the text it is about), or
    /// invalid UTF-8.
    Diagnostic(Diagnostic),
}

impl Event<'_> {
    /// The event with no borrow left.
    pub fn into_owned(self) -> Event<'static> {
        match self {
            Event::Text { text, span } => Event::Text {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::BlockStart { span } => Event::BlockStart { span },
            Event::ParamStart { key, span } => Event::ParamStart {
                key: Cow::Owned(key.into_owned()),
                span,
            },
            Event::ParamText { text, span } => Event::ParamText {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::ParamEnd { span } => Event::ParamEnd { span },
            Event::CommandSeen { call, tool, span } => Event::CommandSeen { call, tool, span },
            Event::Block(b) => Event::Block(b),
            Event::Diagnostic(d) => Event::Diagnostic(d),
            Event::ReasoningStart { span } => Event::ReasoningStart { span },
            Event::Reasoning { text, span } => Event::Reasoning {
                text: Cow::Owned(text.into_owned()),
                span,
            },
            Event::ReasoningEnd { span } => Event::ReasoningEnd { span },
        }
    }

    /// The span of the event.
    pub fn span(&self) -> Span {
        match self {
            Event::Text { span, .. }
            | Event::BlockStart { span }
            | Event::ParamStart { span, .. }
            | Event::ParamText { span, .. }
            | Event::ParamEnd { span }
            | Event::CommandSeen { span, .. }
            | Event::ReasoningStart { span }
            | Event::Reasoning { span, .. }
            | Event::ReasoningEnd { span } => *span,
            Event::Block(b) => b.span,
            Event::Diagnostic(d) => d.span,
        }
    }
}

/// Argument streaming of the keyed value being read.
#[derive(Debug, Clone)]
struct OpenValue {
    key: Range<usize>,
    /// `ParamStart` was emitted.
    started: bool,
    /// `buf[..streamed]` of the value was emitted as `ParamText`.
    streamed: usize,
    /// Where the next search for the block's end marker inside the value starts.
    search_from: usize,
    /// `buf[..checked]` was looked at for blanks; `nonblank_end` is the end of its last
    /// non-blank byte (or the content start).
    checked: usize,
    nonblank_end: usize,
    /// The value holds the block's end marker: streaming stops here (the end-of-stream
    /// recovery may end the value before that marker).
    frozen: Option<usize>,
}

fn is_recovery_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl OpenValue {
    fn new(key: Range<usize>, content_start: usize) -> Self {
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
    /// recovery of SPEC §2.3 could still cut off — from the first end marker inside the
    /// value on, a tail that may begin an end marker, and the blanks before either.
    /// Each byte is looked at a bounded number of times over the value's life.
    fn limit(&mut self, buf: &[u8], settled: usize, end_marker: &[u8]) -> usize {
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

/// Decides which call each entry of a block goes to as its key is read (SPEC §2.4), so that
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
struct CallTracker {
    /// A `command<digits>` key was read.
    chained: bool,
    /// A command was read.
    commanded: bool,
    /// The current call.
    call: u64,
    /// Index in the block's entries of the current call's first entry.
    first: usize,
    /// Parameters in the current call.
    params: usize,
    /// The current call's tool (trimmed, a range of the block buffer; `None` when blank)
    /// and command entry, once its command value closed.
    tool: Option<(Range<usize>, Span)>,
    /// Hash of a parameter key's canonical form → the last entry with that hash. Only
    /// entries from `first` on are in the current call; older ones are ignored, so the map
    /// is not cleared per call.
    keys: HashMap<u64, usize>,
}

impl CallTracker {
    fn reset(&mut self) {
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

    fn start_call(&mut self, first: usize) {
        self.call += 1;
        self.first = first;
    }

    /// The place of the entry whose key is `buf[key]`, the next one after `entries`.
    fn place(
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

    fn place_parameter(
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
    fn entry_closed(&mut self, buf: &str, entry: &Entry) {
        if entry.place.command && !self.chained && entry.place.call == self.call {
            self.tool = tool_range(buf, entry).map(|r| (r, entry.span));
        }
    }
}

/// Builds one block from the scanner's region events (the TAM protocol layer).
#[derive(Debug, Default)]
struct BlockBuilder {
    /// Where the text between values starts, in the block buffer.
    seg_start: usize,
    seg_line_start: bool,
    /// The key of the value being read, if it had one.
    pending_key: Option<Range<usize>>,
    /// Its place (`None` for a key over the length limit).
    pending_place: Option<Place>,
    /// Which call each entry goes to.
    calls: CallTracker,
    /// The opener at this offset was accepted by `accept_region` (its segment is read).
    accepted_at: Option<usize>,
    /// An open run of stray text (buffer range), reported when an entry, comment or the
    /// block end follows.
    stray: Option<Range<usize>>,
    entries: Vec<Entry>,
    diags: Vec<Diagnostic>,
    /// Complete entries read (kept or dropped for a long key). A block that never closes
    /// is a cut call when this is non-zero, prose otherwise.
    complete: usize,
    /// `entries[..announced]` had their `Param*` events emitted.
    announced: usize,
    /// Streaming of the keyed value being read.
    open: Option<OpenValue>,
    /// Emit `Param*` events.
    param_events: bool,
}

fn preview(text: &str) -> String {
    const MAX: usize = 40;
    let t = text.trim();
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

fn flush_stray(
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

fn key_too_long(key_len: usize, max: usize, span: Span, raw: &str) -> Diagnostic {
    Diagnostic::error(
        Code::KEY_TOO_LONG,
        span,
        format!("key of {key_len} bytes exceeds the limit of {max}; the entry is dropped"),
    )
    .with_raw(ByteString::from(raw))
}

/// The entry's value trimmed (a range of `buf`), if it is not blank.
fn tool_range(buf: &str, entry: &Entry) -> Option<Range<usize>> {
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
fn command_seen(buf: &str, entry: &Entry, out: &mut impl FnMut(Event<'_>)) {
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
fn repeat_seen(
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
    fn reset(&mut self, body_start: usize) {
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
    fn read_segment(
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
    fn open_value(&mut self, view: &BlockView<'_>, marker: Range<usize>, config: &Config) -> bool {
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
    fn announce(
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
    fn progress(
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
    fn region_closed(
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

    fn finish_block(
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

/// The TAM protocol layer on top of the [scanner](crate::scan): turns one block's scanner
/// callbacks into [`Event`]s.
///
/// [`Decoder`] is a scanner plus one `BlockParser`. Use it directly to decode TAM blocks in
/// a scanner whose [`Grammar`] also has other syntaxes (TAM and ACTION XML in one stream):
/// forward the callbacks of TAM-kind blocks (made with [`Dialect::block_syntax`]) to it —
/// all of them for the full protocol: without [`BlockParser::accept_region`] a `「始」`
/// with no key before it still opens a value (read as stray text), and without
/// [`BlockParser::block_progress`] values are not streamed piece by piece.
#[derive(Debug)]
pub struct BlockParser {
    /// Allocated when the first block opens, then reused: an idle decoder stays small.
    builder: Option<Box<BlockBuilder>>,
    config: Config,
}

impl BlockParser {
    /// A parser with `config` (its `dialect` must match the block syntax scanned).
    pub fn new(config: Config) -> Self {
        BlockParser {
            builder: None,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn builder(&mut self) -> &mut BlockBuilder {
        let on = self.config.param_events;
        self.builder.get_or_insert_with(|| {
            Box::new(BlockBuilder {
                param_events: on,
                ..BlockBuilder::default()
            })
        })
    }

    /// [`ScanHandler::quoted_marker`]: warning `marker_in_prose` (the marker's text follows
    /// as [`Event::Text`]).
    pub fn quoted_marker(&mut self, marker: Span, quote: Quote, out: &mut impl FnMut(Event<'_>)) {
        out(Event::Diagnostic(quoted_marker(
            self.config.dialect.start_marker(),
            marker,
            quote,
        )));
    }

    /// [`ScanHandler::block_opened`]: emits [`Event::BlockStart`].
    pub fn block_opened(&mut self, marker: Span, out: &mut impl FnMut(Event<'_>)) {
        self.builder().reset(marker.len());
        out(Event::BlockStart { span: marker });
    }

    /// [`ScanHandler::accept_region`]: a value opener with no key before it opens no value
    /// (it is stray text, so an end marker after it still closes the block).
    pub fn accept_region(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        marker: Range<usize>,
    ) -> bool {
        if region != REGION_VALUE && region != REGION_ESCAPE {
            return true;
        }
        let config = self.config;
        let b = self.builder();
        let accepted = b.open_value(view, marker.clone(), &config);
        b.accepted_at = accepted.then_some(marker.start);
        accepted
    }

    /// [`ScanHandler::region_opened`].
    pub fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        if region != REGION_VALUE && region != REGION_ESCAPE {
            return;
        }
        let config = self.config;
        let b = self.builder();
        if b.accepted_at.take() == Some(marker.start) {
            return;
        }
        // Not asked through `accept_region`: a value without a key is stray text, up to
        // and including the value.
        if !b.open_value(view, marker.clone(), &config) {
            b.seg_start = marker.start;
        }
    }

    /// [`ScanHandler::block_progress`]: streams the open value ([`Event::ParamStart`],
    /// [`Event::ParamText`]).
    pub fn block_progress(
        &mut self,
        view: &BlockView<'_>,
        settled: usize,
        out: &mut impl FnMut(Event<'_>),
    ) {
        let dialect = self.config.dialect;
        if let Some(b) = self.builder.as_deref_mut() {
            b.progress(view, settled, dialect, out);
        }
    }

    /// [`ScanHandler::region_closed`]: may emit [`Event::ParamText`], [`Event::ParamEnd`]
    /// and [`Event::CommandSeen`].
    pub fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
        out: &mut impl FnMut(Event<'_>),
    ) {
        if region != REGION_VALUE && region != REGION_ESCAPE {
            return;
        }
        let config = self.config;
        self.builder()
            .region_closed(view, region, content, marker, &config, out);
    }

    /// [`ScanHandler::block_closed`]: emits the block. A block that never closed yields no
    /// call (SPEC §2.3): without a complete entry its bytes come out as text with warning
    /// `marker_in_prose`, with one it is error `unterminated_block`. At the end of a
    /// stream that ended normally ([`BlockEnd::Eof`]) the recovery of SPEC §2.3 comes
    /// first; never on a cut stream ([`BlockEnd::Cut`]).
    pub fn block_closed(&mut self, closed: ClosedBlock, out: &mut impl FnMut(Event<'_>)) {
        match closed.end {
            BlockEnd::Marker if closed.dropped > 0 => {
                self.builder().reset(0);
                out(Event::Block(fenced(
                    &closed,
                    Block {
                        span: closed.span,
                        calls: Vec::new(),
                        diagnostics: vec![too_large(&closed, &self.config)],
                        raw: ByteString::new(),
                    },
                )));
            }
            BlockEnd::Marker => {
                let config = self.config;
                let block = self
                    .builder()
                    .finish_block(&closed, closed.body.end, &config, out);
                out(Event::Block(fenced(&closed, block)));
            }
            BlockEnd::Eof => {
                if !self.recover_at_eof(&closed, out) {
                    self.never_closed(closed, "the stream ended inside it", out);
                }
            }
            BlockEnd::Cut => self.never_closed(closed, "the stream was cut inside it", out),
            BlockEnd::Restart => self.never_closed(
                closed,
                "a new start marker began before this block's end marker",
                out,
            ),
        }
    }

    /// [`ScanHandler::invalid_utf8`]: inside a block the diagnostic joins the block's,
    /// outside it is emitted.
    pub fn invalid_utf8(
        &mut self,
        bytes: &[u8],
        span: Span,
        in_block: bool,
        out: &mut impl FnMut(Event<'_>),
    ) {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let diag = Diagnostic::error(
            Code::INVALID_UTF8,
            span,
            format!("invalid UTF-8 bytes [{}]", hex.join(" ")),
        );
        if in_block {
            self.builder().diags.push(diag);
        } else {
            out(Event::Diagnostic(diag));
        }
    }
}

/// Warning `marker_in_prose` for a start marker the model quoted (SPEC §2.2).
pub(crate) fn quoted_marker(marker_text: &str, span: Span, quote: Quote) -> Diagnostic {
    let where_ = match quote {
        Quote::QuoteLine => "on a line quoted with '>'",
        _ => "inside inline code",
    };
    Diagnostic::warning(
        Code::MARKER_IN_PROSE,
        span,
        format!("{marker_text} {where_} is quoted, not a tool block: its text is prose"),
    )
}

/// `block` with warning `fenced_block` first when it was written inside a code fence.
fn fenced(closed: &ClosedBlock, mut block: Block) -> Block {
    if let Some(fence) = closed.fence {
        block.diagnostics.insert(
            0,
            Diagnostic::warning(
                Code::FENCED_BLOCK,
                fence,
                "tool block inside a fenced code block: read as a call",
            ),
        );
    }
    block
}

fn too_large(closed: &ClosedBlock, config: &Config) -> Diagnostic {
    Diagnostic::error(
        Code::BLOCK_TOO_LARGE,
        closed.span,
        format!(
            "tool block of {} bytes exceeds the limit of {}; its content was dropped",
            closed.span.len(),
            config.max_block_bytes
        ),
    )
}

fn unterminated(closed: &ClosedBlock, why: &str) -> Diagnostic {
    let d = Diagnostic::error(
        Code::UNTERMINATED_BLOCK,
        closed.span,
        if closed.dropped > 0 {
            format!(
                "tool block was never closed ({why}); its {} bytes exceeded the size limit and were dropped",
                closed.span.len()
            )
        } else {
            format!("tool block was never closed ({why})")
        },
    );
    if closed.dropped > 0 {
        d
    } else {
        d.with_raw(closed.raw.clone())
    }
}

impl BlockParser {
    /// A block that never closed: prose when it holds no complete entry, else error
    /// `unterminated_block`. Either way no call.
    fn never_closed(&mut self, closed: ClosedBlock, why: &str, out: &mut impl FnMut(Event<'_>)) {
        let config = self.config;
        let b = self.builder();
        if closed.dropped == 0 {
            let in_value = matches!(closed.open_region, Some((REGION_VALUE | REGION_ESCAPE, _)));
            if !in_value && b.seg_start <= closed.body.end {
                // The text after the last value may hold bare-bracket entries.
                b.read_segment(&closed.raw, closed.body.end, false, &config, |r| {
                    closed.offsets.span(r)
                });
            }
            if b.complete == 0 {
                let diags = std::mem::take(&mut b.diags);
                b.reset(0);
                as_prose(&closed, &diags, config.dialect, out);
                return;
            }
        }
        b.reset(0);
        out(Event::Diagnostic(unterminated(&closed, why)));
    }

    /// End of stream inside a value that holds the end marker: the recovery of SPEC §2.3.
    /// Returns `false` when it does not apply.
    fn recover_at_eof(&mut self, closed: &ClosedBlock, out: &mut impl FnMut(Event<'_>)) -> bool {
        let end_marker = self.config.dialect.end_marker();
        let recovered = match closed.open_region {
            Some((region, content_start))
                if closed.dropped == 0 && (region == REGION_VALUE || region == REGION_ESCAPE) =>
            {
                memmem::rfind(
                    &closed.raw.as_bytes()[content_start..],
                    end_marker.as_bytes(),
                )
                .map(|m| (content_start, content_start + m))
            }
            _ => None,
        };
        let Some((content_start, marker_at)) = recovered else {
            return false;
        };
        let config = self.config;
        let raw = &closed.raw;
        let value_end = content_start
            + raw[content_start..marker_at]
                .trim_end_matches([' ', '\t', '\r', '\n'])
                .len();
        let block_end = marker_at + end_marker.len();
        let view = BlockView::new(raw, &closed.offsets, closed.kind);
        let region = closed.open_region.map_or(REGION_VALUE, |(r, _)| r);
        // Close the value as if its close marker stood right after it.
        let b = self.builder();
        b.region_closed(
            &view,
            region,
            content_start..value_end,
            value_end..value_end,
            &config,
            out,
        );
        b.diags.push(Diagnostic::warning(
            Code::MISSING_VALUE_CLOSE,
            closed.offsets.span(content_start..marker_at),
            format!(
                "the stream ended inside a value; it was closed before the last {end_marker} in it"
            ),
        ));
        let block_span = Span::new(closed.span.start, closed.offsets.stream(block_end));
        let head = ClosedBlock {
            span: block_span,
            raw: raw.slice_ref(&raw[..block_end]),
            body: closed.body.start..marker_at,
            ..closed.clone()
        };
        let block = b.finish_block(&head, value_end, &config, out);
        out(Event::Block(fenced(closed, block)));
        if block_end < raw.len() {
            out(Event::Text {
                text: Cow::Borrowed(&raw[block_end..]),
                span: Span::new(block_span.end, closed.span.end),
            });
        }
        true
    }
}

/// A block that never closed and holds no complete entry, given back as prose: its bytes
/// as text in stream order (with the `invalid_utf8` diagnostics of bytes that were not
/// UTF-8 between the pieces, where those bytes are), then warning `marker_in_prose`.
fn as_prose(
    closed: &ClosedBlock,
    diags: &[Diagnostic],
    dialect: Dialect,
    out: &mut impl FnMut(Event<'_>),
) {
    let raw = &*closed.raw;
    let mut at_buf = 0;
    let mut at_stream = closed.span.start;
    for d in diags.iter().filter(|d| d.code == Code::INVALID_UTF8) {
        let b = closed.offsets.buffer(d.span.start).min(raw.len());
        if b > at_buf && raw.is_char_boundary(b) {
            out(Event::Text {
                text: Cow::Borrowed(&raw[at_buf..b]),
                span: Span::new(at_stream, d.span.start),
            });
        }
        out(Event::Diagnostic(d.clone()));
        at_buf = (b + '\u{FFFD}'.len_utf8()).min(raw.len());
        at_stream = d.span.end;
    }
    if at_buf < raw.len() {
        out(Event::Text {
            text: Cow::Borrowed(&raw[at_buf..]),
            span: Span::new(at_stream, closed.span.end),
        });
    }
    let marker = closed.offsets.span(0..closed.body.start);
    out(Event::Diagnostic(Diagnostic::warning(
        Code::MARKER_IN_PROSE,
        marker,
        format!(
            "{} began no tool block: the block was never closed and holds no complete entry, so its text is prose",
            dialect.start_marker()
        ),
    )));
}

/// Connects the scanner to a [`BlockParser`] and to the caller's event callback.
struct Sink<'s, F> {
    parser: &'s mut BlockParser,
    out: &'s mut F,
}

impl<F: FnMut(Event<'_>)> ScanHandler for Sink<'_, F> {
    fn text(&mut self, text: &str, span: Span) {
        (self.out)(Event::Text {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn block_opened(&mut self, _kind: usize, marker: Span) {
        self.parser.block_opened(marker, self.out);
    }

    fn quoted_marker(&mut self, _kind: usize, marker: Span, quote: Quote) {
        self.parser.quoted_marker(marker, quote, self.out);
    }

    fn reasoning_start(&mut self, _tag: &str, span: Span) {
        (self.out)(Event::ReasoningStart { span });
    }

    fn reasoning(&mut self, text: &str, span: Span) {
        (self.out)(Event::Reasoning {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn reasoning_end(&mut self, _tag: &str, span: Span) {
        (self.out)(Event::ReasoningEnd { span });
    }

    fn accept_region(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) -> bool {
        self.parser.accept_region(view, region, marker)
    }

    fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        self.parser.region_opened(view, region, marker);
    }

    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        self.parser.block_progress(view, settled, self.out);
    }

    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        self.parser
            .region_closed(view, region, content, marker, self.out);
    }

    fn block_closed(&mut self, closed: ClosedBlock) {
        self.parser.block_closed(closed, self.out);
    }

    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        self.parser.invalid_utf8(bytes, span, in_block, self.out);
    }
}

/// The streaming TAM decoder. See the [crate documentation](crate).
#[derive(Debug)]
pub struct Decoder {
    scanner: Scanner,
    parser: BlockParser,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Config::default())
    }
}

impl Decoder {
    /// A decoder with `config`.
    pub fn new(config: Config) -> Self {
        Decoder {
            scanner: Scanner::new(config.dialect.grammar(), config.max_block_bytes)
                .with_reasoning(config.reasoning_tags),
            parser: BlockParser::new(config),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.parser.config
    }

    /// Stream offset of the next byte to be fed.
    pub fn position(&self) -> usize {
        self.scanner.position()
    }

    /// Bytes held: prose held back (fewer than the start marker's length) or the open
    /// block.
    pub fn buffered(&self) -> usize {
        self.scanner.buffered()
    }

    /// Feeds one text delta; events go to `on_event` as soon as they are decided.
    pub fn feed(&mut self, delta: &str, mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.feed(delta, &mut sink);
    }

    /// Feeds one byte delta. A UTF-8 character may be split across byte deltas; invalid
    /// UTF-8 gets an `invalid_utf8` diagnostic (inside a block, U+FFFD stands in the value).
    pub fn feed_bytes(&mut self, delta: &[u8], mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.feed_bytes(delta, &mut sink);
    }

    /// Ends the stream: emits held-back prose and reports a block left open.
    pub fn finish(mut self, on_event: impl FnMut(Event<'_>)) {
        self.finish_in_place(on_event);
    }

    /// Like [`Decoder::finish`], leaving the decoder ready for a new stream.
    pub fn finish_in_place(&mut self, mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.finish(&mut sink);
    }

    /// Ends a stream that was cut (`finish_reason: "length"`, a transport error): like
    /// [`Decoder::finish`], but no end-of-stream repair applies to a block open at the cut
    /// (SPEC §5): it yields no call.
    pub fn finish_cut(mut self, on_event: impl FnMut(Event<'_>)) {
        self.finish_cut_in_place(on_event);
    }

    /// Like [`Decoder::finish_cut`], leaving the decoder ready for a new stream.
    pub fn finish_cut_in_place(&mut self, mut on_event: impl FnMut(Event<'_>)) {
        let mut sink = Sink {
            parser: &mut self.parser,
            out: &mut on_event,
        };
        self.scanner.finish_cut(&mut sink);
    }
}

/// Decodes a whole text at once: the events of feeding it as one delta, then finishing.
pub fn decode(text: &str, config: Config) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut decoder = Decoder::new(config);
    decoder.feed(text, |e| events.push(e.into_owned()));
    decoder.finish(|e| events.push(e.into_owned()));
    events
}
