//! Arbitrary deltas through the front door (`tam::Decoder`): no panic, the same events
//! however the stream is cut, spans that tile the stream (see `tam_fuzz` for the layout).
//! Flag bits 2–3 choose the protocol (TAM, ACTION, both), bit 5 turns argument events off,
//! bit 4 reasoning sections (on by default in the front door), bit 6 gives it a few tool
//! names (`tam_fuzz::BARE_TOOLS`: call elements written without `<ACTION>`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tam::ProtocolChoice;
use tam_fuzz::{BARE_TOOLS, FLAG_BARE_TOOLS, FrontTools, Input, check, mixed};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    let mut harness = mixed(input.flags);
    harness.0.protocol = ProtocolChoice::ALL[usize::from(input.flags >> 2) % 3];
    harness.0.param_events = input.flags & 0x20 == 0;
    harness.0.reasoning_tags = input.flags & 0x10 == 0;
    if input.flags & FLAG_BARE_TOOLS != 0 {
        check(FrontTools(harness.0, BARE_TOOLS), &input);
    } else {
        check(harness, &input);
    }
});
