//! A source's declared range index: where each record's value comes from and
//! how values map to bins.

use crate::bin_summary::FineLayout;
use crate::index::bins::Bins;
use crate::schema::{read_raw, SourceSchema};
use crate::source::{Extractor, RangeIndexSpec};

/// Where the indexed value of a record comes from.
#[derive(Clone, Copy)]
pub(crate) enum ValueOf {
    /// A Rust function given by a library user. Its summaries are not
    /// persisted: another process cannot know it computes the same values.
    Extractor(Extractor),
    /// A declared field: an unsigned integer of `width` bytes at `offset`.
    Field { offset: usize, width: usize },
}

/// A declared range index with its precomputed bin mapping.
pub(crate) struct IndexState {
    pub value_of: ValueOf,
    pub bins: Bins,
    pub min: u64,
    pub interval: u64,
    pub n_bins: u32,
    /// Per-value counts in the summaries, for narrow bins.
    pub fine: Option<FineLayout>,
}

impl IndexState {
    /// An index of values taken by `value_of` into `n_bins` bins of width
    /// `interval` from `min` (the bin mapping and the per-value count
    /// layout are derived here once, for both kinds of index).
    fn new(value_of: ValueOf, min: u64, interval: u64, n_bins: u32) -> Self {
        IndexState {
            value_of,
            bins: Bins::new(min, interval, n_bins),
            min,
            interval,
            n_bins,
            fine: FineLayout::new(min, interval, n_bins),
        }
    }

    pub(crate) fn from_spec(spec: RangeIndexSpec) -> Self {
        let value_of = ValueOf::Extractor(spec.extractor);
        IndexState::new(value_of, spec.min, spec.interval, spec.n_bins)
    }

    /// The index a (validated) schema declares, `None` if it declares none.
    pub(crate) fn from_schema(schema: &SourceSchema) -> Option<Self> {
        let ix = schema.index.as_ref()?;
        let f = schema.field(&ix.field)?;
        let value_of = ValueOf::Field {
            offset: f.offset as usize,
            width: f.ty.width(),
        };
        Some(IndexState::new(value_of, ix.min, ix.interval, ix.n_bins))
    }

    /// Whether summaries built with this index can be written to disk and
    /// trusted by another process (declared fields only).
    pub(crate) fn persistable(&self) -> bool {
        matches!(self.value_of, ValueOf::Field { .. })
    }

    pub(crate) fn same_bins(&self, min: u64, interval: u64, n_bins: u32) -> bool {
        self.min == min && self.interval == interval && self.n_bins == n_bins
    }

    /// The indexed value of a record; 0 for a record too short to hold it.
    #[inline]
    pub(crate) fn value(&self, bytes: &[u8]) -> u64 {
        match self.value_of {
            ValueOf::Extractor(f) => f(bytes),
            ValueOf::Field { offset, width } => read_raw(bytes, offset, width).unwrap_or(0),
        }
    }
}
