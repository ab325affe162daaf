//! Wire frames: see `telemetry::fuzz::wire_frame`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| telemetry::fuzz::wire_frame(data));
