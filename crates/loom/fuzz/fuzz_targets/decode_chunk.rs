//! Any bytes as one compressed chunk: see `loom::fuzz::decode_chunk`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loom::fuzz::decode_chunk(data));
