//! Export formats and prompt styles, compared byte for byte with `tests/golden/`.
//!
//! `UPDATE_GOLDEN=1 cargo test -p tool-schema --test golden` rewrites the files; review
//! the diff before committing it.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tool_schema::load::{plugin_from_path, workflow_from_path};
use tool_schema::{
    ExportFormat, PromptStyle, ToolDefinition, ToolId, export_tools, render_tool_list,
};

fn crate_path(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The seed tools (`tests/fixtures/tools.json`), the seed workflow and the seed plugin.
fn tools() -> Vec<ToolDefinition> {
    let text = std::fs::read_to_string(crate_path("tests/fixtures/tools.json")).unwrap();
    let mut tools: Vec<ToolDefinition> = serde_json::from_str(&text).unwrap();
    tools.push(
        workflow_from_path(&crate_path("tests/fixtures/workflows/summarize_text.json")).unwrap(),
    );
    tools.extend(
        plugin_from_path(&crate_path(
            "tests/fixtures/plugins/my-awesome-plugin/plugin.yaml",
        ))
        .unwrap(),
    );
    tools
}

fn check_golden(name: &str, actual: &str) {
    let path = crate_path("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error} (run with UPDATE_GOLDEN=1)", path.display()));
    assert!(
        expected == actual,
        "{name} differs from its golden file\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

fn check_export(name: &str, format: ExportFormat) {
    let tools = tools();
    let exported = export_tools(&tools, format);
    let mut text = serde_json::to_string_pretty(&Value::Array(exported.tools)).unwrap();
    text.push('\n');
    check_golden(name, &text);
    // Every exported name resolves back to its tool.
    for tool in &tools {
        let alias = exported.aliases.alias(&tool.id).unwrap();
        assert_eq!(exported.aliases.resolve(alias), Some(&tool.id));
        assert!(tool_schema::export::is_valid_export_name(alias), "{alias}");
    }
}

#[test]
fn openai_tools() {
    check_export("openai.json", ExportFormat::OpenAi);
}

#[test]
fn anthropic_tools() {
    check_export("anthropic.json", ExportFormat::Anthropic);
}

#[test]
fn mcp_tools() {
    check_export("mcp.json", ExportFormat::Mcp);
}

#[test]
fn aliases_of_the_golden_tools() {
    let tools = tools();
    let exported = export_tools(&tools, ExportFormat::OpenAi);
    let mut text = String::new();
    for (alias, id) in exported.aliases.iter() {
        text.push_str(&format!("{alias} -> {id}\n"));
    }
    check_golden("aliases.txt", &text);
}

#[test]
fn tam_prompt() {
    check_golden(
        "prompt-tam.txt",
        &(render_tool_list(&tools(), &PromptStyle::Tam) + "\n"),
    );
}

#[test]
fn xml_prompt() {
    check_golden(
        "prompt-xml.txt",
        &(render_tool_list(&tools(), &PromptStyle::Xml) + "\n"),
    );
}

#[test]
fn plain_prompt() {
    check_golden(
        "prompt-plain.txt",
        &(render_tool_list(&tools(), &PromptStyle::plain()) + "\n"),
    );
}

#[test]
fn plain_prompt_with_the_seed_template() {
    let style = PromptStyle::Plain {
        template: "工具 {toolName}: {toolDescription}".to_owned(),
    };
    let tools = tools();
    let rendered = render_tool_list(&tools[..2], &style);
    assert_eq!(
        rendered,
        "工具 FileOperator.ApplyEdit: 用于精确替换文件中的一行或多行文本。\n\
         工具 ReadWorldStateTool: Reads a value from the shared world state."
    );
}

#[test]
fn xml_prompt_omits_an_empty_section() {
    let tools = tools();
    let functions_only: Vec<&ToolDefinition> =
        tools.iter().filter(|tool| !tool.is_skill()).collect();
    let rendered = render_tool_list(functions_only, &PromptStyle::Xml);
    assert!(
        rendered
            .starts_with("**Tools (direct function calls):**\n\n*   `<FileOperator.ApplyEdit>`")
    );
    assert!(!rendered.contains("Skills"));
    assert_eq!(render_tool_list([], &PromptStyle::Xml), "");
}

#[test]
fn a_tool_without_parameters_says_so() {
    let tool = ToolDefinition::new(
        ToolId::parse("system:get_current_time").unwrap(),
        "Returns the time.",
        tool_schema::empty_parameters(),
        tool_schema::Implementation::Service,
    );
    assert_eq!(
        render_tool_list([&tool], &PromptStyle::Tam),
        "- Tool ID: system:get_current_time\n  - Description: Returns the time.\n  - Parameters: none"
    );
    assert_eq!(
        render_tool_list([&tool], &PromptStyle::plain()),
        "- system:get_current_time: Returns the time."
    );
}

/// The complete system
/// prompt of every protocol in every language.
#[test]
fn tam_seed_6_2_system_prompt() {
    use tool_schema::{PromptLanguage, SystemPrompt};
    let tools = tools();
    for (prompt, name) in [
        (
            SystemPrompt::tam(PromptLanguage::Chinese),
            "system-tam-zh.txt",
        ),
        (
            SystemPrompt::tam(PromptLanguage::English),
            "system-tam-en.txt",
        ),
        (
            SystemPrompt::action(PromptLanguage::Chinese),
            "system-action-zh.txt",
        ),
        (
            SystemPrompt::action(PromptLanguage::English),
            "system-action-en.txt",
        ),
    ] {
        let mut text = prompt.render(&tools);
        text.push('\n');
        check_golden(name, &text);
    }
}
