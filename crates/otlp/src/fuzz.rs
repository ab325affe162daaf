//! Body of the `otlp_decode` fuzz target, shared by the cargo-fuzz target
//! (`otlp/fuzz/`, nightly) and the stable `fuzz-smoke` driver. Built only
//! with the `fuzz` feature.
//!
//! The input's first byte picks the signal, the encoding and gzip; the
//! rest is the body. The body returns normally for any input; it panics
//! when decoding or conversion panics or breaks a property checked here:
//! every record belongs to an admitted series, fits the record limit, and
//! every string field reads back (JSON fields as valid JSON).

use loom::FieldType;

use crate::body::gunzip;
use crate::{decode_and_convert, Config, Context, Encoding, Registry, Signal};

/// Largest body the target decodes (as the servers bound theirs).
const LIMIT: usize = 1 << 20;

/// Fields holding JSON text.
const JSON_FIELDS: &[&str] = &[
    "attributes",
    "resource",
    "events",
    "links",
    "buckets",
    "quantiles",
];

/// The input's header byte for a signal, encoding and compression (the
/// sample makers use it).
pub fn header(signal: Signal, encoding: Encoding, gzip: bool) -> u8 {
    let s = match signal {
        Signal::Traces => 0,
        Signal::Logs => 1,
        Signal::Metrics => 2,
    };
    let e = match encoding {
        Encoding::Protobuf => 0,
        Encoding::Json => 4,
    };
    s | e | if gzip { 8 } else { 0 }
}

/// Runs one input.
pub fn otlp_decode(input: &[u8]) {
    let Some((&h, body)) = input.split_first() else {
        return;
    };
    let signal = match h & 3 {
        0 => Signal::Traces,
        1 => Signal::Logs,
        _ => Signal::Metrics,
    };
    let encoding = if h & 4 == 0 {
        Encoding::Protobuf
    } else {
        Encoding::Json
    };
    let unzipped;
    let body = if h & 8 != 0 {
        match gunzip(body, LIMIT) {
            Ok(b) => {
                unzipped = b;
                &unzipped[..]
            }
            Err(_) => return,
        }
    } else {
        body
    };
    let registry = Registry::new(16, []);
    let config = Config {
        max_record_bytes: 4096,
        ..Config::default()
    };
    let ctx = Context {
        registry: &registry,
        config: &config,
        arrival_us: 1,
    };
    let Ok(out) = decode_and_convert(signal, body, encoding, &ctx) else {
        return;
    };
    assert!(out.rejected > 0 || out.message().is_empty());
    for r in &out.records {
        assert!(
            r.bytes.len() <= config.max_record_bytes,
            "record over the limit"
        );
        let schema = registry
            .schema(r.source)
            .expect("a record of a series the registry did not admit");
        for f in &schema.fields {
            if f.ty != FieldType::String {
                assert!(f.read(&r.bytes).is_some(), "field {} unreadable", f.name);
                continue;
            }
            let text = f
                .read_str(&r.bytes)
                .unwrap_or_else(|| panic!("string field {} unreadable", f.name));
            if JSON_FIELDS.contains(&f.name()) {
                if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
                    panic!("field {} is not JSON ({e}): {text}", f.name);
                }
            }
        }
    }
}
