//! What the encoder receives. The TCP side (listener, per-connection
//! receivers with the same contract as loom-app's, the buffer pool) is the
//! shared [`endpoint`] crate.

use std::time::Instant;

use endpoint::{Frames, Message};

/// Wall-clock time now, µs since the Unix epoch.
pub use endpoint::epoch_us as wall_clock_us;

/// Message from receivers to the encoder.
pub enum Msg {
    /// Checked frames in wire form, received together.
    Frames(Frames),
    /// A connection ended (after all its accepted frames were queued).
    ConnectionEnded {
        /// When it ended.
        at: Instant,
    },
}

impl Message for Msg {
    fn frames(f: Frames) -> Self {
        Msg::Frames(f)
    }

    fn connection_ended(at: Instant) -> Self {
        Msg::ConnectionEnded { at }
    }

    fn into_frames(self) -> Option<Frames> {
        match self {
            Msg::Frames(f) => Some(f),
            Msg::ConnectionEnded { .. } => None,
        }
    }
}
