//! Loom through its public API: one source, optionally with a range index
//! declared by schema (so its summaries are persisted beside the segments,
//! as loom-app's are). `sync` is `Writer::sync` (publish to readers; cheap)
//! plus `Writer::persist` once a second (loom-app's default persist
//! interval); the run ends with `Writer::close` (persist + stop the
//! flusher), timed separately.

use super::Sink;
use anyhow::{Context, Result};
use loom::{Config, FieldDef, FieldType, IndexDef, SourceHandle, SourceId, SourceSchema, Writer};
use std::path::Path;
use std::time::{Duration, Instant};

/// How often the sink makes everything durable, as loom-app does by default.
pub const PERSIST_INTERVAL: Duration = Duration::from_secs(1);

/// The single source every record goes to.
pub const SOURCE: SourceId = SourceId(1);

/// Range-index bins used with `--index`: the value is a latency in µs
/// ([`crate::values`]), binned like loom-app's latency fields: 10 µs bins
/// (up to 100 ms; slower values share the last bin).
pub const INDEX_BINS: u32 = 10_000;
/// Width of one index bin, µs.
pub const INDEX_BIN_US: u64 = 10;

/// The indexed value as the `--index` schema field reads it: a little-endian
/// u64 from the first min(8, len) bytes (kept for tests that read records back).
pub fn first_u64(bytes: &[u8]) -> u64 {
    // A fixed 8-byte read compiles to one load; the variable-length copy
    // is only for records shorter than 8 bytes.
    if let Some(head) = bytes.first_chunk::<8>() {
        return u64::from_le_bytes(*head);
    }
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// A Loom writer with the benchmark's one source declared.
pub struct LoomSink {
    writer: Writer,
    // Kept open for the whole run, as loom-app keeps one for its queries.
    _reader: loom::Reader,
    source: SourceHandle,
    last_persist: Instant,
}

impl LoomSink {
    /// Opens a store in `dir` with the default `Config` (its compression
    /// level replaced by `level` if given, 0 meaning uncompressed) and
    /// declares [`SOURCE`] (field `value`: the record's first 8 bytes),
    /// range-indexed if `index`.
    pub fn open(dir: &Path, index: bool, level: Option<i32>) -> Result<Self> {
        let mut config = Config::default();
        if let Some(l) = level {
            config.compression_level = (l != 0).then_some(l);
        }
        let (mut writer, reader) = loom::open(dir, config)
            .with_context(|| format!("opening loom store in {}", dir.display()))?;
        let schema = SourceSchema {
            measurement: "bench".into(),
            tags: Vec::new(),
            fields: vec![FieldDef {
                name: "value".into(),
                offset: 0,
                ty: FieldType::U64,
            }],
            index: index.then(|| IndexDef {
                field: "value".into(),
                min: 0,
                interval: INDEX_BIN_US,
                n_bins: INDEX_BINS,
            }),
        };
        let source = writer
            .declare(SOURCE, schema)
            .context("declaring the loom source")?;
        Ok(LoomSink {
            writer,
            _reader: reader,
            source,
            last_persist: Instant::now(),
        })
    }

    /// Persists everything and stops the flusher; returns a stats line for stderr.
    pub fn close(self) -> Result<String> {
        let stats = format!("{:?}", self.writer.stats());
        self.writer.close().context("closing the loom store")?;
        Ok(stats)
    }
}

impl Sink for LoomSink {
    #[inline]
    fn write(&mut self, ts_us: u64, payload: &[u8]) -> Result<()> {
        self.writer
            .push(self.source, ts_us, payload)
            .context("loom push")?;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if self.last_persist.elapsed() >= PERSIST_INTERVAL {
            self.writer.persist().context("loom persist")?;
            self.last_persist = Instant::now();
        } else {
            self.writer.sync();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::first_u64;

    #[test]
    fn extractor_reads_short_and_long_payloads() {
        assert_eq!(first_u64(&[]), 0);
        assert_eq!(first_u64(&[1, 2]), 0x0201);
        assert_eq!(first_u64(&[1, 0, 0, 0, 0, 0, 0, 0, 9]), 1);
    }
}
