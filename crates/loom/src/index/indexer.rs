//! The indexer thread: summarises sealed chunks for the range index and
//! keeps the segment index files (`storage/segment_index/`).
//!
//! The writer hands over every sealed chunk's header (and its block while it
//! is in memory); decoding records, extracting values and filling bin
//! summaries happens here, on another core, so a range index costs the
//! ingest thread almost nothing. Until a chunk's summaries are published,
//! queries treat it like the unsealed tail and scan it, so answers stay
//! exact whatever the indexer's lag. Each chunk is also listed, with its
//! persistable summaries, in its segment's index file; a segment's file gets
//! its footer once the flusher reports the segment's data durable.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::bin_summary::BinSummary;
use crate::index::index_files::{note_complete, IndexFiles};
use crate::index::paged::SummaryPages;
use crate::index::state::IndexState;
use crate::index::summaries::{IndexSnapshot, SourceSummaries};
use crate::index::summariser::Summariser;
use crate::log::chunk::{ChunkHeader, HEADER_LEN};
use crate::log::slab::SlabView;
use crate::storage::flusher::FlusherStatus;
use crate::storage::segment_index::IndexedChunk;
use crate::storage::segments::SegmentFiles;

pub(crate) enum IndexMsg {
    /// Start indexing source `source` (the writer's dense index) from
    /// chunk `summaries.next_chunk()` on.
    Declare {
        source: usize,
        state: Arc<IndexState>,
        summaries: Box<SourceSummaries>,
    },
    /// A chunk the writer just sealed, with its block while in memory.
    /// `counted` chunks count toward the writer's lag bound.
    Sealed {
        source: usize,
        chunk_no: usize,
        addr: u64,
        header: ChunkHeader,
        block: Option<(u64, SlabView<u8>)>,
        counted: bool,
    },
    /// A recovered chunk (at `addr`) whose summaries are known (from its
    /// segment index).
    Known {
        source: usize,
        chunk_no: usize,
        addr: u64,
        bins: Vec<BinSummary>,
    },
    /// A recovered chunk (at `addr`) whose summaries are in its segment
    /// index file and stay there until a query needs them (`paged.rs`).
    Paged {
        source: usize,
        chunk_no: usize,
        addr: u64,
    },
    /// A chunk sealed before its source's index was declared (or
    /// recovered without summaries): read it from `block` or disk.
    Reindex {
        source: usize,
        chunk_no: usize,
        addr: u64,
        block: Option<(u64, SlabView<u8>)>,
    },
    /// The writer moved past segment `segment`; its last chunk ends at
    /// `data_end`, it holds `chunks` chunks, and its bytes are durable once
    /// the flusher's first `after_jobs` jobs are.
    SegmentDone {
        segment: u64,
        data_end: u64,
        chunks: u64,
        after_jobs: u64,
    },
    /// Retention dropped the chunks of `source` below `below_chunk`: free
    /// their summaries.
    Forget { source: usize, below_chunk: usize },
    /// Answered once every earlier message is processed and published.
    Barrier(Sender<()>),
}

struct SourceIndex {
    state: Arc<IndexState>,
    summaries: SourceSummaries,
}

/// Where segment index files go; `None` for a read-only store.
pub(crate) struct SegmentIndexing {
    pub dir: PathBuf,
    pub segment_size: u64,
    pub flusher: Arc<FlusherStatus>,
    /// Bytes of summaries kept in memory before the oldest complete
    /// segments' are paged out (`Config::index_cache_bytes`, halved).
    pub hot_bytes: usize,
}

pub(crate) struct Indexer {
    pub tx: Sender<IndexMsg>,
    /// Counted chunk messages processed so far (the writer compares it with
    /// what it sent to bound the indexer's lag).
    pub done: Arc<AtomicU64>,
    pub published: Arc<ArcSwap<IndexSnapshot>>,
    pub thread: Option<JoinHandle<()>>,
    /// Summaries paged out of memory, read back for queries.
    pub pages: Arc<SummaryPages>,
}

impl Indexer {
    pub(crate) fn start(
        files: Arc<SegmentFiles>,
        chunk_size: usize,
        indexing: Option<SegmentIndexing>,
        pages: Arc<SummaryPages>,
    ) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let published = Arc::new(ArcSwap::from_pointee(IndexSnapshot {
            pages: Some(Arc::clone(&pages)),
            ..IndexSnapshot::default()
        }));
        let out = Arc::clone(&published);
        let worker_pages = Arc::clone(&pages);
        let done = Arc::new(AtomicU64::new(0));
        let progress = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name("loom-indexer".into())
            .spawn(move || {
                let mut w = Worker {
                    files,
                    chunk_size,
                    sources: Vec::new(),
                    error: None,
                    buf: Vec::new(),
                    out_bins: Vec::new(),
                    summariser: Summariser::new(),
                    segs: indexing.map(|i| IndexFiles {
                        cfg: i,
                        current: None,
                        pending: Vec::new(),
                        broken: Vec::new(),
                        complete_upto: None,
                        paged_upto: None,
                    }),
                    pages: worker_pages,
                };
                w.run(rx, out, progress)
            });
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                log::error!("cannot start the indexer thread: {e}");
                None
            }
        };
        Indexer {
            tx,
            done,
            published,
            thread,
            pages,
        }
    }
}

struct Worker {
    files: Arc<SegmentFiles>,
    chunk_size: usize,
    sources: Vec<Option<SourceIndex>>,
    error: Option<String>,
    buf: Vec<u8>,
    out_bins: Vec<BinSummary>,
    /// One scratch space for every source: chunks are summarised one at a
    /// time, so a per-source one (`n_bins + 2` accumulators, 480 KB for
    /// the latency index) would only multiply memory by the number of
    /// series.
    summariser: Summariser,
    segs: Option<IndexFiles>,
    pages: Arc<SummaryPages>,
}

impl Worker {
    fn run(
        &mut self,
        rx: Receiver<IndexMsg>,
        out: Arc<ArcSwap<IndexSnapshot>>,
        progress: Arc<AtomicU64>,
    ) {
        let mut barriers = Vec::new();
        loop {
            let first = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(s) = self.segs.as_mut() {
                        s.finish_durable(&self.files);
                        note_complete(s, &self.pages);
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut msg = Some(first);
            let mut counted = 0u64;
            // Work through whatever queued up, then publish once.
            for _ in 0..4096 {
                let Some(m) = msg.take().or_else(|| rx.try_recv().ok()) else {
                    break;
                };
                match m {
                    IndexMsg::Barrier(done) => barriers.push(done),
                    other => {
                        if self.handle(other) {
                            counted += 1;
                        }
                    }
                }
            }
            if let Some(s) = self.segs.as_mut() {
                s.flush();
                s.finish_durable(&self.files);
                note_complete(s, &self.pages);
            }
            self.page_out();
            let mut held_bytes = 0;
            let sources = self
                .sources
                .iter()
                .map(|s| {
                    s.as_ref().map(|s| {
                        held_bytes += s.summaries.held_bytes();
                        s.summaries.view()
                    })
                })
                .collect();
            self.pages.set_recent(held_bytes);
            out.store(Arc::new(IndexSnapshot {
                sources,
                error: self.error.clone(),
                pages: Some(Arc::clone(&self.pages)),
                held_bytes,
            }));
            progress.fetch_add(counted, Ordering::Release);
            for b in barriers.drain(..) {
                let _ = b.send(());
            }
        }
        if let Some(s) = self.segs.as_mut() {
            s.flush();
            s.finish_durable(&self.files);
        }
    }

    /// Pages out the summaries of the oldest complete segments (their index
    /// files hold them, footer written) while the summaries in memory pass
    /// the budget. Looked at once per completed segment: between, memory
    /// grows by at most the summaries of the segment being written.
    fn page_out(&mut self) {
        let Some(segs) = self.segs.as_mut() else {
            return;
        };
        let Some(done) = segs.complete_upto else {
            return;
        };
        if segs.paged_upto == Some(done) {
            return;
        }
        segs.paged_upto = Some(done);
        let budget = segs.cfg.hot_bytes;
        loop {
            let held: usize = self
                .sources
                .iter()
                .filter_map(|s| s.as_ref())
                .map(|s| s.summaries.held_bytes())
                .sum();
            if held <= budget {
                return;
            }
            let oldest = self
                .sources
                .iter()
                .flatten()
                .filter(|s| s.state.persistable())
                .filter_map(|s| s.summaries.oldest_segment())
                .min();
            // A segment whose index file could not be written keeps its
            // summaries in memory (so do later ones: paging is by prefix).
            let Some(seg) = oldest.filter(|s| *s <= done && !segs.broken.contains(s)) else {
                return;
            };
            for s in self.sources.iter_mut().flatten() {
                if s.state.persistable() {
                    s.summaries.page_out_through(seg);
                }
            }
        }
    }

    /// Handles one message; true when it was a counted chunk.
    fn handle(&mut self, m: IndexMsg) -> bool {
        match m {
            IndexMsg::Declare {
                source,
                state,
                summaries,
            } => {
                if self.sources.len() <= source {
                    self.sources.resize_with(source + 1, || None);
                }
                self.sources[source] = Some(SourceIndex {
                    state,
                    summaries: *summaries,
                });
                false
            }
            IndexMsg::Sealed {
                source,
                chunk_no,
                addr,
                header,
                block,
                counted,
            } => {
                let summaries = self.summarise(source, chunk_no, addr, block);
                if let Some(s) = self.segs.as_mut() {
                    s.chunk(&IndexedChunk {
                        addr,
                        header,
                        summaries,
                    });
                }
                counted
            }
            IndexMsg::Known {
                source,
                chunk_no,
                addr,
                bins,
            } => {
                if let Some(Some(si)) = self.sources.get_mut(source) {
                    if si.summaries.next_chunk() == chunk_no {
                        si.summaries.push_chunk(addr, &bins);
                    }
                }
                false
            }
            IndexMsg::Paged {
                source,
                chunk_no,
                addr,
            } => {
                if let Some(Some(si)) = self.sources.get_mut(source) {
                    if si.summaries.next_chunk() == chunk_no {
                        si.summaries.push_paged(addr);
                    }
                }
                false
            }
            IndexMsg::Reindex {
                source,
                chunk_no,
                addr,
                block,
            } => {
                if let Some(bins) = self.summarise(source, chunk_no, addr, block) {
                    if let Some(s) = self.segs.as_mut() {
                        s.summaries(addr, &bins);
                    }
                }
                false
            }
            IndexMsg::SegmentDone {
                segment,
                data_end,
                chunks,
                after_jobs,
            } => {
                if let Some(s) = self.segs.as_mut() {
                    s.pending.push((segment, data_end, chunks, after_jobs));
                }
                false
            }
            IndexMsg::Forget {
                source,
                below_chunk,
            } => {
                if let Some(Some(si)) = self.sources.get_mut(source) {
                    si.summaries.forget_below(below_chunk);
                }
                false
            }
            IndexMsg::Barrier(_) => false,
        }
    }

    /// Summarises chunk `chunk_no` of `source` if it is indexed and next in
    /// line; returns the summaries when they may be persisted.
    fn summarise(
        &mut self,
        source: usize,
        chunk_no: usize,
        addr: u64,
        block: Option<(u64, SlabView<u8>)>,
    ) -> Option<Vec<BinSummary>> {
        let Some(Some(si)) = self.sources.get_mut(source) else {
            return None;
        };
        if si.summaries.next_chunk() != chunk_no {
            return None;
        }
        let r = summarise_chunk(
            si,
            addr,
            block,
            &self.files,
            self.chunk_size,
            &mut self.buf,
            &mut self.summariser,
            &mut self.out_bins,
        );
        match r {
            Ok(()) => {
                si.summaries.push_chunk(addr, &self.out_bins);
                si.state.persistable().then(|| self.out_bins.clone())
            }
            Err(e) => {
                log::error!("indexer: chunk at {addr}: {e}; it stays unindexed");
                self.error.get_or_insert(e);
                None
            }
        }
    }
}

#[allow(clippy::too_many_arguments)] // the worker's scratch buffers, lent one by one
fn summarise_chunk(
    si: &mut SourceIndex,
    addr: u64,
    block: Option<(u64, SlabView<u8>)>,
    files: &SegmentFiles,
    chunk_size: usize,
    buf: &mut Vec<u8>,
    summariser: &mut Summariser,
    out: &mut Vec<BinSummary>,
) -> Result<(), String> {
    let bytes: &[u8] = match &block {
        Some((base, view)) => view
            .as_slice()
            .get((addr - base) as usize..)
            .ok_or("chunk outside its block")?,
        None => {
            *buf = files.read_chunk(addr).map_err(|e| e.to_string())?;
            &buf[..]
        }
    };
    let header = ChunkHeader::read(bytes)?.ok_or("no chunk at this address")?;
    if block.is_none() {
        header.verify(bytes, chunk_size)?;
    }
    let len = header.len as usize;
    let payload = bytes
        .get(HEADER_LEN..len)
        .ok_or("chunk length out of bounds")?;
    summariser.summarise(&si.state, payload, header.count, out)
}
