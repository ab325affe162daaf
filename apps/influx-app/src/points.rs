//! Records → InfluxDB line protocol, in the shared data model
//! ([`telemetry::model`]): one point per record, measurement and tags of its
//! series, every field of the series as an integer, and a nanosecond
//! timestamp that is unique within the series.
//!
//! Why unique: InfluxDB identifies a point by (series, timestamp) and a second
//! write with the same pair overwrites the first. Records carry µs times and a
//! busy source emits many records in one µs (every record of a batch shares
//! its arrival µs), so the point of µs `t` is written at `t·1000 + k` ns where
//! `k` counts the series' earlier points in that µs. A series never goes back
//! in time: a record older than its series' newest point is raised to just
//! after it (InfluxDB would otherwise overwrite or interleave it; loom-app
//! refuses such a record as late instead, and with arrival times, which the
//! evaluation uses, neither happens); only the 1001st point of one µs spills
//! into the next µs (counted in [`Encoder::spilled`]).

use std::collections::HashMap;

use influxdb_line_protocol::builder::LineProtocolBuilder;
use telemetry::model::{Series, Value};
use telemetry::Record;

/// Nanoseconds per µs.
const NS_PER_US: u64 = 1_000;

struct SeriesState {
    series: Series,
    /// Newest timestamp written for the series, ns.
    last_ns: Option<u64>,
}

/// Turns records into line-protocol lines, keeping the per-series state that
/// makes timestamps unique. One encoder must see every record of a series.
#[derive(Default)]
pub struct Encoder {
    series: HashMap<u64, SeriesState>,
    record_bytes: Vec<u8>,
    raised: u64,
    spilled: u64,
    saturated: u64,
}

impl Encoder {
    /// A new encoder with no series seen.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// Appends the line of `record` stored at `time_us` (µs since the Unix
    /// epoch) to `out`; returns the timestamp written, ns.
    pub fn encode(&mut self, record: &Record, time_us: u64, out: &mut Vec<u8>) -> u64 {
        let state = self
            .series
            .entry(record.source_id())
            .or_insert_with(|| SeriesState {
                series: record.series(),
                last_ns: None,
            });
        let wanted = time_us.saturating_mul(NS_PER_US);
        let ns = match state.last_ns {
            Some(last) if last >= wanted => {
                if last / NS_PER_US > time_us {
                    self.raised += 1;
                } else if (last + 1) / NS_PER_US > time_us {
                    self.spilled += 1;
                }
                last + 1
            }
            _ => wanted,
        };
        state.last_ns = Some(ns);

        self.record_bytes.clear();
        record.encode_into(&mut self.record_bytes);
        let mut line =
            LineProtocolBuilder::new_with(&mut *out).measurement(state.series.measurement);
        for (k, v) in &state.series.tags {
            line = line.tag(k, v);
        }
        let mut fields = state.series.fields.iter();
        // Every series has at least one field (the data model's tables).
        let Some(first) = fields.next() else {
            return ns;
        };
        let mut line = line.field(
            first.name(),
            to_i64(first.read(&self.record_bytes), &mut self.saturated),
        );
        for f in fields {
            line = line.field(
                f.name(),
                to_i64(f.read(&self.record_bytes), &mut self.saturated),
            );
        }
        // ns since the epoch fit i64 until 2262.
        line.timestamp(ns.min(i64::MAX as u64) as i64).close_line();
        ns
    }

    /// Records whose time was raised because their series already had a newer point.
    pub fn raised(&self) -> u64 {
        self.raised
    }

    /// Points moved into the next µs because 1000 points of the series shared one µs.
    pub fn spilled(&self) -> u64 {
        self.spilled
    }

    /// Field values above `i64::MAX` written as `i64::MAX`.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }
}

/// InfluxDB 1.6 accepts signed integers only (the `u` suffix needs a build
/// flag), so unsigned fields are written as `i64`; values above `i64::MAX`
/// (never seen in the telemetry: they are pids, µs and page numbers) saturate.
fn to_i64(v: Option<Value>, saturated: &mut u64) -> i64 {
    match v {
        Some(Value::Unsigned(u)) => i64::try_from(u).unwrap_or_else(|_| {
            *saturated += 1;
            i64::MAX
        }),
        Some(Value::Signed(i)) => i,
        Some(Value::Float(f)) => f as i64,
        // Records are encoded to their full length just above.
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use influxdb_line_protocol::{parse_lines, FieldValue as LpValue};
    use telemetry::{KvOp, KvOpKind, PageCache, Syscall};

    fn kv(start_us: u64, duration_us: u64) -> Record {
        Record::KvOp(KvOp {
            thread_id: 3,
            op: KvOpKind::Read,
            start_us,
            duration_us,
        })
    }

    #[test]
    fn lines_follow_the_data_model_and_parse_back() {
        let mut e = Encoder::new();
        let mut out = Vec::new();
        e.encode(&kv(10, 55), 1_700_000_000_000_000, &mut out);
        e.encode(
            &Record::Syscall(Syscall {
                pid: 1,
                tid: 2,
                nr: 17,
                start_us: 9,
                duration_us: 123,
            }),
            5,
            &mut out,
        );
        e.encode(
            &Record::PageCache(PageCache {
                pid: 1,
                tid: 2,
                timestamp_us: 4,
                pfn: 77,
                inode: 8,
                index: 9,
                device: 10,
            }),
            4,
            &mut out,
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "kv,op=read thread_id=3i,start_us=10i,duration_us=55i 1700000000000000000\n\
             syscall,name=pread64,nr=17 pid=1i,tid=2i,start_us=9i,duration_us=123i 5000\n\
             pagecache pid=1i,tid=2i,pfn=77i,inode=8i,index=9i,device=10i 4000\n"
        );
        let parsed: Vec<_> = parse_lines(&text).collect::<Result<_, _>>().unwrap();
        assert_eq!(parsed.len(), 3);
        assert_eq!(
            parsed[1].field_value("duration_us"),
            Some(&LpValue::I64(123))
        );
    }

    #[test]
    fn timestamps_are_unique_per_series_and_never_go_back() {
        let mut e = Encoder::new();
        let mut out = Vec::new();
        let ts: Vec<u64> = [5, 5, 5, 7, 6]
            .iter()
            .map(|&us| e.encode(&kv(0, 1), us, &mut out))
            .collect();
        assert_eq!(ts, [5000, 5001, 5002, 7000, 7001]);
        assert_eq!(e.raised(), 1);
        // Another series has its own counter.
        let other = Record::KvOp(KvOp {
            thread_id: 1,
            op: KvOpKind::Write,
            start_us: 0,
            duration_us: 1,
        });
        assert_eq!(e.encode(&other, 5, &mut out), 5000);
        // The 1001st point of one µs spills into the next µs.
        let mut e = Encoder::new();
        for _ in 0..1000 {
            e.encode(&kv(0, 1), 9, &mut out);
        }
        assert_eq!(e.encode(&kv(0, 1), 9, &mut out), 10_000);
        assert_eq!(e.spilled(), 1);
    }

    #[test]
    fn huge_unsigned_values_saturate() {
        let mut s = 0;
        assert_eq!(to_i64(Some(Value::Unsigned(u64::MAX)), &mut s), i64::MAX);
        assert_eq!(s, 1);
    }
}
