//! Storage: segment-file layout, the catalog of schemas, the segment index
//! files, the directory lock, the flusher thread, reads and recovery.

pub(crate) mod catalog;
pub(crate) mod chunk_cache;
pub(crate) mod flusher;
pub(crate) mod frame;
mod frame_scan;
pub(crate) mod layout;
pub(crate) mod lock;
pub(crate) mod open_chunks;
mod pace;
pub(crate) mod recovery;
pub(crate) mod segment_index;
pub(crate) mod segments;
