//! The ingest thread's map from a record's source to its declared engine
//! source, resolved once per (kind, sub-key): KV reads and writes, page-cache
//! events and packets sit in fixed slots and syscalls in a dense table by
//! number, so a push costs an array index, not a hash. Sources known only by
//! id (large syscall numbers, other ingest paths) use an FxHash map.

use rustc_hash::FxHashMap;
use telemetry::raw::SourceKey;

/// Syscall numbers below this get a dense slot (x86_64 has about 460).
const DENSE_SYSCALLS: u32 = 1024;
const NONE: u32 = u32::MAX;

/// Declared sources (whatever the ingest thread keeps of each: `T`) by key
/// and by id.
pub struct SourceTable<T> {
    sources: Vec<T>,
    kv: [u32; 2],
    page_cache: u32,
    packet: u32,
    blockio: [u32; 5],
    runqueue: u32,
    syscall: Vec<u32>,
    by_id: FxHashMap<u64, u32>,
}

impl<T> Default for SourceTable<T> {
    fn default() -> Self {
        SourceTable {
            sources: Vec::new(),
            kv: [NONE; 2],
            page_cache: NONE,
            packet: NONE,
            blockio: [NONE; 5],
            runqueue: NONE,
            syscall: vec![NONE; DENSE_SYSCALLS as usize],
            by_id: FxHashMap::default(),
        }
    }
}

impl<T> SourceTable<T> {
    fn key_slot(&self, key: SourceKey) -> u32 {
        match key {
            SourceKey::Kv(write) => self.kv[usize::from(write)],
            SourceKey::Syscall(nr) => self.syscall.get(nr as usize).copied().unwrap_or(NONE),
            SourceKey::PageCache => self.page_cache,
            SourceKey::Packet => self.packet,
            SourceKey::BlockIo(op) => self.blockio.get(usize::from(op)).copied().unwrap_or(NONE),
            SourceKey::RunQueue => self.runqueue,
            // Rare (one per agent interval): found by id.
            SourceKey::AgentStat(..) => NONE,
        }
    }

    /// The slot of the source with `key`, if declared and keyed.
    #[inline]
    pub fn lookup(&self, key: SourceKey) -> Option<usize> {
        match self.key_slot(key) {
            NONE => None,
            i => Some(i as usize),
        }
    }

    /// The slot of the source with `id`, if declared.
    pub fn lookup_id(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).map(|&i| i as usize)
    }

    /// Adds a declared source with `id` (and `key`, when it has one that
    /// gets a fixed or dense slot); returns its slot.
    pub fn insert(&mut self, id: u64, key: Option<SourceKey>, d: T) -> usize {
        let i = match self.by_id.get(&id) {
            Some(&i) => i,
            None => {
                let i = self.sources.len() as u32;
                self.sources.push(d);
                self.by_id.insert(id, i);
                i
            }
        };
        if let Some(key) = key {
            self.bind(key, i as usize);
        }
        i as usize
    }

    /// Makes `key` find the source in `slot` without hashing (for a source
    /// first declared by id).
    pub fn bind(&mut self, key: SourceKey, slot: usize) {
        let i = slot as u32;
        match key {
            SourceKey::Kv(write) => self.kv[usize::from(write)] = i,
            SourceKey::Syscall(nr) => {
                if let Some(s) = self.syscall.get_mut(nr as usize) {
                    *s = i;
                }
            }
            SourceKey::PageCache => self.page_cache = i,
            SourceKey::Packet => self.packet = i,
            SourceKey::BlockIo(op) => {
                if let Some(s) = self.blockio.get_mut(usize::from(op)) {
                    *s = i;
                }
            }
            SourceKey::RunQueue => self.runqueue = i,
            SourceKey::AgentStat(..) => {}
        }
    }

    /// The source in `slot` (a slot this table returned).
    #[inline]
    pub fn get_mut(&mut self, slot: usize) -> Option<&mut T> {
        self.sources.get_mut(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_ids_find_the_same_slot() {
        let mut t = SourceTable::<u32>::default();
        let keys = [
            SourceKey::Kv(false),
            SourceKey::Kv(true),
            SourceKey::Syscall(17),
            SourceKey::Syscall(0),
            SourceKey::Syscall(DENSE_SYSCALLS - 1),
            SourceKey::Syscall(DENSE_SYSCALLS),
            SourceKey::Syscall(u32::MAX),
            SourceKey::PageCache,
            SourceKey::Packet,
            SourceKey::BlockIo(0),
            SourceKey::BlockIo(4),
            SourceKey::RunQueue,
            SourceKey::AgentStat(1, 2),
        ];
        for k in keys {
            assert_eq!(t.lookup(k), None);
        }
        let slots: Vec<usize> = keys
            .iter()
            .enumerate()
            .map(|(n, &k)| t.insert(k.id(), Some(k), n as u32))
            .collect();
        for (n, (&k, &slot)) in keys.iter().zip(&slots).enumerate() {
            assert_eq!(t.lookup_id(k.id()), Some(slot));
            let dense = !matches!(k, SourceKey::Syscall(nr) if nr >= DENSE_SYSCALLS)
                && !matches!(k, SourceKey::AgentStat(..));
            assert_eq!(t.lookup(k), dense.then_some(slot), "{k:?}");
            assert_eq!(t.get_mut(slot).copied(), Some(n as u32));
        }
        // A source declared by id alone is found by key once bound.
        let mut t = SourceTable::<u32>::default();
        let slot = t.insert(SourceKey::PageCache.id(), None, 7);
        assert_eq!(t.lookup(SourceKey::PageCache), None);
        t.bind(SourceKey::PageCache, slot);
        assert_eq!(t.lookup(SourceKey::PageCache), Some(slot));
        let mut t = SourceTable::<u32>::default();
        let slots: Vec<usize> = keys.iter().map(|&k| t.insert(k.id(), Some(k), 0)).collect();
        // Inserting a known id again keeps its slot.
        assert_eq!(t.insert(keys[2].id(), Some(keys[2]), 99), slots[2]);
    }
}
