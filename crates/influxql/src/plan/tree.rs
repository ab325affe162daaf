//! WHERE's `OR` trees: AND/OR of tag and field comparisons, and what is
//! left of one for a given series.
//!
//! A tree's tag comparisons are constants for a series, so planning
//! evaluates them once per series ([`CondTree::for_series`]): the series is
//! dropped (the tree is false whatever its records hold), kept whole (true
//! whatever they hold), or kept with a [`FieldTree`] of the field
//! comparisons that remain, which each of its records must satisfy. Tag
//! trees therefore still pick series at plan time and cost nothing per
//! record; only a tree whose outcome depends on fields filters records.
//! Time comparisons never reach a tree: as influxd 1.x does, every time
//! comparison of the WHERE clause, inside `OR` or not, is taken out of the
//! tree and the time ranges are intersected (`condition.rs`).

use loom::SourceSchema;

use crate::plan::condition::{FieldPredicate, TagPredicate};

/// One comparison of a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    /// A tag comparison (decided per series).
    Tag(TagPredicate),
    /// A field comparison (decided per record).
    Field(FieldPredicate),
}

/// Comparisons joined by AND and OR, at most the parser's depth limit deep.
#[derive(Debug, Clone, PartialEq)]
pub enum CondTree {
    /// One comparison.
    Leaf(Leaf),
    /// Every operand holds.
    All(Vec<CondTree>),
    /// At least one operand holds.
    Any(Vec<CondTree>),
}

/// Field comparisons joined by AND and OR: what a series' records must
/// satisfy. Each predicate's `field` is that series' own definition.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldTree {
    /// One comparison.
    Leaf(FieldPredicate),
    /// Every operand holds.
    All(Vec<FieldTree>),
    /// At least one operand holds.
    Any(Vec<FieldTree>),
}

impl FieldTree {
    /// Whether the record `bytes` satisfies the tree (a comparison with a
    /// value the record lacks is false, as influxd compares a null).
    pub fn matches(&self, bytes: &[u8]) -> bool {
        match self {
            FieldTree::Leaf(p) => p.matches(&p.field, bytes),
            FieldTree::All(v) => v.iter().all(|t| t.matches(bytes)),
            FieldTree::Any(v) => v.iter().any(|t| t.matches(bytes)),
        }
    }
}

/// A tree evaluated for one series.
#[derive(Debug, Clone, PartialEq)]
pub enum Reduced {
    /// True for every record of the series.
    True,
    /// False for every record: the series is not selected.
    False,
    /// True for the records that satisfy this.
    Records(FieldTree),
}

impl CondTree {
    /// Whether the tree holds any field comparison.
    pub fn has_fields(&self) -> bool {
        match self {
            CondTree::Leaf(l) => matches!(l, Leaf::Field(_)),
            CondTree::All(v) | CondTree::Any(v) => v.iter().any(CondTree::has_fields),
        }
    }

    /// The tree with the series' tags put in: constant, or the field
    /// comparisons its records must satisfy. A field the series lacks makes
    /// its comparisons false (every record lacks the value).
    pub fn for_series(&self, schema: &SourceSchema) -> Reduced {
        match self {
            CondTree::Leaf(Leaf::Tag(p)) => {
                if p.holds(schema.tag(&p.key)) {
                    Reduced::True
                } else {
                    Reduced::False
                }
            }
            CondTree::Leaf(Leaf::Field(p)) => match schema.field(p.field.name()) {
                Some(def) => Reduced::Records(FieldTree::Leaf(FieldPredicate {
                    field: def.clone(),
                    ..p.clone()
                })),
                None => Reduced::False,
            },
            CondTree::All(v) => {
                let mut left = Vec::new();
                for t in v {
                    match t.for_series(schema) {
                        Reduced::True => {}
                        Reduced::False => return Reduced::False,
                        Reduced::Records(r) => left.push(r),
                    }
                }
                join(left, FieldTree::All, Reduced::True)
            }
            CondTree::Any(v) => {
                let mut left = Vec::new();
                for t in v {
                    match t.for_series(schema) {
                        Reduced::True => return Reduced::True,
                        Reduced::False => {}
                        Reduced::Records(r) => left.push(r),
                    }
                }
                join(left, FieldTree::Any, Reduced::False)
            }
        }
    }
}

/// `empty` without operands, the operand alone, else `make(operands)`.
fn join(mut v: Vec<FieldTree>, make: fn(Vec<FieldTree>) -> FieldTree, empty: Reduced) -> Reduced {
    match v.len() {
        0 => empty,
        1 => Reduced::Records(v.remove(0)),
        _ => Reduced::Records(make(v)),
    }
}
