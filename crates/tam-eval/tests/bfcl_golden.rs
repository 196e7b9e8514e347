//! The BFCL scorer's golden verdicts: `tests/bfcl/cases.jsonl` holds hand-made cases in
//! BFCL's format (no BFCL data), one per rule — names, required and unexpected parameters,
//! types, string normalisation, lists, dicts, `""` as may-be-omitted, the decoding of a
//! reply, parallel matching, irrelevance — and `results.jsonl` one reply for each (one case
//! has none). `verdicts.jsonl` is the verdict each reply must get, written by hand from
//! the rules, and `table.txt` the table `bfcl-score` prints for them. The binary is run as
//! a user runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bfcl")
        .join(name)
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `tam-eval bfcl-score` on the fixture with `extra` arguments and a verdicts file;
/// returns stdout and the verdict lines.
fn score(extra: &[&str]) -> (String, Vec<Value>) {
    let verdicts = std::env::temp_dir().join(format!(
        "tam-eval-golden-{}-{}.jsonl",
        std::process::id(),
        extra.join("")
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_tam-eval"))
        .arg("bfcl-score")
        .arg(fixture("cases.jsonl"))
        .arg(fixture("results.jsonl"))
        .arg("--verdicts")
        .arg(&verdicts)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&std::fs::read_to_string(&verdicts).unwrap());
    let _ = std::fs::remove_file(&verdicts);
    (String::from_utf8(out.stdout).unwrap(), lines)
}

#[test]
fn every_rule_gets_its_verdict() {
    let (stdout, got) = score(&["--require-all"]);
    let want = json_lines(&std::fs::read_to_string(fixture("verdicts.jsonl")).unwrap());
    assert_eq!(got.len(), want.len(), "one verdict per case");
    let mut wrong = Vec::new();
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got["id"], want["id"], "verdicts in case-file order");
        assert_eq!(got["category"], want["category"]);
        if got["valid"] != want["valid"] || got["error_type"] != want["error_type"] {
            wrong.push(format!(
                "{}: got {} {} ({}), want {} {}",
                want["id"],
                got["valid"],
                got["error_type"],
                got["error"],
                want["valid"],
                want["error_type"]
            ));
        }
        // A failure says why; a pass says nothing.
        assert_eq!(got["error"] == "", got["valid"] == true, "{got}");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let table = std::fs::read_to_string(fixture("table.txt")).unwrap();
    assert!(stdout.starts_with(&table), "got:\n{stdout}\nwant:\n{table}");
    assert!(
        stdout.contains("replies: 38; with text content beside tool calls: 0;"),
        "{stdout}"
    );
}

/// Without `--require-all` the case without a reply is skipped and said so; with
/// `--strict-irrelevance` a call whose arguments do not decode fails irrelevance too.
#[test]
fn skipped_cases_and_strict_irrelevance() {
    let (stdout, got) = score(&[]);
    assert_eq!(got.len(), 38);
    assert!(got.iter().all(|v| v["id"] != "simple_no_result"));
    assert!(
        stdout.contains("note: 1 case(s) without a result were skipped"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "note: irrelevance with any tool call counted as a failure (--strict-irrelevance): 1/3"
        ),
        "{stdout}"
    );
    let (_, strict) = score(&["--strict-irrelevance"]);
    let verdict = strict
        .iter()
        .find(|v| v["id"] == "irrelevance_call_not_decoded")
        .unwrap();
    assert_eq!(verdict["error_type"], "irrelevance_error:decoder_success");
}

/// `--details` lists each failure with what came and what was wanted.
#[test]
fn details_name_each_failure() {
    let (stdout, _) = score(&["--details"]);
    assert!(
        stdout.contains(
            "FAIL simple_name_with_dot [simple] simple_function_checker:wrong_func_name: \
             want function \"geometry_area_circle\", got \"geometry.area_circle\""
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("     want: [{\"geometry.area_circle\""),
        "{stdout}"
    );
    assert!(!stdout.contains("FAIL simple_name [simple]"), "{stdout}");
}

/// Bad input is a clear error naming the file, never a panic.
#[test]
fn a_bad_results_file_is_a_clear_error() {
    let bad = std::env::temp_dir().join(format!("tam-eval-bad-{}.jsonl", std::process::id()));
    std::fs::write(&bad, "{\"id\": \"a\"}\nnot json\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tam-eval"))
        .arg("bfcl-score")
        .arg(fixture("cases.jsonl"))
        .arg(&bad)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&bad);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(":2: not JSON"), "{stderr}");
}
