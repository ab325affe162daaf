//! Batch payloads and index extractors: see `telemetry::fuzz::record_decode`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| telemetry::fuzz::record_decode(data));
