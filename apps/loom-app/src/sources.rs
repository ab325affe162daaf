//! How each telemetry source is declared in the engine: the data model of
//! `telemetry::model` as a persisted engine schema.

use loom::SourceSchema;
use telemetry::model::Series;

/// The engine schema of a data-model series.
pub fn schema_of(series: &Series) -> SourceSchema {
    series.schema()
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
    use telemetry::model;
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
