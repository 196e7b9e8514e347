//! `tam demo`: an agent loop end to end, with nothing to install or download.
//!
//! A [scripted model](model) streams its replies in token-sized deltas with 5–20 ms pauses
//! (none with `--fast`); the [agent loop](tool_dispatch::Agent) decodes TAM and ACTION XML
//! in one stream and runs each block's calls the moment the block closes, through the
//! [demo tools](tools): `workflow:summarize_text`, a workflow executed node by node by the
//! reference engine, and two services. The [script] makes the ACTION seed's parameter
//! mistake (`playerId`) and corrects it after the observation; the [printer](terminal)
//! shows it all as it happens.

mod model;
mod script;
mod terminal;
pub(crate) mod tools;

use std::io::{self, IsTerminal};
use std::time::Duration;

use clap::ValueEnum;
use tool_dispatch::{Agent, AgentConfig, CancellationToken, Message, ProtocolChoice, StopReason};
use tool_schema::SystemPrompt;

pub(crate) use crate::choices::PromptLanguageChoice;

use self::model::{Pacing, ScriptedModel};
use self::terminal::Printer;
use crate::error::CliError;

const LONG_ABOUT: &str = "\
Run an agent loop end to end on an embedded scripted model: no network, no files.

The model streams like a real one (token-sized deltas, 5-20 ms apart). In round 1 it
writes a TAM block chaining workflow:summarize_text (a workflow run node by node by the
reference engine) and system:get_current_time; in round 2 an ACTION XML block calling
GetPlayerInfo with the wrong parameter name (playerId); after the observation it corrects
the call (player_id) in round 3 and answers from the results in round 4.

Prose is printed as it streams, each block's calls when the block closes, then each call's
end and the observation fed back to the model.";

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// When standard output is a terminal and NO_COLOR is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Run an agent loop end to end on an embedded scripted model (no network, no files).
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct DemoArgs {
    /// Stream without pauses between deltas.
    #[arg(long)]
    fast: bool,
    /// Colour the output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Also print the system prompt given to the model, with its tool list.
    #[arg(long)]
    show_prompt: bool,
    /// Language of the system prompt.
    #[arg(long, value_enum, default_value_t = PromptLanguageChoice::En)]
    prompt_language: PromptLanguageChoice,
}

/// Shortest and longest pause before a delta when not `--fast`.
const PAUSE_RANGE: (Duration, Duration) = (Duration::from_millis(5), Duration::from_millis(20));

/// Runs `tam demo`.
pub(crate) fn run(args: &DemoArgs) -> Result<(), CliError> {
    let (dispatcher, scope) = tools::dispatcher_and_scope()?;
    let agent = Agent::with_config(
        dispatcher,
        scope,
        AgentConfig::for_protocol(ProtocolChoice::Auto),
    );
    let pacing = if args.fast {
        Pacing::Instant
    } else {
        Pacing::Streamed {
            min: PAUSE_RANGE.0,
            max: PAUSE_RANGE.1,
        }
    };
    let model = ScriptedModel::new(pacing);
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let prompt = script::user_prompt();
    let tool_ids: Vec<String> = agent
        .scope()
        .ids()
        .map(|ids| ids.map(str::to_owned).collect())
        .unwrap_or_default();
    // The demo's model writes TAM first, so the prompt teaches TAM.
    let system_prompt = agent.system_prompt(&SystemPrompt::tam(args.prompt_language.into()));
    let tool_list = args.show_prompt.then_some(system_prompt.as_str());

    let mut printer = Printer::new(io::stdout(), color);
    printer.intro(&tool_ids, &prompt, tool_list);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(CliError::Runtime)?;
    let mut conversation = vec![Message::system(system_prompt.clone())];
    let outcome = runtime.block_on(agent.run(
        &model,
        &mut conversation,
        &prompt,
        |event| printer.event(event),
        &CancellationToken::new(),
    ))?;
    printer.outro(&outcome);
    if let Some(error) = printer.into_failure() {
        return Err(CliError::Write(error));
    }
    if outcome.stop == StopReason::Answer {
        Ok(())
    } else {
        Err(CliError::DemoIncomplete(format!(
            "{:?} after {} rounds",
            outcome.stop, outcome.rounds
        )))
    }
}
