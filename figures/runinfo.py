"""What a figure's caption says about the run behind it: the machine, the scale,
and whether each input recording was captured live or is SYNTHETIC.

Sources, all in the log folder:
- evaluate-run.json, written by scripts/evaluate.py (cores, memory, CPU model,
  scale and its knobs); absent when the targets were run by hand;
- is-dd, the direct-I/O write bandwidth (`make is-dd`);
- record-<workload>-<phase> and replay-* logs, whose `recording <path>: workload
  <w> phase <p> (SYNTHETIC|captured live)` lines (data-stats, tcp-replay) say how
  each recording was made.

No plotting imports (scripts/evaluate.py reads it with the system Python).
"""

import json
import os
import re
import statistics

import logparse

RUN_INFO = "evaluate-run.json"
# How a caption names a knob of evaluate-run.json (scripts/evaluate.py, mk/evaluate.mk).
KNOB_TEXT = {
    "query_interval_s": "question every {} s", "query_count": "{} rounds",
    "complete_replay_s": "Influx-complete replay {} s", "pe_rounds": "{} rounds", "pe_duration_s": "{} s per run",
    "pe_warmup_s": "{} s warmup", "valkey_pe_rounds": "Valkey {} rounds", "valkey_pe_s": "Valkey {} s per run",
    "is_runs": "{} run(s) per point", "is_duration_s": "{} s per run", "dd_mb": "dd {} MiB",
    "ab_lookbacks": "lookbacks {} s", "ab_speed": "replay at up to {}x", "ab_max_rate": "at most {:.0f} records/s",
    "ab_reps": "{} repetitions",
}
# data-stats and tcp-replay: `recording <path>: workload rocksdb phase p2 (captured live)`
RECORDING_LINE = re.compile(
    r"^recording (?P<path>\S+): workload (?P<workload>\S+) phase (?P<phase>\S+) \((?P<origin>SYNTHETIC|captured live)\)")


class RunInfo:
    """The facts of one log folder that every caption states."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.info = {}
        self.warnings = []
        path = os.path.join(log_dir, RUN_INFO)
        if os.path.exists(path):
            try:
                with open(path) as f:
                    self.info = json.load(f)
            except (OSError, ValueError) as e:
                self.warnings.append(f"{path}: unreadable ({e}); captions say the machine is unknown")
        lines, _ = logparse.read_lines(os.path.join(log_dir, "is-dd"))
        self.dd_mb_s = statistics.median(logparse.parse_dd_log(lines)[0] or [0]) or None
        self.origins = self._origins()

    def _origins(self):
        """{`workload-phase`: `live` | `SYNTHETIC` | `mixed`} from the recording lines of every log."""
        seen = {}
        for name in logparse.list_logs(self.log_dir, ""):
            if not name.startswith(("record-", "replay-", "e2e-", "ab-")):
                continue
            lines, _ = logparse.read_lines(os.path.join(self.log_dir, name))
            for line in lines[:40]:
                m = RECORDING_LINE.match(line.strip())
                if m:
                    key = f"{m['workload']}-{m['phase']}"
                    origin = "SYNTHETIC" if m["origin"] == "SYNTHETIC" else "live"
                    seen.setdefault(key, set()).add(origin)
        return {k: (v.pop() if len(v) == 1 else "mixed") for k, v in seen.items()}

    def machine(self):
        """`2 cores, 23.4 GiB, disk 2450 MB/s (dd direct I/O)`, or what is known of it."""
        parts = []
        if self.info.get("cores"):
            parts.append(f"{self.info['cores']} cores")
        if self.info.get("memory_gib"):
            parts.append(f"{self.info['memory_gib']} GiB")
        parts.append(f"disk {self.dd_mb_s:.0f} MB/s (dd direct-I/O write)" if self.dd_mb_s
                     else "disk bandwidth not measured (make is-dd)")
        if not self.info:
            parts.insert(0, "machine not recorded (no evaluate-run.json: targets run by hand)")
        return ", ".join(parts)

    def scale(self, knobs=()):
        """`scale small (make evaluate-small; query_interval_s 30, ...)` or `scale not recorded`."""
        s = self.info.get("scale")
        if not s:
            return "scale not recorded"
        cmd = {"small": "make evaluate-small", "full": "make evaluate"}.get(s, f"make evaluate-small EVAL_SCALE={s}")
        values = self.info.get("knobs", {})
        shown = [KNOB_TEXT.get(k, k + " {}").format(" ".join(map(str, values[k])) if isinstance(values[k], list)
                                                    else values[k]) for k in knobs if k in values]
        return f"scale {s} ({cmd}{'; ' + ', '.join(shown) if shown else ''})"

    def origin(self, keys):
        """`input: rocksdb-p1 live, rocksdb-p2 SYNTHETIC` for the recordings `keys` (workload-phase)."""
        parts = [f"{k} {self.origins.get(k, 'origin unknown')}" for k in sorted(keys)]
        if not parts:
            return ""
        kinds = {self.origins.get(k, "origin unknown") for k in keys}
        if len(kinds) == 1:
            return f"input recordings {', '.join(sorted(keys))}: {kinds.pop()}"
        return "input recordings: " + ", ".join(parts)

    def caption(self, what, keys=(), extra="", knobs=()):
        """The caption: what the figure shows, then machine, scale (with the `knobs` of
        evaluate-run.json that shaped it), recording origin."""
        text = [what.rstrip(".") + "."]
        text.append(f"Measured on: {self.machine()}; {self.scale(knobs)}.")
        o = self.origin(keys)
        if o:
            text.append(o[0].upper() + o[1:] + ".")
        if extra:
            text.append(extra.rstrip(".") + ".")
        return " ".join(text)
