//! The decoder's settings.

use crate::protocol::ProtocolChoice;

/// Settings of a [`Decoder`](crate::Decoder): which protocol(s), each protocol's limits,
/// argument events, reasoning sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// TAM settings: dialect and per-block limits (`max_calls`, `max_key_len`). Its
    /// `param_events` and `reasoning_tags` are overridden by [`Config::param_events`] and
    /// [`Config::reasoning_tags`]; its `max_block_bytes` counts for
    /// [`ProtocolChoice::Tam`] only.
    pub tam: tam_parse::Config,
    /// ACTION settings. Its `max_block_bytes` is the block size limit of both protocols
    /// for [`ProtocolChoice::Auto`] (the scanner has one); its `reasoning_tags` is
    /// overridden by [`Config::reasoning_tags`].
    pub action: action_xml::Config,
    /// Stream arguments for both protocols: [`Event::CallStart`](crate::Event::CallStart),
    /// [`Event::ParamStart`](crate::Event::ParamStart),
    /// [`Event::ParamText`](crate::Event::ParamText),
    /// [`Event::ParamEnd`](crate::Event::ParamEnd) and
    /// [`Event::CallEnd`](crate::Event::CallEnd) while blocks are written. Off, none of
    /// them is emitted. Default: `true` (measured cost: see the crate docs, "Both protocols
    /// in one stream").
    pub param_events: bool,
    /// Which protocol(s) the [`Decoder`](crate::Decoder) looks for. Default:
    /// [`ProtocolChoice::Auto`].
    pub protocol: ProtocolChoice,
    /// Read `<think>` … `</think>` and `<thinking>` … `</thinking>` sections as reasoning
    /// ([`Event::ReasoningStart`](crate::Event::ReasoningStart),
    /// [`Event::Reasoning`](crate::Event::Reasoning),
    /// [`Event::ReasoningEnd`](crate::Event::ReasoningEnd)) for every protocol choice, never as calls:
    /// the open tag counts where it is the first non-blank text of a prose line outside a
    /// code fence (models write it at the very start of the reply, sometimes after blank
    /// lines), and the section runs to its matching close tag or to the end of the stream.
    /// Overrides `tam.reasoning_tags` and `action.reasoning_tags`. Default: `true`: the
    /// front door is what `tam decode`, `tam serve` and the agent read a model's reply
    /// with, and all of them must keep reasoning apart from calls.
    pub reasoning_tags: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tam: tam_parse::Config::default(),
            action: action_xml::Config::default(),
            param_events: true,
            protocol: ProtocolChoice::default(),
            reasoning_tags: true,
        }
    }
}

impl Config {
    /// The defaults for `protocol`.
    pub fn for_protocol(protocol: ProtocolChoice) -> Self {
        Config {
            protocol,
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
