//! Recycled payload buffers: the ingest side gives each consumed buffer
//! back and receivers take from the pool before allocating, so in steady
//! state no buffer is allocated (nor its memory faulted in) per frame.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

/// A bounded pool of byte buffers, cheap to clone (all clones share it).
#[derive(Clone)]
pub struct BufferPool {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    capacity: usize,
    allocated: Arc<AtomicU64>,
}

impl BufferPool {
    /// A pool keeping at most `max_buffers` idle buffers; new buffers are
    /// allocated with room for `capacity` bytes, and a buffer that grew past
    /// four times that (an unusually large frame) is freed, not kept.
    pub fn new(max_buffers: usize, capacity: usize) -> Self {
        let (tx, rx) = crossbeam_channel::bounded(max_buffers.max(1));
        BufferPool {
            tx,
            rx,
            capacity,
            allocated: Arc::new(AtomicU64::new(0)),
        }
    }

    /// An empty buffer: a recycled one when available, else a new one.
    pub fn take(&self) -> Vec<u8> {
        match self.rx.try_recv() {
            Ok(v) => v,
            Err(_) => {
                self.allocated.fetch_add(1, Ordering::Relaxed);
                Vec::with_capacity(self.capacity)
            }
        }
    }

    /// Returns a buffer for reuse (emptied; freed when the pool is full or
    /// the buffer is oversized).
    pub fn give(&self, mut v: Vec<u8>) {
        if v.capacity() > self.capacity.saturating_mul(4) {
            return;
        }
        v.clear();
        let _ = self.tx.try_send(v);
    }

    /// Buffers allocated so far (taking from an empty pool).
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Idle buffers in the pool.
    pub fn idle(&self) -> usize {
        self.rx.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_circulate_without_new_allocations() {
        let pool = BufferPool::new(4, 1024);
        let a = pool.take();
        let b = pool.take();
        assert_eq!(pool.allocated(), 2);
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        pool.give(a);
        pool.give(b);
        for _ in 0..1000 {
            let mut x = pool.take();
            x.extend_from_slice(&[1; 900]);
            assert!([pa, pb].contains(&x.as_ptr()), "a recycled buffer");
            pool.give(x);
        }
        assert_eq!(pool.allocated(), 2);
    }

    #[test]
    fn a_full_pool_frees_and_an_oversized_buffer_is_not_kept() {
        let pool = BufferPool::new(1, 16);
        pool.give(Vec::with_capacity(16));
        pool.give(Vec::with_capacity(16));
        assert_eq!(pool.idle(), 1);
        let _ = pool.take();
        pool.give(Vec::with_capacity(1 << 20));
        assert_eq!(pool.idle(), 0);
    }
}
