//! The agent's own accounting: how many events each probe produced and
//! lost at each stage in one interval, stored beside the events so "was
//! anything lost in this window?" is one statement.

use super::{check_len, u64_at, Kind};
use crate::DecodeError;

/// Probe names, by code (loom-agent's probes; `packet` came last, so
/// older codes keep their meaning).
pub const PROBES: [&str; 5] = ["syscall", "pagecache", "blockio", "runqueue", "packet"];
/// Stage names, by code: lost in the kernel's ring buffer, in the agent's
/// queues, or because loom-app could not be reached.
pub const STAGES: [&str; 3] = ["kernel", "queue", "send"];

/// Events and drops of one probe at one stage over one interval.
///
/// Encoding (32 bytes, little endian): `probe u8 | stage u8 | 6 reserved
/// zero bytes | time_us u64 | events u64 | dropped u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AgentStat {
    /// Index into [`PROBES`].
    pub probe: u8,
    /// Index into [`STAGES`].
    pub stage: u8,
    /// End of the interval, wall clock µs.
    pub time_us: u64,
    /// Events that reached this stage in the interval.
    pub events: u64,
    /// Events lost at this stage in the interval.
    pub dropped: u64,
}

impl AgentStat {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 32;

    /// Appends the 32-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.probe, self.stage, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&self.time_us.to_le_bytes());
        out.extend_from_slice(&self.events.to_le_bytes());
        out.extend_from_slice(&self.dropped.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<AgentStat, DecodeError> {
        check_len(Kind::AgentStat, b)?;
        let bad = |field, value| DecodeError::BadField {
            kind: "agent",
            field,
            value,
        };
        if usize::from(b[0]) >= PROBES.len() {
            return Err(bad("probe", u64::from(b[0])));
        }
        if usize::from(b[1]) >= STAGES.len() {
            return Err(bad("stage", u64::from(b[1])));
        }
        if b[2..8].iter().any(|&x| x != 0) {
            return Err(bad("reserved", 0));
        }
        Ok(AgentStat {
            probe: b[0],
            stage: b[1],
            time_us: u64_at(b, 8),
            events: u64_at(b, 16),
            dropped: u64_at(b, 24),
        })
    }

    /// Index value: none (counts), always 0.
    pub fn index_value(_b: &[u8]) -> u64 {
        0
    }
}
