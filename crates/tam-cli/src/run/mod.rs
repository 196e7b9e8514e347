//! `tam run` (SPEC §7): the agent loop of §5 against an OpenAI-compatible server, with the
//! demo's tools and tool files, printing prose as it streams and each call as it runs.

mod output;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use clap::error::ErrorKind;
use serde_json::Value;
use tool_dispatch::openai::{OpenAiConfig, OpenAiModel};
use tool_dispatch::{
    Agent, AgentConfig, CancellationToken, Dispatcher, Message, ModelOptions, Registry, Scope,
    StopReason, ToolExecutionResult,
};
use tool_schema::load::AgentProfile;
use tool_schema::{Implementation, ToolDefinition};

use self::output::Output;
use crate::demo::tools::{register_demo_tools, summarizer_engine};
use crate::error::CliError;
use crate::tool_files::load_tool_file;

const LONG_ABOUT: &str = "\
Run the agent loop against an OpenAI-compatible server (POST {base}/chat/completions with
stream: true: llama-server, vLLM, SGLang, Ollama's /v1, OpenAI): a system message saying
how to write a call in the protocol, with the tool list rendered for it, and the prompt go
to the model; each tool-call block runs as soon as it
closes, while the model is still streaming; the observations go back, until the model
answers without a call.

Tools: --tools demo (the tools of `tam demo`), every workflow JSON in --workflows DIR,
the tools of DIR/plugin.yaml for each --plugin DIR. --profile FILE limits the scope to an
agent profile's tool_ids_inventory; without it every loaded tool is in scope.

Output: the model's prose as it streams, its reasoning (dimmed, on standard error), each
call as it runs and its observation. --json writes one JSON object per agent event per
line instead: round_started, text, reasoning, block_started, block_closed, diagnostic,
call_started, call_finished, observation, native_tool_call, model_finished, stream_cut,
and a last `done` line with the stop reason.

A reply cut at the token limit (finish_reason: length) or by a transport error runs no
call from the block open at the cut; the model is told why.

Exit status: 0 once the model answers without a call; 1 when the run stops otherwise (the
server fails, maxToolCalls, the round limit) or a tool file cannot be loaded; 2 for a
usage error.";

/// Which tool-call protocol the model is asked to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProtocolChoice {
    /// TAM blocks.
    Tam,
    /// ACTION XML blocks.
    Action,
    /// Both decoded; the prompt shows TAM.
    Auto,
}

/// Built-in tool sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ToolSet {
    /// The tools of `tam demo`: workflow:summarize_text, GetPlayerInfo,
    /// system:get_current_time.
    Demo,
}

/// Run the agent loop against an OpenAI-compatible server.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct RunArgs {
    /// The API base URL, up to /chat/completions (e.g. http://127.0.0.1:8080/v1).
    #[arg(long, value_name = "URL")]
    base_url: String,
    /// The model name sent with each request.
    #[arg(long, value_name = "NAME")]
    model: String,
    /// Environment variable holding the API key (sent as a Bearer token).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The tool-call protocol.
    #[arg(long, value_enum, default_value_t = ProtocolChoice::Tam)]
    protocol: ProtocolChoice,
    /// A built-in tool set.
    #[arg(long, value_enum)]
    tools: Option<ToolSet>,
    /// An agent profile whose tool_ids_inventory is the scope.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// A directory of workflow JSON files, each a workflow:<file stem> tool.
    #[arg(long, value_name = "DIR")]
    workflows: Option<PathBuf>,
    /// A plugin directory (its plugin.yaml); may be repeated.
    #[arg(long, value_name = "DIR", action = clap::ArgAction::Append)]
    plugin: Vec<PathBuf>,
    /// Most tool calls in the run (maxToolCalls).
    #[arg(long, value_name = "N", default_value_t = tool_dispatch::DEFAULT_MAX_TOOL_CALLS)]
    max_tool_calls: usize,
    /// Sampling temperature.
    #[arg(long, value_name = "F")]
    temperature: Option<f32>,
    /// Most tokens per reply.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u32>,
    /// Sampling seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Longest wait for the server's next bytes, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    idle_timeout: f64,
    /// One JSON object per agent event per line.
    #[arg(long)]
    json: bool,
    /// The user's prompt.
    prompt: String,
}

/// Runs `tam run`.
pub(crate) fn run(args: &RunArgs) -> Result<(), CliError> {
    let idle = Duration::try_from_secs_f64(args.idle_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            CliError::usage(
                ErrorKind::InvalidValue,
                "--idle-timeout takes a positive number of seconds",
            )
        })?;
    let mut config = OpenAiConfig::new(&args.base_url, &args.model).with_idle_timeout(idle);
    if let Some(var) = &args.api_key_env {
        config = config
            .with_api_key_env(var)
            .map_err(|e| CliError::usage(ErrorKind::InvalidValue, e.to_string()))?;
    }
    let model = OpenAiModel::new(config).map_err(|e| CliError::Model(e.to_string()))?;

    let mut registry = Registry::new();
    if args.tools == Some(ToolSet::Demo) {
        register_demo_tools(&mut registry)?;
    }
    if let Some(dir) = &args.workflows {
        register_workflow_dir(&mut registry, dir)?;
    }
    for dir in &args.plugin {
        register_plugin(&mut registry, dir)?;
    }
    let dispatcher = Dispatcher::new(registry, summarizer_engine());
    let scope = match &args.profile {
        Some(path) => {
            let profile = AgentProfile::from_path(path)?;
            Scope::for_agent(dispatcher.registry(), &profile.tool_ids_inventory)?
        }
        None => Scope::unrestricted(),
    };
    let protocol = match args.protocol {
        ProtocolChoice::Tam => tool_dispatch::ProtocolChoice::Tam,
        ProtocolChoice::Action => tool_dispatch::ProtocolChoice::Action,
        ProtocolChoice::Auto => tool_dispatch::ProtocolChoice::Auto,
    };
    let mut agent_config = AgentConfig::for_protocol(protocol);
    agent_config.max_tool_calls = args.max_tool_calls;
    let mut options = ModelOptions::new();
    options.temperature = args.temperature;
    options.max_tokens = args.max_tokens;
    options.seed = args.seed;
    agent_config.model_options = options;
    let agent = Agent::with_config(dispatcher, scope, agent_config);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let mut out = Output::new(args.json);
    let mut conversation = vec![Message::system(system_prompt(
        args.protocol,
        &agent.tool_descriptions(),
    ))];
    let result = runtime.block_on(agent.run(
        &model,
        &mut conversation,
        &args.prompt,
        |event| out.event(&event),
        &CancellationToken::new(),
    ));
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => {
            out.failed(&error);
            out.finish()?;
            return Err(error.into());
        }
    };
    out.done(&outcome);
    out.finish()?;
    if outcome.stop == StopReason::Answer {
        Ok(())
    } else {
        Err(CliError::RunIncomplete(format!(
            "{:?} after {} rounds",
            outcome.stop, outcome.rounds
        )))
    }
}

/// How to write a TAM call (the TAM seed's format), for the system prompt.
const TAM_INSTRUCTIONS: &str = "\
You can call tools. To call one, write a block exactly like this (the markers and the \
「始」 「末」 around each value are required):

<|[REQUEST_TOOL]|>
command:「始」TOOL_ID「末」
parameter_name:「始」value「末」
<|[END_TOOL]|>

To chain calls in one block, number them (command1, command2, …) and give their parameters \
the same number (path1, path2). After a block, stop: the results come back as lines \
starting with \"Observation:\". When you can answer, answer in plain text, without a block.";

/// How to write an ACTION call (the ACTION seed's format), for the system prompt.
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

/// The system prompt: how to write a call in the protocol, then the tool list rendered
/// for it (SPEC §4). `auto` shows the TAM form; both are decoded.
fn system_prompt(protocol: ProtocolChoice, tools: &str) -> String {
    let instructions = match protocol {
        ProtocolChoice::Action => ACTION_INSTRUCTIONS,
        ProtocolChoice::Tam | ProtocolChoice::Auto => TAM_INSTRUCTIONS,
    };
    if tools.is_empty() {
        format!("{instructions}\n\nNo tool is available now.")
    } else {
        format!("{instructions}\n\n{tools}")
    }
}

/// Registers every `*.json` of `dir` as a `workflow:<file stem>` tool.
fn register_workflow_dir(registry: &mut Registry, dir: &Path) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir).map_err(|source| CliError::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        registry.register_workflow_file(&path)?;
    }
    Ok(())
}

/// Registers the tools of `dir/plugin.yaml`: node tools run through the engine, workflow
/// tools from the plugin's workflow files; a service tool has no implementation here and
/// answers with a failure saying so.
fn register_plugin(registry: &mut Registry, dir: &Path) -> Result<(), CliError> {
    let manifest = dir.join("plugin.yaml");
    for definition in load_tool_file(&manifest)? {
        match &definition.implementation {
            Implementation::Node { .. } => registry.register_node_tool(definition)?,
            Implementation::Workflow { workflow_id } => {
                let path = dir.join(workflow_id);
                let text = std::fs::read_to_string(&path).map_err(|source| CliError::Read {
                    path: path.clone(),
                    source,
                })?;
                let workflow: Value = serde_json::from_str(&text).map_err(|e| {
                    CliError::Definition(format!("{}: not JSON: {e}", path.display()))
                })?;
                registry.register_workflow(definition, &workflow)?;
            }
            _ => register_unimplemented(registry, definition)?,
        }
    }
    Ok(())
}

fn register_unimplemented(
    registry: &mut Registry,
    definition: ToolDefinition,
) -> Result<(), CliError> {
    let message = format!(
        "{} is a service tool; `tam run` has no implementation for it",
        definition.id
    );
    registry.register_fn(definition, move |_| {
        let message = message.clone();
        async move { ToolExecutionResult::failure("unknown", message) }
    })?;
    Ok(())
}
