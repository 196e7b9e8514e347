//! The streaming TAM decoder.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytestring::ByteString;
use memchr::memmem;

use crate::block::{Block, CallRules, Entry, build_calls};
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::entry::{SegmentItem, canonical_key, command_number, parse_segment};
use crate::scan::{
    BlockEnd, BlockSyntax, BlockView, ClosedBlock, Grammar, Pattern, Region, ScanHandler, Scanner,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dialect: Dialect::Tam,
            max_block_bytes: 1 << 20,
            max_calls: 64,
            max_key_len: 128,
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
}

/// What the decoder reports, in stream order.
///
/// Text borrows from the delta just fed (or from the decoder, for prose it held back);
/// everything else owns its data. [`Event::into_owned`] detaches an event from both.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// A command value just closed (for UIs; the [`Event::Block`] is authoritative).
    CommandSeen {
        /// Chain number (0 for `command` and for VCP).
        call: u64,
        /// The tool id, trimmed.
        tool: ByteString,
        /// The command entry's span.
        span: Span,
    },
    /// A closed block, emitted by the feed that delivered the end marker's last byte.
    Block(Block),
    /// A problem outside any block: an unterminated block (with its raw text) or invalid
    /// UTF-8.
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
            Event::CommandSeen { call, tool, span } => Event::CommandSeen { call, tool, span },
            Event::Block(b) => Event::Block(b),
            Event::Diagnostic(d) => Event::Diagnostic(d),
        }
    }

    /// The span of the event.
    pub fn span(&self) -> Span {
        match self {
            Event::Text { span, .. }
            | Event::BlockStart { span }
            | Event::CommandSeen { span, .. } => *span,
            Event::Block(b) => b.span,
            Event::Diagnostic(d) => d.span,
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
    /// An open run of stray text (buffer range), reported when an entry, comment or the
    /// block end follows.
    stray: Option<Range<usize>>,
    entries: Vec<Entry>,
    diags: Vec<Diagnostic>,
}

fn preview(text: &str) -> String {
    const MAX: usize = 40;
    let t = text.trim();
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

impl BlockBuilder {
    fn reset(&mut self, body_start: usize) {
        self.seg_start = body_start;
        self.seg_line_start = true;
        self.pending_key = None;
        self.stray = None;
        self.entries.clear();
        self.diags.clear();
    }

    fn flush_stray(&mut self, buf: &str, span: impl Fn(Range<usize>) -> Span) {
        if let Some(r) = self.stray.take() {
            let text = &buf[r.clone()];
            self.diags.push(Diagnostic::warning(
                Code::STRAY_TEXT,
                span(r),
                format!(
                    "text in tool block is not an entry and was skipped: '{}'",
                    preview(text)
                ),
            ));
        }
    }

    /// Reads the text between values up to `end` (the next value's opener or the end
    /// marker); returns the entry key that ends it.
    fn read_segment(
        &mut self,
        buf: &str,
        end: usize,
        expect_key: bool,
        span: impl Fn(Range<usize>) -> Span,
    ) -> Option<Range<usize>> {
        let base = self.seg_start;
        let mut stray = self.stray.take();
        let mut runs: Vec<Range<usize>> = Vec::new();
        let key = parse_segment(
            &buf[base..end],
            self.seg_line_start,
            expect_key,
            |item| match item {
                SegmentItem::Stray(r) => {
                    let r = base + r.start..base + r.end;
                    stray = Some(match stray.take() {
                        Some(open) => open.start..r.end,
                        None => r,
                    });
                }
                SegmentItem::Comment => {
                    if let Some(open) = stray.take() {
                        runs.push(open);
                    }
                }
            },
        );
        for r in runs {
            self.stray = Some(r);
            self.flush_stray(buf, &span);
        }
        self.stray = stray;
        key.map(|k| base + k.start..base + k.end)
    }

    fn region_opened(&mut self, view: &BlockView<'_>, marker: Range<usize>) {
        let buf = view.buf();
        let key = self.read_segment(buf, marker.start, true, |r| view.span(r));
        match key {
            Some(k) => {
                self.flush_stray(buf, |r| view.span(r));
                self.pending_key = Some(k);
            }
            None => {
                // A value without a key: stray text, up to and including the value.
                let start = self.stray.as_ref().map_or(marker.start, |s| s.start);
                self.stray = Some(start..marker.end);
                self.pending_key = None;
            }
        }
    }

    /// Records an entry; returns the command it names, if it is one.
    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
        config: &Config,
    ) -> Option<(u64, Range<usize>, Span)> {
        let buf = view.buf();
        self.seg_start = marker.end;
        self.seg_line_start = false;
        let Some(key) = self.pending_key.take() else {
            if let Some(s) = &mut self.stray {
                s.end = marker.end;
            }
            return None;
        };
        let span = view.span(key.start..marker.end);
        if key.len() > config.max_key_len {
            self.diags.push(
                Diagnostic::error(
                    Code::KEY_TOO_LONG,
                    span,
                    format!(
                        "key of {} bytes exceeds the limit of {}; the entry is dropped",
                        key.len(),
                        config.max_key_len
                    ),
                )
                .with_raw(ByteString::from(&buf[key.start..marker.end])),
            );
            return None;
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
        self.entries.push(Entry {
            key: key.clone(),
            value: content.clone(),
            text: key.start..marker.end,
            span,
        });
        let canonical = canonical_key(&buf[key]);
        let call = match config.dialect {
            Dialect::Tam => command_number(&canonical).map(|n| n.unwrap_or(0)),
            Dialect::Vcp => (canonical == "toolname").then_some(0),
        }?;
        let tool = value.trim();
        if tool.is_empty() {
            return None;
        }
        let offset = tool.as_ptr() as usize - value.as_ptr() as usize;
        let start = content.start + offset;
        Some((call, start..start + tool.len(), span))
    }

    fn finish_block(&mut self, closed: &ClosedBlock, body_end: usize, config: &Config) -> Block {
        let raw = &closed.raw;
        let span = |r: Range<usize>| closed.offsets.span(r);
        self.read_segment(raw, body_end, false, span);
        self.flush_stray(raw, span);
        let mut diags = std::mem::take(&mut self.diags);
        let calls = build_calls(
            raw,
            &self.entries,
            config.dialect.rules(),
            config.max_calls,
            closed.span,
            &mut diags,
        );
        self.entries.clear();
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
/// forward the callbacks of TAM-kind blocks (made with [`Dialect::block_syntax`]) to it.
#[derive(Debug)]
pub struct BlockParser {
    /// Allocated when the first block opens, then reused: an idle decoder stays small.
    builder: Option<Box<BlockBuilder>>,
    config: Config,
}

fn builder(slot: &mut Option<Box<BlockBuilder>>) -> &mut BlockBuilder {
    slot.get_or_insert_with(Box::default)
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

    /// [`ScanHandler::block_opened`]: emits [`Event::BlockStart`].
    pub fn block_opened(&mut self, marker: Span, out: &mut impl FnMut(Event<'_>)) {
        builder(&mut self.builder).reset(marker.len());
        out(Event::BlockStart { span: marker });
    }

    /// [`ScanHandler::region_opened`].
    pub fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        if region == REGION_VALUE || region == REGION_ESCAPE {
            builder(&mut self.builder).region_opened(view, marker);
        }
    }

    /// [`ScanHandler::region_closed`]: may emit [`Event::CommandSeen`].
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
        if let Some((call, tool, span)) =
            builder(&mut self.builder).region_closed(view, region, content, marker, &self.config)
        {
            out(Event::CommandSeen {
                call,
                tool: ByteString::from(&view.buf()[tool]),
                span,
            });
        }
    }

    /// [`ScanHandler::block_closed`]: emits the block, or a diagnostic when it was never
    /// closed (plus the recovered block and trailing text of SPEC §2.3).
    pub fn block_closed(&mut self, closed: ClosedBlock, out: &mut impl FnMut(Event<'_>)) {
        match closed.end {
            BlockEnd::Marker if closed.dropped > 0 => {
                builder(&mut self.builder).reset(0);
                out(Event::Block(Block {
                    span: closed.span,
                    calls: Vec::new(),
                    diagnostics: vec![too_large(&closed, &self.config)],
                    raw: ByteString::new(),
                }));
            }
            BlockEnd::Marker => {
                let block =
                    builder(&mut self.builder).finish_block(&closed, closed.body.end, &self.config);
                out(Event::Block(block));
            }
            // TODO(issue 11): no repair on a cut stream.
            BlockEnd::Eof | BlockEnd::Cut => self.block_at_eof(closed, out),
            BlockEnd::Restart => {
                builder(&mut self.builder).reset(0);
                out(Event::Diagnostic(unterminated(
                    &closed,
                    "a new start marker began before this block's end marker",
                )));
            }
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
            builder(&mut self.builder).diags.push(diag);
        } else {
            out(Event::Diagnostic(diag));
        }
    }
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
    /// End of stream inside a block: the recovery of SPEC §2.3, or `unterminated_block`.
    fn block_at_eof(&mut self, closed: ClosedBlock, out: &mut impl FnMut(Event<'_>)) {
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
            builder(&mut self.builder).reset(0);
            out(Event::Diagnostic(unterminated(
                &closed,
                "the stream ended inside it",
            )));
            return;
        };
        let raw = &closed.raw;
        let value_end = content_start
            + raw[content_start..marker_at]
                .trim_end_matches([' ', '\t', '\r', '\n'])
                .len();
        let block_end = marker_at + end_marker.len();
        let view = BlockView::new(raw, &closed.offsets, closed.kind);
        let region = closed.open_region.map_or(REGION_VALUE, |(r, _)| r);
        // Close the value as if its close marker stood right after it.
        if let Some((call, tool, span)) = builder(&mut self.builder).region_closed(
            &view,
            region,
            content_start..value_end,
            value_end..value_end,
            &self.config,
        ) {
            out(Event::CommandSeen {
                call,
                tool: ByteString::from(&raw[tool]),
                span,
            });
        }
        builder(&mut self.builder).diags.push(Diagnostic::warning(
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
        let block = builder(&mut self.builder).finish_block(&head, value_end, &self.config);
        out(Event::Block(block));
        if block_end < raw.len() {
            out(Event::Text {
                text: Cow::Borrowed(&raw[block_end..]),
                span: Span::new(block_span.end, closed.span.end),
            });
        }
    }
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

    fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        self.parser.region_opened(view, region, marker);
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
            scanner: Scanner::new(config.dialect.grammar(), config.max_block_bytes),
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
