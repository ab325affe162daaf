//! How each telemetry source is declared in the engine (range index bins).

use loom::RangeIndexSpec;
use telemetry::Kind;

/// Width of a latency bin, µs.
pub const LATENCY_BIN_US: u64 = 10;
/// Number of regular latency bins: 0..100 ms. Tail percentiles (p99.99 of KV
/// reads and `pread64` is in the milliseconds) then fall in a narrow bin
/// that few chunks hold, instead of an overflow bin that every chunk holds;
/// the indexer stores only the bins a chunk touches.
pub const LATENCY_BINS: u32 = 10_000;

/// The range index declared for a source of `kind` on first sight:
/// KV ops and syscalls get duration bins, page cache a single counting bin,
/// packets destination-port bins.
pub fn index_for(kind: Kind) -> RangeIndexSpec {
    let extractor = kind.extractor();
    match kind {
        Kind::KvOp | Kind::Syscall => RangeIndexSpec {
            extractor,
            min: 0,
            interval: LATENCY_BIN_US,
            n_bins: LATENCY_BINS,
        },
        Kind::PageCache => RangeIndexSpec {
            extractor,
            min: 0,
            interval: 1,
            n_bins: 1,
        },
        Kind::Packet => RangeIndexSpec {
            extractor,
            min: 0,
            interval: 1024,
            n_bins: 64,
        },
    }
}
