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
        },
        BinSummary {
            bin: 9_999,
            count: 2,
            min: 99_990,
            max: u64::MAX,
            sum: u128::from(u64::MAX) + 99_990,
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
fn paging_reads_summaries_flat_and_a_reopen_reads_them_lean(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut w = SegmentIndexWriter::create(dir.path(), 3)?;
    w.chunk(&chunk(0, Some(bins())))?;
    w.chunk(&chunk(4096, None))?;
    w.summaries(4096, &bins())?;
    w.frames(&[])?;
    w.finish(8192, 2)?;
    // Summaries of a chunk indexed after the footer are kept too.
    w.summaries(12288, &bins()[1..])?;
    w.flush()?;

    // What paging reads: every chunk's summaries, flat, late ones too.
    let flat = read_flat(dir.path(), 3)?;
    assert_eq!(flat.chunks, vec![(0, 0, 2), (4096, 2, 2), (12288, 4, 1)]);
    assert_eq!(&flat.bins[..2], &bins()[..]);
    assert_eq!(&flat.bins[2..4], &bins()[..]);
    assert_eq!(flat.bins[4], bins()[1]);
    assert!(read_flat(dir.path(), 4)?.chunks.is_empty());
    // What a reopen reads of a paged segment: chunks, no summaries.
    let lean = read_lean(dir.path(), 3)?;
    assert_eq!(lean.stopped, None);
    assert_eq!(lean.chunks, vec![chunk(0, None), chunk(4096, None)]);
    assert_eq!(lean.on_disk.len(), 3);
    assert!(lean.late_summaries.is_empty());
    assert_eq!(lean.footer, Some((8192, 2)));

    Ok(())
}
