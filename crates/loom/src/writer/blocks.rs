//! The in-memory block pool: the current block, blocks in flight to the
//! flusher, and the flusher's acknowledgements.

use crate::error::{Error, Result};
use crate::index::indexer::IndexMsg;
use crate::log::slab::{SlabView, SlabWriter};
use crate::storage::flusher::{FlushAck, FlushJob};

use super::{BlockSlot, Writer, IO_ALIGN};

impl Writer {
    pub(super) fn block_holding(&self, addr: u64) -> Option<(u64, SlabView<u8>)> {
        let bs = self.layout.block_size as u64;
        if addr >= self.block_base && addr < self.block_base + bs {
            return Some((self.block_base, self.block.view()));
        }
        self.in_flight
            .iter()
            .find(|s| addr >= s.base && addr < s.base + bs)
            .map(|s| (s.base, s.block.view()))
    }

    pub(super) fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(m) => Err(Error::FlushFailed(m.clone())),
            None => Ok(()),
        }
    }

    pub(super) fn handle_ack(&mut self, ack: FlushAck) {
        if let Err(m) = ack.result {
            log::error!("{}: {m}", self.dir.display());
            self.failed.get_or_insert(m);
        }
        self.last_acked = Some(ack.id);
        for slot in self.in_flight.iter_mut() {
            if slot.job <= ack.id {
                slot.written = true;
            }
        }
    }

    pub(super) fn drain_acks(&mut self) {
        while let Ok(ack) = self.flusher.acks.try_recv() {
            self.handle_ack(ack);
        }
    }

    pub(super) fn send(
        &mut self,
        block: SlabView<u8>,
        base: u64,
        (from, to): (usize, usize),
        durable: bool,
    ) -> Result<u64> {
        let id = self.next_job;
        self.next_job += 1;
        self.flusher
            .jobs
            .send(FlushJob {
                id,
                block,
                base,
                from,
                to,
                durable,
            })
            .map_err(|_| Error::FlushFailed("the flusher thread has stopped".into()))?;
        Ok(id)
    }

    /// Hands the full current block to the flusher and starts the next one.
    /// Takes the next block first, so a refusal (disk failing, memory full)
    /// leaves everything as it was.
    pub(super) fn rotate_block(&mut self) -> Result<()> {
        self.check_failed()?;
        let next = self.free_block()?;
        let cap = self.block.capacity();
        let len = self.block.len();
        self.block.spare_mut().fill(0);
        self.block.advance(cap - len);
        let from = self.block_durable - self.block_durable % IO_ALIGN;
        let job = self.send(self.block.view(), self.block_base, (from, cap), false)?;
        let full = std::mem::replace(&mut self.block, next);
        self.in_flight.push_back(BlockSlot {
            base: self.block_base,
            block: full,
            job,
            written: false,
        });
        let old_segment = self.block_base / self.layout.segment_size;
        self.block_base += cap as u64;
        self.block_durable = 0;
        self.stats.blocks_flushed += 1;
        if self.block_base / self.layout.segment_size != old_segment {
            // The footer may only be written once this block's job is
            // durable: an earlier persist of the block wrote zeros where
            // later chunks now are.
            self.send_index(IndexMsg::SegmentDone {
                segment: old_segment,
                data_end: self.last_chunk_end,
                chunks: self.seg_chunks,
                after_jobs: job + 1,
            })?;
            self.seg_chunks = 0;
            self.note_segment(self.block_base);
            self.apply_retention();
            self.page_out_directory();
        }
        Ok(())
    }

    /// A block to write into: new while under the memory budget, else the
    /// oldest written one (waiting for the flusher if none is written yet,
    /// unless writing fails: then the record is refused at once so the
    /// caller keeps serving).
    fn free_block(&mut self) -> Result<SlabWriter<u8>> {
        self.drain_acks();
        if self.in_flight.len() + 2 <= self.config.max_blocks_in_memory {
            return Ok(SlabWriter::new(self.layout.block_size, IO_ALIGN));
        }
        let mut waited = false;
        loop {
            match self.in_flight.front() {
                Some(front) if front.written => {
                    if let Some(mut slot) = self.in_flight.pop_front() {
                        if !slot.block.is_unique() {
                            // The published snapshot still lists the block:
                            // publish without it so its memory is reused
                            // instead of a new block being faulted in.
                            self.sync();
                        }
                        if !slot.block.is_unique() {
                            // So may the durable snapshot (the last
                            // persist's), for up to a persist interval: a
                            // third of the rotations of a paced P2 run
                            // allocated a new 16 MiB block for it, and
                            // faulting its pages in cost the ingest thread
                            // an eighth of its time.
                            self.release_from_durable(slot.base);
                        }
                        slot.block.reset();
                        return Ok(slot.block);
                    }
                }
                Some(_) => {}
                None => return Ok(SlabWriter::new(self.layout.block_size, IO_ALIGN)),
            }
            if let Some(why) = self.flusher.status.failing() {
                return Err(Error::StorageFailing(why));
            }
            if !waited {
                self.stats.disk_waits += 1;
                waited = true;
            }
            match self
                .flusher
                .acks
                .recv_timeout(std::time::Duration::from_millis(50))
            {
                Ok(ack) => self.handle_ack(ack),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(Error::FlushFailed("the flusher thread has stopped".into()))
                }
            }
            self.check_failed()?;
        }
    }
}
