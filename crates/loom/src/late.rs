//! Late siblings: where records older than their series' newest stored
//! record go, so that each is stored at its own time.
//!
//! The engine takes each source in time order. A series' record that
//! arrives after a newer one was stored (later than an app's reorder
//! window) goes to a *late sibling*: a source with the same schema (so the
//! same measurement and tags) whose id is derived from the series' id and
//! a generation number `1..=MAX_LATE_GENERATIONS`. Every query that
//! matches series by measurement and tags (all of InfluxQL: series
//! matching, `GROUP BY` tag values, raw rows merged by time, percentiles
//! over several series) therefore includes a sibling's records without
//! code of its own. The generation is not stored anywhere else: a sibling
//! is recognised in a catalog by its id being a sibling id of another
//! source with the same schema ([`late_siblings`]), so listings and series
//! limits can count a tag set once.

use std::collections::HashMap;

use crate::schema::SourceSchema;
use crate::source::SourceId;

/// Late siblings a series may have. A late record that fits none of them
/// (older than every sibling's newest record while all exist) is refused
/// by the app and counted; in practice late records of a series arrive
/// roughly in time order, so one or two generations take them all.
pub const MAX_LATE_GENERATIONS: u32 = 8;

/// The id of `base`'s late sibling of `generation` (1-based): a fixed
/// mix of both, so every process finds the same siblings.
pub fn late_sibling_id(base: SourceId, generation: u32) -> SourceId {
    // splitmix64's finaliser over the base id and the generation, so a
    // sibling id looks like any other hashed source id (collisions with
    // other series are as unlikely as between any two hashed ids).
    let mut z = base.0 ^ u64::from(generation).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ LATE_SALT;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    SourceId(z ^ (z >> 31))
}

/// Keeps sibling ids apart from ids a caller might derive the same way.
const LATE_SALT: u64 = 0x6c61_7465_5f73_6962; // "late_sib"

/// Every late sibling among `schemas` (a catalog's sources): sibling id →
/// (its series' id, generation). A source is a sibling when its id is a
/// sibling id of another source of the same schema.
pub fn late_siblings<'a>(
    schemas: impl IntoIterator<Item = (SourceId, &'a SourceSchema)>,
) -> HashMap<SourceId, (SourceId, u32)> {
    let all: HashMap<SourceId, &SourceSchema> = schemas.into_iter().collect();
    let mut out = HashMap::new();
    for (&id, &schema) in &all {
        for g in 1..=MAX_LATE_GENERATIONS {
            let sib = late_sibling_id(id, g);
            if all.get(&sib).is_some_and(|s| *s == schema) {
                out.insert(sib, (id, g));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(m: &str) -> SourceSchema {
        SourceSchema {
            measurement: m.into(),
            tags: vec![("op".into(), "read".into())],
            fields: vec![],
            index: None,
        }
    }

    #[test]
    fn siblings_are_found_by_id_and_schema() {
        let (a, b) = (schema("kv"), schema("other"));
        let base = SourceId(42);
        let s1 = late_sibling_id(base, 1);
        let s2 = late_sibling_id(base, 2);
        assert_ne!(s1, s2);
        assert_ne!(s1, base);
        // A sibling id with another schema is not a sibling.
        let odd = late_sibling_id(SourceId(7), 1);
        let found = late_siblings([(base, &a), (s1, &a), (s2, &a), (SourceId(7), &a), (odd, &b)]);
        assert_eq!(found.len(), 2);
        assert_eq!(found[&s1], (base, 1));
        assert_eq!(found[&s2], (base, 2));
    }
}
