//! Plugins, prompts and workflow tool lists in dispatch: whole plugin directories, a node
//! tool without an output schema, display names in `availableTools` and the LLM node's
//! `parameters`.
#![cfg(feature = "runtime")]

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::{fixture, object};
use tool_dispatch::engine::ReferenceEngine;
use tool_dispatch::{
    AvailableTools, CallStatus, CancellationToken, Dispatcher, Error, LlmNodeConfig,
    ModelParameters, PluginServices, Registry, Scope, ToolCall, ToolExecutionResult,
};
use tool_schema::{Implementation, ToolDefinition, ToolId};

fn services() -> PluginServices {
    PluginServices::new().with_fn("my-awesome-plugin:clock", |args| async move {
        ToolExecutionResult::query_success(json!({"time": "12:00", "tz": args["timezone"]}), "now")
    })
}

fn plugin_engine() -> ReferenceEngine {
    ReferenceEngine::new()
        .with_node("my-awesome-plugin:MagicNode", |call| async move {
            let target = call.inputs["target"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let strength = call.inputs["strength"].as_f64().unwrap_or_default();
            Ok(object(
                json!({"result": format!("{target} glows at {strength}")}),
            ))
        })
        .with_node("my-awesome-plugin:Shout", |call| async move {
            let text = call.inputs["text"].as_str().unwrap_or_default();
            Ok(object(json!({"text": text.to_uppercase()})))
        })
}

async fn run(dispatcher: &Dispatcher, tool: &str, args: Value) -> tool_dispatch::CallOutcome {
    dispatcher
        .dispatch(
            &Scope::unrestricted(),
            ToolCall::new(tool, object(args)),
            &CancellationToken::new(),
        )
        .await
}

/// `magic_node_tool` declares no output schema; the node's `{"result": …}`
/// still reaches the caller instead of "tool returned null".
#[tokio::test]
async fn tam_seed_5_2_node_tool_without_output_schema_keeps_its_output() {
    let mut registry = Registry::new();
    registry
        .register_plugin_dir(&fixture("plugins/my-awesome-plugin"), &services())
        .unwrap();
    let dispatcher = Dispatcher::new(registry, plugin_engine());
    let outcome = run(
        &dispatcher,
        "my-awesome-plugin:magic_node_tool",
        json!({"target": "the lamp"}),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::Completed);
    assert_eq!(
        outcome.result,
        ToolExecutionResult::success(
            "operation",
            json!("the lamp glows at 0.7"),
            "my-awesome-plugin:magic_node_tool completed"
        )
    );
}

/// One call loads the whole plugin — node, workflow and service tools.
#[tokio::test]
async fn tam_seed_5_3_plugin_directory_registers_every_tool() {
    let mut registry = Registry::new();
    let ids = registry
        .register_plugin_dir(&fixture("plugins/my-awesome-plugin"), &services())
        .unwrap();
    let ids: Vec<&str> = ids.iter().map(ToolId::as_str).collect();
    assert_eq!(
        ids,
        [
            "my-awesome-plugin:magic_node_tool",
            "my-awesome-plugin:complex_workflow_tool",
            "my-awesome-plugin:clock"
        ]
    );
    // The workflow tool's manifest gives no parameters: the workflow's interface does.
    let workflow_tool = registry
        .definition("my-awesome-plugin:complex_workflow_tool")
        .unwrap();
    assert_eq!(workflow_tool.parameters["required"], json!(["topic"]));
    assert_eq!(workflow_tool.description, "一个封装了复杂工作流的工具。");
    let dispatcher = Dispatcher::new(registry, plugin_engine());

    let shouted = run(
        &dispatcher,
        "my-awesome-plugin:complex_workflow_tool",
        json!({"topic": "plugins"}),
    )
    .await;
    assert_eq!(shouted.result.data(), Some(&json!("PLUGINS")));
    let clock = run(
        &dispatcher,
        "my-awesome-plugin:clock",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_eq!(
        clock.result.data(),
        Some(&json!({"time": "12:00", "tz": "UTC"}))
    );
    let wrong = run(
        &dispatcher,
        "my-awesome-plugin:clock",
        json!({"timezone": "Mars"}),
    )
    .await;
    assert_eq!(wrong.status, CallStatus::InvalidParameters);
}

#[test]
fn tam_seed_5_3_a_service_without_implementation_is_a_clear_error_and_registers_nothing() {
    let mut registry = Registry::new();
    let err = registry
        .register_plugin_dir(
            &fixture("plugins/my-awesome-plugin"),
            &PluginServices::new(),
        )
        .unwrap_err();
    assert!(matches!(err, Error::MissingService { .. }));
    assert_eq!(
        err.to_string(),
        "plugin my-awesome-plugin: no service implementation was supplied for tool 'my-awesome-plugin:clock'"
    );
    assert!(registry.is_empty(), "all or nothing");
}

#[test]
fn tam_seed_5_3_a_nameless_plugin_takes_its_directory_name() {
    let mut registry = Registry::new();
    let ping = PluginServices::new().with_fn("nameless-plugin:ping", |_| async {
        ToolExecutionResult::query_success(json!("pong"), "pong")
    });
    let ids = registry
        .register_plugin_dir(&fixture("plugins/nameless-plugin"), &ping)
        .unwrap();
    assert_eq!(ids, [ToolId::parse("nameless-plugin:ping").unwrap()]);
}

/// A fresh directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tool-dispatch-seeds-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const WORKFLOW: &str =
    r#"{"interfaceInputs": {"x": {"dataFlowType": "STRING"}}, "nodes": [], "edges": []}"#;

fn manifest(workflow_id: &str) -> String {
    format!(
        "name: safe\ntools:\n  - id: \"safe:wf\"\n    implementation:\n      type: workflow\n      workflowId: \"{workflow_id}\"\n"
    )
}

#[test]
fn tam_seed_5_3_plugin_workflows_never_leave_the_plugin_directory() {
    let root = scratch("escape");
    let plugin = root.join("safe");
    write(&root.join("outside.json"), WORKFLOW);
    write(&root.join("elsewhere/w.json"), WORKFLOW);

    // `..` is refused by the manifest check.
    write(&plugin.join("plugin.yaml"), &manifest("../outside.json"));
    let err = Registry::new()
        .register_plugin_dir(&plugin, &PluginServices::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("tools[0].implementation.workflowId"), "{err}");
    assert!(err.contains("'..'"), "{err}");

    // A symbolic link inside the plugin pointing out of it is refused too.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join("elsewhere"), plugin.join("workflows")).unwrap();
        write(&plugin.join("plugin.yaml"), &manifest("workflows/w.json"));
        let err = Registry::new()
            .register_plugin_dir(&plugin, &PluginServices::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::remove_file(plugin.join("workflows")).unwrap();
    }

    // The same file inside the plugin loads.
    write(&plugin.join("workflows/w.json"), WORKFLOW);
    let ids = Registry::new()
        .register_plugin_dir(&plugin, &PluginServices::new())
        .unwrap();
    assert_eq!(ids, [ToolId::parse("safe:wf").unwrap()]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn tam_seed_5_2_tool_ids_take_the_plugin_namespace() {
    let root = scratch("namespace");
    let plugin = root.join("unnamed");
    write(
        &plugin.join("plugin.yaml"),
        "tools:\n  - id: \"other:tool\"\n    implementation:\n      type: service\n",
    );
    let err = Registry::new()
        .register_plugin_dir(&plugin, &PluginServices::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the namespace 'other' differs from the plugin name 'unnamed'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn named(id: &str, display_name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolId::parse(id).unwrap(),
        "test",
        json!({"type": "object", "properties": {}}),
        Implementation::Service,
    )
    .with_display_name(display_name)
}

fn named_registry() -> Registry {
    let mut registry = Registry::new();
    for (id, name) in [
        ("calculator", "Calculator"),
        ("kb:data_query", "数据查询"),
        ("a:report", "Report writer"),
        ("b:report", "Report writer"),
    ] {
        registry
            .register_fn(named(id, name), |_| async {
                ToolExecutionResult::query_success(json!(1), "ok")
            })
            .unwrap();
    }
    registry
}

/// Registration seed: `availableTools.initial` holds "工具ID或名称".
#[test]
fn registration_seed_available_tools_by_id_or_name() {
    let registry = named_registry();
    let workflow = AvailableTools {
        initial: vec!["calculator".into(), "数据查询".into()],
    };
    let node: LlmNodeConfig =
        serde_json::from_value(json!({"dynamicTools": {"toolIds": ["Calculator"]}})).unwrap();
    let scope = Scope::for_llm_node(&registry, &workflow, &node).unwrap();
    let ids: Vec<&str> = scope.ids().unwrap().collect();
    assert_eq!(ids, ["calculator", "kb:data_query"]);
    assert!(scope.allows("kb:data_query"));
    assert!(!scope.allows("数据查询"), "names are resolved to ids once");
}

#[test]
fn registration_seed_an_ambiguous_name_is_refused_with_its_candidates() {
    let registry = named_registry();
    let workflow = AvailableTools {
        initial: vec!["Report writer".into()],
    };
    let err = Scope::for_llm_node(&registry, &workflow, &LlmNodeConfig::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the tool name 'Report writer' is ambiguous: it is the display name of a:report, b:report"
    );
    let unknown = AvailableTools {
        initial: vec!["calculater".into()],
    };
    let err = Scope::for_llm_node(&registry, &unknown, &LlmNodeConfig::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unknown tool ID 'calculater', did you mean 'calculator'?"
    );
}

/// Registration seed: an LLM node's `parameters` override the profile's sampling settings.
#[test]
fn registration_seed_llm_node_parameters() {
    let node: LlmNodeConfig = serde_json::from_value(json!({
        "profileId": "gpt-4",
        "parameters": {"temperature": 0.2, "maxTokens": 512, "top_p": 0.9, "stop": "END", "seed": 7, "logit_bias": {"50256": -100}}
    }))
    .unwrap();
    let parameters: &ModelParameters = node.parameters.as_ref().unwrap();
    assert_eq!(parameters.temperature, Some(0.2));
    assert_eq!(parameters.max_tokens, Some(512));
    assert_eq!(parameters.top_p, Some(0.9));
    assert_eq!(parameters.stop, ["END"]);
    assert_eq!(parameters.seed, Some(7));
    assert_eq!(parameters.presence_penalty, None);
    assert_eq!(parameters.raw["logit_bias"], json!({"50256": -100}));
    // Serialising gives the map back as written.
    assert_eq!(
        serde_json::to_value(&node).unwrap()["parameters"],
        json!({"temperature": 0.2, "maxTokens": 512, "top_p": 0.9, "stop": "END", "seed": 7, "logit_bias": {"50256": -100}})
    );
    let bad =
        serde_json::from_value::<LlmNodeConfig>(json!({"parameters": {"temperature": "hot"}}))
            .unwrap_err()
            .to_string();
    assert!(bad.contains("temperature: expected a number"), "{bad}");
}

mod prompt_examples {
    use tool_dispatch::{ProtocolChoice, system_prompt_for};
    use tool_schema::{PromptLanguage, PromptPart};

    /// The few-shot examples of a prompt, one text each.
    fn examples(protocol: ProtocolChoice, language: PromptLanguage) -> Vec<&'static str> {
        let text = system_prompt_for(protocol, language).default_text(PromptPart::Examples);
        let separator = match language {
            PromptLanguage::Chinese => "\n\n示例 ",
            _ => "\n\nExample ",
        };
        text.split(separator).collect()
    }

    /// (calls per block, diagnostics) of a TAM text fed whole and in 1-byte deltas.
    fn tam_blocks(text: &str) -> Vec<(usize, usize)> {
        let mut blocks = Vec::new();
        for step in [text.len().max(1), 1] {
            let mut decoder = tam::tam_parse::Decoder::new(tam::tam_parse::Config::default());
            let mut seen = Vec::new();
            let mut on_event = |event: tam::tam_parse::Event<'_>| {
                if let tam::tam_parse::Event::Block(block) = event {
                    seen.push((block.calls.len(), block.diagnostics.len()));
                }
            };
            let mut start = 0;
            while start < text.len() {
                let mut end = (start + step).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                decoder.feed(&text[start..end], &mut on_event);
                start = end;
            }
            decoder.finish(&mut on_event);
            if step == 1 {
                assert_eq!(seen, blocks, "the same blocks whatever the deltas");
            }
            blocks = seen;
        }
        blocks
    }

    fn action_blocks(text: &str) -> Vec<(usize, usize)> {
        let mut decoder = tam::action_xml::Decoder::new(tam::action_xml::Config::default());
        let mut seen = Vec::new();
        let mut on_event = |event: tam::action_xml::Event<'_>| {
            if let tam::action_xml::Event::Block(block) = event {
                seen.push((block.calls.len(), block.diagnostics.len()));
            }
        };
        decoder.feed(text, &mut on_event);
        decoder.finish(&mut on_event);
        seen
    }

    /// The examples a TAM prompt shows decode as the calls they show, with no
    /// diagnostic: a call, a two-step chain, a plain answer.
    #[test]
    fn tam_seed_6_2_prompt_examples_decode_cleanly() {
        for language in [PromptLanguage::Chinese, PromptLanguage::English] {
            let examples = examples(ProtocolChoice::Tam, language);
            let blocks: Vec<Vec<(usize, usize)>> =
                examples.iter().map(|example| tam_blocks(example)).collect();
            assert_eq!(blocks, [vec![(1, 0)], vec![(2, 0)], vec![]], "{language:?}");
        }
    }

    /// The ACTION few-shot examples are one clean block each, and a plain answer.
    #[test]
    fn action_seed_4_3_prompt_examples_decode_cleanly() {
        for language in [PromptLanguage::Chinese, PromptLanguage::English] {
            let examples = examples(ProtocolChoice::Action, language);
            let blocks: Vec<Vec<(usize, usize)>> = examples
                .iter()
                .map(|example| action_blocks(example))
                .collect();
            assert_eq!(blocks, [vec![(1, 0)], vec![(1, 0)], vec![]], "{language:?}");
        }
    }
}

/// In the agent, the system prompt lists exactly the scope's tools.
#[test]
fn tam_seed_6_2_agent_system_prompt_lists_its_scope() {
    use tool_dispatch::{Agent, AgentConfig, ProtocolChoice};
    use tool_schema::{PromptLanguage, SystemPrompt};

    let mut registry = Registry::new();
    registry
        .register_plugin_dir(&fixture("plugins/my-awesome-plugin"), &services())
        .unwrap();
    let scope = Scope::new(&registry, ["my-awesome-plugin:clock"]).unwrap();
    let dispatcher = Dispatcher::new(registry, plugin_engine());
    let agent = Agent::with_config(
        dispatcher,
        scope,
        AgentConfig::for_protocol(ProtocolChoice::Action),
    );
    let text = agent.system_prompt(&SystemPrompt::action(PromptLanguage::English));
    assert!(
        text.contains("*   `<my-awesome-plugin:clock>`: Returns the current time."),
        "{text}"
    );
    assert!(!text.contains("magic_node_tool"), "{text}");
    assert!(text.contains("[Your decision]"), "{text}");
}
