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
    /// id, the item's own time, bytes), and where to answer what became of
    /// them (durable acknowledgements), and the intake-log file holding
    /// the request when its handler logged it raw (the ingest thread then
    /// logs nothing and takes over the request's count in that file); see
    /// the `otlp_ingest` module.
    Otlp(
        Vec<otlp::Shaped>,
        Option<tokio::sync::oneshot::Sender<Taken>>,
        Option<u64>,
    ),
}

/// What the ingest thread did with one OTLP request's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Taken {
    /// The intake-log position whose durability covers the records taken
    /// (`None`: nothing to wait for).
    pub position: Option<u64>,
    /// Records refused as late (older than their series' newest stored
    /// record and than the newest of each of its late siblings, all of
    /// which exist).
    pub late: u64,
    /// Records not stored for other reasons (series not declared, engine refusal).
    pub not_stored: u64,
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
