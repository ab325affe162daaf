//! The TCP side of a telemetry endpoint, shared by `loom-app` and
//! `influx-app`: they differ only in where records go.
//!
//! - [`receive`]: the listener and one receiving thread per connection. A
//!   thread reads frames, checks them (framing, CRC32C, every record valid)
//!   and hands their payloads on in wire form, grouped: frames that arrived
//!   together travel in one buffer ([`Frames`]), so the queue carries a few
//!   large messages instead of one object per record. A full queue drops
//!   the group (counted): a sender is never slowed. A bad or truncated frame,
//!   or a peer that vanishes mid-frame, closes only that connection, logged.
//! - [`pool`]: buffers go back to the receivers once consumed, so steady
//!   state allocates nothing.
//! - [`counters`]: what the receivers count (the first half of every
//!   progress line).
//! - [`acks`]: acknowledged senders on the stream: per-sender sequence
//!   marks (resends recognised, durable marks kept beside the store) and
//!   the ACK frames a receiving thread sends.
//! - [`frames`]: a group of frames as handed to the app ([`Frames`]).
//! - [`message`]: what a receiver hands to the app's queue ([`Message`],
//!   [`StreamMessage`]).
//! - [`durable`]: waiting until the data up to a position is durable (the
//!   acknowledgements of OTLP, `/write` and the acknowledged stream).
//! - [`session`]: wire version 2 on a connection: the HELLO and its
//!   token, series references and their tags, sequence numbers.
//! - [`series_limit`]: the one bound on series shared by every way in.
//! - [`tls`]: rustls on the stream, for receivers (certificate and key)
//!   and senders (the CA to trust), so every app and sender shares one setup.
//! - [`app`]: the skeleton both apps share: the Ctrl-C stop flag, named
//!   threads, the progress-line loop, the periodic questions over the
//!   phase window, the `Final` line's drop percentage, the ready file.
//! - [`output`]: answer lines, `--query-window-us` parsing and the
//!   interruptible sleep of the reporter and query threads.

pub mod acks;
pub mod app;
pub mod counters;
pub mod durable;
pub mod frames;
pub mod message;
pub mod output;
pub mod pool;
pub mod receive;
pub mod series_limit;
pub mod session;
pub mod tls;

pub use acks::AckBook;
pub use app::Stop;
pub use counters::Counters;
pub use durable::{DurableMark, NotDurable};
pub use pool::BufferPool;
pub use receive::{listen, listen_until, Frames, Message, ReceiveConfig, Segment, StreamMessage};
pub use series_limit::SeriesLimit;
pub use session::SeriesContext;
pub use tls::{ClientStream, ClientTls, ServerTls, TlsError};

/// Wall-clock time, µs since the Unix epoch.
pub fn epoch_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}
