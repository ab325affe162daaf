//! Building record bytes a [`crate::SourceSchema`] describes: numeric
//! fields at their offsets in a fixed part, string fields as descriptors in
//! the fixed part pointing at text appended after it.

use crate::schema::FieldType;

/// Largest record a builder makes: descriptors hold `u32` starts and lengths.
const MAX_LEN: usize = u32::MAX as usize;

/// Writes one record at a time; reusable (`start` clears the previous one).
///
/// Offsets are the schema's [`crate::FieldDef::offset`]s; a write that does
/// not fit the fixed part is a caller bug and panics like slice indexing.
#[derive(Debug, Default, Clone)]
pub struct RecordBuilder {
    buf: Vec<u8>,
    fixed: usize,
}

impl RecordBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        RecordBuilder::default()
    }

    /// Starts a record whose fixed part is `fixed_len` bytes, all zero.
    pub fn start(&mut self, fixed_len: usize) {
        self.buf.clear();
        self.buf.resize(fixed_len, 0);
        self.fixed = fixed_len;
    }

    fn put(&mut self, offset: u32, bytes: &[u8]) {
        let o = offset as usize;
        self.buf[o..o + bytes.len()].copy_from_slice(bytes);
    }

    /// Writes a `u8` field.
    pub fn u8(&mut self, offset: u32, v: u8) {
        self.put(offset, &[v]);
    }

    /// Writes a `u32` field.
    pub fn u32(&mut self, offset: u32, v: u32) {
        self.put(offset, &v.to_le_bytes());
    }

    /// Writes a `u64` field.
    pub fn u64(&mut self, offset: u32, v: u64) {
        self.put(offset, &v.to_le_bytes());
    }

    /// Writes an `i64` field.
    pub fn i64(&mut self, offset: u32, v: i64) {
        self.put(offset, &v.to_le_bytes());
    }

    /// Writes an `f64` field.
    pub fn f64(&mut self, offset: u32, v: f64) {
        self.put(offset, &v.to_bits().to_le_bytes());
    }

    /// Appends `s` to the tail and points the string field at `offset` to it.
    pub fn str(&mut self, offset: u32, s: &str) {
        self.str_with(offset, |buf| buf.extend_from_slice(s.as_bytes()));
    }

    /// Lets `write` append the string field's text to the tail directly (no
    /// intermediate `String`), then points the field at `offset` to it.
    /// `write` must append UTF-8 only: readers return no value for text
    /// that is not.
    pub fn str_with(&mut self, offset: u32, write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.buf.len();
        write(&mut self.buf);
        let len = self.buf.len() - start;
        let d = (start.min(MAX_LEN) as u64) | ((len.min(MAX_LEN) as u64) << 32);
        self.put(offset, &d.to_le_bytes());
    }

    /// Bytes of the record so far (fixed part, then the strings).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Length of the record so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing has been started.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Length of the fixed part.
    pub fn fixed_len(&self) -> usize {
        self.fixed
    }
}

/// The smallest fixed part that holds every field of `fields` (`(offset,
/// type)` pairs).
pub fn fixed_len(fields: impl IntoIterator<Item = (u32, FieldType)>) -> usize {
    fields
        .into_iter()
        .map(|(o, t)| o as usize + t.width())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{FieldDef, Value};

    fn def(name: &str, offset: u32, ty: FieldType) -> FieldDef {
        FieldDef {
            name: name.to_string().into(),
            offset,
            ty,
        }
    }

    #[test]
    fn strings_and_numbers_read_back() {
        let fields = [
            def("d", 0, FieldType::U64),
            def("a", 8, FieldType::String),
            def("b", 16, FieldType::String),
            def("f", 24, FieldType::F64),
        ];
        let mut b = RecordBuilder::new();
        b.start(fixed_len(fields.iter().map(|f| (f.offset, f.ty))));
        assert_eq!(b.fixed_len(), 32);
        b.u64(0, 77);
        b.str(8, "trace-é");
        b.str_with(16, |buf| buf.extend_from_slice(b"{\"k\":1}"));
        b.f64(24, 1.5);
        let bytes = b.bytes();
        assert_eq!(fields[0].read(bytes), Some(Value::Unsigned(77)));
        assert_eq!(fields[1].read_str(bytes), Some("trace-é"));
        assert_eq!(fields[2].read_str(bytes), Some("{\"k\":1}"));
        assert_eq!(fields[3].read(bytes), Some(Value::Float(1.5)));
        // Strings are not numbers and numbers are not strings.
        assert_eq!(fields[1].read(bytes), None);
        assert_eq!(fields[0].read_str(bytes), None);
        // An empty string is a value.
        b.start(32);
        b.str(8, "");
        assert_eq!(fields[1].read_str(b.bytes()), Some(""));
        // A string never written reads as empty (zero descriptor).
        assert_eq!(fields[2].read_str(b.bytes()), Some(""));
    }

    #[test]
    fn bad_descriptors_read_as_no_value() {
        let f = def("s", 0, FieldType::String);
        let mut bytes = vec![0u8; 8];
        // Start 8, length 4: past the end.
        bytes[..8].copy_from_slice(&(8u64 | (4u64 << 32)).to_le_bytes());
        assert_eq!(f.read_str(&bytes), None);
        // Not UTF-8.
        bytes.extend_from_slice(&[0xff, 0xfe, 0xfd, 0xfc]);
        assert_eq!(f.read_str(&bytes), None);
        // Start + length overflowing.
        bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(f.read_str(&bytes), None);
        // Too short for the descriptor.
        assert_eq!(f.read_str(&bytes[..4]), None);
    }
}
