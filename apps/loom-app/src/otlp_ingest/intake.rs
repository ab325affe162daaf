//! What the gRPC and HTTP servers share: the token check, the conversion
//! context, and handing converted records to the ingest queue with OTLP's
//! back-pressure (a full queue is "retry later", never a silent drop).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::{Sender, TrySendError};
use otlp::{Context, Converted, Registry};

use crate::counters::Counters;
use crate::ingest::epoch_us;
use crate::receive::Msg;

/// How long a throttled client is asked to wait, seconds (HTTP
/// `Retry-After`; gRPC clients back off on UNAVAILABLE by themselves).
pub const RETRY_AFTER_S: u64 = 1;

/// The answer to one export request after conversion.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Queued; `rejected` items were refused for `message`.
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
}

/// Shared by every OTLP request handler.
pub struct Intake {
    registry: Arc<Registry>,
    config: otlp::Config,
    tx: Sender<Msg>,
    counters: Arc<Counters>,
    token: Option<String>,
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
    ) -> Self {
        Intake {
            registry,
            config,
            tx,
            counters,
            token,
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
    /// so a busy endpoint spends nothing on requests it cannot take).
    pub fn busy(&self) -> Option<Outcome> {
        if self.counters.recv.ingest_stopped.load(Ordering::Relaxed) {
            Some(Outcome::Stopped)
        } else if self.tx.is_full() {
            Some(Outcome::Busy)
        } else {
            None
        }
        .inspect(|_| {
            self.counters.otlp_throttled.fetch_add(1, Ordering::Relaxed);
        })
    }

    /// The conversion context of a request arriving now.
    pub fn context(&self) -> Context<'_> {
        Context {
            registry: &self.registry,
            config: &self.config,
            arrival_us: epoch_us(),
        }
    }

    /// Queues the converted records; counts what happened.
    pub fn take(&self, converted: Converted) -> Outcome {
        let c = &self.counters;
        if c.recv.ingest_stopped.load(Ordering::Relaxed) {
            c.otlp_throttled.fetch_add(1, Ordering::Relaxed);
            return Outcome::Stopped;
        }
        let message = converted.message();
        let rejected = converted.rejected;
        let n = converted.records.len() as u64;
        if n > 0 {
            match self.tx.try_send(Msg::Otlp(converted.records)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    c.otlp_throttled.fetch_add(1, Ordering::Relaxed);
                    return Outcome::Busy;
                }
                Err(TrySendError::Disconnected(_)) => {
                    c.otlp_throttled.fetch_add(1, Ordering::Relaxed);
                    return Outcome::Stopped;
                }
            }
        }
        c.otlp_requests.fetch_add(1, Ordering::Relaxed);
        c.otlp_accepted.fetch_add(n, Ordering::Relaxed);
        c.recv.records_received.fetch_add(n, Ordering::Relaxed);
        c.otlp_rejected.fetch_add(rejected, Ordering::Relaxed);
        if rejected > 0 {
            log::debug!("OTLP partial success: {rejected} refused: {message}");
        }
        Outcome::Accepted { rejected, message }
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

/// Intakes for the OTLP modules' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// An intake with a token (if any) and a queue of `capacity` slots; its
    /// counters; the queue's receiving end.
    pub(crate) fn intake(
        token: Option<&str>,
        capacity: usize,
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

    #[test]
    fn tokens_queue_and_back_pressure() {
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
            i.take(one_record()),
            Outcome::Accepted {
                rejected: 1,
                message: "bad".into()
            }
        );
        // The queue holds one request: the next is told to retry, and
        // nothing of it is counted as accepted or rejected.
        assert_eq!(i.busy(), Some(Outcome::Busy));
        assert_eq!(i.take(one_record()), Outcome::Busy);
        let c = &i.counters;
        assert_eq!(Counters::get(&c.otlp_accepted), 1);
        assert_eq!(Counters::get(&c.otlp_rejected), 1);
        assert_eq!(Counters::get(&c.otlp_throttled), 2);
        assert_eq!(Counters::get(&c.recv.records_received), 1);
        assert!(matches!(rx.try_recv(), Ok(Msg::Otlp(r)) if r.len() == 1));
        c.recv.ingest_stopped.store(true, Ordering::SeqCst);
        assert_eq!(i.take(one_record()), Outcome::Stopped);
    }
}
