//! The ACTION decoder on arbitrary bytes cut at arbitrary points: no panic, the same
//! events however the stream is cut, spans that tile the stream (see `tam_fuzz` for the
//! layout); and the same through the front door (`tam::Decoder` for ACTION only). Flag
//! bit 5 turns reasoning sections (`<think>`) on, bit 6 gives both decoders a few tool
//! names (`tam_fuzz::BARE_TOOLS`: call elements written without `<ACTION>`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tam::ProtocolChoice;
use tam_fuzz::{ActionTools, BARE_TOOLS, FLAG_BARE_TOOLS, FrontTools, Input, action, check, mixed};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    let mut alone = action(input.flags);
    alone.0 = alone.0.with_reasoning_tags(input.flags & 0x20 != 0);
    let mut front = mixed(input.flags);
    front.0.protocol = ProtocolChoice::Action;
    if input.flags & FLAG_BARE_TOOLS != 0 {
        check(ActionTools(alone.0, BARE_TOOLS), &input);
        check(FrontTools(front.0, BARE_TOOLS), &input);
    } else {
        check(alone, &input);
        check(front, &input);
    }
});
