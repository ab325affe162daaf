//! Version-2 frames: data frames with a sequence number and series
//! reference, and control frames; 40-byte header.

use super::{FrameType, FRAME_HEADER_LEN_V2, FRAME_MAGIC, FRAME_VERSION_2, MAX_CONTROL_PAYLOAD};
use crate::WireError;

/// Appends a version-2 data frame holding `payload` (exactly
/// `record_count` tagged records, not checked here) with sequence number
/// `seq` and series reference `series_ref` (0: no added tags).
pub fn encode_data_v2(
    seq: u64,
    series_ref: u32,
    record_count: u32,
    sent_us: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    put_v2(
        out,
        FrameType::Data,
        (record_count, sent_us, seq, series_ref),
        payload,
    )
}

/// Appends a version-2 control frame of type `t` (not `Data`) with
/// `payload` (at most [`MAX_CONTROL_PAYLOAD`] bytes) and sequence field `seq`.
pub fn encode_control(
    t: FrameType,
    seq: u64,
    sent_us: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    if t == FrameType::Data || payload.len() > MAX_CONTROL_PAYLOAD {
        return Err(WireError::BadControl(format!(
            "cannot encode a {t:?} control frame of {} bytes",
            payload.len()
        )));
    }
    put_v2(out, t, (0, sent_us, seq, 0), payload)
}

fn put_v2(
    out: &mut Vec<u8>,
    t: FrameType,
    (count, time, seq, series_ref): (u32, u64, u64, u32),
    payload: &[u8],
) -> Result<(), WireError> {
    let len = u32::try_from(payload.len()).map_err(|_| WireError::PayloadTooLarge {
        len: payload.len() as u64,
        max: u64::from(u32::MAX),
    })?;
    let start = out.len();
    out.extend_from_slice(&FRAME_MAGIC);
    out.extend_from_slice(&FRAME_VERSION_2.to_le_bytes());
    out.extend_from_slice(&[t as u8, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&time.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&series_ref.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c_append(
        crc32c::crc32c(&out[start..start + FRAME_HEADER_LEN_V2 - 4]),
        &out[start + FRAME_HEADER_LEN_V2..],
    );
    out[start + FRAME_HEADER_LEN_V2 - 4..start + FRAME_HEADER_LEN_V2]
        .copy_from_slice(&crc.to_le_bytes());
    Ok(())
}
