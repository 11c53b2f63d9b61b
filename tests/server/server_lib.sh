# Helpers for the server's script tests (sourced). Needs: DSSERVE (binary), WORK (scratch dir).
# start_server NAME ARGS...: starts `dsserve serve --port 0 ARGS` in the background, sets
# ${NAME}_PID and ${NAME}_PORT from the start-up line. stop_server NAME: SIGTERM, expects exit 0.

fail() { echo "FAIL: $*" >&2; exit 1; }

# scratch_dir NAME: WORK = a fresh /tmp/dss-NAME.* directory and PIDS = (); on exit every pid in
# PIDS is killed and WORK removed. Call once, right after sourcing this file.
scratch_dir() {
  WORK=$(mktemp -d "/tmp/dss-$1.XXXXXX")
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
}

# wait_for_port NAME LOG PID: the port of the `serve` start-up line in LOG (printed), waiting
# while PID lives; fails naming NAME if PID exits first or no line comes.
wait_for_port() {
  local name=$1 log=$2 pid=$3 port=""
  # Up to 180 s: under sanitizers on 2 busy cores creating the demo model alone took 36 s.
  for _ in $(seq 1 1800); do
    port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$log" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "$name: server exited at start-up"; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$log" >&2; fail "$name: no start-up line"; }
  echo "$port"
}

start_server() {
  local name=$1; shift
  local log="$WORK/$name.log"
  "$DSSERVE" serve --port 0 "$@" >"$log" 2>&1 &
  local pid=$!
  local port
  port=$(wait_for_port "$name" "$log" "$pid") || exit 1  # it has printed why
  printf -v "${name}_PID" '%s' "$pid"
  printf -v "${name}_PORT" '%s' "$port"
}

stop_server() {
  local name=$1
  local pid_var="${name}_PID"
  local pid=${!pid_var}
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || { tail -20 "$WORK/$name.log" >&2; fail "$name: exit status $rc after SIGTERM"; }
}

# metric NAME PORT: the value of an unlabelled sample.
metric() {
  curl -s "http://127.0.0.1:$2/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

# promtool_check FILE: `promtool check metrics`, tolerating only its lint against ':' in names
# (recording-rule style); dsserve keeps vLLM's `prefix:name` convention. Anything else fails.
promtool_check() {
  local out rc=0
  out=$(promtool check metrics <"$1" 2>&1) || rc=$?
  local other
  other=$(printf '%s\n' "$out" | grep -v "metric names should not contain ':'" | grep -v '^$' || true)
  if [ -n "$other" ] || { [ "$rc" != 0 ] && [ "$rc" != 3 ]; }; then
    printf '%s\n' "$out" >&2
    fail "promtool check metrics (rc=$rc)"
  fi
}
