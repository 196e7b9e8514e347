//! `tam schema`: definitions from workflow, node and plugin files, in every format, and
//! the errors for bad files and flags.

mod support;

use serde_json::{Value, json};
use support::{Output, run, test_path};

const WORKFLOW: &str = "fixtures/workflows/summarize_text.json";
const NODES: &str = "fixtures/math_nodes.json";
const PLUGIN: &str = "fixtures/my-awesome-plugin/plugin.yaml";

fn schema(args: &[&str], files: &[&str]) -> Output {
    let paths: Vec<String> = files
        .iter()
        .map(|f| test_path(f).to_string_lossy().into_owned())
        .collect();
    let mut all = vec!["schema"];
    all.extend(args);
    all.extend(paths.iter().map(String::as_str));
    run(&all, b"")
}

fn json_of(output: &Output) -> Value {
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    serde_json::from_str(&output.stdout).expect("the output is JSON")
}

#[test]
fn a_workflow_becomes_one_internal_definition() {
    let tools = json_of(&schema(&[], &[WORKFLOW]));
    assert_eq!(tools.as_array().unwrap().len(), 1);
    let tool = &tools[0];
    assert_eq!(tool["id"], "workflow:summarize_text");
    assert_eq!(
        tool["implementation"],
        json!({"type": "workflow", "workflowId": "summarize_text"})
    );
    assert_eq!(tool["parameters"]["required"], json!(["text_to_summarize"]));
    assert_eq!(
        tool["parameters"]["properties"]["summary_length"]["enum"],
        json!(["简短", "中等", "详细"])
    );
    assert_eq!(
        tool["parameters"]["properties"]["summary_length"]["default"],
        "中等"
    );
}

#[test]
fn every_kind_of_file_in_one_run_in_order() {
    let tools = json_of(&schema(&["--compact"], &[WORKFLOW, NODES, PLUGIN]));
    let ids: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "workflow:summarize_text",
            "math:DivMod",
            "math:Negate",
            "my-awesome-plugin:magic_node_tool",
            "my-awesome-plugin:clock"
        ]
    );
    assert_eq!(
        tools[1]["implementation"],
        json!({"type": "node", "nodeType": "math:DivMod"})
    );
    assert_eq!(
        tools[3]["parameters"]["properties"]["strength"]["default"],
        0.7
    );
}

#[test]
fn compact_output_is_one_line() {
    let output = schema(&["--compact"], &[NODES]);
    assert_eq!(output.stdout.lines().count(), 1);
    let pretty = schema(&[], &[NODES]);
    assert!(pretty.stdout.lines().count() > 10);
    assert_eq!(json_of(&output), json_of(&pretty));
}

#[test]
fn export_formats_have_their_shapes_and_aliases() {
    let openai = json_of(&schema(&["--format", "openai"], &[WORKFLOW]));
    assert_eq!(openai[0]["type"], "function");
    assert_eq!(openai[0]["function"]["name"], "workflow__summarize_text");
    assert_eq!(openai[0]["function"]["parameters"]["type"], "object");

    let anthropic = json_of(&schema(&["--format", "anthropic"], &[NODES]));
    assert_eq!(anthropic[0]["name"], "math__DivMod");
    assert_eq!(
        anthropic[0]["input_schema"]["required"],
        json!(["dividend", "divisor"])
    );

    let mcp = json_of(&schema(&["--format", "mcp"], &[NODES]));
    assert_eq!(mcp[0]["title"], "整除取余");
    assert_eq!(
        mcp[0]["inputSchema"]["properties"]["divisor"]["type"],
        "integer"
    );
    assert_eq!(
        mcp[0]["outputSchema"]["properties"]["quotient"]["type"],
        "integer"
    );

    let with_aliases = json_of(&schema(
        &["--format", "openai", "--aliases"],
        &[WORKFLOW, PLUGIN],
    ));
    assert_eq!(with_aliases["tools"].as_array().unwrap().len(), 3);
    assert_eq!(
        with_aliases["aliases"]["workflow__summarize_text"],
        "workflow:summarize_text"
    );
    assert_eq!(
        with_aliases["aliases"]["my-awesome-plugin__clock"],
        "my-awesome-plugin:clock"
    );
}

fn failure(output: &Output) -> &str {
    assert_eq!(output.code, Some(1), "{}", output.stderr);
    assert_eq!(output.stdout, "");
    &output.stderr
}

#[test]
fn bad_files_are_named_with_the_place_and_the_reason() {
    let syntax = schema(&[], &["fixtures/syntax_error.json"]);
    let message = failure(&syntax);
    assert!(
        message.contains("syntax_error.json: expected value at line 4 column 53"),
        "{message}"
    );

    let bad_type = schema(&[], &["fixtures/bad_type.json"]);
    let message = failure(&bad_type);
    assert!(
        message.contains("bad_type.json: interfaceInputs.picture.dataFlowType: unsupported data flow type 'IMAGE_BLOB'"),
        "{message}"
    );

    let plugin = schema(&[], &["fixtures/broken_plugin.yaml"]);
    let message = failure(&plugin);
    assert!(
        message.contains(
            "broken_plugin.yaml:10: tools[1].implementation.type: unknown implementation type 'nod'"
        ),
        "{message}"
    );

    let profile = schema(&[], &["fixtures/agent_profile.json"]);
    assert!(failure(&profile).contains("is an agent profile, not a tool file"));

    let twice = schema(&[], &[NODES, NODES]);
    assert!(failure(&twice).contains("tool 'math:DivMod' is already defined by"));

    let missing = schema(&[], &["fixtures/no_such_file.json"]);
    let message = failure(&missing);
    assert!(
        message.starts_with("tam: cannot read ") && message.contains("no_such_file.json"),
        "{message}"
    );
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        vec!["schema"],
        vec!["schema", "--format", "gemini", "x.json"],
        vec!["schema", "--aliases", "x.json"],
    ] {
        let output = run(&args, b"");
        assert_eq!(output.code, Some(2), "{args:?}: {}", output.stderr);
        assert_eq!(output.stdout, "");
    }
}

/// A skill's `WorkflowDefinition` names its inputs `inputInterface`.
#[test]
fn action_seed_7_1_a_skill_file_is_a_workflow_tool() {
    let tools = json_of(&schema(&[], &["fixtures/skill_greet_player.json"]));
    let tool = &tools[0];
    assert_eq!(tool["id"], "workflow:skill_greet_player");
    assert_eq!(tool["parameters"]["required"], json!(["player_id"]));
    assert_eq!(
        tool["parameters"]["properties"]["greeting_context"]["enum"],
        json!(["first_encounter", "quest_reminder"])
    );
}

/// A plugin directory as a whole — its manifest and the workflow files its
/// tools name, the namespace taken from the directory when the manifest has no name.
#[test]
fn tam_seed_5_3_schema_of_a_plugin_directory() {
    let tools = json_of(&schema(
        &["--compact"],
        &["fixtures/skill-plugin", "fixtures/my-awesome-plugin"],
    ));
    let ids: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "skill-plugin:greet",
            "my-awesome-plugin:magic_node_tool",
            "my-awesome-plugin:clock"
        ]
    );
    // The manifest gives no parameters or description: the workflow's interface does.
    assert_eq!(tools[0]["parameters"]["required"], json!(["player_id"]));
    assert_eq!(
        tools[0]["description"],
        "Greets the player appropriately based on context."
    );
    let missing = schema(&[], &["fixtures/workflows"]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.stderr.contains("plugin.yaml"), "{}", missing.stderr);
}

#[test]
fn demo_alone_names_the_demo_tools_and_a_file_called_demo_is_dot_slash_demo() {
    let tools = json_of(&run(&["schema", "--format", "openai", "demo"], b""));
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "GetPlayerInfo",
            "system__get_current_time",
            "workflow__summarize_text"
        ],
        "{tools}"
    );
    // Beside a file, in the order given; an id both define is the usual error.
    let nodes_alone = json_of(&schema(&["--format", "internal"], &[NODES]));
    let mut args = vec!["schema", "demo"];
    let nodes = test_path(NODES).to_string_lossy().into_owned();
    args.push(&nodes);
    let all = json_of(&run(&args, b""));
    assert_eq!(
        all.as_array().unwrap().len(),
        3 + nodes_alone.as_array().unwrap().len()
    );
    let twice = run(&["schema", "demo", "demo"], b"");
    assert_ne!(twice.code, Some(0));
    assert!(
        twice.stderr.contains("already defined by demo"),
        "{}",
        twice.stderr
    );
    // `./demo` is a path: here no such file.
    let path = run(&["schema", "./demo"], b"");
    assert_ne!(path.code, Some(0));
    assert!(path.stderr.contains("./demo"), "{}", path.stderr);
}
