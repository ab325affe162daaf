//! Recording files: a header followed by zstd-compressed batches.
//!
//! Layout (all integers little endian):
//!
//! **File header**
//!
//! | size | field |
//! | --- | --- |
//! | 8 | magic `b"LOOMREC\0"` |
//! | 2 | version, currently 1 |
//! | 2 | flags: bit 0 = synthetic (generated, not captured live); others 0 |
//! | 4 | length `n` of the text part (at most [`MAX_HEADER_TEXT`]) |
//! | n | text part: three strings `workload`, `phase`, `description`, each a `u16` length then UTF-8 bytes, filling exactly `n` bytes |
//! | 4 | CRC32C of everything above |
//!
//! **Batch block**, repeated until end of file
//!
//! | size | field |
//! | --- | --- |
//! | 4 | magic `b"BTCH"` |
//! | 8 | arrival time, µs since recording start |
//! | 4 | record count |
//! | 4 | raw (uncompressed) payload length |
//! | 4 | compressed length `c` |
//! | 4 | CRC32C of the 24 bytes above followed by the compressed bytes |
//! | c | zstd frame holding the payload (see [`crate::batch`]) |
//!
//! The file ends cleanly at a block boundary. A file cut inside a block gives
//! [`RecordingError::Truncated`]; bad magic, checksums, sizes beyond the
//! reader's bounds or undecodable payloads give their own variants. The
//! reader never panics and stops after the first error.

use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::Path;

use crate::batch::{decode_payload_into, Batch, MIN_TAGGED_RECORD_LEN};
use crate::RecordingError;

/// File magic.
pub const RECORDING_MAGIC: [u8; 8] = *b"LOOMREC\0";
/// Recording format version written and accepted.
pub const RECORDING_VERSION: u16 = 1;
/// Batch block magic.
pub const BATCH_MAGIC: [u8; 4] = *b"BTCH";
/// Largest accepted header text part in bytes.
pub const MAX_HEADER_TEXT: usize = 64 * 1024;
/// Largest accepted raw batch payload in bytes (64 MiB).
pub const MAX_BATCH_RAW: usize = 64 << 20;
/// Default zstd compression level for written batches.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

const FLAG_SYNTHETIC: u16 = 1;
const BLOCK_HEADER_LEN: usize = 28;

/// What a recording holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordingHeader {
    /// Workload name, e.g. `rocksdb`.
    pub workload: String,
    /// Phase name, e.g. `p1`.
    pub phase: String,
    /// True when the data was generated rather than captured from a live run.
    pub synthetic: bool,
    /// Free text: how the recording was made (generator parameters, host, ...).
    pub description: String,
}

impl std::fmt::Display for RecordingHeader {
    /// `workload <w> phase <p> (SYNTHETIC|captured live)`: the line every tool
    /// prints so a synthetic recording is never mistaken for a live one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let origin = if self.synthetic {
            "SYNTHETIC"
        } else {
            "captured live"
        };
        write!(
            f,
            "workload {} phase {} ({origin})",
            self.workload, self.phase
        )
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> RecordingError {
    let context = context.into();
    move |source| RecordingError::Io { context, source }
}

fn put_str(out: &mut Vec<u8>, s: &str) -> Result<(), RecordingError> {
    let len = u16::try_from(s.len())
        .map_err(|_| RecordingError::BadHeader(format!("header string of {} bytes", s.len())))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn encode_header(h: &RecordingHeader) -> Result<Vec<u8>, RecordingError> {
    let mut text = Vec::new();
    put_str(&mut text, &h.workload)?;
    put_str(&mut text, &h.phase)?;
    put_str(&mut text, &h.description)?;
    if text.len() > MAX_HEADER_TEXT {
        return Err(RecordingError::BadHeader(format!(
            "header text of {} bytes exceeds {MAX_HEADER_TEXT}",
            text.len()
        )));
    }
    let mut out = Vec::with_capacity(20 + text.len());
    out.extend_from_slice(&RECORDING_MAGIC);
    out.extend_from_slice(&RECORDING_VERSION.to_le_bytes());
    let flags = if h.synthetic { FLAG_SYNTHETIC } else { 0 };
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&text);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Writes a recording file.
pub struct RecordingWriter<W: Write> {
    inner: W,
    level: i32,
    payload: Vec<u8>,
    batches: u64,
    records: u64,
}

impl RecordingWriter<BufWriter<File>> {
    /// Creates (truncates) the file at `path` and writes the header.
    pub fn create(path: &Path, header: &RecordingHeader) -> Result<Self, RecordingError> {
        let f = File::create(path).map_err(io_err(format!("creating {}", path.display())))?;
        RecordingWriter::new(BufWriter::new(f), header)
    }
}

impl<W: Write> RecordingWriter<W> {
    /// Writes the header to `inner` and returns a writer for batches.
    pub fn new(mut inner: W, header: &RecordingHeader) -> Result<Self, RecordingError> {
        let bytes = encode_header(header)?;
        inner
            .write_all(&bytes)
            .map_err(io_err("writing the recording header"))?;
        Ok(RecordingWriter {
            inner,
            level: DEFAULT_ZSTD_LEVEL,
            payload: Vec::new(),
            batches: 0,
            records: 0,
        })
    }

    /// Sets the zstd level for subsequent batches.
    pub fn set_level(&mut self, level: i32) {
        self.level = level;
    }

    /// Compresses and appends one batch.
    pub fn write_batch(&mut self, batch: &Batch) -> Result<(), RecordingError> {
        self.payload.clear();
        batch.encode_payload_into(&mut self.payload);
        if self.payload.len() > MAX_BATCH_RAW {
            return Err(RecordingError::WriteTooLarge(self.payload.len()));
        }
        let compressed = zstd::bulk::compress(&self.payload, self.level)
            .map_err(io_err(format!("compressing batch {}", self.batches)))?;
        let mut h = [0u8; BLOCK_HEADER_LEN];
        h[0..4].copy_from_slice(&BATCH_MAGIC);
        h[4..12].copy_from_slice(&batch.arrival_us.to_le_bytes());
        h[12..16].copy_from_slice(&(batch.records.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        h[20..24].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&h[0..24]), &compressed);
        h[24..28].copy_from_slice(&crc.to_le_bytes());
        let ctx = || format!("writing batch {}", self.batches);
        self.inner.write_all(&h).map_err(io_err(ctx()))?;
        self.inner.write_all(&compressed).map_err(io_err(ctx()))?;
        self.batches += 1;
        self.records += batch.records.len() as u64;
        Ok(())
    }

    /// Batches written so far.
    pub fn batches_written(&self) -> u64 {
        self.batches
    }

    /// Records written so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> Result<W, RecordingError> {
        self.inner
            .flush()
            .map_err(io_err("flushing the recording"))?;
        Ok(self.inner)
    }
}

/// Reads until `buf` is full; returns bytes read (short only at end of file).
fn read_full<R: Read>(r: &mut R, buf: &mut [u8], ctx: &str) -> Result<usize, RecordingError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(ctx.to_string())(e)),
        }
    }
    Ok(got)
}

struct Cursor<'a> {
    b: &'a [u8],
    off: usize,
}

impl Cursor<'_> {
    fn string(&mut self, name: &str) -> Result<String, RecordingError> {
        let len = self
            .b
            .get(self.off..self.off + 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]) as usize)
            .ok_or_else(|| RecordingError::BadHeader(format!("{name} length missing")))?;
        self.off += 2;
        let bytes = self
            .b
            .get(self.off..self.off + len)
            .ok_or_else(|| RecordingError::BadHeader(format!("{name} overruns the header")))?;
        self.off += len;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| RecordingError::BadHeader(format!("{name} is not UTF-8")))
    }
}

/// Reads a recording file batch by batch (an iterator of `Result<Batch>`).
pub struct RecordingReader<R: Read> {
    inner: R,
    header: RecordingHeader,
    offset: u64,
    index: u64,
    done: bool,
    compressed: Vec<u8>,
}

impl RecordingReader<BufReader<File>> {
    /// Opens the file at `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, RecordingError> {
        let f = File::open(path).map_err(io_err(format!("opening {}", path.display())))?;
        RecordingReader::new(BufReader::with_capacity(1 << 20, f))
    }
}

impl<R: Read> RecordingReader<R> {
    /// Reads and validates the header from `inner`.
    pub fn new(mut inner: R) -> Result<Self, RecordingError> {
        let mut fixed = [0u8; 16];
        let got = read_full(&mut inner, &mut fixed, "reading the recording header")?;
        if got >= 8 && fixed[0..8] != RECORDING_MAGIC {
            return Err(RecordingError::BadMagic {
                found: fixed[0..8].to_vec(),
            });
        }
        if got < 16 {
            return Err(RecordingError::Truncated {
                what: "header".into(),
                offset: 0,
            });
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != RECORDING_VERSION {
            return Err(RecordingError::UnsupportedVersion {
                found: version,
                supported: RECORDING_VERSION,
            });
        }
        let flags = u16::from_le_bytes([fixed[10], fixed[11]]);
        if flags & !FLAG_SYNTHETIC != 0 {
            return Err(RecordingError::BadHeader(format!(
                "unknown flags {flags:#06x}"
            )));
        }
        let text_len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]) as usize;
        if text_len > MAX_HEADER_TEXT {
            return Err(RecordingError::BadHeader(format!(
                "header text of {text_len} bytes exceeds {MAX_HEADER_TEXT}"
            )));
        }
        let mut rest = vec![0u8; text_len + 4];
        let got = read_full(&mut inner, &mut rest, "reading the recording header")?;
        if got < rest.len() {
            return Err(RecordingError::Truncated {
                what: "header".into(),
                offset: 0,
            });
        }
        let stored = u32::from_le_bytes([
            rest[text_len],
            rest[text_len + 1],
            rest[text_len + 2],
            rest[text_len + 3],
        ]);
        let computed = crc32c::crc32c_append(crc32c::crc32c(&fixed), &rest[..text_len]);
        if stored != computed {
            return Err(RecordingError::HeaderChecksum);
        }
        let mut c = Cursor {
            b: &rest[..text_len],
            off: 0,
        };
        let workload = c.string("workload")?;
        let phase = c.string("phase")?;
        let description = c.string("description")?;
        if c.off != text_len {
            return Err(RecordingError::BadHeader(format!(
                "{} unused bytes in the header text",
                text_len - c.off
            )));
        }
        Ok(RecordingReader {
            inner,
            header: RecordingHeader {
                workload,
                phase,
                synthetic: flags & FLAG_SYNTHETIC != 0,
                description,
            },
            offset: (16 + text_len + 4) as u64,
            index: 0,
            done: false,
            compressed: Vec::new(),
        })
    }

    /// The file's header.
    pub fn header(&self) -> &RecordingHeader {
        &self.header
    }

    /// Reads the next batch into `out`; `Ok(false)` at a clean end of file.
    pub fn read_into(&mut self, out: &mut Batch) -> Result<bool, RecordingError> {
        if self.done {
            return Ok(false);
        }
        let r = self.read_block(out);
        if !matches!(r, Ok(true)) {
            self.done = true;
        }
        r
    }

    fn read_block(&mut self, out: &mut Batch) -> Result<bool, RecordingError> {
        let index = self.index;
        let offset = self.offset;
        let mut h = [0u8; BLOCK_HEADER_LEN];
        let ctx = format!("reading batch {index}");
        let got = read_full(&mut self.inner, &mut h, &ctx)?;
        if got == 0 {
            return Ok(false);
        }
        if got < BLOCK_HEADER_LEN {
            return Err(RecordingError::Truncated {
                what: format!("batch {index} header"),
                offset,
            });
        }
        if h[0..4] != BATCH_MAGIC {
            return Err(RecordingError::BadBatchMagic { index, offset });
        }
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&h[4..12]);
        let arrival_us = u64::from_le_bytes(ts);
        let count = u32_at(12);
        let raw_len = u32_at(16) as usize;
        let comp_len = u32_at(20) as usize;
        let stored = u32_at(24);
        if raw_len > MAX_BATCH_RAW {
            return Err(RecordingError::BatchTooLarge {
                index,
                what: "raw length",
                len: raw_len as u64,
                max: MAX_BATCH_RAW as u64,
            });
        }
        let max_comp = zstd::zstd_safe::compress_bound(raw_len) + 64;
        if comp_len > max_comp {
            return Err(RecordingError::BatchTooLarge {
                index,
                what: "compressed length",
                len: comp_len as u64,
                max: max_comp as u64,
            });
        }
        self.compressed.resize(comp_len, 0);
        let got = read_full(&mut self.inner, &mut self.compressed, &ctx)?;
        if got < comp_len {
            return Err(RecordingError::Truncated {
                what: format!("batch {index} data"),
                offset,
            });
        }
        let computed = crc32c::crc32c_append(crc32c::crc32c(&h[0..24]), &self.compressed);
        if computed != stored {
            return Err(RecordingError::BatchChecksum { index, offset });
        }
        if (count as usize).saturating_mul(MIN_TAGGED_RECORD_LEN) > raw_len {
            return Err(RecordingError::Payload {
                index,
                source: crate::DecodeError::CountTooLarge {
                    declared: count,
                    payload_len: raw_len,
                },
            });
        }
        let raw = zstd::bulk::decompress(&self.compressed, raw_len).map_err(|e| {
            RecordingError::Decompress {
                index,
                reason: e.to_string(),
            }
        })?;
        if raw.len() != raw_len {
            return Err(RecordingError::Decompress {
                index,
                reason: format!("got {} bytes, header says {raw_len}", raw.len()),
            });
        }
        out.arrival_us = arrival_us;
        decode_payload_into(&raw, count, &mut out.records)
            .map_err(|source| RecordingError::Payload { index, source })?;
        self.index += 1;
        self.offset += (BLOCK_HEADER_LEN + comp_len) as u64;
        Ok(true)
    }
}

impl<R: Read> Iterator for RecordingReader<R> {
    type Item = Result<Batch, RecordingError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut b = Batch::default();
        match self.read_into(&mut b) {
            Ok(true) => Some(Ok(b)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
