//! The streaming ACTION decoder: the shared block scanner with the `<ACTION>` grammar,
//! and the layer that turns its callbacks into events.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::drive::{Driver, Layer};
use tam_parse::scan::{BlockView, ClosedBlock, Quote, ScanHandler, Scanner};
use tam_parse::{Diagnostic, Span};

use crate::block::{Built, OpenBlock, build_block, build_block_streaming};
use crate::codes;
use crate::config::{BareCallTools, Config, REGION_CDATA, REGION_COMMENT, block_syntax, grammar};
use crate::event::Event;
use crate::position::StreamCursor;
use crate::prescan::{RegionKind, RegionRef};
use crate::stream::Streamer;

/// The ACTION protocol layer on top of the [scanner](tam_parse::scan): turns one block's
/// scanner callbacks into [`Event`]s, an [`ActionBlock`](crate::ActionBlock) when the
/// block closes.
///
/// [`Decoder`] is a scanner plus one `ActionLayer`. Use it directly to decode ACTION
/// blocks in a scanner whose [`Grammar`](tam_parse::scan::Grammar) also has other syntaxes
/// (the `tam` crate's decoder reads TAM and ACTION in one stream so), as
/// [`tam_parse::BlockParser`] is used for TAM: build the grammar with
/// [`block_syntax`](crate::block_syntax) (and, for call elements written without
/// `<ACTION>`, [`BareCallTools::syntaxes`] after it), forward the callbacks of ACTION-kind
/// blocks to the methods of the same names, every other block's to its own layer, and
/// tell the layer where each delta ends ([`ActionLayer::delta_done`]): it places blocks by
/// line and column for its error messages.
#[derive(Debug)]
pub struct ActionLayer {
    config: Config,
    /// Argument events are wanted: the streamer runs. Off, it never looks at a block.
    streaming: bool,
    blocks_seen: usize,
    open: OpenBlock,
    /// The stream offset of the open block's first byte (its start marker's).
    block_base: usize,
    streamer: Streamer,
    /// Tool names whose call elements count without `<ACTION>`; their block kinds are
    /// `bare_from..`, in order.
    bare: BareCallTools,
    bare_from: usize,
    /// The open block is such an element: its start tag's span.
    bare_open: Option<Span>,
    /// Where in the stream the delta being fed began (lines and columns).
    cursor: StreamCursor,
}

impl ActionLayer {
    /// A layer with `config` that reports argument events ([`Event::CallStart`] …
    /// [`Event::CallEnd`]) when `param_events`; off, it never reads a block while it is
    /// written. Its blocks are those of every kind but the ones
    /// [`ActionLayer::with_bare_call_tools`] names.
    pub fn new(config: Config, param_events: bool) -> Self {
        ActionLayer {
            config,
            streaming: param_events,
            blocks_seen: 0,
            open: OpenBlock::default(),
            block_base: 0,
            streamer: Streamer::default(),
            bare: BareCallTools::default(),
            bare_from: usize::MAX,
            bare_open: None,
            cursor: StreamCursor::default(),
        }
    }

    /// This layer reading call elements of `bare`'s names written without `<ACTION>` as
    /// one-call blocks (see the crate docs, "A call element without `<ACTION>`"): the
    /// scanner's grammar has their syntaxes ([`BareCallTools::syntaxes`]) as block kinds
    /// `first_kind..`, in order.
    pub fn with_bare_call_tools(mut self, bare: BareCallTools, first_kind: usize) -> Self {
        self.bare = bare;
        self.bare_from = first_kind;
        self
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tool names read without `<ACTION>` ([`ActionLayer::with_bare_call_tools`]).
    pub fn bare_call_tools(&self) -> &BareCallTools {
        &self.bare
    }

    /// Whether argument events are reported.
    pub fn param_events(&self) -> bool {
        self.streaming
    }

    /// Forgets the stream, keeping the settings and tool names: the layer is ready for a
    /// new one ([`tam_parse::drive::Layer::stream_done`]).
    pub fn reset(&mut self) {
        let bare = std::mem::take(&mut self.bare);
        *self = ActionLayer::new(self.config, self.streaming)
            .with_bare_call_tools(bare, self.bare_from);
    }

    /// The scanner is done with `delta`, every byte of the stream fed ([`tam_parse::drive::Layer::delta_done`]):
    /// the layer moves its line and column past it.
    #[inline]
    pub fn delta_done(&mut self, delta: &[u8]) {
        self.cursor.finish_delta(delta);
    }

    /// [`ScanHandler::quoted_marker`]: warning `marker_in_prose` (the tag's text follows as
    /// [`Event::Text`]).
    pub fn quoted_marker(&mut self, marker: Span, quote: Quote, out: &mut dyn FnMut(Event<'_>)) {
        out(Event::Diagnostic(quoted_tag(marker, quote)));
    }

    /// [`ScanHandler::block_opened`]: a block of `kind` opened at `marker`, in `delta`
    /// (the delta being fed) or held back from the ones before it. Reports
    /// [`Event::BlockStart`] for an `<ACTION>` block. A call element written without
    /// `<ACTION>` is not known to be a call before it closes: its start is reported then,
    /// if it is one.
    pub fn block_opened(
        &mut self,
        kind: usize,
        marker: Span,
        delta: &[u8],
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let start = self.cursor.at(delta, marker.start);
        self.open = OpenBlock {
            start,
            bare: kind >= self.bare_from,
            ..OpenBlock::default()
        };
        self.block_base = marker.start;
        self.streamer = Streamer::new(marker.len());
        if kind >= self.bare_from {
            self.bare_open = Some(marker);
        } else {
            self.bare_open = None;
            out(Event::BlockStart { span: marker });
        }
    }

    /// [`ScanHandler::region_opened`]: a CDATA section or comment opened.
    pub fn region_opened(&mut self, region: usize, marker: Range<usize>) {
        let kind = match region {
            REGION_CDATA => RegionKind::Cdata,
            REGION_COMMENT => RegionKind::Comment,
            _ => return,
        };
        self.open.open_region = Some((kind, marker.start));
    }

    /// [`ScanHandler::region_closed`]: the CDATA section or comment open closed.
    pub fn region_closed(&mut self, content: Range<usize>, marker: Range<usize>) {
        if let Some((kind, start)) = self.open.open_region.take() {
            self.open.regions.push(RegionRef {
                kind,
                full: start..marker.end,
                content,
                closed: true,
            });
        }
    }

    /// [`ScanHandler::block_progress`]: the open block grew; streams what
    /// `view.buf()[..settled]` adds.
    #[inline]
    pub fn block_progress(
        &mut self,
        view: &BlockView<'_>,
        settled: usize,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        if !self.streaming || self.bare_open.is_some() {
            return;
        }
        let open = &self.open;
        // Buffer offsets are stream offsets from the block's start unless invalid UTF-8 in
        // the block was replaced (each such replacement is reported to the layer).
        let linear = open.diagnostics.is_empty();
        let base = self.block_base;
        let span = |r: Range<usize>| {
            if linear {
                let span = Span::new(base + r.start, base + r.end);
                debug_assert_eq!(span, view.span(r));
                span
            } else {
                view.span(r)
            }
        };
        self.streamer.advance(
            view.buf(),
            settled,
            &open.regions,
            open.open_region,
            &span,
            out,
        );
    }

    /// [`ScanHandler::invalid_utf8`]: error `invalid_utf8`; inside a block it joins the
    /// block's diagnostics, outside it is emitted.
    pub fn invalid_utf8(
        &mut self,
        bytes: &[u8],
        span: Span,
        in_block: bool,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let diagnostic = invalid_utf8(bytes, span);
        if in_block {
            self.open.diagnostics.push(diagnostic);
        } else {
            out(Event::Diagnostic(diagnostic));
        }
    }

    /// [`ScanHandler::block_closing`]: the open block's end (or restart) marker was found
    /// at `settled`: the last progress ([`ActionLayer::block_progress`]), unless nothing of
    /// the block has streamed yet — then [`ActionLayer::block_closed`], next, streams it
    /// whole.
    #[inline]
    pub fn block_closing(
        &mut self,
        view: &BlockView<'_>,
        settled: usize,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        if self.streaming && self.streamer.untouched() {
            return;
        }
        self.block_progress(view, settled, out);
    }

    /// [`ScanHandler::block_closed`]: the block ended; emits its [`Event::Block`], or — for
    /// a prose mention —
    /// warning `marker_in_prose` and its bytes as [`Event::Text`].
    ///
    /// Argument events still due go first. For a block nothing of which has streamed (a
    /// reply fed whole, a delta holding the whole block) they come from the block's own
    /// reading when it is read directly (`Direct::stream_events`), so the values are read
    /// once, not twice; otherwise, and for every other block, from the streamer.
    pub fn block_closed(&mut self, closed: &ClosedBlock, out: &mut dyn FnMut(Event<'_>)) {
        if let Some(marker) = self.bare_open.take() {
            self.bare_closed(closed, marker, out);
            return;
        }
        let streams = closed.dropped == 0 && self.streaming;
        let whole = streams && self.streamer.untouched();
        let mut streamer = std::mem::take(&mut self.streamer);
        // What the streamer needs, kept for a block read whole that the direct reading
        // does not stream.
        let saved = whole.then(|| (self.open.regions.clone(), self.open.open_region));
        if streams && !whole {
            // Everything before the close tag is decided now.
            let open = &self.open;
            streamer.advance(
                &closed.raw,
                closed.body.end,
                &open.regions,
                open.open_region,
                &|r| closed.offsets.span(r),
                &mut *out,
            );
        }
        let mut open = std::mem::take(&mut self.open);
        // A block that exceeded its limit is not parsed: its regions do not matter (and
        // their offsets refer to bytes since dropped).
        if let (0, Some((_, content_start)), Some((kind, start))) =
            (closed.dropped, closed.open_region, open.open_region.take())
        {
            let end = closed.raw.len();
            open.regions.push(RegionRef {
                kind,
                full: start..end,
                content: content_start.min(end)..end,
                closed: false,
            });
        }
        let index = self.blocks_seen;
        let built = match saved {
            Some((regions, open_region)) => {
                let (built, streamed) = stream_whole(
                    closed,
                    open,
                    index,
                    &self.config,
                    (&regions, open_region),
                    out,
                );
                if !streamed {
                    streamer.advance(
                        &closed.raw,
                        closed.body.end,
                        &regions,
                        open_region,
                        &|r| closed.offsets.span(r),
                        &mut *out,
                    );
                }
                built
            }
            None => build_block(closed, open, index, &self.config),
        };
        match built {
            Built::Block(block) => {
                self.blocks_seen += 1;
                out(Event::Block(block));
            }
            Built::Prose(warning) => {
                out(Event::Diagnostic(warning));
                let text: &str = &closed.raw;
                out(Event::Text {
                    text: Cow::Borrowed(text),
                    span: closed.span,
                });
            }
        }
    }
}

impl ActionLayer {
    /// A call element written without `<ACTION>` ended (`marker`: its start tag). Closed,
    /// well-formed and holding its one call: [`Event::BlockStart`], its argument events,
    /// and a one-call [`Event::Block`] with warning `missing_action_wrapper`. Otherwise —
    /// the stream ended or was cut inside it, or it does not decode — warning
    /// `marker_in_prose` saying why, and its bytes as text; past `max_block_bytes`, error
    /// `block_too_large` (its bytes were dropped). Only a call counts as a block.
    fn bare_closed(&mut self, closed: &ClosedBlock, marker: Span, out: &mut dyn FnMut(Event<'_>)) {
        self.streamer = Streamer::default();
        let open = std::mem::take(&mut self.open);
        let name = self
            .bare
            .names()
            .get(closed.kind.wrapping_sub(self.bare_from))
            .map_or("", String::as_str);
        if closed.dropped > 0 {
            out(Event::Diagnostic(Diagnostic::error(
                codes::BLOCK_TOO_LARGE,
                closed.span,
                format!(
                    "<{name}> element without <ACTION> of {} bytes exceeds the limit of {}; its content was dropped and nothing runs",
                    closed.span.len(),
                    self.config.max_block_bytes
                ),
            )));
            return;
        }
        let prose = |why: &str, out: &mut dyn FnMut(Event<'_>)| {
            out(Event::Diagnostic(Diagnostic::warning(
                codes::MARKER_IN_PROSE,
                Span::new(closed.span.start, closed.span.start),
                format!("<{name}> written without <ACTION> {why}: read as prose, not a call"),
            )));
            let text: &str = &closed.raw;
            out(Event::Text {
                text: Cow::Borrowed(text),
                span: closed.span,
            });
        };
        if closed.end != tam_parse::scan::BlockEnd::Marker {
            let why = if closed.end == tam_parse::scan::BlockEnd::Cut {
                "was cut before its close tag"
            } else {
                "never closed"
            };
            prose(why, out);
            return;
        }
        // The element is the body: its one child element is the call.
        let mut whole = closed.clone();
        whole.body = 0..whole.raw.len();
        let index = self.blocks_seen;
        let mut events: Vec<Event<'static>> = Vec::new();
        let built = if self.streaming {
            let regions = (open.regions.clone(), open.open_region);
            let (built, streamed) = stream_whole(
                &whole,
                open,
                index,
                &self.config,
                (&regions.0, regions.1),
                &mut |e| events.push(e.into_owned()),
            );
            if !streamed {
                Streamer::new(0).advance(
                    &whole.raw,
                    whole.body.end,
                    &regions.0,
                    regions.1,
                    &|r| whole.offsets.span(r),
                    &mut |e| events.push(e.into_owned()),
                );
            }
            built
        } else {
            build_block(&whole, open, index, &self.config)
        };
        match built {
            Built::Block(block)
                if block.calls.len() == 1
                    && !block.diagnostics.iter().any(Diagnostic::is_error) =>
            {
                out(Event::BlockStart { span: marker });
                for e in events {
                    out(e);
                }
                self.blocks_seen += 1;
                out(Event::Block(block));
            }
            Built::Block(block) => {
                let why = match block.diagnostics.iter().find(|d| d.is_error()) {
                    Some(error) => format!("does not decode ({})", error.message),
                    None => "holds no tool call".to_owned(),
                };
                prose(&why, out);
            }
            Built::Prose(_) => prose("holds no tool call", out),
        }
    }
}

/// [`build_block_streaming`] for a block nothing of which has streamed. In debug builds
/// the events it streams are checked against the streamer's for the same block, read
/// whole from the regions it saw (`regions`), once adjacent pieces are joined: the two
/// readings must agree, or a reply would stream differently fed whole and in deltas.
fn stream_whole(
    closed: &ClosedBlock,
    open: OpenBlock,
    index: usize,
    config: &Config,
    regions: (&[RegionRef], Option<(crate::prescan::RegionKind, usize)>),
    out: &mut dyn FnMut(Event<'_>),
) -> (Built, bool) {
    if !cfg!(debug_assertions) {
        return build_block_streaming(closed, open, index, config, out);
    }
    let mut direct: Vec<Event<'static>> = Vec::new();
    let (built, streamed) = build_block_streaming(closed, open, index, config, &mut |e| {
        direct.push(e.into_owned())
    });
    if streamed {
        let mut streamer = Streamer::new(closed.body.start);
        let mut read: Vec<Event<'static>> = Vec::new();
        streamer.advance(
            &closed.raw,
            closed.body.end,
            regions.0,
            regions.1,
            &|r| closed.offsets.span(r),
            &mut |e| read.push(e.into_owned()),
        );
        assert_eq!(
            joined(direct.clone()),
            joined(read),
            "argument events of the direct reading and of the streamer differ for {:?}",
            &*closed.raw
        );
        for e in direct {
            out(e);
        }
    }
    (built, streamed)
}

/// `events` with adjacent pieces of one kind joined (a check's view of them).
fn joined(events: Vec<Event<'static>>) -> Vec<Event<'static>> {
    let mut out: Vec<Event<'static>> = Vec::with_capacity(events.len());
    for e in events {
        if let (
            Some(Event::ParamText { text, span, cdata }),
            Event::ParamText {
                text: more,
                span: next,
                cdata: kind,
            },
        ) = (out.last_mut(), &e)
            && cdata == kind
            && span.end == next.start
        {
            text.to_mut().push_str(more);
            span.end = next.end;
            continue;
        }
        out.push(e);
    }
    out
}

/// Warning `marker_in_prose` for an `<ACTION>` tag the model quoted: an empty
/// span at the tag, like the prose-mention warning, before the tag's text.
fn quoted_tag(marker: Span, quote: Quote) -> Diagnostic {
    // `Quote` is tam-parse's and #[non_exhaustive]: a wildcard is the only way to match it.
    #[allow(clippy::wildcard_enum_match_arm)]
    let where_ = match quote {
        Quote::QuoteLine => "on a line quoted with '>'",
        _ => "inside inline code",
    };
    Diagnostic::warning(
        codes::MARKER_IN_PROSE,
        Span::new(marker.start, marker.start),
        format!("<ACTION> {where_} is quoted, not a tool block: its text is prose"),
    )
}

/// The diagnostic for bytes that are not UTF-8.
fn invalid_utf8(bytes: &[u8], span: Span) -> Diagnostic {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Diagnostic::error(
        codes::INVALID_UTF8,
        span,
        format!("invalid UTF-8 bytes [{}]", hex.join(" ")),
    )
}

/// Connects the scanner to the layer and to the caller's callback for one delta.
struct Sink<'s, F> {
    layer: &'s mut ActionLayer,
    delta: &'s [u8],
    out: &'s mut F,
}

impl<F: FnMut(Event<'_>)> ScanHandler for Sink<'_, F> {
    fn text(&mut self, text: &str, span: Span) {
        (self.out)(Event::Text {
            text: Cow::Borrowed(text),
            span,
        });
    }

    fn quoted_marker(&mut self, _kind: usize, marker: Span, quote: Quote) {
        self.layer.quoted_marker(marker, quote, self.out);
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

    fn block_opened(&mut self, kind: usize, marker: Span) {
        self.layer.block_opened(kind, marker, self.delta, self.out);
    }

    fn region_opened(&mut self, _view: &BlockView<'_>, region: usize, marker: Range<usize>) {
        self.layer.region_opened(region, marker);
    }

    fn block_progress(&mut self, view: &BlockView<'_>, settled: usize) {
        self.layer.block_progress(view, settled, self.out);
    }

    fn block_closing(&mut self, view: &BlockView<'_>, settled: usize) {
        self.layer.block_closing(view, settled, self.out);
    }

    fn region_closed(
        &mut self,
        _view: &BlockView<'_>,
        _region: usize,
        content: Range<usize>,
        marker: Range<usize>,
    ) {
        self.layer.region_closed(content, marker);
    }

    fn block_closed(&mut self, closed: ClosedBlock) {
        self.layer.block_closed(&closed, self.out);
    }

    fn invalid_utf8(&mut self, bytes: &[u8], span: Span, in_block: bool) {
        self.layer.invalid_utf8(bytes, span, in_block, self.out);
    }
}

/// The ACTION layer of a decoder: the reader of blocks.
#[derive(Debug)]
pub(crate) struct Action {
    layer: ActionLayer,
}

impl Layer for Action {
    type Event<'e> = Event<'e>;

    #[inline]
    fn handler<'s, F: FnMut(Event<'_>)>(
        &'s mut self,
        delta: &'s [u8],
        out: &'s mut F,
    ) -> impl ScanHandler + 's {
        Sink {
            layer: &mut self.layer,
            delta,
            out,
        }
    }

    #[inline]
    fn delta_done(&mut self, delta: &[u8]) {
        self.layer.delta_done(delta);
    }

    #[inline]
    fn stream_done(&mut self) {
        self.layer.reset();
    }
}

/// The streaming ACTION decoder. See the [crate documentation](crate).
#[derive(Debug)]
pub struct Decoder {
    driver: Driver<Action>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Config::default())
    }
}

impl Decoder {
    /// A decoder with `config`; it reports argument events ([`Event::CallStart`] …
    /// [`Event::CallEnd`]).
    pub fn new(config: Config) -> Self {
        let scanner =
            Scanner::new(grammar(), config.max_block_bytes).with_reasoning(config.reasoning_tags);
        let action = Action {
            layer: ActionLayer::new(config, true),
        };
        Decoder {
            driver: Driver::new(scanner, action),
        }
    }

    /// This decoder with argument events on (the default) or off. Off, blocks are not
    /// read while they are written: no [`Event::CallStart`], [`Event::ParamStart`],
    /// [`Event::ParamText`], [`Event::ParamEnd`] or [`Event::CallEnd`], every other
    /// event the same, and nothing spent on them. Call it before the first `feed`.
    pub fn with_param_events(mut self, on: bool) -> Self {
        let layer = &mut self.driver.layer_mut().layer;
        let bare = std::mem::take(&mut layer.bare);
        *layer = ActionLayer::new(layer.config, on).with_bare_call_tools(bare, layer.bare_from);
        self
    }

    /// This decoder reading a call element of one of `tools` written without `<ACTION>`
    /// as a one-call block (warning `missing_action_wrapper`): pass the names of the tools
    /// offered to the model. See the crate docs, "A call element without `<ACTION>`", for
    /// the rules and the names left out ([`MAX_BARE_CALL_TOOLS`](crate::MAX_BARE_CALL_TOOLS),
    /// [`MAX_BARE_CALL_NAME_BYTES`](crate::MAX_BARE_CALL_NAME_BYTES)). No names (the
    /// default): every call element outside `<ACTION>` is prose. Call it before the first
    /// `feed`; it keeps the settings and the argument-event switch.
    pub fn with_bare_call_tools<S: AsRef<str>>(self, tools: impl IntoIterator<Item = S>) -> Self {
        let layer = &self.driver.layer().layer;
        let (config, streaming) = (layer.config, layer.streaming);
        let bare = BareCallTools::new(tools);
        let grammar = if bare.is_empty() {
            grammar()
        } else {
            bare.grammar(vec![block_syntax()])
        };
        let scanner =
            Scanner::new(grammar, config.max_block_bytes).with_reasoning(config.reasoning_tags);
        let action = Action {
            layer: ActionLayer::new(config, streaming).with_bare_call_tools(bare, 1),
        };
        Decoder {
            driver: Driver::new(scanner, action),
        }
    }

    /// The tool names whose call elements count without `<ACTION>` (see
    /// [`Decoder::with_bare_call_tools`]): those given that can be read so, in order.
    pub fn bare_call_tools(&self) -> &[String] {
        self.driver.layer().layer.bare_call_tools().names()
    }

    /// Whether argument events are reported (see [`Decoder::with_param_events`]).
    pub fn param_events(&self) -> bool {
        self.driver.layer().layer.param_events()
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.driver.layer().layer.config
    }

    tam_parse::decoder_methods!(driver, Event);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_argument(e: &Event<'_>) -> bool {
        matches!(
            e,
            Event::CallStart { .. }
                | Event::ParamStart { .. }
                | Event::ParamText { .. }
                | Event::ParamEnd { .. }
                | Event::CallEnd { .. }
        )
    }

    /// Adjacent text events joined (their split depends on the deltas).
    fn merged(events: Vec<Event<'static>>) -> Vec<Event<'static>> {
        let mut out: Vec<Event<'static>> = Vec::new();
        for e in events {
            if let (
                Some(Event::Text { text, span }),
                Event::Text {
                    text: more,
                    span: s,
                },
            ) = (out.last_mut(), &e)
                && span.end == s.start
            {
                text.to_mut().push_str(more);
                span.end = s.end;
                continue;
            }
            out.push(e);
        }
        out
    }

    fn run(input: &str, config: Config, on: bool, delta: usize, cut: bool) -> Vec<Event<'static>> {
        let mut decoder = Decoder::new(config).with_param_events(on);
        assert_eq!(decoder.param_events(), on);
        let mut events = Vec::new();
        let mut on_event = |e: Event<'_>| events.push(e.into_owned());
        for chunk in input.as_bytes().chunks(delta) {
            decoder.feed_bytes(chunk, &mut on_event);
        }
        if cut {
            decoder.finish_cut(&mut on_event);
        } else {
            decoder.finish(&mut on_event);
        }
        events
    }

    /// Argument events off: none is reported, and every other event is the one reported
    /// with them on (the streamer only adds events; nothing else depends on it).
    #[test]
    fn param_events_off_drops_exactly_the_argument_events() {
        let inputs = [
            "Reading.\n<ACTION>\n<read_file><path>a &amp; b</path><tags><item>x</item></tags></read_file>\n</ACTION> done",
            "<ACTION><w><c><![CDATA[a < b ]]> & Vec<String></c></w></ACTION><ACTION><x/></ACTION>",
            "```xml\n<ACTION><t><p>1</p></t></ACTION>\n```",
            "I write an <ACTION> block with <DeleteAll> in it.",
            "<ACTION><write><path>a.rs</path><content>fn main() {",
            "<ACTION><t><p>unclosed</p></t>",
            "<ACTION><t a='1'><p>x</p></t><!-- c --></ACTION>",
            "<ACTION><big><v>0123456789012345678901234567890123456789</v></big></ACTION>",
        ];
        let small = Config {
            max_block_bytes: 48,
            ..Config::default()
        };
        for input in inputs {
            for config in [Config::default(), small] {
                for cut in [false, true] {
                    let on: Vec<_> = run(input, config, true, input.len().max(1), cut)
                        .into_iter()
                        .filter(|e| !is_argument(e))
                        .collect();
                    for delta in [1, 7, input.len().max(1)] {
                        let off = run(input, config, false, delta, cut);
                        assert!(!off.iter().any(is_argument), "{input}");
                        assert_eq!(merged(off), merged(on.clone()), "{input} / {delta}");
                    }
                }
            }
        }
    }

    /// The work per block does not grow with the number of blocks in one
    /// delta. Counted, not timed: the bytes looked at to place blocks (line and column)
    /// stay within one pass over the delta, and every block is found.
    #[test]
    fn many_blocks_in_one_delta_cost_one_pass() {
        for n in [1, 10, 100, 1000] {
            let one = "Step.\n<ACTION><read_file><path>a.rs</path></read_file></ACTION>\n";
            let delta = one.repeat(n);
            let mut decoder = Decoder::new(Config::default());
            let mut blocks = 0;
            decoder.feed(&delta, |e| blocks += matches!(e, Event::Block(_)) as usize);
            assert_eq!(blocks, n);
            assert!(
                decoder.driver.layer().layer.cursor.scanned() <= delta.len(),
                "{n} blocks: {} bytes looked at for a delta of {}",
                decoder.driver.layer().layer.cursor.scanned(),
                delta.len()
            );
        }
    }
}
