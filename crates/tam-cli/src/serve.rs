//! `tam serve`: tam-proxy's proxy on a socket (Chat Completions, Messages, Responses), giving native tool calls
//! to a model behind `--upstream` that follows a text protocol.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tam::{Protocol, ProtocolChoice};

use crate::choices::protocol_parser;
use tam_model::openai::{OpenAiConfig, UpstreamChoice, UpstreamKind};
use tam_proxy::{
    ClientKeys, DEFAULT_MAX_UPSTREAM_CONCURRENCY, DEFAULT_STREAM_AFTER_BYTES,
    DEFAULT_UPSTREAM_QUEUE, ProxyConfig, serve,
};

use crate::error::CliError;

const LONG_ABOUT: &str = "\
Serve three client APIs that give native tool calling to any model that can follow a text
protocol: OpenAI Chat Completions (POST /v1/chat/completions), Anthropic Messages (POST
/v1/messages and /v1/messages/count_tokens: Claude Code) and OpenAI Responses (POST
/v1/responses: Codex CLI, the OpenAI Agents SDK). A client sends its request with
`tools`; the proxy renders the tools into the system prompt in the chosen protocol,
rewrites the history (tool calls as blocks, tool results as Observation lines), asks the
upstream without `tools`, and decodes its text as it streams: prose comes back as text,
each call as the API's own tool call with arguments typed by the tool's schema. GET
/v1/models is passed through; GET /health answers {\"status\":\"ok\"} without asking the
upstream.

The server listens on 127.0.0.1:8080 (loopback only) unless --listen says otherwise. It
prints `listening on http://ADDR/v1` on standard error once it accepts connections, and
stops on Ctrl-C after the requests in flight.

Access: with --client-key-env or --client-key-file, every route but /health needs
`Authorization: Bearer KEY` or `x-api-key: KEY` with one of the keys (else 401); without them anyone who
reaches the port uses the upstream, and a warning is printed when the address is not
loopback. POST bodies must be `Content-Type: application/json` (else 415). A request with
an `Origin` header (a web page's) gets 403 unless --allow-origin names that origin.

Limits: at most --max-upstream-concurrency requests ask the upstream at once; the others
wait in a queue of --upstream-queue, first come first served, for at most
--upstream-queue-timeout, and get 503 `server_busy` with `Retry-After: 1` when the queue is
full or the wait runs out. At start the process's soft open-file limit is raised to its
hard limit, and --max-connections defaults to half of it (at most 16384). At the cap a new
connection closes the oldest connection that is not serving a request (one still sending
its header, or an idle kept-alive one); only when every connection is serving a request is
a new one answered 503 `too_many_connections` and closed. A request's header must arrive
within --header-timeout (an idle kept-alive connection is closed after it) and be at most
16 KiB (else 431), its body within --body-timeout (else 408).

Strict calls (on by default): where the upstream can constrain its own sampling, a
request that offers tools asks it to, so that once the model starts a block it can only
write calls of the offered tools, with their parameter names and value types (integers,
numbers, booleans, enum members) and tags that close; prose stays free. llama.cpp's
llama-server gets a GBNF grammar on its /completion endpoint (the prompt rendered with its
/apply-template), lazy until the block's start marker; vLLM and SGLang a structural tag
as response_format; any other server the prompt alone. tool_choice required (Messages:
any) or a named tool makes the grammar apply from the reply's first token. The server's
kind is detected once at start (GET /props, /get_server_info, /version; printed) unless
--upstream-kind names it. A tool set no grammar can be built for (over 1 MiB, or no tool
whose name the protocol can write) is logged and answered from the prompt alone.
--no-strict turns strict calls off.

Logs: one line per request on standard error (request id, method, path, status, model,
calls, tokens when the upstream reports them, outcome, whether the reply was constrained,
time queued, latency), never a key or a prompt.
RUST_LOG filters them (default `info`; `RUST_LOG=off` silences them).

Exit status: 0 after Ctrl-C; 1 when the address cannot be bound, a key variable is unset,
or a key file cannot be read or holds no valid key; 2 for a usage error.";

/// Serve Chat Completions, Messages and Responses with native tool calls for a text-protocol model.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct ServeArgs {
    /// The upstream API base URL, up to /chat/completions (e.g. http://127.0.0.1:8081/v1).
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The protocol the upstream model writes its calls in. ACTION by default: small models
    /// called tools right more often in it (BFCL, e2e/README.md).
    #[arg(long, value_parser = protocol_parser(), default_value = "action")]
    protocol: Protocol,
    /// Environment variable holding the upstream's API key (sent as a Bearer token).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// Environment variable holding the client keys: one or more, separated by commas or
    /// line breaks. Clients send one as `Authorization: Bearer KEY`.
    #[arg(long, value_name = "VAR")]
    client_key_env: Option<String>,
    /// File of client keys, one per line (blank lines and lines starting with # are
    /// skipped). With --client-key-env, the keys of both are accepted.
    #[arg(long, value_name = "PATH")]
    client_key_file: Option<PathBuf>,
    /// A web origin whose requests are served, with CORS answers (e.g.
    /// `https://app.example`); repeat for more. Requests from other origins get 403.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Open connections at most (0: no cap). Default: half the open-file limit once raised,
    /// at most 16384 (printed at start).
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Upstream requests under way at most (0: no cap); others wait in the queue.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_UPSTREAM_CONCURRENCY)]
    max_upstream_concurrency: usize,
    /// Requests that may wait for an upstream slot (0: none, refused at once with 503).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_UPSTREAM_QUEUE)]
    upstream_queue: usize,
    /// Seconds a request may wait in the queue before a 503 (0: no limit).
    #[arg(long, value_name = "SECS", value_parser = seconds,
          default_value = UPSTREAM_QUEUE_TIMEOUT)]
    upstream_queue_timeout: Duration,
    /// Seconds a request's header may take to arrive (0: no limit).
    #[arg(long, value_name = "SECS", value_parser = seconds,
          default_value = HEADER_TIMEOUT)]
    header_timeout: Duration,
    /// Seconds a request's body may take to arrive after its header (0: no limit).
    #[arg(long, value_name = "SECS", value_parser = seconds,
          default_value = BODY_TIMEOUT)]
    body_timeout: Duration,
    /// Seconds to wait for the upstream's answer or for the next bytes of its stream.
    #[arg(long, value_name = "SECS", value_parser = seconds,
          default_value = UPSTREAM_TIMEOUT)]
    upstream_timeout: Duration,
    /// Log each request's prompt (the messages the upstream gets) on target
    /// `tam_proxy::prompt`. Off by default: prompts hold what users wrote.
    #[arg(long)]
    log_prompts: bool,
    /// In a streaming reply, a call goes out before its block closes once one of its
    /// string values is this many bytes long (0: every call from its tool id); shorter
    /// calls go out whole when their block decodes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_STREAM_AFTER_BYTES)]
    stream_after_bytes: usize,
    /// The upstream server's kind, for strict calls: auto (ask the server at start),
    /// llama-cpp, vllm, sglang or other (the prompt alone).
    #[arg(long, value_name = "KIND", default_value = "auto", value_parser = upstream_kind)]
    upstream_kind: UpstreamChoice,
    /// Turn strict calls off: the upstream gets the prompt alone, never a grammar.
    #[arg(long)]
    no_strict: bool,
}

/// An `--upstream-kind` value.
pub(crate) fn upstream_kind(text: &str) -> Result<UpstreamChoice, String> {
    text.parse()
        .map_err(|e: tam_model::openai::ParseUpstreamKindError| e.to_string())
}

/// The time-out flags' defaults: tam-proxy's and tam-model's (a test checks they agree).
const HEADER_TIMEOUT: &str = "10";
const BODY_TIMEOUT: &str = "30";
const UPSTREAM_TIMEOUT: &str = "120";
const UPSTREAM_QUEUE_TIMEOUT: &str = "60";

/// Seconds, whole or decimal, not negative.
fn seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    Duration::try_from_secs_f64(value)
        .map_err(|_| format!("'{text}' is not a number of seconds from 0"))
}

/// The client keys of the flags (none when neither is given). Each source is checked on
/// its own, so an error names it; the keys of both are accepted.
fn client_keys(args: &ServeArgs) -> Result<ClientKeys, CliError> {
    let mut texts = Vec::new();
    if let Some(var) = &args.client_key_env {
        let text = std::env::var(var).map_err(|_| {
            CliError::Serve(format!(
                "the environment variable {var} holding the client keys is not set"
            ))
        })?;
        ClientKeys::parse(&text).map_err(|e| CliError::Serve(format!("{var}: {e}")))?;
        texts.push(text);
    }
    if let Some(path) = &args.client_key_file {
        let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
            path: path.clone(),
            source,
        })?;
        ClientKeys::parse(&text)
            .map_err(|e| CliError::Serve(format!("{}: {e}", path.display())))?;
        texts.push(text);
    }
    if texts.is_empty() {
        return Ok(ClientKeys::default());
    }
    ClientKeys::parse(&texts.join("\n")).map_err(|e| CliError::Serve(e.to_string()))
}

/// Binds `address` with a backlog of 1024 (a burst of connections waits in the kernel for
/// the accept loop, which refuses those over the cap at once).
fn bind(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(1024)
}

/// The request logs on standard error, filtered by `RUST_LOG` (default `info`).
fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        // A closed standard error loses the lines; it must not become a panic.
        .log_internal_errors(false)
        .try_init();
}

/// Runs the server until Ctrl-C.
pub(crate) fn run(args: &ServeArgs) -> Result<(), CliError> {
    // Before the configuration, whose default connection cap is sized from the limit.
    let raised = tam_proxy::raise_open_file_limit();
    let upstream = upstream_config(args)?;
    let client_keys = client_keys(args)?;
    let open = client_keys.is_empty();
    let mut config = proxy_config(args, upstream, client_keys);
    let max_connections = config.max_connections;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    runtime.block_on(async {
        let listener = bind(args.listen).map_err(|source| {
            CliError::Serve(format!("cannot listen on {}: {source}", args.listen))
        })?;
        let address = listener.local_addr().map_err(CliError::Runtime)?;
        // Written, not printed: a closed standard error must not stop the server.
        let mut stderr = std::io::stderr();
        announce(&mut stderr, args, address, max_connections, &raised, open);
        if !args.no_strict {
            config = with_upstream_kind(&mut stderr, args, config).await;
        } else {
            let _ = writeln!(stderr, "tam serve: strict calls off (--no-strict)");
        }
        init_logs();
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

/// The upstream's configuration: `--upstream` and `--api-key-env`.
fn upstream_config(args: &ServeArgs) -> Result<OpenAiConfig, CliError> {
    let mut upstream = OpenAiConfig::new(args.upstream.clone(), "");
    if let Some(var) = &args.api_key_env {
        upstream = upstream
            .with_api_key_env(var)
            .map_err(|e| CliError::Model(e.to_string()))?;
    }
    Ok(upstream)
}

/// The proxy's configuration from the flags, for `upstream` and `client_keys`.
fn proxy_config(args: &ServeArgs, upstream: OpenAiConfig, client_keys: ClientKeys) -> ProxyConfig {
    let protocol = ProtocolChoice::from(args.protocol);
    let mut config = ProxyConfig::new(upstream)
        .with_protocol(protocol)
        .with_client_keys(client_keys)
        .with_max_upstream_concurrency(args.max_upstream_concurrency)
        .with_upstream_queue(args.upstream_queue)
        .with_upstream_queue_timeout(args.upstream_queue_timeout)
        .with_header_timeout(args.header_timeout)
        .with_body_timeout(args.body_timeout)
        .with_upstream_timeout(args.upstream_timeout)
        .with_log_prompts(args.log_prompts)
        .with_stream_after_bytes(args.stream_after_bytes)
        .with_strict(!args.no_strict);
    if let Some(max_connections) = args.max_connections {
        config = config.with_max_connections(max_connections);
    }
    for origin in &args.allow_origin {
        config = config.with_allowed_origin(origin.clone());
    }
    config
}

/// Writes the listening line and the warnings of an unraised open-file limit and of an
/// open, non-loopback address.
fn announce(
    stderr: &mut std::io::Stderr,
    args: &ServeArgs,
    address: SocketAddr,
    max_connections: usize,
    raised: &std::io::Result<u64>,
    open: bool,
) {
    let cap = match max_connections {
        0 => "no connection cap".to_owned(),
        n => format!("connection cap {n}"),
    };
    let _ = writeln!(
        stderr,
        "tam serve: listening on http://{address}/v1 (upstream {}; {cap})",
        args.upstream
    );
    if let Err(error) = raised {
        let _ = writeln!(
            stderr,
            "tam serve: warning: the open-file limit could not be raised ({error}); it \
             is {}",
            tam_proxy::open_file_limit().map_or_else(|| "unknown".to_owned(), |n| n.to_string())
        );
    }
    if open && !address.ip().is_loopback() {
        let _ = writeln!(
            stderr,
            "tam serve: warning: no client key is required and {address} is not a loopback \
             address: anyone who reaches it can use the upstream (and its key); see \
             --client-key-env and --client-key-file"
        );
    }
}

/// `config` with the upstream's kind, detected or named, written with what strict calls it
/// allows.
async fn with_upstream_kind(
    stderr: &mut std::io::Stderr,
    args: &ServeArgs,
    config: ProxyConfig,
) -> ProxyConfig {
    // Once, before serving: every request with tools goes by it.
    let kind = args.upstream_kind.resolve(&config.upstream).await;
    let how = match args.upstream_kind {
        UpstreamChoice::Auto => "detected",
        UpstreamChoice::Kind(_) => "named",
    };
    let strict = match kind {
        UpstreamKind::LlamaCpp => "on (a GBNF grammar on /completion)",
        UpstreamKind::Vllm | UpstreamKind::Sglang => "on (a structural tag in response_format)",
        UpstreamKind::Other => "not supported by this server (the prompt alone)",
    };
    let _ = writeln!(
        stderr,
        "tam serve: upstream kind {kind} ({how}); strict calls {strict}"
    );
    config.with_upstream_kind(UpstreamChoice::Kind(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_out_defaults_are_the_libraries() {
        assert_eq!(
            seconds(HEADER_TIMEOUT),
            Ok(tam_proxy::DEFAULT_HEADER_TIMEOUT)
        );
        assert_eq!(seconds(BODY_TIMEOUT), Ok(tam_proxy::DEFAULT_BODY_TIMEOUT));
        assert_eq!(
            seconds(UPSTREAM_TIMEOUT),
            Ok(tam_model::openai::DEFAULT_IDLE_TIMEOUT)
        );
        assert_eq!(
            seconds(UPSTREAM_QUEUE_TIMEOUT),
            Ok(tam_proxy::DEFAULT_UPSTREAM_QUEUE_TIMEOUT)
        );
    }

    #[test]
    fn seconds_are_whole_or_decimal_and_not_negative() {
        assert_eq!(seconds("10"), Ok(Duration::from_secs(10)));
        assert_eq!(seconds("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        for bad in ["-1", "x", "", "inf", "NaN", "1e300"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
