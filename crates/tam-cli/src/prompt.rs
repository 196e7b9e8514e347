//! `tam prompt`: the tool list of an agent profile, rendered for a system prompt.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::ValueEnum;
use clap::error::ErrorKind;
use tool_schema::load::{AgentProfile, workflow_from_dir};
use tool_schema::{PromptStyle, ToolDefinition, render_tool_list};

use crate::error::CliError;
use crate::schema::load_all;

const LONG_ABOUT: &str = "\
Render the tool list of an agent profile (an agent_profile.json whose tool_ids_inventory
names the tools it may call) for a system prompt, in inventory order.

The definitions come from the files given with --tools (workflow JSON, node definition
JSON, plugin.yaml; tools they define outside the inventory are left out) and, for
workflow:<id> tools, from <id>.json in the --workflows directory. An inventory tool no file
defines is an error, unless --skip-missing leaves it out (with a note on standard error).

Styles: tam (the TAM seed §6.2 layout), xml (the ACTION XML seed §4.2 layout, workflow
tools listed apart as skills), list (one entry per tool from --template, default
\"- {toolName}: {toolDescription}{toolParameters}\").

Give PROFILE before --tools, or end the --tools files with --.";

/// Prompt layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StyleChoice {
    /// `- Tool ID: …` entries with their parameters (TAM seed §6.2).
    Tam,
    /// `**Tools (direct function calls):**` and `**Skills (workflow executions):**` (ACTION seed §4.2).
    Xml,
    /// One line per tool from a template.
    List,
}

/// Render an agent profile's tool list for a system prompt.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct PromptArgs {
    /// The agent profile (JSON with tool_ids_inventory).
    profile: PathBuf,
    /// Prompt layout.
    #[arg(long, value_enum, default_value_t = StyleChoice::Tam)]
    style: StyleChoice,
    /// Files that define the profile's tools: workflow JSON, node definitions, plugin.yaml.
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
}

/// Runs `tam prompt`.
pub(crate) fn run(args: &PromptArgs) -> Result<(), CliError> {
    let style = match (args.style, &args.template) {
        (StyleChoice::Tam, None) => PromptStyle::Tam,
        (StyleChoice::Xml, None) => PromptStyle::Xml,
        (StyleChoice::List, None) => PromptStyle::plain(),
        (StyleChoice::List, Some(template)) => PromptStyle::Plain {
            template: template.clone(),
        },
        (_, Some(_)) => {
            return Err(CliError::usage(
                ErrorKind::ArgumentConflict,
                "--template shapes the entries of --style list; the tam and xml styles have fixed layouts",
            ));
        }
    };
    let profile = AgentProfile::from_path(&args.profile)?;
    let defined = load_all(&args.tools)?;
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
                args.profile.display(),
                names.join(", ")
            )));
        }
        eprintln!("tam: left out, no file defines them: {}", names.join(", "));
    }
    let text = render_tool_list(&listed, &style);
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(CliError::Write)
}
