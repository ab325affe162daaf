# One loom-app run by a benchmark script (sourced, after BIN is set).
#
#   start_loom_app WHO LOG ARGS...   $BIN/loom-app ARGS in the background,
#                                    stdout and stderr to LOG; returns once
#                                    every listener is bound (the
#                                    --ready-file it writes, LOG.ready), or
#                                    exits naming WHO and the log's tail
#   stop_app                         SIGINT and wait: the store closes
#                                    cleanly (nothing when none runs)
#
# app_pid holds the running loom-app's pid ("" when none).

app_pid=""

start_loom_app() {
  local who=$1 log=$2
  shift 2
  rm -f "$log.ready"
  "$BIN/loom-app" --ready-file "$log.ready" "$@" >"$log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 200); do
    [ -s "$log.ready" ] && return 0
    kill -0 "$app_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$who: loom-app did not start:" >&2
  tail "$log" >&2
  exit 1
}

stop_app() {
  if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then
    kill -INT "$app_pid"
    wait "$app_pid" || true
  fi
  app_pid=""
}
