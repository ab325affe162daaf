//! Where exported files go: a local directory (a path or a `file://` URL) or
//! an S3-compatible bucket (`s3://bucket/prefix`), both through
//! `object_store`, whose `put` is atomic (a local file is written aside and
//! renamed; an S3 object appears whole or not at all).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};

use crate::error::{Error, Result};

/// Seconds an S3 request may take before it fails (and is retried by the
/// exporter's own backoff, not by the client for minutes).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Seconds to wait for a connection to the S3 endpoint.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Retries inside one request (the exporter retries whole files after it).
const CLIENT_RETRIES: usize = 2;

/// An opened export target.
pub struct Target {
    url: String,
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    rt: tokio::runtime::Runtime,
}

impl Target {
    /// Opens the target `url` and checks that it can be listed (the bucket
    /// exists, the credentials are accepted, the directory is usable).
    /// S3 settings come from the usual environment: `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL` (an
    /// S3-compatible server).
    pub fn open(url: &str) -> Result<Target> {
        let bad = |reason: String| Error::BadTarget {
            url: url.to_string(),
            reason,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| bad(format!("starting the I/O runtime: {e}")))?;
        let (store, prefix): (Arc<dyn ObjectStore>, String) =
            if let Some(rest) = url.strip_prefix("s3://") {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(bad("no bucket name after s3://".into()));
                }
                (
                    Arc::new(s3(url, bucket)?),
                    prefix.trim_matches('/').to_string(),
                )
            } else if url.contains("://") && !url.starts_with("file://") {
                let scheme = url.split("://").next().unwrap_or_default();
                return Err(bad(format!(
                "unknown scheme {scheme:?}: give a directory, file:///dir or s3://bucket/prefix"
            )));
            } else {
                let path = match url.strip_prefix("file://") {
                    Some(p) if p.starts_with('/') => p,
                    Some(_) => return Err(bad("a file:// URL needs an absolute path".into())),
                    None => url,
                };
                if path.is_empty() {
                    return Err(bad("empty path".into()));
                }
                std::fs::create_dir_all(path)
                    .map_err(|e| bad(format!("creating directory {path}: {e}")))?;
                let fs = object_store::local::LocalFileSystem::new_with_prefix(path)
                    .map_err(|e| bad(format!("opening directory {path}: {e}")))?;
                (Arc::new(fs), String::new())
            };
        let t = Target {
            url: url.to_string(),
            store,
            prefix: ObjectPath::from(prefix),
            rt,
        };
        t.check()?;
        Ok(t)
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The object store (for engines that read the files, e.g. DataFusion).
    /// Local targets: rooted at the directory; S3: rooted at the bucket.
    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    /// The target's prefix inside its object store (`""` for a directory).
    pub fn prefix(&self) -> &str {
        self.prefix.as_ref()
    }

    /// Names of the directories directly under `rel` (`""`: the root).
    pub fn list_dirs(&self, rel: &str) -> Result<Vec<String>> {
        let p = if rel.is_empty() {
            self.prefix.clone()
        } else {
            self.full(rel)
        };
        let r = self.rt.block_on(self.store.list_with_delimiter(Some(&p)));
        let listing = r.map_err(|e| self.classify("listing", rel, e))?;
        Ok(listing
            .common_prefixes
            .iter()
            .filter_map(|d| d.filename().map(str::to_string))
            .collect())
    }

    /// Lists the prefix once: the cheapest request that fails on a missing
    /// bucket, refused credentials or an unreachable endpoint.
    fn check(&self) -> Result<()> {
        let r = self
            .rt
            .block_on(self.store.list_with_delimiter(Some(&self.prefix)));
        match r {
            Ok(_) => Ok(()),
            Err(e) => Err(self.classify("listing", self.prefix.as_ref(), e)),
        }
    }

    fn full(&self, rel: &str) -> ObjectPath {
        if self.prefix.as_ref().is_empty() {
            ObjectPath::from(rel)
        } else {
            ObjectPath::from(format!("{}/{rel}", self.prefix))
        }
    }

    /// Writes `bytes` at `rel` (relative to the target's prefix), replacing
    /// any object there; atomic.
    pub fn put(&self, rel: &str, bytes: Bytes) -> Result<()> {
        let p = self.full(rel);
        self.rt
            .block_on(self.store.put(&p, PutPayload::from_bytes(bytes)))
            .map(|_| ())
            .map_err(|e| self.classify("writing", rel, e))
    }

    /// The object at `rel`, `None` if there is none.
    pub fn get(&self, rel: &str) -> Result<Option<Bytes>> {
        let p = self.full(rel);
        let r = self.rt.block_on(async {
            match self.store.get(&p).await {
                Ok(g) => g.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        r.map_err(|e| self.classify("reading", rel, e))
    }

    /// Turns an object store error into one that names its cause in words
    /// where it is a known one (missing bucket, refused credentials, full
    /// disk, unreachable endpoint).
    fn classify(&self, op: &'static str, rel: &str, e: object_store::Error) -> Error {
        let text = format!("{e:?} {e}");
        let reason = if text.contains("NoSuchBucket") {
            Some("the bucket does not exist (NoSuchBucket)".to_string())
        } else if text.contains("InvalidAccessKeyId")
            || text.contains("SignatureDoesNotMatch")
            || text.contains("AccessDenied")
            || text.contains("403 Forbidden")
        {
            Some(
                "the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
                    .into(),
            )
        } else if text.contains("No space left on device") || text.contains("StorageFull") {
            Some(format!("no space left on the device while {op} {rel}"))
        } else if text.contains("Connection refused") || text.contains("error trying to connect") {
            Some(format!(
                "cannot connect to the endpoint while {op} {rel} ({e})"
            ))
        } else {
            None
        };
        match reason {
            Some(reason) => Error::Target {
                target: self.url.clone(),
                reason,
            },
            None => Error::Store {
                op,
                location: rel.to_string(),
                target: self.url.clone(),
                source: Box::new(e),
            },
        }
    }
}

/// An S3 client for `bucket` from the environment; refuses to start without
/// static credentials (the alternative, the cloud metadata service, is not
/// something to reach for silently).
fn s3(url: &str, bucket: &str) -> Result<object_store::aws::AmazonS3> {
    let has = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty());
    if !(has("AWS_ACCESS_KEY_ID") && has("AWS_SECRET_ACCESS_KEY")) {
        return Err(Error::BadTarget {
            url: url.to_string(),
            reason: "missing credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                     (and AWS_ENDPOINT_URL for an S3-compatible server)"
                .into(),
        });
    }
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("AWS_ENDPOINT"))
        .ok();
    let mut b = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(object_store::RetryConfig {
            max_retries: CLIENT_RETRIES,
            retry_timeout: REQUEST_TIMEOUT,
            backoff: object_store::BackoffConfig::default(),
        })
        .with_client_options(
            object_store::ClientOptions::new()
                .with_timeout(REQUEST_TIMEOUT)
                .with_connect_timeout(CONNECT_TIMEOUT),
        );
    if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err() {
        b = b.with_region("us-east-1");
    }
    if let Some(ep) = endpoint {
        b = b
            .with_endpoint(&ep)
            .with_allow_http(ep.starts_with("http://"));
    }
    b.build().map_err(|e| Error::BadTarget {
        url: url.to_string(),
        reason: e.to_string(),
    })
}
