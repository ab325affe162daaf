//! Any bytes as InfluxQL query text: see `influxql::fuzz::statement`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    influxql::fuzz::statement(data);
});
