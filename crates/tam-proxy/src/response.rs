//! The upstream's stream turned into the client's: a sans-IO [`Translator`] that decodes
//! the upstream's text into prose and calls ([`Piece`]s), a [`ChunkWriter`] that writes
//! pieces as `chat.completion.chunk` objects, and a [`Completion`] that gathers them into
//! one `chat.completion`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use tam::{
    BlockKind as MixedProtocol, Config as MixedConfig, Decoder as OutputDecoder,
    Event as MixedEvent,
};
use tam_parse::Diagnostic;

use crate::ProxyError;
use crate::history::{PastCall, render_calls};
use crate::request::OfferedTools;
use tam::turn::{ACTION_END, close_stopped_block, stop_sequences};
use tam_model::{FinishReason, ModelItem, ToolCallChunk};
use tool_dispatch::ToolCall;

use crate::Protocol;

/// Keeps the last 64 bytes (or a little more, at a character boundary) of a stream's text.
fn keep_tail(tail: &mut String, text: &str) {
    const KEEP: usize = 64;
    tail.push_str(text);
    if tail.len() > 2 * KEEP {
        let mut cut = tail.len() - KEEP;
        while !tail.is_char_boundary(cut) {
            cut -= 1;
        }
        tail.drain(..cut);
    }
}

/// One thing to tell the client, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Prose (`delta.content`).
    Content(String),
    /// Reasoning (`delta.reasoning_content`).
    Reasoning(String),
    /// A call begins: its first `tool_calls` chunk.
    CallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of a call's arguments' JSON text.
    CallArguments { index: usize, text: String },
}

/// The protocol decoder of one response: the front door for the proxy's protocol, with
/// argument events on.
fn block_decoder(
    protocol: Protocol,
    tam: tam_parse::Config,
    action: action_xml::Config,
) -> OutputDecoder {
    let choice = match protocol {
        Protocol::Action => Protocol::Action,
        Protocol::Auto => Protocol::Auto,
        _ => Protocol::Tam,
    };
    let mut config = MixedConfig::for_protocol(choice).with_param_events(true);
    config.tam = tam;
    config.action = action;
    OutputDecoder::new(config)
}

/// Turns one upstream reply into [`Piece`]s.
///
/// Text goes through the protocol decoder (unless the request turned decoding off): prose
/// comes out as it is decided, a closed block whose calls all name offered tools as calls,
/// anything else as its raw text. Reasoning passes through; native tool-call chunks the
/// upstream sent anyway pass through with their own indexes mapped after the proxy's.
///
/// With `stream_args` (streaming requests), calls and their string arguments stream while
/// the block is written, by the rules of the module docs ("Arguments that stream").
pub(crate) struct Translator {
    decoder: Option<OutputDecoder>,
    emitter: Emitter,
    finish: Option<FinishReason>,
    /// The TAM dialect's end marker: a `stop` finish inside a TAM block closes it with this.
    tam_end: &'static str,
    /// The upstream's `usage`, when it sent one.
    usage: Option<Map<String, Value>>,
    /// The last bytes of the upstream's text (up to 64): a reply that ends with the end
    /// marker was not stopped at it.
    tail: String,
    /// Bytes of text fed to the decoder so far.
    fed: usize,
    /// The decoder's block size limit: a block larger than this has its bytes dropped.
    block_limit: usize,
}

struct Emitter {
    offered: OfferedTools,
    protocol: Protocol,
    max_calls: usize,
    /// Calls emitted so far (decoded and native).
    calls: usize,
    next_index: usize,
    /// Upstream native index → the client's index.
    native: Vec<(usize, usize)>,
    /// Native calls to tools the request did not offer: upstream index, name, arguments.
    /// They come back as text at the end, never as calls.
    refused_native: Vec<(usize, String, String)>,
    call_id_base: String,
    pieces: Vec<Piece>,
    /// Stream calls and string arguments while blocks are written.
    stream_args: bool,
    /// The block being written, while `stream_args`.
    open: Option<OpenBlock>,
    /// ACTION blocks closed so far (only the first holds calls).
    action_blocks: usize,
    /// A streamed call's arguments were never completed (its block was cut, failed or
    /// differed from what streamed).
    unfinished: bool,
    /// Why the reply must end with an error event instead of a finish chunk.
    failure: Option<String>,
    /// The protocol of the block open now (from its start marker to its close, or until it
    /// turned out to be prose).
    in_block: Option<MixedProtocol>,
    /// A block with calls closed: the model's turn is over (SPEC §5). Nothing decoded
    /// after it is shown or called.
    turn_over: bool,
    /// Calls emitted before the open block began (a streamed call counts from its start).
    calls_before_block: usize,
    /// Where the open block began, in bytes of the reply's text.
    block_start: usize,
    /// The reply was cut (`length`, a transport error) and the decoder is handing over
    /// the block open at the cut: its streamed calls end unfinished, not in a failure.
    cutting: bool,
}

/// A block being written: its calls whose chunks went out already.
struct OpenBlock {
    protocol: MixedProtocol,
    streamed: Vec<Streamed>,
    /// The slot in `streamed` of the call whose parameters are being written.
    current: Option<usize>,
    /// The string parameter streaming now.
    param: Option<StreamingParam>,
}

/// A call whose first chunk went out while its block was open.
struct Streamed {
    /// Its place in the block (ACTION call index; TAM: 0, the unchained `command`).
    at: usize,
    /// The client's index.
    index: usize,
    tool: String,
    /// The string values streamed, by key, as sent.
    values: Vec<(String, String)>,
    /// The arguments' `{` went out.
    opened: bool,
}

/// A string parameter whose value streams.
struct StreamingParam {
    key: String,
    /// The value as sent so far.
    value: String,
    /// ACTION: edge whitespace is held back (the block's value is trimmed).
    trim: bool,
    /// ACTION: a character other than whitespace went out.
    started: bool,
    /// ACTION: whitespace held back, each run with whether it is CDATA content.
    held: Vec<(String, bool)>,
    /// ACTION: where the previous piece ended, and whether its run is CDATA content.
    prev_end: usize,
    cdata: bool,
    /// ACTION: the value begins with CDATA: one line break right after `<![CDATA[` is
    /// dropped (`pending_cr`: a `\r` waits for the next piece).
    strip_newline: bool,
    pending_cr: bool,
}

/// One ACTION piece of a streaming string value into `out`, by the block's edge rules
/// (action-xml's crate docs): a value's leading text whitespace and blank text runs are
/// dropped, a leading CDATA section loses one line break, trailing whitespace is held
/// until more text follows (the rest is decided at [`Emitter::param_end`]).
///
/// Pieces carry no CDATA flag: a run of pieces that starts after a gap of exactly 9
/// bytes (`<![CDATA[`) or 12 (`]]><![CDATA[`) from the previous piece is taken as CDATA
/// content. A comment of exactly that length would be taken for one; the block's check
/// at close catches any difference.
fn action_piece(param: &mut StreamingParam, text: &str, span: tam_parse::Span, out: &mut String) {
    if span.start != param.prev_end {
        param.cdata = matches!(span.start.saturating_sub(param.prev_end), 9 | 12);
        if param.cdata && !param.started {
            param.started = true;
            param.held.clear();
            param.strip_newline = true;
        }
    }
    param.prev_end = span.end;
    let mut owned;
    let mut text = text;
    if param.strip_newline {
        if param.pending_cr {
            param.pending_cr = false;
            if let Some(rest) = text.strip_prefix('\n') {
                text = rest;
            } else {
                owned = String::from("\r");
                owned.push_str(text);
                text = &owned;
            }
            param.strip_newline = false;
        } else if text == "\r" {
            param.pending_cr = true;
            return;
        } else if let Some(rest) = text
            .strip_prefix("\r\n")
            .or_else(|| text.strip_prefix('\n'))
        {
            text = rest;
            param.strip_newline = false;
        } else if !text.is_empty() {
            param.strip_newline = false;
        }
    }
    let body = text.trim_matches(is_xml_space);
    if body.is_empty() {
        if param.started && !text.is_empty() {
            param.held.push((text.to_owned(), param.cdata));
        }
        return;
    }
    let lead = &text[..text.len() - text.trim_start_matches(is_xml_space).len()];
    let trail = &text[text.trim_end_matches(is_xml_space).len()..];
    if param.started {
        for (ws, _) in param.held.drain(..) {
            out.push_str(&ws);
        }
        out.push_str(lead);
    }
    param.started = true;
    out.push_str(body);
    if !trail.is_empty() {
        param.held.push((trail.to_owned(), param.cdata));
    }
}

/// XML whitespace: what ACTION trims from a string value's edges.
fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// `text` as the inside of a JSON string (escaping works character by character, so the
/// escaped pieces of a value join to the escaped value).
fn json_inside(text: &str) -> String {
    let quoted = Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// Whether `key` is a property of `tool`'s schema whose type is exactly `"string"`.
fn is_string_property(tool: &tool_schema::CompiledTool, key: &str) -> bool {
    tool.definition()
        .parameters
        .get("properties")
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        == Some("string")
}

impl Translator {
    /// A translator for one reply. `decode` false passes text through undecoded;
    /// `stream_args` streams calls and string arguments while blocks are written.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        protocol: Protocol,
        decode: bool,
        stream_args: bool,
        offered: OfferedTools,
        max_calls: usize,
        tam: tam_parse::Config,
        action: action_xml::Config,
        call_id_base: String,
    ) -> Self {
        let tam_end = tam.dialect.end_marker();
        // The decoder's limit: TAM alone has its own, ACTION and both protocols at once
        // the ACTION one.
        let block_limit = match protocol {
            Protocol::Action | Protocol::Auto => action.max_block_bytes,
            _ => tam.max_block_bytes,
        };
        Self {
            decoder: decode.then(|| block_decoder(protocol, tam, action)),
            emitter: Emitter {
                offered,
                protocol,
                max_calls,
                calls: 0,
                next_index: 0,
                native: Vec::new(),
                refused_native: Vec::new(),
                call_id_base,
                pieces: Vec::new(),
                stream_args,
                open: None,
                action_blocks: 0,
                unfinished: false,
                failure: None,
                in_block: None,
                turn_over: false,
                calls_before_block: 0,
                block_start: 0,
                cutting: false,
            },
            finish: None,
            tam_end,
            usage: None,
            tail: String::new(),
            fed: 0,
            block_limit,
        }
    }

    /// Reads one item of the upstream's stream. After the model's turn is over
    /// ([`Translator::turn_over`]) its text and native calls are dropped: the reply ends
    /// at the block (SPEC §5).
    pub(crate) fn feed(&mut self, item: ModelItem) {
        match item {
            ModelItem::Usage(usage) => self.usage = Some(usage),
            _ if self.emitter.turn_over => {}
            ModelItem::Text(text) => {
                keep_tail(&mut self.tail, &text);
                self.fed += text.len();
                match &mut self.decoder {
                    Some(decoder) => decoder.feed(&text, |event| self.emitter.event(event)),
                    None => self.emitter.content(&text),
                }
            }
            ModelItem::Reasoning(text) => self.emitter.pieces.push(Piece::Reasoning(text)),
            ModelItem::ToolCallChunk(chunk) => self.emitter.native_chunk(chunk),
            ModelItem::Finish(reason) => self.finish = Some(reason),
        }
    }

    /// A block with calls closed: the model's turn is over. The caller stops reading the
    /// upstream (dropping its stream closes the request) and finishes the reply.
    pub(crate) fn turn_over(&self) -> bool {
        self.emitter.turn_over
    }

    /// The calls emitted so far (decoded and native).
    pub(crate) fn calls(&self) -> usize {
        self.emitter.calls
    }

    /// The upstream's `usage`, when it sent one.
    pub(crate) fn usage(&self) -> Option<&Map<String, Value>> {
        self.usage.as_ref()
    }

    /// The stop sequences the upstream is asked to stop at: the end marker of each protocol
    /// the reply is decoded in, so the model's turn ends at its block (SPEC §5). Empty when
    /// the reply is not decoded.
    pub(crate) fn stop_sequences(&self) -> Vec<String> {
        let Some(decoder) = &self.decoder else {
            return Vec::new();
        };
        stop_sequences(decoder.protocol(), self.tam_end, [])
    }

    /// Ends the reply. `failed` (a transport error) and a `length` finish cut it: no call
    /// from a block open at the cut, whose text comes back as content (SPEC §5). Returns the
    /// `finish_reason`: `tool_calls` when a call was emitted and every streamed call was
    /// completed, else the upstream's (`stop` when it sent none).
    pub(crate) fn finish(&mut self, failed: bool) -> String {
        let cut = failed || self.finish.as_ref().is_some_and(FinishReason::is_cut);
        // A server that honours the stop sequence leaves the end marker out: at a `stop`
        // finish, a block still open is closed by its marker. Its decoder decides whether
        // the block holds calls (a value or a call element still open is no call).
        if !cut
            && !self.emitter.turn_over
            && self.finish == Some(FinishReason::Stop)
            && let Some(protocol) = self.emitter.in_block
            && let Some(decoder) = &mut self.decoder
        {
            let marker = match protocol {
                MixedProtocol::Tam => self.tam_end,
                _ => ACTION_END,
            };
            // A reply that ends with the marker was not stopped at it (the server ignored
            // the stop sequence): the block stays as the model wrote it. A block the
            // marker would take past the size limit has had its bytes dropped: it is a
            // block that never closed, and the decoder's finish says so.
            let size = self.fed.saturating_sub(self.emitter.block_start) + marker.len();
            if !self.tail.ends_with(marker) && size <= self.block_limit {
                for event in close_stopped_block(decoder, marker) {
                    self.emitter.event(event);
                }
            }
        }
        if let Some(decoder) = self.decoder.take() {
            if cut {
                self.emitter.cutting = true;
                decoder.finish_cut(|event| self.emitter.event(event));
            } else {
                decoder.finish(|event| self.emitter.event(event));
            }
        }
        if self.emitter.unfinished && !cut && self.emitter.failure.is_none() {
            self.emitter.failure = Some("a block whose call was streamed did not close".to_owned());
        }
        // A native call at a cut may have lost the end of its arguments: the reply is
        // not a finished call.
        if cut && !self.emitter.native.is_empty() {
            self.emitter.unfinished = true;
        }
        for (_, name, arguments) in std::mem::take(&mut self.emitter.refused_native) {
            self.emitter
                .content(&format!("Tool call: {name} {arguments}"));
        }
        if self.emitter.calls > 0 && !self.emitter.unfinished {
            "tool_calls".to_owned()
        } else {
            match &self.finish {
                // No call reached the client: the upstream's own `tool_calls` finish
                // named calls that were not passed on.
                Some(FinishReason::ToolCalls) | None => "stop".to_owned(),
                Some(reason) => reason.as_str().to_owned(),
            }
        }
    }

    /// After [`Translator::finish`]: the error that ends the reply instead of a finish
    /// chunk, when a streamed call could not be completed as its block decoded
    /// (`streamed_call_invalid`).
    pub(crate) fn failure(&self) -> Option<ProxyError> {
        self.emitter
            .failure
            .as_ref()
            .map(|message| ProxyError::BadUpstream {
                code: "streamed_call_invalid",
                message: format!(
                    "{message}: the call's argument chunks already sent are void (do not run it)"
                ),
            })
    }

    /// The pieces made since the last call, in order.
    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, Piece> {
        self.emitter.pieces.drain(..)
    }
}

impl Emitter {
    fn content(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Content(previous)) => previous.push_str(text),
            _ => self.pieces.push(Piece::Content(text.to_owned())),
        }
    }

    /// Reasoning the decoder split out of the text (a `<think>` section).
    fn reasoning(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Reasoning(previous)) => previous.push_str(text),
            _ => self.pieces.push(Piece::Reasoning(text.to_owned())),
        }
    }

    /// A piece of call `index`'s arguments (joined to the previous piece of the same call).
    fn arguments(&mut self, index: usize, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::CallArguments {
                index: i,
                text: previous,
            }) if *i == index => {
                previous.push_str(text);
            }
            _ => self.pieces.push(Piece::CallArguments {
                index,
                text: text.to_owned(),
            }),
        }
    }

    fn event(&mut self, event: MixedEvent<'_>) {
        if self.turn_over {
            return;
        }
        match &event {
            MixedEvent::BlockStart { protocol, span } => {
                self.in_block = Some(*protocol);
                self.calls_before_block = self.calls;
                self.block_start = span.start;
            }
            MixedEvent::Text { .. }
            | MixedEvent::TamBlock(_)
            | MixedEvent::ActionBlock(_)
            | MixedEvent::Diagnostic(_) => self.in_block = None,
            _ => {}
        }
        let closes = matches!(event, MixedEvent::TamBlock(_) | MixedEvent::ActionBlock(_));
        self.decoded_event(event);
        // A block that gave calls (whole, or streamed and completed) ends the turn.
        if closes && self.calls > self.calls_before_block && self.failure.is_none() {
            self.turn_over = true;
        }
    }

    fn decoded_event(&mut self, event: MixedEvent<'_>) {
        match event {
            MixedEvent::Text { text, .. } => self.content(&text),
            // A `<think>` section of the text: reasoning, never calls.
            MixedEvent::Reasoning { text, .. } => self.reasoning(&text),
            MixedEvent::ReasoningStart { .. } | MixedEvent::ReasoningEnd { .. } => {}
            MixedEvent::BlockStart { protocol, .. } => {
                self.open = self.stream_args.then_some(OpenBlock {
                    protocol,
                    streamed: Vec::new(),
                    current: None,
                    param: None,
                });
            }
            MixedEvent::CallStart { index, tool, .. } if self.action_blocks == 0 => {
                self.stream_call(MixedProtocol::Action, index, &tool);
            }
            MixedEvent::CommandSeen { call: 0, tool, .. } => {
                self.stream_call(MixedProtocol::Tam, 0, &tool);
            }
            MixedEvent::ParamStart { key, span, .. } => self.param_start(&key, span.end),
            MixedEvent::ParamText { text, span, .. } => self.param_text(&text, span),
            MixedEvent::ParamEnd { .. } => self.param_end(),
            MixedEvent::CallEnd { .. } => {
                if let Some(open) = &mut self.open {
                    open.current = None;
                    open.param = None;
                }
            }
            // The one conversion of a decoded call, the agent's: TAM keys matched
            // canonically, ACTION parameters with their element sources.
            MixedEvent::TamBlock(block) => {
                let calls = ToolCall::from_tam_block(&block);
                self.block(calls, &block.diagnostics, &block.raw);
            }
            MixedEvent::ActionBlock(block) => {
                self.action_blocks += 1;
                if block.index > 0 {
                    // Only the first ACTION block of a reply holds calls (SPEC §3).
                    self.open = None;
                    self.block_text(&block.raw, &block.diagnostics);
                } else {
                    let calls = ToolCall::from_action_block(&block);
                    self.block(calls, &block.diagnostics, &block.raw);
                }
            }
            // A block cut or never closed: its text, which the decoder did not emit. One
            // whose bytes the decoder dropped (over its size limit) leaves an error
            // without its text: a note says so. Either way a call streamed from it is
            // never completed.
            MixedEvent::Diagnostic(diagnostic) => {
                if let Some(raw) = &diagnostic.raw {
                    if self.open.take().is_some_and(|o| !o.streamed.is_empty()) {
                        self.unfinished = true;
                    }
                    self.content(raw);
                } else if diagnostic.is_error() {
                    if self.open.take().is_some_and(|o| !o.streamed.is_empty()) {
                        self.unfinished = true;
                    }
                    self.block_text("", std::slice::from_ref(&diagnostic));
                }
            }
            // A later TAM call begins (of a chain, or a call started by a repeated key):
            // what follows is not the streamed call's; it comes with the block.
            MixedEvent::CommandSeen { .. } => {
                if let Some(open) = &mut self.open
                    && open.protocol == MixedProtocol::Tam
                {
                    open.current = None;
                    open.param = None;
                }
            }
            // Calls that do not stream: a call in an ACTION block after the first (they
            // come with their block, or not at all).
            MixedEvent::CallStart { .. } => {}
        }
    }

    /// A call's tool id is known while its block is open: its first chunk goes out when
    /// the tool is offered and the call limit allows (TAM: the block's first call only).
    fn stream_call(&mut self, protocol: MixedProtocol, at: usize, tool: &str) {
        let allowed = self.offered.get(tool).is_some() && self.calls < self.max_calls;
        let Some(open) = &mut self.open else { return };
        open.current = None;
        open.param = None;
        if open.protocol != protocol
            || !allowed
            || (protocol == MixedProtocol::Tam && !open.streamed.is_empty())
        {
            return;
        }
        let index = self.next_index;
        self.next_index += 1;
        self.calls += 1;
        open.streamed.push(Streamed {
            at,
            index,
            tool: tool.to_owned(),
            values: Vec::new(),
            opened: false,
        });
        open.current = Some(open.streamed.len() - 1);
        self.pieces.push(Piece::CallStart {
            index,
            id: format!("call_{}_{index}", self.call_id_base),
            name: tool.to_owned(),
        });
    }

    /// A parameter begins: it streams when its call streams, its key is a `string`
    /// property of the tool's schema (exactly) and it was not streamed before.
    fn param_start(&mut self, key: &str, tag_end: usize) {
        let Some(open) = &mut self.open else { return };
        open.param = None;
        let Some(slot) = open.current else { return };
        let call = &mut open.streamed[slot];
        let streams = call.values.iter().all(|(k, _)| k != key)
            && self
                .offered
                .get(&call.tool)
                .is_some_and(|tool| is_string_property(tool, key));
        if !streams {
            return;
        }
        let prefix = format!(
            "{}{}:\"",
            if call.opened { "," } else { "{" },
            Value::String(key.to_owned())
        );
        call.opened = true;
        let index = call.index;
        open.param = Some(StreamingParam {
            key: key.to_owned(),
            value: String::new(),
            trim: open.protocol == MixedProtocol::Action,
            started: false,
            held: Vec::new(),
            prev_end: tag_end,
            cdata: false,
            strip_newline: false,
            pending_cr: false,
        });
        self.arguments(index, &prefix);
    }

    /// A piece of a streaming value goes out (ACTION: edge whitespace held back).
    fn param_text(&mut self, text: &str, span: tam_parse::Span) {
        let Some(open) = &mut self.open else { return };
        let (Some(param), Some(slot)) = (&mut open.param, open.current) else {
            return;
        };
        let index = open.streamed[slot].index;
        let mut out = String::new();
        if !param.trim {
            out.push_str(text);
        } else {
            action_piece(param, text, span, &mut out);
        }
        param.value.push_str(&out);
        let escaped = json_inside(&out);
        self.arguments(index, &escaped);
    }

    /// A streaming value closed: its closing quote (ACTION: trailing CDATA whitespace).
    fn param_end(&mut self) {
        let Some(open) = &mut self.open else { return };
        let (Some(mut param), Some(slot)) = (open.param.take(), open.current) else {
            return;
        };
        let mut out = String::new();
        // Trailing whitespace: a text run's is trimmed; the last CDATA run's is kept,
        // except blanks after its last line break.
        if let Some(last) = param.held.iter().rposition(|(_, cdata)| *cdata) {
            let tail: String = param.held[..=last]
                .iter()
                .map(|(ws, _)| ws.as_str())
                .collect();
            let kept = tail.trim_end_matches([' ', '\t']);
            out.push_str(if kept.ends_with('\n') { kept } else { &tail });
        }
        param.value.push_str(&out);
        let call = &mut open.streamed[slot];
        call.values.push((param.key, param.value));
        let index = call.index;
        let text = format!("{}\"", json_inside(&out));
        self.arguments(index, &text);
    }

    /// A closed block: calls when it decoded cleanly and every call names an offered tool,
    /// else its text. A block whose calls streamed completes them (module docs).
    fn block(&mut self, calls: Vec<ToolCall>, diagnostics: &[Diagnostic], raw: &str) {
        let streamed = self.open.take().map(|o| o.streamed).unwrap_or_default();
        let clean = !calls.is_empty() && !diagnostics.iter().any(Diagnostic::is_error);
        let offered = calls.iter().all(|c| self.offered.get(&c.tool).is_some());
        if !streamed.is_empty() {
            return self.complete_streamed(streamed, calls, clean && offered, diagnostics, raw);
        }
        if !clean || !offered {
            return self.block_text(raw, diagnostics);
        }
        self.calls_or_text(calls);
    }

    /// Calls within the limit, the rest written back as text.
    fn calls_or_text(&mut self, calls: Vec<ToolCall>) {
        let mut over = Vec::new();
        for call in calls {
            if self.calls >= self.max_calls {
                over.push(call);
            } else {
                self.call(call);
            }
        }
        if !over.is_empty() {
            // Past the call limit (`parallel_tool_calls: false`): written back as text.
            let past: Vec<PastCall> = over
                .into_iter()
                .map(|call| PastCall {
                    raw_args: Value::Object(call.args.clone()).to_string(),
                    name: call.tool,
                    args: Some(call.args),
                })
                .collect();
            let text = render_calls(self.protocol, &past);
            self.content(&text);
        }
    }

    /// The block of streamed calls closed: when it is calls and every streamed value is
    /// its final value, each streamed call's remaining (typed) arguments and `}`, other
    /// calls as usual; else the block's text and a failure.
    fn complete_streamed(
        &mut self,
        streamed: Vec<Streamed>,
        calls: Vec<ToolCall>,
        clean: bool,
        diagnostics: &[Diagnostic],
        raw: &str,
    ) {
        let finals: Vec<Map<String, Value>> = calls.iter().map(|c| self.final_args(c)).collect();
        let mismatch = streamed.iter().find_map(|s| {
            let Some(call) = calls.get(s.at) else {
                return Some(format!("call {} of the block is gone", s.at));
            };
            if call.tool != s.tool {
                return Some(format!("call {} names {} now", s.at, call.tool));
            }
            s.values.iter().find_map(|(key, value)| {
                (finals[s.at].get(key) != Some(&Value::String(value.clone()))).then(|| {
                    format!(
                        "{}: the block's value of '{key}' is not the one streamed",
                        s.tool
                    )
                })
            })
        });
        if self.cutting && !clean {
            // The block open at a cut: its calls are never completed and the reply ends
            // with `length` (or the transport error), as when the decoder reports the cut
            // block as a diagnostic.
            self.unfinished = true;
            return self.block_text(raw, diagnostics);
        }
        if !clean || mismatch.is_some() {
            self.unfinished = true;
            self.failure = Some(mismatch.unwrap_or_else(|| {
                "a block whose call was streamed is not a call (a decode error or a tool not offered)".to_owned()
            }));
            return self.block_text(raw, diagnostics);
        }
        let mut rest = Vec::new();
        for (at, (call, args)) in calls.into_iter().zip(finals).enumerate() {
            let Some(s) = streamed.iter().find(|s| s.at == at) else {
                rest.push(call);
                continue;
            };
            let mut text = String::new();
            for (key, value) in &args {
                if s.values.iter().any(|(k, _)| k == key) {
                    continue;
                }
                text.push(if s.opened || !text.is_empty() {
                    ','
                } else {
                    '{'
                });
                text.push_str(&Value::String(key.clone()).to_string());
                text.push(':');
                text.push_str(&value.to_string());
            }
            if !s.opened && text.is_empty() {
                text.push('{');
            }
            text.push('}');
            self.arguments(s.index, &text);
        }
        self.calls_or_text(rest);
    }

    /// A block that is not calls: its raw text, or (a block over the decoder's size limit,
    /// whose bytes the decoder dropped) a note saying so.
    fn block_text(&mut self, raw: &str, diagnostics: &[Diagnostic]) {
        if raw.is_empty() {
            if let Some(error) = diagnostics.iter().find(|d| d.is_error()) {
                let note = format!("[tool block not shown ({}): {}]", error.code, error.message);
                self.content(&note);
            }
        } else {
            self.content(raw);
        }
    }

    /// A call's final arguments: coerced by its tool's schema, per argument (SPEC §4):
    /// when some do not validate, those stay as the model wrote them and the others are
    /// still typed (the client validates and answers).
    fn final_args(&self, call: &ToolCall) -> Map<String, Value> {
        match self.offered.get(&call.tool) {
            // A parameter declared a string takes an ACTION element's source text where
            // the XML reading gave an object or an array (HTML, code with tags).
            Some(tool) => match tool.coerce_with_source(call.args.clone(), call.key_match, |key| {
                call.sources.get(key).map(String::as_str)
            }) {
                Ok(coerced) => coerced,
                Err(errors) => errors.into_arguments(),
            },
            None => call.args.clone(),
        }
    }

    /// One call to an offered tool, whole: its first chunk and its final arguments.
    fn call(&mut self, call: ToolCall) {
        let arguments = self.final_args(&call);
        let index = self.next_index;
        self.next_index += 1;
        self.calls += 1;
        self.pieces.push(Piece::CallStart {
            index,
            id: format!("call_{}_{index}", self.call_id_base),
            name: call.tool,
        });
        self.pieces.push(Piece::CallArguments {
            index,
            text: Value::Object(arguments).to_string(),
        });
    }

    /// A native call chunk: a call to an offered tool passes through (its index mapped
    /// after the proxy's own); one to a tool the request did not offer is held, and comes
    /// back as text at the end.
    fn native_chunk(&mut self, chunk: ToolCallChunk) {
        if let Some((_, _, arguments)) = self
            .refused_native
            .iter_mut()
            .find(|(up, _, _)| *up == chunk.index)
        {
            arguments.push_str(&chunk.arguments);
            return;
        }
        let index = match self.native.iter().find(|(up, _)| *up == chunk.index) {
            Some(&(_, index)) => index,
            None if chunk
                .name
                .as_deref()
                .is_none_or(|name| self.offered.get(name).is_none()) =>
            {
                self.refused_native.push((
                    chunk.index,
                    chunk.name.unwrap_or_default(),
                    chunk.arguments,
                ));
                return;
            }
            None => {
                let index = self.next_index;
                self.next_index += 1;
                self.calls += 1;
                self.native.push((chunk.index, index));
                self.pieces.push(Piece::CallStart {
                    index,
                    id: chunk
                        .id
                        .clone()
                        .unwrap_or_else(|| format!("call_{}_{index}", self.call_id_base)),
                    name: chunk.name.clone().unwrap_or_default(),
                });
                index
            }
        };
        if !chunk.arguments.is_empty() {
            self.pieces.push(Piece::CallArguments {
                index,
                text: chunk.arguments,
            });
        }
    }
}

/// A response id unique in this process (time and a counter), for `chatcmpl-…` and
/// `call_…` ids.
pub(crate) fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{nanos:x}{count:x}")
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes pieces as `chat.completion.chunk` JSON objects of one response.
pub(crate) struct ChunkWriter {
    id: String,
    model: String,
    created: u64,
}

impl ChunkWriter {
    pub(crate) fn new(id: &str, model: &str) -> Self {
        Self {
            id: format!("chatcmpl-{id}"),
            model: model.to_owned(),
            created: unix_seconds(),
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
    }

    /// The first chunk: the assistant role and empty content.
    pub(crate) fn role(&self) -> Value {
        self.chunk(json!({"role": "assistant", "content": ""}), None)
    }

    /// One piece as a chunk.
    pub(crate) fn piece(&self, piece: Piece) -> Value {
        let delta = match piece {
            Piece::Content(text) => json!({"content": text}),
            Piece::Reasoning(text) => json!({"reasoning_content": text}),
            Piece::CallStart { index, id, name } => json!({"tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}),
            Piece::CallArguments { index, text } => json!({"tool_calls": [{
                "index": index, "function": {"arguments": text},
            }]}),
        };
        self.chunk(delta, None)
    }

    /// The last chunk: an empty delta and the finish reason.
    pub(crate) fn finish(&self, finish_reason: &str) -> Value {
        self.chunk(json!({}), Some(finish_reason))
    }

    /// The usage chunk OpenAI sends after the finish when asked: no choices, `usage`.
    pub(crate) fn usage(&self, usage: &Map<String, Value>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage,
        })
    }
}

/// Pieces gathered into one `chat.completion` (a request without `stream`).
#[derive(Default)]
pub(crate) struct Completion {
    content: String,
    reasoning: String,
    /// (id, name, arguments) by index.
    calls: Vec<(String, String, String)>,
}

impl Completion {
    pub(crate) fn push(&mut self, piece: Piece) {
        match piece {
            Piece::Content(text) => self.content.push_str(&text),
            Piece::Reasoning(text) => self.reasoning.push_str(&text),
            Piece::CallStart { index, id, name } => {
                if self.calls.len() <= index {
                    self.calls.resize_with(index + 1, Default::default);
                }
                self.calls[index].0 = id;
                self.calls[index].1 = name;
            }
            Piece::CallArguments { index, text } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.2.push_str(&text);
                }
            }
        }
    }

    /// The `chat.completion` object: `content` null when empty and calls were made.
    pub(crate) fn into_json(self, id: &str, model: &str, finish_reason: &str) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), "assistant".into());
        let content = if self.content.is_empty() && !self.calls.is_empty() {
            Value::Null
        } else {
            self.content.into()
        };
        message.insert("content".into(), content);
        if !self.reasoning.is_empty() {
            message.insert("reasoning_content".into(), self.reasoning.into());
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .into_iter()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                })
                .collect();
            message.insert("tool_calls".into(), calls.into());
        }
        json!({
            "id": format!("chatcmpl-{id}"),
            "object": "chat.completion",
            "created": unix_seconds(),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::translate;

    /// The offered tools of a request with `get_weather(city: string, days: integer)`.
    fn offered() -> OfferedTools {
        let body = serde_json::json!({
            "model": "m", "messages": [],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}],
        });
        translate(body.to_string().as_bytes(), Protocol::Tam, "")
            .unwrap()
            .offered
    }

    fn translator(protocol: Protocol) -> Translator {
        Translator::new(
            protocol,
            true,
            false,
            offered(),
            usize::MAX,
            tam_parse::Config::default(),
            action_xml::Config::default(),
            "t".into(),
        )
    }

    /// Pieces of `deltas` with adjacent content joined, and the finish reason.
    fn run(
        protocol: Protocol,
        deltas: &[&str],
        finish: Option<FinishReason>,
    ) -> (Vec<Piece>, String) {
        let mut t = translator(protocol);
        let mut pieces: Vec<Piece> = Vec::new();
        let mut push = |piece: Piece| match (pieces.last_mut(), piece) {
            (Some(Piece::Content(previous)), Piece::Content(text))
            | (Some(Piece::Reasoning(previous)), Piece::Reasoning(text)) => {
                previous.push_str(&text);
            }
            (_, piece) => pieces.push(piece),
        };
        for delta in deltas {
            t.feed(ModelItem::Text((*delta).to_owned()));
            t.drain().for_each(&mut push);
        }
        if let Some(finish) = finish {
            t.feed(ModelItem::Finish(finish));
        }
        let reason = t.finish(false);
        t.drain().for_each(&mut push);
        (pieces, reason)
    }

    /// The same pieces whole, in 1-character deltas and split at every character boundary.
    fn every_split(protocol: Protocol, text: &str) -> (Vec<Piece>, String) {
        let whole = run(protocol, &[text], None);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(protocol, &refs, None), whole, "1-char deltas");
        for (at, _) in text.char_indices().skip(1) {
            assert_eq!(
                run(protocol, &[&text[..at], &text[at..]], None),
                whole,
                "split at {at}"
            );
        }
        whole
    }

    fn call(index: usize, name: &str, args: &str) -> [Piece; 2] {
        [
            Piece::CallStart {
                index,
                id: format!("call_t_{index}"),
                name: name.into(),
            },
            Piece::CallArguments {
                index,
                text: args.into(),
            },
        ]
    }

    /// The turn ends at the call: what follows the block (here `Bye 日本`) is not shown.
    #[test]
    fn tam_calls_and_prose_are_the_same_for_every_split() {
        let text = "Look: a<b.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\ndays:「始」3「末」\n<|[END_TOOL]|>\nBye 日本";
        let (pieces, reason) = every_split(Protocol::Tam, text);
        let [start, args] = call(0, "get_weather", r#"{"city":"Paris","days":3}"#);
        assert_eq!(
            pieces,
            [Piece::Content("Look: a<b.\n".into()), start, args,]
        );
        assert_eq!(reason, "tool_calls");
    }

    #[test]
    fn action_calls_and_extra_blocks_are_the_same_for_every_split() {
        let block = "<ACTION><get_weather><city>Rome &amp; Co</city></get_weather></ACTION>";
        let text = format!("Ok.\n{block}\n{block}");
        let (pieces, reason) = every_split(Protocol::Action, &text);
        let [start, args] = call(0, "get_weather", r#"{"city":"Rome & Co"}"#);
        assert_eq!(pieces, [Piece::Content("Ok.\n".into()), start, args,]);
        assert_eq!(reason, "tool_calls");
    }

    /// Both protocols decode in one reply; a block that gives no call (a tool not offered)
    /// is its text and does not end the turn, the first block with calls does.
    #[test]
    fn both_protocols_decode_in_one_reply() {
        let tam = "<|[REQUEST_TOOL]|>\ncommand:「始」get_time「末」\n<|[END_TOOL]|>";
        let text = format!(
            "A.\n{tam}\nB.\n<ACTION><get_weather><days>2</days></get_weather></ACTION>\nC.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\n<|[END_TOOL]|>"
        );
        let (pieces, reason) = every_split(Protocol::Auto, &text);
        let [start, args] = call(0, "get_weather", r#"{"days":2}"#);
        assert_eq!(
            pieces,
            [Piece::Content(format!("A.\n{tam}\nB.\n")), start, args]
        );
        assert_eq!(reason, "tool_calls");
    }

    /// A `<think>` section of the text is reasoning (`delta.reasoning_content`), and the
    /// block inside it is no call; a block after it is.
    #[test]
    fn a_think_section_is_reasoning_not_calls() {
        let block = "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\n<|[END_TOOL]|>";
        let text = format!("<think>\nplan {block}\n</think>\nOk.\n{block}");
        let (pieces, reason) = every_split(Protocol::Tam, &text);
        let [start, args] = call(0, "get_weather", r#"{"city":"Paris"}"#);
        assert_eq!(
            pieces,
            [
                Piece::Reasoning(format!("\nplan {block}\n")),
                Piece::Content("\nOk.\n".into()),
                start,
                args,
            ]
        );
        assert_eq!(reason, "tool_calls");
    }

    #[test]
    fn a_cut_block_is_content_and_no_call() {
        let text = "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\n<|[END_TOOL]";
        let (pieces, reason) = run(Protocol::Tam, &[text], Some(FinishReason::Length));
        assert_eq!(pieces, [Piece::Content(text.into())]);
        assert_eq!(reason, "length");
        // The same text, finished normally: no end marker, still no call.
        let (pieces, reason) = run(Protocol::Tam, &[text], None);
        assert_eq!(pieces, [Piece::Content(text.into())]);
        assert_eq!(reason, "stop");
    }

    /// Native chunks of an offered tool pass through with indexes of their own; a decoded
    /// call after them takes the next index and ends the turn: native chunks after it are
    /// not passed on.
    #[test]
    fn native_chunks_pass_through_before_decoded_calls() {
        let mut t = translator(Protocol::Tam);
        t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
            0,
            Some("up_1".into()),
            Some("get_weather".into()),
            "{\"city\":",
        )));
        t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
            0,
            None,
            None,
            "\"Rome\"}",
        )));
        t.feed(ModelItem::Text(
            "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\n<|[END_TOOL]|>".into(),
        ));
        assert!(t.turn_over());
        t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
            1,
            Some("up_2".into()),
            Some("late".into()),
            "{}",
        )));
        let reason = t.finish(false);
        let pieces: Vec<Piece> = t.drain().collect();
        let [start, args] = call(1, "get_weather", "{}");
        assert_eq!(
            pieces,
            [
                Piece::CallStart {
                    index: 0,
                    id: "up_1".into(),
                    name: "get_weather".into()
                },
                Piece::CallArguments {
                    index: 0,
                    text: "{\"city\":".into()
                },
                Piece::CallArguments {
                    index: 0,
                    text: "\"Rome\"}".into()
                },
                start,
                args,
            ]
        );
        assert_eq!(reason, "tool_calls");
    }

    /// The offered tools of a request with `write_file(path: string, content: string,
    /// mode: integer)`.
    fn writer_tools() -> OfferedTools {
        let body = serde_json::json!({
            "model": "m", "messages": [],
            "tools": [{"type": "function", "function": {"name": "write_file", "parameters": {
                "type": "object", "properties": {"path": {"type": "string"},
                "content": {"type": "string"}, "mode": {"type": "integer"}}}}}],
        });
        translate(body.to_string().as_bytes(), Protocol::Tam, "")
            .unwrap()
            .offered
    }

    /// A streaming translator's pieces after each delta (adjacent arguments of one call
    /// and adjacent content joined within a delta), the finish reason and the failure.
    fn run_streaming(
        protocol: Protocol,
        deltas: &[&str],
        finish: Option<FinishReason>,
    ) -> (Vec<Vec<Piece>>, String, Option<String>) {
        let mut t = Translator::new(
            protocol,
            true,
            true,
            writer_tools(),
            usize::MAX,
            tam_parse::Config::default(),
            action_xml::Config::default(),
            "t".into(),
        );
        let mut per_delta = Vec::new();
        for delta in deltas {
            t.feed(ModelItem::Text((*delta).to_owned()));
            per_delta.push(t.drain().collect());
        }
        if let Some(finish) = finish {
            t.feed(ModelItem::Finish(finish));
        }
        let reason = t.finish(false);
        per_delta.push(t.drain().collect());
        let failure = t.failure().map(|e| e.code().to_owned());
        (per_delta, reason, failure)
    }

    /// Content, and each call's (name, arguments text), of all pieces.
    fn gathered(pieces: &[Vec<Piece>]) -> (String, Vec<(String, String)>) {
        let mut content = String::new();
        let mut calls: Vec<(String, String)> = Vec::new();
        for piece in pieces.iter().flatten() {
            match piece {
                Piece::Content(text) => content.push_str(text),
                Piece::CallStart { index, name, .. } => {
                    assert_eq!(*index, calls.len());
                    calls.push((name.clone(), String::new()));
                }
                Piece::CallArguments { index, text } => calls[*index].1.push_str(text),
                Piece::Reasoning(_) => {}
            }
        }
        (content, calls)
    }

    /// Streams `text` whole, in 1-char deltas and split at every character boundary:
    /// the same content and calls every time; returns them.
    fn streams_the_same(protocol: Protocol, text: &str) -> (String, Vec<(String, String)>) {
        let (whole, reason, failure) = run_streaming(protocol, &[text], None);
        assert_eq!((reason.as_str(), failure), ("tool_calls", None));
        let whole = gathered(&whole);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        let (pieces, reason, failure) = run_streaming(protocol, &refs, None);
        assert_eq!((reason.as_str(), failure), ("tool_calls", None));
        assert_eq!(gathered(&pieces), whole, "1-char deltas");
        for (at, _) in text.char_indices().skip(1) {
            let (pieces, reason, failure) =
                run_streaming(protocol, &[&text[..at], &text[at..]], None);
            assert_eq!(
                (reason.as_str(), failure),
                ("tool_calls", None),
                "split at {at}"
            );
            assert_eq!(gathered(&pieces), whole, "split at {at}");
        }
        whole
    }

    /// How many argument pieces of call 0 went out before delta `upto` (exclusive).
    fn argument_pieces_before(pieces: &[Vec<Piece>], upto: usize) -> String {
        pieces[..upto]
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Piece::CallArguments { index: 0, text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    const CODE: &str =
        "fn main() {\n    let v: Vec<u8> = vec![1 & 2];\n    println!(\"<b>{v:?}</b>\");\n}\n";

    #[test]
    fn tam_string_arguments_stream_before_the_end_marker() {
        let text = format!(
            "Writing.\n<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\npath:「始」src/main.rs「末」\ncontent:「始」{CODE}「末」\nmode:「始」644「末」\n<|[END_TOOL]|>\nDone."
        );
        let (content, calls) = streams_the_same(Protocol::Tam, &text);
        // The turn ended at the call: `Done.` is not shown.
        assert_eq!(content, "Writing.\n");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "write_file");
        let args: Value = serde_json::from_str(&calls[0].1).unwrap();
        assert_eq!(
            args,
            json!({"path": "src/main.rs", "content": CODE, "mode": 644})
        );

        // Fed in 5-char deltas, the content value goes out in several pieces before the
        // end marker arrives.
        let chars: Vec<char> = text.chars().collect();
        let deltas: Vec<String> = chars.chunks(5).map(|c| c.iter().collect()).collect();
        let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
        let end = deltas
            .iter()
            .scan(String::new(), |seen, d| {
                seen.push_str(d);
                Some(seen.contains("<|[END_TOOL]"))
            })
            .position(|has| has)
            .unwrap();
        let (pieces, _, _) = run_streaming(Protocol::Tam, &refs, None);
        let early = argument_pieces_before(&pieces, end);
        assert!(
            early.starts_with(r#"{"path":"src/main.rs","content":"fn main() {\n"#),
            "{early}"
        );
        let early_pieces = pieces[..end]
            .iter()
            .flatten()
            .filter(|p| matches!(p, Piece::CallArguments { .. }))
            .count();
        assert!(
            early_pieces >= 5,
            "{early_pieces} pieces before the end marker"
        );
        // The typed `mode` comes at the close.
        assert!(!early.contains("mode"), "{early}");
    }

    #[test]
    fn action_string_arguments_stream_trimmed_and_cdata_edges_kept() {
        let text = format!(
            "Ok.\n<ACTION>\n  <write_file>\n    <path>\n      src/a &amp; b.rs\n    </path>\n    <content><![CDATA[\n{CODE}]]></content>\n    <mode>644</mode>\n  </write_file>\n</ACTION>"
        );
        let (content, calls) = streams_the_same(Protocol::Action, &text);
        assert_eq!(content, "Ok.\n");
        let args: Value = serde_json::from_str(&calls[0].1).unwrap();
        assert_eq!(
            args,
            json!({"path": "src/a & b.rs", "content": CODE, "mode": 644})
        );
        // CDATA keeps its leading blanks and its last line break; blank text around it
        // goes.
        let indented = "<ACTION><write_file><content>\n  <![CDATA[  x < y\n  ]]>\n</content><path>p</path></write_file></ACTION>";
        let (_, indented_calls) = streams_the_same(Protocol::Action, indented);
        let args: Value = serde_json::from_str(&indented_calls[0].1).unwrap();
        assert_eq!(args, json!({"content": "  x < y\n", "path": "p"}));
        // The same through Both.
        let (_, both) = streams_the_same(Protocol::Auto, &text);
        assert_eq!(both, calls);
    }

    #[test]
    fn a_block_cut_after_its_call_streamed_finishes_with_length_and_no_call_closes() {
        let text =
            format!("<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\ncontent:「始」{CODE}");
        let (pieces, reason, failure) =
            run_streaming(Protocol::Tam, &[&text], Some(FinishReason::Length));
        assert_eq!(reason, "length");
        assert_eq!(failure, None);
        let (content, calls) = gathered(&pieces);
        assert_eq!(content, text, "the cut block's text comes back");
        assert_eq!(calls.len(), 1);
        assert!(
            serde_json::from_str::<Value>(&calls[0].1).is_err(),
            "never closed"
        );
    }

    /// The same in ACTION, as a real model wrote it: calls streamed one after the other
    /// until `max_tokens` cut the block mid-call. A cut, not a stream error: `length`,
    /// the block's text, no call completed (the cut ACTION block comes back from the
    /// decoder as a block without calls, not as a diagnostic).
    #[test]
    fn an_action_block_cut_after_its_calls_streamed_finishes_with_length() {
        let call = |mode: u32| {
            format!("<write_file><path>a{mode}.rs</path><content>{CODE}</content></write_file>\n")
        };
        let text = format!("<ACTION>\n{}{}<write_file><path>a", call(1), call(2));
        let (pieces, reason, failure) =
            run_streaming(Protocol::Action, &[&text], Some(FinishReason::Length));
        assert_eq!(failure, None);
        assert_eq!(reason, "length");
        let (content, calls) = gathered(&pieces);
        assert_eq!(content, text, "the cut block's text comes back");
        assert!(!calls.is_empty());
        for (_, arguments) in &calls {
            assert!(
                serde_json::from_str::<Value>(arguments).is_err(),
                "never closed: {arguments}"
            );
        }
    }

    #[test]
    fn a_streamed_call_its_block_does_not_confirm_ends_in_a_failure() {
        // A second call to a tool not offered: the block is not calls.
        let text = "<ACTION><write_file><path>a</path></write_file><rm><p>/</p></rm></ACTION>";
        let (pieces, reason, failure) = run_streaming(Protocol::Action, &[text], None);
        assert_eq!(failure.as_deref(), Some("streamed_call_invalid"));
        assert_eq!(reason, "stop");
        let (content, calls) = gathered(&pieces);
        assert_eq!(content, text);
        assert_eq!(calls[0].0, "write_file");
        // A block never closed at a normal end: also a failure, never a finished call.
        let open = "<ACTION><write_file><path>a</path>";
        let (pieces, reason, failure) = run_streaming(Protocol::Action, &[open], None);
        assert_eq!(
            (reason.as_str(), failure.as_deref()),
            ("stop", Some("streamed_call_invalid"))
        );
        assert_eq!(gathered(&pieces).0, open);
    }

    #[test]
    fn unoffered_tools_and_non_string_parameters_do_not_stream() {
        let text = "<|[REQUEST_TOOL]|>\ncommand:「始」write_file「末」\nmode:「始」7「末」\n<|[END_TOOL]|>";
        let (pieces, reason, _) = run_streaming(Protocol::Tam, &[text], None);
        assert_eq!(reason, "tool_calls");
        let (_, calls) = gathered(&pieces);
        assert_eq!(
            calls,
            [("write_file".to_owned(), r#"{"mode":7}"#.to_owned())]
        );
        let other = "<|[REQUEST_TOOL]|>\ncommand:「始」rm「末」\np:「始」/「末」\n<|[END_TOOL]|>";
        let (pieces, reason, failure) = run_streaming(Protocol::Tam, &[other], None);
        assert_eq!((reason.as_str(), failure), ("stop", None));
        assert_eq!(gathered(&pieces), (other.to_owned(), Vec::new()));
    }
}
