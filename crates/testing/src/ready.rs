//! The ready file (`--ready-file PATH`): once every listener is bound, an
//! endpoint writes `{"pid":…, "tcp":"ip:port", "http":…, …}` there
//! atomically; tests read the bound addresses from it.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::process::Process;

/// What an endpoint's ready file says (`None`: that listener is off or the
/// app has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// The endpoint's pid.
    pub pid: u32,
    /// The telemetry stream.
    pub tcp: Option<SocketAddr>,
    /// loom-app's InfluxDB query API.
    pub http: Option<SocketAddr>,
    /// loom-app's OTLP/gRPC receiver.
    pub otlp_grpc: Option<SocketAddr>,
    /// loom-app's OTLP/HTTP receiver.
    pub otlp_http: Option<SocketAddr>,
}

impl Ready {
    /// Parses a ready file's text.
    pub fn parse(text: &str) -> Result<Ready, String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let addr = |k: &str| -> Result<Option<SocketAddr>, String> {
            match v.get(k) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => {
                    s.parse().map(Some).map_err(|e| format!("{k}: {s:?}: {e}"))
                }
                Some(other) => Err(format!("{k}: not an address: {other}")),
            }
        };
        Ok(Ready {
            pid: v
                .get("pid")
                .and_then(|p| p.as_u64())
                .ok_or("no pid")?
                .try_into()
                .map_err(|_| "pid out of range")?,
            tcp: addr("tcp")?,
            http: addr("http")?,
            otlp_grpc: addr("otlp_grpc")?,
            otlp_http: addr("otlp_http")?,
        })
    }

    /// Waits until `path` appears (the endpoint is listening) and parses
    /// it; `None` when the process exits first. Panics after `timeout`.
    pub fn wait(path: &Path, p: &mut Process, timeout: Duration) -> Option<Ready> {
        let end = Instant::now() + timeout;
        loop {
            if let Ok(text) = std::fs::read_to_string(path) {
                return Some(
                    Ready::parse(&text)
                        .unwrap_or_else(|e| panic!("ready file {}: {e}: {text}", path.display())),
                );
            }
            if p.exited() {
                return None;
            }
            assert!(
                Instant::now() < end,
                "no ready file {} after {timeout:?}; printed:\n{}",
                path.display(),
                p.lines_so_far().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_files_parse_with_listeners_off() {
        let r = Ready::parse(
            r#"{"pid":12,"tcp":"127.0.0.1:7000","http":null,"otlp_grpc":"127.0.0.1:4317"}"#,
        )
        .unwrap();
        assert_eq!(r.pid, 12);
        assert_eq!(r.tcp, Some("127.0.0.1:7000".parse().unwrap()));
        assert_eq!((r.http, r.otlp_http), (None, None));
        assert!(Ready::parse(r#"{"tcp":"127.0.0.1:1"}"#).is_err());
        assert!(Ready::parse(r#"{"pid":1,"tcp":"nowhere"}"#).is_err());
    }
}
