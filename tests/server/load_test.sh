#!/usr/bin/env bash
# 200 concurrent streaming requests on loopback through the OpenAI SDK, 50 of them disconnected
# mid-stream (load.mjs); `promtool check metrics` on a scrape taken under that load.
# Usage: load_test.sh DSSERVE REPO_ROOT [N] [D]
set -euo pipefail
DSSERVE=$1
ROOT=$2
N=${3:-200}
D=${4:-50}
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir load
[ -d "$ROOT/node_modules/openai" ] || fail "npm package openai missing: run 'npm ci' in $ROOT"
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus)"

"$DSSERVE" init-model --preset tiny --out "$WORK/tiny" >/dev/null 2>&1
start_server L --model "$WORK/tiny" --max-running-requests 64
PIDS+=("$L_PID")
node "$ROOT/tests/server/load.mjs" "http://127.0.0.1:$L_PORT/v1" "$N" "$D" "$WORK/scrape.txt"
promtool_check "$WORK/scrape.txt"
echo "ok   promtool check metrics on the scrape under load"
stop_server L
echo "load_test: all passed"
