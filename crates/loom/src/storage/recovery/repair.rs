//! What a writer's open repairs after the scan (recovery `Mode::Repair`):
//! index files completed from what the scan found, and the torn tail cut
//! (zeroed, or a version-2 segment truncated) with every later segment
//! removed.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::chunk::padded;
use crate::storage::catalog::sync_dir;
use crate::storage::frame::FrameLoc;
use crate::storage::layout::Layout;
use crate::storage::segment_index::{self, IndexedChunk, SegmentIndexWriter};

use super::{is_framed_file, RecoveredChunk};

/// Rewrites the index file of every scanned segment from what the scan
/// found: complete segments (before the one holding `end`) get a footer
/// once their data is synced, the last one is left open for appending.
pub(super) fn complete_indexes(
    dir: &Path,
    layout: Layout,
    chunks: &[RecoveredChunk],
    scanned: &[u64],
    frames: &[(u64, Vec<FrameLoc>)],
    end: u64,
) -> Result<()> {
    let last_seg = if end == 0 {
        0
    } else {
        (end - 1) / layout.segment_size
    };
    for &seg in scanned {
        if seg > last_seg {
            continue;
        }
        let base = seg * layout.segment_size;
        let mine: Vec<&RecoveredChunk> = chunks
            .iter()
            .filter(|c| c.addr >= base && c.addr < base + layout.segment_size)
            .collect();
        let p = segment_index::path(dir, seg);
        let mut w = SegmentIndexWriter::create(dir, seg).map_err(|e| Error::io(&p, e))?;
        for c in &mine {
            w.chunk(&IndexedChunk {
                addr: c.addr,
                header: c.header,
                summaries: c.summaries.clone(),
            })
            .map_err(|e| Error::io(&p, e))?;
        }
        if seg < last_seg {
            let data = Layout::segment_path(dir, seg);
            fs::File::open(&data)
                .and_then(|f| f.sync_data())
                .map_err(|e| Error::io(&data, e))?;
            let data_end = mine
                .last()
                .map_or(base, |c| c.addr + padded(c.header.len as usize) as u64);
            if let Some((_, f)) = frames.iter().find(|(s, _)| *s == seg) {
                w.frames(f).map_err(|e| Error::io(&p, e))?;
            }
            w.finish(data_end, mine.len() as u64)
                .map_err(|e| Error::io(&p, e))?;
        } else {
            w.sync().map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

/// Zeroes `[at, end of its block)` (in a version-2 segment: truncates the
/// file after its last valid frame, `file_ends`) and removes every later
/// segment (and its index file): nothing valid lies after `at`.
pub(super) fn discard_from(
    dir: &Path,
    layout: Layout,
    at: u64,
    segments: &[u64],
    file_ends: &HashMap<u64, u64>,
) -> Result<()> {
    let seg = layout.locate(at).0;
    // `at` may sit exactly at the end of a segment whose last frame is valid.
    for s in [seg.wrapping_sub(1), seg] {
        if let Some(&keep) = file_ends.get(&s) {
            let path = Layout::segment_path(dir, s);
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| Error::io(&path, e))?;
            if file.metadata().map_err(|e| Error::io(&path, e))?.len() > keep {
                file.set_len(keep).map_err(|e| Error::io(&path, e))?;
                file.sync_all().map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    discard_raw(dir, layout, at, segments, file_ends)
}

fn discard_raw(
    dir: &Path,
    layout: Layout,
    at: u64,
    segments: &[u64],
    file_ends: &HashMap<u64, u64>,
) -> Result<()> {
    let (seg, off) = layout.locate(at);
    let bs = layout.block_size as u64;
    let block_end = if off % bs == 0 {
        off
    } else {
        off - off % bs + bs
    };
    let path = Layout::segment_path(dir, seg);
    if path.exists() && !file_ends.contains_key(&seg) && !is_framed_file(&path) {
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if off < len.min(block_end) {
            let zeros = vec![0u8; (len.min(block_end) - off) as usize];
            file.write_all_at(&zeros, off)
                .map_err(|e| Error::io(&path, e))?;
        }
        if len > block_end {
            file.set_len(block_end).map_err(|e| Error::io(&path, e))?;
        }
        file.sync_all().map_err(|e| Error::io(&path, e))?;
    }
    let mut removed = false;
    for &later in segments.iter().filter(|&&s| s > seg) {
        for p in [
            Layout::segment_path(dir, later),
            segment_index::path(dir, later),
        ] {
            match fs::remove_file(&p) {
                Ok(()) => removed = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&p, e)),
            }
        }
    }
    if removed {
        sync_dir(dir)?;
    }
    Ok(())
}
