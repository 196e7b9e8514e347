//! The ACTION decoder on arbitrary bytes cut at arbitrary points: no panic, the same
//! events however the stream is cut, spans that tile the stream (see `tam_fuzz` for the
//! layout); and the same through the front door (`tam::Decoder` for ACTION only). Flag
//! bit 5 turns reasoning sections (`<think>`) on.
#![no_main]

use tam::Protocol as ProtocolChoice;
use libfuzzer_sys::fuzz_target;
use tam_fuzz::{Input, action, check, mixed};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    let mut alone = action(input.flags);
    alone.0 = alone.0.with_reasoning_tags(input.flags & 0x20 != 0);
    check(alone, &input);
    let mut front = mixed(input.flags);
    front.0.protocol = ProtocolChoice::Action;
    check(front, &input);
});
