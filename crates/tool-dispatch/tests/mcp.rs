//! MCP tools through `rmcp`: a real MCP server (built below with the same SDK) runs as a
//! child process over stdio; its tools are listed, registered, validated, called through the
//! `Dispatcher` and the agent loop, and the process dies with its handle.
//!
//! The server is this crate's example `mcp_calculator`, which `cargo test` builds beside
//! the tests.
#![cfg(feature = "mcp")]

mod support;

use std::time::Duration;
use tool_dispatch::ProtocolChoice;

use serde_json::{Map, Value, json};
use support::{ScriptedModel, object, observations, run_agent};
use tokio_util::sync::CancellationToken;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::mcp::{McpConfig, McpError, McpServer};
use tool_dispatch::{
    Agent, AgentConfig, CallStatus, DispatchConfig, Dispatcher, Registry, Scope, StopReason,
    ToolCall, ToolExecutionResult,
};

/// The server: this crate's example `mcp_calculator` (built by `cargo test` beside the
/// tests), quoted for a command line.
fn quoted_exe() -> String {
    let exe = support::example_exe("mcp_calculator");
    shlex::try_quote(exe.to_str().unwrap())
        .unwrap()
        .into_owned()
}

/// The command line that starts the test server.
fn server_command() -> String {
    quoted_exe()
}

/// A server that ignores its input closing, started by a shell that waits for it (so the
/// server is a grandchild of the host).
fn lingering_server_command() -> String {
    let script = format!("TAM_MCP_CALCULATOR_LINGER=1 {}; exit 0", quoted_exe());
    format!("sh -c {}", shlex::try_quote(&script).unwrap())
}

/// The server's own pid, asked through its `whoami` tool.
async fn server_pid(server: &McpServer) -> u32 {
    let reply = server.call("whoami", Map::new()).await;
    let pid = reply.data.as_ref().and_then(|d| d["pid"].as_u64());
    u32::try_from(pid.expect("whoami answers")).unwrap()
}

async fn start() -> McpServer {
    McpServer::spawn(&server_command())
        .await
        .expect("the test server starts")
}

fn args(value: Value) -> Map<String, Value> {
    object(value)
}

async fn dispatch(dispatcher: &Dispatcher, tool: &str, a: Value) -> tool_dispatch::CallOutcome {
    dispatcher
        .dispatch(
            &Scope::unrestricted(),
            ToolCall::canonical(tool, args(a)),
            &CancellationToken::new(),
        )
        .await
}

/// Whether process `pid` is gone (reaped, or a zombie nobody waited for yet).
#[cfg(target_os = "linux")]
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

#[cfg(target_os = "linux")]
async fn wait_gone(pid: u32) -> bool {
    // A bound against hanging, not a time limit: two minutes.
    for _ in 0..2_400 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn every_page_of_tools_is_listed_and_registered_with_its_schema() {
    let server = start().await;
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "add", "divide", "stats", "whoami", "sleep", "mixed", "nothing"
        ],
        "four pages"
    );
    assert_eq!(
        server.server_name(),
        Some(("tam-test-calculator".to_owned(), "1.2.3".to_owned()))
    );
    assert!(server.tools()[0].read_only);
    assert!(!server.tools()[1].read_only);

    let mut registry = Registry::new();
    assert_eq!(server.register(&mut registry, None).unwrap(), 7);
    let add = registry.definition("add").unwrap();
    assert_eq!(add.description, "Adds two integers.");
    assert_eq!(add.display_name.as_deref(), Some("Add"));
    assert_eq!(
        add.parameters,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "left operand"},
                "b": {"type": "integer", "description": "right operand"}
            },
            "required": ["a", "b"]
        })
    );
    assert_eq!(
        add.parameters["properties"]["a"],
        json!({"type": "integer", "description": "left operand"})
    );
    // The prompt renderer sees the MCP tools like any other.
    let prompt =
        tool_schema::render_tool_list(registry.definitions(), &tool_schema::PromptStyle::Tam);
    assert!(prompt.contains("add"), "{prompt}");
    assert!(prompt.contains("Adds two integers."), "{prompt}");
}

#[tokio::test]
async fn string_arguments_are_coerced_and_add_returns_5() {
    let server = start().await;
    let mut registry = Registry::new();
    server.register(&mut registry, None).unwrap();
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());

    let outcome = dispatch(&dispatcher, "add", json!({"a": "2", "b": "3"})).await;
    assert_eq!(outcome.status, CallStatus::Completed);
    assert_eq!(
        outcome.result,
        ToolExecutionResult::query_success(json!(5), "MCP tool add succeeded")
    );
    assert!(
        outcome.observation().contains('5'),
        "{}",
        outcome.observation()
    );

    // Validation happens before the server is asked: a word is not an integer.
    let refused = dispatch(&dispatcher, "add", json!({"a": "two", "b": "3"})).await;
    assert_eq!(refused.status, CallStatus::InvalidParameters);
    let missing = dispatch(&dispatcher, "add", json!({"a": "2"})).await;
    assert_eq!(missing.status, CallStatus::InvalidParameters);
}

#[tokio::test]
async fn an_is_error_reply_is_a_failure_with_its_text() {
    let server = start().await;
    let mut registry = Registry::new();
    server.register(&mut registry, None).unwrap();
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());

    let outcome = dispatch(&dispatcher, "divide", json!({"a": "1", "b": "0"})).await;
    assert_eq!(outcome.status, CallStatus::Completed);
    assert!(!outcome.result.success);
    assert_eq!(outcome.result.operation_type, "operation");
    assert_eq!(outcome.result.message, "cannot divide by zero");
    assert!(
        outcome.observation().contains("cannot divide by zero"),
        "{}",
        outcome.observation()
    );

    let fine = dispatch(&dispatcher, "divide", json!({"a": 7, "b": 2})).await;
    assert!(fine.result.success);
    assert_eq!(
        fine.result.data,
        Some(json!("7 / 2 = 3")),
        "plain text stays text"
    );
}

#[tokio::test]
async fn structured_content_is_the_data() {
    let server = start().await;
    let result = server
        .call("stats", args(json!({"values": [1, 2.5, 3]})))
        .await;
    assert!(result.success);
    assert_eq!(result.data, Some(json!({"count": 3, "sum": 6.5})));

    // A JSON-RPC error (no such tool on the server) is a failure, not a panic.
    let unknown = server.call("nope", Map::new()).await;
    assert!(!unknown.success);
    assert!(
        unknown.message.contains("no tool named nope"),
        "{}",
        unknown.message
    );
}

#[tokio::test]
async fn content_blocks_map_to_data_and_empty_replies_are_not_successes() {
    let server = start().await;
    let mut registry = Registry::new();
    server.register(&mut registry, None).unwrap();
    assert_eq!(registry.definition("nothing").unwrap().description, "");
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());

    let mixed = dispatch(&dispatcher, "mixed", json!({})).await;
    assert!(mixed.result.success);
    assert_eq!(mixed.result.operation_type, "operation");
    assert_eq!(
        mixed.result.data,
        Some(json!([
            "plain words",
            {"rows": [1, 2]},
            "a < b && c > d",
            {"type": "image", "data": "aGk=", "mimeType": "image/png"}
        ]))
    );

    let nothing = dispatch(&dispatcher, "nothing", json!({})).await;
    assert!(!nothing.result.success);
    assert_eq!(nothing.result.data, Some(Value::Null));
    assert_eq!(
        nothing.result.message,
        "MCP tool nothing returned no content"
    );

    let silent_error = dispatch(&dispatcher, "nothing", json!({"fail": "true"})).await;
    assert_eq!(silent_error.status, CallStatus::Completed);
    assert!(!silent_error.result.success);
    assert_eq!(
        silent_error.result.message,
        "MCP tool nothing reported an error"
    );
}

#[tokio::test]
async fn a_prefix_namespaces_the_tools_and_a_clash_registers_nothing() {
    let server = start().await;
    let mut registry = Registry::new();
    assert_eq!(server.register(&mut registry, Some("calc")).unwrap(), 7);
    assert!(registry.contains("calc:add"));
    assert!(!registry.contains("add"));

    let again = server.register(&mut registry, Some("calc")).unwrap_err();
    assert!(
        matches!(&again, McpError::NameClash(id) if id == "calc:add"),
        "{again}"
    );
    assert_eq!(again.code(), "mcp.name_clash");
    assert_eq!(registry.len(), 7);

    // A clash on a later tool leaves the earlier ones unregistered too.
    let mut other = Registry::new();
    other
        .register_fn(support::no_params("stats"), |_| async {
            ToolExecutionResult::query_success(json!(0), "mine")
        })
        .unwrap();
    let clash = server.register(&mut other, None).unwrap_err();
    assert!(
        matches!(&clash, McpError::NameClash(id) if id == "stats"),
        "{clash}"
    );
    assert_eq!(other.len(), 1, "nothing of the server was added");

    let bad = server
        .register(&mut Registry::new(), Some("bad prefix"))
        .unwrap_err();
    assert_eq!(bad.code(), "mcp.tool_name", "{bad}");

    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
    let outcome = dispatch(&dispatcher, "calc:add", json!({"a": "40", "b": "2"})).await;
    assert_eq!(outcome.result.data, Some(json!(42)));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_handle_kills_the_server_and_its_tools_then_fail() {
    let server = McpServer::spawn(&lingering_server_command()).await.unwrap();
    let shell = server.pid().expect("a pid");
    let pid = server_pid(&server).await;
    assert!(!process_gone(pid));
    let mut registry = Registry::new();
    server.register(&mut registry, None).unwrap();
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());
    assert!(
        dispatch(&dispatcher, "add", json!({"a": 1, "b": 1}))
            .await
            .is_success()
    );

    drop(server);
    for pid in [shell, pid] {
        assert!(
            wait_gone(pid).await,
            "process {pid} still runs after the drop"
        );
    }

    let outcome = dispatch(&dispatcher, "add", json!({"a": 1, "b": 1})).await;
    assert!(!outcome.result.success);
    assert!(
        outcome.result.message.contains("is not running"),
        "{}",
        outcome.result.message
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn shutdown_ends_the_server() {
    let server = start().await;
    let pid = server.pid().expect("a pid");
    server.shutdown().await.unwrap();
    assert!(
        wait_gone(pid).await,
        "process {pid} still runs after shutdown"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn dropping_the_handle_outside_the_runtime_still_kills_the_server() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (server, inner) = rt.block_on(async {
        let server = McpServer::spawn(&lingering_server_command()).await.unwrap();
        let inner = server_pid(&server).await;
        (server, inner)
    });
    let shell = server.pid().expect("a pid");
    assert_ne!(shell, inner, "the server runs under the shell");
    drop(rt);
    drop(server);
    for pid in [shell, inner] {
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            process_gone(pid)
        });
        assert!(gone, "process {pid} outlived its handle");
    }
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_clear_error() {
    let err = McpServer::spawn("tam-no-such-mcp-server --stdio")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mcp.spawn");
    let text = err.to_string();
    assert!(
        text.starts_with("cannot start MCP server `tam-no-such-mcp-server --stdio`: "),
        "{text}"
    );
    assert!(text.contains("No such file"), "{text}");

    let empty = McpServer::spawn("   ").await.unwrap_err();
    assert_eq!(empty.code(), "mcp.command");
    let unbalanced = McpServer::spawn("server --name 'unterminated")
        .await
        .unwrap_err();
    assert_eq!(unbalanced.code(), "mcp.command");
    assert!(unbalanced.to_string().contains("unbalanced quoting"));
}

#[tokio::test]
async fn a_program_that_is_not_an_mcp_server_fails_to_start() {
    // Exits at once: the handshake fails.
    let exited = McpServer::spawn("true").await.unwrap_err();
    assert_eq!(exited.code(), "mcp.initialize", "{exited}");

    // Never answers: the start-up time-out ends it.
    let config = McpConfig::default().with_startup_timeout(Duration::from_millis(300));
    let silent = McpServer::spawn_command("sleep", ["30"], config)
        .await
        .unwrap_err();
    assert_eq!(silent.code(), "mcp.timeout", "{silent}");
    assert_eq!(
        silent.to_string(),
        "MCP server `sleep 30` did not start within 300ms"
    );
}

#[tokio::test]
async fn the_dispatcher_time_out_cancels_a_slow_call_and_the_server_goes_on() {
    let server = start().await;
    let mut registry = Registry::new();
    server.register(&mut registry, None).unwrap();
    let mut config = DispatchConfig::default();
    config.timeout = Some(Duration::from_millis(200));
    let dispatcher = Dispatcher::with_config(registry, ReferenceEngine::new(), config);

    // An hour: only the time-out can end the call within the test.
    let slow = dispatch(&dispatcher, "sleep", json!({"ms": "3600000"})).await;
    assert!(
        matches!(slow.status, CallStatus::TimedOut(_)),
        "{:?}",
        slow.status
    );
    assert!(!slow.result.success);

    let next = dispatch(&dispatcher, "add", json!({"a": "2", "b": "3"})).await;
    assert_eq!(next.result.data, Some(json!(5)));
}

#[tokio::test]
async fn an_agent_round_calls_the_mcp_tool_from_a_tam_block() {
    let server = start().await;
    let mut registry = Registry::new();
    server.register(&mut registry, Some("calc")).unwrap();
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    );
    let model = ScriptedModel::chunked(
        &[
            "Let me add them.\n<|[REQUEST_TOOL]|>\ncommand:「始」calc:add「末」\na:「始」2「末」\nb:「始」3「末」\n<|[END_TOOL]|>",
            "2 + 3 = 5.",
        ],
        5,
    );
    let events = std::sync::Mutex::new(Vec::new());
    let mut conversation = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(
            &model,
            &mut conversation,
            "What is 2 + 3?",
            |e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the loop finishes")
    .unwrap();
    assert_eq!(outcome.stop, StopReason::Answer);
    assert_eq!(outcome.answer, "2 + 3 = 5.");
    assert_eq!(outcome.calls.len(), 1);
    assert_eq!(outcome.calls[0].result.data, Some(json!(5)));
    let events = events.into_inner().unwrap();
    let observed = observations(&events);
    assert_eq!(observed.len(), 1);
    assert!(observed[0].contains("calc:add"), "{}", observed[0]);
    assert!(observed[0].contains('5'), "{}", observed[0]);
}

#[tokio::test]
async fn a_server_that_dies_during_a_call_gives_a_failure() {
    let server = McpServer::spawn(&lingering_server_command()).await.unwrap();
    let mut registry = Registry::new();
    server.register(&mut registry, None).unwrap();
    let dispatcher = Dispatcher::new(registry, ReferenceEngine::new());

    // An hour: only the server's death can end the call within the test.
    let call = dispatch(&dispatcher, "sleep", json!({"ms": "3600000"}));
    let kill = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(server);
    };
    let (outcome, ()) = tokio::join!(call, kill);
    assert_eq!(outcome.status, CallStatus::Completed);
    assert!(!outcome.result.success);
    assert!(
        outcome.result.message.contains("MCP server `sh -c "),
        "{}",
        outcome.result.message
    );
}

#[tokio::test]
async fn a_reply_cut_inside_the_block_never_calls_the_mcp_tool() {
    let server = start().await;
    let mut registry = Registry::new();
    server.register(&mut registry, Some("calc")).unwrap();
    let agent = Agent::with_config(
        Dispatcher::new(registry, ReferenceEngine::new()),
        Scope::unrestricted(),
        AgentConfig::for_protocol(ProtocolChoice::Tam),
    );
    let model = ScriptedModel::chunked(
        &[
            "Let me add them.\n<|[REQUEST_TOOL]|>\ncommand:「始」calc:add「末」\na:「始」2「末」\nb:「始」3",
            "I could not finish the call.",
        ],
        3,
    );
    let outcome = run_agent(&agent, &model, "What is 2 + 3?").await;
    assert!(
        outcome
            .calls
            .iter()
            .all(|c| c.status != CallStatus::Completed),
        "{:?}",
        outcome.calls
    );
}
