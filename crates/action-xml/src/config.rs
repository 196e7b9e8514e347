//! The ACTION block syntax for the shared scanner, its grammar, and decoder settings.

use std::sync::{Arc, OnceLock};

use tam_parse::scan::{BlockSyntax, Grammar, Pattern, Region};

/// Region index of CDATA sections in [`block_syntax`].
pub(crate) const REGION_CDATA: usize = 0;
/// Region index of comments in [`block_syntax`].
pub(crate) const REGION_COMMENT: usize = 1;
const CDATA_OPEN: &str = "<![CDATA[";
const COMMENT_OPEN: &str = "<!--";

/// The ACTION block syntax for the shared scanner: `<ACTION>` … `</ACTION>` (ASCII
/// case-insensitive, blanks allowed inside the tags), with CDATA sections and comments as
/// regions in which `</ACTION>` does not close the block.
///
/// Use it to build a [`Grammar`] that scans other protocols too (as [`crate::MixedDecoder`]
/// does).
pub fn block_syntax() -> BlockSyntax {
    BlockSyntax {
        start: Pattern::tag("ACTION"),
        end: Pattern::closing_tag("ACTION"),
        regions: vec![
            Region {
                open: Pattern::exact(CDATA_OPEN),
                close: Pattern::exact("]]>"),
                block_markers_inside: false,
            },
            Region {
                open: Pattern::exact(COMMENT_OPEN),
                close: Pattern::exact("-->"),
                block_markers_inside: false,
            },
        ],
        restart_on_start: false,
    }
}

/// The compiled grammar of ACTION blocks alone (built once per process).
pub fn grammar() -> Arc<Grammar> {
    static GRAMMAR: OnceLock<Arc<Grammar>> = OnceLock::new();
    Arc::clone(
        GRAMMAR.get_or_init(|| {
            Grammar::new(vec![block_syntax()]).expect("the ACTION grammar is valid")
        }),
    )
}

/// Decoder settings. Every limit bounds memory or work per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Largest block kept, in bytes, tags included. A larger block is reported with error
    /// `block_too_large` and no calls; its bytes are dropped as they arrive, and the
    /// decoder holds at most this plus 64 KiB meanwhile. Default: 1 MiB.
    pub max_block_bytes: usize,
    /// Deepest element nesting inside `<ACTION>` (a call is level 1, its parameters level
    /// 2). Deeper input gets error `nesting_too_deep` (pointing at the deepest element)
    /// and no calls; it is checked by an iterative pre-scan before any parser recurses.
    /// Only real nesting counts: inside a value, a `<` that opens an element never closed
    /// there (`Vec<String>`, `a < b`) is text and costs no depth. Values above 256 count
    /// as 256. Default: 64.
    pub max_depth: usize,
    /// Most XML nodes (elements, text runs) in one block, passed to roxmltree as its
    /// `nodes_limit`. More gets error `too_many_nodes` and no calls. Default: 65 536.
    pub max_nodes: u32,
    /// Read `<think>` … `</think>` and `<thinking>` … `</thinking>` sections of the prose
    /// as reasoning ([`Event::ReasoningStart`](crate::Event::ReasoningStart),
    /// [`Event::Reasoning`](crate::Event::Reasoning),
    /// [`Event::ReasoningEnd`](crate::Event::ReasoningEnd)), never as calls: the open tag
    /// counts where it is the first non-blank text of a prose line outside a code fence, and
    /// the section runs to its matching close tag or to the end of the stream. Default:
    /// `false` for this crate's [`Decoder`](crate::Decoder) (opt-in); the front door
    /// ([`MixedConfig::reasoning_tags`](crate::MixedConfig::reasoning_tags)) turns it on.
    pub reasoning_tags: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_block_bytes: 1 << 20,
            max_depth: 64,
            max_nodes: 1 << 16,
            reasoning_tags: false,
        }
    }
}

impl Config {
    /// These settings with reasoning sections ([`Config::reasoning_tags`]) on or off.
    pub fn with_reasoning_tags(mut self, on: bool) -> Self {
        self.reasoning_tags = on;
        self
    }
}
