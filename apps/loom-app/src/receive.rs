//! What the ingest thread receives. The TCP side (listener, per-connection
//! receivers, grouping, the buffer pool) is the shared [`endpoint`] crate.

use std::time::Instant;

use endpoint::{Frames, Message};

/// Message to the ingest thread.
pub enum Msg {
    /// Checked frames in wire form, received together.
    Frames(Frames),
    /// A connection ended (after all its accepted frames were queued).
    ConnectionEnded,
    /// Records of one OTLP export request, shaped for the engine (series
    /// id, the item's own time, bytes); see `crate::otlp_ingest`.
    Otlp(Vec<otlp::Shaped>),
}

impl Message for Msg {
    fn frames(f: Frames) -> Self {
        Msg::Frames(f)
    }

    fn connection_ended(_at: Instant) -> Self {
        Msg::ConnectionEnded
    }

    fn into_frames(self) -> Option<Frames> {
        match self {
            Msg::Frames(f) => Some(f),
            _ => None,
        }
    }
}
