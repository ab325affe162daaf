//! Starts the InfluxDB 1.x query API beside ingest.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use influxql::http::{serve_with_writes, HttpConfig, ServerHandle, WriteSink};
use influxql::parse::TextLimits;
use loom::{ConnectionGate, Reader};

use crate::cli::Cli;

/// Where the API listens unless `--http` says otherwise.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8186";

/// The token of `--auth-token-file`, if given (the InfluxDB API and the
/// OTLP receivers share it).
pub fn auth_token(cli: &Cli) -> anyhow::Result<Option<String>> {
    let Some(p) = &cli.auth_token_file else {
        return Ok(None);
    };
    let t =
        std::fs::read_to_string(p).with_context(|| format!("--auth-token-file {}", p.display()))?;
    let t = t.trim().to_string();
    anyhow::ensure!(!t.is_empty(), "--auth-token-file {} is empty", p.display());
    Ok(Some(t))
}

/// Starts the API as the flags ask, `/write` bodies going to `writes`;
/// `None` when it is off or the default port is taken (with a warning).
/// `gate` bounds its open connections (`--max-connections`).
pub fn start(
    cli: &Cli,
    reader: Reader,
    writes: Option<Arc<dyn WriteSink>>,
    gate: Arc<ConnectionGate>,
) -> anyhow::Result<Option<ServerHandle>> {
    let explicit = cli.http.is_some();
    let addr = cli.http.as_deref().unwrap_or(DEFAULT_HTTP_ADDR);
    if addr == "off" {
        return Ok(None);
    }
    let parsed: SocketAddr = addr
        .parse()
        .map_err(|e| anyhow::anyhow!("--http {addr:?}: expected IP:PORT or off ({e})"))?;
    let auth_token = auth_token(cli)?;
    anyhow::ensure!(
        parsed.ip().is_loopback() || auth_token.is_some(),
        "--http {addr}: a non-loopback address needs --auth-token-file"
    );
    let listener = match TcpListener::bind(parsed) {
        Ok(l) => l,
        Err(e) if !explicit => {
            println!("InfluxDB API off: cannot listen on {addr} ({e}); use --http ADDR");
            return Ok(None);
        }
        Err(e) => return Err(e).with_context(|| format!("--http {addr}: listening")),
    };
    let cfg = HttpConfig {
        auth_token,
        query_timeout: Duration::from_millis(cli.http_query_timeout_ms),
        max_rows: cli.http_max_rows,
        max_body_bytes: cli.http_max_body_bytes,
        max_write_bytes: cli.http_max_write_bytes,
        query_threads: cli.http_query_threads,
        statement_threads: cli.http_statement_threads,
        text_limits: TextLimits {
            max_bytes: cli.http_max_query_bytes,
            max_statements: cli.http_max_statements,
        },
        gate: Some(gate),
        ..HttpConfig::default()
    };
    let server =
        serve_with_writes(listener, reader, cfg, writes).context("starting the HTTP API")?;
    println!("InfluxDB API on http://{}", server.local_addr());
    Ok(Some(server))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn try_start(args: &[&str]) -> anyhow::Result<Option<ServerHandle>> {
        let dir = tempfile::tempdir()?;
        let (_w, reader) = loom::open(dir.path(), loom::Config::default())?;
        let mut all = vec!["loom-app"];
        all.extend_from_slice(args);
        start(
            &Cli::try_parse_from(all)?,
            reader,
            None,
            ConnectionGate::new("test", 4),
        )
    }

    #[test]
    fn non_loopback_needs_a_token_and_bad_addresses_are_named() {
        let e = try_start(&["--http", "0.0.0.0:0"])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("--auth-token-file")));
        let e = try_start(&["--http", "localhost:x"])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("--http") && e.contains("off")));
        assert!(try_start(&["--http", "off"]).is_ok_and(|s| s.is_none()));
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        std::fs::write(&token, "t0k\n").expect("write token");
        let t = token.to_string_lossy().to_string();
        // Tests stay on loopback: a token file is read and accepted there too.
        let s = try_start(&["--http", "127.0.0.1:0", "--auth-token-file", &t]).expect("start");
        assert!(s.is_some());
        std::fs::write(&token, "  \n").expect("write token");
        let e = try_start(&["--http", "127.0.0.1:0", "--auth-token-file", &t]).err();
        assert!(e.is_some_and(|e| e.to_string().contains("empty")));
    }
}
