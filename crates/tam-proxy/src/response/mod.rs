//! The upstream's stream turned into the one stream of decoded pieces every client API
//! writes: a sans-IO [`Translator`] that decodes the upstream's text into prose, reasoning
//! and calls ([`Piece`]s) and says how the reply ended ([`Finish`]). The API modules
//! (`crate::api`) write the pieces in their own events.

use serde_json::{Map, Value};

use crate::ProxyError;
use crate::conversation::OfferedTools;
use tam::turn::{ACTION_END, StoppedAt, close_stopped_block, stop_sequences};
use tam_model::{FinishReason, ModelItem};

use crate::ProtocolChoice;

mod emit;
#[cfg(test)]
mod tests;

use emit::Emitter;

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
    /// A call's arguments are complete (their pieces join to a JSON object). A call that
    /// began and never ends was voided: the reply ends with an error or a cut.
    CallEnd { index: usize },
}

/// How a reply ended, as the client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Calls were emitted, and every streamed call was completed.
    ToolCalls,
    /// The model ended its reply (or a stop sequence did).
    Stop,
    /// The reply hit the token limit.
    Length,
    /// Another reason the upstream named (`content_filter`, …).
    Other(String),
}

impl Finish {
    /// The reason in the OpenAI form (`finish_reason`).
    pub(crate) fn as_openai(&self) -> &str {
        match self {
            Finish::ToolCalls => "tool_calls",
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::Other(reason) => reason,
        }
    }
}

/// The protocol decoder of one response: the front door with the proxy's settings
/// (`decoder`), argument events on whatever they say, reading a call element of an offered
/// tool written without `<ACTION>` as a call.
fn block_decoder(decoder: tam::Config, offered: &OfferedTools) -> tam::Decoder {
    let mut config = decoder.with_param_events(true);
    config.protocol = match decoder.protocol {
        ProtocolChoice::Action => ProtocolChoice::Action,
        ProtocolChoice::Auto => ProtocolChoice::Auto,
        _ => ProtocolChoice::Tam,
    };
    tam::Decoder::new(config).with_bare_call_tools(offered.names())
}

/// Turns one upstream reply into [`Piece`]s.
///
/// Text goes through the protocol decoder (unless the request turned decoding off): prose
/// comes out as it is decided, a closed block whose calls all name offered tools as calls,
/// anything else as its raw text. Reasoning passes through; native tool-call chunks the
/// upstream sent anyway pass through with their own indexes mapped after the proxy's.
///
/// With `stream_after` (streaming requests), calls and their string arguments stream while
/// the block is written, by the rules of the module docs ("Arguments that stream"), once
/// one of a call's string values is that many bytes long.
pub(crate) struct Translator {
    decoder: Option<tam::Decoder>,
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
    /// The stop sequence the upstream said it stopped at, when it said.
    stopped_at: Option<String>,
}

impl Translator {
    /// A translator for one reply. `decode` false passes text through undecoded;
    /// `stream_after` (`Some` for a streaming request) streams a call and its string
    /// arguments while its block is written, from the moment one of its string values is
    /// that many bytes long (0: from its tool id; [`crate::ProxyConfig::stream_after_bytes`]).
    /// `decoder` is the proxy's decoder settings ([`crate::ProxyConfig::decoder`]).
    pub(crate) fn new(
        decoder: tam::Config,
        decode: bool,
        stream_after: Option<usize>,
        offered: OfferedTools,
        max_calls: usize,
        call_id_base: String,
    ) -> Self {
        let protocol = decoder.protocol;
        let tam_end = decoder.tam.dialect.end_marker();
        // The decoder's limit: TAM alone has its own, ACTION and both protocols at once
        // the ACTION one.
        let block_limit = match protocol {
            ProtocolChoice::Action | ProtocolChoice::Auto => decoder.action.max_block_bytes,
            _ => decoder.tam.max_block_bytes,
        };
        Self {
            decoder: decode.then(|| block_decoder(decoder, &offered)),
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
                stream_args: stream_after.is_some(),
                stream_after: stream_after.unwrap_or(usize::MAX),
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
            stopped_at: None,
        }
    }

    /// Reads one item of the upstream's stream. After the model's turn is over
    /// ([`Translator::turn_over`]) its text and native calls are dropped: the reply ends
    /// at the block.
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
            ModelItem::StopSequence(sequence) => self.stopped_at = Some(sequence),
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
    /// the reply is decoded in, so the model's turn ends at its block. Empty when
    /// the reply is not decoded.
    pub(crate) fn stop_sequences(&self) -> Vec<String> {
        let Some(decoder) = &self.decoder else {
            return Vec::new();
        };
        stop_sequences(decoder.protocol(), self.tam_end, [])
    }

    /// Ends the reply. `failed` (a transport error) and a `length` finish cut it: no call
    /// from a block open at the cut, whose text comes back as content. Returns the
    /// `finish_reason`: `tool_calls` when a call was emitted and every streamed call was
    /// completed, else the upstream's (`stop` when it sent none).
    pub(crate) fn finish(&mut self, failed: bool) -> Finish {
        let cut = failed || self.finish.as_ref().is_some_and(FinishReason::is_cut);
        // A server that honours the stop sequence leaves the end marker out: at a `stop`
        // finish, a block still open is closed by its marker when the server says it
        // stopped there, or, when it says nothing, when the block can end there (a reply
        // that mentions a start marker and ends by itself finishes with `stop` too). Its
        // decoder then decides whether the block holds calls.
        if !cut
            && !self.emitter.turn_over
            && self.finish == Some(FinishReason::Stop)
            && let Some(protocol) = self.emitter.in_block
            && let Some(decoder) = &mut self.decoder
        {
            let marker = match protocol {
                tam::Protocol::Tam => self.tam_end,
                _ => ACTION_END,
            };
            // A reply that ends with the marker was not stopped at it (the server ignored
            // the stop sequence): the block stays as the model wrote it. A block the
            // marker would take past the size limit has had its bytes dropped: it is a
            // block that never closed, and the decoder's finish says so.
            let size = self.fed.saturating_sub(self.emitter.block_start) + marker.len();
            if !self.tail.ends_with(marker) && size <= self.block_limit {
                let stopped = match &self.stopped_at {
                    Some(sequence) => StoppedAt::Sequence(sequence),
                    None => StoppedAt::Unreported,
                };
                for event in close_stopped_block(decoder, marker, stopped) {
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
        // A block the decoder left open (none should be): no call of it went out whole.
        self.emitter.void_open();
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
        // Native calls passed through are complete at a normal end.
        if !cut {
            for (_, index) in std::mem::take(&mut self.emitter.native) {
                self.emitter.pieces.push(Piece::CallEnd { index });
            }
        }
        if self.emitter.calls > 0 && !self.emitter.unfinished {
            Finish::ToolCalls
        } else {
            match &self.finish {
                // No call reached the client: the upstream's own `tool_calls` finish
                // named calls that were not passed on.
                Some(FinishReason::ToolCalls | FinishReason::Stop) | None => Finish::Stop,
                Some(FinishReason::Length) => Finish::Length,
                Some(reason) => Finish::Other(reason.as_str().to_owned()),
            }
        }
    }

    /// The client's own stop sequence the upstream said it stopped at (not the protocol's
    /// end marker, which is the proxy's): Messages' `stop_sequence`.
    pub(crate) fn client_stop_sequence(&self) -> Option<&str> {
        let sequence = self.stopped_at.as_deref()?;
        let ours = sequence == ACTION_END || sequence == self.tam_end;
        (!ours && self.finish == Some(FinishReason::Stop)).then_some(sequence)
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
