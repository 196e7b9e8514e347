//! Settings of the both-protocol decoder.

use crate::config::Config;
use crate::protocol::ProtocolChoice;

/// Settings of a [`MixedDecoder`](crate::MixedDecoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MixedConfig {
    /// TAM settings: dialect and per-block limits (`max_calls`, `max_key_len`). Its
    /// `param_events` is overridden by [`MixedConfig::param_events`](crate::MixedConfig::param_events).
    pub tam: tam_parse::Config,
    /// ACTION settings. Its `max_block_bytes` is the block size limit of both protocols
    /// (the scanner has one).
    pub action: Config,
    /// Stream arguments for both protocols: [`MixedEvent::CallStart`](crate::MixedEvent::CallStart),
    /// [`MixedEvent::ParamStart`](crate::MixedEvent::ParamStart), [`MixedEvent::ParamText`](crate::MixedEvent::ParamText), [`MixedEvent::ParamEnd`](crate::MixedEvent::ParamEnd) and
    /// [`MixedEvent::CallEnd`](crate::MixedEvent::CallEnd) while blocks are written. Off, none of them is emitted.
    /// Default: `true` (measured cost: see the crate docs, "Both protocols in one
    /// stream").
    pub param_events: bool,
    /// Which protocol(s) an `tam::Decoder` looks for. Default:
    /// [`ProtocolChoice::Auto`](crate::ProtocolChoice::Auto). [`MixedDecoder`](crate::MixedDecoder) ignores it: it always reads both.
    pub protocol: ProtocolChoice,
    /// Read `<think>` … `</think>` and `<thinking>` … `</thinking>` sections as reasoning
    /// ([`MixedEvent::ReasoningStart`](crate::MixedEvent::ReasoningStart), [`MixedEvent::Reasoning`](crate::MixedEvent::Reasoning),
    /// [`MixedEvent::ReasoningEnd`](crate::MixedEvent::ReasoningEnd)) for every protocol choice, never as calls:
    /// the open tag counts where it is the first non-blank text of a prose line outside a
    /// code fence (models write it at the very start of the reply, sometimes after blank
    /// lines), and the section runs to its matching close tag or to the end of the stream.
    /// Overrides `tam.reasoning_tags` and `action.reasoning_tags`. Default: `true`: the
    /// front door is what `tam decode`, `tam serve` and the agent read a model's reply
    /// with, and all of them must keep reasoning apart from calls.
    pub reasoning_tags: bool,
}

impl Default for MixedConfig {
    fn default() -> Self {
        MixedConfig {
            tam: tam_parse::Config::default(),
            action: Config::default(),
            param_events: true,
            protocol: ProtocolChoice::default(),
            reasoning_tags: true,
        }
    }
}

impl MixedConfig {
    /// The defaults for `protocol`.
    pub fn for_protocol(protocol: ProtocolChoice) -> Self {
        MixedConfig {
            protocol,
            ..MixedConfig::default()
        }
    }

    /// These settings with argument streaming ([`MixedConfig::param_events`](crate::MixedConfig::param_events)) on or off.
    pub fn with_param_events(mut self, on: bool) -> Self {
        self.param_events = on;
        self
    }

    /// These settings with reasoning sections ([`MixedConfig::reasoning_tags`](crate::MixedConfig::reasoning_tags)) on or off.
    pub fn with_reasoning_tags(mut self, on: bool) -> Self {
        self.reasoning_tags = on;
        self
    }
}
