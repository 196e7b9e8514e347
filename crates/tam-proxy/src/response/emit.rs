//! Writing the decoded reply as OpenAI chunks while it streams: prose, calls, string
//! arguments piece by piece.

use std::ops::Range;

use serde_json::{Map, Value};
use tam::Diagnostic;

use crate::conversation::{OfferedTools, same_loosely};
use crate::history::{PastCall, render_calls};
use tam_model::ToolCallChunk;
use tool_dispatch::ToolCall;
use tool_schema::KeyMatch;

use crate::ProtocolChoice;

use super::Piece;

pub(super) struct Emitter {
    pub(super) offered: OfferedTools,
    pub(super) protocol: ProtocolChoice,
    pub(super) max_calls: usize,
    /// Calls emitted so far (decoded and native).
    pub(super) calls: usize,
    pub(super) next_index: usize,
    /// Upstream native index → the client's index.
    pub(super) native: Vec<(usize, usize)>,
    /// Native calls to tools the request did not offer: upstream index, name, arguments.
    /// They come back as text at the end, never as calls.
    pub(super) refused_native: Vec<(usize, String, String)>,
    pub(super) call_id_base: String,
    pub(super) pieces: Vec<Piece>,
    /// Stream calls and string arguments while blocks are written.
    pub(super) stream_args: bool,
    /// While `stream_args`: a call's first chunk goes out before its block closes once one
    /// of its string values is this many bytes long (then that value streams); 0: at its
    /// tool id ([`crate::ProxyConfig::stream_after_bytes`]).
    pub(super) stream_after: usize,
    /// The block being written, while `stream_args`.
    pub(super) open: Option<OpenBlock>,
    /// ACTION blocks closed so far (only the first holds calls).
    pub(super) action_blocks: usize,
    /// A streamed call's arguments were never completed (its block was cut, failed or
    /// differed from what streamed).
    pub(super) unfinished: bool,
    /// Why the reply must end with an error event instead of a finish chunk.
    pub(super) failure: Option<String>,
    /// The protocol of the block open now (from its start marker to its close, or until it
    /// turned out to be prose).
    pub(super) in_block: Option<tam::Protocol>,
    /// A block with calls closed: the model's turn is over. Nothing decoded
    /// after it is shown or called.
    pub(super) turn_over: bool,
    /// Calls emitted before the open block began (a streamed call counts from its start).
    pub(super) calls_before_block: usize,
    /// Where the open block began, in bytes of the reply's text.
    pub(super) block_start: usize,
    /// The reply was cut (`length`, a transport error) and the decoder is handing over
    /// the block open at the cut: its streamed calls end unfinished, not in a failure.
    pub(super) cutting: bool,
}

/// A block being written: its calls that may stream.
pub(super) struct OpenBlock {
    pub(super) protocol: tam::Protocol,
    /// Its calls to offered tools, in block order, counted against the call limit; the
    /// first chunks of a prefix of them went out (`Streamed::index`).
    pub(super) streamed: Vec<Streamed>,
    /// The slot in `streamed` of the call whose parameters are being written.
    pub(super) current: Option<usize>,
    /// The string parameter streaming now.
    pub(super) param: Option<StreamingParam>,
}

/// A call to an offered tool seen while its block is open, that may stream.
pub(super) struct Streamed {
    /// Its place in the block (ACTION call index; TAM: 0, the unchained `command`).
    pub(super) at: usize,
    /// The client's index, once its first chunk went out (a string value of it grew to
    /// [`Emitter::stream_after`] bytes, or that is 0). A call whose first chunk did not go
    /// out before its block closed goes out whole with the block, or not at all.
    pub(super) index: Option<usize>,
    pub(super) tool: String,
    /// The string values streamed, by key, as sent.
    pub(super) values: Vec<(String, String)>,
    /// The arguments' `{` went out.
    pub(super) opened: bool,
    /// A string value that was streaming when its block closed (its close tag never
    /// came: the block's reading closed it): its key and the text sent, without the
    /// closing quote.
    pub(super) open_value: Option<(String, String)>,
    /// Keys whose value was held to its end (it did not stream): written again in the
    /// call, they do not stream either (the block's value of the key is not that text).
    pub(super) held: Vec<String>,
}

/// A string parameter whose value streams.
pub(super) struct StreamingParam {
    pub(super) key: String,
    /// The value as sent so far.
    pub(super) value: String,
    /// ACTION: the value's edge rules, applied as the pieces arrive (TAM pieces are the
    /// value as they are).
    pub(super) edges: Option<tam::ValueEdges>,
    /// ACTION: the call's structure names (its tool's id and its other parameters), whose
    /// close tag in the value may be a misspelt close tag of this one ([`held_back`]).
    pub(super) names: Vec<String>,
    /// Text of the value not sent yet: from a close tag whose name may still grow, or
    /// (`holding`) from one that names the call's structure.
    pub(super) pending: String,
    /// A close tag naming the call's structure came: nothing more of the value goes out
    /// until its close tag (then all of it) or its block's close (the block's value).
    pub(super) holding: bool,
    /// The value so far, none of it sent (not even its key), while coercion may still read
    /// it as something other than its text (`'Apple Inc.'` is `Apple Inc.`; `None` leaves
    /// an optional parameter out: `CompiledTool::text_may_change`); `None` once it cannot
    /// (then its key and text go out, and it streams). A value that ends held did not
    /// stream: it goes out with the typed arguments at the block's close.
    pub(super) held: Option<String>,
}

impl StreamingParam {
    /// The text of a piece of the value that may go out now (ACTION: past its edge rules).
    fn ready(&mut self, text: &str, span: tam::Span, cdata: bool) -> String {
        match &mut self.edges {
            Some(edges) => {
                edges.push(text, span, cdata, &mut self.pending);
                let ready = held_back(&self.pending, &self.key, &self.names, &mut self.holding);
                let rest = self.pending.split_off(ready);
                std::mem::replace(&mut self.pending, rest)
            }
            None => text.to_owned(),
        }
    }
}

/// How much of `pending` (a streaming ACTION value's text not sent yet) may go out: all of
/// it up to the first close tag that names one of `names` (a misspelt close tag of the
/// value? `<date>March 10</room_type><guests>…</call>`: the decoder reads the value as
/// `March 10`, `mismatched_close_tag`), or the value's own key `own` but for ASCII case and
/// the separators `_`, `-` and `.` (`<DNA_id>XYZ123</dna_id>`, `<_from>New York</from>`:
/// the decoder reads either as the value's close tag), or whose name may still grow at the
/// end of `pending`. Sets `holding` at such a tag: from there the value waits for its end.
pub(super) fn held_back(pending: &str, own: &str, names: &[String], holding: &mut bool) -> usize {
    if *holding {
        return 0;
    }
    let mut from = 0;
    while let Some(at) = pending[from..].find("</").map(|i| from + i) {
        let name_start = at + 2;
        let name_len = pending[name_start..]
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
            .unwrap_or(pending.len() - name_start);
        if name_start + name_len == pending.len() {
            // The name may go on in the next piece.
            return at;
        }
        let name = &pending[name_start..name_start + name_len];
        if !name.is_empty() && (names.iter().any(|n| n == name) || same_loosely(name, own)) {
            *holding = true;
            return at;
        }
        from = name_start + name_len;
    }
    // A lone `<` at the very end may begin `</`.
    if pending.ends_with('<') {
        return pending.len() - 1;
    }
    pending.len()
}

/// `text` as the inside of a JSON string (escaping works character by character, so the
/// escaped pieces of a value join to the escaped value).
pub(super) fn json_inside(text: &str) -> String {
    let quoted = Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// Whether `key` is a property of `tool`'s schema whose type is exactly `"string"` and
/// that has no `enum` or `const`: the text the model writes is then the argument as it is,
/// and may stream. (For an `enum`, coercion may still change the text at its close — a
/// quoted member `'asc'` is the member `asc` — so such a value goes out once, complete.)
pub(super) fn is_string_property(tool: &tool_schema::CompiledTool, key: &str) -> bool {
    let Some(property) = tool
        .definition()
        .parameters
        .get("properties")
        .and_then(|p| p.get(key))
    else {
        return false;
    };
    property.get("type").and_then(Value::as_str) == Some("string")
        && property.get("enum").is_none()
        && property.get("const").is_none()
}

impl Emitter {
    pub(super) fn content(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Content(previous)) => previous.push_str(text),
            _ => self.pieces.push(Piece::Content(text.to_owned())),
        }
    }

    /// Reasoning the decoder split out of the text (a `<think>` section).
    pub(super) fn reasoning(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Reasoning(previous)) => previous.push_str(text),
            _ => self.pieces.push(Piece::Reasoning(text.to_owned())),
        }
    }

    /// A piece of call `index`'s arguments (joined to the previous piece of the same call).
    pub(super) fn arguments(&mut self, index: usize, text: &str) {
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

    pub(super) fn event(&mut self, event: tam::Event<'_>) {
        if self.turn_over {
            return;
        }
        match &event {
            tam::Event::BlockStart { protocol, span } => {
                self.in_block = Some(*protocol);
                self.calls_before_block = self.calls;
                self.block_start = span.start;
            }
            tam::Event::Text { .. }
            | tam::Event::TamBlock(_)
            | tam::Event::ActionBlock(_)
            | tam::Event::Diagnostic(_) => self.in_block = None,
            tam::Event::CommandSeen { .. }
            | tam::Event::ReasoningStart { .. }
            | tam::Event::Reasoning { .. }
            | tam::Event::ReasoningEnd { .. }
            | tam::Event::CallStart { .. }
            | tam::Event::ParamStart { .. }
            | tam::Event::ParamText { .. }
            | tam::Event::ParamEnd { .. }
            | tam::Event::CallEnd { .. } => {}
        }
        let closes = matches!(event, tam::Event::TamBlock(_) | tam::Event::ActionBlock(_));
        self.decoded_event(event);
        // A block that gave calls (whole, or streamed and completed) ends the turn.
        if closes && self.calls > self.calls_before_block && self.failure.is_none() {
            self.turn_over = true;
        }
    }

    pub(super) fn decoded_event(&mut self, event: tam::Event<'_>) {
        match event {
            tam::Event::Text { text, .. } => {
                // A block whose calls streamed came back as text (a server stopped in it
                // and, closed by its marker, it gave no call): those calls are void.
                self.void_open();
                self.content(&text)
            }
            // A `<think>` section of the text: reasoning, never calls.
            tam::Event::Reasoning { text, .. } => self.reasoning(&text),
            tam::Event::ReasoningStart { .. } | tam::Event::ReasoningEnd { .. } => {}
            tam::Event::BlockStart { protocol, .. } => {
                self.open = self.stream_args.then_some(OpenBlock {
                    protocol,
                    streamed: Vec::new(),
                    current: None,
                    param: None,
                });
            }
            tam::Event::CallStart { index, tool, .. } if self.action_blocks == 0 => {
                self.stream_call(tam::Protocol::Action, index, &tool);
            }
            tam::Event::CommandSeen { call: 0, tool, .. } => {
                self.stream_call(tam::Protocol::Tam, 0, &tool);
            }
            tam::Event::ParamStart { key, .. } => self.param_start(&key),
            tam::Event::ParamText {
                text, span, cdata, ..
            } => self.param_text(&text, span, cdata),
            tam::Event::ParamEnd { .. } => self.param_end(),
            tam::Event::CallEnd { .. } => {
                if let Some(open) = &mut self.open {
                    open.current = None;
                    open.param = None;
                }
            }
            // The one conversion of a decoded call, the agent's: TAM keys matched
            // canonically, ACTION parameters with their element sources.
            tam::Event::TamBlock(block) => self.tam_block(&block),
            tam::Event::ActionBlock(block) => self.action_block(&block),
            tam::Event::Diagnostic(diagnostic) => self.cut_block(&diagnostic),
            // A later TAM call begins (of a chain, or a call started by a repeated key):
            // what follows is not the streamed call's; it comes with the block.
            tam::Event::CommandSeen { .. } => {
                if let Some(open) = &mut self.open
                    && open.protocol == tam::Protocol::Tam
                {
                    open.current = None;
                    open.param = None;
                }
            }
            // Calls that do not stream: a call in an ACTION block after the first (they
            // come with their block, or not at all).
            tam::Event::CallStart { .. } => {}
        }
    }

    /// A closed TAM block: its calls, keys matched canonically, aliases under their names.
    fn tam_block(&mut self, block: &tam::TamBlock) {
        let offered = &self.offered;
        let mut calls = ToolCall::from_tam_block_with(block, |tool, key, text| {
            offered
                .resolve(tool)
                .and_then(|name| offered.get(name))
                .is_some_and(|t| t.is_one_item(key, KeyMatch::Canonical, text))
        });
        // Parameters the prompt offered under an alias, under their own names.
        for call in &mut calls {
            if let Some(name) = offered.resolve(&call.tool) {
                offered.unalias(name, &mut call.args);
            }
        }
        self.block(calls, Vec::new(), &block.diagnostics, &block.raw);
    }

    /// A closed ACTION block: the reply's first gives its calls, a later one its text.
    fn action_block(&mut self, block: &tam::ActionBlock) {
        self.action_blocks += 1;
        if block.index > 0 {
            // Only the first ACTION block of a reply holds calls.
            self.open = None;
            self.block_text(&block.raw, &block.diagnostics);
        } else {
            let calls = ToolCall::from_action_block(block);
            self.block(calls, written(block), &block.diagnostics, &block.raw);
        }
    }

    /// A block cut or never closed: its text, or a note when the decoder dropped its bytes.
    fn cut_block(&mut self, diagnostic: &Diagnostic) {
        // The decoder did not emit the text; one whose bytes it dropped (over its size
        // limit) leaves an error without its text. Either way a call streamed from it is
        // never completed.
        if let Some(raw) = &diagnostic.raw {
            self.void_open();
            self.content(raw);
        } else if diagnostic.is_error() {
            self.void_open();
            self.block_text("", std::slice::from_ref(diagnostic));
        }
    }

    /// The open block is gone without giving calls (its text comes back): the calls it
    /// counted whose first chunk did not go out are not calls; one whose first chunk went
    /// out is void (it still counts: the client saw it).
    pub(super) fn void_open(&mut self) {
        if let Some(open) = self.open.take() {
            let held = open.streamed.iter().filter(|s| s.index.is_none()).count();
            self.calls -= held;
            if held < open.streamed.len() {
                self.unfinished = true;
            }
        }
    }

    /// A call's tool id is known while its block is open: it may stream when the tool is
    /// offered and the call limit allows (TAM: the block's first call only), and counts
    /// against the limit from here. Its first chunk goes out now when
    /// [`Emitter::stream_after`] is 0, else once a string value of it is that long.
    pub(super) fn stream_call(&mut self, protocol: tam::Protocol, at: usize, tool: &str) {
        let offered = self.offered.resolve(tool).map(str::to_owned);
        let allowed = self.calls < self.max_calls;
        let Some(open) = &mut self.open else { return };
        open.current = None;
        open.param = None;
        let Some(tool) = offered.filter(|_| {
            open.protocol == protocol
                && allowed
                && (protocol != tam::Protocol::Tam || open.streamed.is_empty())
        }) else {
            return;
        };
        self.calls += 1;
        open.streamed.push(Streamed {
            at,
            index: None,
            tool,
            values: Vec::new(),
            opened: false,
            open_value: None,
            held: Vec::new(),
        });
        let slot = open.streamed.len() - 1;
        open.current = Some(slot);
        if self.stream_after == 0 {
            self.announce(slot);
        }
    }

    /// The first chunks of the open block's calls up to `slot` that have not gone out
    /// (in block order: the client's indexes follow the block's calls).
    fn announce(&mut self, slot: usize) {
        let Some(open) = &mut self.open else { return };
        for call in open.streamed[..=slot].iter_mut() {
            if call.index.is_none() {
                let index = self.next_index;
                self.next_index += 1;
                call.index = Some(index);
                self.pieces.push(Piece::CallStart {
                    index,
                    id: format!("call_{}_{index}", self.call_id_base),
                    name: call.tool.clone(),
                });
            }
        }
    }

    /// A parameter begins: it streams when its call streams, its key is a `string`
    /// property of the tool's schema (exactly) and it was not streamed before.
    pub(super) fn param_start(&mut self, key: &str) {
        let Some(open) = &mut self.open else { return };
        open.param = None;
        let Some(slot) = open.current else { return };
        let call = &mut open.streamed[slot];
        let streams = call.values.iter().all(|(k, _)| k != key)
            && !call.held.iter().any(|k| k == key)
            && self
                .offered
                .get(&call.tool)
                .is_some_and(|tool| is_string_property(tool, key));
        if !streams {
            return;
        }
        let action = open.protocol == tam::Protocol::Action;
        let names = match self.offered.get(&call.tool) {
            Some(tool) if action => {
                let properties = tool.definition().parameters.get("properties");
                let others = properties
                    .and_then(Value::as_object)
                    .into_iter()
                    .flat_map(|p| p.keys())
                    .filter(|k| *k != key);
                std::iter::once(&call.tool).chain(others).cloned().collect()
            }
            _ => Vec::new(),
        };
        open.param = Some(StreamingParam {
            key: key.to_owned(),
            value: String::new(),
            edges: action.then(tam::ValueEdges::new),
            names,
            pending: String::new(),
            holding: false,
            held: Some(String::new()),
        });
    }

    /// A piece of a streaming value goes out (ACTION: edge whitespace held back).
    pub(super) fn param_text(&mut self, text: &str, span: tam::Span, cdata: bool) {
        let Some(open) = &mut self.open else { return };
        let (Some(param), Some(slot)) = (&mut open.param, open.current) else {
            return;
        };
        let call = &mut open.streamed[slot];
        let out = param.ready(text, span, cdata);
        let mut escaped = String::new();
        let starts = param.held.is_some();
        let out = match &mut param.held {
            Some(held) => {
                held.push_str(&out);
                let tool = self.offered.get(&call.tool);
                if held.len() < self.stream_after
                    || tool.is_some_and(|tool| tool.text_may_change(&param.key, held))
                {
                    return;
                }
                // The value streams from here: its key first.
                escaped.push(if call.opened { ',' } else { '{' });
                escaped.push_str(&Value::String(param.key.clone()).to_string());
                escaped.push_str(":\"");
                call.opened = true;
                param.held.take().unwrap_or_default()
            }
            None => out,
        };
        param.value.push_str(&out);
        escaped.push_str(&json_inside(&out));
        if starts {
            // The call's first chunk (and those of the block's calls before it) goes out
            // before its first streamed value.
            self.announce(slot);
        }
        let index = self.open.as_ref().and_then(|o| o.streamed[slot].index);
        if let Some(index) = index {
            self.arguments(index, &escaped);
        }
    }

    /// A streaming value closed: its closing quote (ACTION: trailing CDATA whitespace).
    pub(super) fn param_end(&mut self) {
        let Some(open) = &mut self.open else { return };
        let (Some(mut param), Some(slot)) = (open.param.take(), open.current) else {
            return;
        };
        if param.held.is_some() {
            // Held to its end: it goes out with the typed arguments at the block's close.
            open.streamed[slot].held.push(param.key);
            return;
        }
        let mut out = std::mem::take(&mut param.pending);
        if let Some(edges) = &mut param.edges {
            edges.finish(&mut out);
        }
        param.value.push_str(&out);
        let call = &mut open.streamed[slot];
        call.values.push((param.key, param.value));
        // A value that streamed: its call's first chunk went out before it.
        let Some(index) = call.index else { return };
        let text = format!("{}\"", json_inside(&out));
        self.arguments(index, &text);
    }

    /// A closed block: calls when it decoded cleanly and names at least one offered tool
    /// (a call to a tool not offered comes back as text, the others stay calls), else its
    /// text. A block whose calls streamed completes them (module docs). `written` holds,
    /// per call of an ACTION block, where its element is in `raw` (empty for TAM, whose
    /// calls re-render without loss).
    pub(super) fn block(
        &mut self,
        mut calls: Vec<ToolCall>,
        written: Vec<Option<Range<usize>>>,
        diagnostics: &[Diagnostic],
        raw: &str,
    ) {
        // Each call names the offered tool it is for (`OfferedTools::resolve`).
        for call in &mut calls {
            if let Some(name) = self.offered.resolve(&call.tool)
                && name != call.tool
            {
                call.tool = name.to_owned();
            }
        }
        let mut streamed = self.open.take().map_or_else(Vec::new, |mut open| {
            // A value still streaming: the block closed around it (one still held did not
            // stream: it goes out with the typed arguments).
            if let (Some(param), Some(slot)) = (open.param.take(), open.current)
                && param.held.is_none()
            {
                open.streamed[slot].open_value = Some((param.key, param.value));
            }
            open.streamed
        });
        // Calls whose first chunk did not go out come with the block, as if none streamed.
        let counted = streamed.len();
        streamed.retain(|s| s.index.is_some());
        self.calls -= counted - streamed.len();
        let clean = !calls.is_empty() && !diagnostics.iter().any(Diagnostic::is_error);
        let offered = calls.iter().any(|c| self.offered.get(&c.tool).is_some());
        if !streamed.is_empty() {
            // A streamed call names an offered tool: the block has one.
            return self.complete_streamed(
                streamed,
                paired(calls, written),
                clean,
                diagnostics,
                raw,
            );
        }
        if !clean || !offered {
            return self.block_text(raw, diagnostics);
        }
        self.calls_or_text(paired(calls, written), raw);
    }

    /// Calls to offered tools within the limit; the rest written back as text: in ACTION
    /// their elements as the model wrote them, in one `<ACTION>` block (nothing the model
    /// wrote is dropped: an element's text outside any parameter, `<distance>300</distance>`
    /// written after the call it belonged to, comes back as written), else re-rendered in
    /// the protocol.
    pub(super) fn calls_or_text(&mut self, calls: Vec<(ToolCall, Written)>, raw: &str) {
        let mut over = Vec::new();
        for (call, written) in calls {
            if self.calls >= self.max_calls || self.offered.get(&call.tool).is_none() {
                over.push((call, written));
            } else {
                self.call(call);
            }
        }
        if over.is_empty() {
            return;
        }
        // Past the call limit (`parallel_tool_calls: false`), or to a tool the request
        // did not offer (not a tool call): written back as text.
        let text = if over.iter().all(|(_, written)| written.is_some()) {
            let elements: Vec<&str> = over
                .iter()
                .filter_map(|(_, w)| raw.get(w.clone()?))
                .collect();
            format!("<ACTION>\n{}\n</ACTION>", elements.join("\n"))
        } else {
            let past: Vec<PastCall> = over
                .into_iter()
                .map(|(call, _)| PastCall {
                    id: None,
                    raw_args: Value::Object(call.args.clone()).to_string(),
                    name: call.tool,
                    args: Some(call.args),
                })
                .collect();
            render_calls(self.protocol, &past)
        };
        self.content(&text);
    }

    /// The block of streamed calls closed: when it is calls and every streamed value is
    /// its final value, each streamed call's remaining (typed) arguments and `}`, other
    /// calls as usual; else the block's text and a failure.
    pub(super) fn complete_streamed(
        &mut self,
        streamed: Vec<Streamed>,
        calls: Vec<(ToolCall, Written)>,
        clean: bool,
        diagnostics: &[Diagnostic],
        raw: &str,
    ) {
        let finals: Vec<Map<String, Value>> =
            calls.iter().map(|(c, _)| self.final_args(c)).collect();
        let mismatch = streamed
            .iter()
            .find_map(|s| streamed_mismatch(s, &calls, &finals));
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
                "a block whose call was streamed is not a call (it did not decode)".to_owned()
            }));
            return self.block_text(raw, diagnostics);
        }
        let mut rest = Vec::new();
        for (at, (call, args)) in calls.into_iter().zip(finals).enumerate() {
            let Some((s, index)) = streamed
                .iter()
                .find(|s| s.at == at)
                .and_then(|s| Some((s, s.index?)))
            else {
                rest.push(call);
                continue;
            };
            self.arguments(index, &rest_of_streamed(s, &args));
            self.pieces.push(Piece::CallEnd { index });
        }
        self.calls_or_text(rest, raw);
    }

    /// A block that is not calls: its raw text, or (a block over the decoder's size limit,
    /// whose bytes the decoder dropped) a note saying so.
    pub(super) fn block_text(&mut self, raw: &str, diagnostics: &[Diagnostic]) {
        if raw.is_empty() {
            if let Some(error) = diagnostics.iter().find(|d| d.is_error()) {
                let note = format!("[tool block not shown ({}): {}]", error.code, error.message);
                self.content(&note);
            }
        } else {
            self.content(raw);
        }
    }

    /// A call's final arguments: coerced by its tool's schema, per argument:
    /// when some do not validate, those stay as the model wrote them and the others are
    /// still typed (the client validates and answers).
    pub(super) fn final_args(&self, call: &ToolCall) -> Map<String, Value> {
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
    pub(super) fn call(&mut self, call: ToolCall) {
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
        self.pieces.push(Piece::CallEnd { index });
    }

    /// A native call chunk: a call to an offered tool passes through (its index mapped
    /// after the proxy's own); one to a tool the request did not offer is held, and comes
    /// back as text at the end.
    pub(super) fn native_chunk(&mut self, chunk: ToolCallChunk) {
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

/// Where an ACTION call's element is in its block's raw text (none in TAM).
type Written = Option<Range<usize>>;

/// Why a streamed call is gone, renamed or has another value in the block (`None`: it is not).
fn streamed_mismatch(
    s: &Streamed,
    calls: &[(ToolCall, Written)],
    finals: &[Map<String, Value>],
) -> Option<String> {
    let Some((call, _)) = calls.get(s.at) else {
        return Some(format!("call {} of the block is gone", s.at));
    };
    if call.tool != s.tool {
        return Some(format!("call {} names {} now", s.at, call.tool));
    }
    let differs = |key: &str| {
        format!(
            "{}: the block's value of '{key}' is not the one streamed",
            s.tool
        )
    };
    if let Some((key, sent)) = &s.open_value
        && !finals[s.at]
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|value| value.starts_with(sent.as_str()))
    {
        return Some(differs(key));
    }
    s.values.iter().find_map(|(key, value)| {
        (finals[s.at].get(key) != Some(&Value::String(value.clone()))).then(|| differs(key))
    })
}

/// The rest of a streamed call's final arguments `args`: its open value's end, unsent keys, `}`.
fn rest_of_streamed(s: &Streamed, args: &Map<String, Value>) -> String {
    let mut text = String::new();
    // The value open at the block's close: the rest of its text and its quote
    // (checked by `streamed_mismatch`: the block's value begins with what was sent).
    if let Some((key, sent)) = &s.open_value
        && let Some(value) = args.get(key).and_then(Value::as_str)
    {
        text.push_str(&json_inside(&value[sent.len()..]));
        text.push('"');
    }
    for (key, value) in args {
        if s.values.iter().any(|(k, _)| k == key)
            || s.open_value.as_ref().is_some_and(|(k, _)| k == key)
        {
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
    text
}

/// Where each call element of an ACTION block is in the block's raw text.
fn written(block: &tam::ActionBlock) -> Vec<Written> {
    // What comes back as text when it is not a call (its text content, attributes and
    // layout included). Positions, not copies: a call's value can be a file.
    block
        .calls
        .iter()
        .map(|call| {
            let from = call.span.start.checked_sub(block.span.start)?;
            let to = call.span.end.checked_sub(block.span.start)?;
            block.raw.get(from..to).map(|_| from..to)
        })
        .collect()
}

/// Each call with where its element is (`written` is empty for TAM: none).
fn paired(calls: Vec<ToolCall>, written: Vec<Written>) -> Vec<(ToolCall, Written)> {
    let mut written = written.into_iter();
    calls
        .into_iter()
        .map(|call| (call, written.next().flatten()))
        .collect()
}
