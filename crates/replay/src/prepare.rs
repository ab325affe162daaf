//! What `tcp-replay` sends, prepared off the sending thread.
//!
//! The recording is decoded once into wire form (every record's tag byte and
//! encoding, back to back) and kept in memory, so a loop costs no
//! decompression or decoding: a second thread copies it into ready-to-send
//! chunks of complete frames, shifting each record's event time in place
//! for loops after the first and computing each frame's checksum. Where
//! each record's event time lies is found once, at load: parsing every
//! record's tag again on every loop was a third of `tcp-replay`'s CPU at
//! 24 M records/s, on the same two cores as the app it measures. The
//! sending thread only waits for a chunk's due time and writes it.
//!
//! Framing: consecutive batches are merged into frames of up to
//! [`Framing::frame_records`] records; a frame carries the arrival time of
//! its first batch. `--no-wait` replays merge freely and put several frames
//! into one write of up to [`Framing::chunk_bytes`], so the sender pays a
//! system call per megabyte instead of per batch. Paced replays merge only
//! batches due within [`PACED_HORIZON`] of a frame's first batch (so no
//! record leaves more than that before its recorded time; at the recorded
//! pace of a P2 recording that is about one batch) and write each frame when
//! it is due.

use std::path::Path;

use crossbeam_channel::{Receiver, Sender};
use telemetry::raw;
use telemetry::{Batch, RecordingError, RecordingReader};

/// One recorded batch within [`Prepared::payload`].
#[derive(Debug, Clone, Copy)]
struct Span {
    arrival_us: u64,
    start: usize,
    end: usize,
    records: u32,
    /// Its records' event-time offsets (from `start`) in [`Prepared::times`].
    times: (usize, usize),
}

/// A recording in wire form.
pub struct Prepared {
    payload: Vec<u8>,
    batches: Vec<Span>,
    /// Each record's event-time offset within its batch's bytes.
    times: Vec<u32>,
    lo: u64,
    hi: u64,
    gap: u64,
}

impl Prepared {
    /// Reads and decodes the whole recording at `path` once.
    pub fn load(path: &Path) -> Result<Prepared, RecordingError> {
        let mut r = RecordingReader::open(path)?;
        let mut b = Batch::default();
        let mut p = Prepared {
            payload: Vec::new(),
            batches: Vec::new(),
            times: Vec::new(),
            lo: u64::MAX,
            hi: 0,
            gap: 1_000,
        };
        while r.read_into(&mut b)? {
            p.push(&b);
        }
        Ok(p)
    }

    fn push(&mut self, b: &Batch) {
        if let Some(prev) = self.batches.last() {
            if b.arrival_us > prev.arrival_us {
                self.gap = b.arrival_us - prev.arrival_us;
            }
        }
        self.lo = self.lo.min(b.arrival_us);
        self.hi = self.hi.max(b.arrival_us);
        for r in &b.records {
            self.lo = self.lo.min(r.timestamp_us());
            self.hi = self.hi.max(r.timestamp_us());
        }
        let start = self.payload.len();
        b.encode_payload_into(&mut self.payload);
        let from = self.times.len();
        raw::event_time_offsets(&self.payload[start..], &mut self.times);
        self.batches.push(Span {
            arrival_us: b.arrival_us,
            start,
            end: self.payload.len(),
            records: b.records.len() as u32,
            times: (from, self.times.len()),
        });
    }

    /// Adds `delta` to the event time of every record of batches `[i, j)`,
    /// copied back to back into `frame`.
    fn shift_batches(&self, (i, j): (usize, usize), frame: &mut [u8], delta: u64) {
        let Some(first) = self.batches.get(i) else {
            return;
        };
        for b in self.batches.get(i..j).unwrap_or_default() {
            let at = b.start - first.start;
            if let (Some(bytes), Some(times)) =
                (frame.get_mut(at..), self.times.get(b.times.0..b.times.1))
            {
                raw::shift_at_offsets(bytes, times, delta);
            }
        }
    }

    /// Arrival time of the first batch, µs (0 if empty).
    pub fn first_arrival(&self) -> u64 {
        self.batches.first().map_or(0, |b| b.arrival_us)
    }

    /// The loop period, µs: the span of arrival and event times plus the
    /// last gap between batches, so each loop starts after the previous
    /// one's newest time.
    pub fn period(&self) -> u64 {
        if self.lo == u64::MAX {
            self.gap
        } else {
            self.hi - self.lo + self.gap
        }
    }

    /// The earliest arrival or event time in the recording, µs (0 if empty).
    pub fn earliest(&self) -> u64 {
        if self.lo == u64::MAX {
            0
        } else {
            self.lo
        }
    }

    /// Batches in the recording.
    pub fn batches(&self) -> usize {
        self.batches.len()
    }

    /// Bytes of the recording in wire form (payloads, without frame headers).
    pub fn payload_bytes(&self) -> usize {
        self.payload.len()
    }
}

/// Wall time within which a paced replay merges due batches into one frame.
pub const PACED_HORIZON: std::time::Duration = std::time::Duration::from_millis(1);

/// How batches become frames and writes.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// Paced: merge only batches whose recorded arrival is at most this many
    /// µs after the frame's first batch, one frame per write. `None`
    /// (`--no-wait`): merge freely, several frames per write.
    pub horizon_us: Option<u64>,
    /// Most records in a merged frame.
    pub frame_records: u32,
    /// A chunk is closed once it holds this many bytes.
    pub chunk_bytes: usize,
}

impl Framing {
    /// The framing of a replay at `speed` (`None`: `--no-wait`). Frames hold
    /// up to 4096 records (≈ 110 KB of P2 records, 0.2 ms of data at 20 M
    /// records/s); `--no-wait` writes are up to 1 MiB.
    pub fn for_replay(speed: Option<f64>) -> Framing {
        Framing {
            horizon_us: speed.map(|s| (PACED_HORIZON.as_micros() as f64 * s) as u64),
            frame_records: 4096,
            chunk_bytes: 1 << 20,
        }
    }
}

/// Ready-to-send frames.
pub struct Chunk {
    /// Complete frames, back to back.
    pub bytes: Vec<u8>,
    /// When its first frame is due: its first batch's recorded arrival
    /// (shifted by the loop), µs.
    pub arrival_us: u64,
    /// Frames in `bytes`.
    pub frames: u64,
    /// Records in `bytes`.
    pub records: u64,
    /// Loop this chunk belongs to (0 = first pass).
    pub pass: u64,
}

/// Builds chunks for `passes` passes over `rec` (`None`: until `tx`
/// disconnects), pass `n` shifted by `n * rec.period()`, taking emptied
/// buffers back from `recycled`. Runs on its own thread.
pub fn produce(
    rec: &Prepared,
    framing: Framing,
    passes: Option<u64>,
    tx: &Sender<Chunk>,
    recycled: &Receiver<Vec<u8>>,
) {
    let period = rec.period();
    let mut pass = 0u64;
    while passes.is_none_or(|n| pass < n) && !rec.batches.is_empty() {
        let shift = pass * period;
        let mut chunk = new_chunk(recycled, pass);
        let mut i = 0;
        while i < rec.batches.len() {
            // Batches [i, j) become one frame.
            let mut j = i + 1;
            let mut records = rec.batches[i].records;
            let due_by = framing
                .horizon_us
                .map_or(u64::MAX, |h| rec.batches[i].arrival_us.saturating_add(h));
            while j < rec.batches.len()
                && records + rec.batches[j].records <= framing.frame_records
                && rec.batches[j].arrival_us <= due_by
            {
                records += rec.batches[j].records;
                j += 1;
            }
            let first = rec.batches[i];
            let payload = &rec.payload[first.start..rec.batches[j - 1].end];
            if chunk.frames == 0 {
                chunk.arrival_us = first.arrival_us + shift;
            }
            let framed = telemetry::wire::encode_frame_payload_with(
                records,
                first.arrival_us + shift,
                payload,
                &mut chunk.bytes,
                |p| {
                    if shift > 0 {
                        rec.shift_batches((i, j), p, shift)
                    }
                },
            );
            if framed.is_err() {
                // A recorded batch is far below the 4 GiB frame bound.
                log::error!("a batch of {records} records does not fit a frame; skipped");
            } else {
                chunk.frames += 1;
                chunk.records += u64::from(records);
            }
            i = j;
            if framing.horizon_us.is_some() || chunk.bytes.len() >= framing.chunk_bytes {
                let full = std::mem::replace(&mut chunk, new_chunk(recycled, pass));
                if tx.send(full).is_err() {
                    return;
                }
            }
        }
        if chunk.frames > 0 && tx.send(chunk).is_err() {
            return;
        }
        pass += 1;
    }
}

fn new_chunk(recycled: &Receiver<Vec<u8>>, pass: u64) -> Chunk {
    let mut bytes = recycled.try_recv().unwrap_or_default();
    bytes.clear();
    Chunk {
        bytes,
        arrival_us: 0,
        frames: 0,
        records: 0,
        pass,
    }
}

/// Shifts the event time of every record of a wire-form payload.
pub fn shift_all(payload: &mut [u8], delta: u64) {
    raw::shift_event_times(payload, delta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use telemetry::wire::{FrameReader, DEFAULT_MAX_PAYLOAD};
    use telemetry::{KvOp, KvOpKind, Record, Syscall};

    fn batch(arrival: u64, n: u64) -> Batch {
        let records = (0..n)
            .map(|k| {
                if k % 2 == 0 {
                    Record::KvOp(KvOp {
                        thread_id: 1,
                        op: KvOpKind::Read,
                        start_us: arrival + k,
                        duration_us: k,
                    })
                } else {
                    Record::Syscall(Syscall {
                        pid: 1,
                        tid: 1,
                        nr: 17,
                        start_us: arrival + k,
                        duration_us: k,
                    })
                }
            })
            .collect();
        Batch::new(arrival, records)
    }

    fn prepared(batches: &[Batch]) -> Prepared {
        let mut p = Prepared {
            payload: Vec::new(),
            batches: Vec::new(),
            times: Vec::new(),
            lo: u64::MAX,
            hi: 0,
            gap: 1_000,
        };
        for b in batches {
            p.push(b);
        }
        p
    }

    /// Every pass's frames decode to the recorded records, shifted by the
    /// pass; merged frames carry whole batches and at most `frame_records`.
    #[test]
    fn chunks_hold_the_recording_shifted_per_pass() {
        let batches: Vec<Batch> = (0..50).map(|i| batch(1_000 + i * 100, 3 + i % 7)).collect();
        let rec = prepared(&batches);
        // Batches arrive 100 µs apart: a 250 µs horizon merges up to 3.
        for horizon_us in [Some(0), Some(250), None] {
            let merge = horizon_us != Some(0);
            let framing = Framing {
                horizon_us,
                frame_records: 20,
                chunk_bytes: 600,
            };
            let (tx, rx) = crossbeam_channel::unbounded();
            let (_back, recycled) = crossbeam_channel::unbounded();
            produce(&rec, framing, Some(3), &tx, &recycled);
            drop(tx);
            let mut got = vec![Vec::new(); 3];
            for c in rx.iter() {
                let mut r = FrameReader::with_max_payload(&c.bytes[..], DEFAULT_MAX_PAYLOAD);
                let mut frames = 0;
                while let Some(b) = r.read_batch().unwrap() {
                    assert!(b.records.len() <= 20 || !merge);
                    if frames == 0 {
                        assert_eq!(b.arrival_us, c.arrival_us);
                    }
                    if horizon_us == Some(250) {
                        // Whole batches of up to 3 consecutive arrivals.
                        let n = batches
                            .iter()
                            .position(|x| x.arrival_us + c.pass * rec.period() == b.arrival_us)
                            .unwrap();
                        let within: usize = batches[n..]
                            .iter()
                            .take_while(|x| x.arrival_us <= batches[n].arrival_us + 250)
                            .map(|x| x.records.len())
                            .sum();
                        assert!(b.records.len() <= within);
                    }
                    frames += 1;
                    got[c.pass as usize].extend(b.records);
                }
                assert_eq!(frames, c.frames);
                if horizon_us.is_some() {
                    assert_eq!(frames, 1, "paced: one frame per write");
                }
            }
            for (pass, recs) in got.iter().enumerate() {
                let shift = pass as u64 * rec.period();
                let want: Vec<Record> = batches
                    .iter()
                    .flat_map(|b| b.records.iter().map(|r| r.shifted(shift)))
                    .collect();
                assert_eq!(recs, &want, "pass {pass} horizon {horizon_us:?}");
            }
        }
    }

    #[test]
    fn period_covers_arrival_and_event_times() {
        let rec = prepared(&[batch(1_000, 4), batch(1_500, 4)]);
        // Times 1_000 ..= 1_503, plus the last gap (500).
        assert_eq!(rec.period(), 503 + 500);
        assert_eq!(rec.first_arrival(), 1_000);
    }
}
