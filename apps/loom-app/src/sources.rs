//! How each telemetry source is declared in the engine: the data model of
//! `telemetry::model` as a persisted engine schema.

use loom::{FieldDef, FieldType, IndexDef, SourceSchema};
use telemetry::model::{self, Series};

fn field_type(t: model::FieldType) -> FieldType {
    match t {
        model::FieldType::U8 => FieldType::U8,
        model::FieldType::U16 => FieldType::U16,
        model::FieldType::U32 => FieldType::U32,
        model::FieldType::U64 => FieldType::U64,
        model::FieldType::I64 => FieldType::I64,
        model::FieldType::F64 => FieldType::F64,
    }
}

/// The engine schema of a data-model series.
pub fn schema_of(series: &Series) -> SourceSchema {
    SourceSchema {
        measurement: series.measurement.to_string(),
        tags: series
            .tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        fields: series
            .fields
            .iter()
            .map(|f| FieldDef {
                name: f.name.to_string(),
                offset: f.offset as u32,
                ty: field_type(f.ty),
            })
            .collect(),
        index: series.index.map(|ix| IndexDef {
            field: ix.field.to_string(),
            min: ix.min,
            interval: ix.interval,
            n_bins: ix.n_bins,
        }),
    }
}

/// A person's name for a schema: `kv op=read`.
pub fn describe(schema: &SourceSchema) -> String {
    let mut s = schema.measurement.clone();
    for (k, v) in &schema.tags {
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use telemetry::KvOpKind;

    #[test]
    fn every_series_is_a_valid_schema() {
        for series in [
            model::kv(KvOpKind::Read),
            model::kv(KvOpKind::Write),
            model::syscall(17),
            model::page_cache(),
            model::packet(),
        ] {
            let s = schema_of(&series).validated().expect("valid schema");
            assert_eq!(s.measurement, series.measurement);
        }
        assert_eq!(
            describe(&schema_of(&model::syscall(17))),
            "syscall name=pread64 nr=17"
        );
    }
}
