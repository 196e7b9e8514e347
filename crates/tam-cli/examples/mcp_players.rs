//! A small MCP server over standard input and output, built with the official Rust SDK
//! (`rmcp`): `add` (two integers) and `GetPlayerInfo`, a tool whose name clashes with one
//! of `tam demo`'s, to try `tam run --mcp` with:
//!
//! ```text
//! cargo build -p tam-cli --example mcp_players
//! tam run --base-url URL --model NAME --tools demo --mcp target/debug/examples/mcp_players "What is 2 + 40?"
//! ```
//!
//! The `--mcp` tests of `tam run` (`tests/run.rs`) run it as their server.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// `add`, and a `GetPlayerInfo` that clashes with the demo's tool.
struct Players;

fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        other => panic!("a schema is an object, not {other}"),
    }
}

impl ServerHandler for Players {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tam run test", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "add",
                "Adds two integers.",
                schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"]
                })),
            ),
            Tool::new(
                "GetPlayerInfo",
                "The MCP server's player records.",
                schema(json!({
                    "type": "object",
                    "properties": {"player_id": {"type": "string"}},
                    "required": ["player_id"]
                })),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = match request.name.as_ref() {
            "add" => {
                let int = |key: &str| {
                    args.get(key).and_then(Value::as_i64).ok_or_else(|| {
                        ErrorData::invalid_params(format!("'{key}' must be an integer"), None)
                    })
                };
                (int("a")? + int("b")?).to_string()
            }
            "GetPlayerInfo" => json!({
                "from": "mcp",
                "player": args.get("player_id").cloned().unwrap_or(Value::Null)
            })
            .to_string(),
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        let service = Players
            .serve(rmcp::transport::stdio())
            .await
            .expect("the client initializes");
        let _ = service.waiting().await;
    });
}
