//! Golden files for `tam decode`: every input mode and protocol.
//!
//! Each case in `tests/golden/` is `<name>.args` (the flags), `<name>.in` (the input) and
//! `<name>.ndjson` (the expected output, adjacent text lines joined). A case runs three
//! ways, which must all give the expected lines: the input as FILE, on standard input at
//! once, and on standard input in 3-byte pieces (so markers, UTF-8 characters and input
//! lines are split across reads). `UPDATE_GOLDEN=1` rewrites the expected files from
//! standard input at once; review the diff.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Allowed, check_line, merge_text, ndjson, run, run_chunked, test_path};
use tam_testkit::golden::Golden;

/// The cases: `<name>.args` beside `<name>.in` and `<name>.ndjson`.
fn golden() -> Golden {
    Golden::new(test_path("golden"), &["args"], "ndjson")
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
    golden()
        .at_least(10)
        // The expected lines as the decoder's output is rendered: adjacent text joined.
        .normalize(|expected| render(&merge_text(ndjson(expected))))
        .run(|case| {
            let name = &case.name;
            let flags = std::str::from_utf8(&case.input).unwrap();
            let input_path = case.path.with_extension("in");
            let input = std::fs::read(&input_path).unwrap();

            let mut args: Vec<&str> = vec!["decode"];
            args.extend(flags.split_whitespace());
            let at_once = render(&decoded(&args, &run(&args, &input)));

            let piecewise = decoded(
                &args,
                &run_chunked(&args, &input, 3, Duration::from_micros(200)),
            );
            assert_eq!(
                render(&piecewise),
                at_once,
                "case {name}, standard input in pieces"
            );

            let input_arg = input_path.to_str().unwrap();
            let mut file_args = args.clone();
            file_args.push(input_arg);
            let from_file = decoded(&file_args, &run(&file_args, b""));
            assert_eq!(render(&from_file), at_once, "case {name}, FILE");
            at_once
        });
}

#[test]
fn every_input_mode_and_protocol_has_a_golden_case() {
    let flags: Vec<String> = golden()
        .cases()
        .into_iter()
        .map(|case| String::from_utf8(case.input).unwrap())
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
