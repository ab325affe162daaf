//! Helpers of the unit tests.

use loom::SourceSchema;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;

/// A string attribute.
pub fn kv_str(k: &str, v: &str) -> KeyValue {
    kv(k, Value::StringValue(v.into()))
}

/// An attribute.
pub fn kv(k: &str, v: Value) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

/// A resource with `service.name`.
pub fn resource(service: &str) -> Resource {
    Resource {
        attributes: vec![kv_str("service.name", service)],
        ..Default::default()
    }
}

/// Field `name` of a record as text (numbers in Rust's notation).
pub fn read(schema: &SourceSchema, name: &str, bytes: &[u8]) -> String {
    let f = schema
        .field(name)
        .unwrap_or_else(|| panic!("no field {name}"));
    if let Some(s) = f.read_str(bytes) {
        return s.to_string();
    }
    match f.read(bytes) {
        Some(loom::Value::Unsigned(v)) => v.to_string(),
        Some(loom::Value::Signed(v)) => v.to_string(),
        Some(loom::Value::Float(v)) => format!("{v:?}"),
        None => panic!("field {name} unreadable"),
    }
}
