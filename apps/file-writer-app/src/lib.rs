//! Telemetry endpoint writing the frame stream to a file.
//!
//! Every connection's frames are validated with the telemetry decoder and
//! appended, byte for byte as received, to one output file (so the file is a
//! valid frame stream). A bad frame closes that connection with a logged
//! reason; frames already appended stay. The file is flushed and fsynced by
//! [`FileWriter::sync`], which the binary calls once a second.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use telemetry::wire::{encode_control, sender, FrameReader, FrameType, Hello, Incoming, Welcome};
use telemetry::WireError;
use thiserror::Error;

/// Buffer in front of the output file.
const FILE_BUFFER_BYTES: usize = 4 << 20;

/// Errors of the file writer.
#[derive(Debug, Error)]
pub enum FileWriterError {
    /// Opening, writing or syncing the output, or accepting connections.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A peer sent something that is not a valid frame (connection closed).
    #[error("bad frame: {0}")]
    Frame(#[from] WireError),
    /// A thread panicked while holding the output file.
    #[error("the output file lock is poisoned")]
    Poisoned,
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> FileWriterError {
    let context = context.into();
    move |source| FileWriterError::Io { context, source }
}

/// Totals received so far (valid frames only).
#[derive(Debug, Default)]
pub struct Received {
    /// Records.
    pub records: AtomicU64,
    /// Frames (batches).
    pub batches: AtomicU64,
    /// Bytes appended to the file.
    pub bytes: AtomicU64,
}

/// The shared output file.
pub struct FileWriter {
    out: Mutex<BufWriter<File>>,
    /// What has been received.
    pub received: Received,
}

impl FileWriter {
    /// Creates (truncates) the output file.
    pub fn create(path: &Path) -> Result<FileWriter, FileWriterError> {
        let f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(io_err(format!("creating {}", path.display())))?;
        Ok(FileWriter {
            out: Mutex::new(BufWriter::with_capacity(FILE_BUFFER_BYTES, f)),
            received: Received::default(),
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, BufWriter<File>>, FileWriterError> {
        self.out.lock().map_err(|_| FileWriterError::Poisoned)
    }

    /// Flushes buffered frames and fsyncs the file.
    pub fn sync(&self) -> Result<(), FileWriterError> {
        let mut out = self.lock()?;
        out.flush().map_err(io_err("flushing the output"))?;
        out.get_ref()
            .sync_data()
            .map_err(io_err("fsync of the output"))
    }

    /// Reads frames from `stream` until it ends cleanly (`Ok`) or sends a bad
    /// frame (`Err`, frames before it are kept). Both wire versions: a
    /// version-2 sender's HELLO is answered with a WELCOME that asks for no
    /// acknowledgements (the file is written, not made durable per frame),
    /// and its control frames are kept in the file like data frames, so the
    /// file is the stream exactly as the sender wrote it.
    pub fn serve_connection<S: Read + Write>(&self, stream: S) -> Result<(), FileWriterError> {
        let captured = Rc::new(RefCell::new(Vec::new()));
        let mut frames = FrameReader::new(Tee {
            inner: stream,
            captured: captured.clone(),
        });
        let mut records = Vec::new();
        loop {
            captured.borrow_mut().clear();
            records.clear();
            let Some(frame) = frames.read_frame_into(&mut records)? else {
                return Ok(());
            };
            let count = match frame {
                Incoming::Data(h) => u64::from(h.record_count),
                Incoming::Control(h, payload) => {
                    if h.frame_type == FrameType::Hello {
                        Hello::decode(&payload)?;
                        welcome(&mut frames.get_mut().inner)?;
                    }
                    0
                }
            };
            let bytes = captured.borrow();
            self.lock()?
                .write_all(&bytes)
                .map_err(io_err("appending to the output"))?;
            self.received.records.fetch_add(count, Ordering::Relaxed);
            self.received.batches.fetch_add(1, Ordering::Relaxed);
            self.received
                .bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
    }

    /// Accepts connections forever (or `max_connections` of them), one
    /// thread each; returns once the counted connections have ended.
    pub fn serve(
        self: &Arc<Self>,
        listener: TcpListener,
        max_connections: Option<usize>,
    ) -> Result<(), FileWriterError> {
        let mut handles = Vec::new();
        for (n, conn) in listener.incoming().enumerate() {
            let stream = conn.map_err(io_err("accepting a connection"))?;
            let me = self.clone();
            handles.push(std::thread::spawn(move || me.handle(stream)));
            if max_connections.is_some_and(|m| n + 1 >= m) {
                break;
            }
        }
        for h in handles {
            let _ = h.join();
        }
        Ok(())
    }

    fn handle(&self, stream: TcpStream) {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "unknown peer".to_string());
        log::info!("connection from {peer}");
        match self.serve_connection(stream) {
            Ok(()) => log::info!("connection from {peer} ended"),
            Err(e) => log::warn!("closing connection from {peer}: {e}"),
        }
    }
}

/// Answers a HELLO: no acknowledgements, nothing durable yet.
fn welcome(stream: &mut impl Write) -> Result<(), FileWriterError> {
    let w = Welcome {
        durable_seq: 0,
        flags: 0,
        receiver: format!("file-writer-app {}", env!("CARGO_PKG_VERSION")),
    };
    let mut f = Vec::new();
    encode_control(FrameType::Welcome, 0, sender::now_us(), &w.encode(), &mut f)?;
    stream
        .write_all(&f)
        .and_then(|()| stream.flush())
        .map_err(io_err("answering HELLO"))
}

/// Copies every byte read into `captured`, so a validated frame can be
/// appended exactly as received.
struct Tee<R> {
    inner: R,
    captured: Rc<RefCell<Vec<u8>>>,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.captured.borrow_mut().extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telemetry::{Batch, KvOp, KvOpKind, Record};

    /// A connection for the tests: reads `input`, keeps what is written.
    struct Duplex<'a> {
        input: &'a [u8],
        written: Vec<u8>,
    }

    impl Read for Duplex<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn duplex(input: &[u8]) -> Duplex<'_> {
        Duplex {
            input,
            written: Vec::new(),
        }
    }

    fn frames(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            let batch = Batch::new(
                i as u64,
                vec![Record::KvOp(KvOp {
                    thread_id: 1,
                    op: KvOpKind::Read,
                    start_us: i as u64,
                    duration_us: 3,
                })],
            );
            telemetry::wire::encode_frame(&batch, &mut out).expect("encode");
        }
        out
    }

    #[test]
    fn valid_frames_are_appended_verbatim() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.bin");
        let w = FileWriter::create(&path).expect("create");
        let input = frames(5);
        w.serve_connection(duplex(&input)).expect("serve");
        w.sync().expect("sync");
        assert_eq!(std::fs::read(&path).expect("read"), input);
        assert_eq!(w.received.records.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn a_bad_frame_closes_the_connection_and_keeps_earlier_frames() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.bin");
        let w = FileWriter::create(&path).expect("create");
        let good = frames(2);
        let mut input = good.clone();
        let mut bad = frames(1);
        let last = bad.len() - 1;
        bad[last] ^= 0xff; // payload corrupted: checksum mismatch
        input.extend_from_slice(&bad);
        input.extend_from_slice(&frames(1));
        let err = w.serve_connection(duplex(&input)).expect_err("bad frame");
        assert!(
            matches!(
                err,
                FileWriterError::Frame(WireError::ChecksumMismatch { .. })
            ),
            "{err}"
        );
        w.sync().expect("sync");
        assert_eq!(std::fs::read(&path).expect("read"), good);
    }

    /// A version-2 sender (HELLO, SERIES, DATA) is welcomed without
    /// acknowledgements and its stream is kept as sent.
    #[test]
    fn a_version_2_sender_is_welcomed_and_kept_verbatim() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.bin");
        let w = FileWriter::create(&path).expect("create");
        let hello = Hello {
            sender_id: 7,
            flags: 0,
            next_seq: 1,
            token: String::new(),
            host: "h".into(),
            agent: "test".into(),
        };
        let mut input = Vec::new();
        encode_control(FrameType::Hello, 0, 1, &hello.encode().unwrap(), &mut input).unwrap();
        let tags = telemetry::wire::SeriesTags::new(1, &[("comm", "x")]).unwrap();
        encode_control(FrameType::Series, 0, 1, &tags.encode(), &mut input).unwrap();
        let mut payload = Vec::new();
        let rec = Record::KvOp(KvOp {
            thread_id: 1,
            op: KvOpKind::Read,
            start_us: 5,
            duration_us: 3,
        });
        Batch::new(0, vec![rec]).encode_payload_into(&mut payload);
        telemetry::wire::encode_data_v2(1, 1, 1, 1, &payload, &mut input).unwrap();
        let mut conn = duplex(&input);
        if let Err(e) = w.serve_connection(&mut conn) {
            panic!("serve: {e}");
        }
        let mut answers = FrameReader::new(&conn.written[..]);
        let mut scratch = Vec::new();
        match answers.read_frame_into(&mut scratch).expect("a frame") {
            Some(Incoming::Control(h, p)) => {
                assert_eq!(h.frame_type, FrameType::Welcome);
                let welcome = Welcome::decode(&p).expect("WELCOME");
                assert_eq!((welcome.durable_seq, welcome.flags), (0, 0));
            }
            other => panic!("expected WELCOME, got {other:?}"),
        }
        w.sync().expect("sync");
        assert_eq!(std::fs::read(&path).expect("read"), input);
        assert_eq!(w.received.records.load(Ordering::Relaxed), 1);
    }
}
