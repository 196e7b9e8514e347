//! The system prompt the upstream model gets for a request's tools: tool-schema's complete
//! [`SystemPrompt`] (role, tool list, decision instructions, examples, result rules) for
//! the proxy's protocol, as `tam run` sends it (SPEC §4).
//!
//! Decisions:
//! * `ProtocolChoice::Auto` teaches the TAM form (both forms decode).
//! * The prompt's own words are English (the client's conversation language is unknown;
//!   tool descriptions stay as the client wrote them).
//! * What `tool_choice` and `parallel_tool_calls: false` ask is appended to the
//!   prompt's decision section ("[Your decision]").
//! * The client's own system message, when there is one, comes first, then a blank line,
//!   then this prompt (merged by the request translation).

use tool_schema::{PromptLanguage, PromptPart, PromptProtocol, SystemPrompt, ToolDefinition};

use crate::ProtocolChoice;

/// What the request's `tool_choice` asks of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// `auto` (or absent): the model decides.
    Auto,
    /// `required`: at least one call.
    Required,
    /// `{"type":"function","function":{"name":…}}`: this tool.
    Named(String),
}

/// The complete tool system prompt for `protocol` listing `tools`, with what `choice`
/// asks (and, `parallel` false, one call per reply) in its decision section.
pub(crate) fn tool_prompt(
    protocol: ProtocolChoice,
    tools: &[&ToolDefinition],
    choice: &Choice,
    parallel: bool,
) -> String {
    let protocol = match protocol {
        ProtocolChoice::Action => PromptProtocol::Action,
        ProtocolChoice::Tam | ProtocolChoice::Auto => PromptProtocol::Tam,
    };
    let language = PromptLanguage::English;
    let mut instructions =
        SystemPrompt::default_text(protocol, language, PromptPart::Instructions).to_owned();
    if !parallel {
        instructions.push_str("\nCall at most one tool per reply.");
    }
    match choice {
        Choice::Auto => {}
        Choice::Required => {
            instructions.push_str("\nYou must call at least one tool in this reply.")
        }
        Choice::Named(name) => {
            instructions.push_str(&format!("\nYou must call the tool {name} in this reply."));
        }
    }
    SystemPrompt::new(protocol, language)
        .with_part(PromptPart::Instructions, instructions)
        .render(tools.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> ToolDefinition {
        serde_json::from_value(serde_json::json!({
            "id": "get_weather", "description": "Weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "implementation": {"type": "service"}
        }))
        .unwrap()
    }

    #[test]
    fn the_prompt_is_tool_schemas_complete_prompt_for_the_protocol() {
        let tool = weather();
        for (protocol, prompt_protocol) in [
            (ProtocolChoice::Tam, PromptProtocol::Tam),
            (ProtocolChoice::Action, PromptProtocol::Action),
            (ProtocolChoice::Auto, PromptProtocol::Tam),
        ] {
            let got = tool_prompt(protocol, &[&tool], &Choice::Auto, true);
            let expected =
                SystemPrompt::new(prompt_protocol, PromptLanguage::English).render([&tool]);
            assert_eq!(got, expected, "{protocol:?}");
            for heading in [
                "[Role and goal]",
                "[Available tools]",
                "[Your decision]",
                "[Examples]",
                "[Tool result rules]",
            ] {
                assert!(got.contains(heading), "{protocol:?} {heading}: {got}");
            }
        }
    }

    #[test]
    fn choice_and_parallel_go_into_the_decision_section() {
        let tool = weather();
        let got = tool_prompt(
            ProtocolChoice::Action,
            &[&tool],
            &Choice::Named("get_weather".into()),
            false,
        );
        let decision = &got[got.find("[Your decision]").unwrap()..got.find("[Examples]").unwrap()];
        assert!(
            decision.contains("Call at most one tool per reply."),
            "{decision}"
        );
        assert!(
            decision.contains("You must call the tool get_weather in this reply."),
            "{decision}"
        );
        let required = tool_prompt(ProtocolChoice::Tam, &[&tool], &Choice::Required, true);
        assert!(required.contains("You must call at least one tool in this reply."));
        assert!(!required.contains("Call at most one tool"));
    }
}
