//! `tam run`: tool-dispatch's agent loop against an OpenAI-compatible server, with the
//! demo's tools, tool files and MCP servers, printing prose as it streams and each call as
//! it runs.
//!
//! # Decisions
//!
//! * **System prompt.** tool-schema's complete [`SystemPrompt`] for the protocol (`auto`
//!   teaches TAM; both are decoded) in `--prompt-language`, rendered for the scope's tools
//!   by [`Agent::system_prompt`]. `--usage-notes FILE` fills its usage-notes section.
//!   `--system-prompt FILE` replaces the whole text; each `{tools}` in the file becomes
//!   the scope's tool list rendered in the protocol's style and the prompt language.
//! * **MCP tool ids.** `--mcp "CMD ARGS"` servers start in the order given, after the
//!   other tools are registered. A server's tools are registered under their MCP names;
//!   when one of them clashes with a tool already registered, all of that server's tools
//!   are registered as `PREFIX:name` instead, `PREFIX` being the server's `initialize`
//!   name with every character outside `[A-Za-z0-9_.-]` made `-` (`mcpN` for the N-th
//!   `--mcp` when it sent none). A clash even then fails the run before the model is asked.
//!   The servers live as long as the run and are killed when it ends.
//! * **Request options.** A `--profile` file may carry an LLM node's configuration: its
//!   `config` object (an `LLMNodeConfig`: `parameters`, `maxToolCalls`) or, without one, a
//!   top-level `parameters` object. Those `parameters` are the request options
//!   (`ModelOptions::from`: temperature, max tokens, stop, seed; `top_p`, penalties and
//!   other keys are not sent); `--temperature`, `--max-tokens`, `--stop` and `--seed`
//!   override them one by one, and `--max-tool-calls` overrides `maxToolCalls`.

mod output;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use clap::error::ErrorKind;
use serde_json::Value;
use tam::ProtocolChoice;
use tam_model::LanguageModel;
use tam_model::openai::{
    LlamaCompletionModel, OpenAiConfig, OpenAiModel, UpstreamChoice, UpstreamKind,
};
use tool_dispatch::mcp::{McpError, McpServer};
use tool_dispatch::{
    Agent, AgentConfig, AgentOutcome, CancellationToken, DEFAULT_MAX_TOOL_CALLS, Dispatcher, Error,
    LlmNodeConfig, Message, ModelOptions, ModelParameters, Registry, Scope, StopReason, StrictForm,
    ToolExecutionResult, system_prompt_for,
};
use tool_schema::load::AgentProfile;
use tool_schema::{Implementation, SystemPrompt, ToolDefinition};

use self::output::Output;
use crate::choices::{PromptLanguageChoice, protocol_choice_parser};
use crate::demo::tools::{register_demo_tools, summarizer_engine};
use crate::error::CliError;
use crate::tool_files::load_tool_file;

const LONG_ABOUT: &str = "\
Run the agent loop against an OpenAI-compatible server (POST {base}/chat/completions with
stream: true: llama-server, vLLM, SGLang, Ollama's /v1, OpenAI): the system prompt and
the user's prompt go to the model; each tool-call block runs as soon as it closes, while
the model is still streaming; the observations go back, until the model answers without
a call.

System prompt: the complete prompt of `tam prompt --full` for the protocol (role, the
tools in scope, how to decide and write a call, examples, the result rules) in
--prompt-language en|zh. --protocol auto sends TAM's prompt (the model is taught TAM; both
TAM and ACTION blocks are decoded). --usage-notes FILE adds retrieved usage notes.
--system-prompt FILE sends the file instead; each {tools} in it becomes the tool list.

Tools: --tools demo (the tools of `tam demo`), every workflow JSON in --workflows DIR,
the tools of DIR/plugin.yaml for each --plugin DIR, the tools of each MCP server started
with --mcp \"CMD ARGS\" (a child process over stdio, killed when the run ends; its tools
keep their MCP names unless one clashes with a tool already loaded: then all of that
server's tools are named SERVER:tool, SERVER being the name the server gives itself).
--profile FILE limits the scope to an agent profile's tool_ids_inventory; without it every
loaded tool is in scope.

Sampling: a --profile holding an LLM node's configuration (a `config` object, or a
top-level `parameters` object) gives the request's temperature, max_tokens, stop and seed
from its `parameters` (and the call limit from its maxToolCalls); --temperature,
--max-tokens, --stop, --seed and --max-tool-calls win over them.

Output: the model's prose as it streams, its reasoning (dimmed, on standard error), each
call as it runs and its observation. --json writes one JSON object per agent event per
line instead: round_started, text, reasoning, block_started, block_closed, diagnostic,
call_started, call_finished, observation, native_tool_call, model_finished, stream_cut,
and a last `done` line with the stop reason.

A reply cut at the token limit (finish_reason: length) or by a transport error runs no
call from the block open at the cut; the model is told why.

Strict calls (on by default): where the server can constrain its own sampling, each
request carries a grammar of the tools in scope, so that once the model starts a block it
can only write calls of those tools with their parameter names and value types; prose
stays free. llama.cpp's llama-server gets a lazy GBNF grammar on its /completion endpoint
(the conversation rendered by its /apply-template); vLLM and SGLang a structural tag as
response_format; any other server the prompt alone. The server's kind is asked once before
the run (GET /props, /get_server_info, /version) unless --upstream-kind names it; a line
on standard error says when a run is constrained. A tool set no grammar can be built for
is sent with the prompt alone (and said so). --no-strict turns strict calls off.

Exit status: 0 once the model answers without a call; 1 when the run stops otherwise (the
server fails, maxToolCalls, the round limit), a tool file cannot be loaded or an --mcp
server cannot start (its error's code in brackets, e.g. [mcp.spawn]); 2 for a usage
error.";

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
    /// The tool-call protocol the model is asked to write: tam, action, or auto (both
    /// decoded, the prompt shows TAM). ACTION by default, as for `tam serve`: small models
    /// called tools right more often in it (BFCL, e2e/README.md).
    #[arg(long, value_parser = protocol_choice_parser(), default_value = "action")]
    protocol: ProtocolChoice,
    /// A built-in tool set.
    #[arg(long, value_enum)]
    tools: Option<ToolSet>,
    /// An agent profile whose tool_ids_inventory is the scope.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// A directory of workflow JSON files, each a `workflow:<file stem>` tool.
    #[arg(long, value_name = "DIR")]
    workflows: Option<PathBuf>,
    /// A plugin directory (its plugin.yaml); may be repeated.
    #[arg(long, value_name = "DIR", action = clap::ArgAction::Append)]
    plugin: Vec<PathBuf>,
    /// An MCP server to start as a child process over stdio ("CMD ARGS", split like a
    /// shell); its tools join the run. May be repeated.
    #[arg(long, value_name = "CMD ARGS", action = clap::ArgAction::Append)]
    mcp: Vec<String>,
    /// Most tool calls in the run (maxToolCalls) [default: the profile's maxToolCalls, else
    /// 10].
    #[arg(long, value_name = "N")]
    max_tool_calls: Option<usize>,
    /// Sampling temperature.
    #[arg(long, value_name = "F")]
    temperature: Option<f32>,
    /// Most tokens per reply.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u32>,
    /// A stop sequence; may be repeated (replaces the profile's stop sequences).
    #[arg(long, value_name = "TEXT", action = clap::ArgAction::Append)]
    stop: Vec<String>,
    /// Sampling seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// The language of the system prompt's own words.
    #[arg(long, value_enum, default_value_t = PromptLanguageChoice::En)]
    prompt_language: PromptLanguageChoice,
    /// A file of usage notes for the tools (retrieved knowledge) to put in the system
    /// prompt.
    #[arg(long, value_name = "FILE", conflicts_with = "system_prompt")]
    usage_notes: Option<PathBuf>,
    /// A file whose text is sent as the system prompt instead of the built-in one; each
    /// {tools} in it becomes the tool list.
    #[arg(long, value_name = "FILE")]
    system_prompt: Option<PathBuf>,
    /// Longest wait for the server's next bytes, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    idle_timeout: f64,
    /// One JSON object per agent event per line.
    #[arg(long)]
    json: bool,
    /// The server's kind, for strict calls: auto (ask the server before the run),
    /// llama-cpp, vllm, sglang or other (the prompt alone).
    #[arg(long, value_name = "KIND", default_value = "auto",
          value_parser = crate::serve::upstream_kind)]
    upstream_kind: UpstreamChoice,
    /// Turn strict calls off: the server gets the prompt alone, never a grammar.
    #[arg(long)]
    no_strict: bool,
    /// The user's prompt.
    prompt: String,
}

/// Runs `tam run`.
pub(crate) fn run(args: &RunArgs) -> Result<(), CliError> {
    let config = model_config(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let kind = if args.no_strict {
        UpstreamKind::Other
    } else {
        runtime.block_on(args.upstream_kind.resolve(&config))
    };
    let (model, strict) = model_for(kind, config)?;

    let mut registry = local_tools(args)?;
    // Kept until the run ends: dropping a handle kills its server.
    let _servers = runtime.block_on(start_mcp_servers(&mut registry, &args.mcp))?;
    let dispatcher = Dispatcher::new(registry, summarizer_engine());
    let (scope, node) = scope_and_node(args, &dispatcher)?;
    let agent_config = agent_config(args, &node, strict);
    let prompt = built_in_prompt(args)?;
    let replacement = match &args.system_prompt {
        Some(path) => Some(prompt_file(
            path,
            &prompt,
            &scope.definitions(dispatcher.registry()),
        )?),
        None => None,
    };
    let agent = Agent::with_config(dispatcher, scope, agent_config);
    warn_unwritable_tools(&agent);
    if strict.is_some() {
        report_strict(&agent, kind);
    }
    let system = replacement.unwrap_or_else(|| agent.system_prompt(&prompt));

    let mut out = Output::new(args.json);
    let mut conversation = vec![Message::system(system)];
    let result = runtime.block_on(agent.run(
        model.as_ref(),
        &mut conversation,
        &args.prompt,
        |event| out.event(&event),
        &CancellationToken::new(),
    ));
    finish_run(out, result)
}

/// The server's configuration: base URL, model, `--idle-timeout` and `--api-key-env`.
fn model_config(args: &RunArgs) -> Result<OpenAiConfig, CliError> {
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
    Ok(config)
}

/// The model client for the server's kind and the strict form that kind takes, if any.
fn model_for(
    kind: UpstreamKind,
    config: OpenAiConfig,
) -> Result<(Box<dyn LanguageModel>, Option<StrictForm>), CliError> {
    let model_error = |e: tam_model::openai::OpenAiError| CliError::Model(e.to_string());
    // llama-server honours a caller's lazy grammar on its native `/completion` only.
    Ok(match kind {
        UpstreamKind::LlamaCpp => (
            Box::new(LlamaCompletionModel::new(config).map_err(model_error)?),
            Some(StrictForm::Gbnf),
        ),
        UpstreamKind::Vllm | UpstreamKind::Sglang => (
            Box::new(OpenAiModel::new(config).map_err(model_error)?),
            Some(StrictForm::StructuralTag),
        ),
        UpstreamKind::Other => (
            Box::new(OpenAiModel::new(config).map_err(model_error)?),
            None,
        ),
    })
}

/// A registry of the `--tools`, `--workflows` and `--plugin` tools (MCP servers come later).
fn local_tools(args: &RunArgs) -> Result<Registry, CliError> {
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
    Ok(registry)
}

/// The `--profile`'s scope and LLM node configuration; without one, every tool and none.
fn scope_and_node(
    args: &RunArgs,
    dispatcher: &Dispatcher,
) -> Result<(Scope, LlmNodeConfig), CliError> {
    Ok(match &args.profile {
        Some(path) => {
            let profile = AgentProfile::from_path(path)?;
            let node = llm_node(&profile, path)?;
            let scope = Scope::for_agent(dispatcher.registry(), &profile.tool_ids_inventory)?;
            (scope, node)
        }
        None => (Scope::unrestricted(), LlmNodeConfig::default()),
    })
}

/// The agent's configuration: the protocol, the call limit and the request options, the
/// flags winning over the profile's node.
fn agent_config(args: &RunArgs, node: &LlmNodeConfig, strict: Option<StrictForm>) -> AgentConfig {
    let mut agent_config = AgentConfig::for_protocol(args.protocol);
    agent_config.max_tool_calls = args
        .max_tool_calls
        .or(node.max_tool_calls)
        .unwrap_or(DEFAULT_MAX_TOOL_CALLS);
    let mut flags = ModelOptions::new().with_stop(args.stop.iter().cloned());
    flags.temperature = args.temperature;
    flags.max_tokens = args.max_tokens;
    flags.seed = args.seed;
    let from_node = node
        .parameters
        .as_ref()
        .map(ModelOptions::from)
        .unwrap_or_default();
    agent_config.model_options = from_node.overridden_by(flags);
    agent_config.strict = strict;
    agent_config
}

/// Warns on standard error of each tool the model can never call in ACTION.
fn warn_unwritable_tools(agent: &Agent) {
    for tool in agent.unwritable_tools() {
        eprintln!(
            "tam run: warning: tool '{tool}' (or one of its parameters) is no XML element name, \
             so a model can never call it in ACTION; it is left out of the prompt \
             (rename it, or run with --protocol tam)"
        );
    }
}

/// Says on standard error whether this run's calls are constrained by a grammar.
fn report_strict(agent: &Agent, kind: UpstreamKind) {
    match agent.strict_grammar() {
        Ok(grammar) => eprintln!(
            "tam run: strict calls on ({kind} server; {} tools in the grammar)",
            grammar.tools().len()
        ),
        Err(error) => {
            eprintln!("tam run: strict calls off for this run, the prompt alone: {error}")
        }
    }
}

/// Prints the run's end and turns its outcome into the exit status.
fn finish_run(mut out: Output, result: Result<AgentOutcome, Error>) -> Result<(), CliError> {
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

/// tool-schema's complete prompt for the protocol (`auto` teaches TAM), in the chosen
/// language, with the `--usage-notes`.
fn built_in_prompt(args: &RunArgs) -> Result<SystemPrompt, CliError> {
    let mut prompt = system_prompt_for(args.protocol, args.prompt_language.into());
    if let Some(path) = &args.usage_notes {
        prompt = prompt.with_usage_notes(read_text(path)?);
    }
    Ok(prompt)
}

/// The `--system-prompt` file's text, each `{tools}` replaced by `tools` rendered as
/// `prompt` renders its tool list.
fn prompt_file(
    path: &Path,
    prompt: &SystemPrompt,
    tools: &[&ToolDefinition],
) -> Result<String, CliError> {
    let text = read_text(path)?;
    if !text.contains("{tools}") {
        return Ok(text);
    }
    let list = prompt.render_tools(tools.iter().copied());
    Ok(text.replace("{tools}", &list))
}

fn read_text(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The LLM node configuration a profile carries: its `config` object, else its top-level
/// `parameters`; the default (nothing set) when it has neither.
fn llm_node(profile: &AgentProfile, path: &Path) -> Result<LlmNodeConfig, CliError> {
    let invalid = |field: &str, e: serde_json::Error| {
        CliError::Definition(format!("{}: {field}: {e}", path.display()))
    };
    if let Some(config) = profile.other.get("config") {
        return serde_json::from_value(config.clone()).map_err(|e| invalid("config", e));
    }
    let parameters = match profile.other.get("parameters") {
        Some(value) => Some(
            serde_json::from_value::<ModelParameters>(value.clone())
                .map_err(|e| invalid("parameters", e))?,
        ),
        None => None,
    };
    let mut config = LlmNodeConfig::default();
    config.parameters = parameters;
    Ok(config)
}

/// Starts each `--mcp` server and registers its tools (see the module's decisions).
async fn start_mcp_servers(
    registry: &mut Registry,
    commands: &[String],
) -> Result<Vec<McpServer>, CliError> {
    let mut servers = Vec::with_capacity(commands.len());
    for (index, command) in commands.iter().enumerate() {
        let server = McpServer::spawn(command).await?;
        match server.register(registry, None) {
            Ok(_) => {}
            Err(McpError::NameClash(_)) => {
                let prefix = server
                    .server_name()
                    .map(|(name, _)| namespace_of(&name))
                    .filter(|name| !name.is_empty())
                    .unwrap_or_else(|| format!("mcp{}", index + 1));
                server.register(registry, Some(&prefix))?;
            }
            Err(other) => return Err(other.into()),
        }
        servers.push(server);
    }
    Ok(servers)
}

/// `name` as a tool-id namespace: every character outside `[A-Za-z0-9_.-]` made `-`.
fn namespace_of(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect()
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
