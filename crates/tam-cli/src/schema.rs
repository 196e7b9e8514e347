//! `tam schema`: tool definitions from files, as the workspace stores them or in an LLM
//! API's tool format.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use clap::error::ErrorKind;
use serde::Serialize;
use serde_json::{Map, Value};
use tool_schema::{ExportFormat, ToolDefinition, export_tools};

use crate::demo::tools::demo_definitions;
use crate::error::CliError;
use crate::tool_files::load_tool_file;

const LONG_ABOUT: &str = "\
Print the tool definitions in workflow JSON, node definition JSON and plugin.yaml files,
as one JSON array in the order given.

Kinds are told by extension and content: *.yaml / *.yml is a plugin manifest (its tools:);
a JSON object with interfaceInputs, interfaceOutputs, inputInterface (a skill's inputs),
outputInterface, nodes or edges is a workflow (the tool workflow:<file stem>); a
directory holding a plugin.yaml is a whole plugin; a JSON object with fullType, or an array of them, is node
definitions. A tool id defined by two files is an error. The name demo alone stands for the
tools of `tam demo` (`tam run --tools demo`); a file called demo is ./demo.

Export formats name tools by ^[a-zA-Z0-9_-]{1,64}$; other ids get a reversible alias
(workflow:summarize_text -> workflow__summarize_text). --aliases prints
{\"tools\": [...], \"aliases\": {alias: tool id}} so the calls a model makes can be mapped back.";

/// The shape tools are printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaFormat {
    /// The workspace's own definitions (id, description, parameters, implementation, …).
    Internal,
    /// OpenAI chat `tools`: {"type":"function","function":{name, description, parameters}}.
    Openai,
    /// Anthropic messages `tools`: {name, description, input_schema}.
    Anthropic,
    /// MCP tools/list entries: {name, title, description, inputSchema, outputSchema}.
    Mcp,
}

/// Print tool definitions from workflow, node or plugin files, or export them.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct SchemaArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = SchemaFormat::Internal)]
    format: SchemaFormat,
    /// Print {"tools": [...], "aliases": {...}} (export formats only).
    #[arg(long)]
    aliases: bool,
    /// One line of JSON instead of indented JSON.
    #[arg(long)]
    compact: bool,
    /// Workflow JSON, node definition JSON or plugin.yaml files, or plugin directories;
    /// `demo` alone, the tools of `tam demo`.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Runs `tam schema`.
pub(crate) fn run(args: &SchemaArgs) -> Result<(), CliError> {
    let export = match args.format {
        SchemaFormat::Internal => None,
        SchemaFormat::Openai => Some(ExportFormat::OpenAi),
        SchemaFormat::Anthropic => Some(ExportFormat::Anthropic),
        SchemaFormat::Mcp => Some(ExportFormat::Mcp),
    };
    if args.aliases && export.is_none() {
        return Err(CliError::usage(
            ErrorKind::ArgumentConflict,
            "--aliases needs an export format (--format openai, anthropic or mcp): internal definitions keep their ids",
        ));
    }
    let tools = load_all(&args.files)?;
    let document = match export {
        None => serde_json::to_value(&tools).map_err(|e| CliError::Write(e.into()))?,
        Some(format) => {
            let exported = export_tools(&tools, format);
            let list = Value::Array(exported.tools);
            if args.aliases {
                let aliases: Map<String, Value> = exported
                    .aliases
                    .iter()
                    .map(|(alias, id)| (alias.to_owned(), Value::from(id.as_str())))
                    .collect();
                serde_json::json!({"tools": list, "aliases": aliases})
            } else {
                list
            }
        }
    };
    print_json(&document, args.compact)
}

/// The name that stands for the demo's built-in tools instead of a file ([`load_all`]);
/// a file of that name is `./demo`.
pub(crate) const DEMO_TOOLS: &str = "demo";

/// The tools of every file, in order; a tool id defined twice is an error naming both
/// files. The name [`DEMO_TOOLS`] alone is the tools of `tam demo` (as `tam run --tools
/// demo` has them), so `tam prompt --full --tools demo` prints the prompt `tam run` sends.
pub(crate) fn load_all(files: &[PathBuf]) -> Result<Vec<ToolDefinition>, CliError> {
    let mut tools: Vec<ToolDefinition> = Vec::new();
    let mut origins: Vec<&Path> = Vec::new();
    for file in files {
        let defined = if file.as_os_str() == DEMO_TOOLS {
            demo_definitions()?
        } else {
            load_tool_file(file)?
        };
        for tool in defined {
            if let Some(index) = tools.iter().position(|seen| seen.id == tool.id) {
                return Err(CliError::Definition(format!(
                    "{}: tool '{}' is already defined by {}",
                    file.display(),
                    tool.id,
                    origins[index].display()
                )));
            }
            tools.push(tool);
            origins.push(file);
        }
    }
    Ok(tools)
}

/// Prints `value` and a line break on standard output.
pub(crate) fn print_json(value: &impl Serialize, compact: bool) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    let written = if compact {
        serde_json::to_writer(&mut out, value)
    } else {
        serde_json::to_writer_pretty(&mut out, value)
    };
    written
        .map_err(io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush())
        .map_err(CliError::Write)
}
