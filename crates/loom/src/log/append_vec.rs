//! An unbounded append-only vector of plain values, built from slabs
//! ([`crate::log::slab`]) so that readers share what is written without
//! copies or locks: the range index's summary logs and the time index's
//! directory.

use std::sync::Arc;

use crate::log::slab::{SlabView, SlabWriter};

/// An unbounded append-only vector built from fixed-size slabs; full slabs
/// are shared with readers as they are, so publishing costs O(1) per slab.
/// Indices never change: [`AppendVec::drop_below`] frees whole slabs at the
/// front (retention), after which their indices read as absent.
///
/// The slab being written starts at [`FIRST_SLAB`] entries and doubles (a
/// copy; readers keep the old memory) until it holds a whole page, so the
/// thousands of per-series vectors of a store with many slow series hold
/// about what they contain, not a page each.
///
/// The list of full slabs is shared with views, so adding a slab while a
/// view holds the list copies it. The indexer publishes a view of every
/// summary log after each batch, so that copy was made on nearly every
/// page: one `Arc` increment per page held (thousands, once a busy
/// source's summaries fill the index budget) and a newly allocated list.
/// So the list is double-buffered: the previous list, once
/// no view holds it, is brought up to date (the few slabs added since) and
/// takes the new slab instead of a copy.
pub(crate) struct AppendVec<T: Copy> {
    full: Arc<Vec<SlabView<T>>>,
    /// The list `full` replaced: reused when no view holds it any more.
    previous: Option<Arc<Vec<SlabView<T>>>>,
    current: SlabWriter<T>,
    page: usize,
    total: usize,
    /// Slabs freed at the front: `full[0]` holds indices from
    /// `first_page * page` on.
    first_page: usize,
    /// Copies `full_mut` made of the slab list.
    #[cfg(test)]
    list_copies: usize,
}

/// A reader's view of an `AppendVec` prefix.
#[derive(Clone)]
pub(crate) struct AppendView<T: Copy> {
    full: Arc<Vec<SlabView<T>>>,
    current: SlabView<T>,
    page: usize,
    len: usize,
    first_page: usize,
}

/// Entries the slab being written starts with.
const FIRST_SLAB: usize = 8;

impl<T: Copy> AppendVec<T> {
    pub(crate) fn new(page: usize) -> Self {
        AppendVec {
            full: Arc::new(Vec::new()),
            previous: None,
            current: SlabWriter::new(FIRST_SLAB.min(page), 1),
            page,
            total: 0,
            first_page: 0,
            #[cfg(test)]
            list_copies: 0,
        }
    }

    /// Entries pushed so far, freed ones included (the next index).
    pub(crate) fn len(&self) -> usize {
        self.total
    }

    pub(crate) fn push(&mut self, value: T) {
        if !self.current.push(value) {
            if self.current.capacity() < self.page {
                self.current
                    .resize((self.current.capacity() * 2).min(self.page));
                self.current.push(value);
                self.total += 1;
                return;
            }
            let first = FIRST_SLAB.min(self.page);
            let done = std::mem::replace(&mut self.current, SlabWriter::new(first, 1));
            self.full_mut().push(done.view());
            self.current.push(value);
        }
        self.total += 1;
    }

    /// Frees the full slabs whose every index is below `n`; readers' views
    /// taken before keep theirs.
    pub(crate) fn drop_below(&mut self, n: usize) {
        let upto = (n / self.page).min(self.first_page + self.full.len());
        if upto > self.first_page {
            let first = self.first_page;
            self.full_mut().drain(..upto - first);
            self.first_page = upto;
            // The previous list still holds the freed slabs: let them go
            // now, not at the next page (a slow series may take hours).
            self.previous = None;
        }
    }

    /// The list of full slabs, to change: `full` itself when no view holds
    /// it, else the previous list brought up to date when no view holds
    /// that (the old `full` becomes the previous), else a copy.
    fn full_mut(&mut self) -> &mut Vec<SlabView<T>> {
        if Arc::get_mut(&mut self.full).is_none() {
            let reused = match self.previous.take() {
                Some(mut list) => Arc::get_mut(&mut list)
                    .map(|v| {
                        // `v` is what `full` was at some earlier point,
                        // short of the slabs added at the end since (none
                        // were freed at the front: `drop_below` clears
                        // `previous`).
                        let have = v.len();
                        v.extend(self.full.iter().skip(have).cloned());
                    })
                    .map(|()| list),
                None => None,
            };
            let next = reused.unwrap_or_else(|| {
                #[cfg(test)]
                {
                    self.list_copies += 1;
                }
                Arc::new(self.full.as_ref().clone())
            });
            let old = std::mem::replace(&mut self.full, next);
            self.previous = Some(old);
        }
        // `full` was just made unique (the views hold the other list).
        Arc::make_mut(&mut self.full)
    }

    /// The entry at `i`, `None` if freed or not pushed.
    pub(crate) fn get(&self, i: usize) -> Option<T> {
        let p = (i / self.page).checked_sub(self.first_page)?;
        let o = i % self.page;
        if p < self.full.len() {
            self.full[p].as_slice().get(o).copied()
        } else if p == self.full.len() {
            self.current.written().get(o).copied()
        } else {
            None
        }
    }

    #[cfg(test)]
    pub(crate) fn last(&self) -> Option<T> {
        self.total.checked_sub(1).and_then(|i| self.get(i))
    }

    /// The first index not freed.
    pub(crate) fn first(&self) -> usize {
        (self.first_page * self.page).min(self.total)
    }

    /// Entries held in memory (not freed).
    pub(crate) fn held(&self) -> usize {
        self.total - self.first()
    }

    pub(crate) fn view(&self) -> AppendView<T> {
        AppendView {
            full: Arc::clone(&self.full),
            current: self.current.view(),
            page: self.page,
            len: self.total,
            first_page: self.first_page,
        }
    }
}

impl<T: Copy> AppendView<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first index not freed.
    pub(crate) fn first(&self) -> usize {
        (self.first_page * self.page).min(self.len)
    }

    pub(crate) fn get(&self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        let p = (i / self.page).checked_sub(self.first_page)?;
        let o = i % self.page;
        if p < self.full.len() {
            self.full[p].as_slice().get(o).copied()
        } else {
            self.current.as_slice().get(o).copied()
        }
    }

    /// Entries `i..i + n` as one slice, `None` when they straddle two slabs
    /// or are not all held.
    pub(crate) fn slice(&self, i: usize, n: usize) -> Option<&[T]> {
        if i.checked_add(n)? > self.len {
            return None;
        }
        let p = (i / self.page).checked_sub(self.first_page)?;
        let o = i % self.page;
        let slab = if p < self.full.len() {
            self.full[p].as_slice()
        } else {
            self.current.as_slice()
        };
        slab.get(o..o.checked_add(n)?)
    }

    /// First index `i` in `[0, len)` for which `pred` is false, assuming
    /// `pred` is true on a prefix and false after it. Freed entries count as
    /// part of that prefix (they are the oldest: retention frees in order).
    pub(crate) fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (self.first(), self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid) {
                Some(v) if pred(&v) => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_vec_spans_pages() {
        let mut a = AppendVec::new(4);
        for i in 0..10u64 {
            a.push(i);
        }
        let v = a.view();
        a.push(10);
        assert_eq!(v.len(), 10);
        assert_eq!(
            (0..10).map(|i| v.get(i).unwrap_or(99)).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        assert_eq!(v.partition_point(|x| *x < 7), 7);
        assert_eq!(a.get(10), Some(10));
        assert_eq!(a.last(), Some(10));
    }

    #[test]
    fn append_vec_first_slab_grows_and_old_views_keep_what_they_saw() {
        let mut a: AppendVec<u64> = AppendVec::new(64);
        assert_eq!(a.current.capacity(), FIRST_SLAB, "starts small");
        let mut views = Vec::new();
        for i in 0..200u64 {
            a.push(i);
            if i % 7 == 0 {
                views.push((i + 1, a.view()));
            }
        }
        for (len, v) in &views {
            assert_eq!(v.len() as u64, *len);
            for i in 0..*len {
                assert_eq!(v.get(i as usize), Some(i));
            }
        }
        assert_eq!(a.get(199), Some(199));
        assert!(a.current.capacity() <= 64);
    }

    #[test]
    fn dropping_slabs_keeps_indices_and_old_views() {
        let mut v: AppendVec<u64> = AppendVec::new(4);
        for i in 0..10 {
            v.push(i);
        }
        let before = v.view();
        v.drop_below(9);
        assert_eq!(v.len(), 10);
        assert_eq!(v.held(), 2, "slabs [0,4) and [4,8) freed, [8,10) kept");
        assert_eq!(v.get(7), None);
        assert_eq!(v.get(8), Some(8));
        let after = v.view();
        assert_eq!(after.first(), 8);
        assert_eq!(after.get(3), None);
        assert_eq!(after.get(9), Some(9));
        assert_eq!(after.partition_point(|&x| x < 5), 8);
        assert_eq!(after.partition_point(|&x| x < 9), 9);
        assert_eq!(
            before.get(3),
            Some(3),
            "a view taken before keeps its slabs"
        );
        assert_eq!(before.partition_point(|&x| x < 5), 5);
        v.drop_below(100);
        assert_eq!(v.held(), 2, "the slab being written is never freed");
        for i in 10..13 {
            v.push(i);
        }
        assert_eq!(v.get(12), Some(12));
        let view = v.view();
        assert_eq!(view.slice(8, 2), Some(&[8u64, 9][..]));
        assert_eq!(view.slice(10, 2), Some(&[10u64, 11][..]));
        assert_eq!(view.slice(11, 2), None, "two slabs");
        assert_eq!(view.slice(12, 1), Some(&[12u64][..]));
        assert_eq!(view.slice(7, 2), None, "freed");
        assert_eq!(view.slice(12, 2), None, "not pushed");
    }

    /// Pushes, views taken and dropped in a seeded random order (as the
    /// indexer publishes and readers let go), and drops at the front:
    /// every view reads exactly what was pushed before it and not freed,
    /// and the writer reads everything not freed.
    #[test]
    fn double_buffered_slab_list_matches_a_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed_51ab);
        let mut a: AppendVec<u64> = AppendVec::new(4);
        let mut views: Vec<(AppendView<u64>, usize, usize)> = Vec::new();
        let mut published = (a.view(), 0, 0);
        let mut freed = 0usize;
        for step in 0..40_000 {
            match rng.gen_range(0..100) {
                0..=49 => a.push(a.len() as u64),
                // The indexer's publish: its last view replaced.
                50..=89 => published = (a.view(), a.len(), freed),
                90 => views.push((a.view(), a.len(), freed)),
                91..=97 => {
                    if !views.is_empty() {
                        let k = rng.gen_range(0..views.len());
                        views.swap_remove(k);
                    }
                }
                _ => {
                    let n = rng.gen_range(0..=a.len());
                    a.drop_below(n);
                    freed = a.view().first();
                }
            }
            if step % 97 == 0 {
                for (v, len, first) in views.iter().chain([&published]) {
                    assert_eq!(v.len(), *len);
                    for i in (*first..*len).step_by(3) {
                        assert_eq!(
                            v.get(i),
                            Some(i as u64),
                            "step {step}: view of {len} at {i}"
                        );
                    }
                }
                for i in freed..a.len() {
                    assert_eq!(a.get(i), Some(i as u64), "step {step}: writer at {i}");
                }
            }
        }
    }

    /// A view published after every push (the indexer's pattern) holds the
    /// slab list at every new page: the two lists take turns instead of a
    /// copy per page.
    #[test]
    fn a_published_view_does_not_copy_the_slab_list_per_page() {
        let mut a: AppendVec<u64> = AppendVec::new(4);
        let mut published = a.view();
        for i in 0..4000u64 {
            a.push(i);
            published = a.view();
        }
        assert_eq!(published.get(3999), Some(3999));
        assert_eq!(published.get(1234), Some(1234));
        assert!(
            a.list_copies <= 1,
            "{} copies of the slab list for 1000 pages",
            a.list_copies
        );
    }
}
