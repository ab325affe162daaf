//! WHERE → a time window, tag predicates and field predicates.
//!
//! The top level is a conjunction: its tag comparisons pick series, its
//! field comparisons filter records (and may narrow a range-index scan).
//! An `OR` chain becomes a [`CondTree`] of tag and field comparisons,
//! evaluated per series while planning (`tree.rs`). Time comparisons are
//! taken out wherever they sit, `OR` included, and their ranges
//! intersected: influxd 1.x does exactly this (its `conditionExpr`
//! intersects the time ranges of both operands of `AND` and `OR` alike),
//! so `host = 'a' OR time > X` answers host `a` after `X` there, and so it
//! does here. Time is compared in nanoseconds as InfluxDB does, then mapped
//! onto Loom's µs exactly: a record at `t` µs is at `t·1000` ns.

use loom::{FieldDef, Value};

use crate::error::{Error, Result};
use crate::parse::depth::MAX_DEPTH;
use crate::parse::{ArithOp, CompareOp, Condition, Expr, Literal};
use crate::plan::catalog::Catalog;
use crate::plan::pattern::Pattern;
use crate::plan::tree::{CondTree, FieldTree, Leaf, Reduced};

/// Inclusive bounds in ns since the epoch; `None` = unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeBounds {
    /// Lowest time allowed.
    pub lo_ns: Option<i128>,
    /// Highest time allowed.
    pub hi_ns: Option<i128>,
}

impl TimeBounds {
    /// The same window in Loom µs `[t0, t1]`; `None` when it holds no µs.
    pub fn to_us(self) -> Option<(u64, u64)> {
        let lo = self.lo_ns.map_or(0, |ns| ceil_div(ns, 1000).max(0));
        let hi = self
            .hi_ns
            .map_or(i128::from(u64::MAX), |ns| floor_div(ns, 1000));
        if hi < 0 || lo > hi || lo > i128::from(u64::MAX) {
            return None;
        }
        Some((lo as u64, hi.min(i128::from(u64::MAX)) as u64))
    }
}

fn floor_div(a: i128, b: i128) -> i128 {
    a.div_euclid(b)
}

fn ceil_div(a: i128, b: i128) -> i128 {
    -((-a).div_euclid(b))
}

/// A constant to compare field values with.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// An integer literal.
    Int(i128),
    /// A float literal.
    Float(f64),
    /// A string literal (string fields, `=` and `!=` only).
    Str(String),
}

/// `field op constant`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPredicate {
    /// The field.
    pub field: FieldDef,
    /// The comparison (field on the left).
    pub op: CompareOp,
    /// The constant.
    pub value: Operand,
}

fn order_holds(op: CompareOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        CompareOp::Eq => ord == Equal,
        CompareOp::Ne => ord != Equal,
        CompareOp::Lt => ord == Less,
        CompareOp::Le => ord != Greater,
        CompareOp::Gt => ord == Greater,
        CompareOp::Ge => ord != Less,
        CompareOp::Match | CompareOp::NotMatch => false,
    }
}

impl FieldPredicate {
    /// Whether a record's numeric value satisfies the predicate (integers
    /// compared exactly, floats as doubles); never for a string constant.
    pub fn holds(&self, v: Value) -> bool {
        let ord = match (v, &self.value) {
            (Value::Unsigned(a), Operand::Int(b)) => i128::from(a).partial_cmp(b),
            (Value::Signed(a), Operand::Int(b)) => i128::from(a).partial_cmp(b),
            (v, Operand::Int(b)) => v.as_f64().partial_cmp(&(*b as f64)),
            (v, Operand::Float(b)) => v.as_f64().partial_cmp(b),
            (_, Operand::Str(_)) => None,
        };
        ord.is_some_and(|o| order_holds(self.op, o))
    }

    /// Whether the record `bytes` satisfies the predicate, its field read
    /// with `def` (the record's own series' definition of the field). A
    /// record without a value for the field never does.
    pub fn matches(&self, def: &FieldDef, bytes: &[u8]) -> bool {
        match &self.value {
            Operand::Str(want) => def
                .read_str(bytes)
                .is_some_and(|s| order_holds(self.op, s.cmp(want.as_str()))),
            _ => def.read(bytes).is_some_and(|v| self.holds(v)),
        }
    }

    /// Values of an unsigned field that may satisfy the predicate, as an
    /// inclusive range (a superset for float constants; `holds` decides).
    pub fn unsigned_range(&self) -> (u64, u64) {
        use CompareOp::*;
        const EMPTY: (u64, u64) = (1, 0);
        let max = i128::from(u64::MAX);
        let (lo, hi) = match &self.value {
            Operand::Str(_) => (0, max),
            &Operand::Float(f) if f.is_nan() => return EMPTY,
            &Operand::Float(f) => {
                let c = f.floor() as i128;
                match self.op {
                    Ne | Match | NotMatch => (0, max),
                    Gt | Ge => (c, max),
                    Lt | Le => (0, c + 1),
                    Eq => (c, c + 1),
                }
            }
            &Operand::Int(c) => match self.op {
                Ne | Match | NotMatch => (0, max),
                Gt => (c + 1, max),
                Ge => (c, max),
                Lt => (0, c - 1),
                Le => (0, c),
                Eq => (c, c),
            },
        };
        let (lo, hi) = (lo.max(0), hi.min(max));
        if lo > hi {
            EMPTY
        } else {
            (lo as u64, hi as u64)
        }
    }
}

/// Values of indexed field `field` that may satisfy every predicate on it,
/// as one inclusive range; `None` when no predicate names it (the range
/// index has nothing to narrow).
pub fn index_range(preds: &[FieldPredicate], field: Option<&str>) -> Option<(u64, u64)> {
    let field = field?;
    let mut on = preds.iter().filter(|p| p.field.name == field).peekable();
    on.peek()?;
    Some(on.fold((0u64, u64::MAX), |(lo, hi), p| {
        let (a, b) = p.unsigned_range();
        (lo.max(a), hi.min(b))
    }))
}

/// How a tag predicate tests a series' value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagMatch {
    /// `= 'v'`.
    Equal(String),
    /// `!= 'v'`.
    NotEqual(String),
    /// `=~ /re/`.
    Regex(Pattern),
    /// `!~ /re/`.
    NotRegex(Pattern),
}

/// `tag = 'v'`, `!=`, `=~ /re/` or `!~ /re/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagPredicate {
    /// Tag key.
    pub key: String,
    /// The test.
    pub test: TagMatch,
}

impl TagPredicate {
    /// Whether a series with tag value `v` (`None`: no such tag, compared
    /// as the empty string, as InfluxDB does) matches.
    pub fn holds(&self, v: Option<&str>) -> bool {
        let v = v.unwrap_or("");
        match &self.test {
            TagMatch::Equal(w) => v == w,
            TagMatch::NotEqual(w) => v != w,
            TagMatch::Regex(p) => p.is_match(v),
            TagMatch::NotRegex(p) => !p.is_match(v),
        }
    }
}

/// What a WHERE clause says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// The time window.
    pub time: TimeBounds,
    /// Tag predicates (all must hold).
    pub tags: Vec<TagPredicate>,
    /// `OR` trees of tag and field comparisons (all must hold), their time
    /// comparisons already taken out into `time`.
    pub trees: Vec<CondTree>,
    /// Field predicates (all must hold).
    pub fields: Vec<FieldPredicate>,
}

/// Largest magnitude a time operand or result may have, in ns (about
/// 3·10¹¹ years): far past anything a 64-bit ns clock or Loom's µs can
/// hold, small enough that sums of a query's operands never overflow.
const TIME_LIMIT_NS: i128 = 1 << 100;

fn time_operand(e: &Expr, now_ns: i128) -> Result<i128> {
    let ns = match e {
        Expr::Now => now_ns,
        Expr::Literal(Literal::Integer(v)) => *v,
        Expr::Literal(Literal::Duration(d)) => i128::from(d.0),
        Expr::Literal(Literal::Float(f)) if f.abs() < TIME_LIMIT_NS as f64 => *f as i128,
        Expr::Literal(Literal::Float(f)) => {
            return Err(Error::Plan(format!("time {f} is out of range")));
        }
        Expr::Literal(Literal::String(s)) => parse_rfc3339(s)?,
        Expr::Literal(Literal::Regex(_)) => {
            return Err(Error::Plan(format!(
                "time compared with a regular expression ({e})"
            )))
        }
        Expr::Arith { .. } => {
            return Err(Error::Unsupported(format!("nested time arithmetic ({e})")))
        }
        Expr::Identifier(i) => {
            return Err(Error::Unsupported(format!(
                "comparing time with the identifier {i}"
            )))
        }
    };
    Ok(ns)
}

/// Evaluates a time expression to ns: literals, `now()`, `±` durations,
/// left to right without recursion; a value or partial sum beyond
/// ±2¹⁰⁰ ns is refused rather than wrapped.
fn time_value(e: &Expr, now_ns: i128) -> Result<i128> {
    let (first, rest) = match e {
        Expr::Arith { first, rest } => (&**first, &rest[..]),
        e => (e, &[][..]),
    };
    let in_range = |v: i128| {
        if v.abs() <= TIME_LIMIT_NS {
            Ok(v)
        } else {
            Err(Error::Plan(format!("time arithmetic out of range ({e})")))
        }
    };
    let mut ns = in_range(time_operand(first, now_ns)?)?;
    for (op, operand) in rest {
        let v = in_range(time_operand(operand, now_ns)?)?;
        ns = in_range(match op {
            ArithOp::Add => ns + v,
            ArithOp::Sub => ns - v,
        })?;
    }
    Ok(ns)
}

/// RFC 3339 (`2023-11-14T22:13:20Z`, fractions and offsets allowed) or a
/// plain date-time `2023-11-14 22:13:20` taken as UTC, to ns.
pub fn parse_rfc3339(s: &str) -> Result<i128> {
    let dt = chrono::DateTime::parse_from_rfc3339(s)
        .map(|d| d.to_utc())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").map(|n| n.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        })
        .map_err(|_| Error::Plan(format!("{s:?} is not an RFC 3339 time")))?;
    Ok(i128::from(dt.timestamp()) * 1_000_000_000 + i128::from(dt.timestamp_subsec_nanos()))
}

fn is_time(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(i) if i.as_str().eq_ignore_ascii_case("time"))
}

fn flip(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Ge => CompareOp::Le,
        o => o,
    }
}

/// The operands of a conjunction (comparisons and OR chains), flattening
/// nested AND chains with an explicit stack (no recursion, however the
/// tree was built).
fn conjuncts(c: &Condition) -> Vec<&Condition> {
    let mut out = Vec::new();
    let mut todo = vec![c];
    while let Some(c) = todo.pop() {
        match c {
            Condition::And(items) => todo.extend(items.iter().rev()),
            other => out.push(other),
        }
    }
    out
}

/// A comparison with its identifier on the left (`'a' = host` → `host = 'a'`).
fn oriented(c: &Condition) -> Result<(&Expr, CompareOp, &Expr)> {
    let Condition::Compare { lhs, op, rhs } = c else {
        return Err(Error::Plan(format!("not a comparison ({c})")));
    };
    match (lhs, rhs) {
        (Expr::Identifier(_), _) => Ok((lhs, *op, rhs)),
        (_, Expr::Identifier(_)) => Ok((rhs, flip(*op), lhs)),
        _ => Err(Error::Unsupported(format!(
            "a comparison without a field, tag or time ({c})"
        ))),
    }
}

/// `tag op literal` as a predicate (the caller knows `name` is a tag).
fn tag_predicate(name: &str, op: CompareOp, rhs: &Expr, c: &Condition) -> Result<TagPredicate> {
    let test = match (op, rhs) {
        (CompareOp::Eq, Expr::Literal(Literal::String(v))) => TagMatch::Equal(v.clone()),
        (CompareOp::Ne, Expr::Literal(Literal::String(v))) => TagMatch::NotEqual(v.clone()),
        (CompareOp::Match, Expr::Literal(Literal::Regex(r))) => {
            TagMatch::Regex(Pattern::compile(r)?)
        }
        (CompareOp::NotMatch, Expr::Literal(Literal::Regex(r))) => {
            TagMatch::NotRegex(Pattern::compile(r)?)
        }
        (CompareOp::Match | CompareOp::NotMatch, _) => {
            return Err(Error::Plan(format!(
                "=~ and !~ need a regular expression /…/ ({c})"
            )))
        }
        (CompareOp::Eq | CompareOp::Ne, _) => {
            return Err(Error::Plan(format!(
                "tag {name} can only be compared with a string ({c})"
            )))
        }
        _ => {
            return Err(Error::Unsupported(format!(
                "ordering comparisons on tags ({c})"
            )))
        }
    };
    Ok(TagPredicate {
        key: name.to_string(),
        test,
    })
}

/// `field op constant` as a predicate (the caller knows `field` is a
/// field of the measurement).
fn field_predicate(
    field: FieldDef,
    op: CompareOp,
    rhs: &Expr,
    c: &Condition,
) -> Result<FieldPredicate> {
    let name = field.name.to_string();
    if matches!(op, CompareOp::Match | CompareOp::NotMatch) {
        return Err(Error::Unsupported(format!(
            "regular expressions on fields ({c})"
        )));
    }
    let value = match (rhs, field.ty.is_numeric()) {
        (Expr::Literal(Literal::Integer(v)), true) => Operand::Int(*v),
        (Expr::Literal(Literal::Float(v)), true) => Operand::Float(*v),
        (Expr::Literal(Literal::String(v)), false) => {
            if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
                return Err(Error::Unsupported(format!(
                    "ordering comparisons on string field {name} ({c})"
                )));
            }
            Operand::Str(v.clone())
        }
        (_, true) => {
            return Err(Error::Unsupported(format!(
                "comparing field {name} with something other than a number ({c})"
            )))
        }
        (_, false) => {
            return Err(Error::Plan(format!(
                "{name} is a string field: compare it with a string ({c})"
            )))
        }
    };
    Ok(FieldPredicate { field, op, value })
}

/// Builds an AND (`CondTree::All`) or OR (`CondTree::Any`) chain.
type MakeChain = fn(Vec<CondTree>) -> CondTree;

/// `[a, b]` without its absent operands: `None` when none is left, the
/// operand alone when one is (as influxd's `reduce` drops the side a time
/// comparison left empty).
fn chain(mut v: Vec<CondTree>, make: MakeChain) -> Option<CondTree> {
    match v.len() {
        0 => None,
        1 => v.pop(),
        _ => Some(make(v)),
    }
}

impl Filters {
    /// Plans a WHERE clause against `measurement`; `now_ns` is `now()`.
    pub fn plan(
        cond: Option<&Condition>,
        catalog: &Catalog,
        measurement: &str,
        now_ns: i128,
    ) -> Result<Filters> {
        let mut f = Filters::default();
        let Some(cond) = cond else { return Ok(f) };
        for c in conjuncts(cond) {
            if matches!(c, Condition::Or(_)) {
                if let Some(t) = f.tree(c, catalog, measurement, now_ns, 0)? {
                    f.trees.push(t);
                }
                continue;
            }
            let (lhs, op, rhs) = oriented(c)?;
            if is_time(lhs) {
                let ns = time_value(rhs, now_ns)?;
                f.time_bound(op, ns, c)?;
                continue;
            }
            let Expr::Identifier(name) = lhs else {
                continue;
            };
            let name = name.as_str();
            if catalog.is_tag(measurement, name) {
                f.tags.push(tag_predicate(name, op, rhs, c)?);
            } else if let Some(field) = catalog.field(measurement, name) {
                f.fields.push(field_predicate(field, op, rhs, c)?);
            } else {
                return Err(Error::Plan(format!(
                    "{name} is not a tag or field of measurement {measurement}"
                )));
            }
        }
        Ok(f)
    }

    /// An AND/OR chain as a [`CondTree`], its time comparisons moved into
    /// `self.time` (`None`: nothing but time was in it). Recursion is
    /// bounded by the parser's depth limit (deeper trees, which only code
    /// builds, are refused).
    fn tree(
        &mut self,
        c: &Condition,
        catalog: &Catalog,
        measurement: &str,
        now_ns: i128,
        level: usize,
    ) -> Result<Option<CondTree>> {
        if level > MAX_DEPTH {
            return Err(Error::Unsupported(format!(
                "conditions nested deeper than {MAX_DEPTH} levels"
            )));
        }
        let (items, make): (&[Condition], MakeChain) = match c {
            Condition::And(items) => (items, CondTree::All),
            Condition::Or(items) => (items, CondTree::Any),
            cmp => return self.tree_leaf(cmp, catalog, measurement, now_ns),
        };
        let mut v = Vec::with_capacity(items.len());
        for i in items {
            if let Some(t) = self.tree(i, catalog, measurement, now_ns, level + 1)? {
                v.push(t);
            }
        }
        Ok(chain(v, make))
    }

    /// One comparison of a tree: time into `self.time` (`None`), else a
    /// tag or field leaf. An identifier that is neither a field nor a tag
    /// of the measurement is a tag every series has empty, as InfluxDB
    /// answers a tag key the measurement lacks.
    fn tree_leaf(
        &mut self,
        cmp: &Condition,
        catalog: &Catalog,
        measurement: &str,
        now_ns: i128,
    ) -> Result<Option<CondTree>> {
        let (lhs, op, rhs) = oriented(cmp)?;
        if is_time(lhs) {
            let ns = time_value(rhs, now_ns)?;
            self.time_bound(op, ns, cmp)?;
            return Ok(None);
        }
        let Expr::Identifier(n) = lhs else {
            return Err(Error::Plan(format!("not a comparison ({cmp})")));
        };
        let leaf = match catalog.field(measurement, n.as_str()) {
            Some(field) if !catalog.is_tag(measurement, n.as_str()) => {
                Leaf::Field(field_predicate(field, op, rhs, cmp)?)
            }
            _ => Leaf::Tag(tag_predicate(n.as_str(), op, rhs, cmp)?),
        };
        Ok(Some(CondTree::Leaf(leaf)))
    }

    /// Whether a tree holds a field comparison (top-level field predicates
    /// are in `fields`).
    pub fn trees_have_fields(&self) -> bool {
        self.trees.iter().any(CondTree::has_fields)
    }

    /// What the WHERE clause asks of a series with `schema` beyond the
    /// top-level field predicates: `None` when no record of it can match
    /// (a tag predicate or a tree is false), `Some(None)` when every record
    /// passes, `Some(Some(t))` when its records must satisfy `t`.
    pub fn residual(&self, schema: &loom::SourceSchema) -> Option<Option<FieldTree>> {
        if !self.tags.iter().all(|p| p.holds(schema.tag(&p.key))) {
            return None;
        }
        let mut left = Vec::new();
        for t in &self.trees {
            match t.for_series(schema) {
                Reduced::True => {}
                Reduced::False => return None,
                Reduced::Records(r) => left.push(r),
            }
        }
        Some(match left.len() {
            0 => None,
            1 => left.pop(),
            _ => Some(FieldTree::All(left)),
        })
    }

    /// Whether a series with `schema` can hold matching records (tag
    /// predicates and trees; a tree's field comparisons may still filter
    /// its records).
    pub fn series_match(&self, schema: &loom::SourceSchema) -> bool {
        self.residual(schema).is_some()
    }

    fn time_bound(&mut self, op: CompareOp, ns: i128, c: &Condition) -> Result<()> {
        let lo = |b: &mut TimeBounds, v: i128| b.lo_ns = Some(b.lo_ns.map_or(v, |o| o.max(v)));
        let hi = |b: &mut TimeBounds, v: i128| b.hi_ns = Some(b.hi_ns.map_or(v, |o| o.min(v)));
        match op {
            CompareOp::Gt => lo(&mut self.time, ns.saturating_add(1)),
            CompareOp::Ge => lo(&mut self.time, ns),
            CompareOp::Lt => hi(&mut self.time, ns.saturating_sub(1)),
            CompareOp::Le => hi(&mut self.time, ns),
            CompareOp::Eq => {
                lo(&mut self.time, ns);
                hi(&mut self.time, ns);
            }
            CompareOp::Ne | CompareOp::Match | CompareOp::NotMatch => {
                return Err(Error::Unsupported(format!("time {} … ({c})", op.as_str())));
            }
        }
        Ok(())
    }
}
