//! Recording files: reading arbitrary bytes must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telemetry::RecordingReader;

fuzz_target!(|data: &[u8]| {
    if let Ok(reader) = RecordingReader::new(data) {
        for batch in reader {
            if batch.is_err() {
                break;
            }
        }
    }
});
