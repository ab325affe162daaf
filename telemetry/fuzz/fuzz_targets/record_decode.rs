//! Record payloads and index extractors: arbitrary bytes must never panic, and
//! decoded payloads must re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telemetry::batch::decode_payload;
use telemetry::{Batch, Kind};

fuzz_target!(|data: &[u8]| {
    let Some((&count, payload)) = data.split_first() else {
        return;
    };
    if let Ok(records) = decode_payload(payload, u32::from(count)) {
        let mut again = Vec::new();
        Batch::new(0, records).encode_payload_into(&mut again);
        assert_eq!(&again[..], payload);
    }
    for k in [Kind::KvOp, Kind::Syscall, Kind::PageCache, Kind::Packet] {
        let _ = (k.extractor())(payload);
    }
});
