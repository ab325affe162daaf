//! Byte-level mutations of valid samples (bit flips, interesting values,
//! length-field edits, truncations, splices, inserted, deleted and repeated
//! ranges) and, per format, re-sealing of checksums so a mutated input is
//! not just rejected at the first CRC check but reaches the decoders behind
//! it.

use replay::SplitMix64;

/// Values that sit on boundaries of lengths and counts.
const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    7,
    8,
    0x7f,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    u64::MAX,
];

/// Applies one to four random mutations to `data`; `other` supplies bytes
/// for splices.
pub fn mutate(rng: &mut SplitMix64, data: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..1 + rng.index(4) {
        mutate_once(rng, data, other);
    }
}

fn mutate_once(rng: &mut SplitMix64, data: &mut Vec<u8>, other: &[u8]) {
    let len = data.len();
    match rng.index(10) {
        // Flip one bit.
        0 | 1 if len > 0 => {
            let i = rng.index(len);
            data[i] ^= 1 << rng.index(8);
        }
        // One byte to a random or boundary value.
        2 if len > 0 => {
            let i = rng.index(len);
            data[i] = if rng.one_in(2) {
                rng.next_u64() as u8
            } else {
                INTERESTING[rng.index(INTERESTING.len())] as u8
            };
        }
        // A 2-, 4- or 8-byte little-endian field (length, count, offset) set
        // to a boundary value or nudged by a little, at a 4-aligned offset
        // where the formats keep their fields, or anywhere.
        3 | 4 if len >= 2 => {
            let width = [2usize, 4, 8][rng.index(3)].min(len);
            let mut at = rng.index(len - width + 1);
            if rng.one_in(2) {
                at &= !3;
            }
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(&data[at..at + width]);
            let old = u64::from_le_bytes(word);
            let new = match rng.index(3) {
                0 => INTERESTING[rng.index(INTERESTING.len())],
                1 => old.wrapping_add(1 + rng.index(16) as u64),
                _ => old.wrapping_sub(1 + rng.index(16) as u64),
            };
            data[at..at + width].copy_from_slice(&new.to_le_bytes()[..width]);
        }
        // Cut the end off.
        5 => {
            let keep = rng.index(len + 1);
            data.truncate(keep);
        }
        // Splice a range of another sample in, overwriting or inserting.
        6 if !other.is_empty() => {
            let from = rng.index(other.len());
            let n = 1 + rng.index((other.len() - from).min(256));
            let piece = &other[from..from + n];
            let at = rng.index(len + 1);
            if rng.one_in(2) {
                data.splice(at..at, piece.iter().copied());
            } else {
                let end = (at + n).min(len);
                data.splice(at..end, piece.iter().copied());
            }
        }
        // Delete a range.
        7 if len > 0 => {
            let at = rng.index(len);
            let n = 1 + rng.index((len - at).min(64));
            data.drain(at..at + n);
        }
        // Insert random bytes.
        8 => {
            let at = rng.index(len + 1);
            let n = 1 + rng.index(32);
            let bytes = rng.bytes(n);
            data.splice(at..at, bytes);
        }
        // Repeat a range.
        _ if len > 0 => {
            let at = rng.index(len);
            let n = 1 + rng.index((len - at).min(128));
            let piece: Vec<u8> = data[at..at + n].to_vec();
            data.splice(at..at, piece);
        }
        _ => data.push(rng.next_u64() as u8),
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes the CRC of every wire frame found walking from the start (as
/// the reader does: header, declared payload length, next frame).
pub fn reseal_frames(b: &mut [u8]) {
    const HEADER: usize = telemetry::wire::FRAME_HEADER_LEN;
    let mut o = 0;
    while o + HEADER <= b.len() && b[o..o + 4] == telemetry::wire::FRAME_MAGIC {
        let Some(n) = u32_at(b, o + 12) else { return };
        let end = (o + HEADER).saturating_add(n as usize).min(b.len());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[o..o + 24]), &b[o + HEADER..end]);
        put_u32(b, o + 24, crc);
        o = end;
    }
}

/// Recomputes the header CRC and every batch block CRC of a recording file.
pub fn reseal_recording(b: &mut [u8]) {
    use telemetry::{BATCH_MAGIC, RECORDING_MAGIC};
    if b.len() < 16 || b[..8] != RECORDING_MAGIC {
        return;
    }
    let Some(n) = u32_at(b, 12) else { return };
    let Some(crc_at) = 16usize.checked_add(n as usize) else {
        return;
    };
    if crc_at + 4 > b.len() {
        return;
    }
    put_u32(b, crc_at, crc32c::crc32c(&b[..crc_at]));
    let mut o = crc_at + 4;
    while o + 28 <= b.len() && b[o..o + 4] == BATCH_MAGIC {
        let Some(c) = u32_at(b, o + 20) else { return };
        let end = (o + 28).saturating_add(c as usize).min(b.len());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[o..o + 24]), &b[o + 28..end]);
        put_u32(b, o + 24, crc);
        o = end;
    }
}

/// One recording batch block holding `payload` as its raw bytes (compressed
/// with zstd, checksummed): lets mutated payloads reach the recording
/// reader's payload decoder.
pub fn recording_block(arrival_us: u64, count: u32, payload: &[u8]) -> Vec<u8> {
    let compressed = zstd::bulk::compress(payload, 1).unwrap_or_default();
    let mut b = Vec::with_capacity(28 + compressed.len());
    b.extend_from_slice(&telemetry::BATCH_MAGIC);
    b.extend_from_slice(&arrival_us.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&compressed);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&b[..24]), &b[28..]);
    put_u32(&mut b, 24, crc);
    b
}

/// Recomputes the checksums of a segment file: the CRC of every frame of a
/// compressed (`LOOMSEG2`) segment, walking frames from the file header as
/// recovery does, or of every chunk found walking each block of an
/// uncompressed one (header, declared length, padded to 8 bytes).
pub fn reseal_segment(b: &mut [u8], block_size: usize) {
    if b.starts_with(b"LOOMSEG2") {
        let mut o = 16;
        while let Some(len) = reseal_frame(b, o) {
            o += (len + 7) & !7;
        }
        return;
    }
    const HEADER: usize = 48;
    let mut block = 0;
    while block < b.len() {
        let block_end = (block + block_size).min(b.len());
        let mut o = block;
        while o + HEADER <= block_end {
            let Some(len) = u32_at(b, o + 4) else { break };
            let len = len as usize;
            if u32_at(b, o) == Some(0) || len < HEADER || o + len > block_end {
                break;
            }
            let crc = crc32c::crc32c_append(crc32c::crc32c(&b[o..o + 44]), &b[o + HEADER..o + len]);
            put_u32(b, o + 44, crc);
            o += (len + 7) & !7;
        }
        block += block_size;
    }
}

/// Recomputes the CRC of the frame at `o` (bytes 0..64 and the body, stored
/// at 64); returns the frame's length, `None` when no whole frame is there.
fn reseal_frame(b: &mut [u8], o: usize) -> Option<usize> {
    const HEADER: usize = loom::fuzz::chunk_input::FRAME_HEADER;
    let body = u32_at(b, o + 4)? as usize;
    let len = HEADER.checked_add(body)?;
    if u32_at(b, o)? == 0 || o.checked_add(len)? > b.len() {
        return None;
    }
    let crc = crc32c::crc32c_append(crc32c::crc32c(&b[o..o + 64]), &b[o + HEADER..o + len]);
    put_u32(b, o + 64, crc);
    Some(len)
}

/// Re-seals a `decode_chunk` input holding a stored frame.
pub fn reseal_chunk(b: &mut [u8]) {
    if b.first() == Some(&loom::fuzz::chunk_input::FRAME) {
        reseal_frame(b, 1);
    }
}

#[cfg(test)]
mod tests {
    //! Re-sealing must make a damaged input pass the checksum, or the
    //! mutated inputs would all stop at the first CRC check.
    use super::*;
    use crate::samples;
    use telemetry::{RecordingError, RecordingReader, WireError};

    /// The first error reading `b` as a frame stream, if any.
    fn frame_error(b: &[u8]) -> Option<WireError> {
        let mut r = telemetry::wire::FrameReader::new(b);
        loop {
            match r.read_batch() {
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(e) => return Some(e),
            }
        }
    }

    #[test]
    fn resealed_frames_pass_the_checksum() {
        let mut rng = SplitMix64::new(1);
        for mut frames in samples::frames(&mut rng, 20).expect("samples") {
            let last = frames.len() - 1;
            frames[last] ^= 0x40;
            let broken = frame_error(&frames);
            assert!(
                matches!(broken, Some(WireError::ChecksumMismatch { .. })),
                "{broken:?}"
            );
            reseal_frames(&mut frames);
            let fixed = frame_error(&frames);
            assert!(
                !matches!(fixed, Some(WireError::ChecksumMismatch { .. })),
                "{fixed:?}"
            );
        }
    }

    #[test]
    fn resealed_recordings_pass_the_checksums() {
        let mut rng = SplitMix64::new(2);
        let is_crc = |e: &RecordingError| {
            matches!(
                e,
                RecordingError::HeaderChecksum | RecordingError::BatchChecksum { .. }
            )
        };
        let first_error = |b: &[u8]| match RecordingReader::new(b) {
            Err(e) => Some(e),
            Ok(r) => r.filter_map(Result::err).next(),
        };
        for mut rec in samples::recordings(&mut rng, 20).expect("samples") {
            // The header's text length byte, then the last byte of the file.
            for at in [16, rec.len() - 1] {
                rec[at] ^= 0x01;
                assert!(first_error(&rec).is_some_and(|e| is_crc(&e)), "byte {at}");
                reseal_recording(&mut rec);
                let e = first_error(&rec);
                assert!(!e.as_ref().is_some_and(is_crc), "byte {at}: {e:?}");
                rec[at] ^= 0x01;
                reseal_recording(&mut rec);
            }
        }
    }

    #[test]
    fn resealed_chunks_pass_the_frame_checksum() {
        for mut c in loom::fuzz::chunk_samples(5) {
            if c[0] != loom::fuzz::chunk_input::FRAME {
                continue;
            }
            // The body's first byte.
            c[1 + 72] ^= 0x10;
            let crc_at = 1 + 64;
            let before = c[crc_at..crc_at + 4].to_vec();
            reseal_chunk(&mut c);
            assert_ne!(
                c[crc_at..crc_at + 4],
                before[..],
                "the checksum was recomputed"
            );
            loom::fuzz::decode_chunk(&c);
        }
    }

    #[test]
    fn resealed_segments_pass_the_checksums() {
        let mut rng = SplitMix64::new(3);
        let block = loom::fuzz::segment_config().block_size;
        for mut seg in samples::segments(&mut rng, 6).expect("samples") {
            // A byte of the first frame's header (its first timestamp).
            seg[48] ^= 0x01;
            let report = |seg: &[u8]| {
                let dir = tempfile::tempdir().expect("temp dir");
                std::fs::write(dir.path().join(loom::fuzz::FIRST_SEGMENT), seg).expect("write");
                let (w, _r) = loom::open(dir.path(), loom::fuzz::segment_config()).expect("open");
                format!("{:?}", w.recovery())
            };
            let broken = report(&seg);
            assert!(broken.contains("checksum"), "{broken}");
            reseal_segment(&mut seg, block);
            let after = report(&seg);
            assert!(!after.contains("checksum"), "{after}");
        }
    }
}
