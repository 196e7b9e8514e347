//! The overhead of dispatching one no-op service call (tool-dispatch's `Dispatcher`).
//!
//! `dispatch` runs the whole path: scope check, registry look-up, validation and coercion
//! of one text argument, the call on its own tokio task under the time-out, cancellation
//! and panic guard, and the result. Its baselines, in the same group: `direct`, awaiting
//! the tool's future in place (what a call costs with no dispatcher at all), and
//! `spawn_join`, the same future on a spawned task (the floor the panic guard sets). All
//! three run inside `block_on` on a current-thread runtime, so the ratio is the
//! dispatcher's own cost.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    CancellationToken, Dispatcher, Registry, Scope, ToolCall, ToolExecutionResult,
};
use tool_schema::{Implementation, ToolDefinition, ToolId};

async fn noop(args: Map<String, Value>) -> ToolExecutionResult {
    ToolExecutionResult::query_success(Value::Bool(args.contains_key("player_id")), "ok")
}

fn dispatcher() -> Dispatcher {
    let definition = ToolDefinition::new(
        ToolId::parse("GetPlayerInfo").unwrap(),
        "Looks up a player.",
        json!({
            "type": "object",
            "properties": {"player_id": {"type": "string"}},
            "required": ["player_id"]
        }),
        Implementation::Service,
    );
    let mut registry = Registry::new();
    registry.register_fn(definition, noop).unwrap();
    Dispatcher::new(registry, ReferenceEngine::new())
}

fn arguments() -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("playerId".to_owned(), Value::String("player123".to_owned()));
    args
}

fn bench_dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let dispatcher = dispatcher();
    let scope = Scope::for_agent(dispatcher.registry(), ["GetPlayerInfo"]).unwrap();
    let cancel = CancellationToken::new();
    let typed = {
        let mut args = Map::new();
        args.insert(
            "player_id".to_owned(),
            Value::String("player123".to_owned()),
        );
        args
    };

    let mut group = c.benchmark_group("dispatch_noop");
    group.throughput(Throughput::Elements(1));
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(noop(black_box(typed.clone()))));
    });
    group.bench_function("spawn_join", |b| {
        b.iter(|| {
            rt.block_on(async { tokio::spawn(noop(black_box(typed.clone()))).await.unwrap() })
        });
    });
    group.bench_function("dispatch", |b| {
        b.iter(|| {
            let call = ToolCall::canonical("GetPlayerInfo", black_box(arguments()));
            let outcome = rt.block_on(dispatcher.dispatch(&scope, call, &cancel));
            assert!(outcome.is_success());
            outcome
        });
    });
    group.finish();
}

criterion_group!(benches, bench_dispatch);
criterion_main!(benches);
