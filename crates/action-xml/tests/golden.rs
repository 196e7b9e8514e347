//! Golden cases: `tests/golden/NAME.txt` (or `.bin` for byte input) decoded every way
//! (whole, char by char, byte by byte, random splits, every prefix + rest) must give the
//! events written in `NAME.events`.
//! `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the expectations; review the diff.

mod common;

use std::path::Path;

use action_xml::Config;
use tam_testkit::Action;

/// Settings by file name: `limit_block*`, `limit_depth*` and `limit_nodes*` use tiny
/// limits.
fn config_for(name: &str) -> Config {
    let mut config = Config::default();
    if name.starts_with("limit_block") {
        config.max_block_bytes = 64;
    }
    if name.starts_with("limit_depth") {
        config.max_depth = 3;
    }
    if name.starts_with("limit_nodes") {
        config.max_nodes = 10;
    }
    config
}

#[test]
fn golden_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("txt" | "bin")))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 50, "golden cases are missing");
    let mut failures = Vec::new();
    for input_path in inputs {
        let name = input_path.file_stem().unwrap().to_str().unwrap().to_owned();
        let input = std::fs::read(&input_path).unwrap();
        let got = common::dump(&tam_testkit::decode_all_ways(
            Action(config_for(&name)),
            &input,
        ));
        let expected_path = input_path.with_extension("events");
        if update {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{name} has no .events file"));
        if got != expected {
            failures.push(format!("== {name}\n-- expected\n{expected}-- got\n{got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
