//! AST → plans on Loom's operators. The planner owns the semantic errors
//! (unknown measurement or field, wrong arguments) and refuses, by name,
//! every construct outside the subset, so nothing it accepts can be
//! answered wrongly.

pub mod catalog;
pub mod condition;
mod grouping;
pub mod pattern;
pub mod select;
pub mod show;
pub mod subquery;
pub mod tree;

use loom::FieldDef;

pub use catalog::{Catalog, Series};
pub use condition::{index_range, FieldPredicate, Filters, Operand, TimeBounds};
pub use pattern::Pattern;

use crate::error::Result;
use crate::parse::Statement;

/// The statements of the subset's `SHOW` family, resolved against the
/// catalog (WHERE conditions already applied to the series).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShowPlan {
    /// Loom's one database.
    Databases,
    /// Loom's one retention policy.
    RetentionPolicies,
    /// Measurement names, sorted.
    Measurements(Vec<String>),
    /// Series keys (`m,k=v,…`), sorted.
    Series(Vec<String>),
    /// Tag keys, per measurement.
    TagKeys(Vec<(String, Vec<String>)>),
    /// (key, value) pairs, per measurement.
    TagValues(Vec<(String, Vec<(String, String)>)>),
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

impl Group {
    /// Whether some series of the group filters its records by an `OR`
    /// tree (then no answer comes from the indexes alone).
    pub fn filtered(&self) -> bool {
        self.series.iter().any(|s| s.filter.is_some())
    }
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
    /// The earliest point's value (a selector; ties: the larger value).
    First,
    /// The latest point's value (a selector; ties: the larger value).
    Last,
    /// Largest minus smallest value.
    Spread,
    /// Sample standard deviation (null below two values), a float.
    Stddev,
    /// The middle value (mean of the two middle ones), a float.
    Median,
    /// The most frequent value (ties: the smallest; see `exec::aggregate`).
    Mode,
    /// `count(distinct(x))`: how many different values.
    CountDistinct,
    /// `distinct(x)` alone: every different value, one row each (by first
    /// time, then value).
    Distinct,
}

impl Func {
    /// Whether the function selects one point (its time can be reported).
    pub fn is_selector(self) -> bool {
        matches!(
            self,
            Func::Min | Func::Max | Func::Percentile(_) | Func::First | Func::Last
        )
    }
}

/// A select-list transformation over a group's `GROUP BY time` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// `derivative(f(x)[, unit])`: change per `unit` (ns) between
    /// consecutive non-null buckets.
    Derivative {
        /// The unit, ns (1s by default).
        unit_ns: i64,
        /// `non_negative_derivative`: negative changes left out.
        non_negative: bool,
    },
    /// `difference(f(x))` (`non_negative_difference`: negatives left out).
    Difference {
        /// Negative differences left out.
        non_negative: bool,
    },
    /// `moving_average(f(x), N)`: mean of the last N non-null values.
    MovingAverage(usize),
    /// `cumulative_sum(f(x))`.
    CumulativeSum,
    /// `elapsed(f(x)[, unit])`: time between consecutive non-null buckets
    /// in `unit` (ns).
    Elapsed(i64),
}

/// One output column of an aggregate statement computed from its calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// The value of call `n` of the plan.
    Call(usize),
    /// A number.
    Number(crate::result::Cell),
    /// `first op x op y …`, left to right (one chain; parenthesised
    /// chains nest, bounded by the parser's depth).
    Math {
        /// Leftmost operand.
        first: Box<Out>,
        /// Operators and right operands.
        rest: Vec<(crate::parse::MathOp, Out)>,
    },
    /// A transformation of call `n`'s values.
    Transform(Transform, usize),
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
    /// `GROUP BY time(d, offset)`: buckets start at `offset` (µs, in
    /// `[0, d)`) past multiples of `d`.
    pub bucket_offset_us: u64,
    /// What empty buckets show.
    pub fill: FillPlan,
    /// Buckets before the window computed for transformations and not
    /// shown (1 for `derivative`, `difference`, `elapsed`; N − 1 for
    /// `moving_average(…, N)`), as InfluxDB extends the range.
    pub lead_buckets: u64,
    /// Functions, in projection order.
    pub calls: Vec<Call>,
    /// When the select list holds arithmetic or transformations: the
    /// output columns, computed from `calls` (whose columns are then
    /// hidden). `None`: the calls are the columns.
    pub outputs: Option<Vec<(String, Out)>>,
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

/// What an empty `GROUP BY time` bucket shows (InfluxDB 1.x's `fill`).
#[derive(Debug, Clone, PartialEq)]
pub enum FillPlan {
    /// `fill(null)` (the default): null, `count()` 0.
    Null,
    /// `fill(none)`: the bucket is left out.
    None,
    /// `fill(N)`: the number, in every column.
    Value(crate::result::Cell),
    /// `fill(previous)`: the column's value in the bucket before (null
    /// before the first value).
    Previous,
    /// `fill(linear)`: on the line between the nearest values before and
    /// after (for integers the step truncated toward zero, as InfluxDB); null outside.
    Linear,
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
/// (`bottom`: smallest) values of each group, each with its own time.
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
    /// `bottom()`: the smallest values.
    pub bottom: bool,
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
    /// Aggregates of a subquery's rows.
    Subquery(Box<subquery::SubqueryPlan>),
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
