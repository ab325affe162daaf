//! Indexes: value bins and the per-source chunk directory.

pub(crate) mod bins;
pub(crate) mod directory;
