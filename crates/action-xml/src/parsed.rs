//! One-shot parsing of a whole model output.

use tam_parse::Diagnostic;

use crate::call::{ActionBlock, ActionCall};
use crate::codes;
use crate::config::Config;
use crate::decoder::Decoder;
use crate::event::Event;
use crate::fence::is_fence_line;

/// A whole model output, parsed: what [`parse`] returns.
///
/// With feature `serde`: `{"response_text", "calls", "trailing_text", "diagnostics",
/// "blocks"}`.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Parsed {
    /// The prose before the first block (all of it when there is none), without a code
    /// fence line that opened right before the block, trimmed of surrounding whitespace.
    pub response_text: String,
    /// The calls of the first block: the ones that run by default.
    pub calls: Vec<ActionCall>,
    /// The prose after the first block (between and after later blocks too), without the
    /// fence line that closed a fenced block, trimmed of surrounding whitespace.
    pub trailing_text: String,
    /// Every diagnostic in stream order: the blocks' and those outside blocks.
    pub diagnostics: Vec<Diagnostic>,
    /// Every block, the first included.
    pub blocks: Vec<ActionBlock>,
}

impl Parsed {
    /// True when some diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Parses a whole output with the default [`Config`]: exactly the events of feeding `text`
/// to a [`Decoder`] as one delta and finishing, gathered.
///
/// ```
/// let out = action_xml::parse("Reading.\n<ACTION><read_file><path>a.txt</path></read_file></ACTION>");
/// assert_eq!(out.response_text, "Reading.");
/// assert_eq!(out.calls[0].tool, "read_file");
/// assert_eq!(out.calls[0].get_str("path"), Some("a.txt"));
/// ```
pub fn parse(text: &str) -> Parsed {
    parse_with(text, Config::default())
}

/// [`parse`] with settings.
pub fn parse_with(text: &str, config: Config) -> Parsed {
    // Argument events would be dropped: the decoder does not compute them.
    let mut decoder = Decoder::new(config).with_param_events(false);
    let mut before = String::new();
    let mut after = String::new();
    let mut parsed = Parsed::default();
    let mut gather = |event: Event<'_>| match event {
        Event::Text { text, .. } => {
            if parsed.blocks.is_empty() {
                before.push_str(&text);
            } else {
                after.push_str(&text);
            }
        }
        Event::Block(block) => {
            parsed.diagnostics.extend(block.diagnostics.iter().cloned());
            parsed.blocks.push(block);
        }
        Event::Diagnostic(d) => parsed.diagnostics.push(d),
        Event::BlockStart { .. }
        | Event::CallStart { .. }
        | Event::ParamStart { .. }
        | Event::ParamText { .. }
        | Event::ParamEnd { .. }
        | Event::CallEnd { .. }
        | Event::ReasoningStart { .. }
        | Event::Reasoning { .. }
        | Event::ReasoningEnd { .. } => {}
    };
    decoder.feed(text, &mut gather);
    decoder.finish(&mut gather);
    // The fence line right before the first block (only blanks between them).
    let fenced_at = parsed.blocks.first().and_then(|b| {
        b.diagnostics
            .iter()
            .find(|d| d.code == codes::FENCED_BLOCK)
            .filter(|d| {
                before
                    .get(d.span.end..)
                    .is_some_and(|between| between.trim().is_empty())
            })
            .map(|d| d.span.start)
    });
    if let Some(at) = fenced_at {
        before.truncate(at.min(before.len()));
        let rest = after.trim_start();
        let line_end = rest.find('\n').unwrap_or(rest.len());
        if is_fence_line(&rest[..line_end]) {
            after = rest[line_end..].to_owned();
        }
    }
    parsed.response_text = before.trim().to_owned();
    parsed.trailing_text = after.trim().to_owned();
    if let Some(first) = parsed.blocks.first() {
        parsed.calls = first.calls.clone();
    }
    parsed
}
