//! Process identity on the wire: each process name gets a series reference
//! (declared once per connection in a SERIES frame with tag `comm`; the
//! receiver adds `host` from the HELLO), and records are batched per
//! reference so one data frame carries one series context.

use std::collections::HashMap;

use telemetry::wire::SeriesTags;
use telemetry::Record;

/// Most process names given their own reference; records of further names
/// go out under the reference `OTHER_COMM`'s name.
pub const MAX_NAMES: usize = 60_000;
/// The `comm` tag of records past [`MAX_NAMES`].
pub const OTHER_COMM: &str = "[other]";

/// What the book hands to the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A new reference to declare (before any data naming it).
    Series(SeriesTags),
    /// Records of one reference: `records` tagged records back to back.
    Data {
        /// The reference.
        series_ref: u32,
        /// Records in `payload`.
        records: u32,
        /// The records in wire form.
        payload: Vec<u8>,
    },
}

/// References by process name and the records waiting per reference.
#[derive(Default)]
pub struct SeriesBook {
    refs: HashMap<Vec<u8>, u32>,
    new: Vec<SeriesTags>,
    pending: HashMap<u32, (u32, Vec<u8>)>,
    bytes: usize,
}

impl SeriesBook {
    fn reference(&mut self, comm: &[u8]) -> u32 {
        if let Some(&r) = self.refs.get(comm) {
            return r;
        }
        let name = if self.refs.len() >= MAX_NAMES {
            OTHER_COMM.as_bytes()
        } else {
            comm
        };
        if let Some(&r) = self.refs.get(name) {
            return r;
        }
        let r = self.refs.len() as u32 + 1;
        let text = String::from_utf8_lossy(name).into_owned();
        match SeriesTags::new(r, &[("comm", text.as_str())]) {
            Ok(tags) => {
                self.new.push(tags);
                self.refs.insert(name.to_vec(), r);
                r
            }
            // A name that is not a valid tag value (cannot happen for ≤ 15
            // bytes of comm): its records keep only the host tag.
            Err(_) => 0,
        }
    }

    /// Adds a record of the process named `comm`.
    pub fn add(&mut self, comm: &[u8], record: &Record) {
        let r = self.reference(comm);
        let (n, buf) = self.pending.entry(r).or_default();
        let before = buf.len();
        buf.push(record.kind() as u8);
        record.encode_into(buf);
        *n += 1;
        self.bytes += buf.len() - before;
    }

    /// Adds a record without a process (series reference 0: only the
    /// connection's `host` tag), e.g. the agent's own counts.
    pub fn add_untagged(&mut self, record: &Record) {
        let (n, buf) = self.pending.entry(0).or_default();
        let before = buf.len();
        buf.push(record.kind() as u8);
        record.encode_into(buf);
        *n += 1;
        self.bytes += buf.len() - before;
    }

    /// Bytes of records waiting.
    pub fn buffered_bytes(&self) -> usize {
        self.bytes
    }

    /// Hands out new declarations, then the waiting records per reference.
    pub fn drain(&mut self, mut out: impl FnMut(Item)) {
        for s in self.new.drain(..) {
            out(Item::Series(s));
        }
        for (series_ref, (records, payload)) in self.pending.drain() {
            out(Item::Data {
                series_ref,
                records,
                payload,
            });
        }
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_reference_per_name_declared_before_its_data() {
        let mut b = SeriesBook::default();
        let rec = Record::RunQueue(telemetry::RunQueue {
            pid: 1,
            tid: 1,
            cpu: 0,
            start_us: 1,
            latency_us: 2,
        });
        b.add(b"redis", &rec);
        b.add(b"pg", &rec);
        b.add(b"redis", &rec);
        let mut items = Vec::new();
        b.drain(|i| items.push(i));
        let series: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                Item::Series(s) => Some((s.series_ref, s.tags[0].1.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(series, vec![(1, "redis".into()), (2, "pg".into())]);
        assert!(matches!(items[0], Item::Series(_)) && matches!(items[1], Item::Series(_)));
        let total: u32 = items
            .iter()
            .map(|i| match i {
                Item::Data { records, .. } => *records,
                _ => 0,
            })
            .sum();
        assert_eq!(total, 3);
        b.add(b"redis", &rec);
        let mut again = Vec::new();
        b.drain(|i| again.push(i));
        assert_eq!(again.len(), 1, "a known name is not declared again");
    }
}
