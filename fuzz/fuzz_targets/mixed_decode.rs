//! Arbitrary deltas through the front door (`tam::Decoder`): no panic, the same events
//! however the stream is cut, spans that tile the stream (see `tam_fuzz` for the layout).
//! Flag bits 2–3 choose the protocol (TAM, ACTION, both), bit 5 turns argument events off,
//! bit 4 reasoning sections (on by default in the front door).
#![no_main]

use tam::Protocol as ProtocolChoice;
use libfuzzer_sys::fuzz_target;
use tam_fuzz::{Input, check, mixed};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    let mut harness = mixed(input.flags);
    harness.0.protocol = ProtocolChoice::ALL[usize::from(input.flags >> 2) % 3];
    harness.0.param_events = input.flags & 0x20 == 0;
    harness.0.reasoning_tags = input.flags & 0x10 == 0;
    check(harness, &input);
});
