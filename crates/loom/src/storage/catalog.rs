//! The catalog: every declared source's schema, in `sources.meta`.
//!
//! The file is a first line `loom-sources v1 <crc32c hex> <bytes>` followed by
//! a JSON array of `{ "id": …, "schema": … }`; the checksum and length cover
//! the JSON. It is rewritten whole on every new declaration (declarations are
//! rare) through a temporary file that is synced, renamed into place and
//! followed by a sync of the directory, so a crash leaves the old or the new
//! catalog, never a mix.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::schema::SourceSchema;
use crate::source::SourceId;

const FILE: &str = "sources.meta";
const VERSION_LINE: &str = "loom-sources v1";

#[derive(Serialize, Deserialize)]
struct Entry {
    id: u64,
    schema: SourceSchema,
}

/// Loads the catalog of `dir`; an absent file is an empty catalog.
pub(crate) fn load(dir: &Path) -> Result<Vec<(SourceId, SourceSchema)>> {
    let path = dir.join(FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let bad = |reason: String| Error::Corrupted {
        address: 0,
        reason: format!("{}: {reason}", path.display()),
    };
    let (first, body) = text
        .split_once('\n')
        .ok_or_else(|| bad("no header line".into()))?;
    let rest = first
        .strip_prefix(VERSION_LINE)
        .ok_or_else(|| bad(format!("first line is not '{VERSION_LINE} …'")))?;
    let mut parts = rest.split_whitespace();
    let crc = parts
        .next()
        .and_then(|c| u32::from_str_radix(c, 16).ok())
        .ok_or_else(|| bad("no checksum on the header line".into()))?;
    let len: usize = parts
        .next()
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| bad("no length on the header line".into()))?;
    if body.len() != len || crc32c::crc32c(body.as_bytes()) != crc {
        return Err(bad(format!(
            "checksum or length mismatch ({} bytes, expected {len})",
            body.len()
        )));
    }
    let entries: Vec<Entry> =
        serde_json::from_str(body).map_err(|e| bad(format!("bad JSON: {e}")))?;
    Ok(entries
        .into_iter()
        .map(|e| (SourceId(e.id), e.schema))
        .collect())
}

/// Replaces the catalog of `dir` with `sources`, durably.
pub(crate) fn store(dir: &Path, sources: &[(SourceId, SourceSchema)]) -> Result<()> {
    let entries: Vec<Entry> = sources
        .iter()
        .map(|(id, s)| Entry {
            id: id.0,
            schema: s.clone(),
        })
        .collect();
    let body = serde_json::to_string_pretty(&entries).map_err(|e| Error::Corrupted {
        address: 0,
        reason: format!("cannot encode the catalog: {e}"),
    })?;
    let text = format!(
        "{VERSION_LINE} {:08x} {}\n{body}",
        crc32c::crc32c(body.as_bytes()),
        body.len()
    );
    write_durably(dir, FILE, text.as_bytes())
}

/// Writes `name` in `dir` atomically and durably: temporary file, fsync,
/// rename, fsync of the directory.
pub(crate) fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    sync_dir(dir)
}

/// Makes renames and deletions in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{FieldDef, FieldType};

    #[test]
    fn round_trip_and_corruption_is_reported() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        assert!(load(dir.path())?.is_empty());
        let s = SourceSchema {
            measurement: "kv".into(),
            tags: vec![("op".into(), "read".into())],
            fields: vec![FieldDef {
                name: "duration_us".into(),
                offset: 16,
                ty: FieldType::U64,
            }],
            index: None,
        };
        store(dir.path(), &[(SourceId(7), s.clone())])?;
        assert_eq!(load(dir.path())?, vec![(SourceId(7), s)]);
        let p = dir.path().join(FILE);
        let text = fs::read_to_string(&p)?.replace("read", "reaD");
        fs::write(&p, text)?;
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
        Ok(())
    }

    #[test]
    fn catalogs_from_before_string_fields_load_and_strings_round_trip(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        // A catalog as the engine wrote it before the string type existed.
        let body = r#"[
  {
    "id": 12,
    "schema": {
      "measurement": "kv",
      "tags": [["op", "read"]],
      "fields": [
        {"name": "thread_id", "offset": 0, "type": "u32"},
        {"name": "duration_us", "offset": 16, "type": "u64"}
      ],
      "index": {"field": "duration_us", "min": 0, "interval": 10, "n_bins": 10000}
    }
  }
]"#;
        let text = format!(
            "{VERSION_LINE} {:08x} {}\n{body}",
            crc32c::crc32c(body.as_bytes()),
            body.len()
        );
        fs::write(dir.path().join(FILE), text)?;
        let old = load(dir.path())?;
        assert_eq!(old.len(), 1);
        assert_eq!(old[0].1.fields[1].ty, FieldType::U64);
        assert_eq!(old[0].1.index.as_ref().map(|i| i.n_bins), Some(10_000));
        let mut with_string = old[0].1.clone();
        with_string.measurement = "span".into();
        with_string.fields.push(FieldDef {
            name: "trace_id".into(),
            offset: 24,
            ty: FieldType::String,
        });
        let both = vec![old[0].clone(), (SourceId(13), with_string)];
        store(dir.path(), &both)?;
        assert!(fs::read_to_string(dir.path().join(FILE))?.contains("\"string\""));
        assert_eq!(load(dir.path())?, both);
        Ok(())
    }
}
