//! A buffered HTTP request and response, independent of the server library.

/// One request, fully read.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// Raw query string (after `?`), percent-encoded.
    pub query: String,
    /// Headers (names lowercase).
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Parameters from the query string, then (for a form POST) the body.
    /// A name or value that is not UTF-8 once decoded is refused, naming
    /// it, rather than altered: a query is never run as other text than
    /// the client sent.
    pub fn params(&self) -> Result<Vec<(String, String)>, String> {
        let mut out = decode_form(self.query.as_bytes(), "the query string")?;
        let form = self
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
        if self.method == "POST" && form {
            out.extend(decode_form(&self.body, "the form body")?);
        }
        Ok(out)
    }
}

/// `application/x-www-form-urlencoded` pairs of `bytes` (`+` is a space,
/// `%XX` a byte); `Err` names the first part that is not UTF-8.
fn decode_form(bytes: &[u8], whence: &str) -> Result<Vec<(String, String)>, String> {
    let text = |part: &[u8], what: &str| -> Result<String, String> {
        let spaced: Vec<u8> = part
            .iter()
            .map(|&b| if b == b'+' { b' ' } else { b })
            .collect();
        let raw: Vec<u8> = percent_encoding::percent_decode(&spaced).collect();
        String::from_utf8(raw).map_err(|e| {
            format!(
                "{what} in {whence} is not valid UTF-8 (invalid byte at offset {} of its decoded text)",
                e.utf8_error().valid_up_to()
            )
        })
    };
    let mut out = Vec::new();
    for pair in bytes.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
        let (k, v) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &[][..]),
        };
        let name = text(k, "a parameter name")?;
        let value = text(v, &format!("parameter {name:?}"))?;
        out.push((name, value));
    }
    Ok(out)
}

/// One response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON response.
    pub fn json(status: u16, v: &serde_json::Value) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: v.to_string().into_bytes(),
        }
    }

    /// A JSON `{"error": message}` response.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, &crate::encode::error(message))
    }
}
