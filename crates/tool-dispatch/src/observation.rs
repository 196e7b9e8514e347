//! Observation text for the model's next round (`Observation: Tool X executed
//! successfully. Result: …` / `Observation: Error - …`): what each call did, and
//! what was wrong with blocks that produced no call.
//!
//! - success: `Observation: Tool ReadWorldStateTool executed successfully. Result: sunny`
//!   (the data: a string verbatim, other JSON compact; the message when there is no data);
//! - a tool that ran and failed (its own `success: false`, a time-out, a panic, a
//!   cancellation): `Observation: Error - Tool X failed: <message>`;
//! - a refused call: `Observation: Error - <reason>`, e.g.
//!   `Observation: Error - Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?`;
//! - an error diagnostic of the protocol decoder:
//!   `Observation: Error - Malformed XML in ACTION block: <message>`.

use tam::{Code, Diagnostic};

#[cfg(feature = "runtime")]
use crate::dispatch::CallOutcome;
#[cfg(feature = "runtime")]
use crate::result::render_value;

/// The prefix of every observation.
pub const OBSERVATION_PREFIX: &str = "Observation: ";

#[cfg(feature = "runtime")]
impl CallOutcome {
    /// The observation line for this call.
    pub fn observation(&self) -> String {
        let result = &self.result;
        if result.success {
            let shown = result
                .data()
                .map_or_else(|| result.message.as_str().into(), render_value);
            format!(
                "{OBSERVATION_PREFIX}Tool {} executed successfully. Result: {shown}",
                self.tool
            )
        } else if self.status.is_refusal() {
            format!("{OBSERVATION_PREFIX}Error - {}", result.message)
        } else {
            format!(
                "{OBSERVATION_PREFIX}Error - Tool {} failed: {}",
                self.tool, result.message
            )
        }
    }
}

/// The observation for a decoder diagnostic, or `None` for a warning: warnings describe
/// repairs that still produced the calls the model meant, so they are not fed back.
///
/// `malformed_xml` reads `Malformed XML in ACTION block: …`, `unterminated_block` reads
/// `Unterminated TAM block (no end marker), not executed: …`; any other error reads
/// `Invalid tool block (<code>): …`.
pub fn diagnostic_observation(diagnostic: &Diagnostic) -> Option<String> {
    if !diagnostic.is_error() {
        return None;
    }
    let what = match diagnostic.code.as_str() {
        code if code == tam::action_xml::codes::MALFORMED_XML.as_str() => {
            "Malformed XML in ACTION block".to_owned()
        }
        code if code == Code::UNTERMINATED_BLOCK.as_str() => {
            "Unterminated TAM block (no end marker), not executed".to_owned()
        }
        code => format!("Invalid tool block ({code})"),
    };
    Some(format!(
        "{OBSERVATION_PREFIX}Error - {what}: {}",
        diagnostic.message
    ))
}
