//! The single writer: appends records, seals chunks, hands blocks to the
//! flusher and publishes snapshots to readers.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::directory::{ChunkEntry, Directory};
use crate::index::indexer::{IndexMsg, Indexer};
use crate::log::chunk::{padded, ChunkHeader, HEADER_LEN, NO_CHUNK};
use crate::log::record::{self, MAX_RECORD_OVERHEAD};
use crate::log::slab::{SlabView, SlabWriter};
use crate::reader::Reader;
use crate::snapshot::{IndexState, Published, SourceView};
use crate::source::{RangeIndexSpec, RecordAddress, SourceHandle, SourceId};
use crate::storage::flusher::{FlushJob, Flusher};
use crate::storage::layout::Layout;
use crate::storage::recovery;
use crate::storage::segments::SegmentFiles;

/// Alignment and size granularity of direct I/O.
const IO_ALIGN: usize = 4096;

/// State shared between the writer and every reader.
pub(crate) struct Shared {
    pub snapshot: ArcSwap<Published>,
    pub index: Arc<ArcSwap<crate::index::indexer::IndexSnapshot>>,
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
    /// Chunks handed to the indexer thread.
    pub chunks_to_index: u64,
    /// Times the writer waited because the indexer lagged `max_index_lag` chunks.
    pub index_waits: u64,
}

struct SourceState {
    id: SourceId,
    index: Option<Arc<IndexState>>,
    active: SlabWriter<u8>,
    first_ts: u64,
    prev_ts: u64,
    count: u32,
    newest_chunk: u64,
    dir: Directory,
    seq: u64,
}

struct BlockSlot {
    base: u64,
    block: SlabWriter<u8>,
    job: u64,
    written: bool,
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
    dropped_tail: Option<String>,
    closed: bool,
}

/// Opens the store in `dir`: creates it when empty, recovers every valid
/// record when it holds data (a torn or corrupt tail is dropped with a logged
/// reason), never deletes valid data. Returns the writer and a reader.
pub fn open(dir: &Path, config: Config) -> Result<(Writer, Reader)> {
    config.validate()?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let layout = Layout::load_or_store(dir, Layout::from_config(&config))?;
    let recovered = recovery::recover(dir, layout)?;
    let files = Arc::new(SegmentFiles::new(dir.to_path_buf(), layout));
    let flusher = Flusher::start(
        dir.to_path_buf(),
        layout,
        config.flush_mode,
        config.sync_data,
        std::time::Duration::from_millis(config.sync_interval_ms),
    );
    if flusher.thread.is_none() {
        return Err(Error::FlushFailed(
            "the flusher thread could not start".into(),
        ));
    }
    let indexer = Indexer::start(Arc::clone(&files), layout.chunk_size);
    if indexer.thread.is_none() {
        return Err(Error::FlushFailed(
            "the indexer thread could not start".into(),
        ));
    }
    let bs = layout.block_size as u64;
    let block_base = recovered.end.div_ceil(bs) * bs;
    let empty = Published {
        ids: Arc::new(HashMap::new()),
        sources: Vec::new(),
        blocks: Vec::new(),
        files: Arc::clone(&files),
        chunk_size: layout.chunk_size,
    };
    let shared = Arc::new(Shared {
        snapshot: ArcSwap::from_pointee(empty),
        index: Arc::clone(&indexer.published),
    });
    let mut w = Writer {
        dir: dir.to_path_buf(),
        max_record: layout.chunk_size - HEADER_LEN - MAX_RECORD_OVERHEAD,
        config,
        layout,
        shared: Arc::clone(&shared),
        files,
        sources: Vec::new(),
        ids: Arc::new(HashMap::new()),
        block: SlabWriter::new(layout.block_size, IO_ALIGN),
        block_base,
        block_durable: 0,
        in_flight: VecDeque::new(),
        flusher,
        indexer,
        next_job: 0,
        last_acked: None,
        failed: None,
        stats: WriterStats::default(),
        dropped_tail: recovered.dropped.clone(),
        closed: false,
    };
    for c in &recovered.chunks {
        let idx = w.state_for(SourceId(c.header.source));
        let s = &mut w.sources[idx];
        s.dir.chunks.push(ChunkEntry {
            addr: c.addr,
            first_ts: c.header.first_ts,
            last_ts: c.header.last_ts,
            first_seq: s.seq,
            count: c.header.count,
        });
        s.seq += u64::from(c.header.count);
        s.prev_ts = c.header.last_ts;
        s.newest_chunk = c.addr;
        w.stats.recovered_records += u64::from(c.header.count);
    }
    if !recovered.chunks.is_empty() {
        log::info!(
            "{}: recovered {} records in {} chunks of {} sources",
            dir.display(),
            w.stats.recovered_records,
            recovered.chunks.len(),
            w.sources.len()
        );
    }
    w.sync();
    let reader = Reader::new(shared);
    Ok((w, reader))
}

impl Writer {
    fn state_for(&mut self, id: SourceId) -> usize {
        if let Some(&i) = self.ids.get(&id) {
            return i;
        }
        let i = self.sources.len();
        self.sources.push(SourceState {
            id,
            index: None,
            active: SlabWriter::new(self.layout.chunk_size - HEADER_LEN, 8),
            first_ts: 0,
            prev_ts: 0,
            count: 0,
            newest_chunk: NO_CHUNK,
            dir: Directory::new(),
            seq: 0,
        });
        Arc::make_mut(&mut self.ids).insert(id, i);
        i
    }

    /// Declares a source (and optionally its range index) and returns its
    /// handle. Declaring an existing source returns the same handle; adding a
    /// range index to a source that has records (e.g. recovered ones) indexes
    /// them first. A different range index than the declared one is an error.
    pub fn declare_source(
        &mut self,
        id: SourceId,
        index: Option<RangeIndexSpec>,
    ) -> Result<SourceHandle> {
        let idx = self.state_for(id);
        let handle = SourceHandle(idx as u32);
        match (&self.sources[idx].index, index) {
            (Some(existing), Some(spec)) if !existing.spec.same_bins(&spec) => {
                return Err(Error::IndexMismatch(id));
            }
            (None, Some(spec)) => self.attach_index(idx, spec)?,
            _ => {}
        }
        self.sync();
        Ok(handle)
    }

    /// Starts indexing a source; its existing chunks are queued for the
    /// indexer in order, reading them from memory while their block is there.
    fn attach_index(&mut self, idx: usize, spec: RangeIndexSpec) -> Result<()> {
        let state = Arc::new(IndexState::new(spec));
        self.send_index(IndexMsg::Declare {
            source: idx,
            state: Arc::clone(&state),
        })?;
        let chunks = self.sources[idx].dir.chunks.view();
        for chunk_no in 0..chunks.len() {
            let Some(c) = chunks.get(chunk_no) else { break };
            let block = self.block_holding(c.addr);
            self.stats.chunks_to_index += 1;
            self.send_index(IndexMsg::Chunk {
                source: idx,
                chunk_no,
                addr: c.addr,
                block,
            })?;
        }
        self.sources[idx].index = Some(state);
        Ok(())
    }

    fn block_holding(&self, addr: u64) -> Option<(u64, SlabView<u8>)> {
        let bs = self.layout.block_size as u64;
        if addr >= self.block_base && addr < self.block_base + bs {
            return Some((self.block_base, self.block.view()));
        }
        self.in_flight
            .iter()
            .find(|s| addr >= s.base && addr < s.base + bs)
            .map(|s| (s.base, s.block.view()))
    }

    /// Waits while the indexer is `max_index_lag` chunks behind: its queue
    /// pins blocks in memory, so an unbounded lag would be unbounded memory.
    fn throttle_index(&mut self) {
        let max = self.config.max_index_lag.max(1);
        if self
            .stats
            .chunks_to_index
            .saturating_sub(self.indexer.done.load(Ordering::Acquire))
            < max
        {
            return;
        }
        self.stats.index_waits += 1;
        while self
            .stats
            .chunks_to_index
            .saturating_sub(self.indexer.done.load(Ordering::Acquire))
            >= max / 2
        {
            if self.indexer.thread.as_ref().is_none_or(|t| t.is_finished()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    fn send_index(&self, msg: IndexMsg) -> Result<()> {
        self.indexer
            .tx
            .send(msg)
            .map_err(|_| Error::FlushFailed("the indexer thread has stopped".into()))
    }

    /// Blocks until the indexer has summarised every chunk sealed so far.
    /// Queries are exact without it (unsummarised chunks are scanned); this
    /// only makes the work a query does repeatable.
    pub fn wait_for_index(&mut self) -> Result<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send_index(IndexMsg::Barrier(tx))?;
        rx.recv()
            .map_err(|_| Error::FlushFailed("the indexer thread has stopped".into()))
    }

    /// Appends a record. `timestamp_us` must not be older than the source's
    /// newest record. The record is visible to readers after the next `sync`
    /// and durable after the next `persist` (or once its block is flushed).
    #[inline]
    pub fn push(
        &mut self,
        source: SourceHandle,
        timestamp_us: u64,
        bytes: &[u8],
    ) -> Result<RecordAddress> {
        let idx = source.0 as usize;
        let max = self.max_record;
        let Some(s) = self.sources.get_mut(idx) else {
            return Err(Error::InvalidHandle(source.0));
        };
        if timestamp_us < s.prev_ts {
            return Err(Error::OutOfOrder {
                source_id: s.id,
                timestamp_us,
                newest_us: s.prev_ts,
            });
        }
        if bytes.len() > max {
            return Err(Error::RecordTooLarge {
                len: bytes.len(),
                max,
                chunk_size: self.layout.chunk_size,
            });
        }
        if s.active.remaining() < bytes.len() + MAX_RECORD_OVERHEAD {
            self.seal(idx)?;
        }
        let s = &mut self.sources[idx];
        let delta = if s.count == 0 {
            s.first_ts = timestamp_us;
            0
        } else {
            timestamp_us - s.prev_ts
        };
        let n = record::encode(s.active.spare_mut(), delta, bytes);
        s.active.advance(n);
        s.prev_ts = timestamp_us;
        s.count += 1;
        let seq = s.seq;
        s.seq += 1;
        self.stats.records += 1;
        self.stats.payload_bytes += bytes.len() as u64;
        Ok(RecordAddress { source: s.id, seq })
    }

    /// Moves a source's unsealed records into the current block as a chunk.
    fn seal(&mut self, idx: usize) -> Result<()> {
        if self.sources[idx].count == 0 {
            return Ok(());
        }
        let payload_len = self.sources[idx].active.len();
        let len = HEADER_LEN + payload_len;
        let foot = padded(len);
        if self.block.remaining() < foot {
            self.rotate_block()?;
        }
        let addr = self.block_base + self.block.len() as u64;
        let s = &mut self.sources[idx];
        let header = ChunkHeader {
            len: len as u32,
            source: s.id.0,
            prev: s.newest_chunk,
            first_ts: s.first_ts,
            last_ts: s.prev_ts,
            count: s.count,
            crc: 0,
        };
        let spare = self.block.spare_mut();
        let (head, rest) = spare.split_at_mut(HEADER_LEN);
        rest[..payload_len].copy_from_slice(s.active.written());
        rest[payload_len..foot - HEADER_LEN].fill(0);
        header.write(head, &rest[..payload_len]);
        self.block.advance(foot);

        let chunk_no = s.dir.chunks.len();
        s.dir.chunks.push(ChunkEntry {
            addr,
            first_ts: s.first_ts,
            last_ts: s.prev_ts,
            first_seq: s.seq - u64::from(s.count),
            count: s.count,
        });
        s.newest_chunk = addr;
        s.count = 0;
        s.active.reset();
        let indexed = s.index.is_some();
        self.stats.chunks += 1;
        if indexed {
            self.throttle_index();
            self.stats.chunks_to_index += 1;
            self.send_index(IndexMsg::Chunk {
                source: idx,
                chunk_no,
                addr,
                block: Some((self.block_base, self.block.view())),
            })?;
        }
        Ok(())
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(m) => Err(Error::FlushFailed(m.clone())),
            None => Ok(()),
        }
    }

    fn handle_ack(&mut self, ack: crate::storage::flusher::FlushAck) {
        if let Err(m) = ack.result {
            log::error!("{}: {m}", self.dir.display());
            self.failed.get_or_insert(m);
        }
        self.last_acked = Some(ack.id);
        for slot in self.in_flight.iter_mut() {
            if slot.job <= ack.id {
                slot.written = true;
            }
        }
    }

    fn drain_acks(&mut self) {
        while let Ok(ack) = self.flusher.acks.try_recv() {
            self.handle_ack(ack);
        }
    }

    fn wait_ack(&mut self) -> Result<()> {
        match self.flusher.acks.recv() {
            Ok(ack) => {
                self.handle_ack(ack);
                Ok(())
            }
            Err(_) => Err(Error::FlushFailed("the flusher thread has stopped".into())),
        }
    }

    fn send(
        &mut self,
        block: SlabView<u8>,
        base: u64,
        (from, to): (usize, usize),
        durable: bool,
    ) -> Result<u64> {
        let id = self.next_job;
        self.next_job += 1;
        self.flusher
            .jobs
            .send(FlushJob {
                id,
                block,
                base,
                from,
                to,
                durable,
            })
            .map_err(|_| Error::FlushFailed("the flusher thread has stopped".into()))?;
        Ok(id)
    }

    /// Hands the full current block to the flusher and starts the next one.
    fn rotate_block(&mut self) -> Result<()> {
        self.check_failed()?;
        let cap = self.block.capacity();
        let len = self.block.len();
        self.block.spare_mut().fill(0);
        self.block.advance(cap - len);
        let from = self.block_durable - self.block_durable % IO_ALIGN;
        let job = self.send(self.block.view(), self.block_base, (from, cap), false)?;
        let next = self.free_block()?;
        let full = std::mem::replace(&mut self.block, next);
        self.in_flight.push_back(BlockSlot {
            base: self.block_base,
            block: full,
            job,
            written: false,
        });
        self.block_base += cap as u64;
        self.block_durable = 0;
        self.stats.blocks_flushed += 1;
        Ok(())
    }

    /// A block to write into: new while under the memory budget, else the
    /// oldest written one (waiting for the flusher if none is written yet).
    fn free_block(&mut self) -> Result<SlabWriter<u8>> {
        self.drain_acks();
        if self.in_flight.len() + 2 <= self.config.max_blocks_in_memory {
            return Ok(SlabWriter::new(self.layout.block_size, IO_ALIGN));
        }
        let mut waited = false;
        loop {
            if let Some(front) = self.in_flight.front() {
                if front.written {
                    if let Some(mut slot) = self.in_flight.pop_front() {
                        slot.block.reset();
                        return Ok(slot.block);
                    }
                }
            } else {
                return Ok(SlabWriter::new(self.layout.block_size, IO_ALIGN));
            }
            if !waited {
                self.stats.disk_waits += 1;
                waited = true;
            }
            self.wait_ack()?;
            self.check_failed()?;
        }
    }

    /// Publishes everything pushed so far to readers. No I/O; cost grows with
    /// the number of sources, not with data.
    pub fn sync(&mut self) {
        let sources = self
            .sources
            .iter()
            .map(|s| SourceView {
                id: s.id,
                index: s.index.clone(),
                dir: s.dir.view(),
                tail: s.active.view(),
                tail_first_ts: s.first_ts,
                tail_count: s.count,
                newest_chunk: s.newest_chunk,
                records: s.seq,
                last_ts: s.prev_ts,
            })
            .collect();
        let mut blocks: Vec<(u64, SlabView<u8>)> = self
            .in_flight
            .iter()
            .map(|s| (s.base, s.block.view()))
            .collect();
        blocks.push((self.block_base, self.block.view()));
        self.shared.snapshot.store(Arc::new(Published {
            ids: Arc::clone(&self.ids),
            sources,
            blocks,
            files: Arc::clone(&self.files),
            chunk_size: self.layout.chunk_size,
        }));
    }

    /// Makes everything pushed so far durable (sealing partial chunks), then
    /// publishes it. Blocks until the flusher has written it.
    pub fn persist(&mut self) -> Result<()> {
        self.check_failed()?;
        for i in 0..self.sources.len() {
            self.seal(i)?;
        }
        let len = self.block.len();
        // Always one durable job: it writes the current block's new bytes
        // (if any) and syncs every file written since the last sync, and
        // its acknowledgement also covers every earlier job.
        let (view, range) = if len > self.block_durable {
            let to = len.div_ceil(IO_ALIGN) * IO_ALIGN;
            let to = to.min(self.block.capacity());
            self.block.spare_mut()[..to - len].fill(0);
            let from = self.block_durable - self.block_durable % IO_ALIGN;
            // SAFETY: the flusher drops this view before acknowledging, and we
            // wait for that acknowledgement below before writing past `len`.
            (unsafe { self.block.padded_view(to) }, (from, to))
        } else {
            (self.block.view(), (0, 0))
        };
        let target = self.send(view, self.block_base, range, true)?;
        self.block_durable = self.block_durable.max(len);
        while self.last_acked.is_none_or(|a| a < target) {
            self.wait_ack()?;
        }
        self.check_failed()?;
        self.sync();
        Ok(())
    }

    /// Persists everything and stops the flusher thread.
    pub fn close(mut self) -> Result<()> {
        let r = self.persist();
        self.shutdown();
        r
    }

    fn shutdown(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let (dead_tx, _) = crossbeam_channel::unbounded();
        drop(std::mem::replace(&mut self.flusher.jobs, dead_tx));
        let (dead_tx, _) = crossbeam_channel::unbounded();
        drop(std::mem::replace(&mut self.indexer.tx, dead_tx));
        if let Some(t) = self.indexer.thread.take() {
            if t.join().is_err() {
                log::error!("{}: the indexer thread panicked", self.dir.display());
            }
        }
        if let Some(t) = self.flusher.thread.take() {
            if t.join().is_err() {
                log::error!("{}: the flusher thread panicked", self.dir.display());
            }
        }
    }

    /// A new reader of this store.
    pub fn reader(&self) -> Reader {
        Reader::new(Arc::clone(&self.shared))
    }

    /// Counters since open.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// Largest record `push` accepts with this store's chunk size.
    pub fn max_record_size(&self) -> usize {
        self.max_record
    }

    /// Why recovery cut the log's tail on open, if it did (torn write,
    /// corrupt chunk); everything before that point was kept.
    pub fn dropped_tail(&self) -> Option<&str> {
        self.dropped_tail.as_deref()
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.closed {
            if let Err(e) = self.persist() {
                log::error!("{}: persist on drop failed: {e}", self.dir.display());
            }
            self.shutdown();
        }
    }
}
