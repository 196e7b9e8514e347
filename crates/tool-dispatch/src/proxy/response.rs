//! The upstream's stream turned into the client's: a sans-IO [`Translator`] that decodes
//! the upstream's text into prose and calls ([`Piece`]s), a [`ChunkWriter`] that writes
//! pieces as `chat.completion.chunk` objects, and a [`Completion`] that gathers them into
//! one `chat.completion`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use action_xml::MixedEvent;
use serde_json::{Map, Value, json};
use tam_parse::Diagnostic;

use super::history::{PastCall, render_calls};
use super::request::OfferedTools;
use crate::{FinishReason, ModelItem, Protocol, ToolCall, ToolCallChunk};

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

/// The protocol decoder of one response.
enum BlockDecoder {
    Tam(tam_parse::Decoder),
    Action(action_xml::Decoder),
    Both(action_xml::MixedDecoder),
}

impl BlockDecoder {
    fn new(protocol: Protocol, tam: tam_parse::Config, action: action_xml::Config) -> Self {
        match protocol {
            Protocol::Action => Self::Action(action_xml::Decoder::new(action)),
            Protocol::Both => {
                let mut config = action_xml::MixedConfig::default();
                config.tam = tam;
                config.action = action;
                Self::Both(action_xml::MixedDecoder::new(config))
            }
            _ => Self::Tam(tam_parse::Decoder::new(tam)),
        }
    }

    fn feed(&mut self, delta: &str, mut out: impl FnMut(MixedEvent<'_>)) {
        match self {
            Self::Tam(d) => d.feed(delta, |e| out(e.into())),
            Self::Action(d) => d.feed(delta, |e| out(e.into())),
            Self::Both(d) => d.feed(delta, out),
        }
    }

    fn finish(self, cut: bool, mut out: impl FnMut(MixedEvent<'_>)) {
        match (self, cut) {
            (Self::Tam(d), false) => d.finish(|e| out(e.into())),
            (Self::Tam(d), true) => d.finish_cut(|e| out(e.into())),
            (Self::Action(d), false) => d.finish(|e| out(e.into())),
            (Self::Action(d), true) => d.finish_cut(|e| out(e.into())),
            (Self::Both(d), false) => d.finish(out),
            (Self::Both(d), true) => d.finish_cut(out),
        }
    }
}

/// Turns one upstream reply into [`Piece`]s.
///
/// Text goes through the protocol decoder (unless the request turned decoding off): prose
/// comes out as it is decided, a closed block whose calls all name offered tools as calls,
/// anything else as its raw text. Reasoning passes through; native tool-call chunks the
/// upstream sent anyway pass through with their own indexes mapped after the proxy's.
pub(crate) struct Translator {
    decoder: Option<BlockDecoder>,
    emitter: Emitter,
    finish: Option<FinishReason>,
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
    call_id_base: String,
    pieces: Vec<Piece>,
}

impl Translator {
    /// A translator for one reply. `decode` false passes text through undecoded.
    pub(crate) fn new(
        protocol: Protocol,
        decode: bool,
        offered: OfferedTools,
        max_calls: usize,
        tam: tam_parse::Config,
        action: action_xml::Config,
        call_id_base: String,
    ) -> Self {
        Self {
            decoder: decode.then(|| BlockDecoder::new(protocol, tam, action)),
            emitter: Emitter {
                offered,
                protocol,
                max_calls,
                calls: 0,
                next_index: 0,
                native: Vec::new(),
                call_id_base,
                pieces: Vec::new(),
            },
            finish: None,
        }
    }

    /// Reads one item of the upstream's stream.
    pub(crate) fn feed(&mut self, item: ModelItem) {
        match item {
            ModelItem::Text(text) => match &mut self.decoder {
                Some(decoder) => decoder.feed(&text, |event| self.emitter.event(event)),
                None => self.emitter.content(&text),
            },
            ModelItem::Reasoning(text) => self.emitter.pieces.push(Piece::Reasoning(text)),
            ModelItem::ToolCallChunk(chunk) => self.emitter.native_chunk(chunk),
            ModelItem::Finish(reason) => self.finish = Some(reason),
        }
    }

    /// Ends the reply. `failed` (a transport error) and a `length` finish cut it: no call
    /// from a block open at the cut, whose text comes back as content (SPEC §5). Returns the
    /// `finish_reason`: `tool_calls` when a call was emitted, else the upstream's (`stop`
    /// when it sent none).
    pub(crate) fn finish(&mut self, failed: bool) -> String {
        let cut = failed || self.finish.as_ref().is_some_and(FinishReason::is_cut);
        if let Some(decoder) = self.decoder.take() {
            decoder.finish(cut, |event| self.emitter.event(event));
        }
        if self.emitter.calls > 0 {
            "tool_calls".to_owned()
        } else {
            self.finish
                .as_ref()
                .map_or_else(|| "stop".to_owned(), |r| r.as_str().to_owned())
        }
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

    fn event(&mut self, event: MixedEvent<'_>) {
        match event {
            MixedEvent::Text { text, .. } => self.content(&text),
            MixedEvent::TamBlock(block) => {
                let calls = block
                    .calls
                    .iter()
                    .map(|call| {
                        let args = call
                            .params
                            .iter()
                            .map(|p| (p.key.to_string(), Value::String(p.value.to_string())))
                            .collect();
                        ToolCall::canonical(call.tool.to_string(), args)
                    })
                    .collect();
                self.block(calls, &block.diagnostics, &block.raw);
            }
            MixedEvent::ActionBlock(block) => {
                if block.index > 0 {
                    // Only the first ACTION block of a reply holds calls (SPEC §3).
                    self.block_text(&block.raw, &block.diagnostics);
                } else {
                    let calls = block
                        .calls
                        .into_iter()
                        .map(|call| ToolCall::new(call.tool, call.args))
                        .collect();
                    self.block(calls, &block.diagnostics, &block.raw);
                }
            }
            // A block cut or never closed: its text, which the decoder did not emit.
            MixedEvent::Diagnostic(diagnostic) => {
                if let Some(raw) = &diagnostic.raw {
                    self.content(raw);
                }
            }
            _ => {}
        }
    }

    /// A closed block: calls when it decoded cleanly and every call names an offered tool,
    /// else its text.
    fn block(&mut self, calls: Vec<ToolCall>, diagnostics: &[Diagnostic], raw: &str) {
        let clean = !calls.is_empty() && !diagnostics.iter().any(Diagnostic::is_error);
        if !clean || calls.iter().any(|c| self.offered.get(&c.tool).is_none()) {
            return self.block_text(raw, diagnostics);
        }
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

    /// One call to an offered tool: arguments coerced by its schema; when they do not
    /// validate, the arguments as the model wrote them (the client validates and answers).
    fn call(&mut self, call: ToolCall) {
        let arguments = match self.offered.get(&call.tool) {
            Some(tool) => match tool.coerce(call.args.clone(), call.key_match) {
                Ok(coerced) => coerced,
                Err(_) => call.args,
            },
            None => call.args,
        };
        let index = self.next_index;
        self.next_index += 1;
        self.calls += 1;
        self.pieces.push(Piece::CallStart {
            index,
            id: format!("call_{}_{index}", self.call_id_base),
            name: call.tool,
        });
        // Arguments arrive whole at block close; with argument-streaming parser events this
        // becomes one piece per decoded value run.
        self.pieces.push(Piece::CallArguments {
            index,
            text: Value::Object(arguments).to_string(),
        });
    }

    fn native_chunk(&mut self, chunk: ToolCallChunk) {
        let index = match self.native.iter().find(|(up, _)| *up == chunk.index) {
            Some(&(_, index)) => index,
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
    use crate::proxy::request::translate;

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
            (Some(Piece::Content(previous)), Piece::Content(text)) => previous.push_str(&text),
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

    #[test]
    fn tam_calls_and_prose_are_the_same_for_every_split() {
        let text = "Look: a<b.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\ndays:「始」3「末」\n<|[END_TOOL]|>\nBye 日本";
        let (pieces, reason) = every_split(Protocol::Tam, text);
        let [start, args] = call(0, "get_weather", r#"{"city":"Paris","days":3}"#);
        assert_eq!(
            pieces,
            [
                Piece::Content("Look: a<b.\n".into()),
                start,
                args,
                Piece::Content("\nBye 日本".into())
            ]
        );
        assert_eq!(reason, "tool_calls");
    }

    #[test]
    fn action_calls_and_extra_blocks_are_the_same_for_every_split() {
        let block = "<ACTION><get_weather><city>Rome &amp; Co</city></get_weather></ACTION>";
        let text = format!("Ok.\n{block}\n{block}");
        let (pieces, reason) = every_split(Protocol::Action, &text);
        let [start, args] = call(0, "get_weather", r#"{"city":"Rome & Co"}"#);
        assert_eq!(
            pieces,
            [
                Piece::Content("Ok.\n".into()),
                start,
                args,
                Piece::Content(format!("\n{block}"))
            ]
        );
        assert_eq!(reason, "tool_calls");
    }

    #[test]
    fn both_protocols_decode_in_one_reply() {
        let text = "A.\n<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Oslo「末」\n<|[END_TOOL]|>\nB.\n<ACTION><get_weather><days>2</days></get_weather></ACTION>";
        let (pieces, reason) = every_split(Protocol::Both, text);
        let [start0, args0] = call(0, "get_weather", r#"{"city":"Oslo"}"#);
        let [start1, args1] = call(1, "get_weather", r#"{"days":2}"#);
        assert_eq!(
            pieces,
            [
                Piece::Content("A.\n".into()),
                start0,
                args0,
                Piece::Content("\nB.\n".into()),
                start1,
                args1
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

    #[test]
    fn native_chunks_pass_through_after_decoded_calls() {
        let mut t = translator(Protocol::Tam);
        t.feed(ModelItem::Text(
            "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\n<|[END_TOOL]|>".into(),
        ));
        t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
            0,
            Some("up_1".into()),
            Some("other".into()),
            "{\"a\":",
        )));
        t.feed(ModelItem::ToolCallChunk(ToolCallChunk::new(
            0, None, None, "1}",
        )));
        let reason = t.finish(false);
        let pieces: Vec<Piece> = t.drain().collect();
        let [start, args] = call(0, "get_weather", "{}");
        assert_eq!(
            pieces,
            [
                start,
                args,
                Piece::CallStart {
                    index: 1,
                    id: "up_1".into(),
                    name: "other".into()
                },
                Piece::CallArguments {
                    index: 1,
                    text: "{\"a\":".into()
                },
                Piece::CallArguments {
                    index: 1,
                    text: "1}".into()
                },
            ]
        );
        assert_eq!(reason, "tool_calls");
    }
}
