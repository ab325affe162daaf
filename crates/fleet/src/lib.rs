//! Fleet-wide SQL over the Parquet trees `loom export` writes: Apache
//! DataFusion, embedded, with every measurement registered as a table over
//! `measurement=M/` of the tree (columns: the file columns — `time`, tags,
//! fields — plus the partition columns `host`, `date`, `hour`), and
//! `percentile(x, N)` with InfluxDB's exact rank rule ([`percentile`]).
//!
//! The tree may be a local directory (a path or `file://` URL) or an
//! S3-compatible bucket (`s3://bucket/prefix`, credentials and endpoint
//! from the `AWS_*` variables, as for export).

pub mod percentile;
pub mod render;

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;

/// Why a fleet query failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tree cannot be opened (bad URL, missing bucket, credentials).
    #[error(transparent)]
    Target(#[from] export::Error),
    /// The tree holds no exported measurement.
    #[error("{0}: no exported measurements (no measurement=* directories)")]
    Empty(String),
    /// DataFusion refused or failed the query.
    #[error("{0}")]
    Query(#[from] datafusion::error::DataFusionError),
    /// Starting the query runtime failed.
    #[error("starting the query runtime: {0}")]
    Runtime(std::io::Error),
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Partition columns of every table, in path order after `measurement`.
pub const PARTITION_COLUMNS: [&str; 3] = ["host", "date", "hour"];

/// An opened tree: a DataFusion session with one table per measurement.
pub struct Fleet {
    ctx: SessionContext,
    rt: tokio::runtime::Runtime,
    tables: Vec<String>,
}

impl Fleet {
    /// Opens the tree at `url` and registers its measurements.
    pub fn open(url: &str) -> Result<Fleet> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        if !url.starts_with("s3://") {
            let path = url.strip_prefix("file://").unwrap_or(url);
            if !std::path::Path::new(path).is_dir() {
                return Err(Error::Target(export::Error::BadTarget {
                    url: url.into(),
                    reason: "no such directory".into(),
                }));
            }
        }
        let target = export::Target::open(url)?;
        let ctx = SessionContext::new();
        ctx.register_udaf(percentile::udaf());
        let base = if let Some(rest) = url.strip_prefix("s3://") {
            let bucket = rest.split('/').next().unwrap_or_default();
            let root = url::Url::parse(&format!("s3://{bucket}")).map_err(|e| {
                export::Error::BadTarget {
                    url: url.into(),
                    reason: e.to_string(),
                }
            })?;
            ctx.register_object_store(&root, target.object_store());
            let prefix = target.prefix();
            if prefix.is_empty() {
                format!("s3://{bucket}/")
            } else {
                format!("s3://{bucket}/{prefix}/")
            }
        } else {
            let path = url.strip_prefix("file://").unwrap_or(url);
            let abs = std::fs::canonicalize(path).map_err(|e| export::Error::BadTarget {
                url: url.into(),
                reason: e.to_string(),
            })?;
            format!("{}/", abs.display())
        };
        let mut tables = Vec::new();
        for dir in target.list_dirs("")? {
            let Some(m) = dir.strip_prefix("measurement=") else {
                continue;
            };
            let name = export::layout::unescape(m);
            let table_url = ListingTableUrl::parse(format!("{base}{dir}/"))?;
            let opts = ListingOptions::new(Arc::new(ParquetFormat::default()))
                .with_file_extension(".parquet")
                .with_table_partition_cols(
                    PARTITION_COLUMNS
                        .iter()
                        .map(|c| (c.to_string(), DataType::Utf8))
                        .collect(),
                );
            let state = ctx.state();
            let schema = rt.block_on(opts.infer_schema(&state, &table_url))?;
            let cfg = ListingTableConfig::new(table_url)
                .with_listing_options(opts)
                .with_schema(schema);
            let table = ListingTable::try_new(cfg)?;
            ctx.register_table(
                datafusion::sql::TableReference::bare(name.clone()),
                Arc::new(table),
            )?;
            tables.push(name);
        }
        if tables.is_empty() {
            return Err(Error::Empty(url.into()));
        }
        Ok(Fleet { ctx, rt, tables })
    }

    /// The measurements registered as tables.
    pub fn tables(&self) -> &[String] {
        &self.tables
    }

    /// Runs `sql` and collects its result.
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let ctx = &self.ctx;
        Ok(self
            .rt
            .block_on(async move { ctx.sql(sql).await?.collect().await })?)
    }
}
