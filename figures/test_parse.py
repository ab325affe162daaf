"""Tests of the log parsers (logparse.py) and a smoke run of every figure on small fake logs.

    make figures-test      (or: figures/.venv/bin/python -m pytest -q figures/test_parse.py)
"""

import os

import pytest

import logparse as lp


# --------------------------------------------------------------------------- ingest scaling
def test_ingest_line_from_producer():
    # The exact Display form of baselines/ingest-scaling/src/summary.rs.
    r = lp.parse_ingest_line("db=rocksdb threads=2 size=64 records/s=1500000 MB/s=96.00")
    assert (r.db, r.threads, r.size, r.records_per_s, r.mb_per_s) == ("rocksdb", 2, 64, 1.5e6, 96.0)


def test_ingest_line_db_names_and_extra_keys():
    r = lp.parse_ingest_line("db=loom-index threads=1 size=8 records/s=2.5e6 MB/s=20.0 extra=1")
    assert r.db == "loom-index" and r.records_per_s == 2.5e6


@pytest.mark.parametrize("line", [
    "db=loom threads=1 size=8",                                   # truncated (run killed)
    "db=loom threads=1 size=8 records/s=abc MB/s=1",              # not a number
    "db=loom threads=1 size=8 records/s=nan MB/s=1",              # not finite
    "db=loom threads=1 size=8 records/s=inf MB/s=1",
    "db=loom threads=1 size=8 records/s=-5 MB/s=1",               # negative
    "db=loom threads=x size=8 records/s=5 MB/s=1",
    "db=loom threads=1 size=0 records/s=5 MB/s=1",
    "db= threads=1 size=8 records/s=5 MB/s=1",
    "db=loom threads=1 size=8 records/s=5 MB/s",                  # token without =
])
def test_ingest_line_malformed(line):
    assert isinstance(lp.parse_ingest_line(line), str)


@pytest.mark.parametrize("line", [
    "[ingest-scaling] loom t=1s records/s=24000000 MB/s=192.0 records=24000000",
    "== is-mach-8 run 1/5 duration=120s 2026-11-22T07:00:00Z",
    "",
    "thread 'main' panicked at db=...",
])
def test_ingest_line_not_a_result(line):
    assert lp.parse_ingest_line(line) is None


def test_ingest_log_keeps_good_runs_and_warns():
    lines = [
        "== is-mach-8 run 1/2",
        "[ingest-scaling] loom t=1s records/s=1 MB/s=0.0 records=1",
        "db=loom threads=1 size=8 records/s=1000 MB/s=0.01",
        "db=loom threads=1 size=8 records/s=",
        "db=loom threads=1 size=64 records/s=2000 MB/s=0.13",
    ]
    runs, warnings = lp.parse_ingest_log(lines, "logs/is-mach-8")
    assert [r.records_per_s for r in runs] == [1000.0, 2000.0]
    assert [r.line for r in runs] == [3, 5]
    assert len(warnings) == 2
    assert "is-mach-8:4" in warnings[0]
    assert "log name says 8" in warnings[1]


@pytest.mark.parametrize("name,store,threads,size", [
    ("is-mach-8", "mach", "", "8"),
    ("is-mach-index-64", "mach-index", "", "64"),
    ("is-lmdb-256", "lmdb", "", "256"),
    ("is-rocksdb1-1024", "rocksdb", "1", "1024"),
    ("is-file2-8", "file", "2", "8"),
])
def test_ingest_log_names(name, store, threads, size):
    m = lp.IS_LOG_NAME.match(name)
    assert (m["store"], m["threads"], m["size"]) == (store, threads, size)


def test_dd():
    lines = [
        "== is-dd 2026-11-22T07:00:00Z of=/x/dd.bin",
        "4096+0 records in",
        "4294967296 bytes (4.3 GB, 4.0 GiB) copied, 3.21 s, 1.3 GB/s",
        "4294967296 bytes (4,3 GB, 4,0 GiB) copied, 3,5 s, 1,2 GB/s",
        "1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.002 s, 524 MB/s",
        "1073741824 bytes copied, 1 s, 1.0 GiB/s",
        "dd: error writing: No space left on device; copied, oops",
    ]
    rates, warnings = lp.parse_dd_log(lines, "is-dd")
    # bytes / seconds when dd prints both (its rate has two digits), else the printed rate
    assert rates == pytest.approx([4294967296 / 3.21e6, 4294967296 / 3.5e6, 1048576 / 0.002e6, 2**30 / 1e6])
    assert len(warnings) == 1 and "is-dd:7" in warnings[0]


# --------------------------------------------------------------------------- loom-app
def test_app_records_and_final():
    lines = [
        "loom-app listening on 127.0.0.1:7878, store /x, queries [\"rocksdb-p1\"], timestamps Arrival",
        "Records received: 100, dropped: 0, total received 100 dropped 0",
        "Records received: 200, dropped: 50, total received 300 dropped 50",
        "Records received: 2x0, dropped: 0, total received 300 dropped 50",
        "Final: records received 400, dropped 60 (15.000 %), ingested 340, batches received 4 dropped 1, "
        "connections 1 (bad 0), late refused 0, persists failed 0, data time 1.000 s, wall 2.000 s",
    ]
    app, warnings = lp.parse_app_log(lines, "e2e")
    assert app.intervals == [(100, 0), (200, 50)]
    assert app.totals() == (400, 60) and app.final
    assert app.dropped_pct() == pytest.approx(15.0)
    assert len(warnings) == 1 and "e2e:4" in warnings[0]


def test_app_records_with_appended_counts():
    # loom-app appends counts after the totals; the parsed part is unchanged.
    app, warnings = lp.parse_app_log([
        "Records received: 100, dropped: 10, total received 100 dropped 10, not stored 0, late 0",
        "Records received: 5, dropped: 0, total received 105 dropped 10, not stored 0, late 2, "
        "otlp accepted 5 rejected 1 throttled 0",
    ])
    assert app.intervals == [(100, 10), (5, 0)] and not warnings
    assert app.totals() == (105, 10)


def test_app_records_line_of_current_loom_app():
    # apps/loom-app/src/report.rs: `not stored` (refused by the engine) and `late` (refused as
    # older than their source's newest stored record) follow the totals.
    app, warnings = lp.parse_app_log([
        "Records received: 1680896, dropped: 5, total received 1680896 dropped 5, not stored 0, late 12, "
        "otlp accepted 0 rejected 0 throttled 0",
        "Records received: 10, dropped: 0, total received 1680906 dropped 5, not stored 3, late 0, "
        "otlp accepted 0 rejected 0 throttled 0",
    ])
    assert not warnings and app.intervals == [(1680896, 5), (10, 0)] and app.totals() == (1680906, 5)
    m = lp.APP_RECORDS.match("Records received: 1, dropped: 0, total received 1 dropped 0, not stored 0, late 7")
    assert m and m.group("late") == "7"
    # Since late siblings: `late stored s` (stored at their own time) follows `late m` (refused).
    m = lp.APP_RECORDS.match("Records received: 1, dropped: 0, total received 1 dropped 0, not stored 0, late 0, "
                             "late stored 9, otlp accepted 0 rejected 0 throttled 0")
    assert m and m.group("late") == "0"


def test_app_records_line_of_builds_before_late():
    # Logs in evaluation-output/ from builds before issue 26 say `raised m` where `late m` is now.
    app, warnings = lp.parse_app_log([
        "Records received: 100, dropped: 10, total received 100 dropped 10, not stored 0, raised 3",
    ])
    assert not warnings and app.intervals == [(100, 10)]
    m = lp.APP_RECORDS.match("Records received: 1, dropped: 0, total received 1 dropped 0, not stored 0, raised 2")
    assert m and m.group("late") == "2"


def test_app_totals_without_final():
    app, _ = lp.parse_app_log([
        "Records received: 100, dropped: 10, total received 100 dropped 10",
        "Records received: 100, dropped: 0, total received 200 dropped 10",
    ])
    assert app.totals() == (200, 10) and not app.final


def test_app_totals_old_format_sums_intervals():
    app, warnings = lp.parse_app_log(["Records received: 100, dropped: 10", "Records received: 300, dropped: 0"])
    assert app.totals() == (400, 10) and not warnings
    empty, _ = lp.parse_app_log(["nothing here"])
    assert empty.totals() == (None, None) and empty.dropped_pct() is None


@pytest.mark.parametrize("line,ms", [
    ("Query Latency (rocksdb-p1): 12.345 ms", 12.345),
    ("Query Latency (rocksdb-p2): 1.5s", 1500.0),          # Rust Debug durations of older builds
    ("Query Latency (rocksdb-p3): 250µs", 0.25),
    ("Query Latency (rocksdb-p3): 250 us", 0.25),
    ("Query Latency (rocksdb-p1): 900ns", 0.0009),
])
def test_app_latency_units(line, ms):
    app, warnings = lp.parse_app_log([line])
    assert not warnings and app.queries[0].latency_ms == pytest.approx(ms)


@pytest.mark.parametrize("line", [
    "Query Latency (rocksdb-p1): garbage",
    "Query Latency (rocksdb-p1): 12.3",                      # no unit
    "Query Latency (rocksdb-p1): 12.3 hours",
    "Query Latency rocksdb-p1: 12 ms",
    "Query Latency (rocksdb-p1): -4 ms",
])
def test_app_latency_malformed(line):
    app, warnings = lp.parse_app_log([line], "log")
    assert not app.queries and len(warnings) == 1 and warnings[0].startswith("log:1:")


def test_app_latency_inside_other_text_ignored():
    # crates/loom/examples/demo.rs prints `Query Latency (...)` mid-line; not a loom-app line.
    app, warnings = lp.parse_app_log(["  max latency  12 µs  Query Latency (max): 1.2ms  brute force: ok"])
    assert not app.queries and not warnings


def test_app_e2e_answers():
    lines = [
        "Query rocksdb-p1 window [40000000, 100000000] µs: KV read latency max: 812 µs, p99.99: 640 µs (123 records)",
        "Query Latency (rocksdb-p1): 3.250 ms",
        "Query rocksdb-p3 failed: I/O error: disk gone",
        "Query rocksdb-p1 window [160000000, 220000000] µs: KV read latency max: none µs, p99.99: none µs (0 records)",
        "Query Latency (rocksdb-p1): 0.5 ms",
    ]
    app, warnings = lp.parse_app_log(lines, "e2e")
    assert [q.latency_ms for q in app.queries] == [3.25, 0.5]
    assert [q.name for q in app.queries] == ["rocksdb-p1"] * 2
    assert app.failed == [("rocksdb-p3", "I/O error: disk gone")]
    assert len(warnings) == 1 and "failed" in warnings[0]


def test_app_ablation():
    lines = [
        "ablation: ingesting until 185 s of data, then counting KV reads > 80 µs in the 120 s window ending 65 s before",
        "Records received: 1000, dropped: 0, total received 1000 dropped 0",
        "ingest stopped at 185.000 s of data for the ablation query",
        "Ablation ablation-timerange lookback 60 s:",
        "Query ablation-timerange window [0, 120000000] µs: KV reads slower than 80 µs: 42, chunks read: 7",
        "Query Latency (ablation-timerange): 4.000 ms",
        "Ablation ablation-timerange lookback 60 s:",
        "Query ablation-timerange window [0, 120000000] µs: KV reads slower than 80 µs: 42, chunks read: 7",
        "ANSWER query=ablation-timerange t0=0 t1=120000000 count=42 chunks_read=8",
        "Query Latency (ablation-timerange): 3.000 ms",
    ]
    app, warnings = lp.parse_app_log(lines, "ab", default_lookback=20)
    assert not warnings
    q = app.queries
    assert [(x.count, x.chunks_read, x.lookback_s, x.latency_ms) for x in q] == [(42, 7, 60, 4.0), (42, 8, 60, 3.0)]


def test_app_ablation_lookback_from_name_and_missing_answer():
    app, _ = lp.parse_app_log(["Query Latency (ablation-noindex): 2.0 s"], default_lookback=300)
    q = app.queries[0]
    assert (q.lookback_s, q.latency_ms, q.count, q.chunks_read) == (300, 2000.0, None, None)


@pytest.mark.parametrize("name,system,query", [
    ("e2e-mach-app-rocksdb-p1", "mach", "rocksdb-p1"),
    ("e2e-influx-app-valkey-p2", "influx", "valkey-p2"),
    ("e2e-mach-app-rocksdb-p1,rocksdb-p2", "mach", "rocksdb-p1,rocksdb-p2"),
])
def test_e2e_log_names(name, system, query):
    m = lp.E2E_LOG_NAME.match(name)
    assert (m["system"], m["query"]) == (system, query)


def test_ab_log_names():
    m = lp.AB_LOG_NAME.match("ab-mach-ablation-timerange-60")
    assert (m["system"], m["query"], m["lookback"]) == ("mach", "ablation-timerange", "60")
    assert lp.AB_LOG_NAME.match("ab-mach-ablation-timerange") is None


def test_phase_and_mode():
    assert lp.phase_of("rocksdb-p3") == ("rocksdb", 3)
    assert lp.phase_of("probe-effect") is None
    assert lp.ablation_mode("ablation-onlyrange") == "onlyrange"
    assert lp.ablation_mode("timerange") == "timerange"
    assert lp.ablation_mode("rocksdb-p1") is None


# --------------------------------------------------------------------------- rocksdb-workload
def progress(i, total=303, dropped=0):
    return f"Count: {i} App: 100, Syscall: 200, Page cache: 3, Count: {total}, Dropped: {dropped}"


def test_workload_runs_appended():
    lines = [
        "Phase: P3 destination: Noop",
        "[rocksdb-workload] warmup 15 s",
        progress(1), progress(2, dropped=3),
        "Total sent: 606 records (App: 200, Syscall: 400, Page cache: 6), Dropped: 3 (app channel: 0, probe channel: 3, kernel: 0)",
        "Average rocksdb rate per sec: 1234567.8",
        "Phase: P3 destination: Noop",
        progress(1, dropped=97),
        "Average rocksdb rate per sec: 1200000.0",
    ]
    runs, warnings = lp.parse_workload_log(lines, "pe-noop")
    assert not warnings
    assert [r.ops_per_s for r in runs] == [1234567.8, 1200000.0]
    assert (runs[0].sent, runs[0].dropped, runs[0].seconds) == (606, 3, 2)
    assert runs[1].dropped_pct() == pytest.approx(97 * 100 / 400)


def test_workload_malformed_and_unfinished():
    lines = [
        "Phase: P3 destination: Tcp(\"127.0.0.1:7878\")",
        progress(1),
        "Count: 2 App: 1, Syscall: x",
        "Average rocksdb rate per sec: fast",
        "Phase: P3 destination: Tcp",
        progress(1),
        "Phase: P3 destination: Tcp",
        progress(1),
    ]
    runs, warnings = lp.parse_workload_log(lines, "pe-loom")
    assert runs == []
    assert len(warnings) == 4
    assert "pe-loom:3" in warnings[0] and "pe-loom:4" in warnings[1]
    assert "previous run" in warnings[2] and "last run" in warnings[3]


def test_workload_no_progress_lines():
    runs, _ = lp.parse_workload_log(["Average rocksdb rate per sec: 10.0"])
    assert runs[0].ops_per_s == 10.0 and runs[0].dropped_pct() is None


@pytest.mark.parametrize("name,endpoint", [
    ("pe-noop", "noop"), ("pe-loom", "loom"), ("pe-mach", "loom"), ("pe-file-writer", "file-writer"),
    ("pe-influx", "influx"), ("pe-loom-app", None), ("pe-file-writer-app", None), ("is-mach-8", None),
])
def test_pe_endpoint(name, endpoint):
    assert lp.pe_endpoint(name) == endpoint


# --------------------------------------------------------------------------- files
def test_read_lines_binary_and_missing(tmp_path):
    p = tmp_path / "is-mach-8"
    p.write_bytes(b"\xff\xfe garbage\r[ingest-scaling] x\ndb=loom threads=1 size=8 records/s=5 MB/s=0.00\n\x00")
    lines, warnings = lp.read_lines(str(p))
    assert not warnings
    runs, w = lp.parse_ingest_log(lines, "is-mach-8")
    assert len(runs) == 1 and not w
    lines, warnings = lp.read_lines(str(tmp_path / "missing"))
    assert lines == [] and len(warnings) == 1


# --------------------------------------------------------------------------- smoke: every figure
def write_fake_logs(d):
    """A little of every log kind, with some bad lines mixed in."""
    files = {
        "is-mach-8": "db=loom threads=1 size=8 records/s=8000000 MB/s=64.00\n"
                     "db=loom threads=1 size=8 records/s=9000000 MB/s=72.00\ndb=loom threads=1 size=8 rec\n",
        "is-mach-64": "db=loom threads=1 size=64 records/s=4000000 MB/s=256.00\n",
        "is-rocksdb1-8": "[ingest-scaling] progress\ndb=rocksdb threads=1 size=8 records/s=400000 MB/s=3.20\n",
        "is-dd": "4294967296 bytes (4.3 GB, 4.0 GiB) copied, 3.21 s, 1.3 GB/s\n",
        "is-table.md": "| db | threads |\n",
        "e2e-mach-app-rocksdb-p1": "Records received: 1000, dropped: 10, total received 1000 dropped 10\n"
                                   "Query rocksdb-p1 window [1, 2] µs: KV read latency max: 5 µs, p99.99: 4 µs (9 records)\n"
                                   "Query Latency (rocksdb-p1): 2.5 ms\nQuery Latency (rocksdb-p1): bad\n",
        "e2e-mach-app-rocksdb-p3": "Records received: 5, dropped: 0\n",
        "e2e-bogus": "Records received: 5, dropped: 0\n",
        "ab-mach-ablation-noindex-20": "Ablation ablation-noindex lookback 20 s:\n"
                                       "Query ablation-noindex window [1, 2] µs: KV reads slower than 80 µs: 3, chunks read: 90\n"
                                       "Query Latency (ablation-noindex): 900.0 ms\n",
        "ab-mach-ablation-timerange-20": "Query Latency (ablation-timerange): 9.0 ms\n",
        "ab-mach-ablation-timerange-60": "Query Latency (ablation-timerange): 9.5 ms\n",
        "pe-noop": f"{progress(1)}\nAverage rocksdb rate per sec: 1000000.0\n",
        "pe-loom": f"{progress(1, dropped=3)}\nAverage rocksdb rate per sec: 970000.0\nCount: 1 App",
        "pe-loom-app": "Records received: 5, dropped: 0\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)


def test_make_figures_draws_all(tmp_path, capsys):
    import make_figures
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    write_fake_logs(logs)
    assert make_figures.main(["--logs", str(logs), "--out", str(out), "--strict"]) == 0
    printed = capsys.readouterr()
    lines = [x for x in printed.out.splitlines() if x.startswith(("fig1", "fig2"))]
    assert len(lines) == 7, printed.out
    # No Valkey logs: figure 11 is skipped and says how to make them; the others are drawn.
    assert [x.split()[0] for x in lines if "->" not in x] == ["fig11"], printed.out
    assert "make " in [x for x in lines if x.startswith("fig11")][0]
    assert "warning:" in printed.err
    for stem in ("fig10-e2e-rocksdb", "fig12-e2e-dropped", "fig13-probe-effect", "fig14-ingest-scaling",
                 "fig15-ablation", "fig16-exact-match"):
        for ext in ("png", "pdf"):
            assert os.path.getsize(out / "figures" / f"{stem}.{ext}") > 1000
    csv = (out / "data" / "ingest-scaling.csv").read_text().splitlines()
    assert csv[0].startswith("db,threads,size_bytes,runs,records_per_s_median")
    assert "loom,1,8,2,8500000," in csv[1]


def test_make_figures_without_logs(tmp_path, capsys):
    import make_figures
    assert make_figures.main(["--logs", str(tmp_path / "none"), "--out", str(tmp_path / "out"), "--strict"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith(("fig1", "fig2"))]
    assert len(lines) == 7 and all("skipped" in x and "make " in x for x in lines)
    figures = tmp_path / "out" / "figures"
    assert sorted(os.listdir(figures)) == ["README.md"]
    assert (figures / "README.md").read_text().count(": not drawn") == 7


def test_valkey_workload_lines():
    lines = [
        "Phase: p3 destination: Noop",
        "Count: 1 App: 100, Syscall: 200, Page cache: 0, Count: 400, Dropped: 0, Packets: 100",
        "Count: 2 App: 100, Syscall: 200, Page cache: 0, Count: 400, Dropped: 4, Packets: 100",
        "Average valkey rate per sec: 50000.5",
    ]
    runs, warnings = lp.parse_workload_log(lines)
    assert not warnings
    assert [(r.ops_per_s, r.sent, r.dropped, r.seconds) for r in runs] == [(50000.5, 800, 4, 2)]


# --------------------------------------------------------------------------- endpoint CPU, influx names
@pytest.mark.parametrize("name,expected", [
    ("e2e-mach-app-rocksdb-p1", ("mach", "rocksdb-p1")),
    ("e2e-influx-app-rocksdb-p2", ("influx", "rocksdb-p2")),
    ("e2e-influx-app-dropped-valkey-p3", ("influx-dropped", "valkey-p3")),
    ("e2e-bogus", None),
])
def test_e2e_log_system(name, expected):
    assert lp.e2e_log(name) == expected


def test_endpoint_cpu_runs_with_influxd():
    lines = [
        "== pe-influx-app run 2026-11-22T10:00:00Z",
        "Final: records received 2000000, dropped 0 (0.000 %), ...",
        "Endpoint CPU: user 1.500 s, sys 0.500 s, total 2.000 s, records received 2000000, CPU s per M records 1.0000",
        "influxd CPU: user 3.000 s, sys 1.000 s, total 4.000 s",
        "== pe-influx-app run 2026-11-22T10:05:00Z",
        "Endpoint CPU: user 0.100 s, sys 0.000 s, total 0.100 s, records received 0, CPU s per M records -",
        "== pe-influx-app run 2026-11-22T10:10:00Z",
        "Records received: 5, dropped: 0",
    ]
    runs, warnings = lp.parse_endpoint_log(lines, "pe-influx-app")
    assert [(r.cpu_s, r.records, r.influxd_cpu_s) for r in runs] == [(2.0, 2000000, 4.0), (0.1, 0, None)]
    assert runs[0].cpu_s_per_m_records() == pytest.approx(3.0)
    assert runs[1].cpu_s_per_m_records() is None
    assert len(warnings) == 1 and "pe-influx-app:7" in warnings[0] and "cut short" in warnings[0]


def test_endpoint_cpu_malformed_and_in_app_log():
    runs, warnings = lp.parse_endpoint_log(["Endpoint CPU: user x s"], "log")
    assert runs == [] and len(warnings) == 1 and "log:1" in warnings[0]
    app, warnings = lp.parse_app_log([
        "Final: records received 10, dropped 1 (10.000 %), ingested 9",
        "Endpoint CPU: user 0.010 s, sys 0.020 s, total 0.030 s, records received 10, CPU s per M records 3000.0000",
        "influxd CPU: user 1.000 s, sys 0.000 s, total 1.000 s",
    ])
    assert not warnings and app.cpu_s == pytest.approx(0.03) and app.influxd_cpu_s == 1.0


@pytest.mark.parametrize("name,endpoint", [
    ("pe-loom-app", "loom"), ("pe-mach-app", "loom"), ("pe-file-writer-app", "file-writer"),
    ("pe-influx-app", "influx"), ("pe-loom", None), ("pe-noop", None),
])
def test_pe_endpoint_app(name, endpoint):
    assert lp.pe_endpoint_app(name) == endpoint
