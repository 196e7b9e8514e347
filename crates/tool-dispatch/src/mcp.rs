//! Tools of an MCP server started as a child process over stdio (crate feature `mcp`),
//! through the official `rmcp` SDK.
//!
//! [`McpServer::spawn`] starts `CMD ARGS`, runs the MCP `initialize` handshake and lists
//! every tool (all pages). [`McpServer::register`] puts each tool into a [`Registry`] as a
//! service tool whose parameters are the tool's input JSON Schema, so validation, coercion
//! (`"2"` → `2` for an `integer` property) and prompt rendering work as for any other tool.
//! A call sends `tools/call` with the coerced arguments; the reply becomes a
//! [`ToolExecutionResult`].
//!
//! ```no_run
//! use tool_dispatch::mcp::McpServer;
//! use tool_dispatch::engine::ReferenceEngine;
//! use tool_dispatch::{Dispatcher, Registry};
//!
//! # async fn demo() -> Result<(), tool_dispatch::mcp::McpError> {
//! let server = McpServer::spawn("npx -y @modelcontextprotocol/server-everything").await?;
//! let mut registry = Registry::new();
//! let added = server.register(&mut registry, Some("everything"))?;
//! println!("{added} tools, e.g. {:?}", registry.ids().next());
//! let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
//! // … run calls; keep `server` alive as long as the tools are used.
//! # Ok(()) }
//! ```
//!
//! # Decisions
//!
//! * **Ids.** A tool is registered as its MCP name, or `PREFIX:name` when a prefix is
//!   given. A name that is not a valid tool id, or that clashes with a registered tool (or
//!   another tool of the same server), fails the whole registration before anything is
//!   added ([`McpError::InvalidToolName`], [`McpError::NameClash`]).
//! * **Definitions.** Description is the MCP `description` (empty when absent), display
//!   name the MCP `title`, parameters the `inputSchema` as sent (a schema without `type`
//!   is taken as an object schema), output schema the `outputSchema`.
//! * **Results.** `isError: true` → failure whose message is the text content joined by
//!   newlines (or "MCP tool NAME reported an error" when there is none). Otherwise the
//!   data is `structuredContent` when present; else the content: one block gives its
//!   value, several give an array. A text block whose whole text is a JSON object, array,
//!   number or boolean gives that JSON, any other text gives the string; an image, audio or
//!   resource block gives its MCP JSON. A reply with neither content nor structured
//!   content is an empty result (`success: false`, "MCP tool NAME returned no content").
//!   The operation type is `query` for a tool annotated `readOnlyHint: true`, else
//!   `operation`.
//! * **Failures.** A JSON-RPC error, a closed transport (the server exited or the handle
//!   was dropped) or an unexpected reply becomes a failure result whose message names the
//!   server's command; the agent feeds it back as an observation. Nothing panics.
//! * **Lifetime.** The [`McpServer`] handle owns the child, which runs as the leader of
//!   its own process group on Unix. Dropping the handle sends `SIGKILL` to that group at
//!   once (no runtime needed, so a `sh -c` or `npx` wrapper takes its children along even
//!   when the handle outlives its runtime); elsewhere tokio's `kill_on_drop` kills the
//!   child. The registered tools then fail with a "not running" message.
//!   [`McpServer::shutdown`] closes the connection gracefully instead (the SDK waits for
//!   the exit, then sends `SIGTERM`, then kills).
//! * **Time-outs.** Start-up (spawn, `initialize`, `tools/list`) is bounded by
//!   [`McpConfig::startup_timeout`]. Calls have no time-out of their own: they follow the
//!   [`Dispatcher`](crate::Dispatcher)'s, whose expiry drops the call, which sends the
//!   server `notifications/cancelled`.
//! * **Output.** The child's stderr is inherited (server logs reach the host's stderr);
//!   stdout lines that are not JSON are ignored by the SDK.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use process_wrap::tokio::CommandWrap;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, ServiceExt};
use serde_json::{Map, Value};
use tool_schema::{CompiledTool, Implementation, ToolDefinition, ToolId};

use crate::result::operation_type;
use crate::{Registry, Tool, ToolContext, ToolExecutionResult};

/// Default of [`McpConfig::startup_timeout`].
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Limits of talking to an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpConfig {
    /// How long spawning, the `initialize` handshake and listing every tool may take
    /// together. Default [`DEFAULT_STARTUP_TIMEOUT`] (30 s).
    pub startup_timeout: Duration,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }
}

impl McpConfig {
    /// Sets [`startup_timeout`](Self::startup_timeout).
    #[must_use]
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }
}

/// What can go wrong starting an MCP server or registering its tools. Each variant has a
/// stable [`code`](McpError::code).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The command line is empty or its quoting is unbalanced (`mcp.command`).
    #[error("invalid MCP server command line {command:?}: {reason}")]
    InvalidCommand {
        /// The command line as given.
        command: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The process could not be started, e.g. the program does not exist (`mcp.spawn`).
    #[error("cannot start MCP server `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The process started but the `initialize` handshake failed, e.g. it exited or is not
    /// an MCP server (`mcp.initialize`).
    #[error("MCP server `{command}` did not initialize: {reason}")]
    Initialize {
        /// The command line.
        command: String,
        /// The SDK's error.
        reason: String,
    },
    /// `tools/list` failed (`mcp.list_tools`).
    #[error("MCP server `{command}` could not list its tools: {reason}")]
    ListTools {
        /// The command line.
        command: String,
        /// The SDK's error.
        reason: String,
    },
    /// Start-up took longer than [`McpConfig::startup_timeout`] (`mcp.timeout`).
    #[error("MCP server `{command}` did not start within {timeout:?}")]
    StartupTimeout {
        /// The command line.
        command: String,
        /// The limit.
        timeout: Duration,
    },
    /// A tool's name (with the prefix) is not a valid tool id (`mcp.tool_name`).
    #[error("MCP tool '{name}' cannot be registered: {source}")]
    InvalidToolName {
        /// The id that was tried.
        name: String,
        /// Why it is not an id.
        #[source]
        source: tool_schema::Error,
    },
    /// A tool's id is already registered, or the server lists it twice (`mcp.name_clash`).
    #[error("MCP tool '{0}' clashes with a tool of the same id")]
    NameClash(String),
    /// A tool's input schema is not a usable object schema (`mcp.schema`).
    #[error("MCP tool '{name}' has an unusable input schema: {source}")]
    Schema {
        /// The tool id.
        name: String,
        /// The schema crate's error.
        #[source]
        source: Box<tool_schema::Error>,
    },
    /// Closing the connection failed (`mcp.shutdown`).
    #[error("MCP server `{command}` did not shut down cleanly: {reason}")]
    Shutdown {
        /// The command line.
        command: String,
        /// The SDK's error.
        reason: String,
    },
    /// The registry refused a tool (`mcp.registry`).
    #[error(transparent)]
    Registry(#[from] crate::Error),
}

impl McpError {
    /// A stable identifier of the error's kind, e.g. `mcp.spawn`.
    pub fn code(&self) -> &'static str {
        match self {
            McpError::InvalidCommand { .. } => "mcp.command",
            McpError::Spawn { .. } => "mcp.spawn",
            McpError::Initialize { .. } => "mcp.initialize",
            McpError::ListTools { .. } => "mcp.list_tools",
            McpError::StartupTimeout { .. } => "mcp.timeout",
            McpError::InvalidToolName { .. } => "mcp.tool_name",
            McpError::NameClash(_) => "mcp.name_clash",
            McpError::Schema { .. } => "mcp.schema",
            McpError::Shutdown { .. } => "mcp.shutdown",
            McpError::Registry(_) => "mcp.registry",
        }
    }
}

/// One tool an MCP server offers, as listed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpTool {
    /// The MCP name (what `tools/call` is sent with).
    pub name: String,
    /// The MCP `title`, if any.
    pub title: Option<String>,
    /// The MCP `description`; empty when absent.
    pub description: String,
    /// The input JSON Schema as listed.
    pub input_schema: Value,
    /// The output JSON Schema, if any.
    pub output_schema: Option<Value>,
    /// Whether the server annotated the tool `readOnlyHint: true`.
    pub read_only: bool,
}

impl McpTool {
    fn from_rmcp(tool: rmcp::model::Tool) -> Self {
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        Self {
            name: tool.name.into_owned(),
            title: tool.title,
            description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            output_schema: tool.output_schema.map(|s| Value::Object((*s).clone())),
            read_only,
        }
    }

    /// The tool's definition under `id`: description, parameters, display and output
    /// schema as the module docs say.
    fn definition(&self, id: ToolId) -> ToolDefinition {
        let mut definition = ToolDefinition::new(
            id,
            self.description.clone(),
            self.input_schema.clone(),
            Implementation::Service,
        );
        if let Some(title) = &self.title {
            definition = definition.with_display_name(title.clone());
        }
        if let Some(output) = &self.output_schema {
            definition = definition.with_output_schema(output.clone());
        }
        definition
    }
}

/// A running MCP server (a child process over stdio) and the tools it listed.
///
/// Dropping the handle kills the process; see the module docs.
pub struct McpServer {
    /// `None` only once [`McpServer::shutdown`] took it.
    service: Option<RunningService<RoleClient, ()>>,
    /// The connection's request side (what registered tools hold).
    peer: Peer<RoleClient>,
    command: Arc<str>,
    pid: Option<u32>,
    tools: Vec<McpTool>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("command", &self.command)
            .field("pid", &self.pid)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts `command_line` (split shell-like: `npx -y "@scope/server" --flag`), runs the
    /// MCP handshake and lists its tools, with the default [`McpConfig`].
    ///
    /// # Errors
    /// [`McpError::InvalidCommand`], [`McpError::Spawn`] (e.g. no such program),
    /// [`McpError::Initialize`], [`McpError::ListTools`], [`McpError::StartupTimeout`].
    pub async fn spawn(command_line: &str) -> Result<McpServer, McpError> {
        Self::spawn_with_config(command_line, McpConfig::default()).await
    }

    /// As [`spawn`](Self::spawn) with `config`.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub async fn spawn_with_config(
        command_line: &str,
        config: McpConfig,
    ) -> Result<McpServer, McpError> {
        let invalid = |reason| McpError::InvalidCommand {
            command: command_line.to_owned(),
            reason,
        };
        let words = shlex::split(command_line).ok_or_else(|| invalid("unbalanced quoting"))?;
        let (program, args) = words
            .split_first()
            .ok_or_else(|| invalid("no program given"))?;
        Self::start(command_line.to_owned(), program, args, config).await
    }

    /// Starts `program` with `args` (no shell splitting), otherwise as
    /// [`spawn_with_config`](Self::spawn_with_config).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub async fn spawn_command<I, S>(
        program: impl AsRef<OsStr>,
        args: I,
        config: McpConfig,
    ) -> Result<McpServer, McpError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref();
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let command = std::iter::once(program)
            .chain(args.iter().map(OsString::as_os_str))
            .map(OsStr::to_string_lossy)
            .collect::<Vec<_>>()
            .join(" ");
        Self::start(command, program, &args, config).await
    }

    async fn start(
        command: String,
        program: impl AsRef<OsStr>,
        args: &[impl AsRef<OsStr>],
        config: McpConfig,
    ) -> Result<McpServer, McpError> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        let mut wrapped = CommandWrap::from(cmd);
        #[cfg(unix)]
        wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
        wrapped.wrap(process_wrap::tokio::KillOnDrop);
        let (transport, _stderr) =
            TokioChildProcess::builder(wrapped)
                .spawn()
                .map_err(|source| McpError::Spawn {
                    command: command.clone(),
                    source,
                })?;
        let pid = transport.id();
        let command: Arc<str> = command.into();
        let startup = async {
            let service =
                ().serve(transport)
                    .await
                    .map_err(|e| McpError::Initialize {
                        command: command.to_string(),
                        reason: e.to_string(),
                    })?;
            let tools = service
                .list_all_tools()
                .await
                .map_err(|e| McpError::ListTools {
                    command: command.to_string(),
                    reason: e.to_string(),
                })?;
            Ok::<_, McpError>((service, tools))
        };
        // Dropping the unfinished start-up drops the transport, which kills the child.
        let (service, tools) = tokio::time::timeout(config.startup_timeout, startup)
            .await
            .map_err(|_| McpError::StartupTimeout {
                command: command.to_string(),
                timeout: config.startup_timeout,
            })??;
        Ok(McpServer {
            peer: service.peer().clone(),
            service: Some(service),
            command,
            pid,
            tools: tools.into_iter().map(McpTool::from_rmcp).collect(),
        })
    }

    /// The command line the server was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The child's process id, when the platform reported one.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The tools the server listed at start-up, in the server's order.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// The server's name and version from its `initialize` reply, if it sent them.
    pub fn server_name(&self) -> Option<(String, String)> {
        let info = self.service.as_ref()?.peer_info()?;
        let server = info.server_info.as_ref()?;
        Some((server.name.clone(), server.version.clone()))
    }

    /// Registers every listed tool in `registry` as `PREFIX:name` (or `name` without a
    /// prefix) and returns how many were added. Either all tools are added or none.
    ///
    /// # Errors
    /// [`McpError::InvalidToolName`] for a name (with the prefix) that is not a tool id;
    /// [`McpError::NameClash`] when an id is already registered or listed twice;
    /// [`McpError::Schema`] for an input schema that is not an object schema.
    pub fn register(
        &self,
        registry: &mut Registry,
        prefix: Option<&str>,
    ) -> Result<usize, McpError> {
        let mut ready = Vec::with_capacity(self.tools.len());
        let mut seen = std::collections::BTreeSet::new();
        for tool in &self.tools {
            let text = match prefix {
                Some(prefix) => format!("{prefix}:{}", tool.name),
                None => tool.name.clone(),
            };
            let id = ToolId::parse(&text).map_err(|source| McpError::InvalidToolName {
                name: text.clone(),
                source,
            })?;
            if registry.contains(&text) || !seen.insert(text.clone()) {
                return Err(McpError::NameClash(text));
            }
            let definition = tool.definition(id);
            // Compiled here so a bad schema fails before anything is registered.
            CompiledTool::new(definition.clone()).map_err(|source| McpError::Schema {
                name: text.clone(),
                source: Box::new(source),
            })?;
            ready.push((definition, tool));
        }
        let count = ready.len();
        for (definition, tool) in ready {
            registry.register_service(definition, self.runner(tool))?;
        }
        Ok(count)
    }

    /// Calls the tool `name` with `args` directly (no validation or coercion), mapping the
    /// reply as a registered tool's call does.
    pub async fn call(&self, name: &str, args: Map<String, Value>) -> ToolExecutionResult {
        let read_only = self
            .tools
            .iter()
            .find(|t| t.name == name)
            .is_some_and(|t| t.read_only);
        call_tool(
            self.peer.clone(),
            Arc::clone(&self.command),
            name.to_owned(),
            read_only,
            args,
        )
        .await
    }

    /// Closes the connection and waits for the child to exit (killing it when it does not
    /// exit within a few seconds).
    ///
    /// # Errors
    /// The SDK's error when the connection task failed.
    pub async fn shutdown(mut self) -> Result<(), McpError> {
        let Some(service) = self.service.take() else {
            return Ok(());
        };
        let result = service.cancel().await;
        // The group is gone or being killed by the SDK now; `Drop` must not signal a
        // process group id that could be reused.
        self.pid = None;
        result.map(drop).map_err(|e| McpError::Shutdown {
            command: self.command.to_string(),
            reason: e.to_string(),
        })
    }

    fn runner(&self, tool: &McpTool) -> McpToolRunner {
        McpToolRunner {
            peer: self.peer.clone(),
            command: Arc::clone(&self.command),
            name: tool.name.clone(),
            read_only: tool.read_only,
        }
    }
}

impl Drop for McpServer {
    /// Kills the server at once: its whole process group on Unix (the SDK's own clean-up
    /// kills only from a task of a live runtime, and only the leader would die from
    /// tokio's `kill_on_drop`).
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.service.is_some()
            && let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok())
        {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// One registered MCP tool: sends `tools/call` through the server's connection.
struct McpToolRunner {
    peer: Peer<RoleClient>,
    command: Arc<str>,
    name: String,
    read_only: bool,
}

impl Tool for McpToolRunner {
    fn call(
        &self,
        args: Map<String, Value>,
        ctx: ToolContext,
    ) -> BoxFuture<'static, ToolExecutionResult> {
        let call = call_tool(
            self.peer.clone(),
            Arc::clone(&self.command),
            self.name.clone(),
            self.read_only,
            args,
        );
        let op = operation(self.read_only);
        let name = self.name.clone();
        async move {
            tokio::select! {
                result = call => result,
                // Dropping `call` sends the server `notifications/cancelled`.
                () = ctx.cancel.cancelled() => ToolExecutionResult::failure(
                    op,
                    format!("MCP tool {name} was cancelled"),
                ),
            }
        }
        .boxed()
    }
}

fn operation(read_only: bool) -> &'static str {
    if read_only {
        operation_type::QUERY
    } else {
        operation_type::OPERATION
    }
}

async fn call_tool(
    peer: Peer<RoleClient>,
    command: Arc<str>,
    name: String,
    read_only: bool,
    args: Map<String, Value>,
) -> ToolExecutionResult {
    let params = CallToolRequestParams::new(name.clone()).with_arguments(args);
    match peer.call_tool(params).await {
        Ok(result) => map_result(&name, read_only, result),
        Err(error) => transport_failure(&command, &name, read_only, &error),
    }
}

fn transport_failure(
    command: &str,
    name: &str,
    read_only: bool,
    error: &ServiceError,
) -> ToolExecutionResult {
    // `ServiceError` is rmcp's and #[non_exhaustive]: the rest are plain failures.
    #[allow(clippy::wildcard_enum_match_arm)]
    let message = match error {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            format!("MCP server `{command}` is not running; tool {name} could not be called")
        }
        ServiceError::McpError(data) => {
            format!(
                "MCP server `{command}` refused tool {name}: {}",
                data.message
            )
        }
        other => format!("MCP tool {name} failed: {other}"),
    };
    ToolExecutionResult::failure(operation(read_only), message)
}

/// Maps a `tools/call` reply as the module docs say.
fn map_result(name: &str, read_only: bool, result: CallToolResult) -> ToolExecutionResult {
    let op = operation(read_only);
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            format!("MCP tool {name} reported an error")
        } else {
            text
        };
        return ToolExecutionResult::failure(op, message);
    }
    let data = match result.structured_content {
        Some(structured) => structured,
        None => {
            let mut values: Vec<Value> = result.content.iter().map(content_value).collect();
            match values.len() {
                0 => {
                    return ToolExecutionResult::empty(
                        op,
                        format!("MCP tool {name} returned no content"),
                    );
                }
                1 => values.remove(0),
                _ => Value::Array(values),
            }
        }
    };
    ToolExecutionResult::success(op, data, format!("MCP tool {name} succeeded"))
}

fn content_value(block: &ContentBlock) -> Value {
    match block.as_text() {
        Some(text) => match serde_json::from_str::<Value>(text.text.trim()) {
            Ok(json @ (Value::Object(_) | Value::Array(_) | Value::Number(_) | Value::Bool(_))) => {
                json
            }
            _ => Value::String(text.text.clone()),
        },
        None => serde_json::to_value(block).unwrap_or(Value::Null),
    }
}
