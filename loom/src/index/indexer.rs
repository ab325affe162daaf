//! The indexer thread: builds range-index summaries for sealed chunks.
//!
//! The writer only hands over `(source, chunk number, address, block)` when
//! it seals a chunk of an indexed source; decoding the records, extracting
//! values and filling bin summaries happens here, on another core, so
//! declaring a range index costs the ingest thread almost nothing. Until a
//! chunk's summaries are published, queries treat it like the unsealed tail
//! and scan it, so answers stay exact whatever the indexer's lag.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, Sender};

use crate::index::bins::BinSummary;
use crate::log::chunk::{ChunkHeader, HEADER_LEN};
use crate::log::record::for_each_bytes;
use crate::log::slab::{AppendVec, AppendView, SlabView};
use crate::snapshot::IndexState;
use crate::storage::segments::SegmentFiles;

/// Entries per slab page of the index logs.
const PAGE: usize = 4096;

/// Where one chunk's summaries sit in its source's `bins` log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinSpan {
    pub start: u64,
    pub len: u32,
}

pub(crate) enum IndexMsg {
    /// Start indexing source `source` (the writer's dense index).
    Declare {
        source: usize,
        state: Arc<IndexState>,
    },
    /// Chunk number `chunk_no` of `source`, at `addr`, in `block` (base,
    /// bytes) when it is still in memory, else on disk.
    Chunk {
        source: usize,
        chunk_no: usize,
        addr: u64,
        block: Option<(u64, SlabView<u8>)>,
    },
    /// Answered once every earlier message is processed and published.
    Barrier(Sender<()>),
}

struct SourceIndex {
    state: Arc<IndexState>,
    spans: AppendVec<BinSpan>,
    bins: AppendVec<BinSummary>,
    acc: Vec<BinSummary>,
    touched: Vec<u32>,
}

/// Readers' view of one source's summaries.
#[derive(Clone)]
pub(crate) struct SourceIndexView {
    pub spans: AppendView<BinSpan>,
    pub bins: AppendView<BinSummary>,
}

/// Readers' view of every source's summaries, by the writer's source index.
#[derive(Default)]
pub(crate) struct IndexSnapshot {
    pub sources: Vec<Option<SourceIndexView>>,
    /// First error the indexer met (a chunk it could not read); such chunks
    /// stay unindexed and are scanned.
    pub error: Option<String>,
}

impl IndexSnapshot {
    /// The summaries of chunk `chunk_no` of source `source`, `None` if that
    /// chunk is not indexed (yet).
    pub(crate) fn summaries(
        &self,
        source: usize,
        chunk_no: usize,
    ) -> Option<impl Iterator<Item = BinSummary> + '_> {
        let v = self.sources.get(source)?.as_ref()?;
        let span = v.spans.get(chunk_no)?;
        Some(
            (span.start..span.start + u64::from(span.len))
                .filter_map(move |i| v.bins.get(i as usize)),
        )
    }
}

pub(crate) struct Indexer {
    pub tx: Sender<IndexMsg>,
    /// Chunk messages processed so far (the writer compares it with what it
    /// sent to bound the indexer's lag).
    pub done: Arc<AtomicU64>,
    pub published: Arc<ArcSwap<IndexSnapshot>>,
    pub thread: Option<JoinHandle<()>>,
}

impl Indexer {
    pub(crate) fn start(files: Arc<SegmentFiles>, chunk_size: usize) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let published = Arc::new(ArcSwap::from_pointee(IndexSnapshot::default()));
        let out = Arc::clone(&published);
        let done = Arc::new(AtomicU64::new(0));
        let progress = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name("loom-indexer".into())
            .spawn(move || run(rx, out, files, chunk_size, progress));
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
        }
    }
}

fn run(
    rx: Receiver<IndexMsg>,
    out: Arc<ArcSwap<IndexSnapshot>>,
    files: Arc<SegmentFiles>,
    chunk_size: usize,
    progress: Arc<AtomicU64>,
) {
    let mut sources: Vec<Option<SourceIndex>> = Vec::new();
    let mut error: Option<String> = None;
    let mut barriers = Vec::new();
    let mut buf = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut msg = Some(first);
        let mut chunks = 0u64;
        // Work through whatever queued up, then publish once.
        for _ in 0..4096 {
            let Some(m) = msg.take().or_else(|| rx.try_recv().ok()) else {
                break;
            };
            match m {
                IndexMsg::Declare { source, state } => {
                    if sources.len() <= source {
                        sources.resize_with(source + 1, || None);
                    }
                    let total = state.bins.total();
                    sources[source] = Some(SourceIndex {
                        state,
                        spans: AppendVec::new(PAGE),
                        bins: AppendVec::new(PAGE),
                        acc: vec![BinSummary::default(); total],
                        touched: Vec::new(),
                    });
                }
                IndexMsg::Chunk {
                    source,
                    chunk_no,
                    addr,
                    block,
                } => {
                    chunks += 1;
                    let Some(Some(si)) = sources.get_mut(source) else {
                        continue;
                    };
                    if si.spans.len() != chunk_no {
                        continue;
                    }
                    if let Err(e) = index_chunk(si, addr, block, &files, chunk_size, &mut buf) {
                        log::error!("indexer: chunk at {addr}: {e}; it stays unindexed");
                        error.get_or_insert(e);
                    }
                }
                IndexMsg::Barrier(done) => barriers.push(done),
            }
        }
        out.store(Arc::new(IndexSnapshot {
            sources: sources
                .iter()
                .map(|s| {
                    s.as_ref().map(|s| SourceIndexView {
                        spans: s.spans.view(),
                        bins: s.bins.view(),
                    })
                })
                .collect(),
            error: error.clone(),
        }));
        progress.fetch_add(chunks, Ordering::Release);
        for b in barriers.drain(..) {
            let _ = b.send(());
        }
    }
}

fn index_chunk(
    si: &mut SourceIndex,
    addr: u64,
    block: Option<(u64, SlabView<u8>)>,
    files: &SegmentFiles,
    chunk_size: usize,
    buf: &mut Vec<u8>,
) -> Result<(), String> {
    let bytes: &[u8] = match &block {
        Some((base, view)) => view
            .as_slice()
            .get((addr - base) as usize..)
            .ok_or("chunk outside its block")?,
        None => {
            buf.resize(chunk_size, 0);
            let n = files.read_at(addr, buf).map_err(|e| e.to_string())?;
            &buf[..n]
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
    let state = &si.state;
    let acc = &mut si.acc;
    // Bins touched by this chunk, so emitting and resetting costs per
    // non-empty bin, not per declared bin (sources may declare thousands).
    let touched = &mut si.touched;
    touched.clear();
    for_each_bytes(payload, header.count, |b| {
        let v = state.value(b);
        let bin = state.bins.bin_of(v);
        if let Some(slot) = acc.get_mut(bin as usize) {
            if slot.count == 0 {
                touched.push(bin);
            }
            slot.add(v);
        }
    })?;
    touched.sort_unstable();
    let start = si.bins.len() as u64;
    for &bin in touched.iter() {
        let sm = std::mem::take(&mut si.acc[bin as usize]);
        si.bins.push(BinSummary { bin, ..sm });
    }
    si.spans.push(BinSpan {
        start,
        len: touched.len() as u32,
    });
    Ok(())
}
