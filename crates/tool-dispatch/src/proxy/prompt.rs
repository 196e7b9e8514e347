//! The system prompt the upstream model gets for a request's tools: how to write a call in
//! the proxy's protocol, then the tool list rendered by tool-schema (SPEC §4).
//!
//! [`tool_prompt`] is the one place the prompt is made; when tool-schema grows a complete
//! system-prompt renderer, this function is what switches to it.

use tool_schema::{PromptStyle, ToolDefinition, render_tool_list};

use crate::Protocol;

/// How to write a TAM call (the TAM seed's format).
const TAM_INSTRUCTIONS: &str = "\
You can call tools. To call one, write a block exactly like this (the markers and the \
「始」 「末」 around each value are required):

<|[REQUEST_TOOL]|>
command:「始」TOOL_ID「末」
parameter_name:「始」value「末」
<|[END_TOOL]|>

To chain calls in one block, number them (command1, command2, …) and give their parameters \
the same number (path1, path2). Write objects and arrays as JSON text. After a block, stop: \
the results come back as lines starting with \"Observation:\". When you can answer, answer \
in plain text, without a block.";

/// How to write an ACTION call (the ACTION seed's format).
const ACTION_INSTRUCTIONS: &str = "\
You can call tools. To call tools, write one <ACTION> block; each child element is one \
call, named by the tool id, and each of its children is a parameter:

<ACTION>
  <TOOL_ID>
    <parameter_name>value</parameter_name>
  </TOOL_ID>
</ACTION>

Put code or text holding < or & inside <![CDATA[ ... ]]>. After the block, stop: the \
results come back as lines starting with \"Observation:\". When you can answer, answer in \
plain text, without a block.";

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

/// The tool section of the system prompt: the protocol's instructions, what `choice` asks,
/// then the tools in the style of the protocol (`Both` shows the TAM form; both decode).
/// `parallel` false asks for one call per reply.
pub(crate) fn tool_prompt(
    protocol: Protocol,
    tools: &[&ToolDefinition],
    choice: &Choice,
    parallel: bool,
) -> String {
    let (instructions, style) = match protocol {
        Protocol::Action => (ACTION_INSTRUCTIONS, PromptStyle::Xml),
        _ => (TAM_INSTRUCTIONS, PromptStyle::Tam),
    };
    let mut prompt = String::from(instructions);
    if !parallel {
        prompt.push_str("\n\nCall at most one tool per reply.");
    }
    match choice {
        Choice::Auto => {}
        Choice::Required => prompt.push_str("\n\nYou must call at least one tool in this reply."),
        Choice::Named(name) => {
            prompt.push_str(&format!("\n\nYou must call the tool {name} in this reply."));
        }
    }
    prompt.push_str("\n\nAvailable tools:\n");
    prompt.push_str(&render_tool_list(tools.iter().copied(), &style));
    prompt
}
