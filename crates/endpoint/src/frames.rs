//! A group of frames as the receivers hand it to the app: the records in
//! wire form back to back, with their series contexts and sequence marks.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use telemetry::raw::PayloadRecords;
use telemetry::Record;

use crate::counters::Counters;
use crate::session::SeriesContext;

/// A run of records in a group that share one series context (version-2
/// senders); records of version-1 frames have none.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Records in the run.
    pub records: u64,
    /// Their context (`None`: version 1, no added tags).
    pub context: Option<Arc<SeriesContext>>,
}

/// Frames received together: their payloads back to back, which is itself
/// a valid payload of `records` records (each a tag byte and its encoding).
///
/// Its bytes count as queued (see [`ReceiveConfig::max_queued_bytes`]) from
/// when a receiver offers it until it is dropped or its buffer is taken
/// back with [`Frames::into_payload`].
pub struct Frames {
    /// Arrival at this app (wall clock, µs since the Unix epoch).
    pub arrival_us: u64,
    payload: Vec<u8>,
    /// Frames in the group.
    pub frames: u64,
    /// Records in the group.
    pub records: u64,
    /// Runs of records by series context, in order; empty: every record
    /// is untagged (version 1).
    pub segments: Vec<Segment>,
    /// Version 2: the sequence number of the group's last data frame.
    pub last_seq: u64,
    /// The sender, when it wants acknowledgements: its frames up to
    /// `last_seq` are to be made durable and acknowledged.
    pub acked_sender: Option<u64>,
    pub(crate) queued: Option<(Arc<Counters>, u64)>,
}

impl Drop for Frames {
    fn drop(&mut self) {
        if let Some((c, n)) = self.queued.take() {
            c.queued_bytes.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

impl Frames {
    /// A group of checked payloads (`payload` must hold exactly `records`
    /// valid records), not counted as queued.
    pub fn new(arrival_us: u64, payload: Vec<u8>, frames: u64, records: u64) -> Frames {
        Frames {
            arrival_us,
            payload,
            frames,
            records,
            segments: Vec::new(),
            last_seq: 0,
            acked_sender: None,
            queued: None,
        }
    }

    /// The runs of records by series context: [`Frames::segments`], or one
    /// untagged run of every record when it is empty.
    pub fn runs(&self) -> Vec<Segment> {
        if self.segments.is_empty() {
            vec![Segment {
                records: self.records,
                context: None,
            }]
        } else {
            self.segments.clone()
        }
    }

    /// The payloads, back to back.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// Ends the group and returns its buffer (for [`BufferPool::give`]).
    pub fn into_payload(mut self) -> Vec<u8> {
        std::mem::take(&mut self.payload)
    }

    /// The records in wire form: `(kind, encoded bytes)`.
    pub fn records(&self) -> PayloadRecords<'_> {
        telemetry::raw::records(&self.payload)
    }

    /// Decodes the records into `out` (cleared first), for consumers that
    /// need them as values.
    pub fn decode_into(&self, out: &mut Vec<Record>) {
        out.clear();
        out.reserve(self.records as usize);
        // The payload was checked on receipt, so every record decodes.
        out.extend(
            self.records()
                .filter_map(|(k, b)| Record::decode(k, b).ok()),
        );
    }
}
