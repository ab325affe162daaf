//! Declarative source schemas: what a source's records mean.
//!
//! A schema names the series a source is (a measurement and a fixed tag set),
//! where each field sits in the record bytes, and optionally which field the
//! range index bins. It is stored in the store's catalog the first time the
//! source is declared, so any process that opens the store can answer
//! questions about every source without declaring anything.
//!
//! Numeric fields sit at fixed offsets. A [`FieldType::String`] field holds
//! variable-length UTF-8 text: its fixed 8-byte slot is a descriptor
//! (`u32` start, `u32` length, little endian, both in bytes from the start
//! of the record) pointing into the record's tail, after the fixed part
//! (see [`crate::RecordBuilder`]). Catalogs written before string fields
//! existed hold no `"string"` type and load unchanged.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Storage type of a field inside the record bytes (little endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer.
    I64,
    /// IEEE 754 double.
    F64,
    /// UTF-8 text in the record's tail; the fixed slot is its descriptor.
    String,
}

impl FieldType {
    /// Width in bytes of the field's fixed slot (a string's descriptor).
    pub fn width(self) -> usize {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::F64 | FieldType::String => 8,
        }
    }

    /// Whether values are numbers (every type but [`FieldType::String`]).
    pub fn is_numeric(self) -> bool {
        self != FieldType::String
    }

    /// Whether values are unsigned integers (the types a range index accepts).
    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            FieldType::U8 | FieldType::U16 | FieldType::U32 | FieldType::U64
        )
    }
}

/// A field value read from record bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// Unsigned integer fields.
    Unsigned(u64),
    /// `i64` fields.
    Signed(i64),
    /// `f64` fields.
    Float(f64),
}

impl Value {
    /// The value as a double (exact for integers below 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Unsigned(v) => v as f64,
            Value::Signed(v) => v as f64,
            Value::Float(v) => v,
        }
    }
}

/// One field: its name and where its value sits in each record.
///
/// The one field descriptor of the data model: the engine's schemas, the
/// telemetry records' tables and the OTLP layouts all use it. The name is a
/// `Cow` so fixed layouts are `const` tables ([`FieldDef::new`]) while
/// schemas read back from a catalog own their names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FieldDef {
    /// Name as users write it.
    pub name: Cow<'static, str>,
    /// Byte offset inside the record.
    pub offset: u32,
    /// Storage type.
    #[serde(rename = "type")]
    pub ty: FieldType,
}

impl FieldDef {
    /// A field with a fixed name, usable in `const` layout tables.
    pub const fn new(name: &'static str, offset: u32, ty: FieldType) -> FieldDef {
        FieldDef {
            name: Cow::Borrowed(name),
            offset,
            ty,
        }
    }

    /// The field's name.
    pub const fn name(&self) -> &str {
        match &self.name {
            Cow::Borrowed(s) => s,
            Cow::Owned(s) => s.as_str(),
        }
    }

    /// The numeric field's value in `bytes`; `None` when the record is too
    /// short or the field is a string (see [`FieldDef::read_str`]).
    #[inline]
    pub fn read(&self, bytes: &[u8]) -> Option<Value> {
        let raw = read_raw(bytes, self.offset as usize, self.ty.width())?;
        Some(match self.ty {
            FieldType::I64 => Value::Signed(raw as i64),
            FieldType::F64 => Value::Float(f64::from_bits(raw)),
            FieldType::String => return None,
            _ => Value::Unsigned(raw),
        })
    }

    /// The string field's text in `bytes`; `None` when the field is not a
    /// string, or its descriptor points outside the record or at bytes that
    /// are not UTF-8.
    #[inline]
    pub fn read_str<'a>(&self, bytes: &'a [u8]) -> Option<&'a str> {
        if self.ty != FieldType::String {
            return None;
        }
        let d = read_raw(bytes, self.offset as usize, 8)?;
        let (start, len) = ((d & 0xffff_ffff) as usize, (d >> 32) as usize);
        std::str::from_utf8(bytes.get(start..start.checked_add(len)?)?).ok()
    }
}

/// The field named `name` in `fields`, `None` when there is none. A `const
/// fn`, so fixed layouts resolve names at compile time through
/// [`field_offset!`](crate::field_offset).
pub const fn find_field<'a>(fields: &'a [FieldDef], name: &str) -> Option<&'a FieldDef> {
    let mut i = 0;
    while i < fields.len() {
        if const_str_eq(fields[i].name(), name) {
            return Some(&fields[i]);
        }
        i += 1;
    }
    None
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Byte offset of the field named by the string literal `$name` in the
/// constant layout `$fields` (a `&[FieldDef]` constant), evaluated at compile
/// time: a name the layout does not hold fails the build, so a typo can never
/// write over another field. Schemas known only at run time use
/// [`SourceSchema::field`], which answers `None` for an unknown name.
///
/// ```
/// use loom::{field_offset, FieldDef, FieldType};
/// const LAYOUT: &[FieldDef] = &[
///     FieldDef::new("a", 0, FieldType::U64),
///     FieldDef::new("b", 8, FieldType::U32),
/// ];
/// assert_eq!(field_offset!(LAYOUT, "b"), 8);
/// ```
///
/// ```compile_fail
/// use loom::{field_offset, FieldDef, FieldType};
/// const LAYOUT: &[FieldDef] = &[FieldDef::new("a", 0, FieldType::U64)];
/// let _ = field_offset!(LAYOUT, "typo");
/// ```
#[macro_export]
macro_rules! field_offset {
    ($fields:expr, $name:literal) => {
        const {
            match $crate::find_field($fields, $name) {
                ::core::option::Option::Some(f) => f.offset,
                ::core::option::Option::None => ::core::panic!(::core::concat!(
                    "no field ",
                    $name,
                    " in ",
                    ::core::stringify!($fields)
                )),
            }
        }
    };
}

/// Little-endian unsigned integer of `width` bytes at `offset`.
#[inline]
pub(crate) fn read_raw(bytes: &[u8], offset: usize, width: usize) -> Option<u64> {
    let b = bytes.get(offset..offset.checked_add(width)?)?;
    // Fixed-size reads for the common widths: the range indexer calls this
    // per record, and a variable-length copy is a memcpy call.
    Some(match width {
        8 => u64::from_le_bytes(b.try_into().ok()?),
        4 => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
        2 => u64::from(u16::from_le_bytes(b.try_into().ok()?)),
        1 => u64::from(*b.first()?),
        _ => {
            let mut a = [0u8; 8];
            a.get_mut(..width)?.copy_from_slice(b);
            u64::from_le_bytes(a)
        }
    })
}

/// Range-index bins over one unsigned field: `n_bins` bins of width
/// `interval` from `min`, plus a bin below `min` and one at or above the end.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexDef {
    /// Name of the indexed field.
    pub field: Cow<'static, str>,
    /// Lower bound of the first regular bin.
    pub min: u64,
    /// Width of each regular bin; at least 1.
    pub interval: u64,
    /// Number of regular bins; at least 1.
    pub n_bins: u32,
}

impl IndexDef {
    /// An index on a field with a fixed name, usable in `const` tables.
    pub const fn new(field: &'static str, min: u64, interval: u64, n_bins: u32) -> IndexDef {
        IndexDef {
            field: Cow::Borrowed(field),
            min,
            interval,
            n_bins,
        }
    }
}

/// What a source's records are: one series of a measurement.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceSchema {
    /// Measurement name (`kv`, `syscall`, …).
    pub measurement: String,
    /// Tag keys and values; kept sorted by key.
    pub tags: Vec<(String, String)>,
    /// Fields in record order.
    pub fields: Vec<FieldDef>,
    /// The range index, if any.
    pub index: Option<IndexDef>,
}

impl SourceSchema {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        find_field(&self.fields, name)
    }

    /// The value of tag `key`.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The indexed field, when the schema declares a range index.
    pub fn index_field(&self) -> Option<&FieldDef> {
        self.index.as_ref().and_then(|ix| self.field(&ix.field))
    }

    /// Checks names, offsets and the index; sorts the tags. Called on declare.
    pub fn validated(mut self) -> Result<SourceSchema> {
        let bad = |m: String| Err(Error::InvalidSchema(m));
        if self.measurement.is_empty() {
            return bad("the measurement name is empty".into());
        }
        self.tags.sort();
        for w in self.tags.windows(2) {
            if w[0].0 == w[1].0 {
                return bad(format!("tag key {:?} appears twice", w[0].0));
            }
        }
        for (i, f) in self.fields.iter().enumerate() {
            if f.name.is_empty() || f.name == "time" {
                return bad(format!("field name {:?} is not allowed", f.name));
            }
            if self.fields[..i].iter().any(|g| g.name == f.name) {
                return bad(format!("field {:?} appears twice", f.name));
            }
            if self.tags.iter().any(|(k, _)| *k == f.name) {
                return bad(format!("{:?} is both a tag and a field", f.name));
            }
        }
        if let Some(ix) = &self.index {
            let Some(f) = self.field(&ix.field) else {
                return bad(format!("index field {:?} is not a field", ix.field));
            };
            if !f.ty.is_unsigned() {
                return bad(format!(
                    "index field {:?} has type {:?}; a range index needs an unsigned integer",
                    ix.field, f.ty
                ));
            }
            if ix.interval == 0 || ix.n_bins == 0 {
                return bad(format!(
                    "index on {:?} needs interval ≥ 1 and n_bins ≥ 1",
                    ix.field
                ));
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> SourceSchema {
        SourceSchema {
            measurement: "kv".into(),
            tags: vec![("op".into(), "read".into())],
            fields: vec![
                FieldDef {
                    name: "thread_id".into(),
                    offset: 0,
                    ty: FieldType::U32,
                },
                FieldDef {
                    name: "duration_us".into(),
                    offset: 16,
                    ty: FieldType::U64,
                },
                FieldDef {
                    name: "delta".into(),
                    offset: 8,
                    ty: FieldType::I64,
                },
            ],
            index: Some(IndexDef {
                field: "duration_us".into(),
                min: 0,
                interval: 10,
                n_bins: 100,
            }),
        }
    }

    #[test]
    fn fields_read_little_endian_and_refuse_short_records() {
        let s = schema();
        let mut b = vec![0u8; 24];
        b[0..4].copy_from_slice(&7u32.to_le_bytes());
        b[8..16].copy_from_slice(&(-5i64).to_le_bytes());
        b[16..24].copy_from_slice(&1234u64.to_le_bytes());
        assert_eq!(s.fields[0].read(&b), Some(Value::Unsigned(7)));
        assert_eq!(s.fields[1].read(&b), Some(Value::Unsigned(1234)));
        assert_eq!(s.fields[2].read(&b), Some(Value::Signed(-5)));
        assert_eq!(s.fields[1].read(&b[..23]), None);
    }

    #[test]
    fn validation_names_the_problem() {
        assert!(schema().validated().is_ok());
        let mut s = schema();
        if let Some(ix) = s.index.as_mut() {
            ix.field = "delta".into();
        }
        let e = s.validated().unwrap_err().to_string();
        assert!(e.contains("unsigned"), "{e}");
        let mut s = schema();
        s.fields.push(s.fields[0].clone());
        assert!(s.validated().unwrap_err().to_string().contains("twice"));
        let mut s = schema();
        if let Some(ix) = s.index.as_mut() {
            ix.field = "nope".into();
        }
        assert!(s
            .validated()
            .unwrap_err()
            .to_string()
            .contains("not a field"));
    }
}
