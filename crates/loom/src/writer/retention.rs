//! Retention: the oldest whole segments (and their index files) are dropped
//! when the store exceeds `retention_bytes` or their newest record is older
//! than `retention_age_us` before the newest record of the store. Queries
//! over dropped time answer as if it held no records.

use crate::index::indexer::IndexMsg;
use crate::storage::catalog::sync_dir;
use crate::storage::layout::Layout;
use crate::storage::segment_index;

use super::Writer;

impl Writer {
    /// Bytes of the segment and segment-index files on disk: what recovery
    /// found for the segments of earlier runs; for those of this run, the
    /// frames written so far (compressed, as on disk: a bound on bytes is a
    /// bound on disk, not on the log's uncompressed size) plus the index
    /// file as it is now. A segment of this run with no frame listed yet
    /// counts its log bytes, the one being written up to the current block.
    /// Called when a segment starts and at persist, so the `stat` of each
    /// index file costs little.
    pub(super) fn segments_bytes(&self) -> u64 {
        let current = self.block_base / self.layout.segment_size;
        self.segments
            .iter()
            .map(|s| {
                if s.bytes > 0 {
                    return s.bytes;
                }
                let data = if let Some(b) = self.files.stored_bytes(s.index) {
                    b
                } else if s.index == current {
                    self.block_base + self.block.len() as u64 - s.index * self.layout.segment_size
                } else {
                    self.layout.segment_size
                };
                let index = std::fs::metadata(segment_index::path(&self.dir, s.index))
                    .map_or(0, |m| m.len());
                data + index
            })
            .sum()
    }

    /// Drops the oldest segments while a retention bound is exceeded; never
    /// the segment being written.
    pub(super) fn apply_retention(&mut self) {
        let (by_bytes, by_age) = (self.config.retention_bytes, self.config.retention_age_us);
        if by_bytes.is_none() && by_age.is_none() {
            return;
        }
        let newest = self.sources.iter().map(|s| s.prev_ts).max().unwrap_or(0);
        let current = self.block_base / self.layout.segment_size;
        let mut dropped_any = false;
        while let Some(oldest) = self.segments.front().copied() {
            if oldest.index >= current {
                break;
            }
            let over_bytes = by_bytes.is_some_and(|b| self.segments_bytes() > b);
            let too_old = by_age.is_some_and(|a| oldest.newest_ts.saturating_add(a) < newest);
            if !over_bytes && !too_old {
                break;
            }
            self.segments.pop_front();
            // Queries on earlier snapshots may still read it, and page in
            // its directory entries.
            self.files.retire(oldest.index);
            self.indexer.pages.retire_index(oldest.index);
            let mut freed = 0u64;
            for p in [
                Layout::segment_path(&self.dir, oldest.index),
                segment_index::path(&self.dir, oldest.index),
            ] {
                freed += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                if let Err(e) = std::fs::remove_file(&p) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        log::error!("retention: cannot remove {}: {e}", p.display());
                    }
                }
            }
            self.retained_from = (oldest.index + 1) * self.layout.segment_size;
            self.files.forget_below(oldest.index + 1);
            self.indexer.pages.forget_below(oldest.index + 1);
            self.stats.segments_dropped += 1;
            self.stats.bytes_dropped += freed;
            dropped_any = true;
            log::info!(
                "{}: retention dropped segment {} ({} MB, newest record {} µs)",
                self.dir.display(),
                oldest.index,
                freed / 1_000_000,
                oldest.newest_ts
            );
        }
        if dropped_any {
            if let Err(e) = sync_dir(&self.dir) {
                log::error!("retention: {e}");
            }
            self.forget_dropped_chunks();
            self.sync();
        }
    }

    /// Frees the in-memory directory entries and range-index summaries of
    /// the chunks retention dropped (whole slabs), so a long-running store
    /// under retention holds index memory for what it keeps only.
    fn forget_dropped_chunks(&mut self) {
        let retained_from = self.retained_from;
        let mut indexed = Vec::new();
        for (idx, s) in self.sources.iter_mut().enumerate() {
            let first = s.dir.forget_below(retained_from);
            if s.index.is_some() {
                indexed.push((idx, first));
            }
        }
        for (source, below_chunk) in indexed {
            if let Err(e) = self.send_index(IndexMsg::Forget {
                source,
                below_chunk,
            }) {
                log::error!("retention: {e}");
            }
        }
    }
}
