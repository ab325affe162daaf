//! AST → plans on Loom's operators. The planner owns the semantic errors
//! (unknown measurement or field, wrong arguments) and refuses, by name,
//! every construct outside the subset, so nothing it accepts can be
//! answered wrongly.

pub mod catalog;
pub mod condition;
pub mod select;
pub mod show;

use loom::FieldDef;

pub use catalog::{Catalog, Series};
pub use condition::{index_range, FieldPredicate, Filters, Operand, TagPredicate, TimeBounds};

use crate::error::Result;
use crate::parse::Statement;

/// The statements of the subset's `SHOW` family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShowPlan {
    /// Loom's one database.
    Databases,
    /// Every measurement, at most `limit`.
    Measurements(Option<u64>),
    /// Tag keys, per measurement.
    TagKeys(Option<String>),
    /// Values of one tag key, per measurement.
    TagValues(Option<String>, String),
    /// Field keys and types, per measurement.
    FieldKeys(Option<String>),
}

/// Series answered together: one output series per group.
#[derive(Debug, Clone)]
pub struct Group {
    /// GROUP BY tag keys and this group's values (empty without GROUP BY tags).
    pub tags: Vec<(String, String)>,
    /// The sources in the group.
    pub series: Vec<Series>,
}

/// An aggregate or selector function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Func {
    /// Number of values.
    Count,
    /// Sum of values.
    Sum,
    /// Smallest value (a selector).
    Min,
    /// Largest value (a selector).
    Max,
    /// Arithmetic mean, a float.
    Mean,
    /// InfluxDB 1.x percentile (a selector): `N` in percent.
    Percentile(f64),
}

impl Func {
    /// Whether the function selects one point (its time can be reported).
    pub fn is_selector(self) -> bool {
        matches!(self, Func::Min | Func::Max | Func::Percentile(_))
    }
}

/// One function of an aggregate statement.
#[derive(Debug, Clone)]
pub struct Call {
    /// The function.
    pub func: Func,
    /// Its field.
    pub field: FieldDef,
    /// Output column name.
    pub column: String,
}

/// `SELECT f(x), … FROM m WHERE … [GROUP BY time(…), tags]`.
#[derive(Debug, Clone)]
pub struct AggregatePlan {
    /// Measurement name (the output series' name).
    pub measurement: String,
    /// Output groups.
    pub groups: Vec<Group>,
    /// The WHERE time window, with defaults applied.
    pub time: TimeBounds,
    /// `GROUP BY time(…)` bucket width in µs.
    pub interval_us: Option<u64>,
    /// `fill(none)`: leave out empty buckets.
    pub fill_none: bool,
    /// Functions, in projection order.
    pub calls: Vec<Call>,
    /// Field predicates.
    pub fields: Vec<FieldPredicate>,
    /// Report the selected point's time (one selector alone, no time buckets).
    pub selector_time: bool,
    /// ORDER BY time DESC.
    pub descending: bool,
    /// Rows per series.
    pub limit: Option<u64>,
    /// Rows skipped per series.
    pub offset: u64,
}

/// What a raw-select column shows.
#[derive(Debug, Clone)]
pub enum Column {
    /// A field read from the record bytes.
    Field(FieldDef),
    /// A tag of the series.
    Tag(String),
}

/// `SELECT fields FROM m WHERE … [GROUP BY tags] [ORDER BY time DESC] [LIMIT n]`.
#[derive(Debug, Clone)]
pub struct RawPlan {
    /// Measurement name.
    pub measurement: String,
    /// Output groups.
    pub groups: Vec<Group>,
    /// The time window.
    pub time: TimeBounds,
    /// Output columns after `time`, with names.
    pub columns: Vec<(String, Column)>,
    /// Field predicates.
    pub fields: Vec<FieldPredicate>,
    /// ORDER BY time DESC.
    pub descending: bool,
    /// Rows per series.
    pub limit: Option<u64>,
    /// Rows skipped per series.
    pub offset: u64,
}

/// `SELECT top(field, N) FROM m WHERE … [GROUP BY tags]`: the N largest
/// values of each group, each with its own time.
#[derive(Debug, Clone)]
pub struct TopPlan {
    /// Measurement name.
    pub measurement: String,
    /// Output groups.
    pub groups: Vec<Group>,
    /// The time window.
    pub time: TimeBounds,
    /// The field ranked.
    pub field: FieldDef,
    /// How many points.
    pub n: u64,
    /// Output column name.
    pub column: String,
    /// Field predicates.
    pub fields: Vec<FieldPredicate>,
    /// ORDER BY time DESC.
    pub descending: bool,
    /// Rows per series.
    pub limit: Option<u64>,
    /// Rows skipped per series.
    pub offset: u64,
}

/// A planned statement.
#[derive(Debug, Clone)]
pub enum Plan {
    /// A SHOW statement.
    Show(ShowPlan),
    /// Aggregates.
    Aggregate(AggregatePlan),
    /// Raw records.
    Raw(RawPlan),
    /// The largest values.
    Top(TopPlan),
    /// A SELECT from a measurement with no series: an empty result, as
    /// InfluxDB (≥ 0.9.2) answers it — measurements exist only through
    /// their data, so an absent one is not an error.
    Nothing,
}

/// Plans `stmt` against `catalog`; `now_ns` is `now()` in ns since the epoch.
pub fn plan(stmt: &Statement, catalog: &Catalog, now_ns: i128) -> Result<Plan> {
    match stmt {
        Statement::Show(s) => show::plan_show(s, catalog).map(Plan::Show),
        Statement::Select(s) => select::plan_select(s, catalog, now_ns),
    }
}
