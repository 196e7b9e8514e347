//! The proxy's messages request reader on arbitrary bodies, read and translated in both
//! protocols as `tam serve` does before asking the upstream: no panic, whatever the body;
//! a refused body is a 4xx (a client's mistake) in the API's error shape, never a 5xx.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    if let Err(status) = tam_proxy::fuzzing::read_request("messages", body) {
        assert!((400..500).contains(&status), "a body refused with {status}");
    }
});
