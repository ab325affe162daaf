//! Any bytes as the journal of open chunks: see `loom::fuzz::open_journal`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    loom::fuzz::open_journal(dir.path(), data).expect("temp dir usable");
});
