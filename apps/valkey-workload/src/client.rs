//! The clients: the initial load and the request loops, one connection per
//! client thread, every request timed and (once telemetry is on) turned into
//! a KV op record.

use std::sync::atomic::Ordering;

use rand::{Rng, SeedableRng};
use telemetry::{KvOp, KvOpKind, Record};
use workload::{monotonic_ns, RecordBuffer, Shared};

use crate::keys::{key, KeyChooser};
use crate::{WorkloadConfig, WorkloadError};

/// Client threads add their request count to the shared total this often.
const OPS_FLUSH_EVERY: u64 = 64;
/// Keys per pipelined batch during the load.
const LOAD_BATCH: u64 = 1000;

/// The value written for every key.
fn value(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

fn connect(url: &str) -> Result<redis::Connection, WorkloadError> {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(WorkloadError::redis(format!("connecting to {url}")))
}

/// Writes every record `0..records` once (pipelined batches of SET).
pub fn load(url: &str, config: &WorkloadConfig) -> Result<(), WorkloadError> {
    let mut con = connect(url)?;
    let v = value(config.value_size);
    let mut start = 0;
    while start < config.records {
        let end = (start + LOAD_BATCH).min(config.records);
        let mut pipe = redis::pipe();
        for n in start..end {
            pipe.cmd("SET").arg(key(n)).arg(&v).ignore();
        }
        pipe.query::<()>(&mut con)
            .map_err(WorkloadError::redis(format!("loading keys {start}..{end}")))?;
        start = end;
    }
    Ok(())
}

/// One client's request loop until `shared.stop` (or its request budget).
/// Its id is the KV op record's `thread_id`. An error (the server cannot be
/// reached) ends the whole run: the shared run sets `stop`.
pub fn run_client(
    id: u32,
    url: &str,
    config: &WorkloadConfig,
    chooser: &KeyChooser,
    shared: &Shared,
    mut buffer: RecordBuffer,
) -> Result<(), WorkloadError> {
    let result = request_loop(id, url, config, chooser, shared, &mut buffer);
    buffer.flush();
    result
}

fn request_loop(
    id: u32,
    url: &str,
    config: &WorkloadConfig,
    chooser: &KeyChooser,
    shared: &Shared,
    buffer: &mut RecordBuffer,
) -> Result<(), WorkloadError> {
    let mut con = connect(url)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x9e37_79b9_7f4a_7c15 ^ u64::from(id));
    let v = value(config.value_size);
    let budget = config.max_requests_per_client.unwrap_or(u64::MAX);
    let (mut done, mut unflushed, mut recorded) = (0u64, 0u64, 0u64);
    let mut epoch_ns = None;
    let flush_counts = |unflushed: &mut u64, recorded: &mut u64| {
        shared.ops.fetch_add(*unflushed, Ordering::Relaxed);
        shared.recorded.fetch_add(*recorded, Ordering::Relaxed);
        (*unflushed, *recorded) = (0, 0);
    };
    while done < budget && !shared.stop.load(Ordering::Relaxed) {
        let n = chooser.next(&mut rng);
        let read = rng.gen_bool(config.read_ratio);
        let start = monotonic_ns();
        let reply = if read {
            redis::cmd("GET")
                .arg(key(n))
                .query::<Option<Vec<u8>>>(&mut con)
                .map(drop)
        } else {
            redis::cmd("SET").arg(key(n)).arg(&v).query::<()>(&mut con)
        };
        let end = monotonic_ns();
        if let Err(e) = reply {
            flush_counts(&mut unflushed, &mut recorded);
            return Err(WorkloadError::redis(format!(
                "client {id}: {} {}",
                if read { "GET" } else { "SET" },
                key(n)
            ))(e));
        }
        done += 1;
        unflushed += 1;
        if epoch_ns.is_none() {
            epoch_ns = shared.epoch_if_on();
        }
        if let Some(epoch) = epoch_ns {
            buffer.push(Record::KvOp(KvOp {
                thread_id: id,
                op: if read {
                    KvOpKind::Read
                } else {
                    KvOpKind::Write
                },
                start_us: start.saturating_sub(epoch) / 1000,
                duration_us: (end - start) / 1000,
            }));
            recorded += 1;
        }
        if unflushed >= OPS_FLUSH_EVERY {
            flush_counts(&mut unflushed, &mut recorded);
        }
    }
    flush_counts(&mut unflushed, &mut recorded);
    Ok(())
}
