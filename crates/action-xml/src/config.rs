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
/// Use it to build a [`Grammar`] that scans other protocols too, with an
/// [`ActionLayer`](crate::ActionLayer) reading its blocks (the `tam` crate's decoder reads
/// TAM and ACTION in one stream so).
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
    /// (`tam::Decoder`, with its `tam::Config::reasoning_tags`) turns it on.
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

/// Most tool names a decoder takes for call elements written without `<ACTION>`
/// ([`Decoder::with_bare_call_tools`](crate::Decoder::with_bare_call_tools)); names past
/// this many are left out. Each name is one start marker the scanner tries at every `<`
/// that begins a prose line, so this bounds that work and the grammar's size.
pub const MAX_BARE_CALL_TOOLS: usize = 256;

/// Longest tool name, in bytes, a decoder takes for call elements written without
/// `<ACTION>`: its close tag `</name>` is one scanner marker, and markers are at most
/// [`tam_parse::scan::MAX_PATTERN_LEN`] (64) bytes long. Longer names are left out.
pub const MAX_BARE_CALL_NAME_BYTES: usize = tam_parse::scan::MAX_PATTERN_LEN - 3;

/// The tool names whose call elements count without `<ACTION>`: the ones a caller
/// offered that can be read so (see [`BareCallTools::new`]), in the order given.
///
/// [`Decoder::with_bare_call_tools`](crate::Decoder::with_bare_call_tools) builds one; a
/// decoder of its own over an [`ActionLayer`](crate::ActionLayer) puts their
/// [`syntaxes`](BareCallTools::syntaxes) into its grammar and hands them to
/// [`ActionLayer::with_bare_call_tools`](crate::ActionLayer::with_bare_call_tools). The
/// default has no names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BareCallTools {
    names: Vec<String>,
}

impl BareCallTools {
    /// The names of `offered` that a call element written without `<ACTION>` can carry:
    /// XML element names as ACTION reads tool ids (at most one colon), not `ACTION` nor a
    /// reasoning tag in any case, without U+FFFD, at most [`MAX_BARE_CALL_NAME_BYTES`]
    /// long; duplicates once; at most [`MAX_BARE_CALL_TOOLS`] of them.
    pub fn new<S: AsRef<str>>(offered: impl IntoIterator<Item = S>) -> Self {
        let mut names: Vec<String> = Vec::new();
        for name in offered {
            let name = name.as_ref();
            if names.len() == MAX_BARE_CALL_TOOLS {
                break;
            }
            let reserved = name.eq_ignore_ascii_case("ACTION")
                || tam_parse::scan::THINK_TAGS
                    .iter()
                    .any(|t| name.eq_ignore_ascii_case(t));
            if name.len() <= MAX_BARE_CALL_NAME_BYTES
                && !reserved
                && !name.contains('\u{FFFD}')
                && crate::render::is_element_name(name)
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_owned());
            }
        }
        BareCallTools { names }
    }

    /// The names kept, in the order given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether no name was kept (the rule never applies).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// One block syntax per name: `<name>` opening a prose line (blanks before it aside,
    /// inside a code fence too) to `</name>`, both exactly as the name is written (a tool
    /// id is matched as written), with CDATA sections and comments as regions as in a
    /// block.
    pub fn syntaxes(&self) -> impl Iterator<Item = BlockSyntax> + '_ {
        self.names.iter().map(|name| BlockSyntax {
            start: Pattern::exact(&format!("<{name}>")).at_line_start(),
            end: Pattern::exact(&format!("</{name}>")),
            regions: block_syntax().regions,
            restart_on_start: false,
        })
    }

    /// `base` and then these names' syntaxes, compiled (the bare kinds follow `base`'s).
    pub fn grammar(&self, base: Vec<BlockSyntax>) -> Arc<Grammar> {
        let mut syntaxes = base;
        syntaxes.extend(self.syntaxes());
        Grammar::new(syntaxes).expect("bare call names are checked to make valid markers")
    }
}
