//! Payloads of the version-2 control frames (HELLO, WELCOME, REFUSE,
//! SERIES; ACK has none: its header's sequence field is the message).
//!
//! Strings are a u16 little-endian byte length then UTF-8 bytes; integers
//! are little endian. Every decoder checks lengths and bounds, rejects
//! trailing bytes and never panics.

use crate::model::extra_tag_key;
use crate::WireError;

/// Longest token, bytes.
pub const MAX_TOKEN_LEN: usize = 1024;
/// Longest host name, agent description or tag value, bytes.
pub const MAX_NAME_LEN: usize = 255;
/// Longest refusal reason, bytes.
pub const MAX_REASON_LEN: usize = 1024;
/// Most tags one SERIES frame declares.
pub const MAX_SERIES_TAGS: usize = 8;

/// HELLO flag: the sender wants ACK frames (reserved for the receiver's
/// durability acknowledgements).
pub const HELLO_ACKS_WANTED: u32 = 1;
/// HELLO flag: the records' own times are wall-clock µs since the Unix
/// epoch, to be stored as they are (never moved).
pub const HELLO_WALL_CLOCK: u32 = 2;
const HELLO_KNOWN_FLAGS: u32 = HELLO_ACKS_WANTED | HELLO_WALL_CLOCK;

/// The first frame of a version-2 connection: who is sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// A stable id of the sender (the same after its restarts), so a
    /// receiver can keep per-sender state such as the last durable sequence.
    pub sender_id: u64,
    /// `HELLO_*` flags.
    pub flags: u32,
    /// The sequence number of this connection's first data frame (a
    /// reconnecting sender continues its numbering).
    pub next_seq: u64,
    /// The receiver's token (empty: none).
    pub token: String,
    /// The sender's host name: the `host` tag of its series.
    pub host: String,
    /// The sender's program and version (`loom-agent 0.1.0`), for logs.
    pub agent: String,
}

/// The receiver's answer to an accepted HELLO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome {
    /// The highest sequence number of this sender the receiver holds
    /// durably (0: none or not tracked).
    pub durable_seq: u64,
    /// Bit 0: the receiver will send ACK frames.
    pub flags: u32,
    /// The receiver's program and version, for logs.
    pub receiver: String,
}

/// Tags that data frames naming `series_ref` add to their records' series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesTags {
    /// The reference (≥ 1) data frames carry in their header.
    pub series_ref: u32,
    /// Tag keys (from `model::EXTRA_TAG_KEYS`, not `host`) and values, sorted
    /// by key, no key twice.
    pub tags: Vec<(&'static str, String)>,
}

fn bad(what: impl Into<String>) -> WireError {
    WireError::BadControl(what.into())
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A cursor over a control payload.
struct Cursor<'a> {
    b: &'a [u8],
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.b.len() < n {
            return Err(bad(format!("{} payload is truncated", self.what)));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn string(&mut self, field: &str, max: usize) -> Result<String, WireError> {
        let n = usize::from(self.u16()?);
        if n > max {
            return Err(bad(format!(
                "{} {field} of {n} bytes is longer than {max}",
                self.what
            )));
        }
        let b = self.take(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| bad(format!("{} {field} is not UTF-8", self.what)))
    }

    fn end(&self) -> Result<(), WireError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(bad(format!(
                "{} payload has {} trailing bytes",
                self.what,
                self.b.len()
            )))
        }
    }
}

fn check_len(field: &str, s: &str, max: usize) -> Result<(), WireError> {
    if s.len() > max {
        return Err(bad(format!(
            "{field} of {} bytes is longer than {max}",
            s.len()
        )));
    }
    Ok(())
}

impl Hello {
    /// The payload; fails when a string is longer than its bound.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        check_len("token", &self.token, MAX_TOKEN_LEN)?;
        check_len("host", &self.host, MAX_NAME_LEN)?;
        check_len("agent", &self.agent, MAX_NAME_LEN)?;
        let mut out = Vec::new();
        out.extend_from_slice(&self.sender_id.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.next_seq.to_le_bytes());
        put_str(&mut out, &self.token);
        put_str(&mut out, &self.host);
        put_str(&mut out, &self.agent);
        Ok(out)
    }

    /// Decodes a HELLO payload.
    pub fn decode(b: &[u8]) -> Result<Hello, WireError> {
        let mut c = Cursor { b, what: "HELLO" };
        let sender_id = c.u64()?;
        let flags = c.u32()?;
        if flags & !HELLO_KNOWN_FLAGS != 0 {
            return Err(bad(format!("HELLO has unknown flags {flags:#x}")));
        }
        let next_seq = c.u64()?;
        let token = c.string("token", MAX_TOKEN_LEN)?;
        let host = c.string("host", MAX_NAME_LEN)?;
        let agent = c.string("agent", MAX_NAME_LEN)?;
        c.end()?;
        if host.is_empty() {
            return Err(bad("HELLO names no host"));
        }
        Ok(Hello {
            sender_id,
            flags,
            next_seq,
            token,
            host,
            agent,
        })
    }

    /// True when the records' times are wall-clock µs to store as they are.
    pub fn wall_clock(&self) -> bool {
        self.flags & HELLO_WALL_CLOCK != 0
    }
}

impl Welcome {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.durable_seq.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        let r: String = self.receiver.chars().take(MAX_NAME_LEN / 4).collect();
        put_str(&mut out, &r);
        out
    }

    /// Decodes a WELCOME payload.
    pub fn decode(b: &[u8]) -> Result<Welcome, WireError> {
        let mut c = Cursor { b, what: "WELCOME" };
        let w = Welcome {
            durable_seq: c.u64()?,
            flags: c.u32()?,
            receiver: c.string("receiver", MAX_NAME_LEN)?,
        };
        c.end()?;
        Ok(w)
    }
}

/// The payload of a REFUSE frame: the reason, cut to [`MAX_REASON_LEN`] bytes.
pub fn encode_refusal(reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_REASON_LEN);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Vec::new();
    put_str(&mut out, &reason[..end]);
    out
}

/// The reason in a REFUSE payload.
pub fn decode_refusal(b: &[u8]) -> Result<String, WireError> {
    let mut c = Cursor { b, what: "REFUSE" };
    let r = c.string("reason", MAX_REASON_LEN)?;
    c.end()?;
    Ok(r)
}

impl SeriesTags {
    /// Tags for `series_ref` from `(key, value)` pairs: keys must be in
    /// `model::EXTRA_TAG_KEYS` (not `host`, which the HELLO gives), values
    /// 1..=255 bytes, at most [`MAX_SERIES_TAGS`], no key twice.
    pub fn new(series_ref: u32, pairs: &[(&str, &str)]) -> Result<SeriesTags, WireError> {
        if series_ref == 0 {
            return Err(bad("series reference 0 is reserved for untagged data"));
        }
        if pairs.len() > MAX_SERIES_TAGS {
            return Err(bad(format!(
                "{} tags in one SERIES frame (at most {MAX_SERIES_TAGS})",
                pairs.len()
            )));
        }
        let mut tags = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let key = extra_tag_key(k)
                .filter(|k| *k != "host")
                .ok_or_else(|| bad(format!("SERIES tag key {k:?} is not allowed")))?;
            if v.is_empty() || v.len() > MAX_NAME_LEN {
                return Err(bad(format!(
                    "SERIES tag {k} has a value of {} bytes (1..={MAX_NAME_LEN})",
                    v.len()
                )));
            }
            tags.push((key, v.to_string()));
        }
        tags.sort_by(|a, b| a.0.cmp(b.0));
        if tags.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(bad("SERIES declares a tag key twice"));
        }
        Ok(SeriesTags { series_ref, tags })
    }

    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.series_ref.to_le_bytes());
        out.extend_from_slice(&(self.tags.len() as u16).to_le_bytes());
        for (k, v) in &self.tags {
            put_str(&mut out, k);
            put_str(&mut out, v);
        }
        out
    }

    /// Decodes a SERIES payload (with the checks of [`SeriesTags::new`]).
    pub fn decode(b: &[u8]) -> Result<SeriesTags, WireError> {
        let mut c = Cursor { b, what: "SERIES" };
        let series_ref = c.u32()?;
        let n = usize::from(c.u16()?);
        if n > MAX_SERIES_TAGS {
            return Err(bad(format!(
                "{n} tags in one SERIES frame (at most {MAX_SERIES_TAGS})"
            )));
        }
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            let k = c.string("tag key", MAX_NAME_LEN)?;
            let v = c.string("tag value", MAX_NAME_LEN)?;
            pairs.push((k, v));
        }
        c.end()?;
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        SeriesTags::new(series_ref, &refs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_payloads_round_trip_and_reject_garbage() {
        let h = Hello {
            sender_id: 0xfeed,
            flags: HELLO_WALL_CLOCK,
            next_seq: 7,
            token: "s3cret".into(),
            host: "db-3".into(),
            agent: "loom-agent 0.1.0".into(),
        };
        let b = h.encode().unwrap();
        assert_eq!(Hello::decode(&b).unwrap(), h);
        for cut in 0..b.len() {
            assert!(Hello::decode(&b[..cut]).is_err(), "cut {cut}");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(Hello::decode(&extra).is_err());
        let mut flags = b.clone();
        flags[8] = 0x80;
        assert!(Hello::decode(&flags).is_err());

        let w = Welcome {
            durable_seq: 3,
            flags: 0,
            receiver: "loom-app".into(),
        };
        assert_eq!(Welcome::decode(&w.encode()).unwrap(), w);
        assert_eq!(
            decode_refusal(&encode_refusal("wrong token")).unwrap(),
            "wrong token"
        );

        let s = SeriesTags::new(5, &[("comm", "postgres"), ("cgroup", "/db")]).unwrap();
        assert_eq!(s.tags[0].0, "cgroup");
        assert_eq!(SeriesTags::decode(&s.encode()).unwrap(), s);
        assert!(SeriesTags::new(0, &[("comm", "x")]).is_err());
        assert!(SeriesTags::new(1, &[("host", "x")]).is_err());
        assert!(SeriesTags::new(1, &[("name", "x")]).is_err());
        assert!(SeriesTags::new(1, &[("comm", "")]).is_err());
        assert!(SeriesTags::new(1, &[("comm", "a"), ("comm", "b")]).is_err());
    }
}
