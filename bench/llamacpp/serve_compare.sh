#!/usr/bin/env bash
# Serving comparison: llama-server and dsserve back to back on this host, at the same workload,
# measured by the same client (`dsserve bench`), and one table of the results.
#   bench/llamacpp/serve_compare.sh LLAMA_BUILD_DIR GGUF DSSERVE MODEL_DIR OUT_DIR [THREADS]
# LLAMA_BUILD_DIR: a llama.cpp build holding bin/llama-server (get_llamacpp.sh builds one).
# GGUF: MODEL_DIR's checkpoint converted by hf_to_gguf.py (README.md, section 1).
# DSSERVE: the dsserve binary; it serves and it is the benchmark client for every server.
# MODEL_DIR: the checkpoint dsserve serves; its tokenizer builds the prompts for both servers.
# THREADS: compute threads of each server (default: all hardware threads).
# Builds nothing. Runs, one at a time, each on a free port of 127.0.0.1:
#   llama-server   llama-server -m GGUF -np 16 -c 8192 -t THREADS
#   dsserve        dsserve serve --model MODEL_DIR --threads THREADS        (default flags)
#   dsserve-f32    the same with --matmul-dtype f32
#   dsserve-ngram  the same with --speculative-algorithm ngram (a row saying so if it refuses)
# each against `dsserve bench --scenario custom --endpoint completions --input-len 256
# --output-len 128 --num-prompts 48 --max-concurrency 16 --ignore-eos --seed 0`. The requests are
# token-id prompts (/v1/completions), identical for every server (same tokenizer, same seed),
# greedy, streamed, with `ignore_eos: true`, which llama-server reads under the same name.
# Writes to OUT_DIR, per run NAME: NAME.json (the client's result, vLLM's keys), NAME.log (the
# server's output), NAME.metrics (its /metrics after the run), NAME.loadavg (/proc/loadavg
# before and after); then table.md (one row per run; ratio = output tok/s / llama-server's) and
# steps.md (the steps rebuilt from the streamed token times: see the comment above that step).
# Environment: INPUT_LEN, OUTPUT_LEN, NUM_PROMPTS, CONCURRENCY change the workload (llama-server's
# -np follows CONCURRENCY, its -c is CONCURRENCY x the per-slot context: 512, doubled until it
# holds INPUT_LEN + OUTPUT_LEN); RUNS (default "llama-server dsserve
# dsserve-f32 dsserve-ngram") picks and orders the runs; DSSERVE_ARGS adds flags to every dsserve
# serve; READY_TIMEOUT (default 900 s) bounds a server's start-up; TABLE_ONLY=1 runs nothing and
# rebuilds table.md and steps.md from OUT_DIR's earlier results.
set -euo pipefail
if [ $# -lt 5 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
llama_build="$1" gguf="$2" dsserve="$3" model_dir="$4" out="$5"
threads="${6:-$(nproc)}"
input_len="${INPUT_LEN:-256}" output_len="${OUTPUT_LEN:-128}"
num_prompts="${NUM_PROMPTS:-48}" concurrency="${CONCURRENCY:-16}"
runs="${RUNS:-llama-server dsserve dsserve-f32 dsserve-ngram}"
ready_timeout="${READY_TIMEOUT:-900}"
llama_server="$llama_build/bin/llama-server"
for f in "$llama_server" "$dsserve"; do [ -x "$f" ] || { echo "not executable: $f" >&2; exit 2; }; done
for f in "$gguf" "$model_dir/config.json" "$model_dir/tokenizer.json"; do
  [ -f "$f" ] || { echo "missing: $f" >&2; exit 2; }
done
mkdir -p "$out"

server_pid="" client_pid=""
# Stops the client and the server of the current run, if any. The client runs in the background
# so that a TERM to this script reaches the trap at once (bash defers traps while a foreground
# child runs).
stop_server() {
  if [ -n "$client_pid" ]; then kill -TERM "$client_pid" 2>/dev/null || true; client_pid=""; fi
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until GET /health answers 200; fails when the server exits or READY_TIMEOUT passes.
wait_ready() {
  local port="$1" t0=$SECONDS
  while :; do
    if ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
      echo "ready in $((SECONDS - t0)) s"
      return 0
    fi
    if [ $((SECONDS - t0)) -ge "$ready_timeout" ]; then return 1; fi
    sleep 0.5
  done
}

# One run: start the server ("$@" after NAME and PORT), wait for /health, run the client, scrape
# /metrics, stop the server. A server that exits before /health leaves NAME.skipped (its log's
# last lines) instead of NAME.json.
run_one() {
  local name="$1" port="$2"
  shift 2
  rm -f "$out/$name.json" "$out/$name.skipped"
  echo "== $name: $*" | tee "$out/$name.log"
  "$@" >>"$out/$name.log" 2>&1 &
  server_pid=$!
  if ! wait_ready "$port"; then
    echo "$name: no /health (server exited or start-up over ${ready_timeout} s)" | tee "$out/$name.skipped"
    tail -n 5 "$out/$name.log" >>"$out/$name.skipped"
    stop_server
    return 0
  fi
  echo "before $(cat /proc/loadavg)" >"$out/$name.loadavg"
  "$dsserve" bench --base-url "http://127.0.0.1:$port" --tokenizer "$model_dir" \
    --scenario custom --endpoint completions --input-len "$input_len" --output-len "$output_len" \
    --num-prompts "$num_prompts" --max-concurrency "$concurrency" --ignore-eos --seed 0 \
    --no-progress --json-out "$out/$name.json" >"$out/$name.bench.txt" 2>&1 &
  client_pid=$!
  wait "$client_pid" || echo "$name: the client exited with status $?" >>"$out/$name.bench.txt"
  client_pid=""
  cat "$out/$name.bench.txt"
  echo "after $(cat /proc/loadavg)" >>"$out/$name.loadavg"
  curl -s "http://127.0.0.1:$port/metrics" >"$out/$name.metrics" || true
  stop_server
}

slot_ctx=512
while [ "$slot_ctx" -lt $((input_len + output_len)) ]; do slot_ctx=$((slot_ctx * 2)); done
read -r -a dsserve_extra <<<"${DSSERVE_ARGS:-}"
for name in $runs; do
  [ "${TABLE_ONLY:-0}" = 1 ] && break
  port="$(free_port)"
  ds=("$dsserve" serve --model "$model_dir" --threads "$threads" --port "$port" "${dsserve_extra[@]}")
  case "$name" in
    llama-server)
      run_one "$name" "$port" "$llama_server" -m "$gguf" -np "$concurrency" \
        -c "$((concurrency * slot_ctx))" -t "$threads" --host 127.0.0.1 --port "$port" --metrics ;;
    dsserve) run_one "$name" "$port" "${ds[@]}" ;;
    dsserve-f32) run_one "$name" "$port" "${ds[@]}" --matmul-dtype f32 ;;
    dsserve-ngram) run_one "$name" "$port" "${ds[@]}" --speculative-algorithm ngram ;;
    *) echo "unknown run: $name" >&2; exit 2 ;;
  esac
done

# table.md: one row per run. steps.md: per run, the server's steps rebuilt from the client's
# token times. A server streams every token of a step at the same moment, so the tokens of all
# requests, merged in time order, give the steps: a token opens a new step when it comes more than
# GAP after the current step's first token or its request already has a token in it (the HTTP
# threads share the cores with the forward pass, so a step's tokens arrive spread over a few ms).
# A step's time is the interval since the previous step's first token, its tokens the step's size.
# A step that produced some request's first token ran that prompt's prefill (or its last chunk,
# with any steps that emitted nothing merged into it); the others are decode-only steps. The
# counts are of streamed chunks: one token each, except where speculative decoding streams a
# step's accepted tokens together.
python3 - "$out" "$runs" "$num_prompts" "$input_len" "$output_len" "$threads" <<'EOF'
import json, os, sys
out, runs, num_prompts, input_len, output_len, threads = sys.argv[1:]
runs = runs.split()
GAP = 0.012  # s: the tokens of one step reach the client within this of its first one

def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    k = (len(v) - 1) * p / 100.0
    i = int(k)
    return v[i] + (v[min(i + 1, len(v) - 1)] - v[i]) * (k - i)

def load(name):
    path = os.path.join(out, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else None

def loadavg(name):
    path = os.path.join(out, name + ".loadavg")
    if not os.path.exists(path):
        return "-"
    parts = [l.split()[1] for l in open(path) if l.strip()]
    return " -> ".join(parts)

def steps(r):
    ev = []  # (time, request, is_first_token)
    for i, (st, ttft, itls) in enumerate(zip(r["start_times"], r["ttfts"], r["itls"])):
        if ttft is None or ttft <= 0:
            continue
        t = st + ttft
        ev.append((t, i, True))
        for g in itls:
            t += g
            ev.append((t, i, False))
    ev.sort()
    # The first interval runs from the first request's arrival (the first prefill's start).
    t_start = min(r["start_times"])
    clusters = [{"t0": t_start, "reqs": set(), "n": 0, "first": 0, "closed": True}]
    for t, i, first in ev:
        c = clusters[-1]
        if c.get("closed") or t - c["t0"] > GAP or i in c["reqs"]:
            c = {"t0": t, "reqs": set(), "n": 0, "first": 0}
            clusters.append(c)
        c["reqs"].add(i)
        c["n"] += 1
        c["first"] += first
    return [{"dt": b["t0"] - a["t0"], "n": b["n"], "first": b["first"]}
            for a, b in zip(clusters, clusters[1:])]

base = load("llama-server")
base_tps = base["output_throughput"] if base else None
rows = ["| server | output tok/s | ratio to llama-server | TTFT p50 / p99 (ms) | TPOT p50 / p99 (ms) "
        "| requests ok | output tokens | loadavg (1 min) before -> after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
srows = ["| server | decode-only steps | their time (s) | tokens per step | ms per step "
         "| decode tok/s | steps with a prefill | their time (s) | prompts per step "
         "| ms per step | timeline span (s) |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
for name in runs:
    r = load(name)
    if r is None:
        skipped = os.path.join(out, name + ".skipped")
        why = open(skipped).readline().strip() if os.path.exists(skipped) else "no result"
        rows.append(f"| {name} | - | - | - | - | - | - | {why} |")
        continue
    tps = r["output_throughput"]
    ratio = f"{tps / base_tps:.2f}x" if base_tps else "-"
    rows.append(
        f"| {name} | {tps:.1f} | {ratio} | {r['median_ttft_ms']:.0f} / {r['p99_ttft_ms']:.0f} "
        f"| {r['median_tpot_ms']:.1f} / {r['p99_tpot_ms']:.1f} "
        f"| {r['completed']}/{r['completed'] + r['failed']} | {r['total_output_tokens']} "
        f"| {loadavg(name)} |")
    s = steps(r)
    dec = [x for x in s if x["first"] == 0]
    pre = [x for x in s if x["first"] > 0]
    if not s:
        continue
    dec_t = sum(x["dt"] for x in dec)
    dec_n = sum(x["n"] for x in dec)
    pre_t = sum(x["dt"] for x in pre)
    pre_p = sum(x["first"] for x in pre)
    span = sum(x["dt"] for x in s)
    def per(v, n):
        return f"{v / n:.2f}" if n else "-"
    srows.append(
        f"| {name} | {len(dec)} | {dec_t:.2f} | {per(dec_n, len(dec))} "
        f"| {per(1000 * dec_t, len(dec))} | {per(dec_n, dec_t)} "
        f"| {len(pre)} | {pre_t:.2f} | {per(pre_p, len(pre))} | {per(1000 * pre_t, len(pre))} "
        f"| {span:.2f} |")
open(os.path.join(out, "table.md"), "w").write("\n".join(rows) + "\n")
open(os.path.join(out, "steps.md"), "w").write("\n".join(srows) + "\n")
print("\n".join(rows))
print()
print("\n".join(srows))
EOF
