//! Routing, `/ping` and the `/query` endpoint, on buffered requests; the
//! checks a `/write` request passes before it reaches the write sink.

use std::time::Instant;

use loom::Reader;

use super::auth::authorized;
use super::config::HttpConfig;
use super::message::{Request, Response};
use super::write::WriteRequest;
use super::{INFLUXDB_BUILD, INFLUXDB_VERSION};
use crate::encode::{self, Epoch};
use crate::error::Error;
use crate::exec::Limits;

/// Adds the headers every InfluxDB 1.x answer carries.
pub fn with_version(mut r: Response) -> Response {
    r.headers
        .push(("x-influxdb-version".into(), INFLUXDB_VERSION.into()));
    r.headers
        .push(("x-influxdb-build".into(), INFLUXDB_BUILD.into()));
    r
}

/// Answers one request. Never panics on any input.
pub fn handle(reader: &Reader, cfg: &HttpConfig, req: &Request) -> Response {
    with_version(route(reader, cfg, req))
}

/// The request's parameters once its credentials pass; `Err` is the
/// answer (400 for parameters that do not decode, 401 without the token).
fn checked_params(cfg: &HttpConfig, req: &Request) -> Result<Vec<(String, String)>, Response> {
    let params = req.params().map_err(|e| Response::error(400, &e))?;
    if let Some(token) = &cfg.auth_token {
        if !authorized(req, &params, token) {
            let mut r = Response::error(401, "authorization failed");
            r.headers
                .push(("www-authenticate".into(), "Basic realm=\"loom\"".into()));
            return Err(r);
        }
    }
    Ok(params)
}

/// `/ping`, as InfluxDB 1.x answers it: without credentials, 204 (200
/// with the version as JSON when `verbose=true`).
fn ping(req: &Request) -> Response {
    let verbose = req
        .params()
        .unwrap_or_default()
        .iter()
        .any(|(k, v)| k == "verbose" && v != "false" && v != "0");
    if verbose {
        return Response::json(
            200,
            &serde_json::json!({ "version": super::INFLUXDB_VERSION }),
        );
    }
    Response {
        status: 204,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

/// A `/write` request once its method and credentials pass, for the write
/// sink; `Err` is the answer.
pub fn write_request(cfg: &HttpConfig, req: Request) -> Result<WriteRequest, Response> {
    if req.method != "POST" {
        return Err(Response::error(
            405,
            &format!("method {} not allowed on /write", req.method),
        ));
    }
    // The body is line protocol, never form parameters.
    let query_only = Request {
        body: Vec::new(),
        ..req.clone()
    };
    let params = checked_params(cfg, &query_only)?;
    Ok(WriteRequest {
        params,
        headers: req.headers,
        body: req.body,
    })
}

fn route(reader: &Reader, cfg: &HttpConfig, req: &Request) -> Response {
    if req.path == "/ping" && matches!(req.method.as_str(), "GET" | "HEAD") {
        return ping(req);
    }
    let params = match checked_params(cfg, req) {
        Ok(p) => p,
        Err(r) => return r,
    };
    match (req.method.as_str(), req.path.as_str()) {
        ("GET" | "POST", "/query") => query(reader, cfg, &params),
        // Buffered requests have no write sink (the server routes /write
        // to one before this point).
        ("POST", "/write") => Response::error(501, "writes are not served here"),
        (_, "/ping" | "/query" | "/write") => Response::error(
            405,
            &format!("method {} not allowed on {}", req.method, req.path),
        ),
        _ => Response::error(404, &format!("no such endpoint: {}", req.path)),
    }
}

fn query(reader: &Reader, cfg: &HttpConfig, params: &[(String, String)]) -> Response {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let Some(q) = get("q") else {
        return Response::error(400, "missing required parameter \"q\"");
    };
    let epoch = match get("epoch") {
        None | Some("") => Epoch::Rfc3339,
        Some(e) => match Epoch::parse(e) {
            Ok(e) => e,
            Err(err) => return Response::error(400, &err.to_string()),
        },
    };
    let limits = Limits {
        deadline: Some(Instant::now() + cfg.query_timeout),
        max_rows: cfg.max_rows,
        text: cfg.text_limits,
        threads: cfg.statement_threads,
    };
    let snap = reader.snapshot();
    match crate::query::run(&snap, q, crate::query::now_ns(), &limits) {
        Ok(results) => Response::json(200, &encode::results(&results, epoch)),
        Err(e @ (Error::Parse { .. } | Error::Unsupported(_))) => {
            Response::error(400, &e.to_string())
        }
        Err(e) => Response::error(500, &e.to_string()),
    }
}
