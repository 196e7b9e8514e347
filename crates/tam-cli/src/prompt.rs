//! `tam prompt`: a complete system prompt, or only the tool list, for an agent profile's
//! tools or every tool of the files given.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::ValueEnum;
use clap::error::ErrorKind;
use tool_dispatch::system_prompt_for;
use tool_schema::load::{AgentProfile, workflow_from_dir};
use tool_schema::{PromptStyle, ToolDefinition, render_tool_list};

use crate::choices::{PromptLanguageChoice, protocol_parser};
use crate::error::CliError;
use crate::schema::load_all;
use tam::Protocol;

const LONG_ABOUT: &str = "\
Render the tool list of an agent profile (an agent_profile.json whose tool_ids_inventory
names the tools it may call) for a system prompt, in inventory order; with --full, the
complete system prompt around it. Without PROFILE, every tool the --tools files define, in
file order.

The definitions come from the files given with --tools (workflow JSON, node definition
JSON, plugin.yaml, or a plugin directory holding a plugin.yaml and the workflow files its
tools name; tools they define outside the inventory are left out) and, for workflow:<id>
tools, from <id>.json in the --workflows directory. An inventory tool no file defines is an
error, unless --skip-missing leaves it out (with a note on standard error). The name demo
alone stands for the tools of `tam demo` (a file called demo is ./demo): `tam prompt --full
--protocol P --tools demo` prints the system prompt `tam run --protocol P --tools demo`
sends.

Tool list styles: tam (`- Tool ID: …` entries with their parameters), xml (`<tool_id>`
entries with their `<parameter>`s, workflow tools listed apart as skills), list (one
entry per tool from --template, default
\"- {toolName}: {toolDescription}{toolParameters}\").

--full prints the complete system prompt: role and goal, the tool list, usage notes (from
--usage-notes), the decision instruction, few-shot examples and the tool result rules
for --protocol tam or action, in --language en or zh.

Give PROFILE before --tools, or end the --tools files with --.";

/// Prompt layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StyleChoice {
    /// `- Tool ID: …` entries with their parameters.
    Tam,
    /// `**Tools (direct function calls):**` and `**Skills (workflow executions):**`.
    Xml,
    /// One line per tool from a template.
    List,
}

/// Render a system prompt, or its tool list, for an agent profile's tools.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct PromptArgs {
    /// The agent profile (JSON with tool_ids_inventory); without it, every tool of --tools.
    #[arg(required_unless_present = "tools")]
    profile: Option<PathBuf>,
    /// Tool list layout (not with --full: the protocol decides it).
    #[arg(long, value_enum, conflicts_with = "full")]
    style: Option<StyleChoice>,
    /// Files that define the tools: workflow JSON, node definitions, plugin.yaml, plugin
    /// directories; `demo` alone, the tools of `tam demo`.
    #[arg(long = "tools", value_name = "FILE", num_args = 1.., action = clap::ArgAction::Append)]
    tools: Vec<PathBuf>,
    /// Directory holding `workflow:<id>` tools as `<id>.json`.
    #[arg(long, value_name = "DIR")]
    workflows: Option<PathBuf>,
    /// Entry template for --style list: {toolName}, {toolDescription}, {toolParameters}.
    #[arg(long)]
    template: Option<String>,
    /// Leave out inventory tools no file defines instead of failing.
    #[arg(long)]
    skip_missing: bool,
    /// Print the complete system prompt, not only the tool list.
    #[arg(long)]
    full: bool,
    /// The protocol the full prompt teaches: tam or action (ACTION by default, as for
    /// `tam run` and `tam serve`).
    #[arg(long, value_parser = protocol_parser(), default_value = "action", requires = "full")]
    protocol: Protocol,
    /// The language of the full prompt.
    #[arg(long, value_enum, default_value_t = PromptLanguageChoice::En, requires = "full")]
    language: PromptLanguageChoice,
    /// A file of usage notes for the tools (retrieved knowledge) to put in the full prompt.
    #[arg(long, value_name = "FILE", requires = "full")]
    usage_notes: Option<PathBuf>,
}

/// Runs `tam prompt`.
pub(crate) fn run(args: &PromptArgs) -> Result<(), CliError> {
    let style = match (args.style.unwrap_or(StyleChoice::Tam), &args.template) {
        (StyleChoice::Tam, None) => PromptStyle::Tam,
        (StyleChoice::Xml, None) => PromptStyle::Xml,
        (StyleChoice::List, None) => PromptStyle::plain(),
        (StyleChoice::List, Some(template)) if !args.full => PromptStyle::Plain {
            template: template.clone(),
        },
        (_, Some(_)) => {
            return Err(CliError::usage(
                ErrorKind::ArgumentConflict,
                "--template shapes the entries of --style list; the tam and xml styles have fixed layouts",
            ));
        }
    };
    let defined = load_all(&args.tools)?;
    let listed = match &args.profile {
        Some(profile) => inventory_tools(args, profile, &defined)?,
        None => defined,
    };
    let text = if args.full {
        let mut prompt = system_prompt_for(args.protocol.into(), args.language.into());
        if let Some(path) = &args.usage_notes {
            let notes = std::fs::read_to_string(path).map_err(|source| CliError::Read {
                path: path.clone(),
                source,
            })?;
            prompt = prompt.with_usage_notes(notes);
        }
        prompt.render(&listed)
    } else {
        render_tool_list(&listed, &style)
    };
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(CliError::Write)
}

/// The tools of the profile's inventory, in its order, from `defined` or the workflow
/// directory.
fn inventory_tools(
    args: &PromptArgs,
    profile_path: &std::path::Path,
    defined: &[ToolDefinition],
) -> Result<Vec<ToolDefinition>, CliError> {
    let profile = AgentProfile::from_path(profile_path)?;
    let mut listed: Vec<ToolDefinition> = Vec::new();
    let mut missing = Vec::new();
    for (index, id) in profile.tool_ids_inventory.iter().enumerate() {
        if let Some(tool) = defined.iter().find(|tool| tool.id == *id) {
            listed.push(tool.clone());
            continue;
        }
        match (&args.workflows, id.workflow_id()) {
            (Some(dir), Some(_)) => match workflow_from_dir(dir, id) {
                Ok(tool) => listed.push(tool),
                Err(tool_schema::Error::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound =>
                {
                    missing.push((index, id));
                }
                Err(error) => return Err(error.into()),
            },
            _ => missing.push((index, id)),
        }
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing
            .iter()
            .map(|(index, id)| format!("'{id}' (tool_ids_inventory[{index}])"))
            .collect();
        if !args.skip_missing {
            return Err(CliError::Definition(format!(
                "{}: no file defines {}; give the files that do with --tools (workflow tools \
                 also with --workflows DIR), or leave them out with --skip-missing",
                profile_path.display(),
                names.join(", ")
            )));
        }
        eprintln!("tam: left out, no file defines them: {}", names.join(", "));
    }
    Ok(listed)
}
