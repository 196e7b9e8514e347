//! `tam run` against a scripted OpenAI-compatible server on loopback, in both protocols:
//! the request it sends, the calls it runs, its two output forms, a reply cut at the token
//! limit, and a server that refuses; the system prompt (tool-schema's complete prompt, a
//! replacement file), a profile's LLM node parameters as request options, and the tools of
//! MCP servers started with `--mcp`.
//!
//! The MCP server is this package's example `mcp_players`, which `cargo test` builds
//! beside the tests.

mod support;

use serde_json::{Value, json};
use support::{Output, ndjson, run, test_path};
use tam_testkit::upstream::{Reply, Server, text_stream};

const TIME_BLOCK: &str = "Let me check.\n<|[REQUEST_TOOL]|>\ncommand:「始」system:get_current_time「末」\n<|[END_TOOL]|>";
const PLAYER_ACTION: &str = "Looking up.\n<ACTION>\n  <GetPlayerInfo>\n    <player_id>player123</player_id>\n  </GetPlayerInfo>\n</ACTION>";

/// Runs `tam run --base-url … --model m args… PROMPT` off the runtime's threads, with
/// `--protocol tam` unless `args` name a protocol (the tests written for TAM name none).
async fn tam_run(server: &Server, args: &[&str]) -> Output {
    if args.contains(&"--protocol") {
        tam_run_as_given(server, args).await
    } else {
        tam_run_as_given(server, &[&["--protocol", "tam"], args].concat()).await
    }
}

/// Runs `tam run --base-url … --model m args… PROMPT` off the runtime's threads.
async fn tam_run_as_given(server: &Server, args: &[&str]) -> Output {
    let mut all: Vec<String> = vec![
        "run".into(),
        "--base-url".into(),
        server.base_url.clone(),
        "--model".into(),
        "m".into(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        run(&refs, b"")
    })
    .await
    .unwrap()
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tam_call_runs_and_the_answer_ends_the_run_json() {
    let server = Server::start(vec![
        Reply::events(&text_stream(TIME_BLOCK, 6, "stop", "\r\n")),
        Reply::events(&text_stream("It is noon.", 4, "stop", "\n")),
    ])
    .await;
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--protocol",
            "tam",
            "--json",
            "--temperature",
            "0",
            "--max-tokens",
            "256",
            "--seed",
            "3",
            "What time is it?",
        ],
    )
    .await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let lines = ndjson(&output.stdout);
    let started = of_type(&lines, "call_started");
    assert_eq!(started.len(), 1, "{lines:?}");
    assert_eq!(started[0]["tool"], "system:get_current_time");
    assert_eq!(of_type(&lines, "call_finished")[0]["status"], "completed");
    let done = lines.last().unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["stop"], "answer");
    assert_eq!(done["answer"], "It is noon.");
    let text: String = of_type(&lines, "text")
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Let me check.\nIt is noon.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["model"], "m");
    assert_eq!(first["stream"], true);
    assert_eq!(first["temperature"], json!(0.0));
    assert_eq!(first["max_tokens"], 256);
    assert_eq!(first["seed"], 3);
    let system = &first["messages"][0];
    assert_eq!(system["role"], "system");
    let system = system["content"].as_str().unwrap();
    // tool-schema's complete TAM prompt in English, listing every tool in scope.
    for part in [
        "[Role and goal]",
        "[Available tools]",
        "[Your decision]",
        "[Examples]",
        "[Tool result rules]",
        "<|[REQUEST_TOOL]|>",
        "「始」",
        "TOOL_EXECUTION_FAILED",
    ] {
        assert!(system.contains(part), "{part} missing: {system}");
    }
    for id in [
        "system:get_current_time",
        "GetPlayerInfo",
        "workflow:summarize_text",
    ] {
        assert!(system.contains(id), "{id} missing: {system}");
    }
    assert!(!system.contains("<ACTION>"), "{system}");
    // The turn ends at the call: the TAM end marker is the only stop sequence.
    assert_eq!(first["stop"], json!(["<|[END_TOOL]|>"]));
    assert!(first.get("top_p").is_none());
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": "What time is it?"})
    );
    let observation = requests[1].body["messages"][3]["content"].as_str().unwrap();
    assert!(
        observation.contains("system:get_current_time executed successfully"),
        "{observation}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_call_runs_and_prose_streams_as_text() {
    let server = Server::start(vec![
        Reply::events(&text_stream(PLAYER_ACTION, 5, "stop", "\n")),
        Reply::events(&text_stream("The player is Alice.", 4, "stop", "\n")),
    ])
    .await;
    // ACTION is the default protocol: no --protocol.
    let output = tam_run_as_given(&server, &["--tools", "demo", "Who is player123?"]).await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(
        output.stdout.starts_with("Looking up.\n"),
        "{}",
        output.stdout
    );
    assert!(
        output
            .stdout
            .contains("→ GetPlayerInfo({\"player_id\":\"player123\"})"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("The player is Alice."),
        "{}",
        output.stdout
    );
    let prompt = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    for part in [
        "[Your decision]",
        "<ACTION>",
        "<GetPlayerInfo>",
        "player_id",
    ] {
        assert!(
            prompt.contains(part),
            "the ACTION prompt: {part} missing: {prompt}"
        );
    }
    assert!(!prompt.contains("<|[REQUEST_TOOL]|>"), "{prompt}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_at_the_token_limit_runs_no_call() {
    let cut = &TIME_BLOCK[..TIME_BLOCK.rfind('<').unwrap()];
    let server = Server::start(vec![
        Reply::events(&text_stream(cut, 6, "length", "\n")),
        Reply::events(&text_stream("I ran out of tokens.", 4, "stop", "\n")),
    ])
    .await;
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--protocol",
            "auto",
            "--json",
            "What time is it?",
        ],
    )
    .await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let system = system_of(&server);
    assert!(
        system.contains("<|[REQUEST_TOOL]|>") && system.contains("system:get_current_time"),
        "auto teaches TAM: {system}"
    );
    let lines = ndjson(&output.stdout);
    assert!(of_type(&lines, "call_started").is_empty(), "{lines:?}");
    assert_eq!(of_type(&lines, "stream_cut")[0]["reason"], "length");
    assert_eq!(
        of_type(&lines, "model_finished")[0]["finish_reason"],
        "length"
    );
    assert!(
        of_type(&lines, "observation").iter().any(|o| o["text"]
            .as_str()
            .unwrap()
            .contains("cut at the token limit")),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_plugins_and_a_profile_give_the_tools_in_scope() {
    let server = Server::start(vec![Reply::events(&text_stream(
        "No tool needed.",
        4,
        "stop",
        "\n",
    ))])
    .await;
    let workflows = test_path("fixtures/workflows");
    let plugin = test_path("fixtures/my-awesome-plugin");
    let profile = std::env::temp_dir().join(format!("tam-run-profile-{}.json", std::process::id()));
    std::fs::write(
        &profile,
        json!({"id": "a", "name": "A", "tool_ids_inventory": ["workflow:summarize_text"]})
            .to_string(),
    )
    .unwrap();
    let output = tam_run(
        &server,
        &[
            "--workflows",
            workflows.to_str().unwrap(),
            "--plugin",
            plugin.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
            "Hello",
        ],
    )
    .await;
    let _ = std::fs::remove_file(&profile);
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let prompt = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prompt.contains("workflow:summarize_text"), "{prompt}");
    assert!(
        !prompt.contains("my-awesome-plugin"),
        "outside the profile's scope: {prompt}"
    );

    // The fixture profile names math:DivMod, which no file given defines.
    let server = Server::start(vec![]).await;
    let fixture_profile = test_path("fixtures/agent_profile.json");
    let output = tam_run(
        &server,
        &[
            "--workflows",
            workflows.to_str().unwrap(),
            "--profile",
            fixture_profile.to_str().unwrap(),
            "Hello",
        ],
    )
    .await;
    assert_eq!(output.code, Some(1), "{}", output.stderr);
    assert!(output.stderr.contains("math:DivMod"), "{}", output.stderr);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_server_fails_the_run_with_its_status_and_message() {
    let server = Server::start(vec![Reply::Status {
        status: 400,
        body: json!({"error": {"message": "the request exceeds the available context size"}})
            .to_string(),
    }])
    .await;
    let output = tam_run(&server, &["Hello"]).await;
    assert_eq!(output.code, Some(1));
    assert!(output.stderr.contains("400"), "{}", output.stderr);
    assert!(
        output.stderr.contains("exceeds the available context size"),
        "{}",
        output.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_key_variable_is_a_usage_error() {
    let server = Server::start(vec![]).await;
    let output = tam_run(
        &server,
        &["--api-key-env", "TAM_TEST_SURELY_UNSET_VARIABLE", "Hi"],
    )
    .await;
    assert_eq!(output.code, Some(2), "{}", output.stderr);
    assert!(
        output.stderr.contains("TAM_TEST_SURELY_UNSET_VARIABLE"),
        "{}",
        output.stderr
    );
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------------------------------
// The system prompt: language, usage notes, replacement file
// ---------------------------------------------------------------------------------------

fn system_of(server: &Server) -> String {
    server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("tam-run-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_language_and_usage_notes_shape_the_system_prompt() {
    let server = Server::start(vec![Reply::events(&text_stream("好。", 4, "stop", "\n"))]).await;
    let notes = temp_file("notes.txt", "- GetPlayerInfo 需要 player_id。");
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--prompt-language",
            "zh",
            "--usage-notes",
            notes.to_str().unwrap(),
            "你好",
        ],
    )
    .await;
    let _ = std::fs::remove_file(&notes);
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let system = system_of(&server);
    for part in [
        "[角色与目标]",
        "[可用工具参考]",
        "[工具用法参考]\n- GetPlayerInfo 需要 player_id。",
        "<|[REQUEST_TOOL]|>",
        "GetPlayerInfo",
    ] {
        assert!(system.contains(part), "{part} missing: {system}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tam_prompt_with_the_demo_tools_prints_the_prompt_tam_run_sends() {
    for protocol in ["tam", "action"] {
        let server = Server::start(vec![Reply::events(&text_stream("Hi.", 4, "stop", "\n"))]).await;
        let output = tam_run(&server, &["--tools", "demo", "--protocol", protocol, "Hi"]).await;
        assert_eq!(output.code, Some(0), "{}", output.stderr);
        let printed = run(
            &[
                "prompt",
                "--full",
                "--protocol",
                protocol,
                "--tools",
                "demo",
            ],
            b"",
        );
        assert_eq!(printed.code, Some(0), "{}", printed.stderr);
        // `tam prompt` ends its output with a line break; the prompt itself has none.
        assert_eq!(
            printed.stdout.strip_suffix('\n'),
            Some(system_of(&server).as_str()),
            "{protocol}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_prompt_file_replaces_the_prompt_and_gets_the_tool_list() {
    let server = Server::start(vec![Reply::events(&text_stream("Fine.", 4, "stop", "\n"))]).await;
    let file = temp_file(
        "system.txt",
        "You are terse. Tools:\n{tools}\nWrite <ACTION> blocks.",
    );
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--protocol",
            "action",
            "--system-prompt",
            file.to_str().unwrap(),
            "Hi",
        ],
    )
    .await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let system = system_of(&server);
    assert!(
        system.starts_with("You are terse. Tools:\n"),
        "the file's text: {system}"
    );
    assert!(system.ends_with("\nWrite <ACTION> blocks."), "{system}");
    assert!(!system.contains("{tools}"), "{system}");
    assert!(
        system.contains("<GetPlayerInfo>") && system.contains("system:get_current_time"),
        "the tool list in the ACTION style: {system}"
    );
    assert!(!system.contains("[Your decision]"), "{system}");
    // The user message is the prompt alone: the tool list is not added a second time.
    assert_eq!(
        server.requests()[0].body["messages"][1],
        json!({"role": "user", "content": "Hi"})
    );

    // A file without {tools} is sent as written.
    let server = Server::start(vec![Reply::events(&text_stream("Ok.", 4, "stop", "\n"))]).await;
    std::fs::write(&file, "Just answer.").unwrap();
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--system-prompt",
            file.to_str().unwrap(),
            "Hi",
        ],
    )
    .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert_eq!(system_of(&server), "Just answer.");
}

// ---------------------------------------------------------------------------------------
// A profile's LLM node parameters
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profiles_node_parameters_are_the_request_options_and_flags_win() {
    let profile = temp_file(
        "node-profile.json",
        &json!({
            "id": "a",
            "tool_ids_inventory": ["system:get_current_time"],
            "config": {
                "profileId": "gpt",
                "parameters": {
                    "temperature": 0.5, "maxTokens": 77, "stop": ["END"], "seed": 5,
                    "topP": 0.9, "presence_penalty": 1.0
                },
                "maxToolCalls": 0
            }
        })
        .to_string(),
    );
    let server = Server::start(vec![
        Reply::events(&text_stream(TIME_BLOCK, 6, "stop", "\n")),
        Reply::events(&text_stream("Too many calls.", 4, "stop", "\n")),
    ])
    .await;
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--profile",
            profile.to_str().unwrap(),
            "--seed",
            "9",
            "--json",
            "What time is it?",
        ],
    )
    .await;
    let body = server.requests()[0].body.clone();
    assert_eq!(body["temperature"], json!(0.5));
    assert_eq!(body["max_tokens"], 77);
    // The protocol's end marker first, then the profile's own stop sequence.
    assert_eq!(body["stop"], json!(["<|[END_TOOL]|>", "END"]));
    assert_eq!(body["seed"], 9, "the flag wins over the profile's seed");
    assert!(body.get("top_p").is_none() && body.get("presence_penalty").is_none());
    // maxToolCalls: 0 from the node: the call does not run.
    let lines = ndjson(&output.stdout);
    assert!(of_type(&lines, "call_started").is_empty(), "{lines:?}");

    // Flags override each option; --max-tool-calls overrides maxToolCalls.
    let server = Server::start(vec![
        Reply::events(&text_stream(TIME_BLOCK, 6, "stop", "\n")),
        Reply::events(&text_stream("Noon.", 4, "stop", "\n")),
    ])
    .await;
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--profile",
            profile.to_str().unwrap(),
            "--temperature",
            "0.25",
            "--max-tokens",
            "12",
            "--stop",
            "A",
            "--stop",
            "B",
            "--max-tool-calls",
            "3",
            "--json",
            "What time is it?",
        ],
    )
    .await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let body = server.requests()[0].body.clone();
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["max_tokens"], 12);
    assert_eq!(body["stop"], json!(["<|[END_TOOL]|>", "A", "B"]));
    assert_eq!(body["seed"], 5);
    assert_eq!(of_type(&ndjson(&output.stdout), "call_started").len(), 1);

    // A profile with top-level parameters (no node config).
    std::fs::write(
        &profile,
        json!({"id": "b", "parameters": {"max_tokens": 33}}).to_string(),
    )
    .unwrap();
    let server = Server::start(vec![Reply::events(&text_stream("Ok.", 4, "stop", "\n"))]).await;
    let output = tam_run(&server, &["--profile", profile.to_str().unwrap(), "Hi"]).await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let body = server.requests()[0].body.clone();
    assert_eq!(body["max_tokens"], 33);
    assert!(body.get("temperature").is_none() && body.get("seed").is_none());

    // Parameters of the wrong type fail the run before the model is asked.
    std::fs::write(
        &profile,
        json!({"id": "c", "config": {"parameters": {"temperature": "hot"}}}).to_string(),
    )
    .unwrap();
    let server = Server::start(vec![]).await;
    let output = tam_run(&server, &["--profile", profile.to_str().unwrap(), "Hi"]).await;
    let _ = std::fs::remove_file(&profile);
    assert_eq!(output.code, Some(1), "{}", output.stderr);
    assert!(output.stderr.contains("temperature"), "{}", output.stderr);
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------------------------------
// MCP servers
// ---------------------------------------------------------------------------------------

/// The MCP server `--mcp` starts: this package's example `mcp_players` (built by `cargo
/// test` beside the tests).
fn mcp_command() -> String {
    let exe = support::example_exe("mcp_players");
    shlex::try_quote(exe.to_str().unwrap())
        .unwrap()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_runs_and_its_observation_reaches_the_next_request() {
    let call = "Adding.\n<|[REQUEST_TOOL]|>\ncommand:「始」add「末」\na:「始」2「末」\nb:「始」40「末」\n<|[END_TOOL]|>";
    let server = Server::start(vec![
        Reply::events(&text_stream(call, 5, "stop", "\n")),
        Reply::events(&text_stream("It is 42.", 4, "stop", "\n")),
    ])
    .await;
    let command = mcp_command();
    let output = tam_run(&server, &["--mcp", &command, "--json", "What is 2 + 40?"]).await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let lines = ndjson(&output.stdout);
    let started = of_type(&lines, "call_started");
    assert_eq!(started.len(), 1, "{lines:?}");
    assert_eq!(started[0]["tool"], "add");
    assert_eq!(of_type(&lines, "call_finished")[0]["status"], "completed");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("add") && system.contains("Adds two integers."),
        "{system}"
    );
    let observation = requests[1].body["messages"][3]["content"].as_str().unwrap();
    assert!(
        observation.contains("add executed successfully") && observation.contains("42"),
        "{observation}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clashing_mcp_tools_are_named_after_their_server() {
    let call = "<|[REQUEST_TOOL]|>\ncommand:「始」tam-run-test:GetPlayerInfo「末」\nplayer_id:「始」p7「末」\n<|[END_TOOL]|>";
    let server = Server::start(vec![
        Reply::events(&text_stream(call, 7, "stop", "\n")),
        Reply::events(&text_stream("Found.", 4, "stop", "\n")),
    ])
    .await;
    let command = mcp_command();
    let output = tam_run(
        &server,
        &["--tools", "demo", "--mcp", &command, "--json", "Who is p7?"],
    )
    .await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let lines = ndjson(&output.stdout);
    let started = of_type(&lines, "call_started");
    assert_eq!(started.len(), 1, "{lines:?}");
    assert_eq!(started[0]["tool"], "tam-run-test:GetPlayerInfo");

    let requests = server.requests();
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    for id in [
        "tam-run-test:add",
        "tam-run-test:GetPlayerInfo",
        "system:get_current_time",
    ] {
        assert!(system.contains(id), "{id} missing: {system}");
    }
    let observation = requests[1].body["messages"][3]["content"].as_str().unwrap();
    assert!(
        observation.contains("mcp") && observation.contains("p7"),
        "the MCP tool ran, not the demo's: {observation}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_that_cannot_start_fails_the_run_before_the_model_is_asked() {
    let server = Server::start(vec![]).await;
    let output = tam_run(&server, &["--mcp", "tam-no-such-mcp-server --stdio", "Hi"]).await;
    assert_eq!(output.code, Some(1), "{}", output.stderr);
    assert!(output.stderr.contains("[mcp.spawn]"), "{}", output.stderr);
    assert!(
        output.stderr.contains("tam-no-such-mcp-server"),
        "{}",
        output.stderr
    );
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_mcp_server_gets_its_own_names_and_each_runs() {
    let call = "<|[REQUEST_TOOL]|>\ncommand1:「始」add「末」\na1:「始」1「末」\nb1:「始」2「末」\ncommand2:「始」tam-run-test:add「末」\na2:「始」30「末」\nb2:「始」4「末」\n<|[END_TOOL]|>";
    let server = Server::start(vec![
        Reply::events(&text_stream(call, 9, "stop", "\n")),
        Reply::events(&text_stream("3 and 34.", 4, "stop", "\n")),
    ])
    .await;
    let command = mcp_command();
    let output = tam_run(
        &server,
        &["--mcp", &command, "--mcp", &command, "--json", "Sums?"],
    )
    .await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    let lines = ndjson(&output.stdout);
    let tools: Vec<&Value> = of_type(&lines, "call_started")
        .iter()
        .map(|l| &l["tool"])
        .collect();
    assert_eq!(
        tools,
        [&json!("add"), &json!("tam-run-test:add")],
        "{lines:?}"
    );
    let observation = server.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        observation.contains("Tool add executed successfully. Result: 3\n")
            && observation.contains("Tool tam-run-test:add executed successfully. Result: 34"),
        "{observation}"
    );
}

// ---------------------------------------------------------------------------------------
// Strict calls
// ---------------------------------------------------------------------------------------

/// A llama-server's native `/completion` stream of `text` (pieces of 6 characters) that
/// stops at `stopped_at` (a stop word, left out of the text) or by itself.
fn llama_stream(text: &str, stopped_at: Option<&str>) -> Reply {
    let chars: Vec<char> = text.chars().collect();
    let mut events: Vec<String> = chars
        .chunks(6)
        .map(|c| {
            let piece: String = c.iter().collect();
            format!("data: {}\n\n", json!({"content": piece, "stop": false}))
        })
        .collect();
    let last = json!({
        "content": "", "stop": true,
        "stop_type": if stopped_at.is_some() { "word" } else { "eos" },
        "stopping_word": stopped_at.unwrap_or(""),
        "tokens_evaluated": 100, "tokens_predicted": 10,
    });
    events.push(format!("data: {last}\n\n"));
    Reply::events(&events)
}

fn ok_json(body: Value) -> Reply {
    Reply::Status {
        status: 200,
        body: body.to_string(),
    }
}

/// A scripted llama-server: `/props` says so, `/apply-template` renders the messages'
/// contents, `/completion` writes the ACTION call first and prose once it sees the call's
/// observation.
async fn llama_server() -> Server {
    Server::scripted_with_probes(|request| {
        let path = request.line.split(' ').nth(1).unwrap_or("");
        match path {
            "/props" => ok_json(json!({"default_generation_settings": {"n_ctx": 4096}})),
            "/apply-template" => {
                let messages = request.body["messages"].as_array().unwrap();
                let mut prompt: String = messages
                    .iter()
                    .map(|m| format!("{}\n", m["content"].as_str().unwrap()))
                    .collect();
                prompt.push_str(&format!("[{} messages]", messages.len()));
                ok_json(json!({"prompt": prompt}))
            }
            // The first round (system and user messages) calls; the next answers.
            "/completion"
                if request.body["prompt"]
                    .as_str()
                    .unwrap()
                    .ends_with("[2 messages]") =>
            {
                llama_stream(
                    PLAYER_ACTION.trim_end_matches("</ACTION>"),
                    Some("</ACTION>"),
                )
            }
            "/completion" => llama_stream("The player is Alice.", None),
            _ => Reply::Status {
                status: 404,
                body: "{}".into(),
            },
        }
    })
    .await
}

fn paths(server: &Server) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r.line.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_llama_server_each_round_sends_the_tools_grammar_to_completion() {
    let server = llama_server().await;
    let args = [
        "--tools",
        "demo",
        "--protocol",
        "action",
        "Who is player123?",
    ];
    let output = tam_run(&server, &args).await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(
        output
            .stdout
            .contains("→ GetPlayerInfo({\"player_id\":\"player123\"})"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("The player is Alice."),
        "{}",
        output.stdout
    );
    assert!(
        output.stderr.contains("strict calls on (llama.cpp server"),
        "{}",
        output.stderr
    );
    // One detection (the three questions at once), then each round rendered and
    // completed.
    let lines = paths(&server);
    let mut asked: Vec<&str> = lines[..3].iter().map(String::as_str).collect();
    asked.sort_unstable();
    assert_eq!(
        asked,
        ["GET /get_server_info", "GET /props", "GET /version"],
        "{lines:?}"
    );
    assert_eq!(
        lines[3..],
        [
            "POST /apply-template",
            "POST /completion",
            "POST /apply-template",
            "POST /completion"
        ],
    );
    for request in server
        .requests()
        .iter()
        .filter(|r| r.line.starts_with("POST /completion"))
    {
        let body = &request.body;
        assert_eq!(body["grammar_lazy"], true);
        // The block's start marker, and the tools' call elements written without it.
        assert_eq!(
            body["grammar_triggers"],
            json!([
                {"type": 1, "value": "<ACTION>"},
                {"type": 2, "value": r"(?:^|\n)[ \t]*(<(?:GetPlayerInfo|system:get_current_time|workflow:summarize_text)>)"}
            ])
        );
        let grammar = body["grammar"].as_str().unwrap();
        for tool in ["GetPlayerInfo", "player_id", "get_current_time"] {
            assert!(grammar.contains(tool), "{tool}: {grammar:.200}");
        }
        assert!(
            body["stop"]
                .as_array()
                .unwrap()
                .contains(&json!("</ACTION>"))
        );
    }

    // `--no-strict`: chat completions, no grammar, nothing asked of the server's kind.
    let server = Server::start(vec![
        Reply::events(&text_stream(PLAYER_ACTION, 5, "stop", "\n")),
        Reply::events(&text_stream("The player is Alice.", 4, "stop", "\n")),
    ])
    .await;
    let mut no_strict = vec!["--no-strict"];
    no_strict.extend(args);
    let output = tam_run(&server, &no_strict).await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(
        !output.stderr.contains("strict calls on"),
        "{}",
        output.stderr
    );
    for request in server.requests() {
        assert!(
            request.line.starts_with("POST /v1/chat/completions"),
            "{}",
            request.line
        );
        assert!(request.body.get("grammar").is_none());
        assert!(request.body.get("response_format").is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_upstream_kind_is_not_asked_and_a_bad_one_is_a_usage_error() {
    // Named vLLM: no detection, a structural tag in each chat request.
    let server = Server::scripted_with_probes(|request| {
        if request.body["messages"].as_array().unwrap().len() == 2 {
            Reply::events(&text_stream(PLAYER_ACTION, 5, "stop", "\n"))
        } else {
            Reply::events(&text_stream("The player is Alice.", 4, "stop", "\n"))
        }
    })
    .await;
    let args = [
        "--upstream-kind",
        "vllm",
        "--tools",
        "demo",
        "--protocol",
        "action",
        "Who is player123?",
    ];
    let output = tam_run(&server, &args).await;
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(
        paths(&server)
            .iter()
            .all(|p| p == "POST /v1/chat/completions")
    );
    let format = &server.requests()[0].body["response_format"];
    assert_eq!(format["type"], "structural_tag");
    assert_eq!(format["format"]["triggers"], json!(["<ACTION>"]));

    let output = tam_run(&server, &["--upstream-kind", "tgi", "Hi"]).await;
    assert_eq!(output.code, Some(2), "{}", output.stderr);
    assert!(
        output.stderr.contains("unknown upstream kind 'tgi'"),
        "{}",
        output.stderr
    );
}
