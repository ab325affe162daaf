//! The values of the bin holding a rank, gathered to pick the rank's
//! value among them. For a narrow bin (`interval` ≤ 16, see
//! [`FineLayout`]) they are counted per value, not kept one by one: a
//! p99's bin over a 5 s bucket of P3 reads holds ~11 000 values, and
//! pushing and selecting them was a fifth of a dashboard panel's time
//! once no chunk had to be decoded for them.

use crate::bin_summary::{FineLayout, FINE_MAX_INTERVAL};
use crate::error::{Error, Result};

/// A bin's values: counted per value, or listed.
pub(crate) enum BinValues {
    Counted {
        lo: u64,
        counts: [u64; FINE_MAX_INTERVAL as usize],
        /// A value outside `lo..lo + 16` was met (a damaged store).
        outside: bool,
    },
    Listed(Vec<u64>),
}

impl BinValues {
    /// Room for the values of bin `bin`, about `n` of them: counted when
    /// the layout is narrow and the bin regular.
    pub(crate) fn new(layout: Option<&FineLayout>, bin: u32, n: u64) -> Self {
        match layout.and_then(|l| l.bin_lo(bin)) {
            Some(lo) => BinValues::Counted {
                lo,
                counts: [0; FINE_MAX_INTERVAL as usize],
                outside: false,
            },
            None => BinValues::Listed(Vec::with_capacity(n as usize)),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, v: u64) {
        match self {
            BinValues::Counted {
                lo,
                counts,
                outside,
            } => match v.checked_sub(*lo).and_then(|k| counts.get_mut(k as usize)) {
                Some(c) => *c += 1,
                None => *outside = true,
            },
            BinValues::Listed(values) => values.push(v),
        }
    }

    /// Adds `add[k]` values `lo + k` for each `k` (a summary's per-value
    /// counts).
    pub(crate) fn add_counts(&mut self, lo: u64, add: &[u64; FINE_MAX_INTERVAL as usize]) {
        match self {
            BinValues::Counted {
                lo: mine, counts, ..
            } if *mine == lo => {
                for (c, a) in counts.iter_mut().zip(add) {
                    *c += a;
                }
            }
            _ => {
                for (k, &a) in add.iter().enumerate() {
                    for _ in 0..a {
                        self.push(lo + k as u64);
                    }
                }
            }
        }
    }

    /// The `r`-th smallest (1-based) value of the bin (`target` names it
    /// in errors).
    pub(crate) fn select(self, r: u64, target: u32) -> Result<u64> {
        let wrong = |held: u64| {
            Error::corrupted(
                0,
                format!("bin {target} holds {held} values, rank {r} wanted"),
            )
        };
        match self {
            BinValues::Counted {
                lo,
                counts,
                outside,
            } => {
                if outside {
                    return Err(Error::corrupted(
                        0,
                        format!("a value outside bin {target} was read for it"),
                    ));
                }
                let mut before = 0u64;
                for (k, &c) in counts.iter().enumerate() {
                    if r > before && r <= before + c {
                        return Ok(lo + k as u64);
                    }
                    before += c;
                }
                Err(wrong(before))
            }
            BinValues::Listed(mut values) => {
                let held = values.len() as u64;
                if r == 0 || r > held {
                    return Err(wrong(held));
                }
                let (_, v, _) = values.select_nth_unstable((r - 1) as usize);
                Ok(*v)
            }
        }
    }
}
