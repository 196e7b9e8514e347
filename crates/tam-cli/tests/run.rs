//! `tam run` against a scripted OpenAI-compatible server on loopback, in both protocols:
//! the request it sends, the calls it runs, its two output forms, a reply cut at the token
//! limit, and a server that refuses.

#[path = "support/openai_server.rs"]
mod openai_server;
mod support;

use openai_server::{Reply, Server, text_stream};
use serde_json::{Value, json};
use support::{Output, ndjson, run, test_path};

const TIME_BLOCK: &str = "Let me check.\n<|[REQUEST_TOOL]|>\ncommand:「始」system:get_current_time「末」\n<|[END_TOOL]|>";
const PLAYER_ACTION: &str = "Looking up.\n<ACTION>\n  <GetPlayerInfo>\n    <player_id>player123</player_id>\n  </GetPlayerInfo>\n</ACTION>";

/// Runs `tam run --base-url … --model m args… PROMPT` off the runtime's threads.
async fn tam_run(server: &Server, args: &[&str]) -> Output {
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
    assert!(
        system.contains("GetPlayerInfo") && system.contains("<|[REQUEST_TOOL]|>"),
        "{system}"
    );
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
    let output = tam_run(
        &server,
        &[
            "--tools",
            "demo",
            "--protocol",
            "action",
            "Who is player123?",
        ],
    )
    .await;
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
    assert!(
        prompt.contains("<ACTION>"),
        "the ACTION prompt style: {prompt}"
    );
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
