//! Operands (`duration_us`, `'read'`, `now() - 80s`) and WHERE conditions.

use std::fmt;

use nom::branch::alt;
use nom::combinator::map;

use super::common::{expect, fail_at, keyword, token, ws, PResult};
use super::identifier::{identifier, Ident};
use super::literal::{literal, Literal};

/// `+` or `-` between operands (time arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
}

/// An operand of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A field, tag or `time`.
    Identifier(Ident),
    /// A literal.
    Literal(Literal),
    /// `now()`.
    Now,
    /// `lhs + rhs` or `lhs - rhs`; the parser nests to the left only.
    Arith {
        /// Left operand.
        lhs: Box<Expr>,
        /// The operator.
        op: ArithOp,
        /// Right operand (never itself arithmetic).
        rhs: Box<Expr>,
    },
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Identifier(i) => write!(f, "{i}"),
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Now => f.write_str("now()"),
            Expr::Arith { lhs, op, rhs } => {
                let op = match op {
                    ArithOp::Add => "+",
                    ArithOp::Sub => "-",
                };
                write!(f, "{lhs} {op} {rhs}")
            }
        }
    }
}

fn now(i: &str) -> PResult<'_, Expr> {
    let (i, _) = keyword("now")(i)?;
    let (i, _) = token("(")(i)?;
    let (i, _) = expect("')' after now(", token(")"))(i)?;
    Ok((i, Expr::Now))
}

fn term(i: &str) -> PResult<'_, Expr> {
    alt((
        now,
        map(literal, Expr::Literal),
        map(identifier, Expr::Identifier),
    ))(i)
}

/// An operand: terms joined by `+` / `-`.
pub fn expr(i: &str) -> PResult<'_, Expr> {
    let (mut i, mut lhs) = term(i)?;
    loop {
        let op = match alt((token("+"), token("-")))(i) {
            Ok((rest, "+")) => (rest, ArithOp::Add),
            Ok((rest, _)) => (rest, ArithOp::Sub),
            Err(nom::Err::Error(_)) => return Ok((i, lhs)),
            Err(e) => return Err(e),
        };
        let (rest, rhs) = expect("an operand after '+' or '-'", term)(op.0)?;
        lhs = Expr::Arith {
            lhs: Box::new(lhs),
            op: op.1,
            rhs: Box::new(rhs),
        };
        i = rest;
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `=`
    Eq,
    /// `!=` (also written `<>`)
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CompareOp {
    /// The operator as InfluxQL writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }
}

/// A WHERE condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `lhs op rhs`.
    Compare {
        /// Left operand.
        lhs: Expr,
        /// The comparison.
        op: CompareOp,
        /// Right operand.
        rhs: Expr,
    },
    /// Both hold.
    And(Box<Condition>, Box<Condition>),
    /// Either holds.
    Or(Box<Condition>, Box<Condition>),
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Compare { lhs, op, rhs } => write!(f, "{lhs} {} {rhs}", op.as_str()),
            Condition::And(l, r) => {
                // AND binds tighter than OR and nests to the left: parenthesise
                // exactly where re-parsing would otherwise build another tree.
                match **l {
                    Condition::Or(..) => write!(f, "({l})")?,
                    _ => write!(f, "{l}")?,
                }
                f.write_str(" AND ")?;
                match **r {
                    Condition::Compare { .. } => write!(f, "{r}"),
                    _ => write!(f, "({r})"),
                }
            }
            Condition::Or(l, r) => {
                write!(f, "{l} OR ")?;
                match **r {
                    Condition::Or(..) => write!(f, "({r})"),
                    _ => write!(f, "{r}"),
                }
            }
        }
    }
}

fn compare_op(i: &str) -> PResult<'_, CompareOp> {
    let (i, _) = ws(i)?;
    for (text, op) in [
        ("!=", CompareOp::Ne),
        ("<>", CompareOp::Ne),
        ("<=", CompareOp::Le),
        (">=", CompareOp::Ge),
        ("=~", CompareOp::Eq),
        ("!~", CompareOp::Ne),
        ("=", CompareOp::Eq),
        ("<", CompareOp::Lt),
        (">", CompareOp::Gt),
    ] {
        if let Some(rest) = i.strip_prefix(text) {
            if text.ends_with('~') {
                return fail_at(
                    i,
                    "a comparison other than a regular expression match (=~, !~ are not supported)",
                );
            }
            return Ok((rest, op));
        }
    }
    Err(nom::Err::Error(super::common::Fail {
        input: i,
        expected: None,
    }))
}

fn comparison(i: &str) -> PResult<'_, Condition> {
    let (i, lhs) = expr(i)?;
    let (i, op) = expect("a comparison operator (=, !=, <, <=, >, >=)", compare_op)(i)?;
    let (i, rhs) = expect("an operand", expr)(i)?;
    Ok((i, Condition::Compare { lhs, op, rhs }))
}

fn primary(i: &str) -> PResult<'_, Condition> {
    if let Ok((rest, _)) = token("(")(i) {
        let (rest, c) = expect("a condition", condition)(rest)?;
        let (rest, _) = expect("')'", token(")"))(rest)?;
        return Ok((rest, c));
    }
    comparison(i)
}

fn conjunction(i: &str) -> PResult<'_, Condition> {
    let (mut i, mut c) = primary(i)?;
    while let Ok((rest, _)) = keyword("AND")(i) {
        let (rest, r) = expect("a condition after AND", primary)(rest)?;
        c = Condition::And(Box::new(c), Box::new(r));
        i = rest;
    }
    Ok((i, c))
}

/// A condition: comparisons joined by AND / OR, with parentheses.
pub fn condition(i: &str) -> PResult<'_, Condition> {
    let (mut i, mut c) = conjunction(i)?;
    while let Ok((rest, _)) = keyword("OR")(i) {
        let (rest, r) = expect("a condition after OR", conjunction)(rest)?;
        c = Condition::Or(Box::new(c), Box::new(r));
        i = rest;
    }
    Ok((i, c))
}
