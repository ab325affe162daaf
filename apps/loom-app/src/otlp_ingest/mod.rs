//! OTLP ingest: OpenTelemetry spans, log records and metric points over
//! gRPC (`--otlp-grpc`, default 127.0.0.1:4317) and HTTP (`--otlp-http`,
//! default 127.0.0.1:4318), into the same store as the TCP stream.
//!
//! Both servers run on one small tokio runtime; their handlers log each
//! request raw in the intake log (`--otlp-ack durable`, the default; see
//! `raw.rs`), convert it with the `otlp` crate (series admitted by the
//! shared [`otlp::Registry`], which enforces `--otlp-max-series`) and queue
//! the records on the ingest queue as one [`crate::receive::Msg::Otlp`].
//! The ingest thread stores them through [`OtlpStage`]; the handler
//! answers success once its log entry is durable and the records are
//! taken (see `intake.rs`). A full queue or a
//! request not durable in time answers "retry later" (gRPC UNAVAILABLE,
//! HTTP 503 + Retry-After), refused items (late ones included) are
//! reported in OTLP's partial-success response; all are counted.

mod admission;
mod conn;
mod grpc;
mod grpc_raw;
mod http;
mod intake;
mod raw;
mod stage;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

pub use admission::Admission;
pub use intake::{
    late_reason, not_stored_reason, retry_message, AckMode, Acks, Intake, Outcome, RETRY_AFTER_S,
};
pub use raw::replayable;
pub use stage::OtlpStage;

/// Where OTLP/gRPC listens unless `--otlp-grpc` says otherwise.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:4317";
/// Where OTLP/HTTP listens unless `--otlp-http` says otherwise.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:4318";

/// The running OTLP servers; dropping this stops them.
pub struct Servers {
    runtime: Option<tokio::runtime::Runtime>,
    stop: tokio::sync::watch::Sender<bool>,
    /// Where gRPC listens, when on.
    pub grpc: Option<SocketAddr>,
    /// Where HTTP listens, when on.
    pub http: Option<SocketAddr>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

/// Binds `flag`'s address (`value`, or `default` when the flag is not
/// given): `None` when off, or when the default port is taken (with a
/// warning); an explicit address that cannot be bound is an error, and so
/// is a non-loopback one without a token.
fn bind(
    flag: &str,
    value: Option<&str>,
    default: &str,
    has_token: bool,
) -> anyhow::Result<Option<TcpListener>> {
    let addr = value.unwrap_or(default);
    if addr == "off" {
        return Ok(None);
    }
    let parsed: SocketAddr = addr
        .parse()
        .map_err(|e| anyhow::anyhow!("{flag} {addr:?}: expected IP:PORT or off ({e})"))?;
    anyhow::ensure!(
        parsed.ip().is_loopback() || has_token,
        "{flag} {addr}: a non-loopback address needs --auth-token-file"
    );
    match TcpListener::bind(parsed) {
        Ok(l) => Ok(Some(l)),
        Err(e) if value.is_none() => {
            println!("{flag} off: cannot listen on {addr} ({e}); use {flag} ADDR");
            Ok(None)
        }
        Err(e) => Err(e).with_context(|| format!("{flag} {addr}: listening")),
    }
}

/// Where the OTLP servers listen (`--otlp-grpc`, `--otlp-http`: an
/// address, `off`, or `None` for the default) and how many threads serve
/// them (`--otlp-threads`).
pub struct Listen<'a> {
    /// `--otlp-grpc`.
    pub grpc: Option<&'a str>,
    /// `--otlp-http`.
    pub http: Option<&'a str>,
    /// `--otlp-threads`.
    pub threads: usize,
    /// The gRPC listener's connection bound (`--max-connections`).
    pub grpc_gate: Arc<loom::ConnectionGate>,
    /// The HTTP listener's connection bound (`--max-connections`).
    pub http_gate: Arc<loom::ConnectionGate>,
    /// A connection the server has had nothing to answer on for this long
    /// is closed (`--idle-timeout-ms`; see `conn.rs`).
    pub idle_timeout: Duration,
}

/// Starts the servers `listen` asks for; `None` when both are off.
pub fn start(
    listen: &Listen<'_>,
    intake: Arc<Intake>,
    token: Option<&str>,
) -> anyhow::Result<Option<Servers>> {
    let grpc = bind(
        "--otlp-grpc",
        listen.grpc,
        DEFAULT_GRPC_ADDR,
        token.is_some(),
    )?;
    let http = bind(
        "--otlp-http",
        listen.http,
        DEFAULT_HTTP_ADDR,
        token.is_some(),
    )?;
    if grpc.is_none() && http.is_none() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(listen.threads)
        .thread_name("otlp")
        .enable_all()
        .build()
        .context("starting the OTLP runtime")?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let signal = move || {
        let mut rx = stopped.clone();
        async move {
            let _ = rx.changed().await;
        }
    };
    let mut servers = Servers {
        runtime: None,
        stop,
        grpc: None,
        http: None,
    };
    if let Some(l) = grpc {
        l.set_nonblocking(true).context("--otlp-grpc: socket")?;
        servers.grpc = Some(l.local_addr().context("--otlp-grpc: socket")?);
        let refining = intake.clone();
        let routes = grpc::Services::new(intake.clone()).router();
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(l).context("--otlp-grpc: socket")?
        };
        let incoming =
            conn::Gated::new(listener, listen.grpc_gate.clone(), listen.idle_timeout).incoming();
        let done = signal();
        runtime.spawn(async move {
            let served = tonic::transport::Server::builder()
                .layer(tower::util::MapResponseLayer::new(
                    move |r: axum::http::Response<tonic::body::Body>| {
                        grpc::refine_status(r, &refining)
                    },
                ))
                .add_routes(routes)
                .serve_with_incoming_shutdown(incoming, done)
                .await;
            if let Err(e) = served {
                log::error!("OTLP/gRPC server stopped: {e}");
            }
        });
        println!(
            "OTLP gRPC on {}",
            servers.grpc.map(|a| a.to_string()).unwrap_or_default()
        );
    }
    if let Some(l) = http {
        l.set_nonblocking(true).context("--otlp-http: socket")?;
        servers.http = Some(l.local_addr().context("--otlp-http: socket")?);
        let app = http::router(intake);
        let (http_gate, idle) = (listen.http_gate.clone(), listen.idle_timeout);
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(l).context("--otlp-http: socket")?
        };
        let done = signal();
        runtime.spawn(async move {
            let listener = conn::Gated::new(listener, http_gate, idle);
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(done)
                .await;
            if let Err(e) = served {
                log::error!("OTLP/HTTP server stopped: {e}");
            }
        });
        println!(
            "OTLP HTTP on http://{}",
            servers.http.map(|a| a.to_string()).unwrap_or_default()
        );
    }
    servers.runtime = Some(runtime);
    Ok(Some(servers))
}
