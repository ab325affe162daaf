#!/usr/bin/env bash
# make deploy-check: verifies the systemd units under deploy/ without
# running systemd (these machines do not boot it):
#   1. `systemd-analyze verify` in a scratch root holding the units, the
#      distribution's own units they refer to, and the binaries they start
#      (the built ones from $BIN; a stand-in script where one is not built,
#      said so). Any message it prints fails the check: unknown keys and bad
#      values are only warnings to systemd.
#   2. every flag the units and the example files pass exists in the
#      binaries' --help (skipped, said so, for a binary not built);
#   3. `systemd-analyze security --offline` prints each unit's exposure.
# Needs the Debian package `systemd` (for systemd-analyze; nothing is started).
set -euo pipefail

BIN=${BIN:-target/release}
DEPLOY=${DEPLOY:-deploy}
UNITS=(loom-app.service loom-agent.service)

command -v systemd-analyze >/dev/null || {
    echo "deploy-check: systemd-analyze is missing; install the Debian package systemd (apt-get install systemd, or make deps)" >&2
    exit 1
}
system_units=""
for d in /usr/lib/systemd/system /lib/systemd/system; do
    [ -f "$d/sysinit.target" ] && { system_units=$d; break; }
done
[ -n "$system_units" ] || { echo "deploy-check: no systemd unit directory with sysinit.target (is the systemd package installed?)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/lib/systemd" "$root/etc/systemd/system" "$root/usr/local/bin" "$root/etc/loom"
cp -a "$system_units" "$root/usr/lib/systemd/system"
for u in "${UNITS[@]}"; do cp "$DEPLOY/$u" "$root/etc/systemd/system/"; done
cp "$DEPLOY/agent.toml" "$root/etc/loom/agent.toml"
for b in loom-app loom-agent; do
    if [ -x "$BIN/$b" ]; then
        cp "$BIN/$b" "$root/usr/local/bin/$b"
    else
        echo "deploy-check: $BIN/$b is not built; verifying its unit against a stand-in executable"
        printf '#!/bin/sh\nexit 0\n' > "$root/usr/local/bin/$b"
        chmod +x "$root/usr/local/bin/$b"
    fi
done

fail=0
out=$(systemd-analyze verify --man=no --root="$root" "${UNITS[@]}" 2>&1) || fail=1
if [ -n "$out" ] || [ "$fail" -ne 0 ]; then
    echo "$out" >&2
    echo "deploy-check: systemd-analyze verify found problems in ${UNITS[*]}" >&2
    exit 1
fi
echo "deploy-check: systemd-analyze verify: ${UNITS[*]} clean ($(systemd-analyze --version | head -n 1))"

# Flags the units and examples pass, each checked against the binary's --help.
# check_flags BIN STRICT FLAG...: STRICT=0 only notes missing flags (options
# the examples show commented out, which the binary may not have yet).
check_flags() {
    local bin=$1 strict=$2; shift 2
    if [ ! -x "$BIN/$bin" ]; then
        echo "deploy-check: $BIN/$bin is not built; its flags ($*) are not checked"
        return 0
    fi
    local help missing=()
    help=$("$BIN/$bin" --help)
    for f in "$@"; do
        grep -qE -- "(^|[ ,])$f([ =,]|$)" <<<"$help" || missing+=("$f")
    done
    if [ "${#missing[@]}" -gt 0 ] && [ "$strict" = 1 ]; then
        echo "deploy-check: $bin --help does not know ${missing[*]} (used in $DEPLOY/)" >&2
        return 1
    elif [ "${#missing[@]}" -gt 0 ]; then
        echo "deploy-check: note: $bin --help does not know ${missing[*]} (commented out in $DEPLOY/)"
        return 0
    fi
    echo "deploy-check: $bin knows $*"
}
flags_in() { grep -ohE -- '--[a-z][a-z0-9-]+' "$@" | sort -u; }
app_flags=$(grep -hE '^(ExecStart=|#?LOOM_APP_ARGS=)' "$DEPLOY/loom-app.service" "$DEPLOY/loom-app.default" | flags_in /dev/stdin)
agent_flags=$( { grep -hE '^ExecStart=' "$DEPLOY/loom-agent.service"; \
    sed -nE 's/^([a-z][a-z-]+) *=.*/--\1/p' "$DEPLOY/agent.toml"; } | flags_in /dev/stdin)
agent_optional=$(sed -nE 's/^# *([a-z][a-z-]+) *=.*/--\1/p' "$DEPLOY/agent.toml" | flags_in /dev/stdin)
check_flags loom-app 1 $app_flags
check_flags loom-agent 1 $agent_flags
check_flags loom-agent 0 $agent_optional

for u in "${UNITS[@]}"; do
    systemd-analyze security --offline=true --root="$root" "$u" 2>/dev/null | grep -F "Overall exposure" || true
done
