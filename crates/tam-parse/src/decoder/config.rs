//! Settings of the TAM decoder: markers, dialects, limits.

use std::sync::{Arc, OnceLock};

use crate::block::CallRules;
use crate::scan::{BlockSyntax, Grammar, Pattern, Region};

/// Value open marker.
pub const VALUE_OPEN: &str = "「始」";
/// Value close marker.
pub const VALUE_CLOSE: &str = "「末」";
/// Open marker of the ESCAPE value form, inside which `「末」` is content.
pub const ESCAPE_OPEN: &str = "「始ESCAPE」";
/// Close marker of the ESCAPE value form.
pub const ESCAPE_CLOSE: &str = "「末ESCAPE」";

/// Region indices in the TAM block syntax.
pub(super) const REGION_VALUE: usize = 0;
pub(super) const REGION_ESCAPE: usize = 1;

/// Which markers delimit blocks and how calls are named.
///
/// With feature `serde`: `"tam"` or `"vcp"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
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

    pub(super) fn rules(self) -> CallRules {
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
    /// Marker dialect. Default: [`Dialect::Tam`](crate::Dialect::Tam).
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
    /// Stream arguments: emit [`Event::ParamStart`](crate::Event::ParamStart), [`Event::ParamText`](crate::Event::ParamText) and
    /// [`Event::ParamEnd`](crate::Event::ParamEnd) while values are written. Default: `true`, as in
    /// action-xml and the front door (`tam::Config::param_events`): one default for the
    /// switch wherever it is set. Off, no argument event is emitted and nothing is spent on
    /// them; every other event is the same.
    pub param_events: bool,
    /// Read `<think>` … `</think>` and `<thinking>` … `</thinking>` sections of the prose
    /// as reasoning ([`Event::ReasoningStart`](crate::Event::ReasoningStart), [`Event::Reasoning`](crate::Event::Reasoning),
    /// [`Event::ReasoningEnd`](crate::Event::ReasoningEnd)): never decoded into calls. The open tag counts
    /// where it is the first non-blank text of a prose line outside a code fence; the
    /// section runs to its matching close tag, or to the end of the stream. Default:
    /// `false` (opt-in: off, the tags are prose). action-xml's front door turns it on.
    pub reasoning_tags: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dialect: Dialect::Tam,
            max_block_bytes: 1 << 20,
            max_calls: 64,
            max_key_len: 128,
            param_events: true,
            reasoning_tags: false,
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

    /// These settings with argument streaming ([`Config::param_events`](crate::Config::param_events)) on or off.
    pub fn with_param_events(mut self, on: bool) -> Self {
        self.param_events = on;
        self
    }

    /// These settings with reasoning sections ([`Config::reasoning_tags`](crate::Config::reasoning_tags)) on or off.
    pub fn with_reasoning_tags(mut self, on: bool) -> Self {
        self.reasoning_tags = on;
        self
    }
}
