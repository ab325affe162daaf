//! Open chunks made durable without sealing them (`storage/open_chunks.rs`):
//! what `persist` appends to the journal, and how an open puts the
//! journal's records back into their sources' open chunks.

use std::collections::HashMap;

use crate::error::Result;
use crate::log::chunk::NO_CHUNK;
use crate::log::record::{self, RecordIter, MAX_RECORD_OVERHEAD};
use crate::source::SourceId;
use crate::storage::open_chunks::{self, Entry, Journal};

use super::open::new_source;
use super::{SourceState, Writer};

/// A journal file is started afresh once it holds this many bytes and more
/// than four times what the open chunks hold (so rewriting them whole
/// costs at most a quarter of what was appended).
const JOURNAL_MIN_BYTES: u64 = 8 << 20;

impl Writer {
    /// Seals the open chunks that `persist` must seal: every one when the
    /// store does not journal open chunks (or is closing), else those whose
    /// first record is `seal_after_us` older than the newest record of any
    /// source (data time, not the clock: a store fed with old data ages as
    /// its data does, and a source that stopped is sealed as others go on).
    pub(super) fn seal_for_persist(&mut self) -> Result<()> {
        let age = match self.config.seal_after_us {
            Some(age) if !self.closing => age,
            _ => {
                for i in 0..self.sources.len() {
                    self.seal(i)?;
                }
                return Ok(());
            }
        };
        let newest = self.sources.iter().map(|s| s.prev_ts).max().unwrap_or(0);
        for i in 0..self.sources.len() {
            let s = &self.sources[i];
            if s.count > 0 && newest.saturating_sub(s.first_ts) >= age {
                self.seal(i)?;
            }
        }
        Ok(())
    }

    /// Appends the records pushed to open chunks since the last call to
    /// the journal and makes them durable; starts a new journal file with
    /// every open chunk whole when the current one has grown (or failed).
    /// Called by `persist` once the blocks it wrote are durable.
    pub(super) fn write_journal(&mut self) -> Result<()> {
        if self.config.seal_after_us.is_none() || self.closing {
            return Ok(());
        }
        let open: u64 = self.sources.iter().map(|s| s.active.len() as u64).sum();
        let whole = match &self.journal {
            None => true,
            Some(j) => j.broken || j.bytes > JOURNAL_MIN_BYTES.max(4 * open),
        };
        let mut buf = Vec::new();
        for s in &self.sources {
            let (from, offset, base) = if whole || s.journaled_count == 0 {
                (0, 0, s.first_ts)
            } else {
                (s.journaled_len, s.journaled_count, s.journaled_ts)
            };
            if s.count <= offset {
                continue;
            }
            open_chunks::encode(
                &mut buf,
                (s.id.0, s.newest_chunk),
                (offset, s.count - offset),
                base,
                &s.active.written()[from..],
            );
        }
        let sync = self.config.sync_data;
        match self.journal.as_mut() {
            Some(j) if whole => j.rotate(&buf)?,
            Some(j) => j.append(&buf)?,
            None => self.journal = Some(Journal::start(&self.dir, self.journal_next, &buf, sync)?),
        }
        for s in &mut self.sources {
            s.journaled_len = s.active.len();
            s.journaled_count = s.count;
            s.journaled_ts = s.prev_ts;
        }
        Ok(())
    }

    /// After a clean close every chunk is sealed and durable: the journal
    /// has nothing left to say.
    pub(super) fn remove_journal(&mut self) -> Result<()> {
        self.journal = None;
        Journal::remove_all(&self.dir)
    }
}

/// Puts the journal's records back into their sources' open chunks (see
/// `storage/open_chunks.rs` for when an entry applies); sources the
/// catalog does not know are added. Returns the records put back.
pub(crate) fn apply(
    sources: &mut Vec<SourceState>,
    ids: &mut HashMap<SourceId, usize>,
    entries: Vec<Entry>,
    (first_payload, full): (usize, usize),
    retained_from: u64,
) -> u64 {
    let mut applied = 0u64;
    for e in entries {
        let id = SourceId(e.source);
        let i = *ids.entry(id).or_insert_with(|| {
            sources.push(new_source(id, first_payload));
            sources.len() - 1
        });
        let s = &mut sources[i];
        // The entry's chunk came after `prev`; if retention dropped `prev`
        // (and every chunk of the source), the open chunk still follows it.
        let follows = e.prev == s.newest_chunk
            || (s.newest_chunk == NO_CHUNK && e.prev != NO_CHUNK && e.prev < retained_from);
        if !follows || s.count < e.offset || s.count >= e.offset.saturating_add(e.count) {
            continue;
        }
        for (j, rec) in RecordIter::new(&e.payload, e.base_ts, e.count).enumerate() {
            let Ok((ts, bytes)) = rec else { break };
            if u64::from(e.offset) + (j as u64) < u64::from(s.count) {
                continue;
            }
            let need = bytes.len() + MAX_RECORD_OVERHEAD;
            if (s.seq > 0 && ts < s.prev_ts) || s.active.len() + need > full {
                break;
            }
            if s.active.remaining() < need {
                s.active
                    .resize((s.active.len() + need).next_power_of_two().min(full));
            }
            let delta = if s.count == 0 {
                s.first_ts = ts;
                0
            } else {
                ts - s.prev_ts
            };
            let n = record::encode(s.active.spare_mut(), delta, bytes);
            s.active.advance(n);
            s.prev_ts = ts;
            s.count += 1;
            s.seq += 1;
            applied += 1;
        }
    }
    applied
}
