#!/usr/bin/env bash
# `dsserve bench` against the real `dsserve serve` (tiny random model, 127.0.0.1) for every
# scenario at small sizes: JSON fields, exact lengths, token totals equal to the server's
# /metrics counter deltas (measured run + probe/warmup), failed requests counted; then a tiny
# `dsserve tune` (grid 1,2): table, recommendation, SVG that parses as XML.
# Usage: bench_e2e_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$1
ROOT=$2
PY=/usr/bin/python3
# shellcheck source=../server/server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir bench

"$DSSERVE" init-model --preset tiny --out "$WORK/tiny" >/dev/null 2>&1
# Context 80 tokens: the range-ratio case below overflows it on purpose (400 -> failed requests).
start_server S --model "$WORK/tiny" --page-size 16 --context-length 80 --max-running-requests 8
PIDS+=("$S_PID")
URL="http://127.0.0.1:$S_PORT"

# run_case NAME CHECKS_PY BENCH_ARGS...: bench with --json-out, then the python checks with
# d = the JSON, dp/dg = server prompt/generation counter deltas, dh = prefix-cache hit delta.
run_case() {
  local name=$1 checks=$2; shift 2
  local p0 g0 h0 p1 g1 h1 rc=0
  p0=$(metric dsserve:prompt_tokens_total "$S_PORT"); g0=$(metric dsserve:generation_tokens_total "$S_PORT")
  h0=$(metric dsserve:prefix_cache_hits_total "$S_PORT")
  "$DSSERVE" bench --base-url "$URL/v1" --json-out "$WORK/$name.json" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
  p1=$(metric dsserve:prompt_tokens_total "$S_PORT"); g1=$(metric dsserve:generation_tokens_total "$S_PORT")
  h1=$(metric dsserve:prefix_cache_hits_total "$S_PORT")
  $PY - "$WORK/$name.json" "$((p1 - p0))" "$((g1 - g0))" "$((h1 - h0))" "$rc" <<PYEOF || { cat "$WORK/$name.out" >&2; fail "$name"; }
import json, sys
d = json.load(open(sys.argv[1]))
dp, dg, dh, rc = (int(x) for x in sys.argv[2:6])
for k in ["duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
          "request_throughput", "output_throughput", "total_token_throughput", "request_goodput",
          "max_output_tokens_per_s", "max_concurrent_requests", "input_lens", "output_lens",
          "ttfts", "itls", "latencies", "errors", "warmup"]:
    assert k in d, k
for m in ["ttft", "tpot", "itl", "e2el"]:
    for s in ["mean", "median", "std", "p90", "p99"]:
        assert isinstance(d[f"{s}_{m}_ms"], float), (s, m)
n = d["num_prompts"]
assert d["completed"] + d["failed"] == n == len(d["input_lens"]) == len(d["errors"])
ok = [i for i in range(n) if d["errors"][i] == ""]
assert len(ok) == d["completed"]
assert d["total_output_tokens"] == sum(d["output_lens"])
assert d["total_input_tokens"] == sum(d["input_lens"][i] for i in ok)
# the server's own counters: measured requests + probe/warmup, nothing else
assert dp == d["total_input_tokens"] + d["warmup"]["input_tokens"], (dp, d["total_input_tokens"], d["warmup"])
assert dg == d["total_output_tokens"] + d["warmup"]["output_tokens"], (dg, d["total_output_tokens"], d["warmup"])
for i in ok:
    assert d["ttfts"][i] > 0 and d["latencies"][i] >= d["ttfts"][i]
    assert abs(d["ttfts"][i] + sum(d["itls"][i]) - d["latencies"][i]) < d["latencies"][i]
assert (rc == 0) == (d["failed"] == 0) and rc in (0, 3), rc
$checks
PYEOF
  echo "ok   $name"
}

EXACT='
for i in ok: assert d["input_lens"][i] == d["input_len"] and d["output_lens"][i] == d["output_len"], i
assert d["completed"] == n and d["failed"] == 0'

run_case chat-256 "$EXACT
assert d['endpoint'] == 'chat' and d['chat_template_overhead'] > 0" \
  --scenario chat-256 --input-len 24 --output-len 6 --num-prompts 4 --ignore-eos
run_case doc-2k "
assert d['endpoint'] == 'completions' and d['failed'] == 0
assert all(20 <= x <= 60 for x in d['input_lens']), d['input_lens']
assert all(2 <= x <= 6 for x in d['output_lens']), d['output_lens']
assert len(set(d['input_lens'])) > 1" \
  --scenario doc-2k --input-len 40 --output-len 4 --range-ratio 0.5 --num-prompts 6 --ignore-eos --seed 3
run_case doc-32k "$EXACT
assert dh >= 2 * 32, dh  # 40 shared tokens = 2 pages of 16, reused by later prompts" \
  --scenario doc-32k --input-len 60 --output-len 3 --shared-prefix-len 40 --num-prompts 3 \
  --ignore-eos --max-concurrency 1
run_case stream-1k-2k "$EXACT
assert d['max_concurrent_requests'] <= 2 and d['max_concurrency'] == 2
assert d['warmup']['requests'] == 3  # probe + 2
assert d['request_goodput'] is not None and d['request_goodput'] <= d['request_throughput']" \
  --scenario stream-1k-2k --input-len 16 --output-len 12 --num-prompts 4 --request-rate 50 \
  --max-concurrency 2 --warmup 2 --ignore-eos --slo ttft:60000,tpot:60000
# prompt + max_tokens over the context (80) for the longer prompts: HTTP 400, counted as failed
run_case custom-failures "
assert d['failed'] > 0 and d['completed'] > 0, (d['failed'], d['completed'])
for i in range(n):
    if d['errors'][i]: assert '400' in d['errors'][i] and d['output_lens'][i] == 0
    else: assert d['input_lens'][i] + d['output_lens'][i] <= 80" \
  --scenario custom --endpoint completions --input-len 60 --output-len 10 --range-ratio 0.5 \
  --num-prompts 8 --ignore-eos --seed 1

rc=0
"$DSSERVE" bench --base-url "$URL" --scenario custom >"$WORK/custom.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "needs --input-len" "$WORK/custom.out" || fail "custom without lengths: rc=$rc"
echo "ok   custom without lengths is an input error"
stop_server S

"$DSSERVE" tune --model "$WORK/tiny" --scenario chat-256 --input-len 16 --output-len 4 \
  --num-prompts 4 --ignore-eos --grid max-running-requests=1,2 --slo ttft:60000,tpot:60000 \
  --out-dir "$WORK/tune" --no-progress >"$WORK/tune.out" 2>"$WORK/tune.err" || { cat "$WORK/tune.err" >&2; fail "tune"; }
grep -q '| max-running-requests=1 | 4 | 0 |' "$WORK/tune.out" || { cat "$WORK/tune.out" >&2; fail "tune table row 1"; }
grep -q '| max-running-requests=2 | 4 | 0 |' "$WORK/tune.out" || fail "tune table row 2"
grep -q 'recommended (highest throughput meeting the SLO' "$WORK/tune.out" || fail "tune recommendation"
grep -q 'dsserve serve --model .* --max-running-requests [12]$' "$WORK/tune.out" || fail "tune flags"
$PY - "$WORK/tune" <<'PYEOF' || fail "tune outputs"
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
root = ET.parse(d + "/tune.svg").getroot()
assert root.tag.endswith("svg"), root.tag
t = json.load(open(d + "/tune.json"))
assert len(t["points"]) == 2 and t["recommended_meets_slo"]
for p in t["points"]:
    assert p["completed"] == 4 and p["output_throughput"] > 0
    assert 0 < p["engine_busy_fraction"] <= 1.05, p
assert "![plot](tune.svg)" in open(d + "/tune.md").read()
PYEOF
echo "ok   tune: table, recommendation, SVG, JSON"
echo "bench_e2e_test: all passed"
