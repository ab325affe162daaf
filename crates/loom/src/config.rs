//! Tuning knobs, each with a default and the reason for it.

use crate::error::{Error, Result};

/// How the flusher writes blocks to segment files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// `O_DIRECT` writes: no page-cache copy, steady bandwidth. Falls back to
    /// `Buffered` (with a logged warning) where the file system refuses it (tmpfs).
    Direct,
    /// Ordinary buffered writes through the page cache.
    Buffered,
}

/// Engine configuration. Layout values (`chunk_size`, `block_size`,
/// `segment_size`) are stored in the directory on creation; reopening an
/// existing store uses the stored layout and ignores these three.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bytes per chunk, header included. A chunk holds records of one source and
    /// is the unit of indexing and of reads. Default 64 KiB: large enough that
    /// per-chunk costs (header, checksum, summaries) vanish per record, small
    /// enough that a query's edge chunks are cheap to scan.
    pub chunk_size: usize,
    /// Bytes a source's open chunk starts with in memory (header
    /// excluded). The buffer doubles as records arrive, up to `chunk_size`,
    /// and halves again after a seal that left it three quarters empty, so a
    /// source writing a few records per second holds about this much and
    /// a busy one reaches full chunks after a few copies. Default 512
    /// (10 000 idle series: 5 MB instead of 640 MB of 64 KiB buffers).
    /// Clamped to `64..=chunk_size - 48`; not part of the stored layout.
    pub first_chunk_bytes: usize,
    /// A source's open chunk is sealed when it is full, or at a `persist`
    /// once its first record is this much older (in the timestamps' unit,
    /// µs) than the newest record of any source. Meanwhile `persist` makes
    /// its records durable in the journal of open chunks
    /// (`open-chunks-N.log`, read back on open) instead of sealing it, so
    /// a slow series gets one chunk (one time-index entry and its
    /// summaries in memory) per this interval, not one per persist.
    /// Default `Some(60_000_000)` (60 s). `None` seals every open chunk at
    /// every `persist` and writes no journal.
    pub seal_after_us: Option<u64>,
    /// Chunks of a busy source end at whole multiples of this many µs
    /// (the timestamps' unit) of the epoch: once its open chunk holds at
    /// least `align_min_bytes`, a record at or past the next multiple seals
    /// it and starts the next chunk. A `GROUP BY time(d)` bucket of whole
    /// seconds then starts and ends between chunks, so every chunk inside
    /// it is answered from its summaries and only the window's own two
    /// ends are read; unaligned, the chunk cut by each bucket boundary was
    /// read (decompressed) for every bucket, most of what a dashboard
    /// panel over an hour cost (docs/write.md). Costs one extra, partly
    /// filled chunk per source per period at most. Default 1 s; 0 never
    /// cuts by time.
    pub align_chunks_us: u64,
    /// Bytes (payload) an open chunk must hold before `align_chunks_us`
    /// cuts it. A slower source's smaller chunks are cheap to read at a
    /// boundary, and cutting them would multiply its chunks (index entries,
    /// summaries, worse compression). Default 16 KiB (a quarter chunk).
    pub align_min_bytes: usize,
    /// Bytes of chunks read from segment files that are kept for later
    /// queries (a query over many series reads every series' edge chunks,
    /// and a statement's percentile reads some of them again for its bin).
    /// Default 32 MiB; 0 keeps none. Read-only opens use the default.
    pub chunk_cache_bytes: usize,
    /// Bytes of range-index summaries held in memory, so index memory is
    /// bounded by configuration, not by the store's size. Up to half holds
    /// the newest segments' summaries (older complete segments' are paged
    /// out to the segment index files that already hold them); the rest
    /// caches summaries a query read back from those files (least recently
    /// used segment evicted first). Default 1 GiB. A 256 MiB segment of small
    /// records (24 bytes, ~30 bins touched per chunk) takes 6-9 MB of
    /// summaries, so this keeps the summaries of about 30 GB of log (a few
    /// GB on disk, compressed) in memory and pages beyond that. Smaller
    /// budgets thrashed in the 60-minute soak (live P3 at 1.07 M records/s,
    /// 512 MiB on disk, ~280 MB of summaries): with 256 MiB, 132 822 segment
    /// page-ins in the hour and statement p99 1 s instead of 41-57 ms,
    /// because a segment's summaries are paged whole (every source's) and a
    /// 5-minute window of a small source spans ~33 segments at that rate;
    /// with 64 MiB, p99 2 s.
    /// Read-only opens use the default.
    pub index_cache_bytes: usize,
    /// Bytes per in-memory block; full blocks go to the flusher. Default 16 MiB:
    /// one large sequential write per block. Multiple of 4096 and of nothing else.
    pub block_size: usize,
    /// Bytes per segment file. Default 256 MiB: the unit retention drops,
    /// and the most a reopen scans when a crash left a segment without its
    /// index footer (about 0.1–0.2 s here). Must be a multiple of `block_size`.
    pub segment_size: u64,
    /// Blocks that may sit in memory waiting for the flusher before the writer
    /// waits for disk. Default 4 (64 MiB): absorbs short disk stalls.
    pub max_blocks_in_memory: usize,
    /// Write mode of the flusher. Default `Direct`.
    pub flush_mode: FlushMode,
    /// Sealed chunks the indexer thread may lag behind the writer before the
    /// writer waits for it. Default 512: the chunks it still has to read
    /// pin their blocks in memory, and 512 default chunks are two blocks.
    pub max_index_lag: u64,
    /// Call `fdatasync`: on every `persist`, and for full blocks at least
    /// every `sync_interval_ms`. Default true. With false, written data
    /// survives a crash of the process but not of the machine.
    pub sync_data: bool,
    /// Full blocks are `fdatasync`ed at least this often (ms), so a power
    /// loss costs at most this much of data that was never persisted. 0
    /// syncs after every block, which cost about 15 % of write bandwidth on
    /// this project's machines (dd with 16 MiB direct writes: 1.8 GB/s,
    /// 1.5 GB/s with a sync after each). Default 1000.
    pub sync_interval_ms: u64,
    /// While a write to disk fails (disk full), the flusher retries it this
    /// often (ms). Default 1000.
    pub write_retry_ms: u64,
    /// Drop the oldest whole segments while the store holds more than this
    /// many bytes of segment files. Default `None` (keep everything). The
    /// store stays within one segment of the bound.
    pub retention_bytes: Option<u64>,
    /// Drop the oldest whole segments once their newest record is this much
    /// older (µs) than the store's newest record. Default `None`.
    pub retention_age_us: Option<u64>,
    /// Scan and checksum every segment on open, even those whose segment
    /// index says they are complete (which are otherwise taken from the
    /// index without reading them). Default false: a reopen then reads only
    /// the segment that was being written. With true, corruption anywhere
    /// is found (and skipped) on open instead of by the query that meets it.
    pub verify_on_open: bool,
    /// zstd level of the chunks the flusher compresses on their way to
    /// disk (`docs/chunk-format.md`); `None` stores them uncompressed (in
    /// the same frames). Default `Some(1)`: on the live P2 recording level 3
    /// made frames only 0.4 % smaller for a quarter more encoding CPU
    /// (docs/chunk-format.md).
    pub compression_level: Option<i32>,
    /// Flush jobs queued at the flusher at which it stops compressing and
    /// stores chunks as they are until it catches up, so ingest never waits
    /// for compression (counted in `WriterStats::chunks_raw_to_keep_up`).
    /// With fewer, but at least one, queued it compresses at zstd level −1
    /// (counted in `WriterStats::chunks_fast_to_keep_up`). Default 2: one
    /// block may wait while the flusher catches up cheaply, a second one
    /// (the writer is then close to waiting for memory) stores raw; 0 or 1
    /// store raw as soon as that many wait; `usize::MAX` always compresses
    /// (the writer then waits when every in-memory block is queued).
    pub store_raw_when_queued: usize,
    /// Nice value of the flusher thread (Linux: nice is per thread), so
    /// that compression takes the CPU the ingest path leaves rather than
    /// the CPU it needs: a flusher that gets less falls behind and then
    /// compresses cheaper or stores chunks as they are (counted), which
    /// costs far less than dropped records. 0 leaves it as the process's.
    pub flusher_nice: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            chunk_size: 64 * 1024,
            first_chunk_bytes: 512,
            seal_after_us: Some(60_000_000),
            align_chunks_us: 1_000_000,
            align_min_bytes: 16 * 1024,
            chunk_cache_bytes: 32 << 20,
            index_cache_bytes: 1 << 30,
            block_size: 16 * 1024 * 1024,
            segment_size: 256 * 1024 * 1024,
            max_blocks_in_memory: 4,
            max_index_lag: 512,
            flush_mode: FlushMode::Direct,
            sync_data: true,
            sync_interval_ms: 1000,
            write_retry_ms: 1000,
            retention_bytes: None,
            retention_age_us: None,
            verify_on_open: false,
            compression_level: Some(1),
            store_raw_when_queued: 2,
            flusher_nice: 0,
        }
    }
}

impl Config {
    /// Checks the relations between the values; called by `open`.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if self.chunk_size < 256
            || self.chunk_size > (1 << 30)
            || !self.chunk_size.is_multiple_of(8)
        {
            return bad(format!(
                "chunk_size {} must be a multiple of 8 in 256..=1 GiB",
                self.chunk_size
            ));
        }
        if !self.block_size.is_multiple_of(4096) || self.block_size < self.chunk_size {
            return bad(format!(
                "block_size {} must be a multiple of 4096 and at least chunk_size {}",
                self.block_size, self.chunk_size
            ));
        }
        if self.segment_size == 0 || !self.segment_size.is_multiple_of(self.block_size as u64) {
            return bad(format!(
                "segment_size {} must be a non-zero multiple of block_size {}",
                self.segment_size, self.block_size
            ));
        }
        if self.max_blocks_in_memory < 2 {
            return bad(format!(
                "max_blocks_in_memory {} must be at least 2 (double buffering)",
                self.max_blocks_in_memory
            ));
        }
        Ok(())
    }
}
