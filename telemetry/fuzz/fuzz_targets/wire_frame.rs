//! Wire frames: decoding arbitrary bytes must never panic, and anything that
//! decodes must re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telemetry::wire::{decode_frame, encode_frame, FrameReader};

fuzz_target!(|data: &[u8]| {
    if let Ok((batch, used)) = decode_frame(data, 1 << 20) {
        let mut again = Vec::new();
        encode_frame(&batch, &mut again).expect("a decoded batch re-encodes");
        assert_eq!(&again[..], &data[..used]);
    }
    let mut r = FrameReader::with_max_payload(data, 1 << 20);
    while let Ok(Some(_)) = r.read_batch() {}
});
