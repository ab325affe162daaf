//! Storage: segment-file layout, the flusher thread, reads and recovery.

pub(crate) mod flusher;
pub(crate) mod layout;
pub(crate) mod recovery;
pub(crate) mod segments;
