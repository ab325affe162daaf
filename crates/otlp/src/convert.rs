//! What converting one export request produces, and the bookkeeping every
//! signal shares: admitting the series, the record size limit, and the
//! reasons items were refused.

use loom::{FieldDef, RecordBuilder, SourceSchema};

use crate::registry::Registry;

/// Value of the `service` tag when the resource has no `service.name`
/// (OpenTelemetry's own default prefix).
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// Bounds on what one item may carry.
#[derive(Debug, Clone)]
pub struct Config {
    /// Longest tag value (service, span name, severity, metric attribute),
    /// bytes. Spans and logs with a longer one are refused; a longer metric
    /// attribute stays in `attributes` instead of becoming a tag.
    pub max_tag_bytes: usize,
    /// Most point attributes a metric series takes as tags (the first by
    /// key); the others stay in `attributes`.
    pub max_metric_tags: usize,
    /// Largest stored record (the store's limit); larger items are refused.
    pub max_record_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_tag_bytes: 256,
            max_metric_tags: 8,
            max_record_bytes: 60 * 1024,
        }
    }
}

/// What a conversion needs besides the request.
pub struct Context<'a> {
    /// The series registry (cardinality limit, layouts).
    pub registry: &'a Registry,
    /// Item bounds.
    pub config: &'a Config,
    /// Arrival time of the request, µs since the epoch (for log records
    /// that carry no time of their own).
    pub arrival_us: u64,
}

/// One record ready for the engine: its series, time and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaped {
    /// Series id (see [`crate::registry::series_id`]).
    pub source: u64,
    /// The item's own time, µs since the epoch.
    pub time_us: u64,
    /// The record (the series' layout).
    pub bytes: Vec<u8>,
}

/// Messages kept per request (the rest are counted).
const MESSAGES: usize = 3;

/// Records of one request and what was refused.
#[derive(Debug, Default)]
pub struct Converted {
    /// Accepted items as records.
    pub records: Vec<Shaped>,
    /// Items refused (spans, log records or data points).
    pub rejected: u64,
    messages: Vec<String>,
    /// Items refused for one of `messages`.
    covered: u64,
}

impl Converted {
    /// Counts one refused item and keeps its reason (the first few
    /// distinct reasons per request).
    pub fn reject(&mut self, why: String) {
        self.reject_n(1, why);
    }

    /// Counts `n` refused items with one reason.
    pub fn reject_n(&mut self, n: u64, why: String) {
        if n == 0 {
            return;
        }
        self.rejected += n;
        if self.messages.contains(&why) {
            self.covered += n;
        } else if self.messages.len() < MESSAGES {
            self.messages.push(why);
            self.covered += n;
        }
    }

    /// The partial-success `error_message`: the reasons, `; ` separated;
    /// empty when nothing was refused.
    pub fn message(&self) -> String {
        let mut m = self.messages.join("; ");
        let more = self.rejected - self.covered;
        if more > 0 {
            m.push_str(&format!("; {more} more refused for other reasons"));
        }
        m
    }
}

/// Admits the series and adds the builder's record, or counts the item as
/// refused with the reason.
#[allow(clippy::too_many_arguments)]
pub(crate) fn push(
    ctx: &Context,
    out: &mut Converted,
    measurement: &str,
    tags: &[(&str, &str)],
    layout: &[FieldDef],
    indexed: bool,
    time_us: u64,
    b: &RecordBuilder,
) {
    if b.len() > ctx.config.max_record_bytes {
        out.reject(format!(
            "a {measurement} record of {} bytes exceeds the store's limit of {} bytes",
            b.len(),
            ctx.config.max_record_bytes
        ));
        return;
    }
    let make = || -> SourceSchema { crate::model::schema(measurement, tags, layout, indexed) };
    match ctx.registry.admit(measurement, tags, layout, make) {
        Ok(source) => out.records.push(Shaped {
            source,
            time_us,
            bytes: b.bytes().to_vec(),
        }),
        Err(refusal) => out.reject(refusal.to_string()),
    }
}

/// ns since the epoch → whole µs.
pub(crate) fn us(ns: u64) -> u64 {
    ns / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_distinct_and_bounded() {
        let mut c = Converted::default();
        for i in 0..10 {
            c.reject(format!("reason {}", i % 5));
        }
        c.reject_n(5, "bulk".into());
        c.reject_n(0, "never".into());
        assert_eq!(c.rejected, 15);
        assert_eq!(
            c.message(),
            "reason 0; reason 1; reason 2; 9 more refused for other reasons"
        );
        assert_eq!(Converted::default().message(), "");
    }
}
