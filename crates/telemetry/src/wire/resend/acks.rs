//! Reading what the receiver sends back: ACK frames, which release the
//! frames kept up to their sequence number, and a REFUSE.

use std::io::ErrorKind;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::link::readable;
use super::{ResendingSender, LATENCY_SAMPLES};
use crate::wire::control;
use crate::wire::{split_frame, FrameType, MAX_CONTROL_PAYLOAD};
use crate::WireError;

impl ResendingSender {
    /// Every frame up to `seq` is durable.
    pub(super) fn acked(&mut self, seq: u64) {
        let now = Instant::now();
        while self.kept.front().is_some_and(|k| k.seq <= seq) {
            let Some(k) = self.kept.pop_front() else {
                break;
            };
            self.kept_bytes -= k.frame.len() as u64;
            self.stats
                .records_acked
                .fetch_add(u64::from(k.records), Ordering::Relaxed);
            if let (Some(t), true) = (k.sent, self.latencies_us.len() < LATENCY_SAMPLES) {
                self.latencies_us
                    .push(now.duration_since(t).as_micros() as u64);
            }
        }
        self.stats
            .unacked_bytes
            .store(self.kept_bytes, Ordering::Relaxed);
        self.stats.acked_seq.fetch_max(seq, Ordering::Relaxed);
    }

    /// Reads what the receiver sent: ACK frames (a REFUSE ends the sender,
    /// anything else or an ACK beyond the frames sent breaks the connection).
    pub(super) fn read_acks(&mut self, wait: Duration) -> Result<(), WireError> {
        let Some(link) = self.link.as_mut() else {
            return Ok(());
        };
        let io = |context| move |source| WireError::Io { context, source };
        if wait.is_zero() {
            if !readable(link.tcp()) {
                return Ok(());
            }
            link.tcp()
                .set_read_timeout(Some(Duration::from_millis(1)))
                .map_err(io("setting a timeout"))?;
        } else {
            link.tcp()
                .set_read_timeout(Some(wait))
                .map_err(io("setting a timeout"))?;
        }
        let mut buf = [0u8; 4096];
        match link.read(&mut buf) {
            Ok(0) => {
                return Err(WireError::Io {
                    context: "reading acknowledgements",
                    source: ErrorKind::UnexpectedEof.into(),
                })
            }
            Ok(n) => self.inbox.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(io("reading acknowledgements")(e)),
        }
        while let Some((h, end)) = split_frame(&self.inbox, MAX_CONTROL_PAYLOAD)? {
            match h.frame_type {
                FrameType::Ack if h.seq <= self.sent_max.max(self.acked_seq()) => self.acked(h.seq),
                FrameType::Ack => {
                    return Err(WireError::BadControl(format!(
                        "ACK of sequence {} beyond the last frame sent ({})",
                        h.seq, self.sent_max
                    )))
                }
                FrameType::Refuse => {
                    let start = h.len();
                    return Err(WireError::Refused(control::decode_refusal(
                        &self.inbox[start..end],
                    )?));
                }
                t => {
                    return Err(WireError::BadControl(format!(
                        "unexpected {t:?} from the receiver"
                    )))
                }
            }
            self.inbox.drain(..end);
        }
        Ok(())
    }

    pub(super) fn acked_seq(&self) -> u64 {
        self.stats.acked_seq.load(Ordering::Relaxed)
    }
}
