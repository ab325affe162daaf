//! The indexer's side of the segment index files (`storage/segment_index/`):
//! every sealed chunk listed in its segment's file with its persistable
//! summaries, and a segment's footer written once the flusher reports its
//! data durable.

use std::sync::atomic::Ordering;

use crate::bin_summary::BinSummary;
use crate::index::indexer::SegmentIndexing;
use crate::index::paged::SummaryPages;
use crate::storage::segment_index::{IndexedChunk, SegmentIndexWriter};
use crate::storage::segments::SegmentFiles;

/// Tells the writer (through the cache) which index files are complete:
/// it may page out their directory entries.
pub(crate) fn note_complete(s: &IndexFiles, pages: &SummaryPages) {
    if let Some(c) = s.complete_upto {
        pages.note_complete(c);
    }
}

/// The indexer's side of the segment index files.
pub(crate) struct IndexFiles {
    pub(crate) cfg: SegmentIndexing,
    pub(crate) current: Option<SegmentIndexWriter>,
    /// Segments done but not yet durable:
    /// `(segment, data_end, chunks, after_jobs)`.
    pub(crate) pending: Vec<(u64, u64, u64, u64)>,
    /// Segments whose file could not be written; recovery scans them.
    pub(crate) broken: Vec<u64>,
    /// Newest segment whose index file got its footer in this run (those
    /// before it are complete too: footers are written in order).
    pub(crate) complete_upto: Option<u64>,
    /// Newest segment `page_out` looked at.
    pub(crate) paged_upto: Option<u64>,
}

impl IndexFiles {
    /// The writer for `segment`, creating or reopening its file.
    pub(crate) fn writer(&mut self, segment: u64) -> Option<&mut SegmentIndexWriter> {
        if self.broken.contains(&segment) {
            return None;
        }
        if self.current.as_ref().is_none_or(|w| w.segment != segment) {
            if let Some(mut old) = self.current.take() {
                let _ = old.flush();
            }
            // A file that exists was written earlier in this run (a segment
            // whose footer waited for the flusher) or left open for
            // appending by recovery; stale files were removed by recovery.
            let exists = crate::storage::segment_index::path(&self.cfg.dir, segment).exists();
            let opened = if exists {
                SegmentIndexWriter::append_to(&self.cfg.dir, segment)
            } else {
                SegmentIndexWriter::create(&self.cfg.dir, segment)
            };
            match opened {
                Ok(w) => self.current = Some(w),
                Err(e) => {
                    self.fail(segment, &e);
                    return None;
                }
            }
        }
        self.current.as_mut()
    }

    pub(crate) fn fail(&mut self, segment: u64, e: &std::io::Error) {
        log::error!(
            "segment index of segment {segment}: {e}; that segment will be scanned on the next open"
        );
        self.broken.push(segment);
        if self.current.as_ref().is_some_and(|w| w.segment == segment) {
            self.current = None;
        }
    }

    pub(crate) fn chunk(&mut self, c: &IndexedChunk) {
        let seg = c.addr / self.cfg.segment_size;
        if let Some(w) = self.writer(seg) {
            if let Err(e) = w.chunk(c) {
                self.fail(seg, &e);
            }
        }
    }

    pub(crate) fn summaries(&mut self, addr: u64, bins: &[BinSummary]) {
        let seg = addr / self.cfg.segment_size;
        if self.broken.contains(&seg) {
            return;
        }
        let r = if self.current.as_ref().is_some_and(|w| w.segment == seg) {
            self.current
                .as_mut()
                .map_or(Ok(()), |w| w.summaries(addr, bins))
        } else {
            SegmentIndexWriter::append_to(&self.cfg.dir, seg)
                .and_then(|mut w| w.summaries(addr, bins).and_then(|_| w.flush()))
        };
        if let Err(e) = r {
            self.fail(seg, &e);
        }
    }

    /// Writes the footers of done segments whose data is now durable.
    pub(crate) fn finish_durable(&mut self, files: &SegmentFiles) {
        let durable = self.cfg.flusher.durable_jobs.load(Ordering::Acquire);
        let mut i = 0;
        while i < self.pending.len() {
            let (seg, data_end, chunks, after_jobs) = self.pending[i];
            if after_jobs > durable {
                i += 1;
                continue;
            }
            self.pending.swap_remove(i);
            // A version-2 segment's frame list goes before its footer, so
            // a reopen finds every chunk's frame without reading the data.
            let frames = files.frames_of(seg);
            if let Some(w) = self.writer(seg) {
                let r = match &frames {
                    Some(f) => w.frames(f),
                    None => Ok(()),
                };
                match r.and_then(|_| w.finish(data_end, chunks)) {
                    Ok(()) => {
                        self.complete_upto = Some(self.complete_upto.map_or(seg, |c| c.max(seg)));
                    }
                    Err(e) => self.fail(seg, &e),
                }
            }
            if self.current.as_ref().is_some_and(|w| w.segment == seg) {
                self.current = None;
            }
        }
    }

    pub(crate) fn flush(&mut self) {
        if let Some(w) = self.current.as_mut() {
            if let Err(e) = w.flush() {
                let seg = w.segment;
                let p = w.path().display().to_string();
                log::error!("{p}: {e}");
                self.fail(seg, &e);
            }
        }
    }
}
