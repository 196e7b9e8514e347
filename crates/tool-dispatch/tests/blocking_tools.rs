//! Tools whose function blocks its thread: registered with `register_blocking_fn` they run
//! on tokio's blocking pool, so the dispatcher's time-out fires even on a current-thread
//! runtime, where a plain sync closure would hold the only thread until it returned.
#![cfg(feature = "runtime")]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::no_params;
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    CallStatus, CancellationToken, DispatchConfig, Dispatcher, Registry, Scope, ToolCall,
    ToolExecutionResult,
};

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn dispatcher(registry: Registry, timeout: Duration) -> Dispatcher {
    let mut config = DispatchConfig::default();
    config.timeout = Some(timeout);
    Dispatcher::with_config(registry, ReferenceEngine::new(), config)
}

fn call(dispatcher: &Dispatcher, tool: &str) -> (tool_dispatch::CallOutcome, Duration) {
    let scope = Scope::unrestricted();
    let runtime = current_thread();
    let started = Instant::now();
    let outcome = runtime.block_on(dispatcher.dispatch(
        &scope,
        ToolCall::new(tool, serde_json::Map::new()),
        &CancellationToken::new(),
    ));
    let took = started.elapsed();
    // Dropping a runtime waits for its blocking threads; a timed-out call's thread is
    // still sleeping.
    runtime.shutdown_background();
    (outcome, took)
}

#[test]
fn a_blocking_fn_times_out_on_a_current_thread_runtime() {
    // The tool blocks until the test lets it go, after the outcome is in: a `TimedOut`
    // outcome can only come from the time-out firing while the tool still blocked.
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    let blocked = std::sync::Mutex::new(blocked);
    let mut registry = Registry::new();
    registry
        .register_blocking_fn(no_params("slow_io"), move |_| {
            let _ = blocked.lock().unwrap().recv();
            ToolExecutionResult::query_success(json!("late"), "done")
        })
        .unwrap();
    let dispatcher = dispatcher(registry, Duration::from_millis(300));
    let (outcome, _) = call(&dispatcher, "slow_io");
    assert_eq!(
        outcome.status,
        CallStatus::TimedOut(Duration::from_millis(300))
    );
    assert!(!outcome.is_success());
    drop(release);
}

#[test]
fn a_blocking_fn_returns_its_result_and_its_panic_is_a_failure() {
    let mut registry = Registry::new();
    registry
        .register_blocking_fn(no_params("read_disk"), |_| {
            std::thread::sleep(Duration::from_millis(20));
            ToolExecutionResult::query_success(json!({"bytes": 42}), "read")
        })
        .unwrap();
    registry
        .register_blocking_fn(no_params("broken"), |_| -> ToolExecutionResult {
            panic!("disk on fire")
        })
        .unwrap();
    registry
        .register_blocking_fn(no_params("nothing"), |_| ())
        .unwrap();
    let dispatcher = dispatcher(registry, Duration::from_secs(5));
    let (ok, _) = call(&dispatcher, "read_disk");
    assert_eq!(ok.status, CallStatus::Completed);
    assert_eq!(ok.result.data, Some(json!({"bytes": 42})));
    let (broken, _) = call(&dispatcher, "broken");
    assert!(
        matches!(&broken.status, CallStatus::Panicked(message) if message.contains("disk on fire")),
        "{:?}",
        broken.status
    );
    let (nothing, _) = call(&dispatcher, "nothing");
    assert_eq!(nothing.result.message, tool_dispatch::NULL_RESULT_MESSAGE);
}

/// Why the registration exists: a sync closure that blocks holds a current-thread runtime's
/// only thread, so the time-out cannot fire before it returns.
#[test]
fn a_plain_closure_that_blocks_outlives_its_time_out_on_a_current_thread_runtime() {
    let mut registry = Registry::new();
    registry
        .register_fn(no_params("blocks_runtime"), |_| async {
            std::thread::sleep(Duration::from_millis(800));
            ToolExecutionResult::query_success(json!("late"), "done")
        })
        .unwrap();
    let dispatcher = dispatcher(registry, Duration::from_millis(100));
    let (_, took) = call(&dispatcher, "blocks_runtime");
    assert!(took >= Duration::from_millis(800), "{took:?}");
}
