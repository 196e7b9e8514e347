//! What the scanner reports: the [`ScanHandler`] trait, the [`BlockView`] its callbacks
//! read, and the [`ClosedBlock`] it hands over when a block ends.

use std::ops::Range;

use bytestring::ByteString;

use super::offsets::OffsetMap;
use super::prose::Quote;
use crate::diagnostic::Span;

/// How a block ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEnd {
    /// Its end marker.
    Marker,
    /// Another start marker of its kind (see [`BlockSyntax::restart_on_start`](super::BlockSyntax::restart_on_start)).
    Restart,
    /// End of stream ([`Scanner::finish`](super::Scanner::finish)): the stream ended normally.
    Eof,
    /// End of a stream that was cut ([`Scanner::finish_cut`](super::Scanner::finish_cut)): a token limit, a transport
    /// error. Protocol layers apply no end-of-stream repair to such a block.
    Cut,
}

/// A block as the scanner hands it over when it ends (only the scanner makes them).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClosedBlock {
    /// Block kind (index in the grammar).
    pub kind: usize,
    /// How it ended.
    pub end: BlockEnd,
    /// Stream span of the whole block, start marker to end marker inclusive (to the
    /// restart marker or end of stream, exclusive, when unterminated).
    pub span: Span,
    /// The raw text of the block, as received (invalid UTF-8 replaced by U+FFFD); empty
    /// when the block overflowed.
    pub raw: ByteString,
    /// The body inside `raw`: after the start marker, before the end marker.
    pub body: Range<usize>,
    /// The region open at end of stream, with the offset in `raw` where its content
    /// begins.
    pub open_region: Option<(usize, usize)>,
    /// Bytes dropped because the block exceeded `max_block_bytes`: the whole block (0 when
    /// it did not exceed it). Region events are reported only for regions that end within
    /// the limit, so what is reported never depends on how the input was split.
    pub dropped: usize,
    /// Maps offsets in `raw` to stream offsets (needed only after invalid UTF-8).
    pub offsets: OffsetMap,
    /// The block opened inside a fenced code block: the fence's opening line
    /// (to the block's start when the block is on that line).
    pub fence: Option<Span>,
}

/// Receives what the scanner finds. Every method has a do-nothing default except
/// [`ScanHandler::text`] and [`ScanHandler::block_closed`].
pub trait ScanHandler {
    /// Prose outside blocks, in order; `span` is its place in the stream.
    fn text(&mut self, text: &str, span: Span);

    /// A start marker of `kind` that the model quoted (inside inline code, on a `>` line) opened no block: its bytes come next through [`ScanHandler::text`], and
    /// what follows it is prose. `marker` spans it. Default: nothing.
    fn quoted_marker(&mut self, kind: usize, marker: Span, quote: Quote) {
        let _ = (kind, marker, quote);
    }

    /// A reasoning section opened (only with [`Scanner::with_reasoning`](super::Scanner::with_reasoning)): `tag` is its
    /// open tag (`<think>`, `<thinking>`) at `span`. Default: the tag as text.
    fn reasoning_start(&mut self, tag: &str, span: Span) {
        self.text(tag, span);
    }

    /// Reasoning, in order, as early as possible (a possible close tag is held back).
    /// Default: as text.
    fn reasoning(&mut self, text: &str, span: Span) {
        self.text(text, span);
    }

    /// The reasoning section's close tag. A section the stream ends in gets none.
    /// Default: the tag as text.
    fn reasoning_end(&mut self, tag: &str, span: Span) {
        self.text(tag, span);
    }

    /// A block of `kind` opened; `marker` spans its start marker.
    fn block_opened(&mut self, kind: usize, marker: Span) {
        let _ = (kind, marker);
    }

    /// A region opened inside the current block. `view.buf()[marker]` is its opener; its
    /// content begins at `marker.end`. Not reported once the block has overflowed.
    fn region_opened(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        let _ = (view, region, marker);
    }

    /// Whether the region opener at `view.buf()[marker]` opens a region. Returning `false`
    /// leaves the opener as ordinary block content (scanning goes on after it in the body),
    /// so a protocol can refuse an opener that is out of place (a TAM `「始」` with no key
    /// before it). The decision may look only at `view.buf()[..marker.end]`, which keeps it
    /// independent of how the input was split. Not asked once the block has overflowed.
    /// Default: `true`.
    fn accept_region(&mut self, view: &BlockView<'_>, region: usize, marker: Range<usize>) -> bool {
        let _ = (view, region, marker);
        true
    }

    /// Progress inside the open block: `view.buf()[..settled]` is decided (no marker
    /// candidate in it is still undecided) and every region event up to `settled` has been
    /// reported. Called once a delta's bytes are in the block (a large delta goes in as
    /// several pushes: after the last of them, or before the one past the limit), so a
    /// protocol layer can stream what it has read (argument values as the model writes
    /// them). `settled` never
    /// decreases within one block and never exceeds `max_block_bytes`, so everything below
    /// it is reported whatever the splitting. Not called after the push in which the block
    /// overflowed. Default: nothing.
    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        let _ = (view, settled);
    }

    /// The last progress of a block whose end (or restart) marker was found at `settled`:
    /// [`ScanHandler::block_progress`]'s contract, called instead of it right before
    /// [`ScanHandler::block_closed`], so that a layer that would read the whole block
    /// there anyway (a block closed in the push that opened it) may leave the reading to
    /// the close. Called only for a block closed within `max_block_bytes` (a larger one
    /// gets [`ScanHandler::block_progress`] as before), never for a block the input ends
    /// in. Default: [`ScanHandler::block_progress`].
    fn block_closing(&mut self, view: &BlockView<'_>, settled: usize) {
        self.block_progress(view, settled);
    }

    /// A region closed: `content` and `marker` (its closer) are ranges of `view.buf()`.
    fn region_closed(
        &mut self,
        view: &BlockView<'_>,
        region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        let _ = (view, region, content, marker);
    }

    /// The current block ended.
    fn block_closed(&mut self, block: ClosedBlock);

    /// Bytes that are not UTF-8. Outside a block they appear nowhere else; inside a block
    /// the buffer holds U+FFFD in their place.
    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        let _ = (bytes, span, in_block);
    }
}

/// Read access to the current block buffer, for [`ScanHandler`] callbacks.
#[derive(Debug)]
pub struct BlockView<'a> {
    buf: &'a str,
    offsets: &'a OffsetMap,
    kind: usize,
}

impl<'a> BlockView<'a> {
    /// A view of `buf` (a block buffer or a [`ClosedBlock::raw`]) for protocol layers that
    /// replay region events, e.g. when recovering a block at end of stream.
    pub fn new(buf: &'a str, offsets: &'a OffsetMap, kind: usize) -> Self {
        BlockView { buf, offsets, kind }
    }

    /// The block's bytes received so far, start marker included.
    pub fn buf(&self) -> &'a str {
        self.buf
    }

    /// The stream offset of buffer offset `off`.
    pub fn stream(&self, off: usize) -> usize {
        self.offsets.stream(off)
    }

    /// The stream span of buffer range `r`.
    pub fn span(&self, r: Range<usize>) -> Span {
        self.offsets.span(r)
    }

    /// The block kind.
    pub fn kind(&self) -> usize {
        self.kind
    }
}
