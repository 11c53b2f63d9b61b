#!/usr/bin/env bash
# Hostile and old HTTP clients against `dsserve serve` (the tiny V3.2 demo model on 127.0.0.1),
# driven by hostile_http.py: descriptor exhaustion by idle connections (under `ulimit -n 128`),
# non-stream clients that disconnect, malformed requests (400), HTTP/1.0 (no chunked encoding).
# Every check runs and reports; the test fails at the end if any did.
# Usage: hostile_http_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$(realpath "$1")
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir hostile
PY="$ROOT/tests/server/hostile_http.py"
FAILED=()
check() {  # check NAME ARGS...: runs hostile_http.py ARGS..., records a failure under NAME
  local name=$1; shift
  python3 "$PY" "$@" || FAILED+=("$name")
}
health_ok() {  # health_ok PORT: /health answers 200 within 5 s
  [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health" || true)" = 200 ]
}

"$DSSERVE" init-model --preset tiny-v32 --out "$WORK/tiny" --seed 7 >/dev/null 2>&1

echo "== 200 idle connections against 128 descriptors"
# A hard limit too, so the server cannot lift it; exec keeps the pid.
cat >"$WORK/limited" <<EOF
#!/usr/bin/env bash
ulimit -n 128 && exec "$DSSERVE" "\$@"
EOF
chmod +x "$WORK/limited"
REAL_DSSERVE=$DSSERVE
DSSERVE="$WORK/limited"
start_server F --model "$WORK/tiny"
DSSERVE=$REAL_DSSERVE
PIDS+=("$F_PID")
check fdlimit fdlimit "$F_PORT" "$F_PID" "$WORK/F.log"
kill -0 "$F_PID" 2>/dev/null || { tail -20 "$WORK/F.log" >&2; fail "fd-limited server died"; }
health_ok "$F_PORT" || FAILED+=("fdlimit-health-after")
stop_server F
echo "ok   fd-limited server exited 0 on SIGTERM"

echo "== abandoned requests, malformed requests, HTTP/1.0"
start_server M --model "$WORK/tiny"
PIDS+=("$M_PID")
check disconnect disconnect "$M_PORT"
check malformed malformed "$M_PORT"
check http10 http10 "$M_PORT"
health_ok "$M_PORT" || FAILED+=("health-after")
stop_server M
echo "ok   server exited 0 on SIGTERM"

[ ${#FAILED[@]} = 0 ] || fail "hostile_http_test: failed: ${FAILED[*]}"
echo "hostile_http_test: all passed"
