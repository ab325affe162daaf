//! Raw file: each writer thread appends `(ts u64 LE, len u32 LE, bytes)` to its
//! own file through a [`BUFFER_BYTES`] user-space buffer, flushed (written to
//! the page cache) at least once a second. No fsync, like the other stores.

use super::Sink;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// User-space write buffer per thread.
pub const BUFFER_BYTES: usize = 1 << 20;

/// Bytes before the payload: timestamp and length.
const HEADER_BYTES: usize = 12;

/// One thread's file.
pub struct FileSink {
    out: BufWriter<File>,
    /// The encoded record; its timestamp is rewritten when it changes, so each
    /// record costs one buffered copy.
    record: Vec<u8>,
}

impl FileSink {
    /// Creates `dir/records-<thread>.bin`.
    pub fn create(dir: &Path, thread: usize) -> Result<Self> {
        let path = dir.join(format!("records-{thread}.bin"));
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(FileSink {
            out: BufWriter::with_capacity(BUFFER_BYTES, file),
            record: Vec::new(),
        })
    }
}

impl Sink for FileSink {
    #[inline]
    fn write(&mut self, ts_us: u64, payload: &[u8]) -> Result<()> {
        if self.record.len() != HEADER_BYTES + payload.len() {
            let len = u32::try_from(payload.len()).context("payload longer than u32::MAX")?;
            self.record.clear();
            self.record.extend_from_slice(&ts_us.to_le_bytes());
            self.record.extend_from_slice(&len.to_le_bytes());
            self.record.extend_from_slice(payload);
        } else {
            // Every record's payload differs (its value): copy it each time.
            self.record[..8].copy_from_slice(&ts_us.to_le_bytes());
            self.record[HEADER_BYTES..].copy_from_slice(payload);
        }
        self.out
            .write_all(&self.record)
            .context("writing record file")
    }

    fn sync(&mut self) -> Result<()> {
        self.out.flush().context("flushing record file")
    }
}
