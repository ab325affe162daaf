"""Process control for scripts/evaluate.py: run a command into a log, keep an
endpoint in the background, wait until it listens, stop it and everything it
started.

Every child runs in its own session (process group), so stopping a `make`
recipe also stops the pipeline it runs (`loom-app | tee`), and nothing is left
behind when a step fails or the run is interrupted.
"""

import os
import signal
import subprocess
import time


# Background commands still running, stopped by stop_all() on an interrupt.
ACTIVE = set()


def stop_all():
    """Stops every background command still running (Ctrl-C of the driver)."""
    for bg in list(ACTIVE):
        bg.stop()


class StepError(Exception):
    """A step cannot go on; the message says why (shown on the step's line)."""


def _open_log(log):
    os.makedirs(os.path.dirname(log), exist_ok=True)
    return open(log, "a", buffering=1)


def _kill_group(proc, grace_s=10.0):
    """SIGINT (endpoints print their summary), then SIGTERM, then SIGKILL the process group."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    # The leader may be gone while others of its group still run (a tee).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Background:
    """A command running in the background with its output appended to a log."""

    def __init__(self, cmd, log, env=None, cwd=None):
        self.cmd = cmd
        self.log = log
        f = _open_log(log)
        f.write(f"\n$ {' '.join(cmd)}\n")
        self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=cwd, start_new_session=True)
        f.close()
        ACTIVE.add(self)

    def running(self):
        return self.proc.poll() is None

    def wait(self, timeout_s):
        """Exit status once it ends by itself within `timeout_s`, else it is stopped and None returned."""
        try:
            rc = self.proc.wait(timeout=max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            self.stop()
            return None
        # What the command started on purpose lives on (`make influxd` leaves influxd running).
        ACTIVE.discard(self)
        return rc

    def stop(self):
        """Stops it now (SIGINT first, so endpoints still print their exit lines)."""
        _kill_group(self.proc)
        ACTIVE.discard(self)
        return self.proc.returncode


def run(cmd, log, timeout_s, env=None, cwd=None):
    """Runs `cmd` with its output appended to `log`; its exit status, or raises StepError on timeout."""
    bg = Background(cmd, log, env=env, cwd=cwd)
    rc = bg.wait(timeout_s)
    if rc is None:
        raise StepError(f"`{' '.join(cmd)}` still running after {timeout_s:.0f} s; stopped (see {log})")
    return rc


def listening(port):
    """True when a TCP socket listens on `port` (any local address), from /proc/net/tcp{,6}."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    parts = line.split()
                    if len(parts) > 3 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


def wait_listening(port, bg, timeout_s=60.0):
    """Waits until `bg` listens on `port`; StepError if it exits first or takes too long.

    Looks at the socket table instead of connecting: a probe connection would
    count as the endpoint's one connection (--stop-after-connections 1).
    """
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if listening(port):
            return
        if not bg.running():
            raise StepError(f"`{' '.join(bg.cmd)}` exited (status {bg.proc.returncode}) before listening on "
                            f"port {port}; see {bg.log}")
        time.sleep(0.1)
    bg.stop()
    raise StepError(f"nothing listens on port {port} {timeout_s:.0f} s after `{' '.join(bg.cmd)}`; see {bg.log}")


def wait_port_free(port, timeout_s=30.0):
    """Waits until no socket listens on `port` (a previous endpoint is gone)."""
    end = time.monotonic() + timeout_s
    while listening(port):
        if time.monotonic() > end:
            raise StepError(f"port {port} is still taken by another process; free it and run again")
        time.sleep(0.2)
