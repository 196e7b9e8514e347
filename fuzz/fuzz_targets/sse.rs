//! tam-model's SSE reader on arbitrary bytes cut at arbitrary points: no panic; the
//! same events (and errors) whether the stream is fed whole, at the input's split points or
//! byte by byte; memory held for an event stays within the bound whatever the input.
//! Flag bits 0–5 pick a small `max_event_bytes` (1–64; 0 keeps the 1 MiB default).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tam_fuzz::Input;
use tam_model::sse::{SseConfig, SseError, SseEvent, SseReader};

type Item = Result<SseEvent, SseError>;

fn read<'a>(config: SseConfig, chunks: impl Iterator<Item = &'a [u8]>) -> (Vec<Item>, Option<SseEvent>) {
    let mut reader = SseReader::new(config);
    let mut items = Vec::new();
    for chunk in chunks {
        reader.feed(chunk, |item| items.push(item));
        // Four buffers, each held to the limit (+1 for a data line's LF).
        assert!(
            reader.buffered_bytes() <= 4 * config.max_event_bytes + 1,
            "{} bytes held for a limit of {}",
            reader.buffered_bytes(),
            config.max_event_bytes
        );
    }
    (items, reader.finish())
}

fuzz_target!(|raw: &[u8]| {
    let input = Input::parse(raw);
    let limit = usize::from(input.flags & 0x3f);
    let config = if limit == 0 {
        SseConfig::default()
    } else {
        SseConfig::default().with_max_event_bytes(limit)
    };
    let stream = input.stream;
    let whole = read(config, std::iter::once(stream));
    let split = read(config, input.cuts.windows(2).map(|w| &stream[w[0]..w[1]]));
    assert_eq!(split, whole, "fed at the split points {:?}", input.cuts);
    if input.flags & tam_fuzz::FLAG_BYTE_BY_BYTE != 0 {
        let bytes = read(config, stream.chunks(1));
        assert_eq!(bytes, whole, "fed byte by byte");
    }
    for item in whole.0.iter().flatten() {
        // Each invalid byte reads as U+FFFD (3 bytes).
        let bound = config.max_event_bytes * if item.invalid_utf8 { 3 } else { 1 };
        assert!(item.data.len() <= bound, "an event over the limit was dispatched");
    }
});
