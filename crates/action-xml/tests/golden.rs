//! Golden cases: `tests/golden/NAME.txt` (or `.bin` for byte input) decoded every way
//! (whole, char by char, byte by byte, random splits, every prefix + rest) must give the
//! events written in `NAME.events`.
//! `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the expectations; review the diff.

mod common;

use action_xml::Config;
use common::Action;
use tam_testkit::decode_all_ways;
use tam_testkit::golden::Golden;

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
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
    Golden::new(dir, &["txt", "bin"], "events")
        .at_least(50)
        .run(|case| {
            common::dump(&decode_all_ways(
                Action(config_for(&case.name)),
                &case.input,
            ))
        });
}
