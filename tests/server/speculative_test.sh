#!/usr/bin/env bash
# End-to-end test of speculative decoding (issue #39) on a random-weight tiny V3.2 model with an
# MTP module: a plain server, one drafting with the MTP module (--speculative-algorithm NEXTN,
# K = 2) and one with prompt lookup (NGRAM, K = 3) give the same completions to the official
# OpenAI SDK (speculative_sdk.mjs); the drafting servers' /metrics carry the spec_decode series
# (promtool-clean) and the MTP server's show its drafts.
# Usage: speculative_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$1
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir speculative
[ -d "$ROOT/node_modules/openai" ] || fail "npm package openai missing: run 'npm ci' in $ROOT"

"$DSSERVE" init-model --preset tiny-v32 --out "$WORK/m" --seed 7 --mtp-layers 1 >/dev/null 2>&1
common=(--model "$WORK/m" --served-model-name tiny --matmul-dtype f32 --threads 1)
start_server PLAIN "${common[@]}"
PIDS+=("$PLAIN_PID")
start_server MTP "${common[@]}" --speculative-algorithm NEXTN --speculative-num-steps 2 \
  --speculative-num-draft-tokens 3 --speculative-eagle-topk 1
PIDS+=("$MTP_PID")
start_server NGRAM "${common[@]}" --speculative-algorithm ngram --speculative-num-steps 3
PIDS+=("$NGRAM_PID")
node "$ROOT/tests/server/speculative_sdk.mjs" tiny "plain=http://127.0.0.1:$PLAIN_PORT/v1" \
  "nextn=http://127.0.0.1:$MTP_PORT/v1" "ngram=http://127.0.0.1:$NGRAM_PORT/v1"

for s in MTP NGRAM; do
  port_var="${s}_PORT"
  curl -s "http://127.0.0.1:${!port_var}/metrics" >"$WORK/$s.prom"
  promtool_check "$WORK/$s.prom"
  grep -q 'dsserve:spec_decode_acceptance_length_bucket{le="+Inf"}' "$WORK/$s.prom" ||
    fail "$s: no acceptance-length histogram"
done
# The MTP module drafts at every decode step (random weights: its drafts are rarely accepted);
# prompt lookup finds nothing to copy in this model's non-repeating output (its acceptance is
# covered by the engine tests, whose model loops).
drafts=$(awk '$1 == "dsserve:spec_decode_num_drafts_total" { print $2 }' "$WORK/MTP.prom")
[ "${drafts:-0}" -gt 0 ] || fail "MTP: no drafts verified (dsserve:spec_decode_num_drafts_total)"
grep -q "drafts from the MTP module" "$WORK/MTP.log" || fail "MTP: the server did not load the drafter"
draft_s=$(awk '$1 == "dsserve:spec_decode_draft_seconds_total" { print $2 }' "$WORK/MTP.prom")
awk -v s="$draft_s" 'BEGIN { exit !(s > 0) }' || fail "MTP: the module never ran ($draft_s s)"
echo "ok   spec_decode metrics (promtool-clean); the MTP module drafted $drafts verify steps"
grep -q "spec_decode" <(curl -s "http://127.0.0.1:$PLAIN_PORT/metrics") &&
  fail "the plain server exports spec_decode series"
if "$DSSERVE" serve --port 0 --model "$WORK/m" --speculative-algorithm NEXTN \
  --speculative-num-steps 2 --speculative-num-draft-tokens 5 >"$WORK/bad.log" 2>&1; then
  fail "a draft-token count other than num-steps + 1 was accepted"
fi
grep -q "speculative-num-draft-tokens must be" "$WORK/bad.log" ||
  fail "the draft-token mismatch is not explained: $(tail -2 "$WORK/bad.log")"
stop_server PLAIN
stop_server MTP
stop_server NGRAM
echo "speculative_test: all passed"
