//! Golden cases: `tests/golden/NAME.tam` (or `.bin` for byte input) decoded every way
//! (whole, char by char, byte by byte, random splits, every prefix + rest) must give the
//! events written in `NAME.events`. `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the
//! expectations; review the diff before committing.

mod common;

use tam_parse::{Config, Dialect};
use tam_testkit::golden::Golden;

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
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
    Golden::new(dir, &["tam", "bin"], "events")
        .at_least(20)
        .run(|case| {
            let config = config_for(&case.name);
            let events = if case.name.starts_with("cut_") {
                common::decode_all_ways_cut(&case.input, config)
            } else {
                common::decode_all_ways(&case.input, config)
            };
            common::dump(&events)
        });
}
