//! Values of the command line's options shared by several commands. A leaf: it uses no
//! other module of the command line, so the commands that share them do not depend on
//! one another.

use clap::ValueEnum;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use tam::{Protocol, ProtocolChoice};
use tool_schema::PromptLanguage;

/// A `--protocol` that names one protocol: the front door's [`Protocol`] by its names
/// (`tam`, `action`).
pub(crate) fn protocol_parser() -> impl TypedValueParser<Value = Protocol> {
    PossibleValuesParser::new(Protocol::ALL.map(Protocol::as_str))
        .try_map(|name| name.parse::<Protocol>())
}

/// A `--protocol` that may also read both: the front door's [`ProtocolChoice`] by its names
/// (`tam`, `action`, `auto`).
pub(crate) fn protocol_choice_parser() -> impl TypedValueParser<Value = ProtocolChoice> {
    PossibleValuesParser::new(ProtocolChoice::ALL.map(ProtocolChoice::as_str))
        .try_map(|name| name.parse::<ProtocolChoice>())
}

/// The language of a system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PromptLanguageChoice {
    /// English.
    En,
    /// Chinese, the seeds' wording.
    Zh,
}

impl From<PromptLanguageChoice> for PromptLanguage {
    fn from(choice: PromptLanguageChoice) -> Self {
        match choice {
            PromptLanguageChoice::En => PromptLanguage::English,
            PromptLanguageChoice::Zh => PromptLanguage::Chinese,
        }
    }
}
