//! Destinations of telemetry batches.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::TcpStream;

use telemetry::{Batch, FrameWriter, RecordingHeader, RecordingWriter};

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
        Destination::Tcp(addr) => {
            let stream = TcpStream::connect(addr)
                .map_err(PipelineError::io(format!("connecting to {addr}")))?;
            stream
                .set_nodelay(true)
                .map_err(PipelineError::io("setting TCP_NODELAY"))?;
            Box::new(FrameSink(FrameWriter::new(BufWriter::with_capacity(
                WRITE_BUFFER_BYTES,
                stream,
            ))))
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
