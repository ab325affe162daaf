//! Any bytes as an OTLP export request: see `otlp::fuzz::otlp_decode`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    otlp::fuzz::otlp_decode(data);
});
