#!/usr/bin/env bash
# End-to-end test of forced tool calls (issue #38): tool_choice "required" and named tools on a
# random-weight tiny V3.2 model, one `dsserve serve` per tool-call format (--tool-call-parser v3,
# v31, v32), driven by the official OpenAI Node SDK (tool_choice_sdk.mjs); arguments are judged
# by ajv against each tool's parameters schema.
# Usage: tool_choice_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$1
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir tool-choice
for pkg in openai ajv ajv-formats; do
  [ -d "$ROOT/node_modules/$pkg" ] || fail "npm package $pkg missing: run 'npm ci' in $ROOT"
done

"$DSSERVE" init-model --preset tiny-v32 --out "$WORK/tiny-v32" --seed 7 >/dev/null 2>&1
start_server V3 --model "$WORK/tiny-v32" --served-model-name tiny-v32 --tool-call-parser v3
PIDS+=("$V3_PID")
start_server V31 --model "$WORK/tiny-v32" --served-model-name tiny-v32 --tool-call-parser v31
PIDS+=("$V31_PID")
start_server V32 --model "$WORK/tiny-v32" --served-model-name tiny-v32 --tool-call-parser v32
PIDS+=("$V32_PID")
node "$ROOT/tests/server/tool_choice_sdk.mjs" tiny-v32 "v3=http://127.0.0.1:$V3_PORT/v1" \
  "v31=http://127.0.0.1:$V31_PORT/v1" "v32=http://127.0.0.1:$V32_PORT/v1"
stop_server V3
stop_server V31
stop_server V32
echo "tool_choice_test: all passed"
