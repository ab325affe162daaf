//! What the gRPC and HTTP servers share: the token check, the conversion
//! context, and handing converted records to the ingest queue with OTLP's
//! back-pressure (a full queue is "retry later", never a silent drop).
//!
//! With durable acknowledgements (`--otlp-ack durable`, the default) a
//! request is answered with success only once it is in the fsynced intake
//! log (see `intake_log`) and its records are taken by the ingest thread:
//! an OTLP handler logs its request raw before decoding it (`raw.rs`), a
//! `/write` request's records are logged by the ingest thread, which names
//! the position covering them; the handler waits for the shared
//! [`DurableMark`] to reach its position, at most `--otlp-ack-timeout-ms`.
//! A request logged raw skips the ingest thread's answer when the state
//! that thread publishes proves every record will be taken
//! (`admission.rs`): one thread wake-up fewer per request.
//! A request that cannot be made durable in time, or is refused once
//! logged (queue full), is answered "retry later": its records may still
//! be stored, at the next start (OTLP delivery is at least once).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Sender, TrySendError};
use endpoint::{DurableMark, NotDurable};
use otlp::{Context, Converted, Registry};

use super::admission::Admission;
use crate::counters::Counters;
use crate::intake_log::{RawLog, Reservation};
use crate::receive::{Msg, Taken};

/// How long a throttled client is asked to wait, seconds (HTTP
/// `Retry-After`; gRPC clients back off on UNAVAILABLE by themselves).
pub const RETRY_AFTER_S: u64 = 1;

/// When an OTLP request is answered with success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AckMode {
    /// Once every record taken from it is durable (survives a crash).
    Durable,
    /// Once its records are queued for ingest (a crash loses what the
    /// reorder window holds plus the last persist interval).
    Queued,
}

/// How requests are acknowledged.
pub struct Acks {
    /// When success is answered.
    pub mode: AckMode,
    /// Longest wait for durability before "retry later".
    pub timeout: Duration,
    /// The intake log's durable position.
    pub mark: Arc<DurableMark>,
    /// The intake log, where durable OTLP requests are logged raw
    /// (`None` with queued acknowledgements).
    pub log: Option<Arc<RawLog>>,
    /// What the ingest thread publishes for a handler to answer a logged
    /// request without waiting for its answer (see `admission.rs`).
    pub admission: Arc<Admission>,
}

/// The answer to one export request after conversion.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored (durable or queued, as `--otlp-ack` says); `rejected` items
    /// were refused for `message`.
    Accepted {
        /// Items refused (partial success).
        rejected: u64,
        /// Why (empty when nothing was refused).
        message: String,
    },
    /// The ingest queue is full: retry later.
    Busy,
    /// Ingest has stopped (shutdown): retry later, elsewhere.
    Stopped,
    /// The records were taken but could not be made durable in time.
    NotDurable(NotDurable),
}

/// Shared by every OTLP request handler.
pub struct Intake {
    registry: Arc<Registry>,
    config: otlp::Config,
    tx: Sender<Msg>,
    counters: Arc<Counters>,
    token: Option<String>,
    acks: Acks,
    /// Largest request body, bytes (compressed and decompressed).
    pub max_body: usize,
    /// Longest wait for an OTLP/HTTP request body.
    pub read_timeout: std::time::Duration,
}

impl Intake {
    /// An intake feeding `tx`.
    pub fn new(
        registry: Arc<Registry>,
        config: otlp::Config,
        tx: Sender<Msg>,
        counters: Arc<Counters>,
        token: Option<String>,
        (max_body, read_timeout): (usize, std::time::Duration),
        acks: Acks,
    ) -> Self {
        Intake {
            registry,
            config,
            tx,
            counters,
            token,
            acks,
            max_body,
            read_timeout,
        }
    }

    /// Whether an `Authorization` header value carries the token (any
    /// value passes when no token is configured). `Bearer <t>` (OTLP
    /// exporters' `headers` setting) and `Token <t>` (InfluxDB's form) are
    /// accepted.
    pub fn authorized(&self, header: Option<&str>) -> bool {
        let Some(want) = &self.token else {
            return true;
        };
        let Some(h) = header else { return false };
        let given = h
            .strip_prefix("Bearer ")
            .or_else(|| h.strip_prefix("Token "))
            .unwrap_or("");
        // Compared in full whatever the prefix, so timing says nothing.
        given.len() == want.len()
            && given
                .bytes()
                .zip(want.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }

    /// Whether a request would be throttled now (checked before decoding,
    /// so a busy endpoint spends nothing on requests it cannot take);
    /// counted as an OTLP request throttled.
    pub fn busy(&self) -> Option<Outcome> {
        self.busy_uncounted().inspect(|_| {
            self.counters.otlp_throttled.fetch_add(1, Ordering::Relaxed);
        })
    }

    /// [`Intake::busy`] without counting it (`/write` counts its own).
    pub fn busy_uncounted(&self) -> Option<Outcome> {
        if self.counters.recv.ingest_stopped.load(Ordering::Relaxed) {
            Some(Outcome::Stopped)
        } else if self.tx.is_full() {
            Some(Outcome::Busy)
        } else {
            None
        }
    }

    /// The conversion context of a request arriving now.
    pub fn context(&self) -> Context<'_> {
        self.context_at(endpoint::epoch_us())
    }

    /// The conversion context of a request that arrived at `arrival_us`.
    pub fn context_at(&self, arrival_us: u64) -> Context<'_> {
        Context {
            registry: &self.registry,
            config: &self.config,
            arrival_us,
        }
    }

    /// The intake log requests are logged raw in (durable acknowledgements).
    pub fn raw_log(&self) -> Option<&Arc<RawLog>> {
        match self.acks.mode {
            AckMode::Durable => self.acks.log.as_ref(),
            AckMode::Queued => None,
        }
    }

    /// Hands `records` to the ingest thread and, with durable
    /// acknowledgements, waits until they are durable (the request is
    /// `logged` raw already, or the ingest thread logs the records): what
    /// the ingest thread did with them (late and not stored), or "retry
    /// later". Counts the records received, nothing per way in (see
    /// [`Intake::take`]).
    pub async fn deliver(
        &self,
        records: Vec<otlp::Shaped>,
        logged: Option<Reservation>,
    ) -> Result<Taken, Outcome> {
        if self.counters.recv.ingest_stopped.load(Ordering::Relaxed) {
            return Err(Outcome::Stopped);
        }
        let n = records.len() as u64;
        if n == 0 {
            return Ok(Taken::default());
        }
        let (answer, answered) = match self.acks.mode {
            AckMode::Durable => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                (Some(tx), Some(rx))
            }
            AckMode::Queued => (None, None),
        };
        let own = logged.as_ref().map(|r| r.position);
        let file = logged.as_ref().map(|r| r.file);
        let admission = &self.acks.admission;
        // A request logged raw whose series are all known may not need the
        // ingest thread's answer (decided once it is handed over).
        let alone = own.is_some() && answered.is_some() && admission.all_declared(&records);
        admission.sending();
        // Refused here, a logged request's reservation is dropped: its file
        // is no longer held for it (it comes back at the next start).
        match self.tx.try_send(Msg::Otlp(records, answer, file)) {
            Ok(()) => {
                if let Some(r) = logged {
                    r.handed();
                }
            }
            Err(e) => {
                admission.not_sent();
                return Err(match e {
                    TrySendError::Full(_) => Outcome::Busy,
                    TrySendError::Disconnected(_) => Outcome::Stopped,
                });
            }
        }
        self.counters
            .recv
            .records_received
            .fetch_add(n, Ordering::Relaxed);
        match (answered, own) {
            (Some(_), Some(pos)) if alone && admission.never_late() => {
                // Every record will be taken: only the entry's durability
                // is left to wait for.
                self.acks
                    .mark
                    .wait(pos, self.acks.timeout)
                    .await
                    .map_err(Outcome::NotDurable)?;
                Ok(Taken::default())
            }
            (Some(rx), _) => self.durable(rx, own).await,
            (None, _) => Ok(Taken::default()),
        }
    }

    /// Hands the converted records to the ingest thread and, with durable
    /// acknowledgements, waits until they are durable (`logged`: the
    /// request's raw entry); counts what happened as OTLP items and
    /// requests.
    pub async fn take(&self, converted: Converted, logged: Option<Reservation>) -> Outcome {
        let c = &self.counters;
        let mut message = converted.message();
        let mut rejected = converted.rejected;
        let n = converted.records.len() as u64;
        let taken = match self.deliver(converted.records, logged).await {
            Ok(t) => t,
            Err(o) => {
                c.otlp_throttled.fetch_add(1, Ordering::Relaxed);
                return o;
            }
        };
        let late = taken.late;
        let refused = late + taken.not_stored;
        if late > 0 {
            add_reason(&mut message, &late_reason(late));
        }
        if taken.not_stored > 0 {
            add_reason(&mut message, &not_stored_reason(taken.not_stored));
        }
        rejected += refused;
        c.otlp_requests.fetch_add(1, Ordering::Relaxed);
        c.otlp_accepted
            .fetch_add(n - refused.min(n), Ordering::Relaxed);
        c.otlp_rejected.fetch_add(rejected, Ordering::Relaxed);
        if rejected > 0 {
            log::debug!("OTLP partial success: {rejected} refused: {message}");
        }
        Outcome::Accepted { rejected, message }
    }

    /// Waits for the ingest thread's answer, then for the log position
    /// covering the request (`own`, its raw entry's, or the one the ingest
    /// thread names) to be durable, within the acknowledgement timeout.
    async fn durable(
        &self,
        answered: tokio::sync::oneshot::Receiver<Taken>,
        own: Option<u64>,
    ) -> Result<Taken, Outcome> {
        let start = tokio::time::Instant::now();
        let limit = self.acks.timeout;
        let taken = match tokio::time::timeout(limit, answered).await {
            Ok(Ok(t)) => t,
            // The ingest thread stopped before taking the records.
            Ok(Err(_)) => return Err(Outcome::Stopped),
            Err(_) => return Err(Outcome::NotDurable(NotDurable::TimedOut)),
        };
        if let Some(pos) = taken.position.or(own) {
            let left = limit.saturating_sub(start.elapsed());
            self.acks
                .mark
                .wait(pos, left)
                .await
                .map_err(Outcome::NotDurable)?;
        }
        Ok(taken)
    }

    /// Counts a request refused as bad.
    pub fn bad_request(&self, why: &dyn std::fmt::Display) {
        let n = self
            .counters
            .otlp_bad_requests
            .fetch_add(1, Ordering::Relaxed);
        if n < 10 {
            log::warn!("OTLP request refused: {why}");
        }
    }
}

/// Why `n` records were refused as late, as a partial-success reason.
pub fn late_reason(n: u64) -> String {
    format!(
        "{n} items older than their series' newest stored record and than the newest of each of its {} late siblings (later than --otlp-reorder-window-ms allows; a record's time is never moved)",
        loom::MAX_LATE_GENERATIONS
    )
}

/// Why `n` records were not stored for other reasons.
pub fn not_stored_reason(n: u64) -> String {
    format!("{n} items not stored (see loom-app's log)")
}

/// The text of a "retry later" answer.
pub fn retry_message(o: &Outcome) -> String {
    match o {
        Outcome::Stopped => "loom-app is shutting down; retry elsewhere".into(),
        Outcome::NotDurable(why) => format!("not acknowledged: {why}; retry later"),
        _ => "ingest queue full; retry later".into(),
    }
}

/// Appends `reason` to a partial-success message.
fn add_reason(message: &mut String, reason: &str) {
    if !message.is_empty() {
        message.push_str("; ");
    }
    message.push_str(reason);
}

/// Intakes for the OTLP modules' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// An intake with a token (if any), a queue of `capacity` slots and
    /// queued acknowledgements; its counters; the queue's receiving end.
    pub(crate) fn intake(
        token: Option<&str>,
        capacity: usize,
    ) -> (Arc<Intake>, Arc<Counters>, crossbeam_channel::Receiver<Msg>) {
        let acks = Acks {
            mode: AckMode::Queued,
            timeout: std::time::Duration::from_secs(5),
            mark: Arc::new(DurableMark::new()),
            log: None,
            admission: Arc::default(),
        };
        with_acks(token, capacity, acks)
    }

    /// As [`intake`], acknowledging as `acks` says.
    pub(crate) fn with_acks(
        token: Option<&str>,
        capacity: usize,
        acks: Acks,
    ) -> (Arc<Intake>, Arc<Counters>, crossbeam_channel::Receiver<Msg>) {
        let (tx, rx) = crossbeam_channel::bounded(capacity);
        let counters = Arc::new(Counters::default());
        let i = Intake::new(
            Arc::new(Registry::new(10, [])),
            otlp::Config::default(),
            tx,
            counters.clone(),
            token.map(str::to_string),
            (1 << 20, std::time::Duration::from_secs(10)),
            acks,
        );
        (Arc::new(i), counters, rx)
    }

    /// An intake without a token whose one-slot queue is already full.
    pub(crate) fn full_intake() -> (Arc<Intake>, Arc<Counters>, crossbeam_channel::Receiver<Msg>) {
        let (i, counters, rx) = intake(None, 1);
        i.tx.try_send(Msg::ConnectionEnded).expect("fill the queue");
        (i, counters, rx)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::intake;
    use super::*;

    fn one_record() -> Converted {
        let mut c = Converted::default();
        c.records.push(otlp::Shaped {
            source: 1,
            time_us: 5,
            bytes: vec![1],
        });
        c.reject("bad".into());
        c
    }

    #[tokio::test]
    async fn tokens_queue_and_back_pressure() {
        let (open, _, _rx) = intake(None, 1);
        assert!(open.authorized(None));
        let (i, _, rx) = intake(Some("s3cret"), 1);
        assert!(i.authorized(Some("Bearer s3cret")));
        assert!(i.authorized(Some("Token s3cret")));
        assert!(!i.authorized(Some("Bearer s3cre")));
        assert!(!i.authorized(Some("s3cret")));
        assert!(!i.authorized(None));

        assert_eq!(i.busy(), None);
        assert_eq!(
            i.take(one_record(), None).await,
            Outcome::Accepted {
                rejected: 1,
                message: "bad".into()
            }
        );
        // The queue holds one request: the next is told to retry, and
        // nothing of it is counted as accepted or rejected.
        assert_eq!(i.busy(), Some(Outcome::Busy));
        assert_eq!(i.take(one_record(), None).await, Outcome::Busy);
        let c = &i.counters;
        assert_eq!(Counters::get(&c.otlp_accepted), 1);
        assert_eq!(Counters::get(&c.otlp_rejected), 1);
        assert_eq!(Counters::get(&c.otlp_throttled), 2);
        assert_eq!(Counters::get(&c.recv.records_received), 1);
        assert!(matches!(rx.try_recv(), Ok(Msg::Otlp(r, None, None)) if r.len() == 1));
        c.recv.ingest_stopped.store(true, Ordering::SeqCst);
        assert_eq!(i.take(one_record(), None).await, Outcome::Stopped);
    }

    /// Durable acknowledgements: success only once the position the
    /// ingest thread names is durable, with its late items refused; a
    /// position that does not become durable in time, or fails, is
    /// "retry later", and so is a request the ingest thread never took.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn success_waits_for_the_durable_position() {
        let mark = Arc::new(DurableMark::new());
        let acks = Acks {
            mode: AckMode::Durable,
            timeout: std::time::Duration::from_millis(300),
            mark: mark.clone(),
            log: None,
            admission: Arc::default(),
        };
        let (i, counters, rx) = super::testing::with_acks(None, 4, acks);
        // A stand-in for the ingest thread: takes each request, names
        // position 1 + its number, and reports 1 late item.
        let ingest = std::thread::spawn(move || {
            let mut n = 0;
            while let Ok(Msg::Otlp(_, Some(answer), _)) = rx.recv() {
                n += 1;
                let _ = answer.send(Taken {
                    position: Some(n),
                    late: 1,
                    not_stored: 0,
                });
                if n == 3 {
                    break;
                }
            }
        });
        let waiting = {
            let i = i.clone();
            tokio::spawn(async move { i.take(one_record(), None).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "answered before durable");
        mark.advance(1);
        match waiting.await.unwrap() {
            Outcome::Accepted { rejected, message } => {
                assert_eq!(rejected, 2, "one invalid, one late");
                assert!(
                    message.contains("bad") && message.contains("1 items older"),
                    "{message}"
                );
            }
            o => panic!("{o:?}"),
        }
        // Position 2 never becomes durable: retry later.
        assert_eq!(
            i.take(one_record(), None).await,
            Outcome::NotDurable(NotDurable::TimedOut)
        );
        // Position 3 fails.
        let failing = {
            let i = i.clone();
            tokio::spawn(async move { i.take(one_record(), None).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        mark.fail(3, 3);
        assert_eq!(
            failing.await.unwrap(),
            Outcome::NotDurable(NotDurable::Failed)
        );
        ingest.join().unwrap();
        // The ingest thread is gone: the request is never taken.
        assert_eq!(i.take(one_record(), None).await, Outcome::Stopped);
        assert_eq!(Counters::get(&counters.otlp_requests), 1);
        assert_eq!(Counters::get(&counters.otlp_throttled), 3);
    }
}
