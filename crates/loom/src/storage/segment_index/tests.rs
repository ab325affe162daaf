//! Segment index files: round trips, torn tails, and what paging and a
//! reopen read of them.

use super::*;

fn chunk(addr: u64, summaries: Option<Vec<BinSummary>>) -> IndexedChunk {
    IndexedChunk {
        addr,
        header: ChunkHeader {
            len: 0,
            source: 0xabc,
            prev: u64::MAX,
            first_ts: 10,
            last_ts: 20,
            count: 3,
            crc: 0x1234_5678,
        },
        summaries,
    }
}

fn bins() -> Vec<BinSummary> {
    vec![
        BinSummary {
            bin: 0,
            count: 1,
            min: 0,
            max: 0,
            sum: 0,
            fine: 0,
        },
        BinSummary {
            bin: 9_999,
            count: 2,
            min: 99_990,
            max: u64::MAX,
            sum: u128::from(u64::MAX) + 99_990,
            fine: 0x0123_4567_89ab_cdef,
        },
    ]
}

#[test]
fn entries_round_trip_and_a_torn_tail_is_cut() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut w = SegmentIndexWriter::create(dir.path(), 3)?;
    w.chunk(&chunk(0, Some(bins())))?;
    w.chunk(&chunk(4096, None))?;
    w.summaries(4096, &bins())?;
    let frames = [
        FrameLoc {
            addr: 0,
            offset: 16,
            len: 100,
        },
        FrameLoc {
            addr: 4096,
            offset: 120,
            len: 77,
        },
    ];
    w.frames(&frames)?;
    w.finish(8192, 2)?;
    let r = read(dir.path(), 3)?;
    assert_eq!(r.stopped, None);
    assert_eq!(r.chunks, vec![chunk(0, Some(bins())), chunk(4096, None)]);
    assert_eq!(r.summaries_of(&r.chunks[1]), Some(bins()));
    assert_eq!(r.footer, Some((8192, 2)));
    assert_eq!(r.frames.as_deref(), Some(&frames[..]));
    assert!(read(dir.path(), 4)?.chunks.is_empty());

    let mut bytes = fs::read(path(dir.path(), 3))?;
    bytes.truncate(bytes.len() - 3);
    let cut = decode(&bytes, 3);
    assert_eq!(cut.chunks.len(), 2);
    assert_eq!(cut.footer, None);
    assert!(cut.stopped.is_some());

    let mut bytes = fs::read(path(dir.path(), 3))?;
    bytes[FILE_HEADER + 12] ^= 1;
    let bad = decode(&bytes, 3);
    assert!(bad.chunks.is_empty());
    assert!(bad.stopped.ok_or("no stop reason")?.contains("checksum"));
    Ok(())
}

#[test]
fn paging_reads_one_sources_summaries_flat_and_a_reopen_reads_them_lean(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut w = SegmentIndexWriter::create(dir.path(), 3)?;
    w.chunk(&chunk(0, Some(bins())))?;
    w.chunk(&chunk(4096, None))?;
    // Another source's chunk, summarised in its entry and late.
    let mut other = chunk(8192, Some(bins()[..1].to_vec()));
    other.header.source = 0xdef;
    w.chunk(&other)?;
    w.chunk(&chunk(12288, None))?;
    w.summaries(4096, &bins())?;
    w.summaries(8192, &bins())?;
    w.frames(&[])?;
    w.finish(16384, 4)?;
    // Summaries of a chunk indexed after the footer are kept too.
    w.summaries(12288, &bins()[1..])?;
    w.flush()?;

    // What paging reads: one source's chunks' summaries, flat, late ones
    // too, and none of another source's.
    let flat = read_flat(dir.path(), 3, 0xabc)?;
    assert_eq!(flat.chunks, vec![(0, 0, 2), (4096, 2, 2), (12288, 4, 1)]);
    assert_eq!(&flat.bins[..2], &bins()[..]);
    assert_eq!(&flat.bins[2..4], &bins()[..]);
    assert_eq!(flat.bins[4], bins()[1]);
    let theirs = read_flat(dir.path(), 3, 0xdef)?;
    assert_eq!(theirs.chunks, vec![(8192, 0, 1), (8192, 1, 2)]);
    assert!(read_flat(dir.path(), 3, 0x123)?.chunks.is_empty());
    assert!(read_flat(dir.path(), 4, 0xabc)?.chunks.is_empty());
    // What a reopen reads of a paged segment: chunks, no summaries.
    let lean = read_lean(dir.path(), 3)?;
    assert_eq!(lean.stopped, None);
    assert_eq!(
        lean.chunks,
        vec![
            chunk(0, None),
            chunk(4096, None),
            IndexedChunk {
                summaries: None,
                ..other
            },
            chunk(12288, None)
        ]
    );
    assert_eq!(lean.on_disk.len(), 4);
    assert!(lean.late_summaries.is_empty());
    assert_eq!(lean.footer, Some((16384, 4)));

    Ok(())
}

/// A valid index file's bytes: chunks with and without summaries, late
/// summaries, frames and a footer.
fn valid_file() -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut w = SegmentIndexWriter::create(dir.path(), 3)?;
    w.chunk(&chunk(0, Some(bins())))?;
    w.chunk(&chunk(4096, None))?;
    w.chunk(&chunk(12288, None))?;
    w.summaries(4096, &bins())?;
    w.frames(&[FrameLoc {
        addr: 0,
        offset: 16,
        len: 100,
    }])?;
    w.finish(16384, 3)?;
    w.summaries(12288, &bins())?;
    w.flush()?;
    Ok(fs::read(path(dir.path(), 3))?)
}

proptest::proptest! {
    /// Whatever the bytes (a valid file with bytes flipped, cut or
    /// appended), reading them every way returns, never panics, and
    /// paging finds summaries only where a full read does.
    #[test]
    fn mangled_files_are_read_without_panicking(
        flips in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), 1u8..), 0..6),
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
    ) {
        let mut bytes = valid_file().map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        for (at, x) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        bytes.extend_from_slice(&tail);
        let full = decode(&bytes, 3);
        let lean = decode_with(&bytes, 3, true);
        let flat = decode_flat(&bytes, 3, 0xabc);
        proptest::prop_assert_eq!(full.chunks.len(), lean.chunks.len());
        for (addr, start, n) in flat.chunks {
            let in_entry = full
                .chunks
                .iter()
                .find(|c| c.addr == addr)
                .and_then(|c| c.summaries.clone());
            let late = full.late_summaries.get(&addr).cloned();
            let got = flat
                .bins
                .get(start as usize..(start + n) as usize)
                .map(<[BinSummary]>::to_vec);
            // What paging reads is what a full read found for that chunk:
            // in its entry or in a late entry.
            proptest::prop_assert!(
                got.is_some() && (got == in_entry || got == late),
                "chunk {}: paged {:?}, entry {:?}, late {:?}", addr, got, in_entry, late
            );
        }
    }
}

/// The summary list as format 2 wrote it: no per-value counts.
fn encode_summaries_v2(out: &mut Vec<u8>, bins: &[BinSummary]) {
    put_var(out, bins.len() as u64);
    let mut prev = 0u32;
    for b in bins {
        put_var(out, u64::from(b.bin.wrapping_sub(prev)));
        prev = b.bin;
        put_var(out, u64::from(b.count));
        put_var(out, b.min);
        put_var(out, b.max.wrapping_sub(b.min));
        put_var(out, b.sum as u64);
        put_var(out, (b.sum >> 64) as u64);
    }
}

/// A file written by format 2 (`LOOMSIX2`, chunk entries of type 5 and
/// late summaries of type 2, no per-value counts), encoded here as that
/// version wrote it, reads the same every way (counts 0: not kept, so
/// queries decode as before); and a format-3 writer appending to it
/// (recovery reopens a file whose footer was not written) adds entries
/// that read with their counts.
#[test]
fn a_version_2_file_reads_the_same() -> Result<(), Box<dyn std::error::Error>> {
    let v2_bins: Vec<BinSummary> = bins()
        .into_iter()
        .map(|b| BinSummary { fine: 0, ..b })
        .collect();
    let entry = |out: &mut Vec<u8>, p: &[u8]| {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(p).to_le_bytes());
        out.extend_from_slice(p);
    };
    let mut file = MAGIC_V2.to_vec();
    file.extend_from_slice(&3u64.to_le_bytes());
    let c = chunk(0, Some(v2_bins.clone()));
    let mut p = vec![T_CHUNK_LEN];
    for v in [
        c.addr,
        c.header.source,
        c.header.prev,
        c.header.first_ts,
        c.header.last_ts,
    ] {
        put_u64(&mut p, v);
    }
    for v in [c.header.count, c.header.crc, c.header.len] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    p.push(1);
    encode_summaries_v2(&mut p, &v2_bins);
    entry(&mut file, &p);
    let mut p = vec![T_SUMMARIES];
    put_u64(&mut p, 4096);
    encode_summaries_v2(&mut p, &v2_bins);
    entry(&mut file, &p);
    let dir = tempfile::tempdir()?;
    fs::write(path(dir.path(), 3), &file)?;

    let r = read(dir.path(), 3)?;
    assert_eq!(r.stopped, None);
    assert_eq!(r.chunks, vec![chunk(0, Some(v2_bins.clone()))]);
    assert_eq!(r.late_summaries.get(&4096), Some(&v2_bins));
    let flat = read_flat(dir.path(), 3, 0xabc)?;
    assert_eq!(flat.chunks, vec![(0, 0, 2)]);
    assert_eq!(flat.bins, v2_bins);

    let mut w = SegmentIndexWriter::append_to(dir.path(), 3)?;
    w.chunk(&chunk(8192, Some(bins())))?;
    w.finish(16384, 2)?;
    let r = read(dir.path(), 3)?;
    assert_eq!(r.stopped, None);
    assert_eq!(
        r.chunks,
        vec![chunk(0, Some(v2_bins)), chunk(8192, Some(bins()))]
    );
    assert_ne!(bins()[1].fine, 0, "the counts are written and read back");
    Ok(())
}
