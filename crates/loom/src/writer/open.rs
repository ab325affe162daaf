//! Opening a store: lock, layout, catalog, recovery, and the replay of what
//! recovery found into per-source state (time index, declared schemas and
//! range indexes with their persisted summaries).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::bin_summary::BinSummary;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::directory::{ChunkEntry, Directory};
use crate::index::indexer::{IndexMsg, Indexer, SegmentIndexing};
use crate::index::paged::SummaryPages;
use crate::index::state::IndexState;
use crate::index::summaries::{IndexSnapshot, SourceSummaries};
use crate::log::chunk::{HEADER_LEN, NO_CHUNK};
use crate::log::record::MAX_RECORD_OVERHEAD;
use crate::log::slab::SlabWriter;
use crate::reader::Reader;
use crate::schema::SourceSchema;
use crate::snapshot::{Published, Shared};
use crate::source::SourceId;
use crate::storage::catalog;
use crate::storage::flusher::{Flusher, FlusherConfig};
use crate::storage::layout::Layout;
use crate::storage::lock::DirLock;
use crate::storage::recovery::{self, Mode, Recovered};
use crate::storage::segments::SegmentFiles;

use super::{SourceState, Writer, WriterStats, IO_ALIGN, MIN_FIRST_PAYLOAD};

/// Per-source state rebuilt from recovery and the catalog, and the messages
/// that bring the indexer up to date with it.
pub(crate) struct Replayed {
    pub sources: Vec<SourceState>,
    pub ids: HashMap<SourceId, usize>,
    pub index_msgs: Vec<IndexMsg>,
    pub reindexed: u64,
}

/// A source's state before its first record; its open chunk's buffer
/// starts at `first_payload` bytes and grows as records arrive.
pub(crate) fn new_source(id: SourceId, first_payload: usize) -> SourceState {
    SourceState {
        id,
        schema: None,
        index: None,
        active: SlabWriter::new(first_payload, 8),
        first_ts: 0,
        prev_ts: 0,
        count: 0,
        newest_chunk: NO_CHUNK,
        dir: Directory::new(),
        seq: 0,
        journaled_len: 0,
        journaled_count: 0,
        journaled_ts: 0,
        cut_at: 0,
    }
}

/// Builds every source's directory from the recovered chunks, attaches the
/// catalog's schemas and indexes, and lists what the indexer must be told:
/// summaries known from the segment index, chunks it must read again.
pub(crate) fn replay(
    recovered: &mut Recovered,
    catalog: &[(SourceId, SourceSchema)],
    first_payload: usize,
    segment_size: u64,
) -> Replayed {
    let mut sources: Vec<SourceState> = Vec::new();
    let mut ids: HashMap<SourceId, usize> = HashMap::new();
    let mut known: Vec<Vec<KnownChunk>> = Vec::new();
    let mut slot = |id: SourceId, sources: &mut Vec<SourceState>, known: &mut Vec<_>| {
        *ids.entry(id).or_insert_with(|| {
            sources.push(new_source(id, first_payload));
            known.push(Vec::new());
            sources.len() - 1
        })
    };
    for (id, schema) in catalog {
        let i = slot(*id, &mut sources, &mut known);
        sources[i].schema = Some(Arc::new(schema.clone()));
        sources[i].index = IndexState::from_schema(schema).map(Arc::new);
    }
    for c in recovered.chunks.iter_mut() {
        let i = slot(SourceId(c.header.source), &mut sources, &mut known);
        let s = &mut sources[i];
        s.dir.push(
            ChunkEntry {
                addr: c.addr,
                first_ts: c.header.first_ts,
                last_ts: c.header.last_ts,
                first_seq: s.seq,
                count: c.header.count,
                len: c.header.len,
            },
            c.addr / segment_size.max(1),
        );
        s.seq += u64::from(c.header.count);
        s.prev_ts = c.header.last_ts;
        s.newest_chunk = c.addr;
        known[i].push(KnownChunk {
            addr: c.addr,
            bins: c.summaries.take(),
            paged: c.paged,
        });
    }
    let mut index_msgs = Vec::new();
    let mut reindexed = 0u64;
    for (i, s) in sources.iter().enumerate() {
        let Some(state) = &s.index else { continue };
        let seg = if state.persistable() { segment_size } else { 0 };
        let mut summaries = SourceSummaries::new(seg);
        let chunks = std::mem::take(&mut known[i]);
        // The prefix of chunks whose summaries are known (in memory or in
        // their index file) is handed over whole; the rest one by one.
        let prefix = chunks
            .iter()
            .take_while(|c| c.bins.is_some() || c.paged)
            .count();
        for c in &chunks[..prefix] {
            match &c.bins {
                Some(b) => summaries.push_chunk(c.addr, b),
                None => summaries.push_paged(c.addr),
            }
        }
        index_msgs.push(IndexMsg::Declare {
            source: i,
            state: Arc::clone(state),
            summaries: Box::new(summaries),
        });
        for (chunk_no, c) in chunks.into_iter().enumerate().skip(prefix) {
            index_msgs.push(match (c.bins, c.paged) {
                (Some(bins), _) => IndexMsg::Known {
                    source: i,
                    chunk_no,
                    addr: c.addr,
                    bins,
                },
                (None, true) => IndexMsg::Paged {
                    source: i,
                    chunk_no,
                    addr: c.addr,
                },
                (None, false) => {
                    reindexed += 1;
                    IndexMsg::Reindex {
                        source: i,
                        chunk_no,
                        addr: c.addr,
                        block: None,
                    }
                }
            });
        }
    }
    Replayed {
        sources,
        ids,
        index_msgs,
        reindexed,
    }
}

/// A recovered chunk's summaries as replay hands them to the indexer.
struct KnownChunk {
    addr: u64,
    bins: Option<Vec<BinSummary>>,
    paged: bool,
}

/// The flusher thread of a writer whose first block starts at `block_base`.
fn start_flusher(
    dir: &Path,
    layout: Layout,
    config: &Config,
    files: &Arc<SegmentFiles>,
    block_base: u64,
) -> Result<Flusher> {
    let flusher = Flusher::start(FlusherConfig {
        dir: dir.to_path_buf(),
        layout,
        mode: config.flush_mode,
        sync_data: config.sync_data,
        sync_interval: Duration::from_millis(config.sync_interval_ms),
        retry_interval: Duration::from_millis(config.write_retry_ms),
        files: Arc::clone(files),
        compression: config.compression_level,
        start: block_base,
        hurry_at: config.store_raw_when_queued,
        nice: config.flusher_nice,
    });
    if flusher.thread.is_none() {
        return Err(Error::FlushFailed(
            "the flusher thread could not start".into(),
        ));
    }
    Ok(flusher)
}

/// Puts the records of the journal of open chunks back into their
/// sources' open chunks; returns how many, and the journal's last file
/// number (0 without one).
fn reopen_chunks(
    dir: &Path,
    replayed: &mut Replayed,
    first_payload: usize,
    layout: Layout,
    retained_from: u64,
) -> Result<(u64, u64)> {
    let (entries, last) = crate::storage::open_chunks::read(dir)?;
    if entries.is_empty() {
        return Ok((0, last));
    }
    let full = layout.chunk_size - HEADER_LEN;
    let n = super::journal::apply(
        &mut replayed.sources,
        &mut replayed.ids,
        entries,
        (first_payload, full),
        retained_from,
    );
    log::info!(
        "{}: {n} records of open chunks reopened from the journal",
        dir.display()
    );
    Ok((n, last))
}

fn start_indexer(
    files: &Arc<SegmentFiles>,
    layout: Layout,
    indexing: Option<SegmentIndexing>,
    pages: Arc<SummaryPages>,
    msgs: Vec<IndexMsg>,
) -> Result<Indexer> {
    let indexer = Indexer::start(
        Arc::clone(files),
        layout.chunk_size,
        indexing,
        Arc::clone(&pages),
    );
    // Publish the summaries recovered from disk before the store is handed
    // out, so the first query uses them instead of scanning every chunk.
    let mut initial = IndexSnapshot {
        pages: Some(pages),
        ..IndexSnapshot::default()
    };
    for m in &msgs {
        if let IndexMsg::Declare {
            source, summaries, ..
        } = m
        {
            if initial.sources.len() <= *source {
                initial.sources.resize_with(source + 1, || None);
            }
            initial.sources[*source] = Some(summaries.view());
            initial.held_bytes += summaries.held_bytes();
        }
    }
    indexer.pages.set_recent(initial.held_bytes);
    indexer.published.store(Arc::new(initial));
    if indexer.thread.is_none() {
        return Err(Error::FlushFailed(
            "the indexer thread could not start".into(),
        ));
    }
    for m in msgs {
        indexer
            .tx
            .send(m)
            .map_err(|_| Error::FlushFailed("the indexer thread has stopped".into()))?;
    }
    Ok(indexer)
}

/// Summaries take about this many times more bytes in memory (48 per bin
/// summary, and a span per chunk) than in a segment index file (varints):
/// 4.7 measured on the reopen example's store (`loom info`: 39.3 MB from
/// 8 MiB of files), rounded up so a reopen stays within the in-memory half
/// of the budget. A reopen reads the newest index files' summaries up to
/// that half divided by this.
const FILE_TO_MEMORY: usize = 6;

/// The cache of summaries paged back in: what the newest segments'
/// summaries (at most half, `SegmentIndexing`) leave of `index_cache_bytes`.
fn pages(dir: &Path, layout: Layout, config: &Config) -> Arc<SummaryPages> {
    Arc::new(SummaryPages::new(
        dir.to_path_buf(),
        layout.segment_size,
        config.index_cache_bytes,
    ))
}

/// Segment file access with the recovered frame lists installed.
fn segment_files(
    dir: &Path,
    layout: Layout,
    recovered: &mut Recovered,
    cache_bytes: usize,
) -> Arc<SegmentFiles> {
    let files = SegmentFiles::new(dir.to_path_buf(), layout, cache_bytes);
    for (seg, frames) in recovered.frames.drain(..) {
        files.add_frames(seg, &frames);
    }
    Arc::new(files)
}

fn log_recovery(dir: &Path, r: &Recovered, sources: usize) {
    if r.report.chunks > 0 || r.report.lost_anything() {
        log::info!(
            "{}: recovered {} records in {} chunks of {} sources in {:.0} ms ({} segments from their index, {} scanned, {} MB read)",
            dir.display(),
            r.report.records,
            r.report.chunks,
            sources,
            r.report.millis,
            r.report.segments_from_index,
            r.report.segments_scanned,
            r.report.bytes_scanned / 1_000_000
        );
    }
}

/// The writer resumes in a new segment, so the recovered last one is
/// complete: the indexer's message saying so (its bytes are on disk
/// already: no flusher job to wait for).
fn end_segment_done(
    recovered: &Recovered,
    end_segment: Option<u64>,
    layout: Layout,
) -> Option<IndexMsg> {
    let seg = end_segment?;
    let base = seg * layout.segment_size;
    Some(IndexMsg::SegmentDone {
        segment: seg,
        data_end: recovered.end,
        chunks: recovered.chunks.iter().filter(|c| c.addr >= base).count() as u64,
        after_jobs: 0,
    })
}

/// Opens the store in `dir` for writing: creates it when empty, recovers
/// every valid record when it holds data (corrupt chunks inside the log are
/// skipped and reported, a torn tail at its end is cut; see
/// [`Writer::recovery`]), never deletes valid data. Declared schemas and
/// their persisted summaries come back with it. Fails at once with
/// [`Error::Locked`] when another writer holds the store.
pub fn open(dir: &Path, config: Config) -> Result<(Writer, Reader)> {
    config.validate()?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock = DirLock::acquire(dir)?;
    let layout = Layout::load_or_store(dir, Layout::from_config(&config))?;
    let catalog = catalog::load(dir)?;
    let hot = config.index_cache_bytes / 2;
    let mut recovered = recovery::recover(
        dir,
        layout,
        Mode::Repair,
        config.verify_on_open,
        hot / FILE_TO_MEMORY,
    )?;
    let files = segment_files(dir, layout, &mut recovered, config.chunk_cache_bytes);
    let end = recovered.end;
    // The writer never appends to a recovered segment (a compressed file
    // is only ever appended by the run that started it): it resumes at the
    // next segment, leaving the rest of the last one's addresses unused.
    let end_segment = (end > 0).then(|| (end - 1) / layout.segment_size);
    let block_base = end_segment.map_or(0, |s| (s + 1) * layout.segment_size);
    let flusher = start_flusher(dir, layout, &config, &files, block_base)?;
    let end_done = end_segment_done(&recovered, end_segment, layout);
    let first = super::first_payload(&config, &layout);
    let mut replayed = replay(&mut recovered, &catalog, first, layout.segment_size);
    let retained_from = recovered
        .segments
        .first()
        .map_or(0, |s| s.index * layout.segment_size);
    let (journaled, journal_last) =
        reopen_chunks(dir, &mut replayed, first, layout, retained_from)?;
    log_recovery(dir, &recovered, replayed.sources.len());
    let mut msgs = replayed.index_msgs;
    msgs.extend(end_done);
    let indexer = start_indexer(
        &files,
        layout,
        Some(SegmentIndexing {
            dir: dir.to_path_buf(),
            segment_size: layout.segment_size,
            flusher: Arc::clone(&flusher.status),
            hot_bytes: hot,
        }),
        pages(dir, layout, &config),
        msgs,
    )?;
    let empty = Arc::new(Published::empty(Arc::clone(&files)));
    let shared = Arc::new(Shared {
        snapshot: ArcSwap::new(Arc::clone(&empty)),
        durable: ArcSwap::new(empty),
        index: Arc::clone(&indexer.published),
        _indexer: None,
    });
    let dir_paging = super::dir_paging::DirPaging::recovered(
        &recovered.segments,
        block_base / layout.segment_size,
    );
    let stats = WriterStats {
        recovered_records: recovered.report.records + journaled,
        chunks_reindexed: replayed.reindexed,
        ..WriterStats::default()
    };
    let mut w = Writer {
        dir: dir.to_path_buf(),
        max_record: layout.chunk_size - HEADER_LEN - MAX_RECORD_OVERHEAD,
        config,
        layout,
        shared: Arc::clone(&shared),
        files,
        sources: replayed.sources,
        ids: Arc::new(replayed.ids),
        catalog,
        block: SlabWriter::new(layout.block_size, IO_ALIGN),
        block_base,
        block_durable: 0,
        in_flight: VecDeque::new(),
        flusher,
        indexer,
        next_job: 0,
        last_acked: None,
        failed: None,
        stats,
        report: recovered.report,
        segments: recovered.segments.into_iter().collect(),
        retained_from,
        seg_chunks: 0,
        last_chunk_end: end,
        closing: false,
        closed: false,
        lock: Some(lock),
        journal: None,
        journal_next: journal_last + 1,
        dir_paging,
    };
    // A new journal file holding every reopened open chunk whole; the old
    // files go once it is durable.
    w.write_journal()?;
    w.note_segment(block_base);
    w.page_out_directory();
    w.sync();
    // What recovery found is on disk: durable.
    w.publish_durable();
    let reader = Reader::new(shared);
    Ok((w, reader))
}

/// Opens the store in `dir` for reading only, while a writer may hold it:
/// the reader sees what was durable (flushed or persisted) when it was
/// opened, with every declared schema and range index. Nothing on disk is
/// changed. Summaries missing from the segment index are rebuilt in the
/// background; answers are exact meanwhile.
pub fn open_read_only(dir: &Path) -> Result<Reader> {
    let layout = Layout::load(dir)?.ok_or_else(|| Error::Corrupted {
        address: 0,
        reason: format!("{} is not a Loom store (no loom.meta)", dir.display()),
    })?;
    let catalog = catalog::load(dir)?;
    let config = Config::default();
    let hot = config.index_cache_bytes / 2;
    let mut recovered =
        recovery::recover(dir, layout, Mode::ReadOnly, false, hot / FILE_TO_MEMORY)?;
    let files = segment_files(dir, layout, &mut recovered, config.chunk_cache_bytes);
    // Nothing is ever pushed to a read-only store's sources.
    let mut replayed = replay(
        &mut recovered,
        &catalog,
        MIN_FIRST_PAYLOAD,
        layout.segment_size,
    );
    let retained_from = recovered
        .segments
        .first()
        .map_or(0, |s| s.index * layout.segment_size);
    reopen_chunks(dir, &mut replayed, MIN_FIRST_PAYLOAD, layout, retained_from)?;
    log_recovery(dir, &recovered, replayed.sources.len());
    let pages = pages(dir, layout, &config);
    // No writer here: only segments taken from their complete index file
    // are paged out (live_from 0).
    let mut paging = super::dir_paging::DirPaging::recovered(&recovered.segments, 0);
    super::dir_paging::page_out(dir, &mut replayed.sources, &pages, &mut paging);
    let indexer = start_indexer(
        &files,
        layout,
        None,
        Arc::clone(&pages),
        replayed.index_msgs,
    )?;
    let ids = Arc::new(replayed.ids);
    let published = super::publish::published(
        &replayed.sources,
        &ids,
        Vec::new(),
        &files,
        retained_from,
        &pages,
    );
    let published = Arc::new(published);
    let shared = Arc::new(Shared {
        snapshot: ArcSwap::new(Arc::clone(&published)),
        durable: ArcSwap::new(published),
        index: Arc::clone(&indexer.published),
        _indexer: Some(indexer.tx),
    });
    Ok(Reader::new(shared))
}

impl Writer {
    /// Records the segment a new block starts in (retention bookkeeping).
    pub(super) fn note_segment(&mut self, base: u64) {
        let seg = base / self.layout.segment_size;
        if self.segments.back().is_none_or(|s| s.index < seg) {
            self.segments
                .push_back(crate::storage::recovery::SegmentInfo {
                    index: seg,
                    newest_ts: 0,
                    bytes: 0,
                    from_index: false,
                });
        }
    }
}
