//! Summaries paged from the segment index files: range-index summaries of
//! older segments are not kept in memory for the store's whole life but
//! read back from the `segment-N.idx` file that already holds them, one
//! source of one segment at a time (a page), into a cache with a byte
//! budget (least recently used page evicted first). Pages are per source
//! because queries are: a window over one series must not page in (and
//! evict for) every other series' summaries of the same segments; the
//! first 60-minute soak with whole-segment pages read 37 segments a second
//! and its statements' p99 went from 50 ms to 1 s. A chunk whose summaries the file does not hold
//! (a broken or missing file) reads as "not summarised", and the query
//! scans that chunk instead, so answers stay exact whatever is paged out.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::index::compact::{compact, BinCount, ChunkTotal};
use crate::index::directory::{ChunkEntry, PagedRun, ENTRY_BYTES};
use crate::storage::segment_index;
use crate::storage::segments::DROPPED_GRACE;

/// Bytes one summary takes in memory.
pub(crate) const SUMMARY_BYTES: usize = std::mem::size_of::<BinSummary>();

/// The summaries of one source's chunks in one segment, as read from the
/// segment's index file.
pub(crate) struct SegmentSummaries {
    /// Chunk addresses, ascending, with where their summaries sit in `bins`.
    chunks: Vec<(u64, u32, u32)>,
    bins: Vec<BinSummary>,
    /// `bins`' bins and counts, and each chunk's total (`compact`).
    counts: Vec<BinCount>,
    totals: Vec<ChunkTotal>,
}

impl SegmentSummaries {
    fn read(dir: &std::path::Path, (segment, source): Page) -> Self {
        let mut flat = match segment_index::read_flat(dir, segment, source) {
            Ok(f) => f,
            Err(e) => {
                log::warn!(
                    "paging in the summaries of source {source} in segment {segment}: {e}; its chunks are scanned"
                );
                segment_index::FlatSummaries::default()
            }
        };
        // Late summaries (a chunk indexed after its entry) come after the
        // chunk entries: the stable sort keeps the latest last, and the
        // lookup takes the last of equal addresses.
        flat.chunks.sort_by_key(|c| c.0);
        flat.chunks.shrink_to_fit();
        flat.bins.shrink_to_fit();
        let (counts, totals) = compact(&flat.chunks, &flat.bins);
        SegmentSummaries {
            chunks: flat.chunks,
            bins: flat.bins,
            counts,
            totals,
        }
    }

    fn bytes(&self) -> usize {
        self.bins.capacity() * SUMMARY_BYTES
            + self.chunks.capacity() * 16
            + self.counts.capacity() * std::mem::size_of::<BinCount>()
            + self.totals.capacity() * std::mem::size_of::<ChunkTotal>()
            + 64
    }

    /// Where the summaries of the chunk at `addr` sit, and its position in
    /// `chunks` (the last of equal addresses). Positions `hint` and
    /// `hint + 1` are tried first: a query reads a segment's chunks in
    /// order, and a binary search per chunk (a dozen cache misses) was a
    /// tenth of a dashboard panel's time over an hour.
    fn find(&self, addr: u64, hint: usize) -> Option<((u32, u32), usize)> {
        let last_of = |i: usize| {
            let &(a, start, len) = self.chunks.get(i)?;
            let next_differs = self.chunks.get(i + 1).is_none_or(|n| n.0 != addr);
            (a == addr && next_differs).then_some(((start, len), i))
        };
        if let Some(found) = last_of(hint).or_else(|| last_of(hint.checked_add(1)?)) {
            return Some(found);
        }
        let end = self.chunks.partition_point(|c| c.0 <= addr);
        let i = end.checked_sub(1)?;
        let (a, start, len) = *self.chunks.get(i)?;
        (a == addr).then_some(((start, len), i))
    }
}

/// One chunk's summaries held by a paged segment.
#[derive(Clone)]
pub(crate) struct PagedBins {
    seg: Arc<SegmentSummaries>,
    next: usize,
    end: usize,
    /// The chunk's position in the page's `chunks` (and `totals`).
    chunk: usize,
}

impl PagedBins {
    /// The bins and counts of the summaries not iterated yet, and the
    /// chunk's total (all of its summaries).
    pub(crate) fn compact(&self) -> Option<(&[BinCount], ChunkTotal)> {
        let counts = self.seg.counts.get(self.next..self.end)?;
        Some((counts, *self.seg.totals.get(self.chunk)?))
    }

    /// The summary of bin `bin`, if the chunk has one, its position found
    /// in the compact copies (as `bin_summary::find_bin` finds it).
    pub(crate) fn find_compact(&self, bin: u32) -> Option<BinSummary> {
        let counts = self.seg.counts.get(self.next..self.end)?;
        let k = crate::index::compact::position(counts, bin)?;
        self.seg.bins.get(self.next.checked_add(k)?).copied()
    }

    /// The summary of bin `bin`, if the chunk has one (summaries are in
    /// bin order: a binary search).
    pub(crate) fn find_bin(&self, bin: u32) -> Option<BinSummary> {
        crate::bin_summary::find_bin(self.seg.bins.get(self.next..self.end)?, bin)
    }
}

impl Iterator for PagedBins {
    type Item = BinSummary;

    fn next(&mut self) -> Option<BinSummary> {
        if self.next >= self.end {
            return None;
        }
        let b = self.seg.bins.get(self.next).copied();
        self.next += 1;
        b
    }
}

/// A page: (segment, source id).
type Page = (u64, u64);

/// What a page of the cache holds: one source's summaries or directory
/// entries of one segment. Both share one budget.
#[derive(Clone)]
enum Cached {
    Summaries(Arc<SegmentSummaries>),
    Chunks(Arc<Vec<ChunkEntry>>),
}

impl Cached {
    fn bytes(&self) -> usize {
        match self {
            Cached::Summaries(s) => s.bytes(),
            Cached::Chunks(c) => c.capacity() * ENTRY_BYTES + 64,
        }
    }

    fn is_chunks(&self) -> bool {
        matches!(self, Cached::Chunks(_))
    }
}

/// A page's key: which page and whether it holds directory entries.
type Key = (Page, bool);

#[derive(Default)]
struct Lru {
    /// Looked up once per chunk a query reads summaries or entries of
    /// (hundreds of thousands for a dashboard panel over an hour): a
    /// cheap hash, not SipHash (keys are ours, not an attacker's).
    segs: rustc_hash::FxHashMap<Key, (Cached, u64)>,
    bytes: usize,
    /// Of `bytes`, those of directory entries.
    chunk_bytes: usize,
    tick: u64,
    /// Segments below this were dropped by retention: never loaded again.
    floor: u64,
}

impl Lru {
    fn add(&mut self, c: &Cached) {
        self.bytes += c.bytes();
        if c.is_chunks() {
            self.chunk_bytes += c.bytes();
        }
    }

    fn sub(&mut self, c: &Cached) {
        self.bytes -= c.bytes();
        if c.is_chunks() {
            self.chunk_bytes -= c.bytes();
        }
    }
}

/// What the cache of paged summaries holds and did (see
/// [`IndexMemory`](crate::snapshot::IndexMemory)).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PagesStats {
    /// Bytes of summaries cached.
    pub bytes: usize,
    /// Summary pages held: (segment, source) pairs.
    pub pages: usize,
    pub loads: u64,
    /// Bytes of directory entries cached.
    pub chunk_bytes: usize,
    /// Directory pages read from index files so far.
    pub chunk_loads: u64,
}

/// The cache of paged summaries and directory entries, shared by the
/// writer, the indexer and every snapshot.
pub(crate) struct SummaryPages {
    dir: PathBuf,
    segment_size: u64,
    /// `Config::index_cache_bytes`: for the recent summaries and this cache.
    total: usize,
    /// Bytes of recent summaries the indexer holds (it tells after each
    /// batch): the cache may use what they leave, and at least half.
    recent: AtomicUsize,
    /// Bytes of directory entries (and runs) the writer holds in memory
    /// (it tells when it pages out): counted with `recent`.
    recent_dir: AtomicUsize,
    /// One past the newest segment whose index file got its footer in this
    /// run (0: none yet); footers are written in order.
    complete_below: AtomicU64,
    lru: Mutex<Lru>,
    loads: AtomicU64,
    chunk_loads: AtomicU64,
    /// Index files of segments retention dropped, kept open for
    /// `DROPPED_GRACE` as their data files are (`SegmentFiles::retire`):
    /// a query on a snapshot taken before the drop may still page their
    /// directory entries in.
    retired: Mutex<VecDeque<(u64, Arc<File>, Instant)>>,
    /// Tells this cache apart in a thread's [`LAST_PAGE`].
    id: u64,
    /// `Lru::floor`, readable without the lock.
    floor: AtomicU64,
}

/// Ids of [`SummaryPages`], one per open store.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The pages this thread last got (one of summaries, one of directory
    /// entries: a query asks for both per chunk), by cache id and key: a query reads
    /// the chunks of one segment in a row (hundreds of thousands of chunks
    /// for a dashboard panel over an hour), and taking the lock and the
    /// LRU's map for each was a third of such a panel's time. A page's
    /// contents never change (a complete segment's index file), so a page
    /// kept here after the LRU dropped it is still right; it keeps at most
    /// one page per query thread above the budget.
    static LAST_PAGE: std::cell::RefCell<[Option<(u64, Key, Cached)>; 2]> =
        const { std::cell::RefCell::new([None, None]) };
    /// One past where this thread's last summaries lookup found its chunk
    /// in its page: where the next chunk's most likely is (only a hint,
    /// checked, whatever page it came from).
    static FOUND_AT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl SummaryPages {
    pub(crate) fn new(dir: PathBuf, segment_size: u64, total: usize) -> Self {
        SummaryPages {
            dir,
            segment_size: segment_size.max(1),
            total,
            recent: AtomicUsize::new(0),
            recent_dir: AtomicUsize::new(0),
            complete_below: AtomicU64::new(0),
            lru: Mutex::new(Lru::default()),
            loads: AtomicU64::new(0),
            chunk_loads: AtomicU64::new(0),
            retired: Mutex::new(VecDeque::new()),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            floor: AtomicU64::new(0),
        }
    }

    /// Retention is about to remove segment `segment`'s index file: keep
    /// it open (unlinked, as its data file) for `DROPPED_GRACE`.
    pub(crate) fn retire_index(&self, segment: u64) {
        let file = File::open(segment_index::path(&self.dir, segment));
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        retired.retain(|(_, _, at)| at.elapsed() < DROPPED_GRACE);
        if let Ok(f) = file {
            retired.push_back((segment, Arc::new(f), Instant::now()));
        }
    }

    /// Segment `segment`'s index file's bytes: from the file, or from the
    /// handle kept when retention dropped it.
    fn index_bytes(&self, segment: u64) -> Result<Vec<u8>> {
        let p = segment_index::path(&self.dir, segment);
        match std::fs::read(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let kept = {
                    let retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
                    retired
                        .iter()
                        .find(|(s, _, at)| *s == segment && at.elapsed() < DROPPED_GRACE)
                        .map(|(_, f, _)| Arc::clone(f))
                };
                let Some(f) = kept else {
                    return Err(Error::io(&p, e));
                };
                let mut bytes = Vec::new();
                (&*f)
                    .seek(SeekFrom::Start(0))
                    .and_then(|_| (&*f).read_to_end(&mut bytes))
                    .map_err(|e| Error::io(&p, e))?;
                Ok(bytes)
            }
            r => r.map_err(|e| Error::io(&p, e)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Lru> {
        // A reader that panicked while holding the lock left the map whole
        // (every update is a single insert or remove): keep using it.
        self.lru.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The summaries of the chunk of source `source` (its id, as chunk
    /// headers give it) at `addr` from its segment's index file (paging in
    /// that source's summaries of the segment when they are not cached),
    /// `None` when the file does not hold them.
    pub(crate) fn get(&self, source: u64, addr: u64) -> Option<PagedBins> {
        let segment = addr / self.segment_size;
        let page = (segment, source);
        let loaded = self.page((page, false), || {
            self.loads.fetch_add(1, Ordering::Relaxed);
            Ok(Cached::Summaries(Arc::new(SegmentSummaries::read(
                &self.dir, page,
            ))))
        });
        let Ok(Some(Cached::Summaries(seg))) = loaded else {
            return None;
        };
        let ((start, len), at) = seg.find(addr, FOUND_AT.get())?;
        FOUND_AT.set(at + 1);
        Some(PagedBins {
            seg,
            next: start as usize,
            end: start as usize + len as usize,
            chunk: at,
        })
    }

    /// The directory entries of source `source`'s paged-out `run`, from
    /// its segment's index file (or the cache), `first_seq` rebuilt from
    /// the run's. Fails when the file cannot be read or no longer lists
    /// exactly the run's chunks.
    pub(crate) fn chunk_entries(
        &self,
        source: u64,
        run: &PagedRun,
    ) -> Result<Arc<Vec<ChunkEntry>>> {
        let page = (run.segment, source);
        let loaded = self.page((page, true), || {
            self.chunk_loads.fetch_add(1, Ordering::Relaxed);
            read_entries(self, source, run).map(|v| Cached::Chunks(Arc::new(v)))
        })?;
        match loaded {
            Some(Cached::Chunks(c)) if c.len() == run.chunks => Ok(c),
            _ => Err(Error::corrupted(
                run.first.addr,
                format!(
                    "the directory entries of source {source} in segment {} were dropped by retention",
                    run.segment
                ),
            )),
        }
    }

    /// The page `key` from the cache, else loaded by `load` (outside the
    /// lock) and cached, evicting the least recently used pages down to
    /// the budget; `None` below the retention floor.
    fn page(&self, key: Key, load: impl FnOnce() -> Result<Cached>) -> Result<Option<Cached>> {
        let segment = key.0 .0;
        if segment >= self.floor.load(Ordering::Acquire) {
            let last = LAST_PAGE.with(|l| match &l.borrow()[usize::from(key.1)] {
                Some((id, k, c)) if *id == self.id && *k == key => Some(c.clone()),
                _ => None,
            });
            if last.is_some() {
                return Ok(last);
            }
        }
        let got = self.page_locked(key, load)?;
        if let Some(c) = &got {
            if segment >= self.floor.load(Ordering::Acquire) {
                LAST_PAGE.with(|l| {
                    l.borrow_mut()[usize::from(key.1)] = Some((self.id, key, c.clone()));
                });
            }
        }
        Ok(got)
    }

    /// [`Self::page`] through the LRU (under its lock).
    fn page_locked(
        &self,
        key: Key,
        load: impl FnOnce() -> Result<Cached>,
    ) -> Result<Option<Cached>> {
        let segment = key.0 .0;
        {
            let mut lru = self.lock();
            if segment < lru.floor {
                // Retention dropped the segment. Summaries read as absent
                // (the chunk is scanned, from the segment file kept open
                // for older snapshots); directory entries are still needed
                // to find those chunks, and the index file stays on disk
                // for the same grace (`Writer::retire_index`): read it
                // without caching.
                drop(lru);
                return if key.1 { load().map(Some) } else { Ok(None) };
            }
            lru.tick += 1;
            let tick = lru.tick;
            if let Some((s, used)) = lru.segs.get_mut(&key) {
                *used = tick;
                return Ok(Some(s.clone()));
            }
        }
        // Read outside the lock: other queries go on meanwhile (two that
        // miss the same page at once both read it; the second insert
        // replaces the first).
        let loaded = load()?;
        let mut lru = self.lock();
        if segment < lru.floor {
            return Ok(Some(loaded));
        }
        lru.tick += 1;
        let tick = lru.tick;
        if let Some((old, _)) = lru.segs.insert(key, (loaded.clone(), tick)) {
            lru.sub(&old);
        }
        lru.add(&loaded);
        // Evict the least recently used pages down to the budget; the one
        // just loaded stays even when it alone is larger.
        let budget = self.budget();
        while lru.bytes > budget && lru.segs.len() > 1 {
            let Some((&victim, _)) = lru
                .segs
                .iter()
                .filter(|(p, _)| **p != key)
                .min_by_key(|(_, (_, used))| *used)
            else {
                break;
            };
            if let Some((old, _)) = lru.segs.remove(&victim) {
                lru.sub(&old);
            }
        }
        Ok(Some(loaded))
    }

    /// Drops the cached summaries of segments below `segment` (retention
    /// removed them) and never loads them again.
    pub(crate) fn forget_below(&self, segment: u64) {
        let mut lru = self.lock();
        lru.floor = lru.floor.max(segment);
        let floor = lru.floor;
        self.floor.store(floor, Ordering::Release);
        let gone: Vec<Key> = lru
            .segs
            .keys()
            .copied()
            .filter(|p| p.0 .0 < floor)
            .collect();
        for s in gone {
            if let Some((old, _)) = lru.segs.remove(&s) {
                lru.sub(&old);
            }
        }
    }

    /// Bytes the cache may hold now: what the recent summaries leave of
    /// the total, and at least half of it (the recent ones may pass their
    /// half by the segment being written).
    pub(crate) fn budget(&self) -> usize {
        let recent = self.recent.load(Ordering::Relaxed) + self.recent_dir.load(Ordering::Relaxed);
        self.total - recent.min(self.total / 2)
    }

    /// The writer holds `bytes` of directory entries in memory.
    pub(crate) fn set_recent_directory(&self, bytes: usize) {
        self.recent_dir.store(bytes, Ordering::Relaxed);
    }

    /// Bytes of directory entries the writer may hold in memory before it
    /// pages out the oldest complete segments': an eighth of
    /// `Config::index_cache_bytes`.
    pub(crate) fn directory_keep(&self) -> usize {
        self.total / 8
    }

    /// Segment `segment`'s index file got its footer.
    pub(crate) fn note_complete(&self, segment: u64) {
        self.complete_below
            .fetch_max(segment + 1, Ordering::Release);
    }

    /// Segments below this got their index file's footer in this run.
    pub(crate) fn complete_below(&self) -> u64 {
        self.complete_below.load(Ordering::Acquire)
    }

    /// The indexer holds `bytes` of recent summaries.
    pub(crate) fn set_recent(&self, bytes: usize) {
        self.recent.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> PagesStats {
        let lru = self.lock();
        PagesStats {
            bytes: lru.bytes - lru.chunk_bytes,
            pages: lru.segs.keys().filter(|k| !k.1).count(),
            loads: self.loads.load(Ordering::Relaxed),
            chunk_bytes: lru.chunk_bytes,
            chunk_loads: self.chunk_loads.load(Ordering::Relaxed),
        }
    }
}

/// Source `source`'s entries of `run` from the run's segment index file,
/// checked against the run (count, first entry, last address, records).
fn read_entries(pages: &SummaryPages, source: u64, run: &PagedRun) -> Result<Vec<ChunkEntry>> {
    let dir = &pages.dir;
    let bytes = pages.index_bytes(run.segment)?;
    let listed = segment_index::decode_chunk_entries(&bytes, run.segment, source);
    let mut out = Vec::with_capacity(listed.len());
    let mut seq = run.first.first_seq;
    for (addr, h) in listed {
        out.push(ChunkEntry {
            addr,
            first_ts: h.first_ts,
            last_ts: h.last_ts,
            first_seq: seq,
            count: h.count,
            len: h.len,
        });
        seq += u64::from(h.count);
    }
    let matches = out.len() == run.chunks
        && out.first() == Some(&run.first)
        && out.last().map(|c| c.addr) == Some(run.last_addr)
        && seq == run.first.first_seq + run.records;
    if !matches {
        return Err(Error::corrupted(
            run.first.addr,
            format!(
                "segment index file {} no longer lists the {} chunks of source {source} the directory paged out",
                segment_index::path(dir, run.segment).display(),
                run.chunks
            ),
        ));
    }
    Ok(out)
}
