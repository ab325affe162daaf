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
    pub fn params(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = form_urlencoded::parse(self.query.as_bytes())
            .into_owned()
            .collect();
        let form = self
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
        if self.method == "POST" && form {
            out.extend(form_urlencoded::parse(&self.body).into_owned());
        }
        out
    }
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
