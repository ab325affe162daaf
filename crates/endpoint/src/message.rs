//! What a receiver hands to the app's queue: the [`Message`] every app's
//! queue type implements, and [`StreamMessage`] for a queue that carries
//! nothing else.

use std::time::Instant;

use crate::frames::Frames;

/// What a receiver sends to the app's queue; each app's message type wraps
/// these (and may carry more variants of its own).
pub trait Message: Send + 'static {
    /// A group of checked frames.
    fn frames(f: Frames) -> Self;
    /// A connection ended (after all its accepted frames were queued).
    fn connection_ended(at: Instant) -> Self;
    /// The frames of a message the queue refused, so their buffer is reused.
    fn into_frames(self) -> Option<Frames>;
}

/// The message of a receiver whose queue carries nothing but the stream:
/// frames and ends of connections (an app with more kinds of work wraps
/// [`Message`] in its own type instead).
pub enum StreamMessage {
    /// A group of checked frames.
    Frames(Frames),
    /// A connection ended.
    Ended,
}

impl Message for StreamMessage {
    fn frames(f: Frames) -> Self {
        StreamMessage::Frames(f)
    }
    fn connection_ended(_: Instant) -> Self {
        StreamMessage::Ended
    }
    fn into_frames(self) -> Option<Frames> {
        match self {
            StreamMessage::Frames(f) => Some(f),
            StreamMessage::Ended => None,
        }
    }
}
