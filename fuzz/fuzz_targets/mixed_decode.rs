//! Arbitrary deltas through both protocols at once (the mixed decoder): no panic, the same
//! events however the stream is cut, spans that tile the stream (see `tam_fuzz` for the
//! layout).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tam_fuzz::{Input, check, mixed};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    check(mixed(input.flags), &input);
});
