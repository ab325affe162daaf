//! Any bytes as a whole `/query` request: see `influxql::fuzz::query_request`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    influxql::fuzz::query_request(data);
});
