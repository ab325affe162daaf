//! Listener and per-connection receiving threads (the same contract as
//! loom-app's): each connection's thread reads frames with
//! [`telemetry::FrameReader`], stamps each batch with its wall-clock arrival
//! time and offers it to the queue with `try_send`: a full (bounded) queue
//! drops the batch, counted, so a sender is never slowed by influxd. A bad
//! frame closes only its own connection, with the reason logged.

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Sender, TrySendError};
use telemetry::{Batch, FrameReader};

use crate::counters::Counters;

/// Message from receivers to the encoder.
pub enum Msg {
    /// A batch and its arrival time.
    Batch {
        /// Arrival wall-clock time, µs since the Unix epoch.
        arrival_us: u64,
        /// The records.
        batch: Batch,
    },
    /// A connection ended (after all its accepted batches were queued).
    ConnectionEnded {
        /// When it ended.
        at: Instant,
    },
}

/// Wall-clock time now, µs since the Unix epoch.
pub fn wall_clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Accepts connections forever, one receiving thread each.
pub fn listen(listener: TcpListener, tx: Sender<Msg>, counters: Arc<Counters>, max_payload: usize) {
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let id = counters
                    .connections
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    + 1;
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                log::info!("connection {id} from {peer} accepted");
                let tx = tx.clone();
                let counters = counters.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("recv-{id}"))
                    .spawn(move || receive(id, &peer, stream, &tx, &counters, max_payload));
                if let Err(e) = spawned {
                    log::error!("cannot start a receiving thread for connection {id}: {e}");
                }
            }
            Err(e) => log::warn!("accept failed: {e}"),
        }
    }
}

fn receive(
    id: u64,
    peer: &str,
    stream: TcpStream,
    tx: &Sender<Msg>,
    counters: &Counters,
    max_payload: usize,
) {
    let mut reader =
        FrameReader::with_max_payload(BufReader::with_capacity(1 << 20, stream), max_payload);
    let mut frames = 0u64;
    loop {
        let mut batch = Batch::default();
        match reader.read_into(&mut batch) {
            Ok(true) => {
                frames += 1;
                let n = batch.records.len() as u64;
                Counters::add(&counters.batches_received, 1);
                Counters::add(&counters.records_received, n);
                let arrival_us = wall_clock_us();
                let _ = counters.first_arrival_us.compare_exchange(
                    0,
                    arrival_us,
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                );
                match tx.try_send(Msg::Batch { arrival_us, batch }) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        Counters::add(&counters.batches_dropped, 1);
                        Counters::add(&counters.records_dropped, n);
                    }
                    Err(TrySendError::Disconnected(_)) => break,
                }
            }
            Ok(false) => {
                log::info!("connection {id} from {peer} closed after {frames} frames");
                break;
            }
            Err(e) => {
                Counters::add(&counters.bad_connections, 1);
                log::warn!(
                    "connection {id} from {peer} closed after {frames} good frames: bad frame: {e}"
                );
                break;
            }
        }
    }
    // Blocking send: the connection is over, so waiting here slows no sender.
    let _ = tx.send(Msg::ConnectionEnded { at: Instant::now() });
}
