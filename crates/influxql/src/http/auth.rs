//! InfluxDB 1.x credentials carrying Loom's token.

use base64::Engine;

use super::message::Request;

fn same(a: &[u8], b: &[u8]) -> bool {
    // Compare in time independent of where they differ.
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `req` carries `token` as the password of `u`/`p` parameters,
/// of Basic auth, or as `Authorization: Token <token>`.
pub fn authorized(req: &Request, params: &[(String, String)], token: &str) -> bool {
    let t = token.as_bytes();
    if params
        .iter()
        .any(|(k, v)| k == "p" && same(v.as_bytes(), t))
    {
        return true;
    }
    let Some(h) = req.header("authorization") else {
        return false;
    };
    if let Some(rest) = h.strip_prefix("Token ") {
        return same(rest.trim().as_bytes(), t);
    }
    if let Some(rest) = h.strip_prefix("Basic ") {
        let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(rest.trim()) else {
            return false;
        };
        return match raw.iter().position(|&b| b == b':') {
            Some(i) => same(&raw[i + 1..], t),
            None => false,
        };
    }
    false
}
