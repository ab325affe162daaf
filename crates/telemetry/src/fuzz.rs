//! Bodies of the fuzz targets for telemetry's decoders of outside bytes
//! (wire frames, recording files, batch payloads), shared by the cargo-fuzz
//! targets (`telemetry/fuzz/`, nightly) and the stable `fuzz-smoke` driver,
//! so both run the same checks. Built only with the `fuzz` feature.
//!
//! A body returns normally for any input; it panics only when a decoder
//! panics or breaks a property checked here, which is what a fuzzer reports.

use crate::batch::decode_payload;
use crate::wire::{
    control, decode_frame, encode_data_v2, encode_frame, parse_header, FrameReader, FrameType,
    Hello, Incoming, SeriesTags, Welcome, FRAME_VERSION_2,
};
use crate::{Batch, Kind, RecordingReader};

/// Largest payload the frame target accepts (1 MiB), so huge declared
/// lengths are refused instead of allocated.
pub const FRAME_MAX_PAYLOAD: usize = 1 << 20;

/// Wire frames of either version: decoding any bytes must not panic, a
/// decoded data frame must re-encode to exactly the bytes it was decoded
/// from, control payloads decode or fail cleanly, and reading the bytes as
/// a stream of frames must end (with an error or cleanly).
pub fn wire_frame(data: &[u8]) {
    if let Ok((batch, used)) = decode_frame(data, FRAME_MAX_PAYLOAD) {
        let mut again = Vec::new();
        let encoded = match parse_header(data, FRAME_MAX_PAYLOAD) {
            Ok(h) if h.version == FRAME_VERSION_2 => {
                let mut payload = Vec::new();
                batch.encode_payload_into(&mut payload);
                encode_data_v2(
                    h.seq,
                    h.series_ref,
                    h.record_count,
                    h.arrival_us,
                    &payload,
                    &mut again,
                )
            }
            _ => encode_frame(&batch, &mut again),
        };
        if let Err(e) = encoded {
            panic!("a decoded batch does not re-encode: {e}");
        }
        assert_eq!(&again[..], &data[..used], "frame re-encodes differently");
    }
    let mut any = FrameReader::with_max_payload(data, FRAME_MAX_PAYLOAD);
    let mut sink = Vec::new();
    while let Ok(Some(frame)) = any.read_frame_into(&mut sink) {
        if let Incoming::Control(h, p) = frame {
            let _ = match h.frame_type {
                FrameType::Hello => Hello::decode(&p).map(|_| ()),
                FrameType::Welcome => Welcome::decode(&p).map(|_| ()),
                FrameType::Refuse => control::decode_refusal(&p).map(|_| ()),
                FrameType::Series => SeriesTags::decode(&p).map(|_| ()),
                FrameType::Ack | FrameType::Data => Ok(()),
            };
        }
    }
    // Frames read in wire form (what endpoints push) get the same verdict
    // as decoded frames, and hold exactly the decoded records' encoding.
    let mut r = FrameReader::with_max_payload(data, FRAME_MAX_PAYLOAD);
    let mut raw = FrameReader::with_max_payload(data, FRAME_MAX_PAYLOAD);
    let mut payload = Vec::new();
    loop {
        payload.clear();
        match (r.read_batch(), raw.read_payload_into(&mut payload)) {
            (Ok(Some(b)), Ok(Some(_))) => {
                let mut want = Vec::new();
                b.encode_payload_into(&mut want);
                assert_eq!(
                    payload, want,
                    "wire-form payload differs from the decoded one"
                );
            }
            (Ok(None), Ok(None)) => break,
            (Err(_), Err(_)) => {
                assert!(payload.is_empty(), "a refused frame left bytes behind");
                break;
            }
            (a, b) => panic!(
                "decoding says {:?}, reading in wire form says {:?}",
                a.map(|b| b.map(|b| b.records.len())),
                b
            ),
        }
    }
}

/// Recording files: reading any bytes must not panic, and the reader stops
/// at its first error.
pub fn recording_file(data: &[u8]) {
    if let Ok(reader) = RecordingReader::new(data) {
        for batch in reader {
            if batch.is_err() {
                break;
            }
        }
    }
}

/// Batch payloads and index extractors: the first byte is the declared
/// record count, the rest the payload. Decoding must not panic, decoded
/// records must re-encode to the same payload, and every extractor must
/// accept any bytes.
pub fn record_decode(data: &[u8]) {
    let Some((&count, payload)) = data.split_first() else {
        return;
    };
    if let Ok(records) = decode_payload(payload, u32::from(count)) {
        let mut again = Vec::new();
        Batch::new(0, records).encode_payload_into(&mut again);
        assert_eq!(&again[..], payload, "payload re-encodes differently");
    }
    for k in [
        Kind::KvOp,
        Kind::Syscall,
        Kind::PageCache,
        Kind::Packet,
        Kind::BlockIo,
        Kind::RunQueue,
        Kind::AgentStat,
    ] {
        let _ = (k.extractor())(payload);
    }
}
