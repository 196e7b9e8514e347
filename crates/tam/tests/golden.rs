//! Golden cases of both protocols in one stream: `tests/golden/NAME.txt` (or `.bin` for
//! byte input) decoded every way (whole, char by char, byte by byte, random splits, every
//! prefix + rest) by the decoder with its default settings (both protocols) must give the
//! events written in `NAME.events`.
//! `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the expectations; review the diff.

mod common;

use common::Front;
use tam::Config;
use tam_testkit::decode_all_ways;
use tam_testkit::golden::Golden;

#[test]
fn golden_cases() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
    Golden::new(dir, &["txt", "bin"], "events")
        .at_least(5)
        .run(|case| common::dump(&decode_all_ways(Front(Config::default()), &case.input)));
}
