//! What the demo's model says, round by round: a chained TAM block (the summarize workflow
//! and the clock), an ACTION block with the wrong parameter name, the corrected ACTION
//! block after the observation, and an answer built from the observations it was given.

use serde_json::Value;
use tool_dispatch::{Message, OBSERVATION_PREFIX, Role};

use super::tools::KNOWN_PLAYER;

/// The patch notes the user asks about.
const PATCH_NOTES: &str = "The winter update adds a frozen lake region with ice fishing. \
Crafting costs for iron tools drop by twenty percent. The night market now opens at dusk \
and sells rare dyes. Several crashes on older graphics cards are fixed.";

/// The user's request.
pub(crate) fn user_prompt() -> String {
    format!(
        "Summarize today's patch notes briefly, and tell me who {KNOWN_PLAYER} is.\n\nPatch notes: {PATCH_NOTES}"
    )
}

/// Round 1, TAM: two chained calls; `textToSummarize` names `text_to_summarize` because TAM
/// keys match canonically.
fn summarize_with_tam() -> String {
    format!(
        "I'll summarize the patch notes with the summarize_text workflow and check the time.\n\
         <|[REQUEST_TOOL]|>\n\
         command1:「始」workflow:summarize_text「末」\n\
         textToSummarize1:「始」{PATCH_NOTES}「末」\n\
         summary_length1:「始」short「末」\n\
         command2:「始」system:get_current_time「末」\n\
         <|[END_TOOL]|>"
    )
}

/// Round 2, ACTION XML: `playerId` where the tool wants `player_id`; the observation's
/// did-you-mean lets the model correct it.
fn look_up_with_a_mistake() -> String {
    format!(
        "Got the summary. Now I'll try to get the player's name.\n\
         <ACTION>\n    <GetPlayerInfo>\n        <playerId>{KNOWN_PLAYER}</playerId>\n    </GetPlayerInfo>\n</ACTION>"
    )
}

/// Round 3, ACTION XML: the call corrected after the observation.
fn look_up_corrected() -> String {
    format!(
        "My apologies, I used the wrong parameter name. Let me try again to get the player's information.\n\
         <ACTION>\n    <GetPlayerInfo>\n        <player_id>{KNOWN_PLAYER}</player_id>\n    </GetPlayerInfo>\n</ACTION>"
    )
}

/// The model's reply in `round` (0-based), given the conversation so far.
pub(crate) fn reply(round: usize, conversation: &[Message]) -> String {
    match round {
        0 => summarize_with_tam(),
        1 => look_up_with_a_mistake(),
        2 => look_up_corrected(),
        _ => answer(conversation),
    }
}

/// The final answer, quoting what the tools returned.
fn answer(conversation: &[Message]) -> String {
    let summary = tool_result(conversation, "workflow:summarize_text")
        .unwrap_or("(the summary workflow gave no result)");
    let time = tool_result(conversation, "system:get_current_time").unwrap_or("an unknown time");
    let player = tool_result(conversation, "GetPlayerInfo")
        .and_then(|result| serde_json::from_str::<Value>(result).ok())
        .map_or_else(
            || format!("I could not find out who {KNOWN_PLAYER} is."),
            |player| {
                format!(
                    "{KNOWN_PLAYER} is {}, a level {} player in the {} guild.",
                    player["name"].as_str().unwrap_or("someone"),
                    player["level"],
                    player["guild"].as_str().unwrap_or("unknown"),
                )
            },
        );
    format!("In short (as of {time}): {summary}\n{player}")
}

/// The result text of the last successful observation of `tool` in the conversation.
fn tool_result<'c>(conversation: &'c [Message], tool: &str) -> Option<&'c str> {
    let prefix = format!("{OBSERVATION_PREFIX}Tool {tool} executed successfully. Result: ");
    conversation
        .iter()
        .rev()
        .filter(|message| message.role == Role::User)
        .flat_map(|message| message.content.lines().rev())
        .find_map(|line| line.strip_prefix(prefix.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_quotes_the_observations() {
        let conversation = [
            Message::user(user_prompt()),
            Message::assistant(summarize_with_tam()),
            Message::user(
                "Observation: Tool workflow:summarize_text executed successfully. Result: Short.\n\
                 Observation: Tool system:get_current_time executed successfully. Result: 09:30 UTC",
            ),
            Message::user(
                r#"Observation: Tool GetPlayerInfo executed successfully. Result: {"name":"Alice","level":42,"guild":"Night Owls"}"#,
            ),
        ];
        assert_eq!(
            reply(3, &conversation),
            "In short (as of 09:30 UTC): Short.\nplayer123 is Alice, a level 42 player in the Night Owls guild."
        );
    }

    #[test]
    fn missing_observations_are_said_so() {
        let text = reply(5, &[Message::user(user_prompt())]);
        assert!(text.contains("gave no result"), "{text}");
        assert!(text.contains("could not find out"), "{text}");
    }
}
