//! The reference execution engine: real DAG runs, ordering, errors.
#![cfg(feature = "runtime")]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::{LONG_TEXT, fixture_json, object, summarizer_engine};
use tool_dispatch::Error;
use tool_dispatch::engine::{
    ExecutionEdge, ExecutionEngine, ExecutionNode, ReferenceEngine, WorkflowExecutionPayload,
    collapse_outputs,
};

fn summarize_payload() -> WorkflowExecutionPayload {
    WorkflowExecutionPayload::from_workflow_json(
        "summarize_text",
        &fixture_json("workflows/summarize_text.json"),
    )
    .unwrap()
}

fn node(id: &str, full_type: &str) -> ExecutionNode {
    ExecutionNode {
        id: id.into(),
        full_type: full_type.into(),
        inputs: Default::default(),
        config_values: Default::default(),
    }
}

fn edge(from: &str, out: &str, to: &str, input: &str) -> ExecutionEdge {
    ExecutionEdge {
        source_node_id: from.into(),
        source_handle: out.into(),
        target_node_id: to.into(),
        target_handle: input.into(),
    }
}

#[tokio::test]
async fn summarize_text_runs_its_nodes_in_topological_order() {
    let payload = summarize_payload().with_inputs(object(json!({
        "text_to_summarize": LONG_TEXT,
        "summary_length": "简短",
    })));
    let outputs = summarizer_engine().run(payload).await.unwrap();
    assert_eq!(
        outputs,
        object(json!({"summary_result": "猫是一种小型食肉动物。"}))
    );
    assert_eq!(collapse_outputs(outputs), json!("猫是一种小型食肉动物。"));
}

#[tokio::test]
async fn stored_workflow_maps_interface_outputs_to_the_group_output_node() {
    let payload = summarize_payload();
    let order: Vec<&str> = payload
        .topological_order()
        .unwrap()
        .into_iter()
        .map(|i| payload.nodes[i].id.as_str())
        .collect();
    assert_eq!(order, ["input", "split", "pick", "join", "output"]);
    let mapping = &payload.output_interface_mappings["summary_result"];
    assert_eq!(
        (
            mapping.source_node_id.as_str(),
            mapping.source_slot_key.as_str()
        ),
        ("output", "summary_result")
    );
    assert_eq!(
        payload.nodes[2].config_values["sentencesPerLength"]["详细"],
        json!(3)
    );
}

#[tokio::test]
async fn a_cycle_is_an_error_naming_its_nodes() {
    let payload = WorkflowExecutionPayload {
        workflow_id: Some("loop".into()),
        nodes: vec![node("a", "x:Id"), node("b", "x:Id"), node("c", "x:Id")],
        edges: vec![
            edge("a", "v", "b", "v"),
            edge("b", "v", "c", "v"),
            edge("c", "v", "b", "w"),
        ],
        ..Default::default()
    };
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let engine = ReferenceEngine::new().with_node("x:Id", move |call| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(call.inputs) }
    });
    let err = engine.run(payload).await.unwrap_err();
    match &err {
        Error::WorkflowCycle { workflow, nodes } => {
            assert_eq!(workflow, "loop");
            assert_eq!(nodes, &["b", "c"]);
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "workflow loop has a cycle through nodes b, c"
    );
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "no node runs when the graph is cyclic"
    );
}

#[tokio::test]
async fn a_missing_node_type_is_reported_before_any_node_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let engine = ReferenceEngine::new().with_node("text:SplitSentences", move |call| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(call.inputs) }
    });
    let err = engine.run(summarize_payload()).await.unwrap_err();
    assert!(
        matches!(&err, Error::UnknownNodeType { node_type, .. } if node_type == "text:TakeSentences"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "workflow summarize_text: node pick has type text:TakeSentences, which the engine cannot run"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failing_node_stops_the_run_with_its_message() {
    let payload = summarize_payload().with_inputs(object(json!({
        "text_to_summarize": LONG_TEXT,
        "summary_length": "超长",
    })));
    let err = summarizer_engine().run(payload).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow summarize_text: node pick (text:TakeSentences) failed: unknown summary length '超长'"
    );
}

#[tokio::test]
async fn single_node_wrapping_maps_every_named_output_slot() {
    let engine = ReferenceEngine::new().with_node("math:DivMod", |call| async move {
        let a = call.inputs["a"].as_i64().ok_or("a must be an integer")?;
        let b = call.inputs["b"].as_i64().ok_or("b must be an integer")?;
        Ok(object(
            json!({"quotient": a / b, "remainder": a % b, "debug": "not mapped"}),
        ))
    });
    let payload = WorkflowExecutionPayload::single_node(
        "math:DivMod",
        object(json!({"a": 17, "b": 5})),
        ["quotient".to_owned(), "remainder".to_owned()],
    );
    assert!(payload.edges.is_empty());
    let outputs = engine.run(payload.clone()).await.unwrap();
    assert_eq!(
        collapse_outputs(outputs),
        json!({"quotient": 3, "remainder": 2})
    );

    let no_outputs = WorkflowExecutionPayload {
        output_interface_mappings: Default::default(),
        ..payload
    };
    assert_eq!(
        collapse_outputs(engine.run(no_outputs).await.unwrap()),
        Value::Null
    );
}

#[tokio::test]
async fn several_edges_into_no_outputs_arrive_as_an_array_in_edge_order() {
    let engine = ReferenceEngine::new()
        .with_node("x:Const", |call| async move {
            Ok(object(json!({"v": call.config["value"].clone()})))
        })
        .with_node("x:Collect", |call| async move { Ok(call.inputs) });
    let mut one = node("one", "x:Const");
    one.config_values = object(json!({"value": 1}));
    let mut two = node("two", "x:Const");
    two.config_values = object(json!({"value": 2}));
    let mut collect = node("collect", "x:Collect");
    collect.inputs = object(json!({"items": "overridden", "label": "static"}));
    let payload = WorkflowExecutionPayload {
        nodes: vec![collect, two, one],
        edges: vec![
            edge("two", "v", "collect", "items"),
            edge("one", "v", "collect", "items"),
        ],
        output_interface_mappings: [
            (
                "all".to_owned(),
                tool_dispatch::engine::OutputMapping {
                    source_node_id: "collect".into(),
                    source_slot_key: "items".into(),
                },
            ),
            (
                "label".to_owned(),
                tool_dispatch::engine::OutputMapping {
                    source_node_id: "collect".into(),
                    source_slot_key: "label".into(),
                },
            ),
        ]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    let outputs = engine.run(payload).await.unwrap();
    assert_eq!(
        Value::Object(outputs),
        json!({"all": [2, 1], "label": "static"})
    );
}

#[tokio::test]
async fn dangling_edges_and_duplicate_ids_are_invalid_workflows() {
    let engine = ReferenceEngine::new().with_node("x:Id", |call| async move { Ok(call.inputs) });
    let dangling = WorkflowExecutionPayload {
        nodes: vec![node("a", "x:Id")],
        edges: vec![edge("a", "v", "ghost", "v")],
        ..Default::default()
    };
    assert_eq!(
        engine.run(dangling).await.unwrap_err().to_string(),
        "invalid workflow <inline>: unknown node 'ghost'"
    );
    let twice = WorkflowExecutionPayload {
        nodes: vec![node("a", "x:Id"), node("a", "x:Id")],
        ..Default::default()
    };
    assert!(matches!(
        engine.run(twice).await.unwrap_err(),
        Error::InvalidWorkflow { .. }
    ));
    let no_handle = json!({"nodes": [], "edges": [{"id": "e", "source": "a", "target": "b"}]});
    assert!(matches!(
        WorkflowExecutionPayload::from_workflow_json("w", &no_handle),
        Err(Error::InvalidWorkflow { .. })
    ));
}

#[test]
fn payload_serialises_in_the_seed_shape() {
    let payload = WorkflowExecutionPayload::single_node(
        "math:Add",
        object(json!({"a": 1})),
        ["sum".to_owned()],
    );
    assert_eq!(
        serde_json::to_value(&payload).unwrap(),
        json!({
            "nodes": [{"id": "node", "fullType": "math:Add", "inputs": {"a": 1}}],
            "edges": [],
            "inputs": {},
            "outputInterfaceMappings": {"sum": {"sourceNodeId": "node", "sourceSlotKey": "sum"}}
        })
    );
}

#[tokio::test]
async fn single_node_wrapping_without_output_slots_passes_every_output_through() {
    let engine = ReferenceEngine::new().with_node("x:Two", |_| async move {
        Ok(object(json!({"result": 1, "extra": "kept"})))
    });
    let payload = WorkflowExecutionPayload::single_node("x:Two", Default::default(), []);
    assert_eq!(payload.pass_through_outputs.as_deref(), Some("node"));
    let outputs = engine.run(payload).await.unwrap();
    assert_eq!(
        Value::Object(outputs),
        json!({"result": 1, "extra": "kept"})
    );

    // Declared slots are mapped as before, and nothing else passes.
    let declared =
        WorkflowExecutionPayload::single_node("x:Two", Default::default(), ["result".to_owned()]);
    assert_eq!(declared.pass_through_outputs, None);
    let outputs = engine.run(declared).await.unwrap();
    assert_eq!(Value::Object(outputs), json!({"result": 1}));

    // A pass-through node that does not exist is an invalid workflow.
    let dangling = WorkflowExecutionPayload {
        pass_through_outputs: Some("ghost".into()),
        ..WorkflowExecutionPayload::single_node("x:Two", Default::default(), [])
    };
    assert_eq!(
        engine.run(dangling).await.unwrap_err().to_string(),
        "invalid workflow <inline>: unknown node 'ghost'"
    );
}
