//! The proxy's request readers on arbitrary bodies: Chat Completions, Anthropic Messages
//! and OpenAI Responses, each read and translated in both protocols. No panic, whatever
//! the body; a refused body is a 4xx (a client's mistake), never a 5xx. The first byte
//! picks the API; the rest is the body (seeds: the real requests of Claude Code and Codex
//! CLI, and small valid ones).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|raw: &[u8]| {
    let Some((&pick, body)) = raw.split_first() else {
        return;
    };
    let api = match pick % 3 {
        0 => "chat",
        1 => "messages",
        _ => "responses",
    };
    if let Err(status) = tam_proxy::fuzzing::read_request(api, body) {
        assert!((400..500).contains(&status), "{api}: a body refused with {status}");
    }
});
