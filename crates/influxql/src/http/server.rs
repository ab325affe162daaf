//! hyper glue: accept connections, read each request within the size and
//! time bounds, answer it on a blocking thread.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use loom::{Admission, Reader};
use tokio::sync::{oneshot, Semaphore};

use super::config::HttpConfig;
use super::handler::{handle, with_version, write_request};
use super::message::{Request, Response};
use super::write::WriteSink;
use crate::parse::depth::SMALLEST_QUERY_STACK;

/// A running server; dropping it (or `stop`) shuts it down.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for the server thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn to_hyper(r: Response) -> hyper::Response<Full<Bytes>> {
    let mut b = hyper::Response::builder().status(r.status);
    for (k, v) in &r.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Full::new(Bytes::from(r.body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// Reads a body of at most `limit` bytes within the read timeout; `Err`
/// is the answer to send instead.
async fn read_body(body: Incoming, limit: usize, cfg: &HttpConfig) -> Result<Vec<u8>, Response> {
    let limited = Limited::new(body, limit);
    match tokio::time::timeout(cfg.read_timeout, limited.collect()).await {
        Err(_) => Err(Response::error(408, "timed out reading the request body")),
        Ok(Err(e)) => {
            let too_big = e
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            Err(if too_big {
                Response::error(413, &format!("request body larger than {limit} bytes"))
            } else {
                Response::error(400, &format!("reading the request body: {e}"))
            })
        }
        Ok(Ok(b)) => Ok(b.to_bytes().to_vec()),
    }
}

async fn answer(
    req: hyper::Request<Incoming>,
    reader: Reader,
    cfg: Arc<HttpConfig>,
    permits: Arc<Semaphore>,
    sink: Option<Arc<dyn WriteSink>>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let write = parts.uri.path() == "/write";
    let limit = if write {
        cfg.max_write_bytes
    } else {
        cfg.max_body_bytes
    };
    let body = match read_body(body, limit, &cfg).await {
        Ok(b) => b,
        Err(r) => return Ok(to_hyper(with_version(r))),
    };
    let request = Request {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts
            .headers
            .iter()
            .filter_map(|(k, v)| {
                v.to_str()
                    .ok()
                    .map(|v| (k.as_str().to_lowercase(), v.to_string()))
            })
            .collect(),
        body,
    };
    if write {
        // Writes wait for durability on this runtime, not on a query thread.
        let r = match (write_request(&cfg, request), sink) {
            (Err(r), _) => r,
            (Ok(_), None) => Response::error(
                501,
                "writes are not served here (loom-app serves /write; see docs/write.md)",
            ),
            (Ok(w), Some(sink)) => sink.write(w).await,
        };
        return Ok(to_hyper(with_version(r)));
    }
    let Ok(permit) = permits.acquire_owned().await else {
        return Ok(to_hyper(Response::error(503, "server shutting down")));
    };
    let r = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        handle(&reader, &cfg, &request)
    })
    .await
    .unwrap_or_else(|_| Response::error(500, "the query thread failed"));
    Ok(to_hyper(r))
}

/// Returns once the gate has evicted the connection (checked twice a second).
async fn evicted(a: &Admission) {
    while !a.evicted() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Serves the API on `listener` from a thread of its own; `/write`
/// answers 501.
pub fn serve(
    listener: TcpListener,
    reader: Reader,
    cfg: HttpConfig,
) -> std::io::Result<ServerHandle> {
    serve_with_writes(listener, reader, cfg, None)
}

/// Serves the API on `listener` from a thread of its own, `/write` bodies
/// going to `sink` (501 without one).
pub fn serve_with_writes(
    listener: TcpListener,
    reader: Reader,
    cfg: HttpConfig,
    sink: Option<Arc<dyn WriteSink>>,
) -> std::io::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(cfg.query_threads.max(1) + 1)
        // Queries run on these threads: their stack is the one the parser's
        // depth bound is measured against (`parse::depth`), so set it here
        // rather than inherit a default that may change.
        .thread_stack_size(SMALLEST_QUERY_STACK)
        .thread_name("loom-http")
        .enable_all()
        .build()?;
    let (tx, mut rx) = oneshot::channel::<()>();
    let cfg = Arc::new(cfg);
    let permits = Arc::new(Semaphore::new(cfg.query_threads.max(1)));
    let thread = std::thread::Builder::new()
        .name("loom-http".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                loop {
                    let conn = tokio::select! {
                        _ = &mut rx => break,
                        c = listener.accept() => c,
                    };
                    let Ok((stream, _)) = conn else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    // Over the limit the connection is dropped (closed)
                    // unread; the gate counts and logs it.
                    let admission = match &cfg.gate {
                        Some(g) => match g.enter() {
                            Some(a) => Some(a),
                            None => continue,
                        },
                        None => None,
                    };
                    let (reader, cfg, permits) = (reader.clone(), cfg.clone(), permits.clone());
                    let sink = sink.clone();
                    let read_timeout = cfg.read_timeout;
                    tokio::spawn(async move {
                        let admission = admission.map(Arc::new);
                        let touch = admission.clone();
                        let svc = service_fn(move |req| {
                            // A request is activity: this connection is not
                            // the idle one to evict at the limit.
                            if let Some(a) = &touch {
                                a.touch();
                            }
                            answer(
                                req,
                                reader.clone(),
                                cfg.clone(),
                                permits.clone(),
                                sink.clone(),
                            )
                        });
                        let serving = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(read_timeout)
                            .serve_connection(TokioIo::new(stream), svc);
                        let served = match &admission {
                            None => serving.await,
                            // Dropping the connection closes it when the
                            // gate evicts it to make room for a new one.
                            Some(a) => tokio::select! {
                                r = serving => r,
                                () = evicted(a) => {
                                    a.gate().timed_out();
                                    return;
                                }
                            },
                        };
                        // Idle past the header timeout, or trickling a header.
                        if let (Err(e), Some(a)) = (served, &admission) {
                            if e.is_timeout() {
                                a.gate().timed_out();
                            }
                        }
                    });
                }
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        })?;
    Ok(ServerHandle {
        addr,
        stop: Some(tx),
        thread: Some(thread),
    })
}
