//! The ACTION decoder on arbitrary bytes cut at arbitrary points: no panic, the same
//! events however the stream is cut, spans that tile the stream (see `tam_fuzz` for the
//! layout).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tam_fuzz::{Input, check, action};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    check(action(input.flags), &input);
});
