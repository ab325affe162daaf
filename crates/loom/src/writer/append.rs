//! Push and seal: the ingest thread's hot path.

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::index::directory::ChunkEntry;
use crate::index::indexer::IndexMsg;
use crate::log::chunk::{padded, ChunkHeader, HEADER_LEN};
use crate::log::record::{self, MAX_RECORD_OVERHEAD};
use crate::source::{RecordAddress, SourceHandle};

use super::Writer;

impl Writer {
    /// Appends a record. `timestamp_us` must not be older than the source's
    /// newest record. The record is visible to readers after the next `sync`
    /// and durable after the next `persist` (or once its block is flushed).
    /// While writing to disk fails and memory is full, records are refused
    /// with [`Error::StorageFailing`] (counted in `records_refused`).
    #[inline]
    pub fn push(
        &mut self,
        source: SourceHandle,
        timestamp_us: u64,
        bytes: &[u8],
    ) -> Result<RecordAddress> {
        let idx = source.0 as usize;
        let max = self.max_record;
        let Some(s) = self.sources.get_mut(idx) else {
            return Err(Error::InvalidHandle(source.0));
        };
        if timestamp_us < s.prev_ts {
            return Err(Error::OutOfOrder {
                source_id: s.id,
                timestamp_us,
                newest_us: s.prev_ts,
            });
        }
        if bytes.len() > max {
            return Err(Error::RecordTooLarge {
                len: bytes.len(),
                max,
                chunk_size: self.layout.chunk_size,
            });
        }
        if timestamp_us >= s.cut_at {
            if let Err(e) = self.cut_at_boundary(idx, timestamp_us) {
                if matches!(e, Error::StorageFailing(_)) {
                    self.stats.records_refused += 1;
                }
                return Err(e);
            }
        }
        let s = &mut self.sources[idx];
        if s.active.remaining() < bytes.len() + MAX_RECORD_OVERHEAD {
            if let Err(e) = self.make_room(idx, bytes.len() + MAX_RECORD_OVERHEAD) {
                if matches!(e, Error::StorageFailing(_)) {
                    self.stats.records_refused += 1;
                }
                return Err(e);
            }
        }
        let s = &mut self.sources[idx];
        let delta = if s.count == 0 {
            s.first_ts = timestamp_us;
            s.cut_at = next_boundary(timestamp_us, self.config.align_chunks_us);
            0
        } else {
            timestamp_us - s.prev_ts
        };
        let n = record::encode(s.active.spare_mut(), delta, bytes);
        s.active.advance(n);
        s.prev_ts = timestamp_us;
        s.count += 1;
        let seq = s.seq;
        s.seq += 1;
        self.stats.records += 1;
        self.stats.payload_bytes += bytes.len() as u64;
        Ok(RecordAddress { source: s.id, seq })
    }

    /// A record at `ts` reached the open chunk's `cut_at`: seals the chunk
    /// when `ts` is past a multiple of `Config::align_chunks_us` after the
    /// chunk's first record and the chunk holds `align_min_bytes`, so the
    /// record starts the next chunk and no chunk spans that multiple; else
    /// moves `cut_at` to the multiple after `ts` (a chunk still small then
    /// spans it: cheap to read). Order is kept: the record is pushed after.
    #[cold]
    #[inline(never)]
    fn cut_at_boundary(&mut self, idx: usize, ts: u64) -> Result<()> {
        let every = self.config.align_chunks_us;
        let min = self.config.align_min_bytes;
        let s = &mut self.sources[idx];
        if s.count == 0 {
            // The record starts a chunk, which sets `cut_at`.
            return Ok(());
        }
        if ts >= next_boundary(s.first_ts, every) && s.active.len() >= min {
            return self.seal(idx);
        }
        s.cut_at = next_boundary(ts, every);
        Ok(())
    }

    /// Makes room for `need` more bytes in a source's open chunk: doubles
    /// a buffer smaller than a full chunk (a source starts small so that
    /// thousands of slow ones hold little memory), seals a full one.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, idx: usize, need: usize) -> Result<()> {
        let full = self.layout.chunk_size - HEADER_LEN;
        if self.sources[idx].active.len() + need > full {
            // Does not fit in this chunk at any size.
            self.seal(idx)?;
        }
        let a = &mut self.sources[idx].active;
        if a.remaining() < need {
            let want = (a.len() + need).next_power_of_two();
            a.resize(want.max(a.capacity() * 2).min(full));
        }
        Ok(())
    }

    /// Moves a source's unsealed records into the current block as a chunk.
    pub(super) fn seal(&mut self, idx: usize) -> Result<()> {
        if self.sources[idx].count == 0 {
            return Ok(());
        }
        let payload_len = self.sources[idx].active.len();
        let len = HEADER_LEN + payload_len;
        let foot = padded(len);
        if self.block.remaining() < foot {
            self.rotate_block()?;
        }
        let addr = self.block_base + self.block.len() as u64;
        let s = &mut self.sources[idx];
        let mut header = ChunkHeader {
            len: len as u32,
            source: s.id.0,
            prev: s.newest_chunk,
            first_ts: s.first_ts,
            last_ts: s.prev_ts,
            count: s.count,
            crc: 0,
        };
        let spare = self.block.spare_mut();
        let (head, rest) = spare.split_at_mut(HEADER_LEN);
        rest[..payload_len].copy_from_slice(s.active.written());
        rest[payload_len..foot - HEADER_LEN].fill(0);
        header.crc = header.write(head, &rest[..payload_len]);
        self.block.advance(foot);

        let chunk_no = s.dir.len();
        s.dir.push(
            ChunkEntry {
                addr,
                first_ts: s.first_ts,
                last_ts: s.prev_ts,
                first_seq: s.seq - u64::from(s.count),
                count: s.count,
                len: len as u32,
            },
            addr / self.layout.segment_size,
        );
        s.newest_chunk = addr;
        s.count = 0;
        s.journaled_len = 0;
        s.journaled_count = 0;
        let first = super::first_payload(&self.config, &self.layout);
        let cap = s.active.capacity();
        if payload_len <= cap / 4 && cap / 2 >= first {
            // Sealed three quarters empty (by `persist`, not by filling
            // up): the source is slower than its buffer, so halve it.
            s.active.reset_to(cap / 2);
        } else if cap < self.layout.chunk_size - HEADER_LEN {
            // A source that has not needed a full chunk: no spare buffer
            // kept for it (thousands of them would double their memory).
            s.active.reset_to(cap);
        } else {
            s.active.reset_double_buffered();
        }
        let indexed = s.index.is_some();
        let last_ts = header.last_ts;
        self.stats.chunks += 1;
        self.seg_chunks += 1;
        self.last_chunk_end = addr + foot as u64;
        if let Some(seg) = self.segments.back_mut() {
            seg.newest_ts = seg.newest_ts.max(last_ts);
        }
        if indexed {
            self.throttle_index();
            self.stats.chunks_to_index += 1;
        }
        self.send_index(IndexMsg::Sealed {
            source: idx,
            chunk_no,
            addr,
            header,
            block: indexed.then(|| (self.block_base, self.block.view())),
            counted: indexed,
        })
    }

    /// Waits while the indexer is `max_index_lag` chunks behind: its queue
    /// pins blocks in memory, so an unbounded lag would be unbounded memory.
    fn throttle_index(&mut self) {
        let max = self.config.max_index_lag.max(1);
        if self
            .stats
            .chunks_to_index
            .saturating_sub(self.indexer.done.load(Ordering::Acquire))
            < max
        {
            return;
        }
        self.stats.index_waits += 1;
        while self
            .stats
            .chunks_to_index
            .saturating_sub(self.indexer.done.load(Ordering::Acquire))
            >= max / 2
        {
            if self.indexer.thread.as_ref().is_none_or(|t| t.is_finished()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    pub(super) fn send_index(&self, msg: IndexMsg) -> Result<()> {
        self.indexer
            .tx
            .send(msg)
            .map_err(|_| Error::FlushFailed("the indexer thread has stopped".into()))
    }
}

/// The first multiple of `every` after `ts` (µs); `u64::MAX` when `every`
/// is 0 (chunks are never cut by time) or past the end of time.
#[inline]
fn next_boundary(ts: u64, every: u64) -> u64 {
    match ts.checked_div(every) {
        Some(q) => q.saturating_add(1).saturating_mul(every),
        None => u64::MAX,
    }
}
