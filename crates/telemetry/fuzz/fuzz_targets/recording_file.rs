//! Recording files: see `telemetry::fuzz::recording_file`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| telemetry::fuzz::recording_file(data));
