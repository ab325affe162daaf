//! Recovery on open: find every valid chunk, never delete valid data.
//!
//! A segment whose index file (`segment_index/`) ends in a footer is
//! complete and durable: its chunks and summaries are taken from the index
//! file without reading the segment. Any other segment is scanned block by
//! block, every chunk checked (magic, length, CRC-32C):
//!
//! - a chunk that fails its checks *inside* the log is skipped: the scan
//!   looks for the next valid chunk (chunks start on 8-byte boundaries),
//!   keeps everything after it, and reports the segment, offset and reason;
//! - zeros followed by valid chunks are reported as a hole;
//! - only what follows the last valid chunk of the whole log is a torn tail:
//!   the writer zeroes it (and removes later segment files, which then hold
//!   no valid chunk) so it never hides data written after this open.
//!
//! Version-2 segments (compressed frames, `frame.rs`) are checked the same
//! way frame by frame (`frame_scan.rs`); skipped regions are reported at
//! their offset in the segment file, and a torn tail is cut by truncating
//! the file after its last valid frame. A writer never appends to a
//! recovered segment: it starts the next one.
//!
//! A chunk whose `prev` link does not name its source's previous recovered
//! chunk means records of that source are missing (a skipped chunk, a lost
//! segment): that is reported too, and the chunks are kept.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::log::chunk::{ChunkHeader, NO_CHUNK};
use crate::storage::frame::{self, FrameLoc};
use crate::storage::layout::Layout;
use crate::storage::segment_index;

mod chunk_scan;
mod repair;

use chunk_scan::read_full;
pub(crate) use chunk_scan::{next_nonzero, BadRegion, Scan};
use repair::{complete_indexes, discard_from};

/// A chunk found on disk.
pub(crate) struct RecoveredChunk {
    pub addr: u64,
    pub header: ChunkHeader,
    /// Its range-index summaries, when the segment index had them and
    /// they were read.
    pub summaries: Option<Vec<BinSummary>>,
    /// Its summaries are in the segment index file but were not read (a
    /// segment whose summaries stay paged out, `index/paged.rs`).
    pub paged: bool,
}

/// One segment file as recovery found it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SegmentInfo {
    pub index: u64,
    /// Newest timestamp of any chunk in it (0 if none).
    pub newest_ts: u64,
    /// Bytes on disk (segment and its index file).
    pub bytes: u64,
    /// Its chunks were taken from its complete index file (which thus
    /// lists them all): their directory entries may be paged out.
    pub from_index: bool,
}

/// What recovery found and did, for people.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// Chunks recovered.
    pub chunks: u64,
    /// Records in them.
    pub records: u64,
    /// Segments taken from their index file without reading them.
    pub segments_from_index: u64,
    /// Segments scanned chunk by chunk.
    pub segments_scanned: u64,
    /// Bytes read while scanning.
    pub bytes_scanned: u64,
    /// Corrupt regions inside the log that were skipped (the data around
    /// them is kept): `(segment, offset, reason)`.
    pub skipped: Vec<(u64, u64, String)>,
    /// Holes: zeros or missing segments followed by valid data, and sources
    /// whose chunk chain has a gap.
    pub holes: Vec<String>,
    /// The torn tail cut at the end of the log, if any: `(address, reason)`.
    pub torn_tail: Option<(u64, String)>,
    /// Wall time of the recovery, ms.
    pub millis: f64,
}

impl RecoveryReport {
    /// Whether anything was skipped, missing or cut.
    pub fn lost_anything(&self) -> bool {
        !self.skipped.is_empty() || !self.holes.is_empty() || self.torn_tail.is_some()
    }
}

/// What recovery found.
pub(crate) struct Recovered {
    pub chunks: Vec<RecoveredChunk>,
    /// Address just past the last valid chunk.
    pub end: u64,
    pub segments: Vec<SegmentInfo>,
    pub report: RecoveryReport,
    /// The frames of every version-2 segment, for `SegmentFiles`.
    pub frames: Vec<(u64, Vec<FrameLoc>)>,
}

/// Open mode of recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The writer's open: cut the torn tail, complete the index files.
    Repair,
    /// A reader's open: change nothing on disk.
    ReadOnly,
}

fn segment_indices(dir: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_prefix("segment-")
            .and_then(|s| s.strip_suffix(".log"))
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn file_len(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Whether segment file `path` is version 2 (starts with a frame file header).
pub(super) fn is_framed_file(path: &Path) -> bool {
    let mut head = [0u8; frame::FILE_HEADER];
    fs::File::open(path)
        .and_then(|f| f.read_exact_at(&mut head, 0))
        .is_ok_and(|()| frame::is_framed(&head))
}

/// What recovery gathers over all segments.
#[derive(Default)]
struct Found {
    chunks: Vec<RecoveredChunk>,
    bad: Vec<BadRegion>,
    end: u64,
    scanned: Vec<u64>,
    infos: Vec<SegmentInfo>,
    frames: Vec<(u64, Vec<FrameLoc>)>,
    /// Offset past the last valid frame of each scanned version-2 segment.
    file_ends: HashMap<u64, u64>,
}

/// Takes a segment's chunks from its index file when the index is
/// complete and agrees with the file; false when it must be scanned.
fn from_index(
    six: &segment_index::SegmentIndex,
    seg: u64,
    layout: Layout,
    len: u64,
    framed: bool,
    found: &mut Found,
) -> bool {
    let Some((data_end, n)) = six.footer else {
        return false;
    };
    let seg_base = seg * layout.segment_size;
    let ok = n == six.chunks.len() as u64 && data_end >= seg_base;
    let ok = ok
        && if framed {
            six.frames.as_ref().is_some_and(|f| {
                f.len() == six.chunks.len()
                    && f.iter().zip(&six.chunks).all(|(f, c)| f.addr == c.addr)
                    && f.last().is_none_or(|l| l.offset + u64::from(l.len) <= len)
            })
        } else {
            data_end <= seg_base + len
        };
    if !ok {
        return false;
    }
    for c in &six.chunks {
        found.chunks.push(RecoveredChunk {
            addr: c.addr,
            header: c.header,
            summaries: six.summaries_of(c),
            paged: six.on_disk.contains(&c.addr),
        });
    }
    if let (true, Some(f)) = (framed, &six.frames) {
        found.frames.push((seg, f.clone()));
    }
    found.end = found.end.max(data_end);
    true
}

/// Scans one segment file, chunk by chunk or frame by frame.
fn scan_segment(
    path: &Path,
    seg: u64,
    layout: Layout,
    framed: bool,
    six: &segment_index::SegmentIndex,
    report: &mut RecoveryReport,
    found: &mut Found,
) -> Result<()> {
    let seg_base = seg * layout.segment_size;
    let by_addr = six.chunks.iter().map(|c| (c.addr, c)).collect();
    let mut scan = Scan {
        layout,
        chunks: Vec::new(),
        bad: Vec::new(),
        end: found.end,
        by_addr,
        frames: Vec::new(),
        file_end: frame::FILE_HEADER as u64,
    };
    if framed {
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        report.bytes_scanned += bytes.len() as u64;
        scan.frames_of(seg, &bytes);
        found.file_ends.insert(seg, scan.file_end);
        found.frames.push((seg, std::mem::take(&mut scan.frames)));
    } else {
        let mut block = vec![0u8; layout.block_size];
        let mut file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut off = 0u64;
        while off < layout.segment_size {
            let n = read_full(&mut file, &mut block).map_err(|e| Error::io(path, e))?;
            if n == 0 {
                break;
            }
            report.bytes_scanned += n as u64;
            scan.block(seg_base + off, &block[..n]);
            off += layout.block_size as u64;
        }
    }
    // Summaries written after their chunk's entry.
    for c in scan.chunks.iter_mut() {
        if c.summaries.is_none() {
            if let Some(b) = six.late_summaries.get(&c.addr) {
                c.summaries = Some(b.clone());
            }
        }
    }
    found.end = scan.end;
    found.chunks.append(&mut scan.chunks);
    found.bad.append(&mut scan.bad);
    Ok(())
}

/// Recovers the store in `dir`. The summaries of the newest complete
/// segments are read while their index files add up to `keep_summaries`
/// bytes at most (about a fifth of what they take in memory); older
/// segments' stay in their files, paged in by queries (`paged: true`).
pub(crate) fn recover(
    dir: &Path,
    layout: Layout,
    mode: Mode,
    verify: bool,
    keep_summaries: usize,
) -> Result<Recovered> {
    let started = Instant::now();
    let segments = segment_indices(dir)?;
    let mut report = RecoveryReport::default();
    let found = read_segments(dir, layout, &segments, verify, keep_summaries, &mut report)?;
    let Found {
        chunks,
        bad,
        end,
        scanned,
        mut infos,
        frames,
        file_ends,
    } = found;

    log::debug!(
        "{}: recovery read the segments in {:.0} ms",
        dir.display(),
        started.elapsed().as_secs_f64() * 1e3
    );
    classify_bad_regions(dir, bad, end, &mut report);
    check_chains(dir, layout, &segments, &chunks, &mut report);

    let repair = Instant::now();
    if mode == Mode::Repair {
        if let Some((at, reason)) = &report.torn_tail {
            log::warn!(
                "{}: cutting the torn tail at address {at}: {reason}",
                dir.display()
            );
        }
        discard_from(dir, layout, end, &segments, &file_ends)?;
        infos.retain(|s| s.index <= end / layout.segment_size || s.index == 0);
        complete_indexes(dir, layout, &chunks, &scanned, &frames, end)?;
        log::debug!(
            "{}: recovery repaired the tail and index files in {:.0} ms",
            dir.display(),
            repair.elapsed().as_secs_f64() * 1e3
        );
    }

    report.chunks = chunks.len() as u64;
    report.records = chunks.iter().map(|c| u64::from(c.header.count)).sum();
    report.millis = started.elapsed().as_secs_f64() * 1e3;
    Ok(Recovered {
        chunks,
        end,
        segments: infos,
        report,
        frames,
    })
}

/// Every segment's chunks: from its index file when complete (and not
/// `verify`), otherwise scanned; missing segment numbers are holes.
fn read_segments(
    dir: &Path,
    layout: Layout,
    segments: &[u64],
    verify: bool,
    keep_summaries: usize,
    report: &mut RecoveryReport,
) -> Result<Found> {
    let mut found = Found::default();
    // Newest first: the segments whose summaries are read (hot).
    let mut kept = 0u64;
    let hot_from = segments
        .iter()
        .rev()
        .take_while(|&&seg| {
            kept += file_len(&segment_index::path(dir, seg));
            kept <= keep_summaries as u64
        })
        .last()
        .copied()
        .unwrap_or(u64::MAX);
    for (i, &seg) in segments.iter().enumerate() {
        if i > 0 && seg != segments[i - 1] + 1 {
            report.holes.push(format!(
                "segments {}..={} are missing",
                segments[i - 1] + 1,
                seg - 1
            ));
        }
        let path = Layout::segment_path(dir, seg);
        let len = file_len(&path);
        let framed = is_framed_file(&path);
        let lean = seg < hot_from && !verify;
        let mut six = if lean {
            segment_index::read_lean(dir, seg)?
        } else {
            segment_index::read(dir, seg)?
        };
        let first_new = found.chunks.len();
        let indexed = !verify && from_index(&six, seg, layout, len, framed, &mut found);
        if indexed {
            report.segments_from_index += 1;
        } else {
            if lean {
                // Scanning takes summaries from the file: read them all.
                six = segment_index::read(dir, seg)?;
            }
            report.segments_scanned += 1;
            found.scanned.push(seg);
            scan_segment(&path, seg, layout, framed, &six, report, &mut found)?;
        }
        let newest_ts = found.chunks[first_new..]
            .iter()
            .map(|c| c.header.last_ts)
            .max()
            .unwrap_or(0);
        found.infos.push(SegmentInfo {
            index: seg,
            newest_ts,
            bytes: len + file_len(&segment_index::path(dir, seg)),
            from_index: indexed,
        });
    }
    Ok(found)
}

/// Regions before the last valid chunk (`end`) were skipped (or, zeros, a
/// hole); after it, the first one is the torn tail.
fn classify_bad_regions(dir: &Path, bad: Vec<BadRegion>, end: u64, report: &mut RecoveryReport) {
    for r in bad {
        let (seg, off) = r.place;
        if r.at < end {
            if r.zeros {
                report.holes.push(format!(
                    "segment {seg} offset {off}: {} followed by valid chunks",
                    r.reason
                ));
            } else {
                report.skipped.push((seg, off, r.reason));
            }
        } else if !r.zeros && report.torn_tail.is_none() {
            report.torn_tail = Some((r.at, r.reason));
        }
    }
    for (seg, off, reason) in &report.skipped {
        log::error!(
            "{}: skipped a corrupt chunk in segment {seg} at offset {off}: {reason}; the chunks after it are kept",
            dir.display()
        );
    }
}

/// Every source's chunks must link to its previous one; a chunk that does
/// not is reported as a hole (records between are missing) and kept.
fn check_chains(
    dir: &Path,
    layout: Layout,
    segments: &[u64],
    chunks: &[RecoveredChunk],
    report: &mut RecoveryReport,
) {
    let floor = segments.first().map_or(0, |s| s * layout.segment_size);
    let mut newest: HashMap<u64, u64> = HashMap::new();
    for c in chunks {
        let last = newest.get(&c.header.source).copied().unwrap_or(NO_CHUNK);
        let retained_away = last == NO_CHUNK && c.header.prev != NO_CHUNK && c.header.prev < floor;
        if c.header.prev != last && !retained_away {
            report.holes.push(format!(
                "source {:#x}: chunk at {} links to {} but the last recovered chunk is {}: records between are missing",
                c.header.source,
                c.addr,
                fmt_addr(c.header.prev),
                fmt_addr(last)
            ));
        }
        newest.insert(c.header.source, c.addr);
    }
    for h in &report.holes {
        log::error!("{}: hole: {h}", dir.display());
    }
}

fn fmt_addr(a: u64) -> String {
    if a == NO_CHUNK {
        "nothing".into()
    } else {
        format!("address {a}")
    }
}
