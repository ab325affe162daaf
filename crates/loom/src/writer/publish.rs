//! Publishing to readers (`sync`) and making data durable (`persist`).

use std::sync::Arc;

use crate::error::{Error, Result};
use std::collections::HashMap;

use crate::index::paged::SummaryPages;
use crate::log::slab::SlabView;
use crate::snapshot::{Published, SourceView};
use crate::source::SourceId;
use crate::storage::segments::SegmentFiles;

use super::{SourceState, Writer, IO_ALIGN};

/// What readers see of `sources` with the in-memory `blocks`.
pub(crate) fn published(
    sources: &[SourceState],
    ids: &Arc<HashMap<SourceId, usize>>,
    blocks: Vec<(u64, SlabView<u8>)>,
    files: &Arc<SegmentFiles>,
    retained_from: u64,
    pages: &Arc<SummaryPages>,
) -> Published {
    let sources = sources
        .iter()
        .map(|s| SourceView {
            id: s.id,
            schema: s.schema.clone(),
            index: s.index.clone(),
            dir: s.dir.view(retained_from, Some(pages), s.id.0),
            tail: s.active.view(),
            tail_first_ts: s.first_ts,
            tail_count: s.count,
            newest_chunk: s.newest_chunk,
            records: s.seq,
            last_ts: s.prev_ts,
        })
        .collect();
    Published {
        ids: Arc::clone(ids),
        sources,
        blocks,
        files: Arc::clone(files),
        retained_from,
    }
}

impl Writer {
    /// Publishes everything pushed so far to readers. No I/O; cost grows with
    /// the number of sources, not with data.
    pub fn sync(&mut self) {
        let mut blocks: Vec<(u64, crate::log::slab::SlabView<u8>)> = self
            .in_flight
            .iter()
            .map(|s| (s.base, s.block.view()))
            .collect();
        blocks.push((self.block_base, self.block.view()));
        self.shared.snapshot.store(Arc::new(published(
            &self.sources,
            &self.ids,
            blocks,
            &self.files,
            self.retained_from,
            &self.indexer.pages,
        )));
    }

    /// Makes everything pushed so far durable, then publishes it: open
    /// chunks older than `Config::seal_after_us` are sealed, the others'
    /// new records go to the journal of open chunks (with `seal_after_us =
    /// None`, and when closing, every open chunk is sealed). Blocks until
    /// the flusher has written and synced it; fails at once while writing
    /// to disk fails (nothing is lost from memory: a later persist writes it).
    pub fn persist(&mut self) -> Result<()> {
        self.check_failed()?;
        if let Some(why) = self.flusher.status.failing() {
            self.sync();
            return Err(Error::StorageFailing(why));
        }
        self.seal_for_persist()?;
        let len = self.block.len();
        // Always one durable job: it writes the current block's new bytes
        // (if any) and syncs every file written since the last sync, and
        // its acknowledgement also covers every earlier job.
        let (view, range) = if len > self.block_durable {
            let to = len.div_ceil(IO_ALIGN) * IO_ALIGN;
            let to = to.min(self.block.capacity());
            self.block.spare_mut()[..to - len].fill(0);
            let from = self.block_durable - self.block_durable % IO_ALIGN;
            // SAFETY: the flusher drops this view before acknowledging, and we
            // wait for that acknowledgement below before writing past `len`.
            (unsafe { self.block.padded_view(to) }, (from, to))
        } else {
            (self.block.view(), (0, 0))
        };
        let target = self.send(view, self.block_base, range, true)?;
        self.block_durable = self.block_durable.max(len);
        while self.last_acked.is_none_or(|a| a < target) {
            // The flusher still reads the padded view, so the block cannot be
            // written before the acknowledgement. A write that fails
            // meanwhile (full disk, store gone) is retried by the flusher;
            // when closing, tell it to give up so the acknowledgement comes.
            match self
                .flusher
                .acks
                .recv_timeout(std::time::Duration::from_millis(50))
            {
                Ok(ack) => self.handle_ack(ack),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if self.closing && self.flusher.status.failing().is_some() {
                        self.flusher
                            .status
                            .stop
                            .store(true, std::sync::atomic::Ordering::Release);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(Error::FlushFailed("the flusher thread has stopped".into()))
                }
            }
        }
        self.check_failed()?;
        // Only now: a journal entry names the newest sealed chunk, which
        // must be durable first.
        self.write_journal()?;
        self.apply_retention();
        self.page_out_directory();
        self.sync();
        self.publish_durable();
        Ok(())
    }

    /// Drops the written block at `base` from the durable snapshot, so
    /// that its memory can be reused: everything in it is on disk (it was
    /// written before its slot is reused), so the snapshot's readers read
    /// its chunks from the segment files instead. What the snapshot holds
    /// is unchanged; a reader holding the old one keeps its own view.
    pub(super) fn release_from_durable(&mut self, base: u64) {
        let d = self.shared.durable.load_full();
        if d.blocks.iter().all(|(b, _)| *b != base) {
            return;
        }
        self.shared.durable.store(Arc::new(Published {
            ids: Arc::clone(&d.ids),
            sources: d.sources.clone(),
            blocks: d
                .blocks
                .iter()
                .filter(|(b, _)| *b != base)
                .cloned()
                .collect(),
            files: Arc::clone(&d.files),
            retained_from: d.retained_from,
        }));
    }

    /// Marks the snapshot just published as durable: `sync` ran right after
    /// a persist (every record sealed, written and synced) or an open.
    pub(super) fn publish_durable(&mut self) {
        self.shared.durable.store(self.shared.snapshot.load_full());
    }
}
