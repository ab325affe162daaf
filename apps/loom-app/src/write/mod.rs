//! `POST /write`: InfluxDB 1.x line protocol into the store, served on the
//! InfluxDB API's address (`--http`).
//!
//! A body (plain or gzip, at most `--http-max-write-bytes` either way) is
//! read line by line ([`lines`]); its points become records of the shared
//! series registry and go the way OTLP records go: through the OTLP intake
//! (same queue, intake log, reorder window and late rule), so a 204 means
//! every point is in the fsynced intake log (`--otlp-ack durable`, the
//! default). Bad lines and refused points are answered the way InfluxDB
//! 1.x answers them: 400 with `{"error": "unable to parse …"}` when nothing
//! could be stored, else `{"error": "partial write: … dropped=N"}` after the
//! good points are stored. See docs/write.md.

pub mod lines;

use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use influxql::http::{Response, WriteFuture, WriteRequest, WriteSink};

use crate::counters::WriteCounters;
use crate::ingest::epoch_us;
use crate::otlp_ingest::{late_reason, not_stored_reason, Intake, Outcome, RETRY_AFTER_S};
use lines::{Precision, Rules};

/// The `/write` side of loom-app: line protocol into the OTLP intake.
pub struct LineSink {
    intake: Arc<Intake>,
    max_body: usize,
    max_record_bytes: usize,
    /// Counters of this endpoint.
    pub counters: Arc<WriteCounters>,
}

impl LineSink {
    /// A sink feeding `intake`, bodies of at most `max_body` bytes
    /// decompressed, records of at most `max_record_bytes`, counting into
    /// `counters`.
    pub fn new(
        intake: Arc<Intake>,
        max_body: usize,
        max_record_bytes: usize,
        counters: Arc<WriteCounters>,
    ) -> Self {
        LineSink {
            intake,
            max_body,
            max_record_bytes,
            counters,
        }
    }

    fn refused(&self, status: u16, message: &str) -> Response {
        let n = self
            .counters
            .requests_refused
            .fetch_add(1, Ordering::Relaxed);
        if n < 10 {
            log::warn!("/write refused ({status}): {message}");
        }
        Response::error(status, message)
    }

    /// The body's bytes: gunzipped when it says so, bounded. Lines are
    /// decoded one by one ([`lines::convert`]): one line that is not UTF-8
    /// is refused alone.
    fn body(&self, req: &WriteRequest) -> Result<Vec<u8>, Response> {
        let raw = match req.header("content-encoding").map(str::trim) {
            None | Some("" | "identity") => req.body.clone(),
            Some(e) if e.eq_ignore_ascii_case("gzip") => {
                let mut out = Vec::new();
                let limit = self.max_body as u64;
                // Every gzip member, as Go's gzip reader (InfluxDB's) reads them.
                let read = flate2::read::MultiGzDecoder::new(&req.body[..])
                    .take(limit + 1)
                    .read_to_end(&mut out);
                if let Err(e) = read {
                    return Err(self.refused(400, &format!("gzip body does not decode: {e}")));
                }
                if out.len() as u64 > limit {
                    return Err(self.refused(
                        413,
                        &format!("request body larger than {limit} bytes once decompressed"),
                    ));
                }
                out
            }
            Some(e) => {
                return Err(self.refused(
                    415,
                    &format!("Content-Encoding {e:?} not supported: send plain or gzip"),
                ))
            }
        };
        Ok(raw)
    }

    /// "Retry later": the ingest queue is full, ingest stopped, or the
    /// points were not durable in time (they may still be stored).
    fn throttled(&self, o: &Outcome) -> Response {
        self.counters
            .requests_throttled
            .fetch_add(1, Ordering::Relaxed);
        let mut r = Response::error(503, &crate::otlp_ingest::retry_message(o));
        r.headers
            .push(("retry-after".into(), RETRY_AFTER_S.to_string()));
        r
    }

    async fn answer(&self, req: WriteRequest) -> Response {
        // InfluxDB needs a database name; Loom has one (`loom`) and takes any.
        if req.param("db").is_none_or(str::is_empty) {
            return self.refused(400, "database is required");
        }
        let precision = match Precision::parse(req.param("precision")) {
            Ok(p) => p,
            Err(e) => return self.refused(400, &e),
        };
        if let Some(o) = self.intake.busy_uncounted() {
            return self.throttled(&o);
        }
        let body = match self.body(&req) {
            Ok(b) => b,
            Err(r) => return r,
        };
        // Parsing a large body takes CPU time: off the server's one async
        // thread, so other requests go on meanwhile.
        let intake = self.intake.clone();
        let max_record_bytes = self.max_record_bytes;
        let converted = tokio::task::spawn_blocking(move || {
            let ctx = intake.context();
            lines::convert(
                &body,
                &Rules {
                    registry: ctx.registry,
                    precision,
                    now_us: epoch_us(),
                    max_record_bytes,
                },
            )
        })
        .await;
        let mut batch = match converted {
            Ok(b) => b,
            Err(e) => return self.refused(500, &format!("reading the body failed: {e}")),
        };
        let c = &self.counters;
        c.bad_lines.fetch_add(batch.bad_lines, Ordering::Relaxed);
        for (counter, n) in [
            &c.refused_conflict,
            &c.refused_series_limit,
            &c.refused_unstorable,
        ]
        .into_iter()
        .zip(batch.dropped_by)
        {
            counter.fetch_add(n, Ordering::Relaxed);
        }
        if batch.bad_lines > 0 {
            log::debug!("/write: {} lines unable to parse", batch.bad_lines);
        }
        if batch.records.is_empty() && batch.dropped == 0 && batch.bad_lines > 0 {
            // Nothing parsed: InfluxDB answers the parse errors alone.
            c.requests_refused.fetch_add(1, Ordering::Relaxed);
            return Response::error(400, &batch.parse_message());
        }
        let n = batch.records.len() as u64;
        let mut dropped = batch.dropped;
        let mut reasons = batch.reasons.clone();
        if n > 0 {
            let taken = match self
                .intake
                .deliver(std::mem::take(&mut batch.records), None)
                .await
            {
                Ok(t) => t,
                Err(o) => return self.throttled(&o),
            };
            c.refused_late.fetch_add(taken.late, Ordering::Relaxed);
            c.refused_not_stored
                .fetch_add(taken.not_stored, Ordering::Relaxed);
            if taken.late > 0 {
                reasons.push(late_reason(taken.late));
            }
            if taken.not_stored > 0 {
                reasons.push(not_stored_reason(taken.not_stored));
            }
            let rejected = taken.late + taken.not_stored;
            dropped += rejected;
            c.points_stored
                .fetch_add(n - rejected.min(n), Ordering::Relaxed);
        }
        c.points_refused.fetch_add(dropped, Ordering::Relaxed);
        if dropped > 0 || batch.bad_lines > 0 {
            let mut why = reasons.join("; ");
            if batch.bad_lines > 0 {
                if !why.is_empty() {
                    why.push('\n');
                }
                why.push_str(&batch.parse_message());
            }
            return Response::error(400, &format!("partial write: {why} dropped={dropped}"));
        }
        c.requests_ok.fetch_add(1, Ordering::Relaxed);
        Response {
            status: 204,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
}

impl WriteSink for LineSink {
    fn write(&self, req: WriteRequest) -> WriteFuture<'_> {
        Box::pin(self.answer(req))
    }
}
