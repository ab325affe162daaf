#!/usr/bin/env bash
# Installs what building and testing Loom needs on a fresh Debian 12 machine
# (run as root, or with sudo available). Safe to run again: it installs only
# what is missing. Also mounts tracefs for the eBPF probes when it is absent.
set -euo pipefail

PACKAGES=(
  build-essential pkg-config
  clang llvm libclang-dev          # eBPF programs, bindgen for librocksdb-sys
  libbpf-dev bpftool libelf-dev zlib1g-dev
  librocksdb-dev libsnappy-dev liblz4-dev libzstd-dev libbz2-dev
  liblmdb-dev
  redis-server                     # the Valkey workload's server (valkey-server when Debian has it)
  redis-tools                      # redis-benchmark and redis-cli: make agent-redis-bench
  time                             # GNU time: the agent's CPU and peak RSS in make agent-all-bench
  python3 python3-venv             # pinned PyPI venvs of the client tests (influxdb, the OpenTelemetry SDK)
  bpftrace                         # the independent syscall counts loom-agent's tests compare with
  influxdb influxdb-client curl    # InfluxDB baseline (influxd 1.6.7) and the `influx` CLI the InfluxQL client test drives
  systemd                          # systemd-analyze: make deploy-check verifies deploy/*.service (nothing is started)
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: not root and no sudo; install these Debian packages yourself: ${PACKAGES[*]}" >&2
    exit 1
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "install-deps: Debian packages present"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "install-deps: cargo is in $HOME/.cargo/bin; add it to PATH" >&2
  else
    echo "install-deps: cargo not found; install Rust with rustup (https://rustup.rs)" >&2
  fi
  exit 1
fi

# `make lint` (run by CI before the tests) needs rustfmt and clippy.
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      rustup component add "$component" >/dev/null && echo "install-deps: added the $component component"
    else
      echo "install-deps: cargo ${component/rustfmt/fmt} is missing and rustup is not here to add it" >&2
    fi
  fi
done

# The influxdb package starts a system-wide influxd on :8086 where systemd
# runs; the baseline starts its own (make influxd, loopback, its own data), so
# the packaged service is stopped and kept from starting at boot.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet influxdb 2>/dev/null; then
  $SUDO systemctl disable --now influxdb >/dev/null 2>&1 \
    && echo "install-deps: stopped and disabled the packaged influxdb service (make influxd starts its own)" \
    || echo "install-deps: could not disable the packaged influxdb service; make influxd needs port 8086 free" >&2
fi

# eBPF probes attach to tracepoints through tracefs.
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ]; then
  if [ "$(id -u)" -eq 0 ]; then
    mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null \
      && echo "install-deps: mounted tracefs at /sys/kernel/tracing" \
      || echo "install-deps: could not mount tracefs; eBPF probes will report how to fix it" >&2
  else
    echo "install-deps: tracefs is not mounted; as root run: mount -t tracefs tracefs /sys/kernel/tracing" >&2
  fi
fi
