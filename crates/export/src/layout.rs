//! The hive layout of exported files:
//! `measurement=M/host=H/date=YYYY-MM-DD/hour=HH/<first>-<last>-<position>.parquet`
//! (`first`, `last`: the file's first and last record time, µs since the
//! epoch; `position`: the log position its export batch started at, so two
//! batches never name a file alike). Dates and hours are UTC.

/// µs in one hour.
pub const HOUR_US: u64 = 3_600_000_000;

/// Where one file's records belong: measurement, host and UTC hour.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition {
    /// Measurement name.
    pub measurement: String,
    /// The host the records came from.
    pub host: String,
    /// Hours since the epoch (UTC).
    pub hour: u64,
}

impl Partition {
    /// The partition's directory, relative to the target's root.
    pub fn dir(&self) -> String {
        let (y, m, d) = civil_date(self.hour / 24);
        format!(
            "measurement={}/host={}/date={y:04}-{m:02}-{d:02}/hour={:02}",
            escape(&self.measurement),
            escape(&self.host),
            self.hour % 24
        )
    }

    /// A file's path for records `first..=last` of a batch starting at log
    /// position `position`.
    pub fn file(&self, first: u64, last: u64, position: u64) -> String {
        format!("{}/{first}-{last}-{position}.parquet", self.dir())
    }

    /// A file's path for records `first..=last` of open chunks, tail batch
    /// `number` at log position `position`.
    pub fn tail_file(&self, first: u64, last: u64, position: u64, number: u64) -> String {
        format!(
            "{}/{first}-{last}-{position}-open{number}.parquet",
            self.dir()
        )
    }
}

/// Escapes what would break a path segment or a hive `key=value` pair
/// (`/`, `=`, `%`, control characters, a leading `.` or `_` that engines
/// take for hidden files) as `%XX`, the way Hive and Spark escape
/// partition values.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let hidden = i == 0 && (c == '.' || c == '_');
        if hidden || c == '/' || c == '=' || c == '%' || c == '\\' || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    if out.is_empty() {
        out.push_str("%00");
    }
    out
}

/// The value [`escape`] turned into `escaped` (`%XX` decoded; invalid
/// escapes kept as they are).
pub fn unescape(escaped: &str) -> String {
    let b = escaped.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    let s = String::from_utf8_lossy(&out).into_owned();
    // `escape` writes an empty value as `%00`.
    if s == "\u{0}" {
        String::new()
    } else {
        s
    }
}

/// Year, month (1-12), day (1-31) of the day `days` after 1970-01-01
/// (proleptic Gregorian calendar, days in 400-year eras).
pub fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_known_days() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(59), (1970, 3, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(20_415), (2025, 11, 23));
        // Day by day against a month-length walk over 60 years.
        let (mut y, mut m, mut d) = (1970u64, 1u64, 1u64);
        for day in 0..22_000 {
            assert_eq!(civil_date(day), (y, m, d), "day {day}");
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let len = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            d += 1;
            if d > len[(m - 1) as usize] {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn paths_are_hive_partitions() {
        let p = Partition {
            measurement: "syscall".into(),
            host: "db-3".into(),
            hour: 20_415 * 24 + 10,
        };
        assert_eq!(
            p.file(1, 2, 3),
            "measurement=syscall/host=db-3/date=2025-11-23/hour=10/1-2-3.parquet"
        );
        assert_eq!(escape("a/b=c"), "a%2Fb%3Dc");
        assert_eq!(escape("_x"), "%5Fx");
        assert_eq!(escape(""), "%00");
        for v in ["a/b=c", "_x", "db-3", "100%", "ünï/cödé"] {
            assert_eq!(unescape(&escape(v)), v);
        }
    }
}
