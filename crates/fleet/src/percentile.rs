//! `percentile(x, N)`: the exact percentile of InfluxDB 1.x, the rule
//! Loom's InfluxQL follows (`influxql::influx_rank`): the value
//! of 1-based rank `floor(n·N/100 + 0.5)` among the `n` non-null values in
//! ascending order, null when that rank is below 1 or above `n`. N is in
//! percent (99.99 for p99.99), a constant.
//!
//! DataFusion's own `percentile_cont` interpolates and
//! `approx_percentile_cont` estimates, so neither gives InfluxQL's answer.
//! The state is a count per distinct value, not every value: exact, and
//! small for telemetry (latencies in µs repeat), so a billion rows fit.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, UInt64Array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type, UInt64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;

/// The UDAF, ready to register.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::from(Percentile {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Percentile {
    signature: Signature,
}

/// How values map onto order-preserving u64 keys.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Unsigned,
    Signed,
    Float,
}

fn kind_of(t: &DataType) -> Option<(Kind, DataType)> {
    use DataType::*;
    match t {
        UInt8 | UInt16 | UInt32 | UInt64 => Some((Kind::Unsigned, UInt64)),
        Int8 | Int16 | Int32 | Int64 => Some((Kind::Signed, Int64)),
        Float16 | Float32 | Float64 | Null => Some((Kind::Float, Float64)),
        _ => None,
    }
}

impl AggregateUDFImpl for Percentile {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> &str {
        "percentile"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [v, n] = arg_types else {
            return plan_err!("percentile(x, N) takes a numeric column and N in percent");
        };
        let Some((_, v)) = kind_of(v) else {
            return plan_err!("percentile(x, N) needs a numeric x, not {v}");
        };
        if !n.is_numeric() {
            return plan_err!("percentile(x, N) needs a number N (percent), not {n}");
        }
        Ok(vec![v, DataType::Float64])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first().and_then(kind_of) {
            Some((_, t)) => Ok(t),
            None => plan_err!("percentile(x, N) needs a numeric x"),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let list = DataType::List(Arc::new(Field::new_list_field(DataType::UInt64, true)));
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[values]", args.name),
                list.clone(),
                true,
            )),
            Arc::new(Field::new(format!("{}[counts]", args.name), list, true)),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let n = args
            .exprs
            .get(1)
            .and_then(|e| e.as_any().downcast_ref::<Literal>())
            .map(|l| l.value().clone());
        let n_percent = match n {
            Some(ScalarValue::Float64(Some(v))) => v,
            Some(other) => match other.cast_to(&DataType::Float64)? {
                ScalarValue::Float64(Some(v)) => v,
                _ => return exec_err!("percentile(x, N): N must not be null"),
            },
            None => return exec_err!("percentile(x, N): N must be a constant"),
        };
        let Some((kind, _)) = args
            .expr_fields
            .first()
            .and_then(|f| kind_of(f.data_type()))
        else {
            return exec_err!("percentile(x, N) needs a numeric x");
        };
        Ok(Box::new(Counts {
            kind,
            n_percent,
            counts: HashMap::new(),
        }))
    }
}

/// Count per distinct value (as an order-preserving key).
#[derive(Debug)]
struct Counts {
    kind: Kind,
    n_percent: f64,
    counts: HashMap<u64, u64>,
}

const SIGN: u64 = 1 << 63;

fn float_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b & SIGN != 0 {
        !b
    } else {
        b | SIGN
    }
}

fn float_of(k: u64) -> f64 {
    f64::from_bits(if k & SIGN != 0 { k & !SIGN } else { !k })
}

impl Counts {
    fn add(&mut self, key: u64, n: u64) {
        *self.counts.entry(key).or_insert(0) += n;
    }

    fn list(values: Vec<u64>) -> ScalarValue {
        let n = values.len();
        let list = ListArray::new(
            Arc::new(Field::new_list_field(DataType::UInt64, true)),
            OffsetBuffer::from_lengths([n]),
            Arc::new(UInt64Array::from(values)),
            None,
        );
        ScalarValue::List(Arc::new(list))
    }
}

impl Accumulator for Counts {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(a) = values.first() else {
            return Ok(());
        };
        match self.kind {
            Kind::Unsigned => {
                for v in a.as_primitive::<UInt64Type>().iter().flatten() {
                    self.add(v, 1);
                }
            }
            Kind::Signed => {
                for v in a.as_primitive::<Int64Type>().iter().flatten() {
                    self.add((v as u64) ^ SIGN, 1);
                }
            }
            Kind::Float => {
                if a.data_type() == &DataType::Null {
                    return Ok(());
                }
                for v in a.as_primitive::<Float64Type>().iter().flatten() {
                    self.add(float_key(v), 1);
                }
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [keys, counts] = states else {
            return exec_err!("percentile: expected two state columns");
        };
        let (keys, counts) = (keys.as_list::<i32>(), counts.as_list::<i32>());
        for i in 0..keys.len() {
            if keys.is_null(i) || counts.is_null(i) {
                continue;
            }
            let (k, c) = (keys.value(i), counts.value(i));
            let (k, c) = (
                k.as_primitive::<UInt64Type>(),
                c.as_primitive::<UInt64Type>(),
            );
            for (k, c) in k.iter().zip(c.iter()) {
                if let (Some(k), Some(c)) = (k, c) {
                    self.add(k, c);
                }
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (k, c): (Vec<u64>, Vec<u64>) = self.counts.iter().map(|(k, c)| (*k, *c)).unzip();
        Ok(vec![Counts::list(k), Counts::list(c)])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let n: u64 = self.counts.values().sum();
        let rank = influxql::influx_rank(n, self.n_percent);
        let mut keys: Vec<(u64, u64)> = self.counts.iter().map(|(k, c)| (*k, *c)).collect();
        keys.sort_unstable();
        let mut seen = 0u64;
        let key = rank.and_then(|r| {
            keys.iter().find_map(|&(k, c)| {
                seen += c;
                (seen >= r).then_some(k)
            })
        });
        Ok(match self.kind {
            Kind::Unsigned => ScalarValue::UInt64(key),
            Kind::Signed => ScalarValue::Int64(key.map(|k| (k ^ SIGN) as i64)),
            Kind::Float => ScalarValue::Float64(key.map(float_of)),
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.counts.capacity() * 2 * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_order() {
        let xs = [-1e9, -2.5, -0.0, 0.0, 1e-9, 3.0, f64::INFINITY];
        for w in xs.windows(2) {
            assert!(float_key(w[0]) <= float_key(w[1]), "{w:?}");
            assert_eq!(float_of(float_key(w[0])), w[0]);
        }
        assert!(((-5i64) as u64 ^ SIGN) < (3i64 as u64 ^ SIGN));
    }
}
