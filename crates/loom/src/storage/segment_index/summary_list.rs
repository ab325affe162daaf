//! Encoding of a segment index entry's fields and summary lists (see the
//! layout in the parent module).

use crate::bin_summary::BinSummary;
use crate::log::record::{get_varint, put_varint};

pub(super) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(super) fn put_var(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 10];
    let n = put_varint(&mut b, v);
    out.extend_from_slice(&b[..n]);
}

/// Writes a summary list, with each summary's per-value counts (entries
/// of the types that carry them).
pub(super) fn encode_summaries(out: &mut Vec<u8>, bins: &[BinSummary]) {
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
        put_var(out, b.fine);
    }
}

pub(super) struct Cursor<'a> {
    pub b: &'a [u8],
    pub pos: usize,
}

impl Cursor<'_> {
    pub(super) fn u64(&mut self) -> Result<u64, String> {
        let s = self
            .b
            .get(self.pos..self.pos + 8)
            .ok_or("entry ends inside a number")?;
        self.pos += 8;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }

    pub(super) fn u32(&mut self) -> Result<u32, String> {
        let s = self
            .b
            .get(self.pos..self.pos + 4)
            .ok_or("entry ends inside a number")?;
        self.pos += 4;
        let mut a = [0u8; 4];
        a.copy_from_slice(s);
        Ok(u32::from_le_bytes(a))
    }

    pub(super) fn u8(&mut self) -> Result<u8, String> {
        let v = *self.b.get(self.pos).ok_or("entry ends early")?;
        self.pos += 1;
        Ok(v)
    }

    pub(super) fn var(&mut self) -> Result<u64, String> {
        get_varint(self.b, &mut self.pos).ok_or_else(|| "bad varint".to_string())
    }

    /// A summary list; `fine`: its summaries carry per-value counts (the
    /// entry types of format 3).
    pub(super) fn summaries(&mut self, fine: bool) -> Result<Vec<BinSummary>, String> {
        let mut out = Vec::new();
        self.summaries_into(&mut out, fine)?;
        Ok(out)
    }

    /// Appends a summary list to `out` (see [`Self::summaries`]); returns
    /// how many.
    pub(super) fn summaries_into(
        &mut self,
        out: &mut Vec<BinSummary>,
        fine: bool,
    ) -> Result<usize, String> {
        let n = self.var()?;
        if n > (self.b.len().saturating_sub(self.pos)) as u64 {
            return Err(format!("{n} summaries cannot fit in the entry"));
        }
        out.reserve(n as usize);
        let mut bin = 0u32;
        for _ in 0..n {
            let delta = u32::try_from(self.var()?).map_err(|_| "bin delta too large")?;
            bin = bin.checked_add(delta).ok_or("bin number overflows")?;
            let count = u32::try_from(self.var()?).map_err(|_| "bin count too large")?;
            let min = self.var()?;
            let max = min.checked_add(self.var()?).ok_or("bin max overflows")?;
            let lo = self.var()?;
            let hi = self.var()?;
            let fine = if fine { self.var()? } else { 0 };
            out.push(BinSummary {
                bin,
                count,
                min,
                max,
                sum: u128::from(lo) | (u128::from(hi) << 64),
                fine,
            });
        }
        Ok(n as usize)
    }
}
