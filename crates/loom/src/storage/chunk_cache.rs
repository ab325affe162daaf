//! Chunks read from segment files, kept for the next query that needs them.
//!
//! A query over many series reads the two edge chunks of every series (the
//! chunks the window cuts), a statement's percentile reads again those
//! holding its bin, and the next statement over a similar window reads
//! them again; each read from disk costs a `pread`, a frame checksum,
//! decompression and the chunk's own checksum (about 60–100 µs for a
//! 64 KiB chunk here). A chunk at a log address never changes while a
//! store is open (addresses are written once; retention only removes), so
//! verified chunks are kept by address, oldest out first, within a byte
//! budget (`Config::chunk_cache_bytes`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Verified chunks by log address, first in first out within a budget.
pub(crate) struct ChunkCache {
    budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    chunks: HashMap<u64, Arc<Vec<u8>>>,
    order: VecDeque<u64>,
    bytes: usize,
}

impl ChunkCache {
    pub(crate) fn new(budget: usize) -> Self {
        ChunkCache {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn get(&self, addr: u64) -> Option<Arc<Vec<u8>>> {
        if self.budget == 0 {
            return None;
        }
        self.lock().chunks.get(&addr).cloned()
    }

    /// Keeps `chunk` (verified) for `addr`, dropping the oldest as needed.
    pub(crate) fn put(&self, addr: u64, chunk: Arc<Vec<u8>>) {
        if chunk.len() > self.budget {
            return;
        }
        let mut g = self.lock();
        if g.chunks.contains_key(&addr) {
            return;
        }
        g.bytes += chunk.len();
        g.chunks.insert(addr, chunk);
        g.order.push_back(addr);
        while g.bytes > self.budget {
            let Some(old) = g.order.pop_front() else {
                break;
            };
            if let Some(c) = g.chunks.remove(&old) {
                g.bytes -= c.len();
            }
        }
    }

    /// Drops the chunks below log address `addr` (retention removed them).
    pub(crate) fn forget_below(&self, addr: u64) {
        let mut g = self.lock();
        let before = g.chunks.len();
        g.chunks.retain(|&a, _| a >= addr);
        if g.chunks.len() != before {
            g.order.retain(|&a| a >= addr);
            g.bytes = g.chunks.values().map(|c| c.len()).sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_within_budget_oldest_out_first() {
        let c = ChunkCache::new(10);
        c.put(1, Arc::new(vec![1u8; 4]));
        c.put(2, Arc::new(vec![2u8; 4]));
        assert_eq!(c.get(1).as_deref().map(Vec::as_slice), Some(&[1u8; 4][..]));
        c.put(3, Arc::new(vec![3u8; 4]));
        assert!(c.get(1).is_none(), "the oldest went");
        assert!(c.get(2).is_some() && c.get(3).is_some());
        c.put(4, Arc::new(vec![4u8; 11]));
        assert!(c.get(4).is_none(), "larger than the budget: not kept");
        c.forget_below(3);
        assert!(c.get(2).is_none() && c.get(3).is_some());
        assert!(ChunkCache::new(0).get(3).is_none());
    }
}
