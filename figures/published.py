"""Published numbers of the paper's artifact (64-core server, NVMe), with where each comes from.

Shown only labelled "published", next to measured data, never merged into it.
No plotting imports: the summary table of scripts/evaluate.py reads this too.
Sources: docs/design.md ("Published reference numbers") and the issues that
quote the paper (InfluxDB baseline, Valkey workload, probe effect).
"""

LABEL = "published (64-core server)"
FISHSTORE_LABEL = "FishStore, published (64-core server; not run here)"

# Figure 13: RocksDB ops/s with telemetry sent to each endpoint, % of noop.
PROBE_EFFECT_PCT = {
    "noop": 100.0,
    "file-writer": 100.0 - 2.3,
    "loom": 100.0 - 3.0,
    "influx": 100.0 - 27.0,
    "fishstore": 100.0 - 7.5,
}
PROBE_EFFECT_NOOP_OPS = 5.03e6
PROBE_EFFECT_LOOM_OPS = 4.88e6

# Figure 14: single-thread Loom ingest, records/s by payload size (B).
INGEST_RPS = {8: 24.1e6, 64: 12.2e6, 256: 4.3e6, 1024: 1.18e6}

# Figures 15/16: count query over 120 s of data; time + range index ~4.5 s at
# every lookback, no index 204 s (shortest lookback) to 1019 s (longest).
TIMERANGE_QUERY_S = 4.5
NOINDEX_QUERY_S = (204.0, 1019.0)

# Figures 10-12, end to end (query latency in s; % of records dropped).
E2E_LATENCY_S = {
    # (system, workload, phase): seconds, or a (a, b) pair for two questions. InfluxDB's
    # query ran once, after every point was written (the artifact's complete-data endpoint).
    ("loom", "rocksdb", 1): 0.87,
    ("influx", "rocksdb", 1): 23.5,
    ("loom", "valkey", 1): 5.7,
    ("loom", "valkey", 2): (7.8, 2.3),
    ("loom", "valkey", 3): (0.84, 15.3),
}
E2E_INFLUX_DROPPED_PCT = {"rocksdb": (87.0, 93.0), "valkey": (39.0, 91.0)}


def fmt_latency(v):
    """`0.87 s` or `7.8 s + 2.3 s` for a published latency entry."""
    if isinstance(v, tuple):
        return " + ".join(f"{x:g} s" for x in v)
    return f"{v:g} s"


def e2e_latency_ms(system, workload, phase):
    """Published latency of one question in ms (the sum for two-question phases), None if unknown."""
    v = E2E_LATENCY_S.get((system, workload, phase))
    if v is None:
        return None
    return 1e3 * (sum(v) if isinstance(v, tuple) else v)
