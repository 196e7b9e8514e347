//! `tam demo`: the agent loop runs to its answer, with both protocols, the workflow tool
//! and the corrected call, and streams while it runs.

mod support;

use std::time::{Duration, Instant};

use support::{LINE_WAIT, LiveRun, run};

/// Where `needle` is in `text`; fails naming it when absent.
fn position(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("the demo output lacks {needle:?}:\n{text}"))
}

#[test]
fn the_fast_demo_runs_to_the_answer() {
    let output = run(&["demo", "--fast"], b"");
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert_eq!(output.stderr, "");
    let text = &output.stdout;
    assert!(!text.contains('\x1b'), "no colour when not on a terminal");

    let tam_block = position(text, "⚙ TAM block closed: 2 calls");
    let workflow_result = position(
        text,
        "↳ Observation: Tool workflow:summarize_text executed successfully. Result: \
         The winter update adds a frozen lake region with ice fishing. Crafting costs for iron tools drop by twenty percent.",
    );
    let mistake = position(text, "→ GetPlayerInfo(playerId=\"player123\")");
    let refusal = position(
        text,
        "↳ Observation: Error - Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?",
    );
    let corrected = position(text, "→ GetPlayerInfo(player_id=\"player123\")");
    let success = position(
        text,
        "↳ Observation: Tool GetPlayerInfo executed successfully.",
    );
    let answer = position(
        text,
        "player123 is Alice, a level 42 player in the Night Owls guild.",
    );
    assert!(
        tam_block < workflow_result
            && workflow_result < mistake
            && mistake < refusal
            && refusal < corrected
            && corrected < success
            && success < answer,
        "the rounds come in order:\n{text}"
    );
    assert_eq!(
        text.matches("⚙ ACTION XML block closed: 1 call").count(),
        2,
        "{text}"
    );
    assert!(
        text.contains("── done: the model answered after 4 rounds; 4 calls, 1 refused ──"),
        "{text}"
    );
}

#[test]
fn the_demo_shows_the_prompt_and_colours_when_asked() {
    let output = run(
        &["demo", "--fast", "--show-prompt", "--color", "always"],
        b"",
    );
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(
        output.stdout.contains("- Tool ID: workflow:summarize_text"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("[Your decision]") && output.stdout.contains("[Tool result rules]"),
        "the complete system prompt is shown: {}",
        output.stdout
    );
    let chinese = run(
        &[
            "demo",
            "--fast",
            "--show-prompt",
            "--prompt-language",
            "zh",
            "--color",
            "never",
        ],
        b"",
    );
    assert!(chinese.stdout.contains("[你的决策]"), "{}", chinese.stdout);
    assert!(output.stdout.contains("\x1b[32m"), "successes are green");
    assert_eq!(run(&["demo", "--color", "sometimes"], b"").code, Some(2));
}

#[test]
fn the_paced_demo_streams_while_it_runs() {
    let started = Instant::now();
    let mut demo = LiveRun::start(&["demo", "--color", "never"]);
    let mut first_block_at = None;
    while let Some(line) = demo.next_line(LINE_WAIT) {
        if line.contains("TAM block closed") {
            first_block_at = Some(started.elapsed());
            assert!(
                demo.is_running(),
                "the first block is shown while the model is still streaming"
            );
            break;
        }
    }
    let first_block_at = first_block_at.expect("the TAM block is shown");
    let (code, _) = demo.close_lines();
    assert_eq!(code, Some(0));
    let total = started.elapsed();
    // Round 1 alone is over a hundred deltas at 5–20 ms each.
    assert!(
        first_block_at >= Duration::from_millis(500),
        "paced deltas: {first_block_at:?}"
    );
    assert!(
        total > first_block_at + Duration::from_millis(500),
        "{first_block_at:?} of {total:?}"
    );
}
