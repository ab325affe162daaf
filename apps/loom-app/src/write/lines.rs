//! Line protocol → Loom records: one `/write` body's points, each admitted
//! as a series of the shared [`Registry`] (so the one series limit counts
//! them with OTLP's and the agent's), or refused alone with the reason
//! InfluxDB 1.x would give where it has one.
//!
//! The rules (docs/write.md): a measurement's first point fixes its fields
//! and their types (float → `F64`, integer → `I64`, unsigned → `U64`,
//! string → `String`), in key order at 8-byte slots. A later point must
//! carry the same fields: another type is InfluxDB's field type conflict; a
//! different field set is refused too, because a Loom record has no nulls
//! and a series' layout is fixed once declared. Boolean fields are refused
//! (the engine has no boolean type). A point's time is stored as sent: a
//! time that is not a whole microsecond (Loom stores µs) or before 1970 is
//! refused, never rounded.

use influxdb_line_protocol::{FieldValue, ParsedLine};
use loom::{FieldDef, FieldType, RecordBuilder};
use otlp::{Refusal, Registry, Shaped};

/// `precision=` of a `/write` request: the unit of the points' timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Nanoseconds (`n`, `ns`, or no `precision`).
    Ns,
    /// Microseconds (`u`, `us`, `µ`).
    Us,
    /// Milliseconds (`ms`).
    Ms,
    /// Seconds (`s`).
    S,
    /// Minutes (`m`).
    M,
    /// Hours (`h`).
    H,
}

impl Precision {
    /// The precision a `precision=` value names; `None` (absent or empty)
    /// is nanoseconds. An unknown unit is an error (InfluxDB would read
    /// the times as ns without a word).
    pub fn parse(p: Option<&str>) -> Result<Precision, String> {
        Ok(match p.unwrap_or("") {
            "" | "n" | "ns" => Precision::Ns,
            "u" | "us" | "µ" | "µs" => Precision::Us,
            "ms" => Precision::Ms,
            "s" => Precision::S,
            "m" => Precision::M,
            "h" => Precision::H,
            other => {
                return Err(format!(
                    "precision {other:?} not known: use n, u, ms, s, m or h"
                ))
            }
        })
    }

    /// Nanoseconds per unit.
    pub fn ns(self) -> i64 {
        match self {
            Precision::Ns => 1,
            Precision::Us => 1_000,
            Precision::Ms => 1_000_000,
            Precision::S => 1_000_000_000,
            Precision::M => 60_000_000_000,
            Precision::H => 3_600_000_000_000,
        }
    }
}

/// Parse errors quoted per body (the rest are counted).
const MAX_PARSE_ERRORS: usize = 10;
/// Distinct refusal reasons quoted per body.
const MAX_REASONS: usize = 3;
/// Longest quoted line in an error message, bytes.
const MAX_QUOTED_LINE: usize = 256;
/// Longest series key (measurement and tags), bytes: InfluxDB's limit.
pub const MAX_KEY_BYTES: usize = 65_535;

/// What one body became.
#[derive(Debug, Default)]
pub struct Batch {
    /// Points to store, in body order.
    pub records: Vec<Shaped>,
    /// Lines that are not line protocol, as InfluxDB words them
    /// (`unable to parse '<line>': <why>`), the first few.
    pub parse_errors: Vec<String>,
    /// Lines that are not line protocol.
    pub bad_lines: u64,
    /// Points parsed but refused (type conflict, series limit, …).
    pub dropped: u64,
    /// Of `dropped`: per [`Reason`], indexed by `Reason as usize`.
    pub dropped_by: [u64; Reason::COUNT],
    /// Why, the first few distinct reasons.
    pub reasons: Vec<String>,
}

/// Why a parsed point was refused, as `/write`'s counters group them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Its fields do not fit its measurement's (type or field set conflict).
    Conflict,
    /// Its series would pass the one series limit (`--max-series`).
    SeriesLimit,
    /// Loom cannot store it as sent (boolean, time not whole µs or before
    /// 1970, reserved or clashing names, too large, …).
    Unstorable,
}

impl Reason {
    /// How many reasons there are.
    pub const COUNT: usize = 3;
}

/// A refused point: why, in words and as a [`Reason`].
#[derive(Debug)]
pub struct Refused {
    /// The group it is counted in.
    pub reason: Reason,
    /// The text quoted in the partial-write answer.
    pub text: String,
}

impl From<String> for Refused {
    fn from(text: String) -> Self {
        Refused {
            reason: Reason::Unstorable,
            text,
        }
    }
}

impl Batch {
    fn refuse(&mut self, r: Refused) {
        self.dropped_by[r.reason as usize] += 1;
        let why = r.text;
        self.dropped += 1;
        if self.reasons.len() < MAX_REASONS && !self.reasons.contains(&why) {
            self.reasons.push(why);
        }
    }

    fn bad_line(&mut self, line: &str, why: &str) {
        self.bad_lines += 1;
        if self.parse_errors.len() < MAX_PARSE_ERRORS {
            self.parse_errors
                .push(format!("unable to parse '{}': {why}", quoted(line)));
        }
    }

    /// The parse errors as one text, `\n` separated as InfluxDB joins them.
    pub fn parse_message(&self) -> String {
        let mut m = self.parse_errors.join("\n");
        let more = self.bad_lines - self.parse_errors.len() as u64;
        if more > 0 {
            m.push_str(&format!("\n({more} more lines unable to parse)"));
        }
        m
    }
}

/// How a body is read.
pub struct Rules<'a> {
    /// The shared series registry.
    pub registry: &'a Registry,
    /// Unit of the timestamps.
    pub precision: Precision,
    /// Time of points without one, µs since the epoch.
    pub now_us: u64,
    /// Largest record the store takes, bytes.
    pub max_record_bytes: usize,
}

/// Reads every line of `body`: good points become records, bad lines and
/// refused points are counted with their reasons; nothing stops the rest.
/// Each line is decoded alone: a line that is not UTF-8 is a bad line,
/// refused by itself while the other lines of the body are kept.
pub fn convert(body: &[u8], rules: &Rules) -> Batch {
    let mut out = Batch::default();
    let mut b = RecordBuilder::new();
    for raw in split_lines(body) {
        let start = raw
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t' | b'\r'))
            .unwrap_or(raw.len());
        let raw = &raw[start..];
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.is_empty() || raw[0] == b'#' {
            continue;
        }
        let line = match std::str::from_utf8(raw) {
            Ok(l) => l,
            Err(e) => {
                let why = format!(
                    "invalid UTF-8 at byte {} of the line (Loom stores tags, names and strings as UTF-8 text)",
                    e.valid_up_to()
                );
                out.bad_line(&String::from_utf8_lossy(raw), &why);
                continue;
            }
        };
        match influxdb_line_protocol::parse_lines(line).next() {
            None => {}
            Some(Ok(p)) => match point(&p, rules, &mut b) {
                Ok(r) => out.records.push(r),
                Err(why) => out.refuse(why),
            },
            Some(Err(e)) => out.bad_line(line, &e.to_string()),
        }
    }
    out
}

/// The lines of a body, split on bytes exactly as
/// `influxdb_line_protocol::split_lines` (a port of InfluxDB's Go
/// scanner) splits text: at each `\n` outside a quoted string field value,
/// escapes skipped. Every byte it looks at is ASCII, so the bytes of a line
/// that is not UTF-8 cannot move a split: such a line stays one line and
/// is refused alone.
fn split_lines(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut quoted = false;
    let mut fields = false;
    // How many '=' and ',' of the field set were seen: a '"' opens or
    // closes a string value only after an '='.
    let mut equals = 0u64;
    let mut commas = 0u64;
    let mut in_escape = false;
    body.split(move |&c| {
        if in_escape {
            in_escape = false;
            return false;
        }
        match c {
            b'\\' => in_escape = true,
            b' ' => fields = true,
            b'=' if fields && !quoted => equals += 1,
            b',' if fields && !quoted => commas += 1,
            b'"' if fields && equals > commas => quoted = !quoted,
            b'\n' if !quoted => {
                (quoted, fields, equals, commas) = (false, false, 0, 0);
                return true;
            }
            _ => {}
        }
        false
    })
}

/// `line` cut to [`MAX_QUOTED_LINE`] bytes at a character boundary.
fn quoted(line: &str) -> String {
    if line.len() <= MAX_QUOTED_LINE {
        return line.to_string();
    }
    let mut end = MAX_QUOTED_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

/// InfluxDB's name of a field type, as its conflict message says it.
fn type_name(t: FieldType) -> &'static str {
    match t {
        FieldType::F64 => "float",
        FieldType::I64 => "integer",
        FieldType::String => "string",
        _ => "unsigned",
    }
}

/// The point's time in µs, or why it cannot be stored at its own time.
fn time_us(p: &ParsedLine, rules: &Rules) -> Result<u64, String> {
    let unit = rules.precision.ns();
    let ns: i128 = match p.timestamp {
        Some(t) => i128::from(t) * i128::from(unit),
        // As InfluxDB: the request's time, truncated to the precision.
        None => {
            let now = i128::from(rules.now_us) * 1_000;
            now - now % i128::from(unit)
        }
    };
    if ns < 0 {
        return Err(format!(
            "time {ns} ns is before 1970: Loom stores times from the Unix epoch on"
        ));
    }
    if ns % 1_000 != 0 {
        return Err(format!(
            "time {ns} ns is not a whole microsecond: Loom stores µs and never moves a point's time (send precision=u or coarser)"
        ));
    }
    u64::try_from(ns / 1_000).map_err(|_| format!("time {ns} ns is out of range"))
}

/// A point's measurement and its tags, sorted by key.
type SeriesKey<'a> = (&'a str, Vec<(&'a str, &'a str)>);

/// A point's fields in key order, and the record layout they take.
type FieldsAndLayout<'a> = (Vec<(&'a str, &'a FieldValue<'a>)>, Vec<FieldDef>);

/// The point's measurement and tags (sorted), or why InfluxDB or Loom
/// refuses its series key.
fn series_key<'a>(p: &'a ParsedLine) -> Result<SeriesKey<'a>, String> {
    let measurement = p.series.measurement.as_str();
    let mut tags: Vec<(&str, &str)> = p
        .series
        .tag_set
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    tags.sort_unstable();
    let key_len = measurement.len()
        + tags
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum::<usize>();
    if key_len > MAX_KEY_BYTES {
        return Err(format!(
            "max key length exceeded: {key_len} > {MAX_KEY_BYTES}"
        ));
    }
    if let Some(w) = tags.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "duplicate tag key {:?} on measurement {measurement:?}",
            w[0].0
        ));
    }
    if tags.iter().any(|(k, _)| *k == "time") {
        return Err(format!(
            "invalid tag key: input tag \"time\" on measurement \"{measurement}\" is invalid"
        ));
    }
    Ok((measurement, tags))
}

/// The Loom type of field `name`'s value, or why it cannot be stored.
fn field_type(name: &str, v: &FieldValue, measurement: &str) -> Result<FieldType, String> {
    Ok(match v {
        FieldValue::F64(x) if !x.is_finite() => {
            return Err(format!(
                "field {name:?} on measurement {measurement:?} is not a finite number"
            ))
        }
        FieldValue::F64(_) => FieldType::F64,
        FieldValue::I64(_) => FieldType::I64,
        FieldValue::U64(_) => FieldType::U64,
        FieldValue::String(_) => FieldType::String,
        FieldValue::Boolean(_) => {
            return Err(format!(
                "boolean field {name:?} on measurement {measurement:?}: Loom stores no booleans (send 0i/1i)"
            ))
        }
    })
}

/// The point's fields in key order and their layout (8-byte slots), or why
/// they cannot be stored.
fn field_layout<'a>(
    p: &'a ParsedLine,
    measurement: &str,
    tags: &[(&str, &str)],
) -> Result<FieldsAndLayout<'a>, String> {
    let mut fields: Vec<(&str, &FieldValue)> =
        p.field_set.iter().map(|(k, v)| (k.as_str(), v)).collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    if let Some(w) = fields.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "field {:?} appears twice in a point of measurement {measurement:?}",
            w[0].0
        ));
    }
    let mut layout = Vec::with_capacity(fields.len());
    for (i, (name, v)) in fields.iter().enumerate() {
        if *name == "time" {
            return Err(format!(
                "invalid field name: input field \"time\" on measurement \"{measurement}\" is invalid"
            ));
        }
        if tags.iter().any(|(k, _)| k == name) {
            return Err(format!(
                "{name:?} is both a tag and a field of measurement {measurement:?}: Loom needs distinct names"
            ));
        }
        layout.push(FieldDef {
            name: std::borrow::Cow::Owned(name.to_string()),
            offset: (8 * i) as u32,
            ty: field_type(name, v, measurement)?,
        });
    }
    Ok((fields, layout))
}

/// One parsed point as a record of its series (declared on first use), or
/// why it is refused.
fn point(p: &ParsedLine, rules: &Rules, b: &mut RecordBuilder) -> Result<Shaped, Refused> {
    let (measurement, tags) = series_key(p)?;
    let (fields, layout) = field_layout(p, measurement, &tags)?;
    let time_us = time_us(p, rules)?;
    b.start(8 * fields.len());
    for (f, (_, v)) in layout.iter().zip(&fields) {
        match v {
            FieldValue::F64(x) => b.f64(f.offset, *x),
            FieldValue::I64(x) => b.i64(f.offset, *x),
            FieldValue::U64(x) => b.u64(f.offset, *x),
            FieldValue::String(s) => b.str(f.offset, s.as_str()),
            FieldValue::Boolean(_) => {}
        }
    }
    if b.len() > rules.max_record_bytes {
        return Err(Refused::from(format!(
            "a point of measurement {measurement:?} takes {} bytes, over the store's limit of {} bytes",
            b.len(),
            rules.max_record_bytes
        )));
    }
    let make = || otlp::schema(measurement, &tags, &layout, false);
    match rules.registry.admit(measurement, &tags, &layout, make) {
        Ok(source) => Ok(Shaped {
            source,
            time_us,
            bytes: b.bytes().to_vec(),
        }),
        Err(Refusal::Layout(_)) => {
            let known = rules.registry.layout(measurement).unwrap_or_default();
            Err(Refused {
                reason: Reason::Conflict,
                text: layout_conflict(measurement, &known, &layout),
            })
        }
        Err(r @ Refusal::Cardinality { .. }) => Err(Refused {
            reason: Reason::SeriesLimit,
            text: r.to_string(),
        }),
        Err(r) => Err(r.to_string().into()),
    }
}

/// Why a point's fields do not fit its measurement's `known` layout:
/// InfluxDB's type-conflict text when a field changed type, else the field
/// sets.
fn layout_conflict(measurement: &str, known: &[FieldDef], point: &[FieldDef]) -> String {
    for f in point {
        if let Some(k) = known.iter().find(|k| k.name() == f.name()) {
            if k.ty != f.ty {
                return format!(
                    "field type conflict: input field \"{}\" on measurement \"{measurement}\" is type {}, already exists as type {}",
                    f.name(),
                    type_name(f.ty),
                    type_name(k.ty)
                );
            }
        }
    }
    let names = |l: &[FieldDef]| l.iter().map(|f| f.name()).collect::<Vec<_>>().join(",");
    format!(
        "field set conflict: measurement \"{measurement}\" holds fields ({}) and a point with fields ({}) cannot be stored beside them (Loom keeps one field set per measurement)",
        names(known),
        names(point)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(registry: &Registry, precision: Precision) -> Rules<'_> {
        Rules {
            registry,
            precision,
            now_us: 1_700_000_000_123_456,
            max_record_bytes: 4096,
        }
    }

    #[test]
    fn precisions() {
        assert_eq!(Precision::parse(None), Ok(Precision::Ns));
        assert_eq!(Precision::parse(Some("ms")), Ok(Precision::Ms));
        assert_eq!(
            Precision::parse(Some("h")).map(|p| p.ns()),
            Ok(3_600_000_000_000)
        );
        assert!(Precision::parse(Some("d")).is_err());
    }

    #[test]
    fn points_types_and_refusals() {
        let reg = Registry::new(100, []);
        let body = "cpu,host=a,dc=x value=1.5,n=3i,u=4u,s=\"q\\\"t\" 1700000000000001000\n\
                    # a comment\n\
                    \n\
                    cpu,dc=x,host=b value=2,n=-3i,u=0u,s=\"\" 1700000000000002000\n\
                    not line protocol\n\
                    cpu,host=a value=1i,n=3i,u=4u,s=\"x\" 1700000000000003000\n\
                    cpu,host=a value=1.0 1700000000000004000\n\
                    cpu,host=c value=1.0,n=1i,u=1u,s=\"x\" 1700000000000004001\n\
                    cpu,host=d value=1.0,n=1i,u=1u,s=\"x\"\n\
                    flag,host=a on=true 1\n";
        let out = convert(body.as_bytes(), &rules(&reg, Precision::Ns));
        assert_eq!(out.records.len(), 3, "{out:?}");
        assert_eq!(out.bad_lines, 1);
        assert!(out.parse_errors[0].starts_with("unable to parse 'not line protocol': "));
        assert_eq!(out.dropped, 4);
        assert_eq!(
            out.dropped_by,
            [2, 0, 2],
            "conflicts, series limit, unstorable"
        );
        assert!(out.reasons[0].contains(
            "field type conflict: input field \"value\" on measurement \"cpu\" is type integer, already exists as type float"
        ));
        assert!(
            out.reasons[1].contains("field set conflict"),
            "{:?}",
            out.reasons
        );
        assert!(
            out.reasons[2].contains("whole microsecond"),
            "{:?}",
            out.reasons
        );
        // Both series' tags sorted, one id each.
        assert_ne!(out.records[0].source, out.records[1].source);
        assert_eq!(out.records[0].time_us, 1_700_000_000_000_001);
        // No timestamp: the request's time.
        assert_eq!(out.records[2].time_us, 1_700_000_000_123_456);
        let s = reg.schema(out.records[0].source).expect("declared");
        let names: Vec<&str> = s.fields.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["n", "s", "u", "value"]);
        assert_eq!(
            s.tags,
            [("dc".into(), "x".into()), ("host".into(), "a".into())]
        );
        // The escaped quote is unescaped in the stored text.
        let rec = &out.records[0].bytes;
        assert!(String::from_utf8_lossy(rec).contains("q\"t"));
    }

    #[test]
    fn a_line_not_utf8_is_refused_alone() {
        let reg = Registry::new(100, []);
        let mut body = b"u,host=a v=1i 1\n".to_vec();
        body.extend_from_slice(b"u,host=b\xff v=2i 2\n");
        body.extend_from_slice(b"u,host=c s=\"x\xfe\ny\",v=3i 3\n");
        body.extend_from_slice(b"# comment \xc3\n");
        body.extend_from_slice(b"w,host=d s=\"two\nlines\" 4\n");
        body.extend_from_slice(b"u,host=e v=5i 5");
        let out = convert(&body, &rules(&reg, Precision::S));
        // The tag and the string field (a quoted newline kept inside its
        // line) are refused; the comment is skipped; the rest is stored.
        assert_eq!(out.bad_lines, 2, "{out:?}");
        assert_eq!(out.records.len(), 3, "{out:?}");
        let times: Vec<u64> = out.records.iter().map(|r| r.time_us).collect();
        assert_eq!(times, [1_000_000, 4_000_000, 5_000_000]);
        assert!(
            out.parse_errors[0]
                .starts_with("unable to parse 'u,host=b\u{fffd} v=2i 2': invalid UTF-8 at byte 8"),
            "{:?}",
            out.parse_errors
        );
        assert!(
            out.parse_errors[1].contains("invalid UTF-8 at byte 13"),
            "{:?}",
            out.parse_errors
        );
        assert!(String::from_utf8_lossy(&out.records[1].bytes).contains("two\nlines"));
    }

    #[test]
    fn precision_scales_and_no_time_truncates() {
        let reg = Registry::new(100, []);
        let out = convert(b"m v=1 1700000000\nm v=2", &rules(&reg, Precision::S));
        assert_eq!(out.records[0].time_us, 1_700_000_000_000_000);
        assert_eq!(out.records[1].time_us, 1_700_000_000_000_000);
        let out = convert(b"m v=1 -5", &rules(&reg, Precision::S));
        assert_eq!(out.dropped, 1);
        let out = convert(
            format!("m v=1 {}", i64::MAX).as_bytes(),
            &rules(&reg, Precision::H),
        );
        assert_eq!(out.dropped, 1, "{out:?}");
    }

    #[test]
    fn series_limit_is_shared() {
        let reg = Registry::new(2, []);
        let out = convert(
            b"m,a=1 v=1 1000\nm,a=2 v=1 1000\nm,a=3 v=1 1000",
            &rules(&reg, Precision::Ns),
        );
        assert_eq!(out.records.len(), 2);
        assert_eq!(out.dropped, 1);
        assert_eq!(out.dropped_by[Reason::SeriesLimit as usize], 1);
        assert!(out.reasons[0].contains("series limit"), "{:?}", out.reasons);
    }
}
