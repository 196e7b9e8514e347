//! Golden files for `tam decode`: every input mode and protocol.
//!
//! Each case in `tests/golden/` is `<name>.args` (the flags), `<name>.in` (the input) and
//! `<name>.ndjson` (the expected output, adjacent text lines joined). A case runs three
//! ways, which must all give the expected lines: the input as FILE, on standard input at
//! once, and on standard input in 3-byte pieces (so markers, UTF-8 characters and input
//! lines are split across reads). `TAM_BLESS=1` rewrites the expected files from the
//! second way; review the diff.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use support::{Allowed, check_line, merge_text, ndjson, run, run_chunked, test_path};

fn cases() -> Vec<(String, PathBuf)> {
    let dir = test_path("golden");
    let mut cases: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "args"))
        .map(|path| {
            (
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                path,
            )
        })
        .collect();
    cases.sort();
    cases
}

fn decoded(args: &[&str], output: &support::Output) -> Vec<Value> {
    assert_eq!(
        output.code,
        Some(0),
        "exit status of {args:?}; stderr: {}",
        output.stderr
    );
    assert_eq!(output.stderr, "", "nothing on stderr for {args:?}");
    let lines = ndjson(&output.stdout);
    let allowed = Allowed::by_flags(args);
    for line in &lines {
        check_line(line, allowed);
    }
    merge_text(lines)
}

fn render(lines: &[Value]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

#[test]
fn every_golden_case_decodes_the_same_whatever_the_reads() {
    let cases = cases();
    assert!(cases.len() >= 10, "the golden cases are found: {cases:?}");
    let bless = std::env::var_os("TAM_BLESS").is_some();
    for (name, args_path) in cases {
        let flags = std::fs::read_to_string(&args_path).unwrap();
        let input_path = args_path.with_extension("in");
        let input = std::fs::read(&input_path).unwrap();
        let expected_path = args_path.with_extension("ndjson");

        let mut args: Vec<&str> = vec!["decode"];
        args.extend(flags.split_whitespace());
        let at_once = decoded(&args, &run(&args, &input));
        if bless {
            std::fs::write(&expected_path, render(&at_once)).unwrap();
        }
        let expected_text = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
        let expected = merge_text(ndjson(&expected_text));
        assert_eq!(
            render(&at_once),
            render(&expected),
            "case {name}, standard input at once"
        );

        let piecewise = decoded(
            &args,
            &run_chunked(&args, &input, 3, Duration::from_micros(200)),
        );
        assert_eq!(
            render(&piecewise),
            render(&expected),
            "case {name}, standard input in pieces"
        );

        let input_arg = input_path.to_str().unwrap();
        let mut file_args = args.clone();
        file_args.push(input_arg);
        let from_file = decoded(&file_args, &run(&file_args, b""));
        assert_eq!(render(&from_file), render(&expected), "case {name}, FILE");
    }
}

#[test]
fn every_input_mode_and_protocol_has_a_golden_case() {
    let flags: Vec<String> = cases()
        .iter()
        .map(|(_, path)| std::fs::read_to_string(path).unwrap())
        .collect();
    let with = |needle: &str| flags.iter().any(|f| f.contains(needle));
    let raw_cases = flags.iter().filter(|f| !f.contains("--input")).count();
    assert!(raw_cases > 0, "raw input");
    assert!(with("--input deltas") && with("--input sse"));
    assert!(with("--protocol tam") && with("--protocol action"));
    assert!(
        flags.iter().any(|f| !f.contains("--protocol")),
        "the default, auto"
    );
    assert!(with("--dialect vcp"));
}
