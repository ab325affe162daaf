//! The single writer: appends records, seals chunks, hands blocks to the
//! flusher and publishes snapshots to readers.
//!
//! - `open.rs`: opening a store, recovery replay, read-only opens;
//! - `registry.rs`: declaring sources (schemas, range indexes, the catalog);
//! - `append.rs`: push and seal;
//! - `blocks.rs`: the in-memory block pool and the flusher's acknowledgements;
//! - `publish.rs`: sync (publish to readers) and persist (make durable);
//! - `retention.rs`: dropping the oldest segments.

mod append;
mod blocks;
mod dir_paging;
mod journal;
mod open;
mod publish;
mod registry;
mod retention;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use open::{open, open_read_only};

use crate::config::Config;
use crate::index::directory::Directory;
use crate::index::indexer::Indexer;
use crate::index::state::IndexState;
use crate::log::slab::SlabWriter;
use crate::reader::Reader;
use crate::schema::SourceSchema;
use crate::snapshot::Shared;
use crate::source::SourceId;
use crate::storage::flusher::Flusher;
use crate::storage::layout::Layout;
use crate::storage::lock::DirLock;
use crate::storage::recovery::{RecoveryReport, SegmentInfo};
use crate::storage::segments::SegmentFiles;

/// Alignment and size granularity of direct I/O.
const IO_ALIGN: usize = 4096;

/// Smallest open-chunk buffer (payload bytes) a source starts with.
pub(crate) const MIN_FIRST_PAYLOAD: usize = 64;

/// Payload bytes a new source's open chunk buffer starts with
/// (`Config::first_chunk_bytes`, clamped to what a chunk can hold).
pub(crate) fn first_payload(config: &Config, layout: &Layout) -> usize {
    let full = layout.chunk_size - crate::log::chunk::HEADER_LEN;
    config
        .first_chunk_bytes
        .clamp(MIN_FIRST_PAYLOAD.min(full), full)
}

/// Counters of what the writer has done since open.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriterStats {
    /// Records pushed.
    pub records: u64,
    /// Payload bytes pushed.
    pub payload_bytes: u64,
    /// Chunks sealed.
    pub chunks: u64,
    /// Full blocks handed to the flusher.
    pub blocks_flushed: u64,
    /// Times the writer waited because every in-memory block was in flight.
    pub disk_waits: u64,
    /// Records found on disk when the store was opened.
    pub recovered_records: u64,
    /// Chunks handed to the indexer thread while in memory.
    pub chunks_to_index: u64,
    /// Times the writer waited because the indexer lagged `max_index_lag` chunks.
    pub index_waits: u64,
    /// Recovered chunks whose summaries had to be rebuilt from the log.
    pub chunks_reindexed: u64,
    /// Records refused because writing to disk failed and memory was full.
    pub records_refused: u64,
    /// Segments dropped by retention.
    pub segments_dropped: u64,
    /// Bytes of segment files dropped by retention.
    pub bytes_dropped: u64,
    /// Chunks the flusher wrote to disk (as compressed frames).
    pub chunks_written: u64,
    /// Of those, chunks stored uncompressed: compressing did not make them
    /// smaller, compression is off, or it was not keeping up (those also
    /// counted in `chunks_raw_to_keep_up`).
    pub chunks_stored_raw: u64,
    /// Of those, chunks stored uncompressed because compression was not
    /// keeping up with ingest (see `Config::store_raw_when_queued`).
    pub chunks_raw_to_keep_up: u64,
    /// Chunks compressed at a cheaper zstd level because a flush job
    /// waited behind them (see `Config::store_raw_when_queued`).
    pub chunks_fast_to_keep_up: u64,
    /// Bytes of the written chunks before compression.
    pub chunk_bytes_written: u64,
    /// Bytes their frames take in segment files.
    pub frame_bytes_written: u64,
}

/// What the writer knows of one source.
pub(crate) struct SourceState {
    pub id: SourceId,
    pub schema: Option<Arc<SourceSchema>>,
    pub index: Option<Arc<IndexState>>,
    pub active: SlabWriter<u8>,
    pub first_ts: u64,
    pub prev_ts: u64,
    pub count: u32,
    pub newest_chunk: u64,
    pub dir: Directory,
    pub seq: u64,
    /// Bytes and records of the open chunk already in the journal, and the
    /// timestamp of the last of them.
    pub journaled_len: usize,
    pub journaled_count: u32,
    pub journaled_ts: u64,
    /// A record at or past this time may cut the open chunk
    /// (`Config::align_chunks_us`; `Writer::cut_at_boundary` decides).
    pub cut_at: u64,
}

pub(crate) struct BlockSlot {
    pub base: u64,
    pub block: SlabWriter<u8>,
    pub job: u64,
    pub written: bool,
}

/// The one writer of a store. Not `Clone`; move it to the ingest thread.
pub struct Writer {
    dir: PathBuf,
    config: Config,
    layout: Layout,
    shared: Arc<Shared>,
    files: Arc<SegmentFiles>,
    sources: Vec<SourceState>,
    ids: Arc<HashMap<SourceId, usize>>,
    catalog: Vec<(SourceId, SourceSchema)>,
    block: SlabWriter<u8>,
    block_base: u64,
    block_durable: usize,
    in_flight: VecDeque<BlockSlot>,
    flusher: Flusher,
    indexer: Indexer,
    next_job: u64,
    last_acked: Option<u64>,
    failed: Option<String>,
    max_record: usize,
    stats: WriterStats,
    report: RecoveryReport,
    /// Segments on disk, oldest first, for retention.
    segments: VecDeque<SegmentInfo>,
    retained_from: u64,
    /// Chunks sealed into the segment being written, and where the last ends.
    seg_chunks: u64,
    last_chunk_end: u64,
    /// Set by `close` and drop: a failing write is given up, not waited for.
    closing: bool,
    closed: bool,
    lock: Option<DirLock>,
    /// The journal of open chunks (`storage/open_chunks.rs`), once started,
    /// and the number its first file takes.
    journal: Option<crate::storage::open_chunks::Journal>,
    journal_next: u64,
    /// Where paging out the directory entries of older segments stands.
    dir_paging: dir_paging::DirPaging,
}

impl Writer {
    /// Blocks until the indexer has summarised every chunk sealed so far.
    /// Queries are exact without it (unsummarised chunks are scanned); this
    /// only makes the work a query does repeatable.
    pub fn wait_for_index(&mut self) -> crate::Result<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send_index(crate::index::indexer::IndexMsg::Barrier(tx))?;
        rx.recv()
            .map_err(|_| crate::Error::FlushFailed("the indexer thread has stopped".into()))
    }

    /// Persists everything and stops the flusher and indexer threads.
    pub fn close(mut self) -> crate::Result<()> {
        self.closing = true;
        let r = self.persist().and_then(|()| self.remove_journal());
        self.shutdown();
        r
    }

    fn shutdown(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.flusher.status.stop.store(true, Ordering::Release);
        let (dead_tx, _) = crossbeam_channel::unbounded();
        drop(std::mem::replace(&mut self.flusher.jobs, dead_tx));
        if let Some(t) = self.flusher.thread.take() {
            if t.join().is_err() {
                log::error!("{}: the flusher thread panicked", self.dir.display());
            }
        }
        // After the flusher: the indexer writes the footers of segments
        // whose data the flusher's last sync made durable.
        let (dead_tx, _) = crossbeam_channel::unbounded();
        drop(std::mem::replace(&mut self.indexer.tx, dead_tx));
        if let Some(t) = self.indexer.thread.take() {
            if t.join().is_err() {
                log::error!("{}: the indexer thread panicked", self.dir.display());
            }
        }
    }

    /// A new reader of this store.
    pub fn reader(&self) -> Reader {
        Reader::new(Arc::clone(&self.shared))
    }

    /// Counters since open.
    pub fn stats(&self) -> WriterStats {
        let f = &self.flusher.status;
        WriterStats {
            chunks_written: f.chunks_written.load(Ordering::Relaxed),
            chunks_stored_raw: f.chunks_stored_raw.load(Ordering::Relaxed),
            chunks_raw_to_keep_up: f.chunks_raw_to_keep_up.load(Ordering::Relaxed),
            chunks_fast_to_keep_up: f.chunks_fast_to_keep_up.load(Ordering::Relaxed),
            chunk_bytes_written: f.chunk_bytes.load(Ordering::Relaxed),
            frame_bytes_written: f.frame_bytes.load(Ordering::Relaxed),
            ..self.stats
        }
    }

    /// Tells the flusher how full the application's ingest queue is, in
    /// percent of its capacity: from 25 % it compresses at zstd level −1
    /// until the queue drains (counted in `chunks_fast_to_keep_up`), so
    /// compression yields CPU before the queue overflows. It never makes
    /// chunks stored raw: only the flusher's own queue does
    /// (`Config::store_raw_when_queued`), as raw chunks cost the disk
    /// 10–15× the bytes. Cheap: one relaxed store.
    pub fn set_ingest_backlog(&self, percent: u8) {
        self.flusher
            .status
            .ingest_backlog
            .store(percent.min(100), Ordering::Relaxed);
    }

    /// Largest record `push` accepts with this store's chunk size.
    pub fn max_record_size(&self) -> usize {
        self.max_record
    }

    /// What recovery found when the store was opened: records, skipped
    /// corruption, holes, the torn tail it cut.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.report
    }

    /// Why recovery cut the log's tail on open, if it did (torn write);
    /// everything before that point was kept.
    pub fn dropped_tail(&self) -> Option<String> {
        self.report
            .torn_tail
            .as_ref()
            .map(|(at, why)| format!("torn tail cut at address {at}: {why}"))
    }

    /// Why writing to disk currently fails (records that do not fit in
    /// memory are refused meanwhile), `None` while it works.
    pub fn storage_failing(&self) -> Option<String> {
        self.flusher.status.failing()
    }

    /// Bytes of segment and segment-index files on disk now (retention's measure).
    pub fn bytes_on_disk(&self) -> u64 {
        self.segments_bytes()
    }

    /// Ends this writer the way a killed process would, for crash tests
    /// that run in one process: nothing more is persisted, the lock is
    /// released, and what was already handed to the flusher may still land.
    #[doc(hidden)]
    pub fn simulate_crash(mut self) {
        self.lock = None;
        std::mem::forget(self);
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.closed {
            self.closing = true;
            if let Err(e) = self.persist().and_then(|()| self.remove_journal()) {
                log::error!("{}: persist on drop failed: {e}", self.dir.display());
            }
            self.shutdown();
        }
    }
}
