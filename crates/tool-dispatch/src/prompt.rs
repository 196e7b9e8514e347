//! The one mapping of the workspace from the decoder's [`ProtocolChoice`] to the prompt and
//! the grammar of tool-schema, which never names the front door's types (it is a standalone
//! crate): its constructors choose the protocol instead.

use tool_schema::grammar::GrammarOptions;
use tool_schema::{PromptLanguage, SystemPrompt};

use crate::{Protocol, ProtocolChoice};

/// The protocol a model reading `protocol` is taught to write: ACTION for
/// [`ProtocolChoice::Action`]; TAM for [`ProtocolChoice::Tam`] and for
/// [`ProtocolChoice::Auto`] (its decoder reads both; a prompt teaches one, TAM).
pub fn taught_protocol(protocol: ProtocolChoice) -> Protocol {
    match protocol {
        ProtocolChoice::Action => Protocol::Action,
        ProtocolChoice::Tam | ProtocolChoice::Auto => Protocol::Tam,
    }
}

/// tool-schema's built-in system prompt for a decoder reading `protocol`, in `language`:
/// [`SystemPrompt::tam`] or [`SystemPrompt::action`], as [`taught_protocol`] says.
///
/// ```
/// use tool_dispatch::{ProtocolChoice, system_prompt_for};
/// use tool_schema::{PromptLanguage, SystemPrompt};
///
/// let auto = system_prompt_for(ProtocolChoice::Auto, PromptLanguage::English);
/// assert_eq!(auto, SystemPrompt::tam(PromptLanguage::English));
/// ```
pub fn system_prompt_for(protocol: ProtocolChoice, language: PromptLanguage) -> SystemPrompt {
    match taught_protocol(protocol) {
        Protocol::Tam => SystemPrompt::tam(language),
        Protocol::Action => SystemPrompt::action(language),
    }
}

/// The options of tool-schema's strict-call grammar for a decoder reading `protocol`
/// (lazy, default limits): [`GrammarOptions::tam`] or [`GrammarOptions::action`], the
/// blocks [`system_prompt_for`] teaches.
pub fn grammar_options_for(protocol: ProtocolChoice) -> GrammarOptions {
    match taught_protocol(protocol) {
        Protocol::Tam => GrammarOptions::tam(),
        Protocol::Action => GrammarOptions::action(),
    }
}
