//! `tam`: the command line over the workspace's crates.
//!
//! * `tam decode` streams a model's output (raw text, JSON-string deltas, or an OpenAI
//!   `chat.completions` SSE stream) through the front door (TAM, ACTION XML or both) and
//!   writes one JSON object per event, flushed as soon as the event is decided.
//! * `tam schema` reads tool definitions from workflow JSON, node definitions or a
//!   `plugin.yaml` and prints them, or exports them in the OpenAI, Anthropic or MCP format.
//! * `tam prompt` renders a complete system prompt (TAM or ACTION, English or Chinese) or
//!   only the tool list, for an agent profile or the tools of the files given.
//! * `tam demo` runs an agent loop end to end on an embedded scripted model that streams
//!   like a real one and uses both protocols.
//! * `tam run` runs the same loop against an OpenAI-compatible server with the
//!   demo's tools, tool files and the tools of MCP servers (`--mcp "CMD ARGS"`), sending
//!   tool-schema's complete system prompt for the protocol.
//! * `tam serve` serves tam-proxy (Chat Completions, Messages, Responses): native tool calls for any
//!   client, from a model that writes TAM or ACTION blocks, behind client keys, time-outs
//!   and caps (`tam serve --help`), one log line per request (`RUST_LOG`).
//!
//! Exit status: 0 on success (whatever the model wrote: problems in its output are
//! diagnostics, not failures), 1 when a file cannot be read or is not a valid definition,
//! or output cannot be written, 2 for a usage error (unknown command or flag, bad value).
//! A closed output pipe (`tam decode … | head`) ends a command quietly with status 0.
//!
//! # Example
//!
//! ```text
//! $ printf 'Reading.\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Read「末」\npath:「始」/tmp/a「末」\n<|[END_TOOL]|>' | tam decode
//! {"type":"text","text":"Reading.\n"}
//! {"type":"tool_calls","protocol":"tam","span":[9,108],"calls":[{"tool":"File.Read","args":{"path":"/tmp/a"}}],"diagnostics":[]}
//! ```
//!
//! # Input safety
//!
//! The decoders keep their default limits (1 MiB per block, 64 calls per TAM block, XML
//! depth 64 and 65 536 nodes per ACTION block); `--input deltas` skips a line over 8 MiB
//! with a `line_too_long` diagnostic and `--input sse` an event over 8 MiB with
//! `sse_event_too_large`, so memory stays bounded on any input. Nothing
//! the model wrote makes a command fail or panic. No `unsafe` code is used.
//!
//! # Crate features
//!
//! None. `tam run` uses tool-dispatch's `openai` feature (reqwest with rustls) and its
//! `mcp` feature (rmcp, for `--mcp`); `tam serve` the tam-proxy crate (axum, hyper) and
//! tracing-subscriber for its logs.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]

mod choices;
mod decode;
mod demo;
mod error;
mod prompt;
mod run;
mod schema;
mod serve;
mod tool_files;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::CliError;

/// Tool calls out of streaming LLM output: decode streams, export tool schemas, render
/// tool lists for prompts, and run an end-to-end demo.
#[derive(Debug, Parser)]
#[command(name = "tam", version, propagate_version = true)]
#[command(
    after_help = "Exit status: 0 on success, 1 for a file or I/O error, 2 for a usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Decode(decode::DecodeArgs),
    Schema(schema::SchemaArgs),
    Prompt(prompt::PromptArgs),
    Demo(demo::DemoArgs),
    Run(run::RunArgs),
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (name, result) = match &cli.command {
        Command::Decode(args) => ("decode", decode::run(args)),
        Command::Schema(args) => ("schema", schema::run(args)),
        Command::Prompt(args) => ("prompt", prompt::run(args)),
        Command::Demo(args) => ("demo", demo::run(args)),
        Command::Run(args) => ("run", run::run(args)),
        Command::Serve(args) => ("serve", serve::run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage { kind, message }) => usage_error(name, kind, &message),
        // The reader of the output went away (`tam … | head`): nothing left to do.
        Err(CliError::Write(error)) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("tam: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// Reports a usage error found after parsing the way clap reports its own (with the
/// subcommand's usage line) and exits with status 2.
fn usage_error(subcommand: &str, kind: clap::error::ErrorKind, message: &str) -> ! {
    let mut command = Cli::command();
    command.build();
    match command.find_subcommand_mut(subcommand) {
        Some(subcommand) => subcommand.error(kind, message).exit(),
        None => command.error(kind, message).exit(),
    }
}
