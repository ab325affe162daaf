//! Paging out the directory entries (time index) of older segments: once
//! a segment's index file is complete, each source's entries of it can be
//! read back from there (`index/directory.rs`), so the writer frees them,
//! oldest segment first, while the entries in memory pass their part of
//! `Config::index_cache_bytes` (`SummaryPages::directory_keep`).

use std::collections::HashMap;
use std::path::Path;

use crate::index::directory::ChunkEntry;
use crate::index::paged::SummaryPages;
use crate::log::chunk::ChunkHeader;
use crate::storage::segment_index;

use super::{SourceState, Writer};

/// Where directory paging stands.
#[derive(Debug, Clone, Default)]
pub(crate) struct DirPaging {
    /// The next segment to page out.
    pub next: u64,
    /// Segments below this are from earlier runs (recovered).
    pub live_from: u64,
    /// Recovered segments whose chunks came from their complete index
    /// file: paged out without reading the file again.
    pub trusted: Vec<u64>,
}

impl DirPaging {
    /// Whether segment `seg`'s index file is complete: a recovered segment
    /// other than the last (the writer never appends to those; the last
    /// gets its footer from the indexer, like this run's), or one the
    /// indexer wrote the footer of.
    fn complete(&self, seg: u64, complete_below: u64) -> bool {
        seg < complete_below || seg + 1 < self.live_from || self.trusted.binary_search(&seg).is_ok()
    }

    /// Paging of a store recovered as `segments` (oldest first), whose
    /// writer (if any) resumes at segment `live_from`.
    pub(crate) fn recovered(
        segments: &[crate::storage::recovery::SegmentInfo],
        live_from: u64,
    ) -> Self {
        DirPaging {
            next: segments.first().map_or(0, |s| s.index),
            live_from,
            trusted: segments
                .iter()
                .filter(|s| s.from_index)
                .map(|s| s.index)
                .collect(),
        }
    }
}

/// Each source's chunks as segment `seg`'s index file lists them, `None`
/// when it cannot be read or has no footer.
fn listed(dir: &Path, seg: u64) -> Option<HashMap<u64, Vec<(u64, ChunkHeader)>>> {
    let six = match segment_index::read_lean(dir, seg) {
        Ok(s) => s,
        Err(e) => {
            log::warn!(
                "paging out the directory of segment {seg}: {e}; its entries stay in memory"
            );
            return None;
        }
    };
    if six.footer.is_none() {
        log::warn!("paging out the directory of segment {seg}: its index file has no footer; its entries stay in memory");
        return None;
    }
    let mut by_source: HashMap<u64, Vec<(u64, ChunkHeader)>> = HashMap::new();
    for c in six.chunks {
        by_source
            .entry(c.header.source)
            .or_default()
            .push((c.addr, c.header));
    }
    Some(by_source)
}

/// Whether the file's list of a source's chunks is exactly what memory holds.
fn same(mem: &[ChunkEntry], file: Option<&Vec<(u64, ChunkHeader)>>) -> bool {
    let Some(file) = file else { return false };
    mem.len() == file.len()
        && mem.iter().zip(file).all(|(m, (addr, h))| {
            m.addr == *addr
                && m.first_ts == h.first_ts
                && m.last_ts == h.last_ts
                && m.count == h.count
                && m.len == h.len
        })
}

/// Pages out the oldest complete segments' directory entries of every
/// source while the directory holds more than `pages.directory_keep()`;
/// tells `pages` what it holds after.
pub(crate) fn page_out(
    dir: &Path,
    sources: &mut [SourceState],
    pages: &SummaryPages,
    st: &mut DirPaging,
) {
    let keep = pages.directory_keep();
    let complete_below = pages.complete_below();
    let mut held: usize = sources.iter().map(|s| s.dir.held_bytes()).sum();
    let mut paged = vec![false; sources.len()];
    while held > keep && st.complete(st.next, complete_below) {
        let seg = st.next;
        st.next += 1;
        let trusted = st.trusted.binary_search(&seg).is_ok();
        let file = if trusted { None } else { listed(dir, seg) };
        if !trusted && file.is_none() {
            continue;
        }
        for (s, paged) in sources.iter_mut().zip(paged.iter_mut()) {
            if s.dir.oldest_segment() != Some(seg) {
                continue;
            }
            if let Some(f) = &file {
                let mem = s.dir.entries_of(seg).unwrap_or_default();
                if !same(&mem, f.get(&s.id.0)) {
                    log::warn!(
                        "segment {seg}'s index file does not list source {}'s chunks as memory does: its directory entries stay in memory",
                        s.id.0
                    );
                    continue;
                }
            }
            let before = s.dir.held_bytes();
            if s.dir.page_out(seg) {
                held = held + s.dir.held_bytes() - before;
                *paged = true;
            }
        }
    }
    for (s, _) in sources.iter_mut().zip(paged).filter(|(_, p)| *p) {
        s.dir.compact();
    }
    pages.set_recent_directory(held);
}

impl Writer {
    /// Pages out the directory entries of complete older segments (see
    /// [`page_out`]); called when a segment ends and at persist.
    pub(super) fn page_out_directory(&mut self) {
        let retained = self.retained_from / self.layout.segment_size;
        self.dir_paging.next = self.dir_paging.next.max(retained);
        page_out(
            &self.dir,
            &mut self.sources,
            &self.indexer.pages,
            &mut self.dir_paging,
        );
    }
}
