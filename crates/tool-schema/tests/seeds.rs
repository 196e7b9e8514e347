//! Skills, system prompt parts and plugin directories, each test named after its rule.

use std::path::PathBuf;

use serde_json::json;
use tool_schema::load::{workflow_from_path, workflow_from_str};
use tool_schema::{Error, Implementation};

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// A skill is a workflow whose `WorkflowDefinition` names its parameters
/// `inputInterface`.
#[test]
fn action_seed_7_1_skill_input_interface() {
    let skill = workflow_from_path(&fixture("skills/skill_greet_player.json")).unwrap();
    assert_eq!(skill.id.as_str(), "workflow:skill_greet_player");
    assert!(skill.is_skill());
    assert_eq!(skill.display_name.as_deref(), Some("Greet player"));
    assert_eq!(
        skill.parameters,
        json!({
            "type": "object",
            "properties": {
                "player_id": {"type": "string", "description": "The ID of the player to greet."},
                "greeting_context": {
                    "type": "string",
                    "description": "Additional context for the greeting.",
                    "enum": ["first_encounter", "quest_reminder"]
                }
            },
            "required": ["player_id"]
        })
    );
    assert_eq!(
        skill.output_schema,
        Some(json!({"type": "object", "properties": {"greeting": {"type": "string"}}}))
    );
    assert_eq!(
        skill.implementation,
        Implementation::Workflow {
            workflow_id: "skill_greet_player".into()
        }
    );
}

#[test]
fn action_seed_7_1_both_interface_spellings_is_an_error() {
    let both = r#"{"interfaceInputs": {}, "inputInterface": {"x": {"dataFlowType": "STRING"}}}"#;
    let Error::InvalidField { field, reason, .. } =
        workflow_from_str(both, "w", "w.json").unwrap_err()
    else {
        panic!("expected a field error");
    };
    assert_eq!(field, "inputInterface");
    assert!(reason.contains("same interface"), "{reason}");
    // Field errors inside name the spelling the file used.
    let bad = r#"{"inputInterface": {"x": {"dataFlowType": "PICTURE"}}}"#;
    let Error::InvalidField { field, .. } = workflow_from_str(bad, "w", "w.json").unwrap_err()
    else {
        panic!("expected a field error");
    };
    assert_eq!(field, "inputInterface.x.dataFlowType");
}

mod system_prompt {
    use serde_json::json;
    use tool_schema::{
        Implementation, PromptLanguage, PromptPart, SystemPrompt, ToolDefinition, ToolId,
    };

    fn apply_edit() -> ToolDefinition {
        ToolDefinition::new(
            ToolId::parse("FileOperator.ApplyEdit").unwrap(),
            "用于精确替换文件中的一行或多行文本。",
            json!({"type": "object", "properties": {
                "filePath": {"type": "string", "description": "文件的绝对路径。"}
            }, "required": ["filePath"]}),
            Implementation::Service,
        )
    }

    /// The TAM prompt's parts: role, tool list, a RAG hook the caller fills, the decision.
    #[test]
    fn tam_seed_6_2_system_prompt_parts() {
        let tool = apply_edit();
        let prompt = SystemPrompt::tam(PromptLanguage::Chinese);
        let text = prompt.render([&tool]);
        let all: Vec<&str> = PromptPart::ALL
            .iter()
            .map(|part| part.heading(PromptLanguage::Chinese))
            .collect();
        let headings: Vec<&str> = text.lines().filter(|l| all.contains(l)).collect();
        // Without usage notes that section is left out.
        assert_eq!(
            headings,
            [
                "[角色与目标]",
                "[可用工具参考]",
                "[你的决策]",
                "[示例]",
                "【工具调用规则】"
            ]
        );
        assert!(text.contains(
            "- Tool ID: FileOperator.ApplyEdit\n  - 描述: 用于精确替换文件中的一行或多行文本。\n  - 参数:\n    - filePath (string, required): 文件的绝对路径。"
        ));
        for needle in [
            "<|[REQUEST_TOOL]|>",
            "command 的值必须是上面列出的工具 ID 之一",
            "command1",
            "「始ESCAPE」",
            "TOOL_EXECUTION_FAILED",
        ] {
            assert!(text.contains(needle), "{needle}");
        }

        let filled = prompt
            .clone()
            .with_usage_notes("- ApplyEdit 的 search_string 必须与文件内容逐字一致。")
            .with_part(PromptPart::Role, "你是 main.js 的维护者。")
            .without_part(PromptPart::Examples);
        let text = filled.render([&tool]);
        assert!(text.starts_with("[角色与目标]\n你是 main.js 的维护者。\n\n[可用工具参考]\n"));
        assert!(text.contains(
            "[工具用法参考]\n- ApplyEdit 的 search_string 必须与文件内容逐字一致。\n\n[你的决策]\n"
        ));
        assert!(!text.contains("[示例]"));
        // The tool list can be replaced too, and only the list is available on its own.
        let custom = prompt.clone().with_part(PromptPart::Tools, "- calculator");
        assert!(
            custom
                .render([&tool])
                .contains("[可用工具参考]\n- calculator\n\n")
        );
        assert_eq!(
            prompt.render_tools([&tool]),
            "- Tool ID: FileOperator.ApplyEdit\n  - 描述: 用于精确替换文件中的一行或多行文本。\n  - 参数:\n    - filePath (string, required): 文件的绝对路径。"
        );
    }

    /// The ACTION prompt: explanation first, one `<ACTION>` block last, CDATA, few-shot
    /// examples with a call and a plain answer.
    #[test]
    fn action_seed_4_system_prompt() {
        let tool = apply_edit();
        let text = SystemPrompt::action(PromptLanguage::English).render([&tool]);
        assert!(text.contains("You have access to the following tools and skills:\n\n**Tools (direct function calls):**\n\n*   `<FileOperator.ApplyEdit>`"));
        for needle in [
            "first explain your reasoning, then output the <ACTION> block last",
            "<![CDATA[",
            "If no action is needed, just provide your textual response",
            "Example 3 (no tool needed):",
            "reply exactly TOOL_EXECUTION_FAILED",
        ] {
            assert!(text.contains(needle), "{needle}");
        }
        assert!(!text.contains("REQUEST_TOOL"));
        let none = SystemPrompt::action(PromptLanguage::English).render([]);
        assert!(none.contains(
            "[Available tools]\nYou have access to the following tools and skills:\n\n(none)\n\n"
        ));
    }

    /// Result-format seed: the 【工具调用规则】 block, verbatim in Chinese.
    #[test]
    fn tool_result_format_rules_block() {
        let text = SystemPrompt::tam(PromptLanguage::Chinese).render([]);
        let rules = text.split("【工具调用规则】\n").nth(1).unwrap();
        assert!(rules.starts_with(
            "所有工具都会返回JSON格式的结果，包含以下结构：\n{\n  \"success\": true/false,"
        ));
        assert!(rules.contains("2. 当success为false时，请直接回复 \"TOOL_EXECUTION_FAILED\" (不包含引号)，不要尝试重新解释或生成其他内容"));
        assert_eq!(
            SystemPrompt::action(PromptLanguage::Chinese).default_text(PromptPart::ResultRules),
            SystemPrompt::tam(PromptLanguage::Chinese).default_text(PromptPart::ResultRules)
        );
    }
}

/// A plugin directory's workflow tools come with their workflow documents,
/// and take the workflow's interface when the manifest declares no parameters.
#[test]
fn tam_seed_5_3_plugin_dir_loads_workflow_documents() {
    let plugin = tool_schema::load::plugin_dir(&fixture("plugins/my-awesome-plugin")).unwrap();
    assert_eq!(plugin.name, "my-awesome-plugin");
    let ids: Vec<&str> = plugin.tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "my-awesome-plugin:magic_node_tool",
            "my-awesome-plugin:complex_workflow_tool",
            "my-awesome-plugin:clock"
        ]
    );
    let workflow_tool = &plugin.tools[1];
    assert_eq!(workflow_tool.parameters["required"], json!(["topic"]));
    assert_eq!(
        workflow_tool.output_schema.as_ref().unwrap()["properties"]["shouted"]["type"],
        "string"
    );
    let document = plugin.workflow(&workflow_tool.id).unwrap();
    assert_eq!(document["nodes"][1]["type"], "my-awesome-plugin:Shout");
    // A directory without a manifest is an I/O error naming plugin.yaml.
    let err = tool_schema::load::plugin_dir(&fixture("skills")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("plugin.yaml"), "{err}");
}
