//! Bodies of the fuzz targets for the engine's decoders of outside bytes,
//! shared by the cargo-fuzz targets (`loom/fuzz/`, nightly) and the stable
//! `fuzz-smoke` driver, so both run the same checks. Built only with the
//! `fuzz` feature.
//!
//! A body returns normally for any input; it panics only when the engine
//! panics or breaks a property checked here, which is what a fuzzer reports.

use std::io;
use std::path::Path;

use crate::{Config, FlushMode, IndexMode, RangeIndexSpec};

/// File name of the first segment, the one `open_segment` writes.
pub const FIRST_SEGMENT: &str = "segment-00000000.log";

/// The small layout the segment target opens stores with: 512-byte chunks,
/// 8 KiB blocks, 32 KiB segments, so a short input spans several blocks.
pub fn segment_config() -> Config {
    Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Buffered,
        sync_data: false,
        ..Config::default()
    }
}

/// Index value of the fuzzed stores: the first 8 bytes of a record, 0 if
/// shorter.
pub fn first_u64(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |h| u64::from_le_bytes(*h))
}

/// Any bytes as the first segment file of a store in `dir` (which must be
/// empty): opening the store with [`segment_config`], declaring every
/// recovered source with a range index and querying it must return results
/// or errors, never panic; a full scan reports as many records as it visits,
/// and no more than the source holds. Leaves `dir` empty again. Errors are
/// only those of preparing or clearing `dir`.
pub fn open_segment(dir: &Path, data: &[u8]) -> io::Result<()> {
    std::fs::write(dir.join(FIRST_SEGMENT), data)?;
    if let Ok((mut w, r)) = crate::open(dir, segment_config()) {
        let spec = RangeIndexSpec {
            extractor: first_u64,
            min: 0,
            interval: 64,
            n_bins: 16,
        };
        for id in r.sources() {
            let _ = w.declare_source(id, Some(spec));
            let mut visited = 0u64;
            if let Ok(stats) = r.scan(id, 0, u64::MAX, |_, _| visited += 1) {
                assert_eq!(stats.records_scanned, visited, "scan of {id:?}");
                let held = r.snapshot().record_count(id);
                assert!(visited <= held, "{id:?}: scanned {visited} of {held}");
            }
            let _ = r.percentile(id, 0, u64::MAX, 0.99);
            let _ = r.count_matching(id, 0, u64::MAX, 10, 500, IndexMode::NoIndex);
            let _ = r.count_matching(id, 0, u64::MAX, 10, 500, IndexMode::TimeRange);
        }
        let _ = w.close();
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Largest chunk the `decode_chunk` target accepts (1 MiB).
pub const DECODE_MAX_CHUNK: usize = 1 << 20;

/// `decode_chunk` input kinds (the first byte).
pub mod chunk_input {
    /// The rest is a frame as stored on disk (header and zstd body).
    pub const FRAME: u8 = 0;
    /// The rest is a frame header followed by the uncompressed columns,
    /// which the body compresses before decoding: mutations then reach
    /// the column decoder instead of stopping in zstd.
    pub const COLUMNS: u8 = 1;
    /// Bytes of a frame header.
    pub const FRAME_HEADER: usize = crate::storage::frame::FRAME_HEADER;
}

/// Any bytes as one compressed chunk (see [`chunk_input`]): decoding
/// returns an error or exactly the chunk its header declares (its length,
/// `count` records with timestamps in `[first_ts, last_ts]`), never panics
/// or loops, and allocates no more than a small multiple of the declared
/// chunk length (at most [`DECODE_MAX_CHUNK`]).
pub fn decode_chunk(input: &[u8]) {
    use crate::log::chunk::HEADER_LEN;
    use crate::log::codec::{self, Codec};
    use crate::log::record::RecordIter;
    use crate::storage::frame::{FrameHeader, FRAME_HEADER};

    let Some((&kind, rest)) = input.split_first() else {
        return;
    };
    let Ok(Some(h)) = FrameHeader::read(rest, DECODE_MAX_CHUNK) else {
        return;
    };
    let payload_len = h.chunk.len as usize - HEADER_LEN;
    let decoded = match kind {
        chunk_input::FRAME => {
            if h.verify(rest).is_err() {
                return;
            }
            h.decode(rest).map(|chunk| chunk[HEADER_LEN..].to_vec())
        }
        chunk_input::COLUMNS => {
            let cols = &rest[FRAME_HEADER.min(rest.len())..];
            let Ok(body) = zstd::bulk::compress(cols, 1) else {
                return;
            };
            codec::decode(Codec::Columns, &body, payload_len, h.chunk.count)
        }
        _ => return,
    };
    let Ok(payload) = decoded else { return };
    assert_eq!(payload.len(), payload_len, "decoded payload length");
    let mut n = 0u32;
    for rec in RecordIter::new(&payload, h.chunk.first_ts, h.chunk.count) {
        let Ok((ts, _)) = rec else { return };
        if kind == chunk_input::FRAME {
            // The chunk checksum passed: the records are those written.
            assert!(
                ts >= h.chunk.first_ts && ts <= h.chunk.last_ts,
                "timestamp {ts} outside the header's span"
            );
        }
        n += 1;
    }
    assert_eq!(n, h.chunk.count, "records decoded");
}

/// Valid `decode_chunk` inputs made by the real encoder: chunks of
/// telemetry-like, repeated, random and variable-length records, each as a
/// stored frame and as header plus columns.
pub fn chunk_samples(seed: u64) -> Vec<Vec<u8>> {
    use crate::log::chunk::{ChunkHeader, HEADER_LEN, NO_CHUNK};
    use crate::log::codec::Encoder;
    use crate::log::record::encode;
    use crate::storage::frame::FrameHeader;

    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    let mut enc = Encoder::new(Some(3));
    for shape in 0..8u64 {
        let n = [1u64, 2, 17, 300][(shape % 4) as usize];
        let mut recs = Vec::new();
        let mut ts = next() % (1 << 40);
        for i in 0..n {
            ts += next() % [1, 5, 1000, 1 << 20][(shape / 2 % 4) as usize];
            let len = if shape % 2 == 0 {
                24
            } else {
                (next() % 40) as usize
            };
            let rec: Vec<u8> = (0..len)
                .map(|k| {
                    if shape < 4 {
                        (i as usize * 3 + k) as u8
                    } else {
                        next() as u8
                    }
                })
                .collect();
            recs.push((ts, rec));
        }
        let first = recs[0].0;
        let mut payload = vec![0u8; recs.iter().map(|r| r.1.len() + 20).sum()];
        let (mut len, mut prev) = (0, first);
        for (t, r) in &recs {
            len += encode(&mut payload[len..], t - prev, r);
            prev = *t;
        }
        payload.truncate(len);
        let mut chunk = ChunkHeader {
            len: (HEADER_LEN + len) as u32,
            source: shape,
            prev: NO_CHUNK,
            first_ts: first,
            last_ts: prev,
            count: n as u32,
            crc: 0,
        };
        let mut head = [0u8; HEADER_LEN];
        chunk.crc = chunk.write(&mut head, &payload);
        let mut body = Vec::new();
        let codec = enc.encode(&payload, first, n as u32, &mut body);
        let mut frame = vec![chunk_input::FRAME];
        FrameHeader::append(&mut frame, 4096 * shape, &chunk, codec, &body);
        out.push(frame);
        if let Ok(cols) = zstd::bulk::decompress(&body, len) {
            if codec == crate::log::codec::Codec::Columns {
                let mut c = vec![chunk_input::COLUMNS];
                FrameHeader::append(&mut c, 4096 * shape, &chunk, codec, &[]);
                c.truncate(1 + chunk_input::FRAME_HEADER);
                c.extend_from_slice(&cols);
                out.push(c);
            }
        }
    }
    out
}

/// File name of the journal of open chunks that `open_journal` writes.
pub const FIRST_JOURNAL: &str = "open-chunks-1.log";

/// Any bytes as the journal of open chunks of an empty store in `dir`
/// (which must be empty): opening the store puts back what the journal's
/// valid entries hold and answers every question on it with results or
/// errors, never a panic; a full scan of a source visits exactly the
/// records it holds; a clean close leaves no journal, and a reopen holds
/// the same records. Leaves `dir` empty again. Errors are only those of
/// preparing or clearing `dir`.
pub fn open_journal(dir: &Path, data: &[u8]) -> io::Result<()> {
    std::fs::write(dir.join(FIRST_JOURNAL), data)?;
    let mut held = Vec::new();
    if let Ok((mut w, r)) = crate::open(dir, segment_config()) {
        let spec = RangeIndexSpec {
            extractor: first_u64,
            min: 0,
            interval: 64,
            n_bins: 16,
        };
        for id in r.sources() {
            let _ = w.declare_source(id, Some(spec));
            let mut visited = 0u64;
            let n = r.snapshot().record_count(id);
            if let Ok(stats) = r.scan(id, 0, u64::MAX, |_, _| visited += 1) {
                assert_eq!(stats.records_scanned, visited, "scan of {id:?}");
                assert_eq!(visited, n, "{id:?}: scanned {visited} of {n}");
            }
            let _ = r.percentile(id, 0, u64::MAX, 0.99);
            held.push((id, n));
        }
        if w.close().is_ok() {
            let journals = std::fs::read_dir(dir)?
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("open-chunks-"))
                .count();
            assert_eq!(journals, 0, "a clean close leaves no journal");
            if let Ok((w, r)) = crate::open(dir, segment_config()) {
                for &(id, n) in &held {
                    assert_eq!(r.snapshot().record_count(id), n, "{id:?} after reopen");
                }
                let _ = w.close();
            }
        }
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Recomputes the checksum of every entry of a journal whose framing
/// (magic, length) still holds, so mutations reach what lies behind it.
pub fn reseal_journal(bytes: &mut [u8]) {
    crate::storage::open_chunks::reseal(bytes);
}
