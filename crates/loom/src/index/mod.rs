//! Indexes: value bins, the per-source chunk directory (time index) and the
//! indexer thread that builds range-index summaries.

pub(crate) mod bins;
pub(crate) mod compact;
pub(crate) mod directory;
pub(crate) mod index_files;
pub(crate) mod indexer;
pub(crate) mod paged;
pub(crate) mod state;
pub(crate) mod summaries;
pub(crate) mod summariser;
