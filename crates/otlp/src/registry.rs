//! The OTLP series a store holds: their ids, schemas, the cardinality
//! limit, and the rule that one measurement has one record layout.
//!
//! A series id is the FNV-1a hash (see `telemetry::source`) of `otlp`, the
//! measurement and the sorted tags, each prefixed by its length, so no two
//! different key sets share an encoding; the eBPF sources' ids hash other
//! strings. The registry starts from the store's catalog: a source whose id
//! is the OTLP id of its own measurement and tags is an OTLP series (counted
//! toward the limit), any other source's measurement is off limits to OTLP
//! (see [`crate::model::RESERVED`] for those reserved in any store).
//!
//! Shared by every request handler: admitting a known series takes a read
//! lock; a new one takes the write lock once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use endpoint::SeriesLimit;
use loom::{FieldDef, SourceSchema};

/// Series id of `measurement` with `tags` (sorted by key).
pub fn series_id(measurement: &str, tags: &[(&str, &str)]) -> u64 {
    let mut h = Fnv::default();
    h.part(b"otlp");
    h.part(measurement.as_bytes());
    for (k, v) in tags {
        h.part(k.as_bytes());
        h.part(v.as_bytes());
    }
    h.0
}

struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn part(&mut self, b: &[u8]) {
        self.bytes(&(b.len() as u32).to_le_bytes());
        self.bytes(b);
    }
}

/// Why a point's series was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The store already holds the limit's number of OTLP series.
    Cardinality {
        /// The limit.
        limit: usize,
        /// The refused series, for the error message.
        series: String,
    },
    /// The measurement belongs to the eBPF telemetry or another signal.
    Reserved(String),
    /// The measurement's series have another record layout (a metric that
    /// changed its type, e.g. from gauge to histogram).
    Layout(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Cardinality { limit, series } => write!(
                f,
                "series limit of {limit} reached (--max-series): new series {series} refused"
            ),
            Refusal::Reserved(m) => write!(
                f,
                "measurement {m:?} is reserved for other data (Loom's telemetry or another OTLP signal)"
            ),
            Refusal::Layout(m) => write!(
                f,
                "measurement {m:?} already holds points of another type (a metric cannot change its type)"
            ),
        }
    }
}

#[derive(Default)]
struct State {
    series: HashMap<u64, Arc<SourceSchema>>,
    layouts: HashMap<String, Vec<FieldDef>>,
    reserved: HashSet<String>,
}

/// Admitted OTLP series and the limit on their number.
pub struct Registry {
    limit: Arc<SeriesLimit>,
    state: RwLock<State>,
}

impl Registry {
    /// A registry of its own holding at most `limit` series, starting from
    /// the store's catalog `existing` (its OTLP series count toward the limit).
    pub fn new<'a>(
        limit: usize,
        existing: impl IntoIterator<Item = (u64, &'a SourceSchema)>,
    ) -> Self {
        let limit = Arc::new(SeriesLimit::new(limit as u64));
        let reg = Registry::with_limit(limit.clone(), existing);
        limit.count_existing(reg.len() as u64);
        reg
    }

    /// A registry drawing new series from the shared `limit` (which the
    /// caller has charged with every series of the store), starting from
    /// the store's catalog `existing`.
    pub fn with_limit<'a>(
        limit: Arc<SeriesLimit>,
        existing: impl IntoIterator<Item = (u64, &'a SourceSchema)>,
    ) -> Self {
        let mut st = State::default();
        for (id, s) in existing {
            let tags: Vec<(&str, &str)> = s
                .tags
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            if series_id(&s.measurement, &tags) == id {
                st.layouts
                    .entry(s.measurement.clone())
                    .or_insert_with(|| s.fields.clone());
                st.series.insert(id, Arc::new(s.clone()));
            } else {
                st.reserved.insert(s.measurement.clone());
            }
        }
        Registry {
            limit,
            state: RwLock::new(st),
        }
    }

    /// The series' id for a record laid out as `layout`, admitting the
    /// series (with the schema `make` builds) when it is new and the limit
    /// and layout rules allow. A known series is refused a record of
    /// another layout (a metric that changed its type), which would
    /// otherwise be stored under the series' fields and read back wrong.
    pub fn admit(
        &self,
        measurement: &str,
        tags: &[(&str, &str)],
        layout: &[FieldDef],
        make: impl FnOnce() -> SourceSchema,
    ) -> Result<u64, Refusal> {
        let id = series_id(measurement, tags);
        // A known series takes records of its own layout only; a 64-bit
        // hash collision between two key sets is refused too rather than
        // mixing their records.
        let known = |s: &SourceSchema| {
            if same_key(s, measurement, tags) && same_fields(&s.fields, layout) {
                Ok(id)
            } else {
                Err(Refusal::Layout(measurement.to_string()))
            }
        };
        {
            let st = self.state.read().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = st.series.get(&id) {
                return known(s);
            }
        }
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = st.series.get(&id) {
            return known(s);
        }
        if st.reserved.contains(measurement) {
            return Err(Refusal::Reserved(measurement.to_string()));
        }
        let schema = make();
        if matches!(st.layouts.get(measurement), Some(fields) if *fields != schema.fields) {
            return Err(Refusal::Layout(measurement.to_string()));
        }
        if !self.limit.try_take() {
            return Err(Refusal::Cardinality {
                limit: self.limit.max() as usize,
                series: describe(measurement, tags),
            });
        }
        st.layouts
            .entry(measurement.to_string())
            .or_insert_with(|| schema.fields.clone());
        st.series.insert(id, Arc::new(schema));
        Ok(id)
    }

    /// The record layout of `measurement`'s series, when it has any (for
    /// messages naming what a refused record differs in).
    pub fn layout(&self, measurement: &str) -> Option<Vec<FieldDef>> {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        st.layouts.get(measurement).cloned()
    }

    /// The schema of an admitted series.
    pub fn schema(&self, id: u64) -> Option<Arc<SourceSchema>> {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        st.series.get(&id).cloned()
    }

    /// Series admitted so far (including the store's).
    pub fn len(&self) -> usize {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        st.series.len()
    }

    /// Whether no series is admitted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The limit on series.
    pub fn limit(&self) -> usize {
        self.limit.max() as usize
    }
}

fn same_fields(fields: &[FieldDef], layout: &[FieldDef]) -> bool {
    fields == layout
}

fn same_key(s: &SourceSchema, measurement: &str, tags: &[(&str, &str)]) -> bool {
    s.measurement == measurement
        && s.tags.len() == tags.len()
        && s.tags
            .iter()
            .zip(tags)
            .all(|((a, b), (c, d))| a == c && b == d)
}

/// `span service=web name=GET`, for messages.
pub fn describe(measurement: &str, tags: &[(&str, &str)]) -> String {
    let mut s = measurement.to_string();
    for (k, v) in tags {
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{schema, HISTOGRAM, NUMBER};

    #[test]
    fn ids_are_stable_and_unambiguous() {
        assert_eq!(
            series_id("span", &[("name", "a"), ("service", "b")]),
            series_id("span", &[("name", "a"), ("service", "b")])
        );
        // Moving a byte between key and value changes the id.
        assert_ne!(
            series_id("m", &[("ab", "c")]),
            series_id("m", &[("a", "bc")])
        );
        assert_ne!(series_id("m", &[]), series_id("m", &[("", "")]));
    }

    #[test]
    fn limit_layouts_and_reserved_measurements() {
        let kv = SourceSchema {
            measurement: "kv".into(),
            tags: vec![("op".into(), "read".into())],
            fields: Vec::new(),
            index: None,
        };
        let old = schema("cpu", &[("service", "a")], NUMBER, false);
        let old_id = series_id("cpu", &[("service", "a")]);
        let reg = Registry::new(2, [(7u64, &kv), (old_id, &old)]);
        assert_eq!(reg.len(), 1);
        let mk = |tags: &[(&str, &str)], layout| {
            let t: Vec<(String, String)> = tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move || {
                let t: Vec<(&str, &str)> =
                    t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                schema("cpu", &t, layout, false)
            }
        };
        // The store's own series is known.
        assert_eq!(
            reg.admit("cpu", &[("service", "a")], NUMBER, || unreachable!()),
            Ok(old_id)
        );
        // Another type in the same measurement is refused.
        assert_eq!(
            reg.admit(
                "cpu",
                &[("service", "b")],
                HISTOGRAM,
                mk(&[("service", "b")], HISTOGRAM)
            ),
            Err(Refusal::Layout("cpu".into()))
        );
        let b = reg.admit(
            "cpu",
            &[("service", "b")],
            NUMBER,
            mk(&[("service", "b")], NUMBER),
        );
        assert!(b.is_ok());
        // Nor can a known series: its records would be read with its fields.
        assert_eq!(
            reg.admit("cpu", &[("service", "b")], HISTOGRAM, || unreachable!()),
            Err(Refusal::Layout("cpu".into()))
        );
        let e = reg.admit(
            "cpu",
            &[("service", "c")],
            NUMBER,
            mk(&[("service", "c")], NUMBER),
        );
        assert!(
            matches!(&e, Err(Refusal::Cardinality { limit: 2, .. })),
            "{e:?}"
        );
        assert!(e.unwrap_err().to_string().contains("cpu service=c"));
        // The store's eBPF measurement is not OTLP's.
        assert_eq!(
            reg.admit("kv", &[], NUMBER, || schema("kv", &[], NUMBER, false)),
            Err(Refusal::Reserved("kv".into()))
        );
        assert_eq!(reg.len(), 2);
        assert!(reg.schema(old_id).is_some());
    }
}
