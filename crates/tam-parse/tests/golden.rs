//! Golden cases: `tests/golden/NAME.tam` (or `.bin` for byte input) decoded every way
//! (whole, char by char, byte by byte, random splits, every prefix + rest) must give the
//! events written in `NAME.events`. `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the
//! expectations; review the diff before committing.

mod common;

use std::path::Path;

use tam_parse::{Config, Dialect};

/// Settings by file name: `vcp_*` uses the VCP dialect; `limit_block*`, `limit_calls*` and
/// `limit_key*` use tiny limits; argument streaming is on for all; `cut_*` ends the stream with `finish_cut` (a cut stream).
fn config_for(name: &str) -> Config {
    let mut config = if name.starts_with("vcp_") {
        Config::with_dialect(Dialect::Vcp)
    } else {
        Config::default()
    };
    if name.starts_with("limit_block") {
        config.max_block_bytes = 64;
    }
    if name.starts_with("limit_calls") {
        config.max_calls = 2;
    }
    if name.starts_with("limit_key") {
        config.max_key_len = 8;
    }
    // Argument streaming on: the goldens show the Param* events too.
    config.with_param_events(true)
}

#[test]
fn golden_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("tam" | "bin")))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "golden cases are missing");
    let mut failures = Vec::new();
    for input_path in names {
        let name = input_path.file_stem().unwrap().to_str().unwrap().to_owned();
        let input = std::fs::read(&input_path).unwrap();
        let events = if name.starts_with("cut_") {
            common::decode_all_ways_cut(&input, config_for(&name))
        } else {
            common::decode_all_ways(&input, config_for(&name))
        };
        let got = common::dump(&events);
        let expected_path = input_path.with_extension("events");
        if update {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{} has no .events file", name));
        if got != expected {
            failures.push(format!("== {name}\n-- expected\n{expected}-- got\n{got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
