//! Dispatch: scopes, look-up, validation, time-outs, panics, null returns, cancellation
//! and chains.
#![cfg(feature = "runtime")]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::{get_player_info, no_params, object, once};
use tokio_util::sync::CancellationToken;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    CallStatus, ChainPolicy, DispatchConfig, Dispatcher, Error, Registry, Scope, Tool, ToolCall,
    ToolContext, ToolExecutionResult,
};

fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// `GetPlayerInfo` that records that it ran, plus `system:get_current_time`.
fn registry(ran: &Arc<AtomicBool>) -> Registry {
    let mut registry = Registry::new();
    let ran = Arc::clone(ran);
    registry
        .register_fn(get_player_info(), move |args| {
            ran.store(true, Ordering::SeqCst);
            async move {
                ToolExecutionResult::query_success(
                    json!({"name": "Alice", "id": args["player_id"]}),
                    "found",
                )
            }
        })
        .unwrap();
    support::register_clock(&mut registry);
    registry
}

fn dispatcher(registry: Registry) -> Dispatcher {
    Dispatcher::new(registry, ReferenceEngine::new())
}

fn fast(registry: Registry) -> Dispatcher {
    let mut config = DispatchConfig::default();
    config.timeout = Some(Duration::from_millis(50));
    Dispatcher::with_config(registry, ReferenceEngine::new(), config)
}

fn call(tool: &str, args: Value) -> ToolCall {
    ToolCall::new(tool, object(args))
}

#[tokio::test]
async fn a_call_outside_the_scope_is_refused_and_never_runs() {
    let ran = flag();
    let d = dispatcher(registry(&ran));
    let scope = Scope::for_agent(d.registry(), ["system:get_current_time"]).unwrap();
    let outcome = once(
        &d,
        &scope,
        call("GetPlayerInfo", json!({"player_id": "p1"})),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::OutOfScope);
    assert!(!outcome.result.success);
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Tool 'GetPlayerInfo' is not in the list of tools available here"
    );
    assert!(!ran.load(Ordering::SeqCst), "the tool body must not run");
}

#[tokio::test]
async fn an_unknown_tool_gets_a_suggestion_from_the_scope_only() {
    let ran = flag();
    let d = dispatcher(registry(&ran));
    let everything = Scope::unrestricted();
    let outcome = once(&d, &everything, call("GetPlayerInf", json!({}))).await;
    assert_eq!(
        outcome.status,
        CallStatus::UnknownTool {
            suggestion: Some("GetPlayerInfo".into())
        }
    );
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Unknown tool ID 'GetPlayerInf', did you mean 'GetPlayerInfo'?"
    );

    let narrow = Scope::new(d.registry(), ["system:get_current_time"]).unwrap();
    let outcome = once(&d, &narrow, call("GetPlayerInf", json!({}))).await;
    assert_eq!(outcome.status, CallStatus::UnknownTool { suggestion: None });
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Unknown tool ID 'GetPlayerInf'"
    );
    let cased = once(&d, &everything, call("get_player_info", json!({}))).await;
    assert_eq!(
        cased.status,
        CallStatus::UnknownTool {
            suggestion: Some("GetPlayerInfo".into())
        }
    );
}

#[tokio::test]
async fn exact_keys_are_refused_with_did_you_mean_and_canonical_keys_are_accepted() {
    let ran = flag();
    let d = dispatcher(registry(&ran));
    let scope = Scope::unrestricted();
    let outcome = once(
        &d,
        &scope,
        call("GetPlayerInfo", json!({"playerId": "player123"})),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::InvalidParameters);
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?"
    );
    assert!(!ran.load(Ordering::SeqCst));

    let tam = ToolCall::canonical("GetPlayerInfo", object(json!({"playerId": "player123"})));
    let outcome = once(&d, &scope, tam).await;
    assert_eq!(outcome.status, CallStatus::Completed);
    assert_eq!(
        outcome.observation(),
        r#"Observation: Tool GetPlayerInfo executed successfully. Result: {"name":"Alice","id":"player123"}"#
    );
}

#[tokio::test]
async fn arguments_reach_the_tool_coerced_with_defaults() {
    let mut registry = Registry::new();
    let definition = support::service(
        "math:repeat",
        "Repeats a word.",
        json!({
            "type": "object",
            "properties": {
                "word": {"type": "string"},
                "times": {"type": "integer", "default": 2},
                "loud": {"type": "boolean"}
            },
            "required": ["word"]
        }),
    );
    registry
        .register_fn(definition, |args| async move {
            let times = usize::try_from(args["times"].as_i64().unwrap()).unwrap();
            let mut text = args["word"].as_str().unwrap().repeat(times);
            if args.get("loud") == Some(&json!(true)) {
                text = text.to_uppercase();
            }
            ToolExecutionResult::query_success(json!(text), "repeated")
        })
        .unwrap();
    let d = dispatcher(registry);
    let scope = Scope::unrestricted();
    let text_args =
        ToolCall::canonical("math:repeat", object(json!({"WORD": "ha", "Loud": "true"})));
    let outcome = once(&d, &scope, text_args).await;
    assert_eq!(outcome.result.data, Some(json!("HAHA")));
    let typed = call("math:repeat", json!({"word": "ho", "times": "3"}));
    assert_eq!(
        once(&d, &scope, typed).await.result.data,
        Some(json!("hohoho"))
    );
}

#[tokio::test]
async fn a_slow_tool_times_out_is_cancelled_and_the_runtime_goes_on() {
    let mut registry = Registry::new();
    let noticed = flag();
    struct Sleeper(Arc<AtomicBool>);
    impl Tool for Sleeper {
        fn call(
            &self,
            _args: serde_json::Map<String, Value>,
            ctx: ToolContext,
        ) -> futures_util::future::BoxFuture<'static, ToolExecutionResult> {
            let noticed = Arc::clone(&self.0);
            // A watcher outside the call's task sees the token fire when the call is abandoned.
            tokio::spawn(async move {
                ctx.cancel.cancelled().await;
                noticed.store(true, Ordering::SeqCst);
            });
            // Never finishes: only the time-out can end the call.
            Box::pin(std::future::pending())
        }
    }
    registry
        .register_service(no_params("slow"), Sleeper(Arc::clone(&noticed)))
        .unwrap();
    registry
        .register_fn(no_params("quick"), |_| async {
            ToolExecutionResult::query_success(json!(1), "one")
        })
        .unwrap();
    let d = fast(registry);
    let scope = Scope::unrestricted();
    let outcome = once(&d, &scope, call("slow", json!({}))).await;
    assert_eq!(
        outcome.status,
        CallStatus::TimedOut(Duration::from_millis(50))
    );
    assert_eq!(
        outcome.result.to_string(),
        r#"{"success":false,"operationType":"unknown","data":null,"message":"timed out after 50ms"}"#
    );
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Tool slow failed: timed out after 50ms"
    );
    tokio::time::timeout(Duration::from_secs(5), async {
        while !noticed.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the call's cancellation token fires on time-out");
    let next = once(&d, &scope, call("quick", json!({}))).await;
    assert!(next.is_success());
}

#[tokio::test]
async fn a_panicking_tool_becomes_a_failure_and_the_runtime_goes_on() {
    let mut registry = Registry::new();
    registry
        .register_fn(no_params("boom"), |_| async {
            if true {
                panic!("kaboom");
            }
            ToolExecutionResult::query_success(json!(0), "unreachable")
        })
        .unwrap();
    registry
        .register_fn(no_params("eager_boom"), |_| -> std::future::Ready<()> {
            panic!("before any await")
        })
        .unwrap();
    registry
        .register_fn(no_params("quick"), |_| async {
            ToolExecutionResult::query_success(json!(1), "one")
        })
        .unwrap();
    let d = dispatcher(registry);
    let scope = Scope::unrestricted();
    let outcome = once(&d, &scope, call("boom", json!({}))).await;
    assert_eq!(outcome.status, CallStatus::Panicked("kaboom".into()));
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Tool boom failed: panicked: kaboom"
    );
    let eager = once(&d, &scope, call("eager_boom", json!({}))).await;
    assert_eq!(
        eager.status,
        CallStatus::Panicked("before any await".into())
    );
    assert!(
        once(&d, &scope, call("quick", json!({})))
            .await
            .is_success()
    );
}

#[tokio::test]
async fn a_tool_returning_nothing_gets_the_null_result() {
    let mut registry = Registry::new();
    registry
        .register_fn(no_params("void"), |_| async {})
        .unwrap();
    registry
        .register_fn(no_params("none"), |_| async { None::<ToolExecutionResult> })
        .unwrap();
    registry
        .register_fn(no_params("null_json"), |_| async { Value::Null })
        .unwrap();
    let d = dispatcher(registry);
    for tool in ["void", "none", "null_json"] {
        let outcome = once(&d, &Scope::unrestricted(), call(tool, json!({}))).await;
        assert_eq!(outcome.status, CallStatus::Completed);
        assert_eq!(
            serde_json::to_string(&outcome.result).unwrap(),
            r#"{"success":false,"operationType":"unknown","message":"tool returned null"}"#
        );
        assert_eq!(
            outcome.observation(),
            format!("Observation: Error - Tool {tool} failed: tool returned null")
        );
    }
}

#[tokio::test]
async fn cancellation_aborts_a_running_call_and_refuses_to_start_new_ones() {
    let mut registry = Registry::new();
    let started = Arc::new(tokio::sync::Notify::new());
    let ran = Arc::new(AtomicUsize::new(0));
    let (s, r) = (Arc::clone(&started), Arc::clone(&ran));
    registry
        .register_fn(no_params("wait"), move |_| {
            let (s, r) = (Arc::clone(&s), Arc::clone(&r));
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                s.notify_one();
                std::future::pending::<()>().await;
            }
        })
        .unwrap();
    let d = Dispatcher::with_config(registry, ReferenceEngine::new(), {
        let mut config = DispatchConfig::default();
        config.timeout = None;
        config
    });
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        let started = Arc::clone(&started);
        tokio::spawn(async move {
            started.notified().await;
            cancel.cancel();
        })
    };
    let outcome = d
        .dispatch(&Scope::unrestricted(), call("wait", json!({})), &cancel)
        .await;
    canceller.await.unwrap();
    assert_eq!(outcome.status, CallStatus::Cancelled);
    assert_eq!(
        outcome.observation(),
        "Observation: Error - Tool wait failed: cancelled"
    );
    let again = d
        .dispatch(&Scope::unrestricted(), call("wait", json!({})), &cancel)
        .await;
    assert_eq!(again.status, CallStatus::Cancelled);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "a cancelled token starts no new call"
    );
}

fn chain_registry(log: &Arc<std::sync::Mutex<Vec<&'static str>>>) -> Registry {
    let mut registry = Registry::new();
    for (id, ok) in [("step_a", true), ("step_b", false), ("step_c", true)] {
        let log = Arc::clone(log);
        registry
            .register_fn(no_params(id), move |_| {
                log.lock().unwrap().push(id);
                async move {
                    if ok {
                        ToolExecutionResult::success("operation", json!(id), "done")
                    } else {
                        ToolExecutionResult::empty("query", "未找到符合条件的数据")
                    }
                }
            })
            .unwrap();
    }
    registry
}

#[tokio::test]
async fn a_chain_stops_at_the_first_failure_by_default() {
    let log = Arc::default();
    let d = dispatcher(chain_registry(&log));
    let calls = ["step_a", "step_b", "step_c"].map(|t| call(t, json!({})));
    let outcomes = d
        .dispatch_chain(&Scope::unrestricted(), calls, &CancellationToken::new())
        .await;
    let statuses: Vec<_> = outcomes.iter().map(|o| o.status.clone()).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Completed,
            CallStatus::Completed,
            CallStatus::Skipped
        ]
    );
    assert_eq!(*log.lock().unwrap(), ["step_a", "step_b"]);
    assert_eq!(
        outcomes[1].observation(),
        "Observation: Error - Tool step_b failed: 未找到符合条件的数据"
    );
    assert_eq!(
        outcomes[2].observation(),
        "Observation: Error - step_c was not executed because an earlier call in the same block failed"
    );
}

#[tokio::test]
async fn run_all_policy_runs_every_call() {
    let log = Arc::default();
    let mut config = DispatchConfig::default();
    config.chain_policy = ChainPolicy::RunAll;
    let d = Dispatcher::with_config(chain_registry(&log), ReferenceEngine::new(), config);
    let calls = ["step_b", "step_c"].map(|t| call(t, json!({})));
    let outcomes = d
        .dispatch_chain(&Scope::unrestricted(), calls, &CancellationToken::new())
        .await;
    assert!(!outcomes[0].is_success() && outcomes[1].is_success());
    assert_eq!(*log.lock().unwrap(), ["step_b", "step_c"]);
}

#[test]
fn registration_rejects_duplicates_mismatches_and_bad_schemas() {
    let mut registry = Registry::new();
    registry.register_fn(no_params("t"), |_| async {}).unwrap();
    assert_eq!(
        registry
            .register_fn(no_params("t"), |_| async {})
            .unwrap_err()
            .to_string(),
        "tool 't' is already registered"
    );
    let node = tool_schema::ToolDefinition::new(
        tool_schema::ToolId::parse("math:add").unwrap(),
        "",
        json!({"type": "object"}),
        tool_schema::Implementation::Node {
            node_type: "math:Add".into(),
        },
    );
    assert!(matches!(
        registry.register_fn(node.clone(), |_| async {}),
        Err(Error::ImplementationMismatch {
            expected: "service",
            ..
        })
    ));
    assert!(matches!(
        registry.register_workflow(node, &json!({"nodes": []})),
        Err(Error::ImplementationMismatch {
            expected: "workflow",
            ..
        })
    ));
    let bad = support::service("bad", "", json!({"type": "string"}));
    assert!(matches!(
        registry.register_fn(bad, |_| async {}),
        Err(Error::Schema(_))
    ));
    assert_eq!(registry.len(), 1);
}

#[test]
fn scopes_need_registered_ids_and_join_workflow_and_node_lists() {
    let ran = flag();
    let registry = registry(&ran);
    let workflow = json!({"availableTools": {"initial": ["system:get_current_time"]}});
    let available = tool_dispatch::AvailableTools::of_workflow("w", &workflow).unwrap();
    let node: tool_dispatch::LlmNodeConfig = serde_json::from_value(json!({
        "profileId": "gpt-4",
        "prompt": "请分析以下数据...",
        "dynamicTools": {"toolIds": ["GetPlayerInfo"], "descriptionTemplate": "工具 {toolName}: {toolDescription}"}
    }))
    .unwrap();
    assert_eq!(node.max_tool_calls(), 10);
    let scope = Scope::for_llm_node(&registry, &available, &node).unwrap();
    assert_eq!(
        scope.ids().unwrap().collect::<Vec<_>>(),
        ["GetPlayerInfo", "system:get_current_time"]
    );
    assert!(
        Scope::for_llm_node(&registry, &available, &Default::default())
            .unwrap()
            .allows("system:get_current_time")
    );
    assert!(
        !Scope::for_llm_node(&registry, &available, &Default::default())
            .unwrap()
            .allows("GetPlayerInfo")
    );

    let typo = json!({"availableTools": {"initial": ["system:get_curent_time"]}});
    let available = tool_dispatch::AvailableTools::of_workflow("w", &typo).unwrap();
    assert_eq!(
        Scope::for_llm_node(&registry, &available, &node)
            .unwrap_err()
            .to_string(),
        "Unknown tool ID 'system:get_curent_time', did you mean 'system:get_current_time'?"
    );
    assert!(
        tool_dispatch::AvailableTools::of_workflow("w", &json!({"availableTools": ["x"]})).is_err()
    );
}
