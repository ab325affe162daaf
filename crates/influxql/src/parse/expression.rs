//! Operands (`duration_us`, `'read'`, `now() - 80s`) and WHERE conditions.

use std::fmt;

use nom::branch::alt;
use nom::combinator::map;

use super::common::{expect, fail_at, keyword, token, ws, PResult};
use super::depth::{Depth, MAX_DEPTH};
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
    /// `first op₁ t₁ op₂ t₂ …`, evaluated left to right. The whole chain is
    /// one node, so its length costs no depth (see [`super::depth`]); the
    /// parser never puts arithmetic inside it.
    Arith {
        /// The leftmost operand.
        first: Box<Expr>,
        /// Each operator with the operand on its right, in order.
        rest: Vec<(ArithOp, Expr)>,
    },
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Identifier(i) => write!(f, "{i}"),
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Now => f.write_str("now()"),
            Expr::Arith { first, rest } => {
                write!(f, "{first}")?;
                for (op, e) in rest {
                    let op = match op {
                        ArithOp::Add => "+",
                        ArithOp::Sub => "-",
                    };
                    write!(f, " {op} {e}")?;
                }
                Ok(())
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

/// An operand: terms joined by `+` / `-`, as one chain.
pub fn expr(i: &str) -> PResult<'_, Expr> {
    let (mut i, first) = term(i)?;
    let mut rest = Vec::new();
    loop {
        let op = match alt((token("+"), token("-")))(i) {
            Ok((after, "+")) => (after, ArithOp::Add),
            Ok((after, _)) => (after, ArithOp::Sub),
            Err(nom::Err::Error(_)) => break,
            Err(e) => return Err(e),
        };
        let (after, rhs) = expect("an operand after '+' or '-'", term)(op.0)?;
        rest.push((op.1, rhs));
        i = after;
    }
    if rest.is_empty() {
        return Ok((i, first));
    }
    let first = Box::new(first);
    Ok((i, Expr::Arith { first, rest }))
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
    /// `=~`: a regular expression matches (unanchored).
    Match,
    /// `!~`: a regular expression does not match.
    NotMatch,
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
            CompareOp::Match => "=~",
            CompareOp::NotMatch => "!~",
        }
    }
}

/// A WHERE condition. `AND` and `OR` chains are one node each (two or
/// more operands, in the order written), so a long chain costs no depth;
/// only parentheses nest.
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
    /// Every operand holds.
    And(Vec<Condition>),
    /// At least one operand holds.
    Or(Vec<Condition>),
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_condition(self, f, 0)
    }
}

/// Prints `c` at nesting `level`. Parentheses go exactly where re-parsing
/// would otherwise build another tree: around a chain inside a chain,
/// except an AND chain inside an OR chain (AND binds tighter). A tree
/// deeper than the parser builds (only code can make one) prints `…` past
/// [`MAX_DEPTH`] levels of chains instead of exhausting the stack.
fn write_condition(c: &Condition, f: &mut fmt::Formatter<'_>, level: usize) -> fmt::Result {
    let (items, sep) = match c {
        Condition::Compare { lhs, op, rhs } => {
            return write!(f, "{lhs} {} {rhs}", op.as_str());
        }
        Condition::And(items) => (items, " AND "),
        Condition::Or(items) => (items, " OR "),
    };
    // The parser builds chains at levels 0 ..= MAX_DEPTH.
    if level > MAX_DEPTH {
        return f.write_str("…");
    }
    for (k, item) in items.iter().enumerate() {
        if k > 0 {
            f.write_str(sep)?;
        }
        let bare = matches!(
            (c, item),
            (_, Condition::Compare { .. }) | (Condition::Or(_), Condition::And(_))
        );
        if bare {
            write_condition(item, f, level + 1)?;
        } else {
            f.write_str("(")?;
            write_condition(item, f, level + 1)?;
            f.write_str(")")?;
        }
    }
    Ok(())
}

fn compare_op(i: &str) -> PResult<'_, CompareOp> {
    let (i, _) = ws(i)?;
    for (text, op) in [
        ("!=", CompareOp::Ne),
        ("<>", CompareOp::Ne),
        ("<=", CompareOp::Le),
        (">=", CompareOp::Ge),
        ("=~", CompareOp::Match),
        ("!~", CompareOp::NotMatch),
        ("=", CompareOp::Eq),
        ("<", CompareOp::Lt),
        (">", CompareOp::Gt),
    ] {
        if let Some(rest) = i.strip_prefix(text) {
            return Ok((rest, op));
        }
    }
    Err(nom::Err::Error(super::common::Fail {
        input: i,
        expected: None,
        bound: None,
    }))
}

fn comparison(i: &str) -> PResult<'_, Condition> {
    let (i, lhs) = expr(i)?;
    let (i, op) = expect(
        "a comparison operator (=, !=, <, <=, >, >=, =~, !~)",
        compare_op,
    )(i)?;
    let (i, rhs) = expect("an operand", expr)(i)?;
    Ok((i, Condition::Compare { lhs, op, rhs }))
}

/// One open level of parentheses while parsing a condition: the operands
/// of the OR chain so far and of the AND chain being read, and the level's
/// depth.
struct Level {
    ors: Vec<Condition>,
    ands: Vec<Condition>,
    depth: Depth,
}

impl Level {
    fn new(depth: Depth) -> Level {
        Level {
            ors: Vec::new(),
            ands: Vec::new(),
            depth,
        }
    }

    /// The level's condition: its AND chain closes the OR chain.
    fn finish(mut self) -> Condition {
        self.ors.push(chain_node(self.ands, Condition::And));
        chain_node(self.ors, Condition::Or)
    }
}

/// A single operand is returned as it is; two or more become `node`.
fn chain_node(mut items: Vec<Condition>, node: fn(Vec<Condition>) -> Condition) -> Condition {
    if items.len() == 1 {
        items.remove(0)
    } else {
        node(items)
    }
}

/// A condition: comparisons joined by AND / OR (AND binds tighter), with
/// parentheses, starting at nesting `depth` (see [`super::depth`]).
///
/// Iterative: open parentheses are a stack of [`Level`]s on the heap, so
/// parsing uses the same stack at any depth; [`Depth`] still bounds the
/// nesting, for the walks over the tree after parsing.
pub fn condition(i: &str, depth: Depth) -> PResult<'_, Condition> {
    let mut levels = vec![Level::new(depth)];
    let mut i = i;
    // What the next operand follows, for "expected …" messages; `None` at
    // the very start, where a miss is the caller's to report.
    let mut after: Option<&'static str> = None;
    loop {
        // An operand: open parentheses, then a comparison.
        loop {
            let Some(top) = levels.last() else {
                return fail_at(i, "a condition");
            };
            let Ok((rest, _)) = token("(")(i) else { break };
            let d = top.depth.enter(i)?;
            levels.push(Level::new(d));
            after = Some("a condition");
            i = rest;
        }
        let (rest, c) = match comparison(i) {
            Ok(ok) => ok,
            Err(nom::Err::Error(e)) => match after {
                None => return Err(nom::Err::Error(e)),
                Some(what) => return fail_at(i, what),
            },
            Err(e) => return Err(e),
        };
        i = rest;
        let Some(mut top) = levels.pop() else {
            return fail_at(i, "a condition");
        };
        top.ands.push(c);
        // After an operand: AND, OR, a closing parenthesis, or the end.
        loop {
            if let Ok((rest, _)) = keyword("AND")(i) {
                after = Some("a condition after AND");
                i = rest;
                break;
            }
            if let Ok((rest, _)) = keyword("OR")(i) {
                top.ors
                    .push(chain_node(std::mem::take(&mut top.ands), Condition::And));
                after = Some("a condition after OR");
                i = rest;
                break;
            }
            let Some(parent) = levels.last_mut() else {
                return Ok((i, top.finish()));
            };
            let (rest, _) = expect("')'", token(")"))(i)?;
            parent.ands.push(top.finish());
            i = rest;
            let Some(next) = levels.pop() else {
                return fail_at(i, "a condition");
            };
            top = next;
        }
        levels.push(top);
    }
}
