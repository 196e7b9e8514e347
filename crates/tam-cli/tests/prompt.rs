//! `tam prompt`: an agent profile's tool list in the three prompt styles.

mod support;

use support::{Output, run, test_path};

fn prompt(args: &[&str]) -> Output {
    let profile = test_path("fixtures/agent_profile.json");
    let tools: Vec<String> = [
        "fixtures/workflows/summarize_text.json",
        "fixtures/math_nodes.json",
        "fixtures/my-awesome-plugin/plugin.yaml",
    ]
    .iter()
    .map(|f| test_path(f).to_string_lossy().into_owned())
    .collect();
    let mut all = vec!["prompt", profile.to_str().unwrap()];
    all.extend(args);
    all.push("--tools");
    all.extend(tools.iter().map(String::as_str));
    run(&all, b"")
}

fn success(output: &Output) -> &str {
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    &output.stdout
}

#[test]
fn the_tam_style_lists_the_inventory_in_order() {
    let output = prompt(&[]);
    let text = success(&output);
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("- Tool ID: "))
        .collect();
    assert_eq!(
        ids,
        [
            "workflow:summarize_text",
            "math:DivMod",
            "my-awesome-plugin:clock"
        ]
    );
    assert!(
        text.contains("    - dividend (integer, required): The number divided.\n"),
        "{text}"
    );
    assert!(
        !text.contains("math:Negate"),
        "tools outside the inventory are left out"
    );
    assert!(text.ends_with("one of: \"UTC\", \"local\")\n"), "{text}");
}

#[test]
fn the_xml_style_lists_workflows_as_skills() {
    let output = prompt(&["--style", "xml"]);
    let text = success(&output);
    let tools_at = text.find("**Tools (direct function calls):**").unwrap();
    let skills_at = text.find("**Skills (workflow executions):**").unwrap();
    let workflow_at = text.find("*   `<workflow:summarize_text>`").unwrap();
    assert!(tools_at < skills_at && skills_at < workflow_at, "{text}");
    assert!(
        text.contains("*   `<math:DivMod>`: Integer division with remainder."),
        "{text}"
    );
}

#[test]
fn the_list_style_takes_a_template() {
    let output = prompt(&[
        "--style",
        "list",
        "--template",
        "{toolName} | {toolDescription}",
    ]);
    assert_eq!(
        success(&output),
        "workflow:summarize_text | 对提供的长文本进行摘要。当需要理解大量文本的核心内容时使用。\n\
         math:DivMod | Integer division with remainder.\n\
         my-awesome-plugin:clock | Returns the current time.\n"
    );
    let default = prompt(&["--style", "list"]);
    assert!(
        success(&default).starts_with("- workflow:summarize_text: 对提供的长文本"),
        "{}",
        default.stdout
    );
}

#[test]
fn workflows_are_found_in_the_workflow_directory() {
    let profile = test_path("fixtures/agent_profile.json");
    let nodes = test_path("fixtures/math_nodes.json");
    let plugin = test_path("fixtures/my-awesome-plugin/plugin.yaml");
    let workflows = test_path("fixtures/workflows");
    let output = run(
        &[
            "prompt",
            profile.to_str().unwrap(),
            "--workflows",
            workflows.to_str().unwrap(),
            "--tools",
            nodes.to_str().unwrap(),
            plugin.to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        success(&output).starts_with("- Tool ID: workflow:summarize_text\n"),
        "{}",
        output.stdout
    );
}

#[test]
fn tools_no_file_defines_are_an_error_unless_skipped() {
    let profile = test_path("fixtures/agent_profile.json");
    let nodes = test_path("fixtures/math_nodes.json");
    let args = [
        "prompt",
        profile.to_str().unwrap(),
        "--tools",
        nodes.to_str().unwrap(),
    ];
    let strict = run(&args, b"");
    assert_eq!(strict.code, Some(1));
    assert_eq!(strict.stdout, "");
    assert!(
        strict.stderr.contains(
            "no file defines 'workflow:summarize_text' (tool_ids_inventory[0]), 'my-awesome-plugin:clock' (tool_ids_inventory[2])"
        ),
        "{}",
        strict.stderr
    );

    let mut lenient_args = args.to_vec();
    lenient_args.push("--skip-missing");
    let lenient = run(&lenient_args, b"");
    assert_eq!(lenient.code, Some(0), "{}", lenient.stderr);
    assert!(
        lenient.stdout.starts_with("- Tool ID: math:DivMod\n"),
        "{}",
        lenient.stdout
    );
    assert!(lenient.stderr.contains("left out"), "{}", lenient.stderr);
}

#[test]
fn bad_profiles_and_flags_fail() {
    let not_a_profile = test_path("fixtures/syntax_error.json");
    let output = run(&["prompt", not_a_profile.to_str().unwrap()], b"");
    assert_eq!(output.code, Some(1));
    assert!(
        output
            .stderr
            .contains("syntax_error.json: expected value at line 4 column 53"),
        "{}",
        output.stderr
    );

    let template_without_list = prompt(&["--template", "{toolName}"]);
    assert_eq!(
        template_without_list.code,
        Some(2),
        "{}",
        template_without_list.stderr
    );
    assert!(template_without_list.stderr.contains("--style list"));

    assert_eq!(run(&["prompt"], b"").code, Some(2));
    assert_eq!(prompt(&["--style", "yaml"]).code, Some(2));
}

fn prompt_of(args: &[&str]) -> Output {
    let mut all = vec!["prompt"];
    all.extend(args);
    run(&all, b"")
}

/// `--full` prints the whole system
/// prompt, in either protocol and language; without a profile every tool of the files.
#[test]
fn tam_seed_6_2_full_system_prompt() {
    let plugin = test_path("fixtures/skill-plugin");
    let plugin = plugin.to_str().unwrap();
    let output = prompt_of(&[
        "--full",
        "--protocol",
        "tam",
        "--language",
        "zh",
        "--tools",
        plugin,
    ]);
    let text = success(&output);
    assert!(text.starts_with("[角色与目标]\n"), "{text}");
    assert!(text.contains("[可用工具参考]\n你只能调用以下工具：\n\n- Tool ID: skill-plugin:greet\n  - 描述: Greets the player"), "{text}");
    assert!(text.contains("<|[REQUEST_TOOL]|>"), "{text}");
    assert!(
        text.contains("【工具调用规则】\n所有工具都会返回JSON格式的结果"),
        "{text}"
    );

    let notes = test_path("fixtures/usage_notes.txt");
    let output = prompt_of(&[
        "--full",
        "--protocol",
        "action",
        "--usage-notes",
        notes.to_str().unwrap(),
        "--tools",
        plugin,
    ]);
    let text = success(&output);
    assert!(text.contains("You have access to the following tools and skills:\n\n**Skills (workflow executions):**\n\n*   `<skill-plugin:greet>`"), "{text}");
    assert!(
        text.contains(
            "[Tool usage notes]\nGreet a returning player with quest_reminder.\n\n[Your decision]\n"
        ),
        "{text}"
    );
    assert!(text.contains("<ACTION>"), "{text}");

    // Only the tool list without --full; the full-prompt flags need --full.
    let list = prompt_of(&["--tools", plugin]);
    assert!(success(&list).starts_with("- Tool ID: skill-plugin:greet\n  - Description: Greets"));
    assert_eq!(
        prompt_of(&["--language", "zh", "--tools", plugin]).code,
        Some(2)
    );
    assert_eq!(
        prompt_of(&["--full", "--style", "xml", "--tools", plugin]).code,
        Some(2)
    );
}
