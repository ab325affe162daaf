//! The range index's record of one chunk's records in one value bin. The
//! indexer and recovery build them, segment index files persist them and
//! snapshots read them, so the type sits below both `index` and `storage`
//! (which uses it without depending on the indexer).

/// Summary of the records of one chunk that fall in one bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinSummary {
    pub bin: u32,
    pub count: u32,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
}

impl Default for BinSummary {
    fn default() -> Self {
        BinSummary {
            bin: 0,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

impl BinSummary {
    #[inline(always)]
    pub(crate) fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}
