//! Text → AST. Parsing knows nothing about storage; every AST node prints
//! canonical InfluxQL through `Display`, so parse → print → parse is the
//! identity.

pub mod common;
pub mod depth;
pub mod expression;
pub mod identifier;
pub mod literal;
pub mod select;
pub mod show;
pub mod statement;

pub use depth::{Depth, TextLimits, MAX_DEPTH};
pub use expression::{ArithOp, CompareOp, Condition, Expr};
pub use identifier::Ident;
pub use literal::{Duration, Literal};
pub use select::{
    CallArg, Dimension, Fill, MathOp, MeasurementRef, Projected, Projection, SelectStatement,
    Source,
};
pub use show::ShowStatement;
pub use statement::{parse_statement, parse_statements, parse_statements_within, Statement};
