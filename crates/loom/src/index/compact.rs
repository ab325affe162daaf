//! Compact copies of a paged segment's summaries, built when the page is
//! read: each summary's bin and count (8 bytes of its 48), and each
//! chunk's count, sum and extremes over all its bins. A window's first
//! pass over an hour of a busy series adds ~48 bin counts for each of
//! ~300 000 chunks; reading whole summaries for it was 43 % of a p99 per
//! bucket panel, and merging every bin for a chunk's aggregate is what a
//! `max` or `mean` per bucket spends its time on. Nothing here is stored:
//! the index file format is unchanged.

use crate::bin_summary::BinSummary;

/// A summary's bin and record count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BinCount {
    pub bin: u32,
    pub count: u32,
}

/// Count, sum and extremes of one chunk's records: its summaries merged.
/// `min > max` (and `count` 0) for a chunk without summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkTotal {
    pub count: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
}

impl ChunkTotal {
    /// The merge of `bins` (as `Aggregate::merge_bins` merges them; sums
    /// wrap rather than panic on a damaged file, as they do there in a
    /// release build).
    pub(crate) fn of(bins: &[BinSummary]) -> Self {
        let mut t = ChunkTotal {
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        };
        for b in bins {
            t.count = t.count.wrapping_add(u64::from(b.count));
            t.sum = t.sum.wrapping_add(b.sum);
            t.min = t.min.min(b.min);
            t.max = t.max.max(b.max);
        }
        t
    }
}

/// The position of bin `bin` among a chunk's bins and counts (in bin
/// order, each bin once), tried first where a busy chunk's low bins put it
/// (`bin − first bin`, as `bin_summary::find_bin`), then searched.
pub(crate) fn position(s: &[BinCount], bin: u32) -> Option<usize> {
    let first = s.first()?.bin;
    let last = usize::try_from(bin.checked_sub(first)?).ok()?;
    if s.get(last).is_some_and(|b| b.bin == bin) {
        return Some(last);
    }
    s[..s.len().min(last)]
        .binary_search_by_key(&bin, |b| b.bin)
        .ok()
}

/// The compact copies of a page: `counts[k]` is `bins[k]`'s bin and count,
/// `totals[j]` the merge of chunk `j`'s summaries (`chunks[j]` is
/// `(address, first summary, summaries)`). A chunk whose span lies outside
/// `bins` (a damaged file) gets an empty total; its summaries read as
/// absent anyway (`PagedBins` takes them with `get`).
pub(crate) fn compact(
    chunks: &[(u64, u32, u32)],
    bins: &[BinSummary],
) -> (Vec<BinCount>, Vec<ChunkTotal>) {
    let counts = bins
        .iter()
        .map(|b| BinCount {
            bin: b.bin,
            count: b.count,
        })
        .collect();
    let totals = chunks
        .iter()
        .map(|&(_, start, len)| {
            let (start, len) = (start as usize, len as usize);
            let span = start
                .checked_add(len)
                .and_then(|end| bins.get(start..end))
                .unwrap_or(&[]);
            ChunkTotal::of(span)
        })
        .collect();
    (counts, totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(bin: u32, values: &[u64]) -> BinSummary {
        let mut b = BinSummary {
            bin,
            ..BinSummary::default()
        };
        for &v in values {
            b.add(v);
        }
        b
    }

    #[test]
    fn totals_merge_each_chunks_summaries_and_counts_copy_them() {
        let bins = vec![
            summary(1, &[10, 12]),
            summary(3, &[31]),
            summary(2, &[20, 21, 22]),
            summary(7, &[70, 79]),
        ];
        // The last chunk's span runs past the summaries (a damaged file).
        let chunks = vec![(0, 0, 2), (4096, 2, 2), (8192, 3, 5)];
        let (counts, totals) = compact(&chunks, &bins);
        let want: Vec<_> = bins.iter().map(|b| (b.bin, b.count)).collect();
        let got: Vec<_> = counts.iter().map(|c| (c.bin, c.count)).collect();
        assert_eq!(got, want);
        let total = |count, min, max, sum| ChunkTotal {
            count,
            min,
            max,
            sum,
        };
        assert_eq!(totals[0], total(3, 10, 31, 53));
        assert_eq!(totals[1], total(5, 20, 79, 212));
        assert_eq!(totals[2], total(0, u64::MAX, 0, 0));
        // Bins 1 and 3 of the first chunk; 2 is not there (nor below 1).
        assert_eq!(position(&counts[..2], 3), Some(1));
        assert_eq!(position(&counts[..2], 1), Some(0));
        assert_eq!(position(&counts[..2], 2), None);
        assert_eq!(position(&counts[..2], 0), None);
        assert_eq!(position(&counts[2..4], 7), Some(1));
    }
}
