//! `tam serve`: tool-dispatch's OpenAI-compatible proxy on a socket, giving
//! native tool calls to a model behind `--upstream` that follows a text protocol.

use std::net::SocketAddr;

use clap::ValueEnum;
use tam::Protocol as ProtocolChoice;
use tam_model::openai::OpenAiConfig;
use tam_proxy::{ProxyConfig, serve};

use crate::error::CliError;

const LONG_ABOUT: &str = "\
Serve an OpenAI-compatible API that gives native tool calling to any model that can follow
a text protocol. A client sends POST /v1/chat/completions with `tools`, as to OpenAI; the
proxy renders the tools into the system prompt in the chosen protocol, rewrites the
history (tool calls as blocks, tool results as Observation lines), asks the upstream
without `tools`, and decodes its text as it streams: prose comes back as content, each
call as `tool_calls` with arguments typed by the tool's schema. GET /v1/models is passed
through.

The server listens on 127.0.0.1:8080 (loopback only) unless --listen says otherwise. It
prints `listening on http://ADDR/v1` on standard error once it accepts connections, and
stops on Ctrl-C after the requests in flight.

Exit status: 0 after Ctrl-C; 1 when the address cannot be bound or the API key variable
is unset; 2 for a usage error.";

/// Which protocol the upstream model is asked to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ServeProtocol {
    /// TAM blocks.
    Tam,
    /// ACTION XML blocks.
    Action,
}

/// Serve an OpenAI-compatible proxy giving native tool calls to a text-protocol model.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct ServeArgs {
    /// The upstream API base URL, up to /chat/completions (e.g. http://127.0.0.1:8081/v1).
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The protocol the upstream model writes its calls in.
    #[arg(long, value_enum, default_value_t = ServeProtocol::Tam)]
    protocol: ServeProtocol,
    /// Environment variable holding the upstream's API key (sent as a Bearer token).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
}

/// Runs the server until Ctrl-C.
pub(crate) fn run(args: &ServeArgs) -> Result<(), CliError> {
    let mut upstream = OpenAiConfig::new(args.upstream.clone(), "");
    if let Some(var) = &args.api_key_env {
        upstream = upstream
            .with_api_key_env(var)
            .map_err(|e| CliError::Model(e.to_string()))?;
    }
    let protocol = match args.protocol {
        ServeProtocol::Tam => ProtocolChoice::Tam,
        ServeProtocol::Action => ProtocolChoice::Action,
    };
    let config = ProxyConfig::new(upstream).with_protocol(protocol);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|source| {
                CliError::Serve(format!("cannot listen on {}: {source}", args.listen))
            })?;
        let address = listener.local_addr().map_err(CliError::Runtime)?;
        eprintln!(
            "tam serve: listening on http://{address}/v1 (upstream {})",
            args.upstream
        );
        let shutdown = async {
            // Without a signal handler the server runs until the process is killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        serve(listener, config, shutdown)
            .await
            .map_err(|e| CliError::Serve(e.to_string()))
    })
}
