//! Listener and per-connection receiving threads.
//!
//! Each connection gets one thread that reads frames with
//! [`telemetry::FrameReader`], stamps each batch with its arrival time and
//! offers it to the bounded ingest queue with `try_send`: a full queue drops
//! the batch (counted), so a sender is never slowed by ingest. A bad frame
//! closes only its own connection, with the reason logged.

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::{Sender, TrySendError};
use telemetry::{Batch, FrameReader};

use crate::counters::Counters;

/// Message from receivers to the ingest thread.
pub enum Msg {
    /// A batch and its arrival time at this app (wall clock).
    Batch {
        /// Arrival time, µs since the Unix epoch.
        arrival_us: u64,
        /// The records.
        batch: Batch,
    },
    /// A connection ended (after all its accepted batches were queued).
    ConnectionEnded,
    /// Records of one OTLP export request, shaped for the engine (series
    /// id, the item's own time, bytes); see `crate::otlp_ingest`.
    Otlp(Vec<otlp::Shaped>),
}

/// Accepts connections forever, one receiving thread each.
pub fn listen(listener: TcpListener, tx: Sender<Msg>, counters: Arc<Counters>, max_payload: usize) {
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let id = counters.connections.fetch_add(1, Ordering::Relaxed) + 1;
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
                counters.batches_received.fetch_add(1, Ordering::Relaxed);
                counters.records_received.fetch_add(n, Ordering::Relaxed);
                if counters.ingest_stopped.load(Ordering::Relaxed) {
                    counters.records_skipped.fetch_add(n, Ordering::Relaxed);
                    continue;
                }
                let arrival_us = crate::ingest::epoch_us();
                match tx.try_send(Msg::Batch { arrival_us, batch }) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        counters.batches_dropped.fetch_add(1, Ordering::Relaxed);
                        counters.records_dropped.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => break,
                }
            }
            Ok(false) => {
                log::info!("connection {id} from {peer} closed after {frames} frames");
                break;
            }
            Err(e) => {
                counters.bad_connections.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "connection {id} from {peer} closed after {frames} good frames: bad frame: {e}"
                );
                break;
            }
        }
    }
    // Blocking send: the connection is over, so waiting here slows no sender.
    let _ = tx.send(Msg::ConnectionEnded);
}
