//! Read access to segment files, shared by all readers: version-1 segments
//! hold chunks at their log addresses, version-2 segments hold compressed
//! frames (`frame.rs`) found through a per-segment frame list.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

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
        }
    }

    fn file(&self, index: u64) -> Result<Arc<File>> {
        let mut open = locked(self.open.lock());
        if let Some(f) = open.get(&index) {
            return Ok(Arc::clone(f));
        }
        let path = Layout::segment_path(&self.dir, index);
        let f = Arc::new(File::open(&path).map_err(|e| Error::io(&path, e))?);
        open.insert(index, Arc::clone(&f));
        Ok(f)
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
        let frames = locked(self.frames.read());
        let list = frames.get(&segment)?;
        Some(
            list.binary_search_by_key(&addr, |f| f.addr)
                .ok()
                .map(|i| list[i]),
        )
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
    pub(crate) fn read_chunk_cached(&self, addr: u64) -> Result<Arc<[u8]>> {
        if let Some(c) = self.cache.get(addr) {
            return Ok(c);
        }
        let c: Arc<[u8]> = Arc::from(self.read_chunk(addr)?);
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
