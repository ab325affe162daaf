//! Destinations of telemetry batches.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::TcpStream;

use std::sync::Arc;
use std::time::Duration;

use telemetry::wire::resend::{Connector, Link, ResendConfig, ResendStats, ResendingSender};
use telemetry::wire::FrameWriter;
use telemetry::wire::{self, sender, FrameType, Hello, SeriesTags};
use telemetry::{Batch, RecordingHeader, RecordingWriter};

use crate::{Destination, PipelineError};

/// Buffer between the sender and a socket or file.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// Takes batches from the sender thread.
pub trait Sink: Send {
    /// Delivers one batch.
    fn write(&mut self, batch: &Batch) -> Result<(), PipelineError>;
    /// Pushes buffered bytes out (called when the sender is idle).
    fn flush(&mut self) -> Result<(), PipelineError>;
    /// Flushes and closes; the destination is complete afterwards.
    fn finish(self: Box<Self>) -> Result<(), PipelineError>;
}

/// Opens the destination (connects, creates the file).
pub fn open(
    destination: &Destination,
    header: &RecordingHeader,
) -> Result<Box<dyn Sink>, PipelineError> {
    Ok(match destination {
        Destination::Noop => Box::new(NoopSink),
        Destination::Tcp(addr) if std::env::var("LOOM_STREAM_ACKED").is_ok_and(|v| v == "1") => {
            Box::new(AckedSink::start(addr)?)
        }
        Destination::Tcp(addr) => {
            let stream = TcpStream::connect(addr)
                .map_err(PipelineError::io(format!("connecting to {addr}")))?;
            stream
                .set_nodelay(true)
                .map_err(PipelineError::io("setting TCP_NODELAY"))?;
            Box::new(TaggedSink::start(stream)?)
        }
        Destination::RawToFile(path) => {
            let f = File::create(path)
                .map_err(PipelineError::io(format!("creating {}", path.display())))?;
            Box::new(FrameSink(FrameWriter::new(BufWriter::with_capacity(
                WRITE_BUFFER_BYTES,
                f,
            ))))
        }
        Destination::Recording(path) => {
            Box::new(RecordingSink(RecordingWriter::create(path, header)?))
        }
    })
}

struct NoopSink;

impl Sink for NoopSink {
    fn write(&mut self, _batch: &Batch) -> Result<(), PipelineError> {
        Ok(())
    }
    fn flush(&mut self) -> Result<(), PipelineError> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), PipelineError> {
        Ok(())
    }
}

struct FrameSink<W: Write + Send>(FrameWriter<W>);

impl<W: Write + Send> Sink for FrameSink<W> {
    fn write(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        Ok(self.0.write_batch(batch)?)
    }
    fn flush(&mut self) -> Result<(), PipelineError> {
        Ok(self.0.flush()?)
    }
    fn finish(mut self: Box<Self>) -> Result<(), PipelineError> {
        Ok(self.0.flush()?)
    }
}

/// Wire version 2 over TCP: a HELLO naming this host, one SERIES giving
/// every record the tag `comm` (this process's name), so the workloads'
/// series carry the same `host` and `comm` tags as `loom-agent`'s. Record
/// times stay the workload's own clock (no wall-clock flag), stored by the
/// receiver's timestamp mode as before.
struct TaggedSink {
    out: BufWriter<TcpStream>,
    seq: u64,
    payload: Vec<u8>,
    frame: Vec<u8>,
}

/// The series reference of every workload record.
const WORKLOAD_SERIES: u32 = 1;

impl TaggedSink {
    fn start(mut stream: TcpStream) -> Result<TaggedSink, PipelineError> {
        let token = std::env::var("LOOM_AUTH_TOKEN").unwrap_or_default();
        let hello = Hello {
            sender_id: telemetry::source::fnv1a64(
                format!("{}/{}", sender::hostname(), sender::own_comm()).as_bytes(),
            ),
            flags: 0,
            next_seq: 1,
            token,
            host: sender::hostname(),
            agent: format!("{} (workload)", sender::own_comm()),
        };
        sender::handshake(&mut stream, &hello)?;
        let comm = sender::own_comm();
        let tags = SeriesTags::new(WORKLOAD_SERIES, &[("comm", comm.as_str())])?;
        let mut frame = Vec::new();
        wire::encode_control(
            FrameType::Series,
            0,
            sender::now_us(),
            &tags.encode(),
            &mut frame,
        )?;
        let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, stream);
        out.write_all(&frame)
            .map_err(PipelineError::io("sending the SERIES frame"))?;
        Ok(TaggedSink {
            out,
            seq: 0,
            payload: Vec::new(),
            frame,
        })
    }
}

impl Sink for TaggedSink {
    fn write(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        self.payload.clear();
        batch.encode_payload_into(&mut self.payload);
        self.frame.clear();
        self.seq += 1;
        wire::encode_data_v2(
            self.seq,
            WORKLOAD_SERIES,
            batch.records.len() as u32,
            batch.arrival_us,
            &self.payload,
            &mut self.frame,
        )?;
        self.out
            .write_all(&self.frame)
            .map_err(PipelineError::io("sending a frame"))
    }
    fn flush(&mut self) -> Result<(), PipelineError> {
        self.out
            .flush()
            .map_err(PipelineError::io("flushing frames"))
    }
    fn finish(mut self: Box<Self>) -> Result<(), PipelineError> {
        self.out
            .flush()
            .map_err(PipelineError::io("flushing frames"))
    }
}

/// `LOOM_STREAM_ACKED=1`: wire version 2 with acknowledgements through
/// the shared resending sender: every frame kept until loom-app says it is
/// durable, sent again after loom-app restarts, stored once. Acknowledged
/// records carry wall-clock times (a resend lands where the first send
/// did): the workload's times (µs since its telemetry epoch, which starts
/// just before the sink opens) are shifted by the wall-clock time at open.
/// The sender waits for acknowledgements when 256 MiB are unacknowledged.
struct AckedSink {
    sender: ResendingSender,
    stats: Arc<ResendStats>,
    offset: u64,
    payload: Vec<u8>,
}

/// Longest wait for the last acknowledgements when the workload ends.
const ACK_DRAIN: Duration = Duration::from_secs(120);

impl AckedSink {
    fn start(addr: &str) -> Result<AckedSink, PipelineError> {
        let offset = sender::now_us();
        let to = addr.to_string();
        let connect: Connector = Box::new(move || {
            let s = TcpStream::connect(&to).map_err(|source| telemetry::WireError::Io {
                context: "connecting",
                source,
            })?;
            Ok(Box::new(s) as Box<dyn Link>)
        });
        let hello = Hello {
            sender_id: telemetry::source::fnv1a64(
                format!("{}/{}/acked", sender::hostname(), sender::own_comm()).as_bytes(),
            ),
            flags: 0,
            next_seq: 1,
            token: std::env::var("LOOM_AUTH_TOKEN").unwrap_or_default(),
            host: sender::hostname(),
            agent: format!("{} (workload, acked)", sender::own_comm()),
        };
        let stats = Arc::new(ResendStats::default());
        let mut s = ResendingSender::new(connect, hello, ResendConfig::default(), stats.clone());
        let comm = sender::own_comm();
        s.declare(SeriesTags::new(
            WORKLOAD_SERIES,
            &[("comm", comm.as_str())],
        )?);
        Ok(AckedSink {
            sender: s,
            stats,
            offset,
            payload: Vec::new(),
        })
    }
}

impl Sink for AckedSink {
    fn write(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        self.payload.clear();
        batch.encode_payload_into(&mut self.payload);
        telemetry::raw::shift_event_times(&mut self.payload, self.offset);
        Ok(self
            .sender
            .send(WORKLOAD_SERIES, batch.records.len() as u32, &self.payload)?)
    }
    fn flush(&mut self) -> Result<(), PipelineError> {
        self.sender.flush();
        Ok(self.sender.pump(Duration::ZERO)?)
    }
    fn finish(mut self: Box<Self>) -> Result<(), PipelineError> {
        if self.sender.finish(ACK_DRAIN)? {
            return Ok(());
        }
        Err(telemetry::WireError::BadControl(format!(
            "{} frames were not acknowledged within {ACK_DRAIN:?} (acknowledged {} records)",
            self.sender.unacked_frames(),
            self.stats
                .records_acked
                .load(std::sync::atomic::Ordering::Relaxed)
        ))
        .into())
    }
}

struct RecordingSink(RecordingWriter<BufWriter<File>>);

impl Sink for RecordingSink {
    fn write(&mut self, batch: &Batch) -> Result<(), PipelineError> {
        Ok(self.0.write_batch(batch)?)
    }
    fn flush(&mut self) -> Result<(), PipelineError> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), PipelineError> {
        let mut w = self.0.finish()?;
        w.flush()
            .map_err(PipelineError::io("flushing the recording"))
    }
}
