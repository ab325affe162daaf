//! Fixed-capacity, single-writer, many-reader append-only storage.
//!
//! The writer appends past the length it has published; readers hold a view
//! (an `Arc` to the storage plus the length published when the view was made)
//! and only read below that length. Both never touch the same bytes, so no
//! lock is needed. Publication to other threads happens through the snapshot
//! swap (release/acquire), which orders the writes before the reads.

use std::alloc::{self, Layout};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

/// Raw storage for `cap` values of `T`, zero-initialised, with a chosen
/// alignment (4096 for blocks so they can be written with `O_DIRECT`).
struct Storage<T: Copy> {
    ptr: NonNull<T>,
    cap: usize,
    layout: Layout,
    _owns: PhantomData<T>,
}

// SAFETY: the storage is plain memory of `Copy` values; access discipline
// (writer beyond the published length, readers below it) is enforced by
// `SlabWriter`/`SlabView`.
unsafe impl<T: Copy + Send> Send for Storage<T> {}
unsafe impl<T: Copy + Sync> Sync for Storage<T> {}

impl<T: Copy> Storage<T> {
    fn new(cap: usize, align: usize) -> Self {
        let size = (cap * std::mem::size_of::<T>()).max(1);
        let align = align.max(std::mem::align_of::<T>());
        let layout = match Layout::from_size_align(size, align) {
            Ok(l) => l,
            Err(_) => panic!("slab layout of {size} bytes aligned {align} is invalid"),
        };
        // SAFETY: layout has non-zero size. Zeroed memory is a valid value for
        // the plain-old-data types stored here (bytes and index entries).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = match NonNull::new(raw as *mut T) {
            Some(p) => p,
            None => alloc::handle_alloc_error(layout),
        };
        Storage {
            ptr,
            cap,
            layout,
            _owns: PhantomData,
        }
    }
}

impl<T: Copy> Drop for Storage<T> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr() as *mut u8, self.layout) }
    }
}

/// The single writer of a slab. Not `Clone`: there is exactly one.
pub(crate) struct SlabWriter<T: Copy> {
    storage: Arc<Storage<T>>,
    len: usize,
    align: usize,
    /// Memory given up by [`Self::reset_double_buffered`] while views held it.
    spare: Option<Arc<Storage<T>>>,
}

/// A reader's view of a slab's published prefix.
pub(crate) struct SlabView<T: Copy> {
    storage: Arc<Storage<T>>,
    len: usize,
}

impl<T: Copy> Clone for SlabView<T> {
    fn clone(&self) -> Self {
        SlabView {
            storage: Arc::clone(&self.storage),
            len: self.len,
        }
    }
}

impl<T: Copy> SlabWriter<T> {
    /// A new, empty slab able to hold `cap` values.
    pub(crate) fn new(cap: usize, align: usize) -> Self {
        SlabWriter {
            storage: Arc::new(Storage::new(cap, align)),
            len: 0,
            align,
            spare: None,
        }
    }

    /// True when no view holds the memory (a reset reuses it).
    pub(crate) fn is_unique(&mut self) -> bool {
        Arc::get_mut(&mut self.storage).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn capacity(&self) -> usize {
        self.storage.cap
    }

    pub(crate) fn remaining(&self) -> usize {
        self.storage.cap - self.len
    }

    /// The written prefix, for the writer's own reads.
    pub(crate) fn written(&self) -> &[T] {
        // SAFETY: `[0, len)` was initialised by the writer and is never
        // written again while views may exist.
        unsafe { std::slice::from_raw_parts(self.storage.ptr.as_ptr(), self.len) }
    }

    /// The unwritten tail `[len, cap)`, for the writer to fill before `advance`.
    pub(crate) fn spare_mut(&mut self) -> &mut [T] {
        // SAFETY: no view covers indices >= len (views are made from `len`),
        // and `&mut self` makes this the only live mutable borrow.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.storage.ptr.as_ptr().add(self.len),
                self.storage.cap - self.len,
            )
        }
    }

    /// Marks `n` more values of the spare tail as written.
    pub(crate) fn advance(&mut self, n: usize) {
        debug_assert!(n <= self.remaining());
        self.len = (self.len + n).min(self.storage.cap);
    }

    /// Appends one value; returns false when full.
    pub(crate) fn push(&mut self, value: T) -> bool {
        if self.len == self.storage.cap {
            return false;
        }
        self.spare_mut()[0] = value;
        self.len += 1;
        true
    }

    /// A view of everything written so far.
    pub(crate) fn view(&self) -> SlabView<T> {
        SlabView {
            storage: Arc::clone(&self.storage),
            len: self.len,
        }
    }

    /// A view covering `[0, to)`, past what was written, for a flush that
    /// pads to an I/O boundary.
    ///
    /// # Safety
    /// The caller must not write `[len, to)` while the returned view is alive.
    pub(crate) unsafe fn padded_view(&self, to: usize) -> SlabView<T> {
        SlabView {
            storage: Arc::clone(&self.storage),
            len: to.min(self.storage.cap),
        }
    }

    /// Moves what was written into new memory of `cap` values (at least
    /// the written length): a buffer that grows (or shrinks) as its
    /// source's rate asks. Views keep the old memory as it was; the spare
    /// of [`Self::reset_double_buffered`] is dropped (wrong size).
    pub(crate) fn resize(&mut self, cap: usize) {
        let cap = cap.max(self.len);
        let storage = Storage::new(cap, self.align);
        // SAFETY: `[0, len)` of the old storage is initialised and fits in
        // the new one (cap >= len); the two allocations are distinct.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.storage.ptr.as_ptr(),
                storage.ptr.as_ptr(),
                self.len,
            );
        }
        self.storage = Arc::new(storage);
        self.spare = None;
    }

    /// Empties the slab into new memory of `cap` values; views keep the
    /// old memory, which is freed with the last of them.
    pub(crate) fn reset_to(&mut self, cap: usize) {
        self.storage = Arc::new(Storage::new(cap, self.align));
        self.spare = None;
        self.len = 0;
    }

    /// Empties the slab. The memory is reused when no view holds it any more;
    /// otherwise fresh memory is allocated and the old one lives on for the
    /// readers that still hold views.
    pub(crate) fn reset(&mut self) {
        if Arc::get_mut(&mut self.storage).is_none() {
            self.storage = Arc::new(Storage::new(self.storage.cap, self.align));
        }
        self.len = 0;
    }

    /// Empties the slab like [`Self::reset`], but when views still hold the
    /// memory, switches to the memory given up by the previous such reset
    /// if no view holds that any more (the usual case: readers see a new
    /// snapshot every few ms), and keeps the current memory as the next
    /// spare. A slab reset about once per publish then alternates between
    /// two allocations instead of allocating (and faulting in) new memory
    /// each time.
    pub(crate) fn reset_double_buffered(&mut self) {
        if Arc::get_mut(&mut self.storage).is_none() {
            // `get_mut` (not a count) so the readers' last reads happen
            // before our writes.
            // A spare still viewed lives on with its readers.
            let next = match self
                .spare
                .take()
                .map(|mut s| (Arc::get_mut(&mut s).is_some(), s))
            {
                Some((true, s)) => s,
                _ => Arc::new(Storage::new(self.storage.cap, self.align)),
            };
            self.spare = Some(std::mem::replace(&mut self.storage, next));
        }
        self.len = 0;
    }
}

impl<T: Copy> SlabView<T> {
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `[0, len)` was fully written before this view was made and is
        // never written again while the view's `Arc` is alive (`reset`
        // reallocates unless the writer holds the only reference).
        unsafe { std::slice::from_raw_parts(self.storage.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_keep_their_prefix_across_reset() {
        let mut w: SlabWriter<u8> = SlabWriter::new(16, 4096);
        w.spare_mut()[..3].copy_from_slice(b"abc");
        w.advance(3);
        let v = w.view();
        w.reset();
        w.spare_mut()[..3].copy_from_slice(b"xyz");
        w.advance(3);
        assert_eq!(v.as_slice(), b"abc");
        assert_eq!(w.written(), b"xyz");
    }

    #[test]
    fn double_buffered_reset_keeps_views_and_alternates_two_allocations() {
        let mut w: SlabWriter<u8> = SlabWriter::new(16, 4096);
        let first = w.storage.ptr;
        let mut seen = vec![first];
        for round in 0..10u8 {
            w.spare_mut()[0] = round;
            w.advance(1);
            // A published view holds the memory across the reset ...
            let v = w.view();
            w.reset_double_buffered();
            w.spare_mut()[0] = 100 + round;
            w.advance(1);
            assert_eq!(v.as_slice(), [round], "a view keeps what it saw");
            assert_eq!(w.written(), [100 + round]);
            if !seen.contains(&w.storage.ptr) {
                seen.push(w.storage.ptr);
            }
            // ... until the next publish replaces it.
            drop(v);
            w.reset_double_buffered();
        }
        assert_eq!(seen.len(), 2, "two allocations take turns");
        // Without views a reset reuses the memory in place.
        let p = w.storage.ptr;
        w.reset_double_buffered();
        assert_eq!(w.storage.ptr, p);
    }

    #[test]
    fn resize_keeps_what_was_written_and_old_views() {
        let mut w: SlabWriter<u8> = SlabWriter::new(4, 8);
        w.spare_mut()[..3].copy_from_slice(b"abc");
        w.advance(3);
        let v = w.view();
        w.resize(16);
        assert_eq!((w.capacity(), w.written()), (16, &b"abc"[..]));
        w.spare_mut()[..2].copy_from_slice(b"de");
        w.advance(2);
        assert_eq!(w.written(), b"abcde");
        assert_eq!(v.as_slice(), b"abc", "a view keeps the old memory");
        w.resize(1);
        assert_eq!(
            (w.capacity(), w.written()),
            (5, &b"abcde"[..]),
            "never below the written length"
        );
        w.reset_to(2);
        assert_eq!((w.capacity(), w.len()), (2, 0));
        assert_eq!(v.as_slice(), b"abc");
    }
}
