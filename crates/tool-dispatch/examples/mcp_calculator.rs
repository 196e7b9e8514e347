//! A small MCP server over standard input and output, built with the official Rust SDK
//! (`rmcp`): a calculator with `add`, `divide` (an `isError` reply for a zero divisor),
//! `stats` (structured content), `whoami` (its process id), `sleep`, `mixed` (several
//! content blocks) and `nothing`, listed two per page.
//!
//! Start it through `McpServer::spawn` to try the MCP client against a real server:
//!
//! ```text
//! cargo build --example mcp_calculator
//! ```
//!
//! then `McpServer::spawn("target/debug/examples/mcp_calculator")`. The MCP tests of
//! this crate (`tests/mcp.rs`) run it as their server.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// Set: the server lingers for a minute after its input closes (only a kill ends it).
const LINGER_ENV: &str = "TAM_MCP_CALCULATOR_LINGER";
/// Tools per `tools/list` page, so listing takes two pages.
const PAGE: usize = 2;

/// A small calculator: `add`, `divide` (an `isError` reply for a zero divisor), `stats`
/// (structured content) and `sleep` (for time-outs).
struct Calculator;

fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        other => panic!("a schema is an object, not {other}"),
    }
}

fn server_tools() -> Vec<Tool> {
    let two_ints = json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "left operand"},
            "b": {"type": "integer", "description": "right operand"}
        },
        "required": ["a", "b"]
    });
    vec![
        Tool::new("add", "Adds two integers.", schema(two_ints.clone()))
            .with_title("Add")
            .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new("divide", "Divides a by b.", schema(two_ints)),
        Tool::new(
            "stats",
            "Count and sum of numbers.",
            schema(json!({
                "type": "object",
                "properties": {"values": {"type": "array", "items": {"type": "number"}}},
                "required": ["values"]
            })),
        ),
        Tool::new(
            "whoami",
            "The server's process id.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "sleep",
            "Waits.",
            schema(json!({
                "type": "object",
                "properties": {"ms": {"type": "integer"}},
                "required": ["ms"]
            })),
        ),
        Tool::new(
            "mixed",
            "Several content blocks.",
            schema(json!({"type": "object"})),
        ),
        Tool::new_with_raw(
            "nothing",
            None,
            schema(json!({"type": "object", "properties": {"fail": {"type": "boolean"}}})),
        ),
    ]
}

fn int(args: &Map<String, Value>, key: &str) -> Result<i64, ErrorData> {
    args.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| ErrorData::invalid_params(format!("'{key}' must be an integer"), None))
}

impl ServerHandler for Calculator {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tam-test-calculator", "1.2.3"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = request
            .and_then(|r| r.cursor)
            .map(|c| c.parse().unwrap_or(0))
            .unwrap_or(0);
        let tools = server_tools();
        let end = (start + PAGE).min(tools.len());
        let mut result = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "add" => {
                let sum = int(&args, "a")? + int(&args, "b")?;
                CallToolResult::success(vec![ContentBlock::text(sum.to_string())])
            }
            "divide" => match int(&args, "b")? {
                0 => CallToolResult::error(vec![ContentBlock::text("cannot divide by zero")]),
                b => CallToolResult::success(vec![ContentBlock::text(format!(
                    "{} / {b} = {}",
                    int(&args, "a")?,
                    int(&args, "a")? / b
                ))]),
            },
            "stats" => {
                let values: Vec<f64> = args
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_f64).collect())
                    .unwrap_or_default();
                CallToolResult::structured(
                    json!({"count": values.len(), "sum": values.iter().sum::<f64>()}),
                )
            }
            "whoami" => CallToolResult::structured(json!({"pid": std::process::id()})),
            "sleep" => {
                let ms = u64::try_from(int(&args, "ms")?).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                CallToolResult::success(vec![ContentBlock::text("awake")])
            }
            "mixed" => CallToolResult::success(vec![
                ContentBlock::text("plain words"),
                ContentBlock::text(r#"{"rows": [1, 2]}"#),
                ContentBlock::text("a < b && c > d"),
                ContentBlock::image("aGk=", "image/png"),
            ]),
            "nothing" => match args.get("fail").and_then(Value::as_bool) {
                Some(true) => CallToolResult::error(Vec::new()),
                _ => CallToolResult::success(Vec::new()),
            },
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::Complete(result))
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        let service = Calculator
            .serve(rmcp::transport::stdio())
            .await
            .expect("the client initializes");
        let _ = service.waiting().await;
    });
    // A server that does not exit when its input closes: only a kill ends it.
    if std::env::var_os(LINGER_ENV).is_some() {
        std::thread::sleep(Duration::from_secs(60));
    }
}
