//! The protocol choice and block kinds, shared with action-xml's front door
//! ([`action_xml::OutputDecoder`]), which the agent loop decodes with.

/// The tool-call protocol(s) the model writes: action-xml's [`ProtocolChoice`]
/// (`Tam`, `Action`, `Auto` for both in one stream), re-exported.
///
/// [`ProtocolChoice`]: action_xml::ProtocolChoice
pub use action_xml::ProtocolChoice;

/// The protocol one block was written in: action-xml's [`Protocol`](action_xml::Protocol)
/// (`Tam`, `Action`), re-exported under the name the agent's events use.
pub use action_xml::Protocol as BlockKind;
