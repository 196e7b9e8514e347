//! The system prompt the upstream model gets for a request's tools: tool-schema's compact
//! prompt ([`SystemPrompt::render_compact`]: the protocol's format, its rules, an example of
//! two calls in one block, then the tool list) for the proxy's protocol. Not the complete
//! prompt `tam run` sends: a proxy's client runs its own tools, whose results can be
//! anything, so the workflow result rules (`TOOL_EXECUTION_FAILED`) do not apply, and a
//! prompt close to the size of a server's native tool template costs less time per
//! request.
//!
//! Decisions:
//! * `ProtocolChoice::Auto` teaches the TAM form (both forms decode).
//! * The prompt's own words are English (the client's conversation language is unknown;
//!   tool descriptions stay as the client wrote them).
//! * What `tool_choice` and `parallel_tool_calls: false` ask is added to the rules.
//! * The client's own system message, when there is one, comes first, then a blank line,
//!   then this prompt (merged by the request translation).
//! * In ACTION, between the system messages and the conversation go the demonstration's
//!   turns ([`SystemPrompt::compact_demonstration`]): a question no tool fits answered in
//!   plain text, then the prompt's example request answered with its block (only the
//!   latter when `tool_choice` requires a call). They are fixed text, the same for every
//!   request, and are not part of the reply. Measured on the BFCL dev set with a 1.5B
//!   model (`e2e/README.md`, "Prompt variants"): ACTION 105 → 111 of 140 (irrelevance 13 →
//!   20 of 30); TAM 96 → 94 (irrelevance +6, the call categories −8) for 1.2× the prompt
//!   tokens, so TAM goes without. Only in a conversation that holds no call yet: once the
//!   history has a call of the model's or a tool's result, its own turns show the form, and
//!   with the demonstration before them the model given its results answered the
//!   demonstration's questions as well ("The capital of France is Paris. The weather in
//!   Paris is sunny …") in 4 of 20 second rounds, in none without it (`e2e/README.md`,
//!   "Prompt variants").
//! * Each message of observations (a run of the client's `tool` messages) ends with the
//!   prompt's line on what to do next ([`after_observations`]), in both protocols. The
//!   BFCL cases are one turn each and never show it; the second round of a real agent
//!   does: through this proxy, given its calls' results, the 1.5B model of the e2e runs
//!   answered in 0 of 20 TAM conversations without the line (15 empty replies: its first
//!   token was the block's end marker, the stop sequence; 3 calls again, 2 blocks of the
//!   prompt's example as text), and in 18 of 20 with it (`e2e/README.md`, "Prompt
//!   variants"); 20 of 20 since the line no longer says "Call another tool only if you
//!   still need one." (with it the model called again the tool whose result it had, and
//!   an agent looped; requests that need a second tool after a first result are answered
//!   from the first result, as they mostly were with it — see
//!   [`SystemPrompt::after_observations`]).
//!
//! [`SystemPrompt::render_compact`]: tool_schema::SystemPrompt::render_compact
//! [`SystemPrompt::compact_demonstration`]: tool_schema::SystemPrompt::compact_demonstration
//! [`SystemPrompt::after_observations`]: tool_schema::SystemPrompt::after_observations

use tam_model::Message;
use tool_dispatch::system_prompt_for;
use tool_schema::{PromptLanguage, Speaker, ToolDefinition};

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

/// The compact tool system prompt for `protocol` listing `tools`
/// ([`SystemPrompt::render_compact`]), with what `choice` asks (and, `parallel` false,
/// one call per reply) after its rules.
///
/// [`SystemPrompt::render_compact`]: tool_schema::SystemPrompt::render_compact
pub(crate) fn tool_prompt(
    protocol: ProtocolChoice,
    tools: &[&ToolDefinition],
    choice: &Choice,
    parallel: bool,
) -> String {
    let mut extra = Vec::new();
    if !parallel {
        extra.push("Call at most one tool per reply.".to_owned());
    }
    match choice {
        Choice::Auto => {}
        Choice::Required => extra.push("You must call at least one tool in this reply.".to_owned()),
        Choice::Named(name) => extra.push(format!("You must call the tool {name} in this reply.")),
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    system_prompt_for(protocol, PromptLanguage::English)
        .render_compact(tools.iter().copied(), &extra)
}

/// The earlier turns that go before a conversation without calls in ACTION
/// ([`SystemPrompt::compact_demonstration`]): a question no tool fits answered in plain
/// text, then the prompt's example request answered with its block; only the second when
/// `choice` requires a call. None in TAM (see the module's decisions).
///
/// [`SystemPrompt::compact_demonstration`]: tool_schema::SystemPrompt::compact_demonstration
pub(crate) fn demonstration(protocol: ProtocolChoice, choice: &Choice) -> Vec<Message> {
    if protocol != ProtocolChoice::Action {
        return Vec::new();
    }
    system_prompt_for(protocol, PromptLanguage::English)
        .compact_demonstration(*choice != Choice::Auto)
        .into_iter()
        .map(|(speaker, text)| match speaker {
            Speaker::User => Message::user(text),
            Speaker::Assistant => Message::assistant(text),
        })
        .collect()
}

/// The line that closes each message of observations (the client's `tool` messages) when
/// the request's tools are prompted ([`SystemPrompt::after_observations`]): answer with
/// the results. Without it a 1.5B model answered nothing after the
/// observations in TAM (see the module's decisions).
///
/// [`SystemPrompt::after_observations`]: tool_schema::SystemPrompt::after_observations
pub(crate) fn after_observations(protocol: ProtocolChoice) -> &'static str {
    system_prompt_for(protocol, PromptLanguage::English).after_observations()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_schema::SystemPrompt;

    fn weather() -> ToolDefinition {
        serde_json::from_value(serde_json::json!({
            "id": "get_weather", "description": "Weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "implementation": {"type": "service"}
        }))
        .unwrap()
    }

    #[test]
    fn the_prompt_is_tool_schemas_compact_prompt_for_the_protocol() {
        let tool = weather();
        for (protocol, prompt, end) in [
            (
                ProtocolChoice::Tam,
                SystemPrompt::tam(PromptLanguage::English),
                "<|[END_TOOL]|>",
            ),
            (
                ProtocolChoice::Action,
                SystemPrompt::action(PromptLanguage::English),
                "</ACTION>",
            ),
            (
                ProtocolChoice::Auto,
                SystemPrompt::tam(PromptLanguage::English),
                "<|[END_TOOL]|>",
            ),
        ] {
            let got = tool_prompt(protocol, &[&tool], &Choice::Auto, true);
            let expected = prompt.render_compact([&tool], &[]);
            assert_eq!(got, expected, "{protocol:?}");
            // The fixed text first, the tools last; no workflow result rules.
            assert!(got.ends_with(&prompt.render_compact_tools([&tool])));
            assert!(got.contains(end), "{got}");
            assert!(!got.contains("TOOL_EXECUTION_FAILED"), "{got}");
            assert!(got.contains("If no tool fits the request"), "{got}");
        }
    }

    #[test]
    fn choice_and_parallel_go_into_the_rules() {
        let tool = weather();
        let got = tool_prompt(
            ProtocolChoice::Action,
            &[&tool],
            &Choice::Named("get_weather".into()),
            false,
        );
        let rules = &got[got.find("Rules:").unwrap()..got.find("Tools:").unwrap()];
        assert!(
            rules.contains("Call at most one tool per reply."),
            "{rules}"
        );
        assert!(
            rules.contains("You must call the tool get_weather in this reply."),
            "{rules}"
        );
        let required = tool_prompt(ProtocolChoice::Tam, &[&tool], &Choice::Required, true);
        assert!(required.contains("You must call at least one tool in this reply."));
        assert!(!required.contains("Call at most one tool"));
    }

    /// The prompt's example is text the decoder reads as the example says: two calls of one
    /// tool (`get_weather` in TAM, `roll_die` in ACTION) in one block (a blank line between
    /// the TAM calls), in both protocols and both languages — a model that copies its shape
    /// gets every call it writes.
    #[test]
    fn the_examples_block_decodes_into_its_two_calls() {
        for (protocol, start, end) in [
            (tam::Protocol::Tam, "<|[REQUEST_TOOL]|>", "<|[END_TOOL]|>"),
            (tam::Protocol::Action, "<ACTION>", "</ACTION>"),
        ] {
            for language in [PromptLanguage::English, PromptLanguage::Chinese] {
                let prompt = system_prompt_for(protocol.into(), language).render_compact([], &[]);
                // The last block of the fixed text is the example (the first is the format).
                let from = prompt.rfind(start).unwrap();
                let to = prompt.rfind(end).unwrap() + end.len();
                let example = &prompt[from..to];
                let mut values = Vec::new();
                for event in tam::decode(example, tam::Config::for_protocol(protocol.into())) {
                    match event {
                        tam::Event::TamBlock(block) => {
                            // Two calls without chain numbers carry `implicit_call`
                            // warning; nothing worse.
                            assert!(
                                block.diagnostics.iter().all(|d| !d.is_error()),
                                "{:?}",
                                block.diagnostics
                            );
                            for call in block.calls {
                                assert_eq!(&*call.tool, "get_weather");
                                values.push(call.params[0].value.to_string());
                            }
                        }
                        tam::Event::ActionBlock(block) => {
                            for call in block.calls {
                                assert_eq!(call.tool, "roll_die");
                                let n = &call.args["sides"];
                                values
                                    .push(n.as_str().map_or_else(|| n.to_string(), str::to_owned));
                            }
                        }
                        _ => {}
                    }
                }
                let want = match protocol {
                    tam::Protocol::Tam => ["Paris", "Rome"],
                    tam::Protocol::Action => ["6", "20"],
                };
                assert_eq!(values, want, "{protocol:?} {language:?}: {example}");
            }
        }
    }
}
