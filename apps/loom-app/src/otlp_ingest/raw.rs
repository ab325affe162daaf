//! OTLP requests through the intake log raw: a handler logs its request as
//! received before decoding it, so the log's write and `fdatasync` (done
//! by the log's writer thread, grouped with other requests') overlap the
//! decoding and conversion the request needs anyway; a client with one
//! request in flight then waits for about the longer of the two, not their
//! sum. At start, the raw requests an earlier run left are decoded and
//! converted again, at their logged arrival time, for the ingest thread to
//! store what is not stored yet.

use otlp::{Encoding, Signal};

use super::intake::{Intake, Outcome};
use crate::intake_log::{FileNo, Leftover, Logged, Reservation};

impl Intake {
    /// Logs one request's decompressed `body` (durable acknowledgements);
    /// `None` when requests are not logged raw.
    pub fn log_raw(
        &self,
        signal: Signal,
        encoding: Encoding,
        arrival_us: u64,
        body: &[u8],
    ) -> Option<Reservation> {
        self.raw_log()
            .map(|log| log.log_request(signal, encoding, arrival_us, body))
    }

    /// One OTLP/HTTP request's decompressed body: logged, decoded,
    /// converted and taken. `Err` when it does not decode (what was
    /// logged of it converts to nothing at the next start either).
    pub async fn export_body(
        &self,
        signal: Signal,
        encoding: Encoding,
        body: &[u8],
    ) -> Result<Outcome, otlp::Error> {
        let arrival_us = endpoint::epoch_us();
        let logged = self.log_raw(signal, encoding, arrival_us, body);
        let converted =
            otlp::decode_and_convert(signal, body, encoding, &self.context_at(arrival_us))?;
        Ok(self.take(converted, logged).await)
    }
}

/// What an earlier run left in the intake log, as records to store again:
/// raw requests decoded and converted as when they came (a request that
/// does not decode was refused then too; its items a conversion refuses
/// are left out as they were then).
pub fn replayable(intake: &Intake, left: Vec<(FileNo, Logged)>) -> Leftover {
    let mut out = Vec::new();
    let (mut requests, mut undecodable) = (0u64, 0u64);
    for (file, logged) in left {
        match logged {
            Logged::Records(rs) => out.extend(rs.into_iter().map(|r| (file, r))),
            Logged::Request(r) => {
                requests += 1;
                let ctx = intake.context_at(r.arrival_us);
                match otlp::decode_and_convert(r.signal, &r.body, r.encoding, &ctx) {
                    Ok(c) => out.extend(c.records.into_iter().map(|rec| (file, rec))),
                    Err(e) => {
                        undecodable += 1;
                        if undecodable <= 10 {
                            log::warn!("intake log: a logged OTLP request does not decode ({e}); skipped, as it was refused when it came");
                        }
                    }
                }
            }
        }
    }
    if requests > 0 {
        println!(
            "intake log: {requests} OTLP requests from before a crash ({undecodable} undecodable), {} records",
            out.len()
        );
    }
    out
}
