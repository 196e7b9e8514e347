//! The OpenAI-compatible model from library code: an agent with one tool, run against any
//! server that speaks `chat/completions` streaming (llama-server, vLLM, Ollama's `/v1`, …).
//!
//! ```text
//! cargo run -p tool-dispatch --features openai --example openai_model -- \
//!     http://127.0.0.1:8080/v1 qwen3 "What time is it?"
//! ```
//!
//! Set `OPENAI_API_KEY` for a server that wants a key. Prose streams to standard output,
//! reasoning to standard error, each call as it runs.

use std::io::Write;

use serde_json::json;
use tam_model::openai::{OpenAiConfig, OpenAiModel};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    Agent, AgentConfig, AgentEvent, CancellationToken, Dispatcher, ModelOptions, ProtocolChoice,
    Registry, Scope, ToolExecutionResult,
};
use tool_schema::{Implementation, ToolDefinition, ToolId};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let (Some(base_url), Some(model_name)) = (args.next(), args.next()) else {
        eprintln!("usage: openai_model BASE_URL MODEL [PROMPT]");
        std::process::exit(2);
    };
    let prompt = args.next().unwrap_or_else(|| "What time is it?".to_owned());

    // The model: reproducible output on llama.cpp needs its prompt cache off.
    let mut config =
        OpenAiConfig::new(base_url, model_name).with_extra_body("cache_prompt", json!(false));
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        config = config.with_api_key_env("OPENAI_API_KEY")?;
    }
    let model = OpenAiModel::new(config)?;

    // One tool. A blocking function (file or database I/O) would use register_blocking_fn.
    let mut registry = Registry::new();
    registry.register_fn(
        ToolDefinition::new(
            ToolId::parse("system:get_current_time")?,
            "Returns the current time of day.",
            json!({"type": "object", "properties": {}}),
            Implementation::Service,
        ),
        |_| async { ToolExecutionResult::query_success(json!("12:00"), "current time") },
    )?;
    let mut agent_config = AgentConfig::for_protocol(ProtocolChoice::Tam);
    agent_config.model_options = ModelOptions::new()
        .with_temperature(0.0)
        .with_max_tokens(512);
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        agent_config,
    );

    let mut conversation = Vec::new();
    let outcome = agent
        .run(
            &model,
            &mut conversation,
            &prompt,
            |event| match event {
                AgentEvent::Decoded(tam::Event::Text { text, .. }) => {
                    print!("{text}");
                    let _ = std::io::stdout().flush();
                }
                AgentEvent::Reasoning(text) => eprint!("{text}"),
                AgentEvent::CallStarted { tool, args } => println!("\n→ {tool} {args:?}"),
                AgentEvent::Observation(text) => println!("  ↳ {text}"),
                AgentEvent::StreamCut(cut) => println!("\n! cut: {cut:?}"),
                _ => {}
            },
            &CancellationToken::new(),
        )
        .await?;
    println!("\n[{:?} after {} round(s)]", outcome.stop, outcome.rounds);
    Ok(())
}
