//! Recovery on open: scan segment files, keep every valid chunk, cut a torn
//! or corrupt tail.
//!
//! Chunks are packed from the start of each block; a zero word ends a block's
//! chunks, a block that starts with a zero word ends the log. The first chunk
//! that fails its checks ends the log too: it and everything after it are
//! dropped (zeroed and truncated on disk, so later writes are never hidden
//! behind it) and the reason is logged.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::chunk::{padded, ChunkHeader, NO_CHUNK};
use crate::storage::layout::Layout;

/// A chunk found on disk.
pub(crate) struct RecoveredChunk {
    pub addr: u64,
    pub header: ChunkHeader,
}

/// What recovery found.
pub(crate) struct Recovered {
    pub chunks: Vec<RecoveredChunk>,
    /// Address just past the last valid chunk.
    pub end: u64,
    /// Why the tail was cut, if it was.
    pub dropped: Option<String>,
}

fn segment_indices(dir: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_prefix("segment-")
            .and_then(|s| s.strip_suffix(".log"))
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Scans `dir` and repairs its tail. Reads every byte once.
pub(crate) fn recover(dir: &Path, layout: Layout) -> Result<Recovered> {
    let segments = segment_indices(dir)?;
    let mut chunks = Vec::new();
    let mut end = 0u64;
    let mut cut: Option<(u64, String)> = None;
    let mut block = vec![0u8; layout.block_size];
    let mut newest: HashMap<u64, u64> = HashMap::new();

    'segments: for (expected, &seg) in segments.iter().enumerate() {
        if seg != expected as u64 {
            cut = Some((
                seg * layout.segment_size,
                format!("segment {expected} is missing, later segments are unreachable"),
            ));
            break;
        }
        let path = Layout::segment_path(dir, seg);
        let mut file = fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        let seg_base = seg * layout.segment_size;
        let mut block_off = 0u64;
        while block_off < layout.segment_size {
            let n = read_full(&mut file, &mut block).map_err(|e| Error::io(&path, e))?;
            if n == 0 {
                // A segment may end early: after a crash the writer resumes
                // at the next block, which can be in the next segment.
                break;
            }
            let base = seg_base + block_off;
            let bytes = &block[..n];
            let mut o = 0usize;
            let mut found_any = false;
            while o + 4 <= bytes.len() {
                let at = base + o as u64;
                let header = match ChunkHeader::read(&bytes[o..]) {
                    Ok(Some(h)) => h,
                    Ok(None) => break,
                    Err(reason) => {
                        cut = Some((at, reason));
                        break 'segments;
                    }
                };
                if let Err(reason) = header.verify(&bytes[o..], layout.chunk_size) {
                    cut = Some((at, reason));
                    break 'segments;
                }
                if header.count == 0 {
                    cut = Some((at, "chunk with zero records".into()));
                    break 'segments;
                }
                // Each chunk links to its source's previous chunk; a link to
                // anything but the last chunk seen means bytes before it are
                // missing (a truncated or lost segment), so the log ends here.
                let last = newest.get(&header.source).copied().unwrap_or(NO_CHUNK);
                if header.prev != last {
                    cut = Some((
                        at,
                        format!(
                            "chunk of source {:#x} links to {} but that source's last chunk is at {}: the log has a gap",
                            header.source,
                            fmt_addr(header.prev),
                            fmt_addr(last)
                        ),
                    ));
                    break 'segments;
                }
                newest.insert(header.source, at);
                chunks.push(RecoveredChunk { addr: at, header });
                found_any = true;
                o += padded(header.len as usize);
                end = base + o as u64;
            }
            if !found_any {
                break 'segments;
            }
            block_off += layout.block_size as u64;
        }
    }

    let dropped = match cut {
        Some((at, reason)) => {
            let msg = format!(
                "{}: dropping the log from address {at}: {reason}",
                dir.display()
            );
            log::error!("{msg}");
            discard_from(dir, layout, at, &segments)?;
            Some(msg)
        }
        None => {
            // A clean end can still be followed by stale bytes in the same
            // block (an old partial persist); zero them so they never shadow
            // data written after this open.
            discard_from(dir, layout, end, &segments)?;
            None
        }
    };
    Ok(Recovered {
        chunks,
        end,
        dropped,
    })
}

fn fmt_addr(a: u64) -> String {
    if a == NO_CHUNK {
        "nothing".into()
    } else {
        format!("address {a}")
    }
}

fn read_full(file: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Zeroes `[at, end of its block)` and removes everything after that block.
fn discard_from(dir: &Path, layout: Layout, at: u64, segments: &[u64]) -> Result<()> {
    let (seg, off) = layout.locate(at);
    let bs = layout.block_size as u64;
    let block_end = if off % bs == 0 {
        off
    } else {
        off - off % bs + bs
    };
    let path = Layout::segment_path(dir, seg);
    if path.exists() {
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
    for &later in segments.iter().filter(|&&s| s > seg) {
        let p = Layout::segment_path(dir, later);
        fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
    }
    Ok(())
}
