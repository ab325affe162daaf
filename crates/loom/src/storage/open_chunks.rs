//! The journal of open chunks: how `persist` makes records durable without
//! sealing their source's chunk.
//!
//! Sealing every source at every persist (once a second in loom-app) cut a
//! slow series into one tiny chunk per second, each with its time-index
//! entry and summaries held in memory for as long as the store keeps it:
//! 10 000 slow series grew the engine by about 3.5 MB per second. Instead,
//! a chunk is sealed when it is full or older than `Config::seal_after_us` (data time),
//! and `persist` appends the records pushed since the previous persist to
//! the open chunks to this journal (`open-chunks-N.log`), after the blocks
//! it writes are durable.
//!
//! An entry holds a run of one open chunk's records, encoded as in the
//! chunk (`log/record.rs`), with where they belong: the source, the
//! address of the source's newest sealed chunk when they were written
//! (`prev`), and how many records of the open chunk came before them. On
//! open, an entry is applied when `prev` is still the source's newest
//! recovered chunk (else that chunk was sealed later and holds the records,
//! or they were lost with it) and the records before it are there. Entries
//! are checked by CRC-32C; a torn entry ends its file.
//!
//! When a file outgrows what it must hold, the writer starts the next one
//! with every open chunk whole, makes it durable and only then removes the
//! older files; a crash in between leaves both, and applying both in order
//! gives the same result (entries already applied are skipped).
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | magic u32 `ENTRY_MAGIC` |
//! | 4 | len u32: bytes of the whole entry, CRC included |
//! | 8 | source u64 |
//! | 16 | prev u64: newest sealed chunk's address, `NO_CHUNK` if none |
//! | 24 | offset u32: records of the open chunk before this entry's |
//! | 28 | count u32 |
//! | 32 | base_ts u64: the timestamp the first record's delta is taken from |
//! | 40 | payload: `count` records |
//! | len − 4 | crc u32 of bytes 0..len − 4 |

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

const ENTRY_MAGIC: u32 = 0x4a43_4f4c; // "LOCJ" in little-endian bytes
const HEAD: usize = 40;
const FILE_PREFIX: &str = "open-chunks-";
const FILE_SUFFIX: &str = ".log";

/// One run of an open chunk's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub source: u64,
    pub prev: u64,
    pub offset: u32,
    pub count: u32,
    pub base_ts: u64,
    pub payload: Vec<u8>,
}

/// Appends one entry's bytes to `out`.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    (source, prev): (u64, u64),
    (offset, count): (u32, u32),
    base_ts: u64,
    payload: &[u8],
) {
    let start = out.len();
    let len = (HEAD + payload.len() + 4) as u32;
    out.extend_from_slice(&ENTRY_MAGIC.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&source.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&base_ts.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// The valid entries at the start of `bytes`, and why reading stopped
/// before the end (`None` when every byte was an entry).
pub(crate) fn decode(bytes: &[u8]) -> (Vec<Entry>, Option<String>) {
    let mut out = Vec::new();
    let mut o = 0usize;
    while o < bytes.len() {
        let rest = &bytes[o..];
        if rest.len() < HEAD + 4 {
            return (
                out,
                Some(format!("{} bytes at {o}: a cut entry", rest.len())),
            );
        }
        if u32_at(rest, 0) != ENTRY_MAGIC {
            return (out, Some(format!("no entry at {o}")));
        }
        let len = u32_at(rest, 4) as usize;
        if len < HEAD + 4 || len > rest.len() {
            return (
                out,
                Some(format!("entry at {o}: length {len} out of bounds")),
            );
        }
        let crc = u32_at(rest, len - 4);
        if crc32c::crc32c(&rest[..len - 4]) != crc {
            return (out, Some(format!("entry at {o}: checksum mismatch")));
        }
        out.push(Entry {
            source: u64_at(rest, 8),
            prev: u64_at(rest, 16),
            offset: u32_at(rest, 24),
            count: u32_at(rest, 28),
            base_ts: u64_at(rest, 32),
            payload: rest[HEAD..len - 4].to_vec(),
        });
        o += len;
    }
    (out, None)
}

/// Recomputes the CRC of each entry whose magic and length hold (fuzzing).
#[cfg(feature = "fuzz")]
pub(crate) fn reseal(bytes: &mut [u8]) {
    let mut o = 0usize;
    while o + HEAD + 4 <= bytes.len() && u32_at(bytes, o) == ENTRY_MAGIC {
        let len = u32_at(bytes, o + 4) as usize;
        if len < HEAD + 4 || o + len > bytes.len() {
            return;
        }
        let crc = crc32c::crc32c(&bytes[o..o + len - 4]);
        bytes[o + len - 4..o + len].copy_from_slice(&crc.to_le_bytes());
        o += len;
    }
}

/// Journal files in `dir`, oldest first, with their numbers.
fn files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return Err(Error::io(dir, e)),
    };
    for e in rd {
        let e = e.map_err(|err| Error::io(dir, err))?;
        let name = e.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix(FILE_PREFIX))
            .and_then(|s| s.strip_suffix(FILE_SUFFIX))
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        out.push((n, e.path()));
    }
    out.sort_unstable();
    Ok(out)
}

/// Every valid entry of every journal file, oldest file first, and the
/// highest file number (0 when there is none). A torn entry ends its file
/// (logged): it was being written when the writer stopped.
pub(crate) fn read(dir: &Path) -> Result<(Vec<Entry>, u64)> {
    // A live writer may start a newer file and remove the older ones
    // between listing and reading (a read-only open racing it): list again.
    for _ in 0..3 {
        if let Some(found) = read_listed(dir)? {
            return Ok(found);
        }
    }
    read_listed(dir)?.ok_or_else(|| {
        Error::io(
            dir,
            std::io::Error::other("journal files kept disappearing while read"),
        )
    })
}

/// [`read`] over one listing; `None` when a listed file was gone.
fn read_listed(dir: &Path) -> Result<Option<(Vec<Entry>, u64)>> {
    let mut out = Vec::new();
    let mut last = 0;
    for (n, path) in files(dir)? {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let (entries, stop) = decode(&bytes);
        if let Some(why) = stop {
            log::warn!(
                "{}: open-chunk journal read up to a torn entry ({why}); {} entries kept",
                path.display(),
                entries.len()
            );
        }
        out.extend(entries);
        last = last.max(n);
    }
    Ok(Some((out, last)))
}

/// The journal file being appended to.
pub(crate) struct Journal {
    dir: PathBuf,
    number: u64,
    file: File,
    /// Bytes in the file.
    pub bytes: u64,
    /// A write failed part-way: what follows a torn entry would never be
    /// read, so the next write starts a new file.
    pub broken: bool,
    sync: bool,
}

fn path_of(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{FILE_PREFIX}{n}{FILE_SUFFIX}"))
}

impl Journal {
    /// Starts journal file `number` with `entries` (every open chunk
    /// whole), makes it durable, then removes every older file.
    pub(crate) fn start(dir: &Path, number: u64, entries: &[u8], sync: bool) -> Result<Journal> {
        let path = path_of(dir, number);
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        file.write_all(entries).map_err(|e| Error::io(&path, e))?;
        if sync {
            file.sync_data().map_err(|e| Error::io(&path, e))?;
            crate::storage::catalog::sync_dir(dir)?;
        }
        for (n, old) in files(dir)? {
            if n < number {
                std::fs::remove_file(&old).map_err(|e| Error::io(&old, e))?;
            }
        }
        Ok(Journal {
            dir: dir.to_path_buf(),
            number,
            file,
            bytes: entries.len() as u64,
            broken: false,
            sync,
        })
    }

    /// Appends entries and makes them durable.
    pub(crate) fn append(&mut self, entries: &[u8]) -> Result<()> {
        let path = path_of(&self.dir, self.number);
        self.broken = true;
        self.file
            .write_all(entries)
            .map_err(|e| Error::io(&path, e))?;
        if self.sync {
            self.file.sync_data().map_err(|e| Error::io(&path, e))?;
        }
        self.broken = false;
        self.bytes += entries.len() as u64;
        Ok(())
    }

    /// Starts the next file with `entries` (see [`Journal::start`]).
    pub(crate) fn rotate(&mut self, entries: &[u8]) -> Result<()> {
        self.broken = true;
        *self = Journal::start(&self.dir, self.number + 1, entries, self.sync)?;
        Ok(())
    }

    /// Removes every journal file: the writer closed with every chunk sealed.
    pub(crate) fn remove_all(dir: &Path) -> Result<()> {
        for (_, p) in files(dir)? {
            std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_a_torn_one_ends_the_file() {
        let mut buf = Vec::new();
        encode(&mut buf, (7, 4096), (0, 2), 100, b"abcdef");
        encode(&mut buf, (8, u64::MAX), (3, 1), 5, b"");
        let (e, stop) = decode(&buf);
        assert_eq!(stop, None);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0],
            Entry {
                source: 7,
                prev: 4096,
                offset: 0,
                count: 2,
                base_ts: 100,
                payload: b"abcdef".to_vec()
            }
        );
        assert_eq!((e[1].source, e[1].offset, e[1].payload.len()), (8, 3, 0));
        let whole = buf.len();
        encode(&mut buf, (9, 0), (0, 1), 1, b"xyz");
        let (e, stop) = decode(&buf[..buf.len() - 1]);
        assert_eq!(e.len(), 2);
        assert!(stop.is_some());
        buf[whole + HEAD] ^= 1;
        let (e, stop) = decode(&buf);
        assert_eq!(e.len(), 2);
        assert!(stop.is_some_and(|s| s.contains("checksum")));
    }
}
