//! The log's entry format: building entries, reading a file's entries
//! back.

use otlp::{Encoding, Shaped, Signal};

use super::FileNo;

/// Marks the start of every entry of the first format (no file number).
pub(super) const MAGIC_V1: u32 = 0x4c4f_4931;
/// Marks the start of every entry of records.
pub(super) const MAGIC: u32 = 0x4c4f_4932;
/// Marks the start of every entry holding one raw OTLP request.
pub(super) const MAGIC_RAW: u32 = 0x4c4f_5231;
/// A raw request's header in its payload: signal, encoding, 6 zero
/// bytes, arrival time.
const RAW_HEADER: usize = 16;
/// Entry header of the first format: magic, payload length, CRC.
pub(super) const HEADER_V1: usize = 12;
/// Entry header: magic, payload length, CRC, file number.
pub(super) const HEADER: usize = 20;
/// Record header: series, time, length.
pub(super) const RECORD_HEADER: usize = 20;

/// What one entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Logged {
    /// Converted records (`/write`, and OTLP before raw requests).
    Records(Vec<Shaped>),
    /// One OTLP request as received, to decode and convert again.
    Request(RawRequest),
}

/// One OTLP request as received (decompressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRequest {
    /// What it exports.
    pub signal: Signal,
    /// How its body is encoded.
    pub encoding: Encoding,
    /// When it arrived (items without a time of their own take it).
    pub arrival_us: u64,
    /// The body.
    pub body: Vec<u8>,
}

fn signal_code(s: Signal) -> u8 {
    match s {
        Signal::Traces => 1,
        Signal::Logs => 2,
        Signal::Metrics => 3,
    }
}

fn encoding_code(e: Encoding) -> u8 {
    match e {
        Encoding::Protobuf => 1,
        Encoding::Json => 2,
    }
}

/// An entry of one raw request, its header space reserved.
pub(super) fn raw_entry(
    signal: Signal,
    encoding: Encoding,
    arrival_us: u64,
    body: &[u8],
) -> Vec<u8> {
    let mut e = Vec::with_capacity(HEADER + RAW_HEADER + body.len());
    e.resize(HEADER, 0);
    e.extend_from_slice(&[
        signal_code(signal),
        encoding_code(encoding),
        0,
        0,
        0,
        0,
        0,
        0,
    ]);
    e.extend_from_slice(&arrival_us.to_le_bytes());
    e.extend_from_slice(body);
    e
}

/// An entry of `records`, its header space reserved.
pub(super) fn records_entry(records: &[Shaped]) -> Vec<u8> {
    let len: usize = records.iter().map(|r| RECORD_HEADER + r.bytes.len()).sum();
    let mut e = Vec::with_capacity(HEADER + len);
    e.resize(HEADER, 0);
    for r in records {
        e.extend_from_slice(&r.source.to_le_bytes());
        e.extend_from_slice(&r.time_us.to_le_bytes());
        e.extend_from_slice(&(r.bytes.len() as u32).to_le_bytes());
        e.extend_from_slice(&r.bytes);
    }
    e
}

/// Fills the header of `entry` (its first [`HEADER`] bytes reserved, the
/// payload after them) for file `file`: the CRC covers the file number and
/// the payload, so an entry never passes for another file's.
pub(super) fn seal(entry: &mut [u8], magic: u32, file: FileNo) {
    let payload_len = (entry.len() - HEADER) as u32;
    let number = file.to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&number), &entry[HEADER..]);
    entry[0..4].copy_from_slice(&magic.to_le_bytes());
    entry[4..8].copy_from_slice(&payload_len.to_le_bytes());
    entry[8..12].copy_from_slice(&crc.to_le_bytes());
    entry[12..20].copy_from_slice(&number);
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// How reading a file ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum End {
    /// At its end, or at entries of an earlier life of a recycled file.
    Clean,
    /// At a torn or corrupt entry (everything after it is not read).
    Torn,
}

/// Where the entry at `at` of file `file` ends, with its payload; `None`
/// when reading stops there.
fn entry_at(bytes: &[u8], at: usize, file: FileNo) -> Result<(usize, u32, &[u8]), End> {
    let (Some(magic), Some(len), Some(crc)) = (
        u32_at(bytes, at),
        u32_at(bytes, at + 4),
        u32_at(bytes, at + 8),
    ) else {
        return Err(End::Torn);
    };
    let len = len as usize;
    match magic {
        MAGIC_V1 => {
            let payload = bytes
                .get(at + HEADER_V1..at + HEADER_V1 + len)
                .ok_or(End::Torn)?;
            if crc32c::crc32c(payload) != crc {
                return Err(End::Torn);
            }
            Ok((at + HEADER_V1 + len, magic, payload))
        }
        MAGIC | MAGIC_RAW => {
            let number = u64_at(bytes, at + 12).ok_or(End::Torn)?;
            if number != file {
                // An entry of the file's earlier life: the end of this one.
                return Err(End::Clean);
            }
            let payload = bytes.get(at + HEADER..at + HEADER + len).ok_or(End::Torn)?;
            if crc32c::crc32c_append(crc32c::crc32c(&number.to_le_bytes()), payload) != crc {
                return Err(End::Torn);
            }
            Ok((at + HEADER + len, magic, payload))
        }
        // Zeros or an earlier life's bytes past a recycled file's entries.
        _ if at > 0 || magic == 0 => Err(End::Clean),
        _ => Err(End::Torn),
    }
}

/// The records of a payload of records; `None` when it does not parse.
fn records(payload: &[u8]) -> Option<Vec<Shaped>> {
    let mut out = Vec::new();
    let mut p = 0;
    while p < payload.len() {
        let source = u64_at(payload, p)?;
        let time_us = u64_at(payload, p + 8)?;
        let n = u32_at(payload, p + 16)? as usize;
        let bytes = payload.get(p + RECORD_HEADER..p + RECORD_HEADER + n)?;
        out.push(Shaped {
            source,
            time_us,
            bytes: bytes.to_vec(),
        });
        p += RECORD_HEADER + n;
    }
    Some(out)
}

/// The raw request of a payload; `None` when it does not parse.
fn request(payload: &[u8]) -> Option<RawRequest> {
    let signal = match payload.first()? {
        1 => Signal::Traces,
        2 => Signal::Logs,
        3 => Signal::Metrics,
        _ => return None,
    };
    let encoding = match payload.get(1)? {
        1 => Encoding::Protobuf,
        2 => Encoding::Json,
        _ => return None,
    };
    Some(RawRequest {
        signal,
        encoding,
        arrival_us: u64_at(payload, 8)?,
        body: payload.get(RAW_HEADER..)?.to_vec(),
    })
}

/// File `file`'s valid entries, and how reading ended.
pub(super) fn read_file(bytes: &[u8], file: FileNo, out: &mut Vec<Logged>) -> End {
    let mut at = 0;
    while at < bytes.len() {
        let (next, magic, payload) = match entry_at(bytes, at, file) {
            Ok(e) => e,
            Err(end) => return end,
        };
        let got = if magic == MAGIC_RAW {
            request(payload).map(Logged::Request)
        } else {
            records(payload).map(Logged::Records)
        };
        match got {
            Some(l) => out.push(l),
            // A valid CRC over a payload we cannot parse: written by
            // something else; keep nothing of the entry.
            None => return End::Torn,
        }
        at = next;
    }
    End::Clean
}
