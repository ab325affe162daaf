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
///
/// Events come in runs from one process (a ring buffer's batch is mostly a
/// few busy tasks), so the last name's reference is kept and a record of
/// the same name costs a 16-byte compare, not a hash of the name; the
/// waiting records are slots indexed by reference (references are dense),
/// with the list of slots in use. At the demo's 40 k events/s the hashing
/// was a tenth of the agent's CPU.
#[derive(Default)]
pub struct SeriesBook {
    refs: HashMap<Vec<u8>, u32>,
    new: Vec<SeriesTags>,
    /// The last name looked up (at most a kernel comm's 16 bytes) and its
    /// reference.
    last: Option<(Vec<u8>, u32)>,
    /// Records waiting per reference: count and wire bytes.
    pending: Vec<(u32, Vec<u8>)>,
    /// References whose slot holds records, in first-use order.
    active: Vec<u32>,
    bytes: usize,
}

impl SeriesBook {
    fn reference(&mut self, comm: &[u8]) -> u32 {
        if let Some((name, r)) = &self.last {
            if name.as_slice() == comm {
                return *r;
            }
        }
        let r = self.look_up(comm);
        match self.last.as_mut() {
            Some((name, last)) => {
                name.clear();
                name.extend_from_slice(comm);
                *last = r;
            }
            None => self.last = Some((comm.to_vec(), r)),
        }
        r
    }

    fn look_up(&mut self, comm: &[u8]) -> u32 {
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

    /// Appends `record` to reference `r`'s waiting records.
    fn push(&mut self, r: u32, record: &Record) {
        let i = r as usize;
        if self.pending.len() <= i {
            self.pending.resize_with(i + 1, Default::default);
        }
        let (n, buf) = &mut self.pending[i];
        if *n == 0 {
            self.active.push(r);
        }
        let before = buf.len();
        buf.push(record.kind() as u8);
        record.encode_into(buf);
        *n += 1;
        self.bytes += buf.len() - before;
    }

    /// Adds a record of the process named `comm`.
    pub fn add(&mut self, comm: &[u8], record: &Record) {
        let r = self.reference(comm);
        self.push(r, record);
    }

    /// Adds a record without a process (series reference 0: only the
    /// connection's `host` tag), e.g. the agent's own counts.
    pub fn add_untagged(&mut self, record: &Record) {
        self.push(0, record);
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
        for series_ref in self.active.drain(..) {
            let Some((records, payload)) = self.pending.get_mut(series_ref as usize) else {
                continue;
            };
            out(Item::Data {
                series_ref,
                records: std::mem::take(records),
                payload: std::mem::take(payload),
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

    /// Runs of one name (the cached reference), names alternating (looked
    /// up again) and untagged records each land in their own reference,
    /// with every record counted once and a slot emptied by each drain.
    #[test]
    fn records_land_in_their_names_reference() {
        let mut b = SeriesBook::default();
        let rec = |tid| {
            Record::RunQueue(telemetry::RunQueue {
                pid: 1,
                tid,
                cpu: 0,
                start_us: 1,
                latency_us: 2,
            })
        };
        let names: [&[u8]; 7] = [b"a", b"a", b"b", b"a", b"c", b"c", b"b"];
        for (i, n) in names.iter().enumerate() {
            b.add(n, &rec(i as u32));
        }
        b.add_untagged(&rec(99));
        let mut counts = std::collections::BTreeMap::new();
        let mut bytes = 0;
        b.drain(|i| {
            if let Item::Data {
                series_ref,
                records,
                payload,
            } = i
            {
                assert!(
                    counts.insert(series_ref, records).is_none(),
                    "one item per reference"
                );
                bytes += payload.len();
            }
        });
        // a is reference 1, b 2, c 3; untagged records are reference 0.
        let want: std::collections::BTreeMap<u32, u32> = [(0, 1), (1, 3), (2, 2), (3, 2)].into();
        assert_eq!(counts, want);
        assert!(bytes > 0);
        assert_eq!(b.buffered_bytes(), 0);
        let mut none = 0;
        b.drain(|_| none += 1);
        assert_eq!(none, 0, "a drained book hands out nothing");
    }
}
