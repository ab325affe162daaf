//! The crate's one error type.

/// What can go wrong talking to influxd.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The HTTP request did not complete (influxd down, connection reset, timeout).
    #[error("{what}: request to {url} failed")]
    Http {
        /// What the request was for (`write 5000 points`, `query rocksdb-p1`).
        what: String,
        /// The endpoint.
        url: String,
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// influxd answered with an error status.
    #[error("{what}: influxd answered {status}: {body}")]
    Status {
        /// What the request was for.
        what: String,
        /// HTTP status.
        status: u16,
        /// Response body (influxd's JSON error, shortened).
        body: String,
    },
    /// A query answer was not the JSON influxd documents, or reported an error.
    #[error("{what}: {message}")]
    Answer {
        /// The statement.
        what: String,
        /// What was wrong.
        message: String,
    },
    /// A flag value that cannot work.
    #[error("invalid setting: {0}")]
    Config(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// `e` and every error it was caused by, `: `-separated (the HTTP client's
/// own message hides the cause, e.g. "Connection refused").
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c = c.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        cause = c_source(cause);
    }
    s
}

fn c_source<'a>(
    e: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    e.and_then(|e| e.source())
}
