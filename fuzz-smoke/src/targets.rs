//! The fuzz targets the driver runs: each one's valid samples, how an input
//! is made from them, and the body (the same function the cargo-fuzz target
//! calls).

use std::io;
use std::path::Path;

use anyhow::Result;

use crate::influxql_samples;
use crate::mutate::{self, mutate};
use crate::otlp_samples;
use crate::samples;
use replay::SplitMix64;

/// Which decoder a target feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `telemetry::fuzz::record_decode`: count byte + batch payload.
    Records,
    /// `telemetry::fuzz::wire_frame`: TCP wire frames.
    Frames,
    /// `telemetry::fuzz::recording_file`: recording files.
    Recordings,
    /// `loom::fuzz::open_segment`: a store's first segment file.
    Segments,
    /// `otlp::fuzz::otlp_decode`: OTLP export request bodies.
    Otlp,
    /// `influxql::fuzz::statement`: InfluxQL query text.
    InfluxqlStatement,
    /// `influxql::fuzz::query_request`: whole `/query` requests.
    InfluxqlQuery,
    /// `loom::fuzz::decode_chunk`: one compressed chunk (frame).
    Chunks,
    /// `loom::fuzz::open_journal`: a store's journal of open chunks.
    Journal,
}

/// Names as given on the command line, in run order (the cargo-fuzz names).
pub const ALL: [(&str, Format); 9] = [
    ("record_decode", Format::Records),
    ("wire_frame", Format::Frames),
    ("recording_file", Format::Recordings),
    ("open_segment", Format::Segments),
    ("otlp_decode", Format::Otlp),
    ("influxql_statement", Format::InfluxqlStatement),
    ("influxql_query", Format::InfluxqlQuery),
    ("decode_chunk", Format::Chunks),
    ("open_journal", Format::Journal),
];

/// Finds a target by name.
pub fn by_name(name: &str) -> Option<Format> {
    ALL.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// A target ready to run: its samples and, for segments, a scratch directory.
pub struct Target {
    pub name: &'static str,
    pub format: Format,
    samples: Vec<Vec<u8>>,
    /// Batch payloads (no count byte), for recordings built around mutated
    /// payloads.
    payloads: Vec<Vec<u8>>,
    scratch: tempfile::TempDir,
}

impl Target {
    /// Builds `format`'s samples with the real encoders.
    pub fn new(name: &'static str, format: Format, rng: &mut SplitMix64) -> Result<Target> {
        let samples = match format {
            Format::Records => samples::payloads(rng, 64),
            Format::Frames => samples::frames(rng, 64)?,
            Format::Recordings => samples::recordings(rng, 32)?,
            Format::Segments => samples::segments(rng, 12)?,
            Format::Otlp => otlp_samples::inputs(rng, 64)?,
            Format::InfluxqlStatement => influxql_samples::statements(rng, 256),
            Format::InfluxqlQuery => influxql_samples::requests(rng, 256),
            Format::Chunks => (0..4)
                .flat_map(|_| loom::fuzz::chunk_samples(rng.next_u64()))
                .collect(),
            Format::Journal => samples::journals(rng, 12)?,
        };
        let payloads = samples::payloads(rng, 32)
            .into_iter()
            .map(|p| p[1..].to_vec())
            .collect();
        Ok(Target {
            name,
            format,
            samples,
            payloads,
            scratch: scratch_dir()?,
        })
    }

    /// Runs the target's body once on `input`. Errors are the scratch
    /// directory's, not findings.
    pub fn run(&self, input: &[u8]) -> io::Result<()> {
        run_body(self.format, self.scratch.path(), input)
    }

    /// Makes the next input into `out`: mostly a mutated sample with its
    /// checksums re-sealed, sometimes with the checksums left broken, and
    /// now and then plain random bytes.
    pub fn next_input(&self, rng: &mut SplitMix64, out: &mut Vec<u8>) {
        out.clear();
        if rng.one_in(16) {
            let max = if self.format == Format::Segments {
                2048
            } else {
                4096
            };
            let n = rng.index(max);
            out.extend((0..n).map(|_| rng.next_u64() as u8));
            return;
        }
        if self.format == Format::Recordings && rng.one_in(4) {
            self.recording_around_mutated_payloads(rng, out);
            return;
        }
        let base = &self.samples[rng.index(self.samples.len())];
        let other = &self.samples[rng.index(self.samples.len())];
        out.extend_from_slice(base);
        if self.is_text() {
            // Text: the grammar's tokens and repeats now and then, byte
            // mutations otherwise, and sometimes the sample unchanged.
            if rng.one_in(2) {
                influxql_samples::mutate_text(rng, out);
            }
            if !rng.one_in(8) {
                mutate(rng, out, other);
            }
            return;
        }
        mutate(rng, out, other);
        if rng.one_in(4) {
            return;
        }
        match self.format {
            Format::Records => {}
            Format::Frames => mutate::reseal_frames(out),
            Format::Recordings => mutate::reseal_recording(out),
            Format::Segments => {
                let block = loom::fuzz::segment_config().block_size;
                mutate::reseal_segment(out, block);
            }
            // No checksums: protobuf and JSON are decoded as they are.
            Format::Otlp | Format::InfluxqlStatement | Format::InfluxqlQuery => {}
            Format::Chunks => mutate::reseal_chunk(out),
            Format::Journal => loom::fuzz::reseal_journal(out),
        }
    }

    /// Whether inputs are text of a grammar (InfluxQL).
    fn is_text(&self) -> bool {
        matches!(
            self.format,
            Format::InfluxqlStatement | Format::InfluxqlQuery
        )
    }

    /// A valid recording header followed by well-formed, checksummed blocks
    /// whose raw payloads (and record counts) are mutated.
    fn recording_around_mutated_payloads(&self, rng: &mut SplitMix64, out: &mut Vec<u8>) {
        let sample = &self.samples[rng.index(self.samples.len())];
        let text = sample
            .get(12..16)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        let header_len = (20 + text).min(sample.len());
        out.extend_from_slice(&sample[..header_len]);
        for _ in 0..1 + rng.index(3) {
            let mut payload = self.payloads[rng.index(self.payloads.len())].clone();
            let other = &self.payloads[rng.index(self.payloads.len())];
            mutate(rng, &mut payload, other);
            let count = if rng.one_in(2) {
                rng.index(64) as u32
            } else {
                (payload.len() / 25) as u32
            };
            out.extend(mutate::recording_block(
                rng.next_u64() % 1000,
                count,
                &payload,
            ));
        }
    }
}

/// A scratch directory, on tmpfs when there is one: opening a store fsyncs,
/// which costs milliseconds per input on a disk and nothing in memory.
pub fn scratch_dir() -> io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("fuzz-smoke")
            .tempdir_in(shm)
        {
            return Ok(d);
        }
    }
    tempfile::tempdir()
}

/// The body of `format`'s cargo-fuzz target. `scratch` is an empty
/// directory, used by the segment and journal targets only.
pub fn run_body(format: Format, scratch: &Path, input: &[u8]) -> io::Result<()> {
    match format {
        Format::Records => telemetry::fuzz::record_decode(input),
        Format::Frames => telemetry::fuzz::wire_frame(input),
        Format::Recordings => telemetry::fuzz::recording_file(input),
        Format::Segments => loom::fuzz::open_segment(scratch, input)?,
        Format::Otlp => otlp::fuzz::otlp_decode(input),
        Format::InfluxqlStatement => influxql::fuzz::statement(input),
        Format::InfluxqlQuery => influxql::fuzz::query_request(input),
        Format::Chunks => loom::fuzz::decode_chunk(input),
        Format::Journal => loom::fuzz::open_journal(scratch, input)?,
    }
    Ok(())
}
