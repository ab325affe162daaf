//! Read access to segment files, shared by all readers: version-1 segments
//! hold chunks at their log addresses, version-2 segments hold compressed
//! frames (`frame.rs`) found through a per-segment frame list.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::log::chunk::ChunkHeader;
use crate::storage::chunk_cache::ChunkCache;
use crate::storage::frame::{FrameHeader, FrameLoc};
use crate::storage::layout::Layout;

/// Opens segment files on demand and reads chunks from them.
pub(crate) struct SegmentFiles {
    dir: PathBuf,
    layout: Layout,
    open: Mutex<HashMap<u64, Arc<File>>>,
    /// Frames of every version-2 segment, by log address; a segment not
    /// listed is version 1.
    frames: RwLock<HashMap<u64, Vec<FrameLoc>>>,
    /// Chunks queries read, kept for the next ones.
    cache: ChunkCache,
    /// Segments retention dropped, still readable for [`DROPPED_GRACE`]:
    /// a query on a snapshot taken before the drop reads them through
    /// their open (unlinked) file and their frame list, so it answers for
    /// its snapshot instead of failing on a missing file.
    dropped: Mutex<Vec<Dropped>>,
}

/// How long a dropped segment stays readable: longer than any query runs
/// (loom-app stops a statement after 10 s by default). Its disk space is
/// freed once the last handle closes.
pub(crate) const DROPPED_GRACE: Duration = Duration::from_secs(60);

/// A segment retention dropped, kept for queries already running.
struct Dropped {
    segment: u64,
    at: Instant,
    file: Option<Arc<File>>,
    frames: Option<Vec<FrameLoc>>,
}

fn locked<T>(r: std::sync::LockResult<T>) -> T {
    match r {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl SegmentFiles {
    /// Segment files of the store in `dir`; up to `cache_bytes` of chunks
    /// read by queries are kept.
    pub(crate) fn new(dir: PathBuf, layout: Layout, cache_bytes: usize) -> Self {
        SegmentFiles {
            dir,
            layout,
            open: Mutex::new(HashMap::new()),
            frames: RwLock::new(HashMap::new()),
            cache: ChunkCache::new(cache_bytes),
            dropped: Mutex::new(Vec::new()),
        }
    }

    fn file(&self, index: u64) -> Result<Arc<File>> {
        let mut open = locked(self.open.lock());
        if let Some(f) = open.get(&index) {
            return Ok(Arc::clone(f));
        }
        if let Some(f) = locked(self.dropped.lock())
            .iter()
            .find(|d| d.segment == index)
            .and_then(|d| d.file.clone())
        {
            return Ok(f);
        }
        let path = Layout::segment_path(&self.dir, index);
        let f = Arc::new(File::open(&path).map_err(|e| Error::io(&path, e))?);
        open.insert(index, Arc::clone(&f));
        Ok(f)
    }

    /// Keeps segment `segment` readable for [`DROPPED_GRACE`] before
    /// retention deletes its file: its file is opened (if it is not yet)
    /// and, with its frame list, moved aside for queries already running.
    /// Segments dropped longer ago are let go.
    pub(crate) fn retire(&self, segment: u64) {
        let file = locked(self.open.lock()).remove(&segment).or_else(|| {
            File::open(Layout::segment_path(&self.dir, segment))
                .ok()
                .map(Arc::new)
        });
        let frames = locked(self.frames.write()).remove(&segment);
        let mut dropped = locked(self.dropped.lock());
        dropped.retain(|d| d.at.elapsed() < DROPPED_GRACE);
        dropped.push(Dropped {
            segment,
            at: Instant::now(),
            file,
            frames,
        });
    }

    /// Closes segments below `index` (dropped by retention).
    pub(crate) fn forget_below(&self, index: u64) {
        locked(self.open.lock()).retain(|&s, _| s >= index);
        locked(self.frames.write()).retain(|&s, _| s >= index);
        self.cache
            .forget_below(index.saturating_mul(self.layout.segment_size));
    }

    /// Marks `segment` as version 2 and lists more of its frames (in
    /// address order, after those already listed).
    pub(crate) fn add_frames(&self, segment: u64, frames: &[FrameLoc]) {
        locked(self.frames.write())
            .entry(segment)
            .or_default()
            .extend_from_slice(frames);
    }

    /// Bytes the frames listed so far take in version-2 segment `segment`
    /// (where its file ends once they are written), `None` for a segment
    /// with none listed.
    pub(crate) fn stored_bytes(&self, segment: u64) -> Option<u64> {
        let frames = locked(self.frames.read());
        let last = frames.get(&segment)?.last()?;
        Some(last.offset + crate::log::chunk::padded(last.len as usize) as u64)
    }

    /// The frames of a version-2 segment, `None` for a version-1 one.
    pub(crate) fn frames_of(&self, segment: u64) -> Option<Vec<FrameLoc>> {
        locked(self.frames.read()).get(&segment).cloned()
    }

    /// Bytes the chunk at `addr` takes in its segment file when that is a
    /// version-2 one (its padded frame), `None` otherwise.
    pub(crate) fn stored_len(&self, addr: u64) -> Option<u64> {
        let seg = self.layout.locate(addr).0;
        self.frame_at(seg, addr)
            .flatten()
            .map(|f| crate::log::chunk::padded(f.len as usize) as u64)
    }

    /// The length a chunk's header declares, read from a version-1
    /// segment (for stores whose index files predate chunk lengths).
    pub(crate) fn raw_chunk_len(&self, addr: u64) -> Option<u32> {
        let (seg, off) = self.layout.locate(addr);
        let mut h = [0u8; 8];
        let n = self.read_file(seg, off, &mut h).ok()?;
        (n == 8).then(|| u32::from_le_bytes([h[4], h[5], h[6], h[7]]))
    }

    fn frame_at(&self, segment: u64, addr: u64) -> Option<Option<FrameLoc>> {
        let find = |list: &Vec<FrameLoc>| {
            list.binary_search_by_key(&addr, |f| f.addr)
                .ok()
                .map(|i| list[i])
        };
        if let Some(list) = locked(self.frames.read()).get(&segment) {
            return Some(find(list));
        }
        let dropped = locked(self.dropped.lock());
        let d = dropped.iter().find(|d| d.segment == segment)?;
        d.frames.as_ref().map(find)
    }

    /// Reads up to `buf.len()` bytes at file offset `off` of `seg`; returns
    /// how many were read (fewer at the end of the file).
    fn read_file(&self, seg: u64, off: u64, buf: &mut [u8]) -> Result<usize> {
        let f = self.file(seg)?;
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(Layout::segment_path(&self.dir, seg), e)),
            }
        }
        Ok(done)
    }

    /// [`Self::read_chunk`] through the cache of chunks queries read.
    pub(crate) fn read_chunk_cached(&self, addr: u64) -> Result<Arc<Vec<u8>>> {
        if let Some(c) = self.cache.get(addr) {
            return Ok(c);
        }
        // An `Arc<Vec>` takes the decoded buffer as it is (`Arc<[u8]>` would
        // copy it).
        let c = Arc::new(self.read_chunk(addr)?);
        self.cache.put(addr, Arc::clone(&c));
        Ok(c)
    }

    /// The chunk at log address `addr` (header and payload, as in a block),
    /// checksums verified, decompressed from a version-2 segment.
    pub(crate) fn read_chunk(&self, addr: u64) -> Result<Vec<u8>> {
        let (seg, off) = self.layout.locate(addr);
        let cs = self.layout.chunk_size;
        match self.frame_at(seg, addr) {
            Some(None) => Err(Error::corrupted(addr, "no chunk at this address on disk")),
            Some(Some(loc)) => {
                let mut buf = vec![0u8; loc.len as usize];
                let n = self.read_file(seg, loc.offset, &mut buf)?;
                buf.truncate(n);
                let h = match FrameHeader::read(&buf, cs) {
                    Ok(Some(h)) if h.addr == addr => h,
                    Ok(Some(h)) => {
                        let why = format!("the frame at this offset holds address {}", h.addr);
                        return Err(Error::corrupted(addr, why));
                    }
                    Ok(None) => return Err(Error::corrupted(addr, "zeros where a frame was")),
                    Err(reason) => return Err(Error::corrupted(addr, reason)),
                };
                h.verify(&buf).map_err(|r| Error::corrupted(addr, r))?;
                h.decode(&buf).map_err(|r| Error::corrupted(addr, r))
            }
            None => {
                let max = (self.layout.segment_size - off).min(cs as u64) as usize;
                let mut buf = vec![0u8; max];
                let n = self.read_file(seg, off, &mut buf)?;
                buf.truncate(n);
                let header = match ChunkHeader::read(&buf) {
                    Ok(Some(h)) => h,
                    Ok(None) => {
                        return Err(Error::corrupted(addr, "no chunk at this address on disk"))
                    }
                    Err(reason) => return Err(Error::corrupted(addr, reason)),
                };
                header
                    .verify(&buf, cs)
                    .map_err(|reason| Error::corrupted(addr, reason))?;
                buf.truncate(header.len as usize);
                Ok(buf)
            }
        }
    }
}
