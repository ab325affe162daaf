//! The log's entry format: writing an entry's header, reading a file's
//! entries back.

use otlp::Shaped;

use super::FileNo;

/// Marks the start of every entry of the first format (no file number).
pub(super) const MAGIC_V1: u32 = 0x4c4f_4931;
/// Marks the start of every entry.
pub(super) const MAGIC: u32 = 0x4c4f_4932;
/// Entry header of the first format: magic, payload length, CRC.
pub(super) const HEADER_V1: usize = 12;
/// Entry header: magic, payload length, CRC, file number.
pub(super) const HEADER: usize = 20;
/// Record header: series, time, length.
pub(super) const RECORD_HEADER: usize = 20;

/// Fills the header of `entry` (its first [`HEADER`] bytes reserved, the
/// payload after them) for file `file`: the CRC covers the file number and
/// the payload, so an entry never passes for another file's.
pub(super) fn seal(entry: &mut [u8], file: FileNo) {
    let payload_len = (entry.len() - HEADER) as u32;
    let number = file.to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&number), &entry[HEADER..]);
    entry[0..4].copy_from_slice(&MAGIC.to_le_bytes());
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
fn entry_at(bytes: &[u8], at: usize, file: FileNo) -> Result<(usize, &[u8]), End> {
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
            Ok((at + HEADER_V1 + len, payload))
        }
        MAGIC => {
            let number = u64_at(bytes, at + 12).ok_or(End::Torn)?;
            if number != file {
                // An entry of the file's earlier life: the end of this one.
                return Err(End::Clean);
            }
            let payload = bytes.get(at + HEADER..at + HEADER + len).ok_or(End::Torn)?;
            if crc32c::crc32c_append(crc32c::crc32c(&number.to_le_bytes()), payload) != crc {
                return Err(End::Torn);
            }
            Ok((at + HEADER + len, payload))
        }
        // Zeros or an earlier life's bytes past a recycled file's entries.
        _ if at > 0 || magic == 0 => Err(End::Clean),
        _ => Err(End::Torn),
    }
}

/// The records of file `file`'s valid entries, and how reading ended.
pub(super) fn read_file(bytes: &[u8], file: FileNo, out: &mut Vec<Shaped>) -> End {
    let mut at = 0;
    while at < bytes.len() {
        let (next, payload) = match entry_at(bytes, at, file) {
            Ok(e) => e,
            Err(end) => return end,
        };
        let mut p = 0;
        let before = out.len();
        while p < payload.len() {
            let rec = (|| {
                let source = u64_at(payload, p)?;
                let time_us = u64_at(payload, p + 8)?;
                let n = u32_at(payload, p + 16)? as usize;
                let bytes = payload.get(p + RECORD_HEADER..p + RECORD_HEADER + n)?;
                Some((
                    n,
                    Shaped {
                        source,
                        time_us,
                        bytes: bytes.to_vec(),
                    },
                ))
            })();
            match rec {
                Some((n, r)) => {
                    out.push(r);
                    p += RECORD_HEADER + n;
                }
                None => {
                    // A valid CRC over a payload we cannot parse: written by
                    // something else; keep nothing of the entry.
                    out.truncate(before);
                    return End::Torn;
                }
            }
        }
        at = next;
    }
    End::Clean
}
