"""Parsing and drawing on real logs: figures/tests/fixtures/ holds logs that the
project's own apps wrote in a `make evaluate-small EVAL_SCALE=tiny` run (loom-app,
influx-app dropping and --complete-data, file-writer-app, rocksdb-workload,
valkey-workload, tcp-replay, data-stats, ingest-scaling, dd), cut to a few KB
(the first and last lines of each; see fixtures/README.md).

    make figures-test
"""

import os
import shutil
import struct

import pytest

import keynumbers
import logparse as lp
import make_figures
from runinfo import RunInfo

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
# Every figure file make_figures draws from the fixtures, with its size in pixels
# (150 dpi, tight bounding box; deterministic with the pinned matplotlib).
EXPECTED = {
    "fig10-e2e-rocksdb": (2665, 675),
    "fig11-e2e-valkey": (2580, 675),
    "fig12-e2e-dropped": (1878, 734),
    "fig13-probe-effect": (2384, 793),
    "fig14-ingest-scaling": (2159, 704),
    "fig15-ablation": (1789, 846),
    "fig16-exact-match": (1121, 742),
}
SIZE_TOLERANCE = 0.1


def fixture_lines(name):
    lines, warnings = lp.read_lines(os.path.join(FIXTURES, name))
    assert not warnings and lines, name
    return lines


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


# --------------------------------------------------------------------------- parsing
def test_loom_app_e2e_log():
    app, warnings = lp.parse_app_log(fixture_lines("e2e-mach-app-rocksdb-p1"), "e2e-mach-app-rocksdb-p1")
    assert not warnings
    assert app.final and app.total_received > 1_000_000 and app.total_dropped == 0
    assert [q.name for q in app.queries] == ["rocksdb-p1"] * len(app.queries) and app.queries
    assert all(q.latency_ms >= 0 for q in app.queries)
    assert app.cpu_s > 0


@pytest.mark.parametrize("name,system", [
    ("e2e-influx-app-dropped-rocksdb-p3", "influx-dropped"),
    ("e2e-influx-app-rocksdb-p1", "influx"),
])
def test_influx_app_logs(name, system):
    assert lp.e2e_log(name) == (system, name.rsplit("-", 2)[-2] + "-" + name.rsplit("-", 1)[-1])
    app, _ = lp.parse_app_log(fixture_lines(name), name)
    rec, drop = app.totals()
    assert app.final and rec > 0 and 0 <= drop <= rec
    assert app.queries and all(q.latency_ms > 0 for q in app.queries)
    # influx-app's own CPU at exit, then influxd's, appended by `make influxd-stop`.
    assert app.cpu_s > 0 and app.influxd_cpu_s is not None and app.influxd_cpu_s > 0


def test_valkey_e2e_log():
    app, warnings = lp.parse_app_log(fixture_lines("e2e-mach-app-valkey-p3"), "e2e-mach-app-valkey-p3")
    assert not warnings and app.final
    assert {q.name for q in app.queries} == {"valkey-p3"}


def test_probe_effect_logs():
    for ep in ("noop", "file-writer", "loom", "influx"):
        runs, warnings = lp.parse_workload_log(fixture_lines(f"pe-{ep}"), f"pe-{ep}")
        assert not warnings and len(runs) >= 2, ep
        assert all(r.ops_per_s > 0 and r.seconds > 0 for r in runs)
    for ep in ("file-writer", "loom", "influx"):
        runs, warnings = lp.parse_endpoint_log(fixture_lines(f"pe-{ep}-app"), f"pe-{ep}-app")
        assert not warnings and len(runs) >= 2, ep
        assert all(r.records > 0 and r.cpu_s_per_m_records() > 0 for r in runs)
        assert all((r.influxd_cpu_s is not None) == (ep == "influx") for r in runs)


def test_valkey_probe_logs():
    for probes in ("none", "syscalls", "both"):
        runs, warnings = lp.parse_workload_log(fixture_lines(f"valkey-pe-{probes}"), f"valkey-pe-{probes}")
        assert not warnings and runs and all(r.ops_per_s > 0 for r in runs)
    both = lp.parse_workload_log(fixture_lines("valkey-pe-both"))[0][0]
    assert both.sent > 0


def test_ingest_and_dd_logs():
    names = [n for n in os.listdir(FIXTURES) if lp.IS_LOG_NAME.match(n)]
    assert len(names) >= 6
    for n in names:
        runs, warnings = lp.parse_ingest_log(fixture_lines(n), n)
        assert not warnings and runs and all(r.records_per_s > 0 for r in runs), n
    rates, warnings = lp.parse_dd_log(fixture_lines("is-dd"), "is-dd")
    assert not warnings and len(rates) == 1 and rates[0] > 10


def test_ablation_log():
    name = [n for n in os.listdir(FIXTURES) if n.startswith("ab-")][0]
    m = lp.AB_LOG_NAME.match(name)
    app, warnings = lp.parse_app_log(fixture_lines(name), name, default_lookback=int(m["lookback"]))
    assert not warnings
    modes = {lp.ablation_mode(q.name) for q in app.queries}
    assert modes == set(lp.ABLATION_MODES)
    # Every index mode counts the same records: the answers agree.
    assert len({q.count for q in app.queries}) == 1
    noindex = [q for q in app.queries if q.name.endswith("noindex")][0]
    timerange = [q for q in app.queries if q.name.endswith("timerange")][0]
    assert timerange.chunks_read <= noindex.chunks_read


def test_run_info_and_origins():
    info = RunInfo(FIXTURES)
    assert info.info["cores"] >= 1 and info.dd_mb_s > 0
    assert info.origins.get("rocksdb-p1") == "live"
    assert "cores" in info.machine() and "dd" in info.machine()
    assert "rocksdb-p1" in info.caption("x", {"rocksdb-p1"}) and "live" in info.caption("x", {"rocksdb-p1"})


# --------------------------------------------------------------------------- truncated logs
def cuts(text):
    """The log cut at several points, mid-line included."""
    n = len(text)
    return [text[:k] for k in sorted({n // 7, n // 3, n // 2, (2 * n) // 3, n - 7, n - 1})]


LOGS = sorted(n for n in os.listdir(FIXTURES) if not n.endswith((".json", ".md")))


@pytest.mark.parametrize("name", LOGS)
def test_truncated_fixture_never_crashes(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        text = f.read()
    for part in cuts(text):
        lines = part.splitlines()
        lp.parse_app_log(lines, name)
        lp.parse_workload_log(lines, name)
        lp.parse_endpoint_log(lines, name)
        lp.parse_ingest_log(lines, name)
        lp.parse_dd_log(lines, name)


def test_truncated_endpoint_log_is_reported():
    lines = fixture_lines("e2e-mach-app-rocksdb-p1")
    final = [i for i, x in enumerate(lines) if x.startswith("Final:")][0]
    cut = lines[:final]
    app, _ = lp.parse_app_log(cut, "cut")
    assert not app.final
    warning = lp.truncation_warning(cut, "cut", app)
    assert warning and "Final" in warning and "partial" in warning
    # The counts so far are still used.
    assert app.totals()[0] > 0


def test_truncated_logs_reported_by_make_figures(tmp_path, capsys):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES, logs)
    # Cut before the last run's closing line (the endpoint killed before its exit line).
    for name, closing in (("e2e-mach-app-rocksdb-p1", "Final:"), ("pe-loom", "Average rocksdb"),
                          ("pe-loom-app", "Endpoint CPU:")):
        text = (logs / name).read_text()
        (logs / name).write_text(text[: text.rindex(closing) + 5])
    assert make_figures.main(["--logs", str(logs), "--out", str(tmp_path / "out"), "--strict"]) == 0
    err = capsys.readouterr().err
    assert "e2e-mach-app-rocksdb-p1: no `Final:` line" in err
    assert "pe-loom: last run has no `Average rocksdb rate` line" in err
    assert "pe-loom-app" in err and "cut short" in err


# --------------------------------------------------------------------------- smoke: every figure
def test_every_figure_from_fixtures(tmp_path, capsys):
    out = tmp_path / "out"
    assert make_figures.main(["--logs", FIXTURES, "--out", str(out), "--strict"]) == 0
    printed = capsys.readouterr().out
    lines = [x for x in printed.splitlines() if x.startswith("fig1")]
    assert len(lines) == len(EXPECTED) and all(" -> " in x for x in lines), printed
    for stem, (w, h) in EXPECTED.items():
        png = out / "figures" / f"{stem}.png"
        pdf = out / "figures" / f"{stem}.pdf"
        assert os.path.getsize(png) > 20_000 and os.path.getsize(pdf) > 5_000, stem
        with open(pdf, "rb") as f:
            assert f.read(5) == b"%PDF-", stem
        pw, ph = png_size(png)
        assert abs(pw - w) <= SIZE_TOLERANCE * w and abs(ph - h) <= SIZE_TOLERANCE * h, (stem, pw, ph)
    readme = (out / "figures" / "README.md").read_text()
    for stem in EXPECTED:
        assert f"## {stem}" in readme
    assert readme.count("Measured on: ") == len(EXPECTED)
    assert "live" in readme and "published" in readme


def test_key_numbers_table_from_fixtures(tmp_path):
    text = keynumbers.report(FIXTURES, str(tmp_path))
    assert "| fig | measurement | this machine | published (64-core server) |" in text
    for needle in ("ingest, Loom (records/s", "probe effect, Loom endpoint", "endpoint CPU s per M records, InfluxDB",
                   "rocksdb P1 query latency", "records dropped", "ablation time + range index", "FishStore",
                   "Valkey requests/s with probes"):
        assert needle in text, needle
    # No figure drawn in an empty folder: every figure is listed as missing.
    assert text.count("NO DATA") == len(keynumbers.FIGURES)
