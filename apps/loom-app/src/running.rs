//! A started loom-app: where it listens, how to stop it, and what it does
//! when ingest ends (the questions asked at the end, the `Final` lines,
//! closing the store).

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use endpoint::app::{drop_percent, Stop};
use influxql::http::ServerHandle;
use loom::{Reader, Writer};

use crate::cli::Cli;
use crate::counters::Counters;
use crate::ingest::IngestEnd;
use crate::otlp_ingest;
use crate::queries::Query;
use crate::schedule::{print_answer, ABLATION_MARGIN_US, ABLATION_WINDOW_US};

/// The threads a running app joins when it ends.
pub(crate) struct Threads {
    /// The ingest thread; returns the writer and why it ended.
    pub ingest: JoinHandle<(Writer, IngestEnd)>,
    /// The progress-line thread.
    pub report: JoinHandle<()>,
    /// The periodic questions, when any.
    pub query: Option<JoinHandle<()>>,
    /// Ends the TCP listener's accept loop (then it is woken by a connection).
    pub listener_stop: Arc<AtomicBool>,
}

/// What `App::start` hands to [`Running`].
pub(crate) struct Parts {
    pub stop: Stop,
    /// The export thread (`--export-to`); stopped when ingest ends.
    pub export: Option<crate::exporting::Exporting>,
    pub http: Option<ServerHandle>,
    pub otlp: Option<otlp_ingest::Servers>,
    pub threads: Threads,
    pub reader: Reader,
    pub counters: Arc<Counters>,
    /// Set once ingest has ended: the report and query threads stop.
    pub finished: Arc<AtomicBool>,
    pub start: Instant,
    pub dir: PathBuf,
    pub temp: Option<tempfile::TempDir>,
    /// Ablation questions, asked once ingest stopped at the cut-off.
    pub ablation: Vec<Query>,
    pub cli: Cli,
}

/// A running loom-app. Every listener is bound: the addresses are the
/// bound ones (port 0 in the config becomes the real port here).
pub struct Running {
    /// The telemetry stream (TCP, wire protocol).
    pub tcp: SocketAddr,
    /// The InfluxDB 1.x query API, when on.
    pub http: Option<SocketAddr>,
    /// The OTLP/gRPC receiver, when on.
    pub otlp_grpc: Option<SocketAddr>,
    /// The OTLP/HTTP receiver, when on.
    pub otlp_http: Option<SocketAddr>,
    parts: Parts,
}

/// What a run counted, as its `Final` and `STATS` lines print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Why ingest ended.
    pub end: IngestEnd,
    /// Records received (every record of a valid frame, every OTLP item).
    pub received: u64,
    /// Records dropped on a full queue.
    pub dropped: u64,
    /// Records stored.
    pub ingested: u64,
    /// Records the engine refused.
    pub not_stored: u64,
    /// Records refused as late (older than their source's newest record,
    /// and no late sibling could take them).
    pub late: u64,
    /// Records older than their source's newest record stored at their
    /// own time in a late sibling (also in `ingested`).
    pub late_stored: u64,
    /// Connections closed for a bad frame.
    pub bad_connections: u64,
    /// Connections refused for their token.
    pub auth_refused: u64,
    /// Series refused by the series limit.
    pub series_refused: u64,
}

impl Running {
    pub(crate) fn new(tcp: SocketAddr, parts: Parts) -> Running {
        Running {
            tcp,
            http: parts.http.as_ref().map(|s| s.local_addr()),
            otlp_grpc: parts.otlp.as_ref().and_then(|s| s.grpc),
            otlp_http: parts.otlp.as_ref().and_then(|s| s.http),
            parts,
        }
    }

    /// The app's stop flag: setting it ends ingest (as Ctrl-C does).
    pub fn stop_handle(&self) -> Stop {
        self.parts.stop.clone()
    }

    /// Where the store is.
    pub fn store_dir(&self) -> &std::path::Path {
        &self.parts.dir
    }

    /// Writes `--ready-file`, if asked (see `endpoint::app::write_ready_file`).
    pub(crate) fn write_ready_file(&self) -> anyhow::Result<()> {
        let Some(path) = &self.parts.cli.ready_file else {
            return Ok(());
        };
        endpoint::app::write_ready_file(
            path,
            &[
                ("tcp", Some(self.tcp)),
                ("http", self.http),
                ("otlp_grpc", self.otlp_grpc),
                ("otlp_http", self.otlp_http),
            ],
        )
        .with_context(|| format!("--ready-file {}", path.display()))
    }

    /// Stops ingest and waits for the end (see [`Running::wait`]).
    pub fn stop(self) -> anyhow::Result<Summary> {
        self.parts.stop.stop();
        self.wait()
    }

    /// Waits until ingest ends (stop flag, `--stop-after-connections`, the
    /// ablation cut-off), asks the end-of-run questions, prints the `Final`
    /// lines (and `STATS` with `--machine-output`), stops the servers and
    /// the listener and closes the store.
    pub fn wait(self) -> anyhow::Result<Summary> {
        let Running { tcp, parts, .. } = self;
        let Parts {
            export,
            http,
            otlp,
            threads,
            reader,
            counters,
            finished,
            start,
            temp,
            ablation,
            cli,
            ..
        } = parts;
        let (writer, end) = threads
            .ingest
            .join()
            .map_err(|_| anyhow::anyhow!("the ingest thread panicked"))?;
        finished.store(true, Ordering::SeqCst);
        let _ = threads.report.join();
        // A question still in flight is answered before the Final line.
        if let Some(q) = threads.query {
            let _ = q.join();
        }
        let now = Counters::get(&counters.now_us);
        let first = Counters::get(&counters.first_us);
        print_end(end, now.saturating_sub(first));
        ask_at_end(&cli, &reader, &ablation, end, now);
        let summary = Summary::of(end, &counters);
        print_final(&cli, &counters, now.saturating_sub(first), start.elapsed());
        print_index_memory(&reader, cli.index_cache_bytes);
        drop(otlp);
        drop(http);
        drop(export);
        threads.listener_stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag; it may be gone already.
        let _ = TcpStream::connect_timeout(&tcp, Duration::from_secs(1));
        close_store(writer)?;
        if let Some(t) = temp {
            if cli.keep_data {
                let p = t.keep();
                println!("store kept in {}", p.display());
            } else {
                drop(t);
            }
        }
        Ok(summary)
    }
}

impl Summary {
    fn of(end: IngestEnd, c: &Counters) -> Summary {
        Summary {
            end,
            received: Counters::get(&c.recv.records_received),
            dropped: Counters::get(&c.recv.records_dropped),
            ingested: Counters::get(&c.records_ingested),
            not_stored: Counters::get(&c.records_refused),
            late: Counters::get(&c.records_late),
            late_stored: Counters::get(&c.records_late_stored),
            bad_connections: Counters::get(&c.recv.bad_connections),
            auth_refused: Counters::get(&c.recv.auth_refused),
            series_refused: c.series.refused(),
        }
    }
}

fn print_end(end: IngestEnd, data_us: u64) {
    match end {
        IngestEnd::Shutdown => println!("shutting down (signal)"),
        IngestEnd::ConnectionsEnded => println!("ingest ended: connection limit reached"),
        IngestEnd::CutOff => println!(
            "ingest stopped at {:.3} s of data for the ablation query",
            data_us as f64 / 1e6
        ),
    }
}

/// `--query-at-end`: every question over `--query-window-us` (default all
/// data); after the ablation cut-off: the ablation questions over the 120 s
/// window ending lookback + 5 s before the newest data.
fn ask_at_end(cli: &Cli, reader: &Reader, ablation: &[Query], end: IngestEnd, now: u64) {
    if cli.query_at_end {
        let (t0, t1) = cli.query_window_us.unwrap_or((0, now));
        for &q in &cli.query {
            print_answer(reader, q, t0, t1, cli.machine_output);
        }
    } else if end == IngestEnd::CutOff {
        let lookback_us = cli.ablation_lookback * 1_000_000;
        let t1 = now.saturating_sub(lookback_us + ABLATION_MARGIN_US);
        let t0 = t1.saturating_sub(ABLATION_WINDOW_US);
        for _ in 0..cli.query_count.max(1) {
            for &q in ablation {
                println!(
                    "Ablation {} lookback {} s:",
                    q.name(),
                    cli.ablation_lookback
                );
                print_answer(reader, q, t0, t1, cli.machine_output);
            }
        }
    }
}

/// The `Final index:` line: the index memory the store holds at the end
/// (bounded by `--index-cache-bytes`, not by the store's size).
fn print_index_memory(reader: &loom::Reader, budget: usize) {
    let m = reader.snapshot().index_memory();
    println!(
        "Final index: memory held {} bytes, summaries at most {budget} (--index-cache-bytes) (summaries of recent data {}, summaries paged back in {} in {} pages (a source in a segment) of a cache budget {}, time index {}, time index paged back in {}, time index pages read {}), summary pages read {}",
        m.held_bytes(),
        m.summaries_bytes,
        m.cache_bytes,
        m.cache_pages,
        m.cache_budget,
        m.directory_bytes,
        m.directory_cache_bytes,
        m.directory_page_loads,
        m.page_loads
    );
}

/// The `Final:`, `Final OTLP:` and `Final /write:` lines, and `STATS` with
/// `--machine-output`.
fn print_final(cli: &Cli, c: &Counters, data_us: u64, wall: Duration) {
    let received = Counters::get(&c.recv.records_received);
    let dropped = Counters::get(&c.recv.records_dropped);
    println!(
        "Final: records received {received}, dropped {dropped} ({:.3} %), ingested {}, not stored {}, not ingested after ingest stopped {}, batches received {} dropped {}, connections {} (bad {}, refused for their token {}, refused over --max-connections {}, closed idle or too slow {}), series {} of at most {} (refused {}), late refused {}, late stored at their own time {}, duplicates {} (resent and stored once), persists failed {}, data time {:.3} s, wall {:.3} s",
        drop_percent(dropped, received),
        Counters::get(&c.records_ingested),
        Counters::get(&c.records_refused),
        Counters::get(&c.recv.records_skipped),
        Counters::get(&c.recv.batches_received),
        Counters::get(&c.recv.batches_dropped),
        Counters::get(&c.recv.connections),
        Counters::get(&c.recv.bad_connections),
        Counters::get(&c.recv.auth_refused),
        c.gates.refused(),
        c.gates.timed_out(),
        c.series.used(),
        c.series.max(),
        c.series.refused(),
        Counters::get(&c.records_late),
        Counters::get(&c.records_late_stored),
        Counters::get(&c.recv.duplicate_records) + Counters::get(&c.records_duplicate),
        Counters::get(&c.persist_failures),
        data_us as f64 / 1e6,
        wall.as_secs_f64()
    );
    println!(
        "Final OTLP: requests {}, items accepted {}, rejected {} (partial success), requests throttled {} (retry later), bad requests {}, acknowledged {}",
        Counters::get(&c.otlp_requests),
        Counters::get(&c.otlp_accepted),
        Counters::get(&c.otlp_rejected),
        Counters::get(&c.otlp_throttled),
        Counters::get(&c.otlp_bad_requests),
        format!("{:?}", cli.otlp_ack).to_lowercase(),
    );
    let write = c.write.table();
    let labelled: Vec<String> = write.iter().map(|(_, l, v)| format!("{l} {v}")).collect();
    println!("Final /write: {}", labelled.join(", "));
    if cli.machine_output {
        println!(
            "STATS received={received} dropped={dropped} ingested={} not_stored={} bad_connections={} auth_refused={} series_refused={} late={} late_stored={} duplicates={}{}",
            Counters::get(&c.records_ingested),
            Counters::get(&c.records_refused),
            Counters::get(&c.recv.bad_connections),
            Counters::get(&c.recv.auth_refused),
            c.series.refused(),
            Counters::get(&c.records_late),
            Counters::get(&c.records_late_stored),
            Counters::get(&c.recv.duplicate_records) + Counters::get(&c.records_duplicate),
            write
                .iter()
                .map(|(k, _, v)| format!(" write_{k}={v}"))
                .collect::<String>(),
        );
    }
}

/// Persists, prints the store's counters and closes it.
fn close_store(mut writer: Writer) -> anyhow::Result<()> {
    // Persist first so the counters include the chunks sealed at close.
    if let Err(e) = writer.persist() {
        log::error!("persist before close: {e}");
    }
    let stats = writer.stats();
    writer.close().context("closing the store")?;
    println!(
        "store: {} records, {} chunks, {} blocks flushed, {} segments dropped by retention",
        stats.records, stats.chunks, stats.blocks_flushed, stats.segments_dropped
    );
    println!(
        "store compression: {} chunks written, {} stored uncompressed ({} of them to keep up with ingest), {} compressed at a cheaper level to keep up, {} bytes of chunks in {} bytes of frames (ratio {:.2})",
        stats.chunks_written,
        stats.chunks_stored_raw,
        stats.chunks_raw_to_keep_up,
        stats.chunks_fast_to_keep_up,
        stats.chunk_bytes_written,
        stats.frame_bytes_written,
        stats.chunk_bytes_written as f64 / stats.frame_bytes_written.max(1) as f64
    );
    Ok(())
}
