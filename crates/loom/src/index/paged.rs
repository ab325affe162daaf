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

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::bin_summary::BinSummary;
use crate::storage::segment_index;

/// Bytes one summary takes in memory.
pub(crate) const SUMMARY_BYTES: usize = std::mem::size_of::<BinSummary>();

/// The summaries of one source's chunks in one segment, as read from the
/// segment's index file.
pub(crate) struct SegmentSummaries {
    /// Chunk addresses, ascending, with where their summaries sit in `bins`.
    chunks: Vec<(u64, u32, u32)>,
    bins: Vec<BinSummary>,
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
        SegmentSummaries {
            chunks: flat.chunks,
            bins: flat.bins,
        }
    }

    fn bytes(&self) -> usize {
        self.bins.capacity() * SUMMARY_BYTES + self.chunks.capacity() * 16 + 64
    }

    fn find(&self, addr: u64) -> Option<(u32, u32)> {
        let end = self.chunks.partition_point(|c| c.0 <= addr);
        let (a, start, len) = *self.chunks.get(end.checked_sub(1)?)?;
        (a == addr).then_some((start, len))
    }
}

/// One chunk's summaries held by a paged segment.
pub(crate) struct PagedBins {
    seg: Arc<SegmentSummaries>,
    next: usize,
    end: usize,
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

#[derive(Default)]
struct Lru {
    segs: HashMap<Page, (Arc<SegmentSummaries>, u64)>,
    bytes: usize,
    tick: u64,
    /// Segments below this were dropped by retention: never loaded again.
    floor: u64,
}

/// What the cache of paged summaries holds and did (see
/// [`IndexMemory`](crate::snapshot::IndexMemory)).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PagesStats {
    pub bytes: usize,
    /// Pages held: (segment, source) pairs.
    pub pages: usize,
    pub loads: u64,
}

/// The cache of paged summaries, shared by the indexer and every snapshot.
pub(crate) struct SummaryPages {
    dir: PathBuf,
    segment_size: u64,
    /// `Config::index_cache_bytes`: for the recent summaries and this cache.
    total: usize,
    /// Bytes of recent summaries the indexer holds (it tells after each
    /// batch): the cache may use what they leave, and at least half.
    recent: AtomicUsize,
    lru: Mutex<Lru>,
    loads: AtomicU64,
}

impl SummaryPages {
    pub(crate) fn new(dir: PathBuf, segment_size: u64, total: usize) -> Self {
        SummaryPages {
            dir,
            segment_size: segment_size.max(1),
            total,
            recent: AtomicUsize::new(0),
            lru: Mutex::new(Lru::default()),
            loads: AtomicU64::new(0),
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
        let seg = self.page((segment, source))?;
        let (start, len) = seg.find(addr)?;
        Some(PagedBins {
            seg,
            next: start as usize,
            end: start as usize + len as usize,
        })
    }

    fn page(&self, page: Page) -> Option<Arc<SegmentSummaries>> {
        let segment = page.0;
        {
            let mut lru = self.lock();
            if segment < lru.floor {
                return None;
            }
            lru.tick += 1;
            let tick = lru.tick;
            if let Some((s, used)) = lru.segs.get_mut(&page) {
                *used = tick;
                return Some(Arc::clone(s));
            }
        }
        // Read outside the lock: other queries go on meanwhile (two that
        // miss the same page at once both read it; the second insert
        // replaces the first).
        let loaded = Arc::new(SegmentSummaries::read(&self.dir, page));
        self.loads.fetch_add(1, Ordering::Relaxed);
        let mut lru = self.lock();
        if segment < lru.floor {
            return Some(loaded);
        }
        lru.tick += 1;
        let tick = lru.tick;
        let bytes = loaded.bytes();
        if let Some((old, _)) = lru.segs.insert(page, (Arc::clone(&loaded), tick)) {
            lru.bytes -= old.bytes();
        }
        lru.bytes += bytes;
        // Evict the least recently used pages down to the budget; the one
        // just loaded stays even when it alone is larger.
        let budget = self.budget();
        while lru.bytes > budget && lru.segs.len() > 1 {
            let Some((&victim, _)) = lru
                .segs
                .iter()
                .filter(|(p, _)| **p != page)
                .min_by_key(|(_, (_, used))| *used)
            else {
                break;
            };
            if let Some((old, _)) = lru.segs.remove(&victim) {
                lru.bytes -= old.bytes();
            }
        }
        Some(loaded)
    }

    /// Drops the cached summaries of segments below `segment` (retention
    /// removed them) and never loads them again.
    pub(crate) fn forget_below(&self, segment: u64) {
        let mut lru = self.lock();
        lru.floor = lru.floor.max(segment);
        let floor = lru.floor;
        let gone: Vec<Page> = lru.segs.keys().copied().filter(|p| p.0 < floor).collect();
        for s in gone {
            if let Some((old, _)) = lru.segs.remove(&s) {
                lru.bytes -= old.bytes();
            }
        }
    }

    /// Bytes the cache may hold now: what the recent summaries leave of
    /// the total, and at least half of it (the recent ones may pass their
    /// half by the segment being written).
    pub(crate) fn budget(&self) -> usize {
        let recent = self.recent.load(Ordering::Relaxed);
        self.total - recent.min(self.total / 2)
    }

    /// The indexer holds `bytes` of recent summaries.
    pub(crate) fn set_recent(&self, bytes: usize) {
        self.recent.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> PagesStats {
        let lru = self.lock();
        PagesStats {
            bytes: lru.bytes,
            pages: lru.segs.len(),
            loads: self.loads.load(Ordering::Relaxed),
        }
    }
}
