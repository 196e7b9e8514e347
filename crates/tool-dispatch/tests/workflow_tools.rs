//! Workflow and node tools end to end: registry → dispatcher → reference engine.
#![cfg(feature = "runtime")]

mod support;

use serde_json::json;
use support::{LONG_TEXT, fixture, object, once, summarizer_engine};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    CallStatus, Dispatcher, Error, Registry, Scope, ToolCall, ToolExecutionResult,
};
use tool_schema::load::{AgentProfile, nodes_from_path};

fn summarizer_registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register_workflow_file(&fixture("workflows/summarize_text.json"))
        .unwrap();
    support::register_clock(&mut registry);
    registry
}

async fn summarize(d: &Dispatcher, args: serde_json::Value) -> tool_dispatch::CallOutcome {
    let profile = AgentProfile::from_path(&fixture("agent_profile.json")).unwrap();
    let scope = Scope::for_agent(d.registry(), &profile.tool_ids_inventory).unwrap();
    once(
        d,
        &scope,
        ToolCall::new("workflow:summarize_text", object(args)),
    )
    .await
}

#[tokio::test]
async fn summarize_text_runs_through_the_reference_engine() {
    let d = Dispatcher::new(summarizer_registry(), summarizer_engine());
    let outcome = summarize(
        &d,
        json!({"text_to_summarize": LONG_TEXT, "summary_length": "简短"}),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::Completed);
    assert_eq!(
        outcome.result,
        ToolExecutionResult::success(
            "operation",
            json!("猫是一种小型食肉动物。"),
            "workflow:summarize_text completed"
        )
    );
    assert_eq!(
        outcome.observation(),
        "Observation: Tool workflow:summarize_text executed successfully. Result: 猫是一种小型食肉动物。"
    );
}

#[tokio::test]
async fn the_interface_default_reaches_the_workflow() {
    let d = Dispatcher::new(summarizer_registry(), summarizer_engine());
    let outcome = summarize(&d, json!({"text_to_summarize": LONG_TEXT})).await;
    assert_eq!(
        outcome.result.data,
        Some(json!("猫是一种小型食肉动物。它们擅长夜间捕猎。")),
        "中等 = two sentences"
    );
}

#[tokio::test]
async fn interface_enums_and_required_inputs_are_checked_before_the_engine_runs() {
    let d = Dispatcher::new(summarizer_registry(), ReferenceEngine::new());
    let outcome = summarize(
        &d,
        json!({"text_to_summarize": LONG_TEXT, "summary_length": "超长"}),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::InvalidParameters);
    assert_eq!(
        outcome.result.message,
        "Invalid parameters for workflow:summarize_text: Parameter 'summary_length' must be one of '简短', '中等', '详细', got '超长'"
    );
    let missing = summarize(&d, json!({"summary_length": "简短"})).await;
    assert_eq!(
        missing.observation(),
        "Observation: Error - Invalid parameters for workflow:summarize_text: Missing required parameter 'text_to_summarize'"
    );
}

#[tokio::test]
async fn an_engine_error_is_a_failure_result_not_a_crash() {
    let d = Dispatcher::new(summarizer_registry(), ReferenceEngine::new());
    let outcome = summarize(&d, json!({"text_to_summarize": LONG_TEXT})).await;
    assert_eq!(outcome.status, CallStatus::Completed);
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Tool workflow:summarize_text failed: workflow summarize_text: node split has type text:SplitSentences, which the engine cannot run"
    );
}

#[tokio::test]
async fn the_agent_profile_inventory_is_the_scope() {
    let d = Dispatcher::new(summarizer_registry(), summarizer_engine());
    let profile = AgentProfile::from_path(&fixture("agent_profile.json")).unwrap();
    let scope = Scope::for_agent(d.registry(), &profile.tool_ids_inventory).unwrap();
    assert!(scope.allows("workflow:summarize_text") && scope.allows("system:get_current_time"));
    let mut smaller = Registry::new();
    smaller
        .register_workflow_file(&fixture("workflows/summarize_text.json"))
        .unwrap();
    assert!(matches!(
        Scope::for_agent(&smaller, &profile.tool_ids_inventory),
        Err(Error::UnknownTool { id, .. }) if id == "system:get_current_time"
    ));
}

#[tokio::test]
async fn node_tools_run_as_single_node_workflows() {
    let mut registry = Registry::new();
    for definition in nodes_from_path(&fixture("nodes/math.json")).unwrap() {
        registry.register_node_tool(definition).unwrap();
    }
    let engine = ReferenceEngine::new()
        .with_node("math:DivMod", |call| async move {
            let (a, b) = (
                call.inputs["dividend"].as_i64().unwrap(),
                call.inputs["divisor"].as_i64().unwrap(),
            );
            if b == 0 {
                return Err("division by zero".into());
            }
            Ok(object(json!({"quotient": a / b, "remainder": a % b})))
        })
        .with_node("math:Negate", |call| async move {
            Ok(object(
                json!({"negated": -call.inputs["value"].as_f64().unwrap()}),
            ))
        });
    let d = Dispatcher::new(registry, engine);
    let scope = Scope::unrestricted();
    let tam = ToolCall::canonical(
        "math:DivMod",
        object(json!({"Dividend": "17", "DIVISOR": "5"})),
    );
    let outcome = once(&d, &scope, tam).await;
    assert_eq!(
        outcome.result.data,
        Some(json!({"quotient": 3, "remainder": 2}))
    );
    let one_output = once(
        &d,
        &scope,
        ToolCall::new("math:Negate", object(json!({"value": 2.5}))),
    )
    .await;
    assert_eq!(
        one_output.result.data,
        Some(json!(-2.5)),
        "a single output is the value itself"
    );
    let zero = ToolCall::new("math:DivMod", object(json!({"dividend": 1, "divisor": 0})));
    let failed = once(&d, &scope, zero).await;
    assert_eq!(
        failed.result.message,
        "workflow <inline>: node node (math:DivMod) failed: division by zero"
    );
}

#[tokio::test]
async fn a_workflow_may_return_a_result_object_to_report_failure() {
    let mut registry = Registry::new();
    let definition = tool_schema::load::workflow_from_str(
        r#"{"description": "Looks something up.", "interfaceInputs": {}, "interfaceOutputs": {"result": {"dataFlowType": "OBJECT"}}}"#,
        "lookup",
        "lookup.json",
    )
    .unwrap();
    let workflow = json!({
        "nodes": [{"id": "q", "type": "db:Query"}, {"id": "out", "type": "core:GroupOutput"}],
        "edges": [{"id": "e", "source": "q", "sourceHandle": "result", "target": "out", "targetHandle": "result"}],
        "interfaceOutputs": {"result": {"dataFlowType": "OBJECT"}}
    });
    registry.register_workflow(definition, &workflow).unwrap();
    let engine = ReferenceEngine::new().with_node("db:Query", |_| async {
        Ok(object(json!({"result": {"success": false, "operationType": "query", "data": null, "message": "数据库查询结果为空"}})))
    });
    let d = Dispatcher::new(registry, engine);
    let outcome = once(
        &d,
        &Scope::unrestricted(),
        ToolCall::new("workflow:lookup", Default::default()),
    )
    .await;
    assert_eq!(
        outcome.result,
        ToolExecutionResult::empty("query", "数据库查询结果为空")
    );
}

#[test]
fn a_workflow_file_outside_the_namespace_rules_is_rejected() {
    let mut registry = Registry::new();
    let err = registry
        .register_workflow_file(std::path::Path::new("/tmp/..json"))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Schema(e) if matches!(**e, tool_schema::Error::InvalidToolId { .. })),
        "{err:?}"
    );
    let missing = registry
        .register_workflow_file(&fixture("workflows/nope.json"))
        .unwrap_err();
    assert!(
        matches!(&missing, Error::Schema(e) if matches!(**e, tool_schema::Error::Io { .. })),
        "{missing:?}"
    );
}
