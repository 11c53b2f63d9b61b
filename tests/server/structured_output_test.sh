#!/usr/bin/env bash
# End-to-end test of structured output (issue #38): `dsserve serve` on a random-weight tiny V3.2
# model, driven by the official OpenAI Node SDK (structured_output_sdk.mjs): JSON Schema
# response_format over schemas of tests/data/grammar/schemas, json_object, vLLM's
# structured_outputs (json, regex, choice, grammar), SGLang's regex / ebnf, streamed and not, and
# the SDK's own helper (chat.completions.parse with a zod schema via zodResponseFormat).
# Judges are independent of the grammar library: ajv + ajv-formats for JSON, JavaScript's RegExp
# for regexes and for the GBNF grammars' regular equivalents.
# Usage: structured_output_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$1
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir structured
for pkg in openai ajv ajv-formats zod; do
  [ -d "$ROOT/node_modules/$pkg" ] || fail "npm package $pkg missing: run 'npm ci' in $ROOT"
done

"$DSSERVE" init-model --preset tiny-v32 --out "$WORK/tiny-v32" --seed 7 >/dev/null 2>&1
start_server A --model "$WORK/tiny-v32" --served-model-name tiny-v32
PIDS+=("$A_PID")
node "$ROOT/tests/server/structured_output_sdk.mjs" "http://127.0.0.1:$A_PORT/v1" tiny-v32 \
  "$ROOT/tests/data/grammar/schemas"
stop_server A
echo "structured_output_test: all passed"
