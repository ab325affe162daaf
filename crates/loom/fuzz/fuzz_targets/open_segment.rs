//! Any bytes as a segment file: see `loom::fuzz::open_segment`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    loom::fuzz::open_segment(dir.path(), data).expect("temp dir usable");
});
