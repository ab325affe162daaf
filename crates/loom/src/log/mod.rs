//! The log: chunks of encoded records inside shared append-only memory.

pub(crate) mod append_vec;
pub(crate) mod chunk;
pub(crate) mod codec;
pub(crate) mod record;
pub(crate) mod slab;
