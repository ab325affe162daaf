//! OTLP values as text: attribute lists as JSON objects, `AnyValue`s as
//! JSON, scalar values as tag text, ids as lowercase hex.
//!
//! The JSON is written straight into a record's string tail (no
//! intermediate tree). Maps keep the order they were sent in; a key sent
//! twice keeps its first value (OTLP requires unique keys and calls
//! duplicates unpredictable, so one deterministic choice is as good as
//! another). Doubles that JSON cannot hold are written as the strings
//! `"NaN"`, `"Infinity"` and `"-Infinity"` (as the protobuf JSON mapping
//! does), bytes as base64 strings.

use std::borrow::Cow;

use base64::Engine;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};

/// Appends `s` as a JSON string literal.
pub fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends a double as JSON (non-finite values as strings).
pub fn json_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    } else {
        // Rust prints the shortest text that reads back to the same double.
        let s = format!("{v:?}");
        out.extend_from_slice(s.as_bytes());
    }
}

/// Appends one `AnyValue` as JSON; an empty value is `null`. Nesting is
/// bounded by the decoders (protobuf and JSON recursion limits).
pub fn json_any(out: &mut Vec<u8>, v: &AnyValue) {
    match &v.value {
        None | Some(Value::StringValueStrindex(_)) => out.extend_from_slice(b"null"),
        Some(Value::StringValue(s)) => json_str(out, s),
        Some(Value::BoolValue(b)) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Some(Value::IntValue(i)) => out.extend_from_slice(i.to_string().as_bytes()),
        Some(Value::DoubleValue(d)) => json_f64(out, *d),
        Some(Value::BytesValue(b)) => {
            json_str(out, &base64::engine::general_purpose::STANDARD.encode(b))
        }
        Some(Value::ArrayValue(a)) => {
            out.push(b'[');
            for (i, x) in a.values.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_any(out, x);
            }
            out.push(b']');
        }
        Some(Value::KvlistValue(kv)) => json_attrs(out, &kv.values, |_, _| false),
    }
}

/// Appends attributes as one JSON object, leaving out those for which
/// `skip(position, key)` is true and later copies of a key.
pub fn json_attrs(out: &mut Vec<u8>, attrs: &[KeyValue], skip: impl Fn(usize, &str) -> bool) {
    out.push(b'{');
    let mut first = true;
    for (i, kv) in attrs.iter().enumerate() {
        if skip(i, &kv.key) || attrs[..i].iter().any(|p| p.key == kv.key) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        json_str(out, &kv.key);
        out.push(b':');
        match &kv.value {
            Some(v) => json_any(out, v),
            None => out.extend_from_slice(b"null"),
        }
    }
    out.push(b'}');
}

/// The text of a scalar value (string, bool, integer, double) as a tag
/// value; `None` for arrays, maps, bytes and empty values.
pub fn tag_text(v: Option<&AnyValue>) -> Option<Cow<'_, str>> {
    match v?.value.as_ref()? {
        Value::StringValue(s) => Some(Cow::Borrowed(s)),
        Value::BoolValue(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::IntValue(i) => Some(Cow::Owned(i.to_string())),
        Value::DoubleValue(d) => Some(Cow::Owned(format!("{d:?}"))),
        _ => None,
    }
}

/// The string value of attribute `key`, if it has one.
pub fn str_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(Value::StringValue(s)) => Some(s.as_str()),
            _ => None,
        }
    })
}

/// Appends `bytes` as lowercase hex (trace and span ids; empty for none).
pub fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
}

/// Text of a log body: a string as it is, anything else as JSON, nothing
/// as the empty string.
pub fn body_text(out: &mut Vec<u8>, body: Option<&AnyValue>) {
    match body.and_then(|b| b.value.as_ref()) {
        None => {}
        Some(Value::StringValue(s)) => out.extend_from_slice(s.as_bytes()),
        Some(_) => {
            if let Some(b) = body {
                json_any(out, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};

    fn kv(k: &str, v: Value) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut b = Vec::new();
        f(&mut b);
        String::from_utf8(b).expect("utf-8")
    }

    #[test]
    fn attributes_are_valid_json_that_reads_back() {
        let attrs = vec![
            kv("s", Value::StringValue("a\"b\\c\n\u{1}é".into())),
            kv("b", Value::BoolValue(true)),
            kv("i", Value::IntValue(-9_007_199_254_740_993)),
            kv("d", Value::DoubleValue(0.1)),
            kv("nan", Value::DoubleValue(f64::NAN)),
            kv("bytes", Value::BytesValue(vec![0, 255])),
            kv(
                "arr",
                Value::ArrayValue(ArrayValue {
                    values: vec![AnyValue {
                        value: Some(Value::IntValue(1)),
                    }],
                }),
            ),
            kv(
                "map",
                Value::KvlistValue(KeyValueList {
                    values: vec![kv("x", Value::StringValue("y".into()))],
                }),
            ),
            kv("s", Value::StringValue("second copy".into())),
            KeyValue {
                key: "empty".into(),
                value: None,
                ..Default::default()
            },
        ];
        let t = text(|b| json_attrs(b, &attrs, |_, k| k == "b"));
        let v: serde_json::Value = serde_json::from_str(&t).expect(&t);
        assert_eq!(v["s"], "a\"b\\c\n\u{1}é");
        assert!(v.get("b").is_none());
        assert_eq!(v["i"].as_i64(), Some(-9_007_199_254_740_993));
        assert_eq!(v["d"].as_f64(), Some(0.1));
        assert_eq!(v["nan"], "NaN");
        assert_eq!(v["bytes"], "AP8=");
        assert_eq!(v["arr"], serde_json::json!([1]));
        assert_eq!(v["map"], serde_json::json!({"x": "y"}));
        assert!(v["empty"].is_null());
        assert_eq!(v.as_object().map(|o| o.len()), Some(8));
    }

    #[test]
    fn tags_hex_and_bodies() {
        let v = |x| AnyValue { value: Some(x) };
        assert_eq!(
            tag_text(Some(&v(Value::IntValue(42)))).as_deref(),
            Some("42")
        );
        assert_eq!(
            tag_text(Some(&v(Value::DoubleValue(1.5)))).as_deref(),
            Some("1.5")
        );
        assert_eq!(tag_text(Some(&v(Value::BytesValue(vec![1])))), None);
        assert_eq!(text(|b| hex(b, &[0x0a, 0xff])), "0aff");
        assert_eq!(
            text(|b| body_text(b, Some(&v(Value::StringValue("x\"y".into()))))),
            "x\"y"
        );
        assert_eq!(text(|b| body_text(b, Some(&v(Value::IntValue(3))))), "3");
        assert_eq!(text(|b| body_text(b, None)), "");
    }
}
