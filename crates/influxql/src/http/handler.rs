//! Routing and the `/query` endpoint, on buffered requests.

use std::time::Instant;

use loom::Reader;

use super::auth::authorized;
use super::config::HttpConfig;
use super::message::{Request, Response};
use super::INFLUXDB_VERSION;
use crate::encode::{self, Epoch};
use crate::error::Error;
use crate::exec::Limits;

fn with_version(mut r: Response) -> Response {
    r.headers
        .push(("x-influxdb-version".into(), INFLUXDB_VERSION.into()));
    r.headers.push(("x-influxdb-build".into(), "OSS".into()));
    r
}

/// Answers one request. Never panics on any input.
pub fn handle(reader: &Reader, cfg: &HttpConfig, req: &Request) -> Response {
    with_version(route(reader, cfg, req))
}

fn route(reader: &Reader, cfg: &HttpConfig, req: &Request) -> Response {
    let params = match req.params() {
        Ok(p) => p,
        Err(e) => return Response::error(400, &e),
    };
    if let Some(token) = &cfg.auth_token {
        if !authorized(req, &params, token) {
            let mut r = Response::error(401, "authorization failed");
            r.headers
                .push(("www-authenticate".into(), "Basic realm=\"loom\"".into()));
            return r;
        }
    }
    match (req.method.as_str(), req.path.as_str()) {
        ("GET" | "HEAD", "/ping") => Response {
            status: 204,
            headers: Vec::new(),
            body: Vec::new(),
        },
        ("GET" | "POST", "/query") => query(reader, cfg, &params),
        (_, "/ping" | "/query") => Response::error(
            405,
            &format!("method {} not allowed on {}", req.method, req.path),
        ),
        (_, "/write") => Response::error(
            501,
            "writes go through Loom's telemetry endpoint, not /write",
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
