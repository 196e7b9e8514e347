//! The TAM decoder on arbitrary bytes cut at arbitrary points: no panic, the same events
//! however the stream is cut, spans that tile the stream (see `tam_fuzz` for the layout).
//! Flag bit 6 turns argument streaming (`Param*` events) on, bit 5 reasoning sections
//! (`<think>`); every input is checked both ended normally (`finish`) and cut
//! (`finish_cut`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tam_fuzz::{Input, Tam, TamCut, check, tam};

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    let Tam(config) = tam(input.flags);
    let config = config
        .with_param_events(input.flags & 0x40 != 0)
        .with_reasoning_tags(input.flags & 0x20 != 0);
    check(Tam(config), &input);
    check(TamCut(config), &input);
});
