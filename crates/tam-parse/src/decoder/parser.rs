//! The block parser: the TAM half of the scanner's callbacks, for this crate's decoder
//! and for decoders that read several protocols in one stream (the `tam` crate's).

use std::borrow::Cow;
use std::ops::Range;

use bytestring::ByteString;
use memchr::memmem;

use super::builder::BlockBuilder;
use super::config::{REGION_ESCAPE, REGION_VALUE};
use super::{Config, Dialect, Event};
use crate::block::Block;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::scan::{BlockEnd, BlockView, ClosedBlock, Quote};

/// The TAM protocol layer on top of the [scanner](crate::scan): turns one block's scanner
/// callbacks into [`Event`](crate::Event)s.
///
/// [`Decoder`](crate::Decoder) is a scanner plus one `BlockParser`. Use it directly to decode TAM blocks in
/// a scanner whose [`Grammar`](crate::scan::Grammar) also has other syntaxes (TAM and ACTION XML in one stream):
/// forward the callbacks of TAM-kind blocks (made with [`Dialect::block_syntax`](crate::Dialect::block_syntax)) to it —
/// all of them for the full protocol: without [`BlockParser::accept_region`](crate::BlockParser::accept_region) a `「始」`
/// with no key before it still opens a value (read as stray text), and without
/// [`BlockParser::block_progress`](crate::BlockParser::block_progress) values are not streamed piece by piece.
#[derive(Debug)]
pub struct BlockParser {
    /// Allocated when the first block opens, then reused: an idle decoder stays small.
    pub(super) builder: Option<Box<BlockBuilder>>,
    pub(super) config: Config,
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

    pub(super) fn builder(&mut self) -> &mut BlockBuilder {
        let on = self.config.param_events;
        self.builder.get_or_insert_with(|| {
            Box::new(BlockBuilder {
                param_events: on,
                ..BlockBuilder::default()
            })
        })
    }

    /// [`ScanHandler::quoted_marker`](crate::scan::ScanHandler::quoted_marker): warning `marker_in_prose` (the marker's text follows
    /// as [`Event::Text`](crate::Event::Text)).
    pub fn quoted_marker(&mut self, marker: Span, quote: Quote, out: &mut impl FnMut(Event<'_>)) {
        out(Event::Diagnostic(quoted_marker(
            self.config.dialect.start_marker(),
            marker,
            quote,
        )));
    }

    /// [`ScanHandler::block_opened`](crate::scan::ScanHandler::block_opened): emits [`Event::BlockStart`](crate::Event::BlockStart).
    pub fn block_opened(&mut self, marker: Span, out: &mut impl FnMut(Event<'_>)) {
        self.builder().reset(marker.len());
        out(Event::BlockStart { span: marker });
    }

    /// [`ScanHandler::accept_region`](crate::scan::ScanHandler::accept_region): a value opener with no key before it opens no value
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

    /// [`ScanHandler::region_opened`](crate::scan::ScanHandler::region_opened).
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

    /// [`ScanHandler::block_progress`](crate::scan::ScanHandler::block_progress): streams the open value ([`Event::ParamStart`](crate::Event::ParamStart),
    /// [`Event::ParamText`](crate::Event::ParamText)).
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

    /// [`ScanHandler::region_closed`](crate::scan::ScanHandler::region_closed): may emit [`Event::ParamText`](crate::Event::ParamText), [`Event::ParamEnd`](crate::Event::ParamEnd)
    /// and [`Event::CommandSeen`](crate::Event::CommandSeen).
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

    /// [`ScanHandler::block_closed`](crate::scan::ScanHandler::block_closed): emits the block. A block that never closed yields no
    /// call: without a complete entry its bytes come out as text with warning
    /// `marker_in_prose`, with one it is error `unterminated_block`. At the end of a
    /// stream that ended normally ([`BlockEnd::Eof`]) the end-of-stream recovery (`missing_value_close`: the value runs to the last end marker inside it) comes
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
                let b = self.builder();
                let block = b.finish_block(&closed, closed.body.end, &config, out);
                let prose = b.entries_read == 0
                    && block.calls.is_empty()
                    && block.diagnostics.iter().all(|d| {
                        [Code::STRAY_TEXT, Code::MISSING_COMMAND, Code::INVALID_UTF8]
                            .contains(&d.code)
                    });
                if prose {
                    // Markers around prose ("write <|[REQUEST_TOOL]|> then <|[END_TOOL]|>"):
                    // nothing in it could run; its text is text.
                    let reason = "the block holds no entry";
                    as_prose(&closed, &block.diagnostics, config.dialect, reason, out);
                } else {
                    out(Event::Block(fenced(&closed, block)));
                }
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

    /// [`ScanHandler::invalid_utf8`](crate::scan::ScanHandler::invalid_utf8): inside a block the diagnostic joins the block's,
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

/// Warning `marker_in_prose` for a start marker the model quoted.
pub(crate) fn quoted_marker(marker_text: &str, span: Span, quote: Quote) -> Diagnostic {
    let where_ = match quote {
        Quote::QuoteLine => "on a line quoted with '>'",
        Quote::InlineCode => "inside inline code",
    };
    Diagnostic::warning(
        Code::MARKER_IN_PROSE,
        span,
        format!("{marker_text} {where_} is quoted, not a tool block: its text is prose"),
    )
}

/// `block` with warning `fenced_block` first when it was written inside a code fence.
pub(super) fn fenced(closed: &ClosedBlock, mut block: Block) -> Block {
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

pub(super) fn too_large(closed: &ClosedBlock, config: &Config) -> Diagnostic {
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

pub(super) fn unterminated(closed: &ClosedBlock, why: &str) -> Diagnostic {
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
    pub(super) fn never_closed(
        &mut self,
        closed: ClosedBlock,
        why: &str,
        out: &mut impl FnMut(Event<'_>),
    ) {
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
                let reason = "the block was never closed and holds no complete entry";
                as_prose(&closed, &diags, config.dialect, reason, out);
                return;
            }
        }
        b.reset(0);
        out(Event::Diagnostic(unterminated(&closed, why)));
    }

    /// End of stream inside a value that holds the end marker: the end-of-stream recovery (`missing_value_close`).
    /// Returns `false` when it does not apply.
    pub(super) fn recover_at_eof(
        &mut self,
        closed: &ClosedBlock,
        out: &mut impl FnMut(Event<'_>),
    ) -> bool {
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

/// A block given back as prose (it never closed and holds no complete entry, or it holds
/// no entry at all: `reason`): its bytes as text in stream order (with the `invalid_utf8`
/// diagnostics of bytes that were not UTF-8 between the pieces, where those bytes are),
/// then warning `marker_in_prose`.
pub(super) fn as_prose(
    closed: &ClosedBlock,
    diags: &[Diagnostic],
    dialect: Dialect,
    reason: &str,
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
            "{} began no tool block: {reason}, so its text is prose",
            dialect.start_marker()
        ),
    )));
}
