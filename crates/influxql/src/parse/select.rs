//! `SELECT …` and its clauses: projections, FROM, WHERE, GROUP BY, fill,
//! ORDER BY time, LIMIT.

use std::fmt;

use nom::combinator::map;

use super::common::{expect, fail_at, keyword, token, PResult};
use super::depth::Depth;
use super::expression::{condition, expr, Condition, Expr};
use super::identifier::{identifier, Ident};
use super::literal::{duration, number, unsigned, Duration, Literal};

/// An argument of a function call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallArg {
    /// `*`
    Wildcard,
    /// A field name or a number.
    Expr(Expr),
    /// A function call (`count(distinct(x))`, `derivative(mean(x), 1s)`).
    Call(Box<Projected>),
}

/// An arithmetic operator of the select list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

impl MathOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            MathOp::Add => "+",
            MathOp::Sub => "-",
            MathOp::Mul => "*",
            MathOp::Div => "/",
        }
    }
}

/// What one projection selects.
#[derive(Debug, Clone, PartialEq)]
pub enum Projected {
    /// `*`: every field and tag.
    Wildcard,
    /// A field or tag.
    Identifier(Ident),
    /// `name(args)`; the name is kept lowercase.
    Call {
        /// Function name, lowercase.
        name: String,
        /// Arguments.
        args: Vec<CallArg>,
    },
    /// A number in arithmetic.
    Number(Literal),
    /// `first op₁ x₁ op₂ x₂ …`: one chain of one precedence level (`+ -`
    /// or `* /`), evaluated left to right; a chain of the other level sits
    /// inside as an operand. Length costs no depth.
    Math {
        /// The leftmost operand.
        first: Box<Projected>,
        /// Each operator with its right operand.
        rest: Vec<(MathOp, Projected)>,
    },
    /// `( … )`.
    Paren(Box<Projected>),
}

impl fmt::Display for Projected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Projected::Wildcard => f.write_str("*"),
            Projected::Identifier(i) => write!(f, "{i}"),
            Projected::Call { name, args } => {
                // Quoted when it must be (`"limit"(x)`), so it reads back.
                write!(f, "{}(", Ident(name.clone()))?;
                for (k, a) in args.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    match a {
                        CallArg::Wildcard => f.write_str("*")?,
                        CallArg::Expr(e) => write!(f, "{e}")?,
                        CallArg::Call(c) => write!(f, "{c}")?,
                    }
                }
                f.write_str(")")
            }
            Projected::Number(l) => write!(f, "{l}"),
            Projected::Math { first, rest } => {
                write!(f, "{first}")?;
                for (op, x) in rest {
                    write!(f, " {} {x}", op.as_str())?;
                }
                Ok(())
            }
            Projected::Paren(p) => write!(f, "({p})"),
        }
    }
}

/// One projection with its optional `AS` alias.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// What is selected.
    pub expr: Projected,
    /// `AS alias`.
    pub alias: Option<Ident>,
}

/// `FROM [db.][rp.]measurement`.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasurementRef {
    /// Database, if named.
    pub database: Option<Ident>,
    /// Retention policy, if named.
    pub retention_policy: Option<Ident>,
    /// The measurement.
    pub name: Ident,
}

/// What a SELECT reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A measurement.
    Measurement(MeasurementRef),
    /// `( SELECT … )`: the rows of another statement.
    Subquery(Box<SelectStatement>),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Measurement(m) => write!(f, "{m}"),
            Source::Subquery(s) => write!(f, "({s})"),
        }
    }
}

/// A GROUP BY dimension.
#[derive(Debug, Clone, PartialEq)]
pub enum Dimension {
    /// `time(interval[, offset])`.
    Time {
        /// Bucket width.
        interval: Duration,
        /// Bucket offset from the epoch.
        offset: Option<Duration>,
    },
    /// A tag key.
    Tag(Ident),
    /// `*`: every tag.
    Wildcard,
    /// `/re/`: every tag key the regular expression matches.
    Regex(String),
}

/// `fill(…)` of a GROUP BY time query.
#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    /// `fill(null)`: empty buckets appear with null values.
    Null,
    /// `fill(none)`: empty buckets are left out.
    None,
    /// `fill(previous)`.
    Previous,
    /// `fill(linear)`.
    Linear,
    /// `fill(<number>)`.
    Value(Literal),
}

/// A `SELECT` statement.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectStatement {
    /// Projections, in order.
    pub fields: Vec<Projection>,
    /// The measurement or subquery.
    pub from: Source,
    /// WHERE condition.
    pub condition: Option<Condition>,
    /// GROUP BY dimensions.
    pub group_by: Vec<Dimension>,
    /// fill option.
    pub fill: Option<Fill>,
    /// `ORDER BY time DESC` when true (`ASC` is the default).
    pub descending: Option<bool>,
    /// LIMIT.
    pub limit: Option<u64>,
    /// OFFSET.
    pub offset: Option<u64>,
}

impl fmt::Display for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        if let Some(a) = &self.alias {
            write!(f, " AS {a}")?;
        }
        Ok(())
    }
}

impl fmt::Display for MeasurementRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.database, &self.retention_policy) {
            (Some(db), Some(rp)) => write!(f, "{db}.{rp}.{}", self.name),
            (Some(db), None) => write!(f, "{db}..{}", self.name),
            (None, Some(rp)) => write!(f, "{rp}.{}", self.name),
            (None, None) => write!(f, "{}", self.name),
        }
    }
}

impl fmt::Display for SelectStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        for (k, p) in self.fields.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        write!(f, " FROM {}", self.from)?;
        if let Some(c) = &self.condition {
            write!(f, " WHERE {c}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            for (k, d) in self.group_by.iter().enumerate() {
                if k > 0 {
                    f.write_str(", ")?;
                }
                match d {
                    Dimension::Time { interval, offset } => {
                        write!(f, "time({interval}")?;
                        if let Some(o) = offset {
                            write!(f, ", {o}")?;
                        }
                        f.write_str(")")?;
                    }
                    Dimension::Tag(t) => write!(f, "{t}")?,
                    Dimension::Wildcard => f.write_str("*")?,
                    Dimension::Regex(r) => write!(f, "{}", Literal::Regex(r.clone()))?,
                }
            }
        }
        if let Some(fill) = &self.fill {
            match fill {
                Fill::Null => f.write_str(" fill(null)")?,
                Fill::None => f.write_str(" fill(none)")?,
                Fill::Previous => f.write_str(" fill(previous)")?,
                Fill::Linear => f.write_str(" fill(linear)")?,
                Fill::Value(v) => write!(f, " fill({v})")?,
            }
        }
        if let Some(desc) = self.descending {
            write!(f, " ORDER BY time {}", if desc { "DESC" } else { "ASC" })?;
        }
        if let Some(n) = self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if let Some(n) = self.offset {
            write!(f, " OFFSET {n}")?;
        }
        Ok(())
    }
}

fn call_arg(i: &str, depth: Depth) -> PResult<'_, CallArg> {
    if let Ok((rest, _)) = token("*")(i) {
        return Ok((rest, CallArg::Wildcard));
    }
    // A call inside a call: one level deeper, committed at its name.
    if let Ok((rest, _)) = identifier(i) {
        if token("(")(rest).is_ok() {
            let (r, c) = depth.nest(i, call)?;
            return Ok((r, CallArg::Call(Box::new(c))));
        }
    }
    map(expr, CallArg::Expr)(i)
}

/// `name(args)`.
fn call(i: &str, depth: Depth) -> PResult<'_, Projected> {
    let (rest, name) = identifier(i)?;
    let (mut rest, _) = token("(")(rest)?;
    let name = name.0.to_lowercase();
    let mut args = Vec::new();
    if let Ok((r, _)) = token(")")(rest) {
        return Ok((r, Projected::Call { name, args }));
    }
    loop {
        let (r, a) = expect("a function argument", |i| call_arg(i, depth))(rest)?;
        args.push(a);
        if let Ok((r, _)) = token(",")(r) {
            rest = r;
            continue;
        }
        let (r, _) = expect("',' or ')' in the argument list", token(")"))(r)?;
        return Ok((r, Projected::Call { name, args }));
    }
}

/// An operand of select-list arithmetic: a call, a field or tag, a
/// number, or a parenthesised sum (one level deeper, committed at `(`).
fn factor(i: &str, depth: Depth) -> PResult<'_, Projected> {
    if let Ok((rest, _)) = token("(")(i) {
        let d = depth.enter(i)?;
        let (rest, inner) = expect("an expression after '('", |i| sum(i, d))(rest)?;
        let (rest, _) = expect("')'", token(")"))(rest)?;
        return Ok((rest, Projected::Paren(Box::new(inner))));
    }
    if let Ok((rest, name)) = identifier(i) {
        if token("(")(rest).is_ok() {
            return call(i, depth);
        }
        return Ok((rest, Projected::Identifier(name)));
    }
    map(number, Projected::Number)(i)
}

/// Operands of one precedence level joined into a chain.
fn chain<'a>(
    i: &'a str,
    depth: Depth,
    ops: [(&'static str, MathOp); 2],
    operand: fn(&'a str, Depth) -> PResult<'a, Projected>,
) -> PResult<'a, Projected> {
    let (mut i, first) = operand(i, depth)?;
    let mut rest = Vec::new();
    'more: loop {
        for (text, op) in ops {
            if let Ok((after, _)) = token(text)(i) {
                let (after, x) = expect("an operand", |i| operand(i, depth))(after)?;
                rest.push((op, x));
                i = after;
                continue 'more;
            }
        }
        break;
    }
    if rest.is_empty() {
        return Ok((i, first));
    }
    Ok((
        i,
        Projected::Math {
            first: Box::new(first),
            rest,
        },
    ))
}

fn product(i: &str, depth: Depth) -> PResult<'_, Projected> {
    chain(i, depth, [("*", MathOp::Mul), ("/", MathOp::Div)], factor)
}

fn sum(i: &str, depth: Depth) -> PResult<'_, Projected> {
    chain(i, depth, [("+", MathOp::Add), ("-", MathOp::Sub)], product)
}

fn projected(i: &str, depth: Depth) -> PResult<'_, Projected> {
    if let Ok((rest, _)) = token("*")(i) {
        return Ok((rest, Projected::Wildcard));
    }
    sum(i, depth)
}

fn projection(i: &str, depth: Depth) -> PResult<'_, Projection> {
    let (i, expr) = projected(i, depth)?;
    if let Ok((rest, _)) = keyword("AS")(i) {
        let (rest, alias) = expect("an alias after AS", identifier)(rest)?;
        return Ok((
            rest,
            Projection {
                expr,
                alias: Some(alias),
            },
        ));
    }
    Ok((i, Projection { expr, alias: None }))
}

fn measurement(i: &str) -> PResult<'_, MeasurementRef> {
    let (i, first) = expect("a measurement name", identifier)(i)?;
    let mut parts = vec![Some(first)];
    let mut i = i;
    while parts.len() < 3 {
        let Ok((rest, _)) = nom::bytes::complete::tag::<_, _, super::common::Fail>(".")(i) else {
            break;
        };
        if let Ok((r, id)) = identifier(rest) {
            parts.push(Some(id));
            i = r;
        } else if parts.len() == 1 && rest.starts_with('.') {
            // `db..m`: the default retention policy.
            parts.push(None);
            i = rest;
        } else {
            return fail_at(rest, "a name after '.'");
        }
    }
    let name = match parts.pop().flatten() {
        Some(n) => n,
        None => return fail_at(i, "a measurement name"),
    };
    let (database, retention_policy) = match parts.len() {
        2 => (parts[0].clone(), parts[1].clone()),
        1 => (None, parts[0].clone()),
        _ => (None, None),
    };
    Ok((
        i,
        MeasurementRef {
            database,
            retention_policy,
            name,
        },
    ))
}

fn dimension(i: &str) -> PResult<'_, Dimension> {
    if let Ok((rest, _)) = token("*")(i) {
        return Ok((rest, Dimension::Wildcard));
    }
    if let Ok((rest, re)) = super::literal::regex(i) {
        return Ok((rest, Dimension::Regex(re)));
    }
    if let Ok((rest, _)) = keyword("time")(i) {
        if let Ok((rest, _)) = token("(")(rest) {
            let (rest, interval) = expect("a duration such as 1s", duration)(rest)?;
            let (rest, offset) = match token(",")(rest) {
                Ok((r, _)) => {
                    let (r, o) = expect("an offset duration", duration)(r)?;
                    (r, Some(o))
                }
                Err(_) => (rest, None),
            };
            let (rest, _) = expect("')'", token(")"))(rest)?;
            return Ok((rest, Dimension::Time { interval, offset }));
        }
    }
    map(identifier, Dimension::Tag)(i)
}

fn fill(i: &str) -> PResult<'_, Fill> {
    let (i, _) = keyword("fill")(i)?;
    let (i, _) = expect("'(' after fill", token("("))(i)?;
    let (i, f) = if let Ok((r, _)) = keyword("null")(i) {
        (r, Fill::Null)
    } else if let Ok((r, _)) = keyword("none")(i) {
        (r, Fill::None)
    } else if let Ok((r, _)) = keyword("previous")(i) {
        (r, Fill::Previous)
    } else if let Ok((r, _)) = keyword("linear")(i) {
        (r, Fill::Linear)
    } else {
        let (r, v) = expect("null, none, previous, linear or a number", number)(i)?;
        (r, Fill::Value(v))
    };
    let (i, _) = expect("')'", token(")"))(i)?;
    Ok((i, f))
}

/// `SELECT …` up to the end of the statement, at nesting `depth` (see
/// [`super::depth`]).
pub fn select(i: &str, depth: Depth) -> PResult<'_, SelectStatement> {
    let (i, _) = keyword("SELECT")(i)?;
    let (mut i, first) = expect("a field, a function call or *", |i| projection(i, depth))(i)?;
    let mut fields = vec![first];
    while let Ok((rest, _)) = token(",")(i) {
        let (rest, p) = expect("a field, a function call or *", |i| projection(i, depth))(rest)?;
        fields.push(p);
        i = rest;
    }
    let (i, _) = expect("FROM", keyword("FROM"))(i)?;
    let (mut i, from) = if let Ok((rest, _)) = token("(")(i) {
        // A subquery: one level deeper, committed at its parenthesis.
        let d = depth.enter(i)?;
        let (rest, inner) = expect("SELECT in the subquery", |i| select(i, d))(rest)?;
        let (rest, _) = expect("')' after the subquery", token(")"))(rest)?;
        (rest, Source::Subquery(Box::new(inner)))
    } else {
        let (rest, m) = measurement(i)?;
        (rest, Source::Measurement(m))
    };
    if token(",")(i).is_ok() {
        return fail_at(
            i,
            "one measurement (several FROM sources are not supported)",
        );
    }
    let mut s = SelectStatement {
        fields,
        from,
        condition: None,
        group_by: Vec::new(),
        fill: None,
        descending: None,
        limit: None,
        offset: None,
    };
    if let Ok((rest, _)) = keyword("WHERE")(i) {
        let (rest, c) = expect("a condition", |i| condition(i, depth))(rest)?;
        s.condition = Some(c);
        i = rest;
    }
    if let Ok((rest, _)) = keyword("GROUP")(i) {
        let (rest, _) = expect("BY after GROUP", keyword("BY"))(rest)?;
        let (mut rest, d) = expect("time(…), a tag key or *", dimension)(rest)?;
        s.group_by.push(d);
        while let Ok((r, _)) = token(",")(rest) {
            let (r, d) = expect("time(…), a tag key or *", dimension)(r)?;
            s.group_by.push(d);
            rest = r;
        }
        i = rest;
    }
    if let Ok((rest, f)) = fill(i) {
        s.fill = Some(f);
        i = rest;
    }
    if let Ok((rest, _)) = keyword("ORDER")(i) {
        let (rest, _) = expect("BY after ORDER", keyword("BY"))(rest)?;
        let (rest, _) = expect("time (only ORDER BY time is supported)", keyword("time"))(rest)?;
        let (rest, desc) = if let Ok((r, _)) = keyword("DESC")(rest) {
            (r, true)
        } else if let Ok((r, _)) = keyword("ASC")(rest) {
            (r, false)
        } else {
            (rest, false)
        };
        s.descending = Some(desc);
        i = rest;
    }
    if let Ok((rest, _)) = keyword("LIMIT")(i) {
        let (rest, n) = expect("a row count after LIMIT", unsigned)(rest)?;
        s.limit = Some(n);
        i = rest;
    }
    if let Ok((rest, _)) = keyword("OFFSET")(i) {
        let (rest, n) = expect("a row count after OFFSET", unsigned)(rest)?;
        s.offset = Some(n);
        i = rest;
    }
    Ok((i, s))
}
