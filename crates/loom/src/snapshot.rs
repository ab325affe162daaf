//! A consistent, immutable view of the store as of one `sync`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use arc_swap::ArcSwap;

use crate::index::directory::DirectoryView;
use crate::index::state::IndexState;
use crate::index::summaries::{IndexSnapshot, SummaryIter};
use crate::log::chunk::{ChunkHeader, HEADER_LEN};
use crate::log::record::RecordIter;
use crate::log::slab::SlabView;
use crate::schema::SourceSchema;
use crate::source::SourceId;
use crate::storage::segments::SegmentFiles;

/// State shared between the writer and every reader.
pub(crate) struct Shared {
    pub snapshot: ArcSwap<Published>,
    /// The snapshot the last `persist` (or the open) published: everything
    /// in it is durable.
    pub durable: ArcSwap<Published>,
    pub index: Arc<ArcSwap<IndexSnapshot>>,
    /// Keeps a read-only store's indexer thread alive as long as a reader is.
    pub _indexer: Option<crossbeam_channel::Sender<crate::index::indexer::IndexMsg>>,
}

/// What readers see of one source.
#[derive(Clone)]
pub(crate) struct SourceView {
    pub id: SourceId,
    pub schema: Option<Arc<SourceSchema>>,
    pub index: Option<Arc<IndexState>>,
    pub dir: DirectoryView,
    /// Records pushed but not yet sealed into a chunk.
    pub tail: SlabView<u8>,
    pub tail_first_ts: u64,
    pub tail_count: u32,
    /// Address of the newest sealed chunk, `NO_CHUNK` if none.
    pub newest_chunk: u64,
    pub records: u64,
    pub last_ts: u64,
}

/// What the writer publishes at each `sync`.
pub(crate) struct Published {
    pub(crate) ids: Arc<HashMap<SourceId, usize>>,
    pub(crate) sources: Vec<SourceView>,
    /// In-memory blocks by base address, oldest first.
    pub(crate) blocks: Vec<(u64, SlabView<u8>)>,
    pub(crate) files: Arc<SegmentFiles>,
    /// Log addresses below this were dropped by retention.
    pub(crate) retained_from: u64,
}

impl Published {
    pub(crate) fn empty(files: Arc<SegmentFiles>) -> Self {
        Published {
            ids: Arc::new(HashMap::new()),
            sources: Vec::new(),
            blocks: Vec::new(),
            files,
            retained_from: 0,
        }
    }
}

/// A chunk's bytes, borrowed from memory or read from disk (shared with
/// the cache of chunks read).
pub(crate) enum ChunkBytes<'a> {
    Memory(&'a [u8]),
    Disk(Arc<Vec<u8>>),
}

impl ChunkBytes<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            ChunkBytes::Memory(b) => b,
            ChunkBytes::Disk(v) => v,
        }
    }
}

/// How many index entries a source holds in memory (see
/// [`Snapshot::index_held`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHeld {
    /// Time-index (directory) entries: one per chunk.
    pub chunks: usize,
    /// Chunks with range-index summaries.
    pub summarised_chunks: usize,
    /// Range-index bin summaries (one per bin a chunk's values touch).
    pub bin_summaries: usize,
}

/// Index memory of the whole store (see [`Snapshot::index_memory`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexMemory {
    /// Bytes of range-index summaries held in memory for recent chunks
    /// (the indexer pages out the oldest complete segments' past
    /// `Config::index_cache_bytes / 2`).
    pub summaries_bytes: usize,
    /// Bytes of summaries read back from segment index files and cached
    /// (at most `cache_budget`, plus the one segment a query is reading).
    pub cache_bytes: usize,
    /// Pages cached: one source's summaries of one segment each.
    pub cache_pages: usize,
    /// Bytes the cache may hold now: what `summaries_bytes` leaves of
    /// `Config::index_cache_bytes`, and at least half of it.
    pub cache_budget: usize,
    /// Pages read from index files so far (cache misses).
    pub page_loads: u64,
    /// Bytes of time-index (directory) entries the writer holds in
    /// memory: one per chunk of the recent segments, and a run per source
    /// and older segment whose entries are paged out (past an eighth of
    /// `Config::index_cache_bytes`).
    pub directory_bytes: usize,
    /// Bytes of directory entries read back from segment index files and
    /// cached (in the same cache and budget as the summaries:
    /// `cache_bytes + directory_cache_bytes <= cache_budget`, plus the
    /// page a query is reading).
    pub directory_cache_bytes: usize,
    /// Directory pages (one source's entries of one segment) read from
    /// index files so far.
    pub directory_page_loads: u64,
}

impl IndexMemory {
    /// Everything above together: the index memory the store holds.
    pub fn held_bytes(&self) -> usize {
        self.summaries_bytes + self.cache_bytes + self.directory_bytes + self.directory_cache_bytes
    }
}

/// What a source's sealed chunks take (see [`Snapshot::storage_use`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageUse {
    /// Sealed chunks retained.
    pub chunks: u64,
    /// Records in them.
    pub records: u64,
    /// Their bytes uncompressed (chunk headers and padding included).
    pub chunk_bytes: u64,
    /// Their bytes in segment files: compressed frames (headers and
    /// padding included), uncompressed chunks in version-1 segments and
    /// chunks still in memory.
    pub stored_bytes: u64,
}

/// The store as of one `sync`, with the range-index summaries built so
/// far: every query on it sees the same records. Cheap to hold and to clone:
/// it shares memory with the writer.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) p: Arc<Published>,
    pub(crate) ix: Arc<IndexSnapshot>,
}

impl Snapshot {
    pub(crate) fn view(&self, id: SourceId) -> Result<&SourceView> {
        self.p
            .ids
            .get(&id)
            .and_then(|&i| self.p.sources.get(i))
            .ok_or(Error::UnknownSource(id))
    }

    /// The summaries of chunk `chunk_no` of a source, `None` while the
    /// indexer has not summarised it (the chunk must then be scanned).
    pub(crate) fn summaries(&self, sv: &SourceView, chunk_no: usize) -> Option<SummaryIter<'_>> {
        let idx = *self.p.ids.get(&sv.id)?;
        self.ix.summaries((idx, sv.id.0), chunk_no, || {
            sv.dir.get(chunk_no).ok().flatten().map(|c| c.addr)
        })
    }

    /// The summaries of chunk `chunk_no` when the chunk lies wholly inside
    /// `[t0, t1]` and is summarised; `None` when it must be scanned.
    pub(crate) fn covered_summaries(
        &self,
        sv: &SourceView,
        chunk_no: usize,
        c: &crate::index::directory::ChunkEntry,
        (t0, t1): (u64, u64),
    ) -> Option<SummaryIter<'_>> {
        if c.first_ts >= t0 && c.last_ts <= t1 {
            // The entry's address, not `summaries`' second lookup of it.
            let idx = *self.p.ids.get(&sv.id)?;
            self.ix.summaries((idx, sv.id.0), chunk_no, || Some(c.addr))
        } else {
            None
        }
    }

    /// Whether chunk `chunk_no` may hold a value in `[lo, hi]`: true when
    /// its summaries say so or when it has none yet.
    pub(crate) fn may_hold(&self, sv: &SourceView, chunk_no: usize, lo: u64, hi: u64) -> bool {
        match self.summaries(sv, chunk_no) {
            Some(mut bins) => bins.any(|b| b.min <= hi && b.max >= lo),
            None => true,
        }
    }

    /// First error the indexer met, if any (its chunks are scanned instead).
    pub fn index_error(&self) -> Option<&str> {
        self.ix.error.as_deref()
    }

    pub(crate) fn index_of<'a>(&self, sv: &'a SourceView) -> Result<&'a IndexState> {
        sv.index.as_deref().ok_or(Error::NoRangeIndex(sv.id))
    }

    /// Ids of every source in the store, sorted.
    pub fn sources(&self) -> Vec<SourceId> {
        let mut ids: Vec<SourceId> = self.p.sources.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids
    }

    /// The schema a source was declared with, `None` for an unknown source
    /// or one declared with a Rust extractor only.
    pub fn schema(&self, id: SourceId) -> Option<&SourceSchema> {
        self.view(id).ok().and_then(|s| s.schema.as_deref())
    }

    /// Every source that has a schema, sorted by id.
    pub fn schemas(&self) -> Vec<(SourceId, &SourceSchema)> {
        let mut out: Vec<(SourceId, &SourceSchema)> = self
            .p
            .sources
            .iter()
            .filter_map(|s| s.schema.as_deref().map(|sc| (s.id, sc)))
            .collect();
        out.sort_unstable_by_key(|(id, _)| *id);
        out
    }

    /// Time span `(first, last)` of a source's retained records, `None` if it has none.
    pub fn time_span(&self, id: SourceId) -> Option<(u64, u64)> {
        let sv = self.view(id).ok()?;
        // The first retained chunk is a paged-out run's first (held) or
        // in memory: nothing is paged in.
        let first = match sv.dir.get(sv.dir.start).ok().flatten() {
            Some(c) => c.first_ts,
            None if sv.tail_count > 0 => sv.tail_first_ts,
            None => return None,
        };
        Some((first, sv.last_ts))
    }

    /// In-memory index entries of a source (its time index and range-index
    /// summaries); retention frees those of dropped chunks in whole slabs,
    /// so these stay proportional to what the store keeps.
    pub fn index_held(&self, id: SourceId) -> Option<IndexHeld> {
        let sv = self.view(id).ok()?;
        let idx = *self.p.ids.get(&id)?;
        let (spans, bins) = self.ix.held(idx).unwrap_or((0, 0));
        Some(IndexHeld {
            chunks: sv.dir.held_entries(),
            summarised_chunks: spans,
            bin_summaries: bins,
        })
    }

    /// The index memory of the whole store: summaries held for recent
    /// chunks, summaries paged back in and cached, and time-index entries.
    /// Walks the sources once.
    pub fn index_memory(&self) -> IndexMemory {
        let pages = self.ix.pages.as_ref().map(|p| (p.stats(), p.budget()));
        let directory_bytes = self.p.sources.iter().map(|s| s.dir.held_bytes()).sum();
        IndexMemory {
            summaries_bytes: self.ix.held_bytes,
            cache_bytes: pages.map_or(0, |(s, _)| s.bytes),
            cache_pages: pages.map_or(0, |(s, _)| s.pages),
            cache_budget: pages.map_or(0, |(_, b)| b),
            page_loads: pages.map_or(0, |(s, _)| s.loads),
            directory_bytes,
            directory_cache_bytes: pages.map_or(0, |(s, _)| s.chunk_bytes),
            directory_page_loads: pages.map_or(0, |(s, _)| s.chunk_loads),
        }
    }

    /// What the source's retained sealed chunks take, uncompressed and in
    /// segment files; `None` for an unknown source. Reads no data, walks
    /// the source's time index (one entry per chunk).
    pub fn storage_use(&self, id: SourceId) -> Option<StorageUse> {
        let sv = self.view(id).ok()?;
        let mut u = StorageUse::default();
        for i in sv.dir.start..sv.dir.len() {
            let c = match sv.dir.get(i) {
                Ok(Some(c)) => c,
                Ok(None) => continue,
                Err(e) => {
                    log::error!("storage use of source {id}: {e}");
                    return None;
                }
            };
            let len = match c.len {
                // Recovered from a version-1 index file, which has no lengths.
                0 => self.p.files.raw_chunk_len(c.addr).unwrap_or(0),
                l => l,
            };
            let raw = crate::log::chunk::padded(len as usize) as u64;
            u.chunks += 1;
            u.records += u64::from(c.count);
            u.chunk_bytes += raw;
            u.stored_bytes += self.p.files.stored_len(c.addr).unwrap_or(raw);
        }
        Some(u)
    }

    /// Records of a source that retention has not dropped.
    pub fn retained_count(&self, id: SourceId) -> u64 {
        let Ok(sv) = self.view(id) else { return 0 };
        let dropped = sv
            .dir
            .get(sv.dir.start)
            .ok()
            .flatten()
            .map_or(sv.records - u64::from(sv.tail_count), |c| c.first_seq);
        sv.records - dropped
    }

    /// Timestamp of the source's newest record, `None` for an empty or unknown source.
    pub fn latest_timestamp(&self, id: SourceId) -> Option<u64> {
        self.view(id)
            .ok()
            .filter(|s| s.records > 0)
            .map(|s| s.last_ts)
    }

    /// Number of records of a source visible in this snapshot.
    pub fn record_count(&self, id: SourceId) -> u64 {
        self.view(id).map(|s| s.records).unwrap_or(0)
    }

    /// Reads the chunk at `addr` with its header, from memory when its block
    /// is still there, else from its segment file (checksum verified).
    pub(crate) fn chunk(&self, addr: u64) -> Result<(ChunkHeader, ChunkBytes<'_>)> {
        for (base, block) in &self.p.blocks {
            let bytes = block.as_slice();
            if addr >= *base && addr < base + bytes.len() as u64 {
                let at = &bytes[(addr - base) as usize..];
                let header = match ChunkHeader::read(at) {
                    Ok(Some(h)) => h,
                    Ok(None) => return Err(Error::corrupted(addr, "no chunk at this address")),
                    Err(reason) => return Err(Error::corrupted(addr, reason)),
                };
                let len = header.len as usize;
                if len < HEADER_LEN || len > at.len() {
                    return Err(Error::corrupted(
                        addr,
                        format!("chunk length {len} out of bounds"),
                    ));
                }
                return Ok((header, ChunkBytes::Memory(&at[..len])));
            }
        }
        let buf = self.p.files.read_chunk_cached(addr)?;
        let header = match ChunkHeader::read(&buf) {
            Ok(Some(h)) => h,
            Ok(None) => return Err(Error::corrupted(addr, "no chunk at this address on disk")),
            Err(reason) => return Err(Error::corrupted(addr, reason)),
        };
        Ok((header, ChunkBytes::Disk(buf)))
    }

    /// Calls `f(ts, bytes)` for every record of the chunk at `addr` whose
    /// timestamp is in `[t0, t1]`; returns the chunk's header.
    pub(crate) fn each_in_chunk(
        &self,
        addr: u64,
        t0: u64,
        t1: u64,
        mut f: impl FnMut(u64, &[u8]),
    ) -> Result<ChunkHeader> {
        let (header, data) = self.chunk(addr)?;
        let payload = &data.bytes()[HEADER_LEN..];
        for rec in RecordIter::new(payload, header.first_ts, header.count) {
            let (ts, bytes) = rec.map_err(|r| Error::corrupted(addr, r))?;
            if ts > t1 {
                break;
            }
            if ts >= t0 {
                f(ts, bytes);
            }
        }
        Ok(header)
    }

    /// Same as `each_in_chunk` for the source's unsealed tail.
    pub(crate) fn each_in_tail(
        &self,
        sv: &SourceView,
        t0: u64,
        t1: u64,
        mut f: impl FnMut(u64, &[u8]),
    ) -> Result<()> {
        if sv.tail_count == 0 || sv.last_ts < t0 || sv.tail_first_ts > t1 {
            return Ok(());
        }
        for rec in RecordIter::new(sv.tail.as_slice(), sv.tail_first_ts, sv.tail_count) {
            let (ts, bytes) = rec.map_err(|r| Error::corrupted(u64::MAX, r))?;
            if ts > t1 {
                break;
            }
            if ts >= t0 {
                f(ts, bytes);
            }
        }
        Ok(())
    }
}
