#!/usr/bin/env bash
# Soak test (not part of `make test`; `make soak`): SOAK_CONCURRENCY concurrent clients for
# SOAK_SECONDS against the demo model on loopback, 30% of the streams dropped mid-stream and 10%
# non-stream clients that leave early (soak.mjs). While it runs, the server's VmRSS is sampled
# every SOAK_RSS_INTERVAL seconds into the report. Afterwards: /metrics idle (soak.mjs, then a
# last scrape here) and SIGTERM must stop the server with exit status 0.
# Usage: soak_test.sh DSSERVE REPO_ROOT
# Knobs (environment): SOAK_SECONDS (600), SOAK_CONCURRENCY (1000), SOAK_SEED (1),
#   SOAK_REPORT (REPO_ROOT/build/soak-report.json), SOAK_MODEL (REPO_ROOT/models/demo-tiny-v32),
#   SOAK_SERVER_ARGS (extra `dsserve serve` flags; default none, see below),
#   SOAK_RSS_INTERVAL (10), SOAK_RSS_STRICT (1 = fail on RSS growth >= 5% also for runs < 300 s),
#   SOAK_LOG (copy the server log there); soak.mjs reads more (SOAK_REQUEST_TIMEOUT_MS, ...).
set -euo pipefail
# shellcheck disable=SC2034  # read by server_lib.sh's start_server
DSSERVE=$1
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir soak
[ -d "$ROOT/node_modules/openai" ] || fail "npm package openai missing: run 'npm ci' in $ROOT"

export SOAK_SECONDS=${SOAK_SECONDS:-600}
export SOAK_CONCURRENCY=${SOAK_CONCURRENCY:-1000}
export SOAK_REPORT=${SOAK_REPORT:-$ROOT/build/soak-report.json}
MODEL=${SOAK_MODEL:-$ROOT/models/demo-tiny-v32}
RSS_INTERVAL=${SOAK_RSS_INTERVAL:-10}
[ -f "$MODEL/config.json" ] || fail "no model at $MODEL (make demo-model)"

# One socket per client on each side, plus the server's own files.
want=$((SOAK_CONCURRENCY * 2 + 1024))
[ "$want" -lt 65536 ] && want=65536
ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "soak: ulimit -n $(ulimit -n)"
[ "$(ulimit -n)" -ge $((SOAK_CONCURRENCY + 256)) ] ||
  fail "ulimit -n $(ulimit -n) is too low for $SOAK_CONCURRENCY clients"

# --max-queued-requests 0: no 429s however many requests wait for a batch slot. The KV pool is
# prefaulted at start-up (kv_cache.cc), so with the default flags RSS does not grow as the prefix
# cache fills it: growth between minute 2 and the end is memory the server keeps. SOAK_SERVER_ARGS
# adds flags (e.g. --max-total-tokens 16384: a pool the cache fills in about a minute, so it then
# evicts all the time).
SERVER_ARGS=${SOAK_SERVER_ARGS-}
# shellcheck disable=SC2086
start_server S --model "$MODEL" --max-queued-requests 0 $SERVER_ARGS
PIDS+=("$S_PID")
echo "soak: server pid $S_PID on port $S_PORT (--max-queued-requests 0 ${SERVER_ARGS})"
grep -h 'engine:' "$WORK/S.log" || true

# VmRSS every RSS_INTERVAL s as "epoch_ms kB" lines (soak.mjs keeps those within its load window).
export SOAK_RSS_FILE=$WORK/rss.txt SOAK_SERVER_PID=$S_PID
(
  while kv=$(awk '/^VmRSS:/ { print $2 }' "/proc/$S_PID/status" 2>/dev/null) && [ -n "$kv" ]; do
    echo "$(date +%s%3N) $kv" >>"$SOAK_RSS_FILE"
    sleep "$RSS_INTERVAL"
  done
) &
SAMPLER=$!
PIDS+=("$SAMPLER")

rc=0
node "$ROOT/tests/server/soak.mjs" "http://127.0.0.1:$S_PORT/v1" || rc=$?
kill "$SAMPLER" 2>/dev/null || true

# The last word of /metrics, after soak.mjs's idle wait.
for m in num_requests_running num_requests_waiting num_streams_open kv_cache_pages_used \
  kv_cache_pages_cached kv_cache_num_pages; do
  printf '%s=%s ' "$m" "$(metric "dsserve:$m" "$S_PORT")"
done
echo
running=$(metric dsserve:num_requests_running "$S_PORT")
waiting=$(metric dsserve:num_requests_waiting "$S_PORT")
used=$(metric dsserve:kv_cache_pages_used "$S_PORT")
cached=$(metric dsserve:kv_cache_pages_cached "$S_PORT")
if [ "$running" != 0 ] || [ "$waiting" != 0 ] || [ "$used" != "$cached" ]; then
  echo "FAIL: server not idle at the end (running $running, waiting $waiting, KV pages used" \
    "$used vs prefix-cached $cached)" >&2
  rc=1
fi

[ "$rc" = 0 ] || { echo "--- server log (last 30 lines)" >&2; tail -30 "$WORK/S.log" >&2; }
[ -n "${SOAK_LOG:-}" ] && cp "$WORK/S.log" "$SOAK_LOG"
if ! kill -0 "$S_PID" 2>/dev/null; then
  tail -40 "$WORK/S.log" >&2
  fail "the server died during the soak"
fi
t0=$(date +%s%3N)
stop_server S
echo "ok   server exited 0 on SIGTERM ($(($(date +%s%3N) - t0)) ms)"
[ "$rc" = 0 ] || fail "soak checks failed (report: $SOAK_REPORT)"
echo "soak_test: all passed"
