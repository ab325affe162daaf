//! Read access to segment files, shared by all readers.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::storage::layout::Layout;

/// Opens segment files on demand and reads log addresses from them.
pub(crate) struct SegmentFiles {
    dir: PathBuf,
    layout: Layout,
    open: Mutex<HashMap<u64, Arc<File>>>,
}

impl SegmentFiles {
    pub(crate) fn new(dir: PathBuf, layout: Layout) -> Self {
        SegmentFiles {
            dir,
            layout,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn file(&self, index: u64) -> Result<Arc<File>> {
        let mut open = match self.open.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
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
        let mut open = match self.open.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        open.retain(|&s, _| s >= index);
    }

    /// Reads up to `buf.len()` bytes at `addr` (never across a segment end);
    /// returns how many were read (fewer at the end of the file).
    pub(crate) fn read_at(&self, addr: u64, buf: &mut [u8]) -> Result<usize> {
        let (seg, off) = self.layout.locate(addr);
        let max = (self.layout.segment_size - off).min(buf.len() as u64) as usize;
        let f = self.file(seg)?;
        let mut done = 0;
        while done < max {
            match f.read_at(&mut buf[done..max], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(Layout::segment_path(&self.dir, seg), e)),
            }
        }
        Ok(done)
    }
}
