//! What the planner knows of a store: its series (sources with schemas)
//! grouped by measurement.

use std::collections::BTreeMap;
use std::sync::Arc;

use loom::{FieldDef, Snapshot, SourceId, SourceSchema};

use crate::plan::tree::FieldTree;

/// One series: a source and its schema.
#[derive(Debug, Clone)]
pub struct Series {
    /// The source.
    pub id: SourceId,
    /// Its schema (measurement, tags, fields, index).
    pub schema: SourceSchema,
    /// What its records must satisfy beyond the plan's field predicates:
    /// what WHERE's `OR` trees leave for this series once its tags are put
    /// in (`None`: every record passes). Set by the planner per statement.
    pub filter: Option<Arc<FieldTree>>,
}

impl Series {
    /// The indexed field's name, if the source has a range index.
    pub fn index_field(&self) -> Option<&str> {
        self.schema.index.as_ref().map(|ix| ix.field.as_ref())
    }

    /// Whether the record `bytes` passes the series' `filter`.
    pub fn passes(&self, bytes: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|t| t.matches(bytes))
    }
}

/// Every series of the store by measurement name; series sorted by tag set.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Measurement → its series.
    pub measurements: BTreeMap<String, Vec<Series>>,
}

impl Catalog {
    /// The catalog of a snapshot: every source that has a schema.
    pub fn of(snap: &Snapshot) -> Catalog {
        let mut c = Catalog::default();
        for (id, schema) in snap.schemas() {
            c.measurements
                .entry(schema.measurement.clone())
                .or_default()
                .push(Series {
                    id,
                    schema: schema.clone(),
                    filter: None,
                });
        }
        for v in c.measurements.values_mut() {
            v.sort_by(|a, b| a.schema.tags.cmp(&b.schema.tags).then(a.id.cmp(&b.id)));
        }
        c
    }

    /// Field `name` of a measurement (from its first series that has it).
    pub fn field(&self, measurement: &str, name: &str) -> Option<FieldDef> {
        self.measurements
            .get(measurement)?
            .iter()
            .find_map(|s| s.schema.field(name).cloned())
    }

    /// Whether `key` is a tag key of the measurement.
    pub fn is_tag(&self, measurement: &str, key: &str) -> bool {
        self.measurements
            .get(measurement)
            .is_some_and(|v| v.iter().any(|s| s.schema.tag(key).is_some()))
    }

    /// Field names of a measurement, sorted.
    pub fn field_names(&self, measurement: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .measurements
            .get(measurement)
            .into_iter()
            .flatten()
            .flat_map(|s| s.schema.fields.iter().map(|f| f.name.to_string()))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Tag keys of a measurement, sorted.
    pub fn tag_keys(&self, measurement: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .measurements
            .get(measurement)
            .into_iter()
            .flatten()
            .flat_map(|s| s.schema.tags.iter().map(|(k, _)| k.clone()))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}
