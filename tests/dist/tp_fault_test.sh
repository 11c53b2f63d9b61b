#!/usr/bin/env bash
# Faults of a parallel server (issue #36): `mpirun -np 2 dsserve serve --tp-size 2` with a
# streamed request in flight, then one rank is
#   killed (kill -9 rank 1): every rank must be gone within 10 s, the stream must end with an
#     error event and [DONE], mpirun's exit status must be non-zero and the log must name rank 1;
#   hung (SIGSTOP rank 1): the step watchdog must turn /health unhealthy, end the stream with an
#     error event, and every rank must be gone within 10 s with a non-zero status.
# MODE dp runs `--dp-size 2` instead (two replicas behind the data-parallel front, the stream on
# replica 0): a killed rank 1 makes mpirun signal rank 0, whose front answers every open request
# at once; a hung one stops sending its heartbeat, and the front gives up after 5 s.
# MODE dpa runs DP attention 2 (--tp-size 2 --dp-size 2 --ep-size 2 --enable-dp-attention): the
# same front, and the ranks step in lockstep, so rank 0's step watchdog sees a hung rank 1.
# MODE tpdp runs 2 replicas of TP 2 (4 ranks) and kills or stops rank 2, replica 1's leader,
# whose engine thread polls the mailbox between its steps: the front's heartbeat check as in dp.
# Usage: tp_fault_test.sh DSSERVE REPO_ROOT [tp|dp|dpa|tpdp]
set -euo pipefail
bin="$(realpath "$1")" root="$(realpath "$2")" mode="${3:-tp}"
np=2 victim=1
if [ "$mode" = tpdp ]; then
  np=4 victim=2
  flags=(--tp-size 2 --dp-size 2)
  killed_error='the parallel job is ending'
  hung_error='rank 2 \(leader of replica 1\) sent nothing for'
elif [ "$mode" = dp ] || [ "$mode" = dpa ]; then
  flags=(--dp-size 2)
  [ "$mode" = dp ] || flags=(--tp-size 2 --dp-size 2 --ep-size 2 --enable-dp-attention)
  killed_error='the parallel job is ending'
  hung_error='rank 1 \(leader of replica 1\) sent nothing for'
  [ "$mode" = dp ] || hung_error='rank 0: step [0-9]* stalled'
else
  flags=(--tp-size 2)
  killed_error='rank 0: step [0-9]* stalled'
  hung_error=$killed_error
fi
# shellcheck source=../server/server_lib.sh
source "$root/tests/server/server_lib.sh"
scratch_dir tp-fault
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DSS_FAULT_TAG="$WORK"
"$bin" init-model --preset tiny-v32 --out "$WORK/tiny-v32" --seed 7 >/dev/null 2>&1
trap 'for e in /proc/[0-9]*/environ; do grep -qzx "DSS_FAULT_TAG=$WORK" "$e" 2>/dev/null &&
  kill -9 "$(basename "$(dirname "$e")")" 2>/dev/null; done; rm -rf "$WORK"' EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
rank_pid() {  # rank_pid LAUNCHER RANK
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$p"
  done
  return 0
}

# Per-rank series on rank 0's /metrics (exchanged every 16 steps): both ranks, forwards counted
# alike, collective bytes and seconds above 0, and the exposition valid for promtool.
check_rank_metrics() {
  local port=$1 out=$2 m="$WORK/metrics.txt" n=0
  for _ in $(seq 1 600); do
    n=$(grep -c '^data: {' "$out" 2>/dev/null) || n=0
    [ "$n" -ge 40 ] && break
    sleep 0.05
  done
  curl -s "http://127.0.0.1:$port/metrics" >"$m"
  for r in 0 1; do
    local f b s
    f=$(awk -v k="dsserve:rank_forwards_total{rank=\"$r\"}" '$1 == k { print $2 }' "$m")
    b=$(awk -v k="dsserve:rank_collective_bytes_total{rank=\"$r\"}" '$1 == k { print $2 }' "$m")
    s=$(awk -v k="dsserve:rank_collective_seconds_total{rank=\"$r\"}" '$1 == k { print $2 }' "$m")
    [ -n "$f" ] && awk -v f="$f" -v b="$b" -v s="$s" 'BEGIN { exit !(f >= 16 && b > 0 && s > 0) }' ||
      { grep rank_ "$m" >&2; fail "rank $r: forwards '$f' bytes '$b' seconds '$s'"; }
  done
  # TP: rank 0 gathers the counts at one step. DP attention: each rank reports its own, at
  # different times (the ranks step in lockstep, so only the snapshots differ).
  [ "$mode" = dpa ] ||
    [ "$(awk '$1 ~ /^dsserve:rank_forwards_total/ { print $2 }' "$m" | sort -u | wc -l)" = 1 ] ||
    { grep rank_forwards "$m" >&2; fail "the ranks' forward counts differ"; }
  command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus)"
  promtool_check "$m"
  echo "per-rank metrics: $(grep -c '^dsserve:rank_' "$m") series, forwards $(awk '$1 ~ /^dsserve:rank_forwards_total/ { print $2; exit }' "$m")"
}

# run_case NAME SIGNAL: starts the job, streams, sends SIGNAL to rank 1, checks the outcome.
run_case() {
  local name=$1 sig=$2 log="$WORK/$1.log" out="$WORK/$1.stream"
  mpirun --oversubscribe --bind-to none -np "$np" "$bin" serve --model "$WORK/tiny-v32" --port 0 \
    "${flags[@]}" >"$log" 2>&1 &
  local launcher=$! port
  port=$(wait_for_port "$name" "$log" "$launcher") || exit 1  # it has printed why
  curl -sN "http://127.0.0.1:$port/v1/completions" -o "$out" \
    -d '{"prompt": "hi", "max_tokens": 2000, "ignore_eos": true, "stream": true}' &
  local client=$!
  local n_chunks=0
  for _ in $(seq 1 600); do
    n_chunks=$(grep -c '^data: {' "$out" 2>/dev/null) || n_chunks=0
    [ "$n_chunks" -ge 5 ] && break
    sleep 0.05
  done
  [ "$n_chunks" -ge 5 ] || { cat "$out" >&2; fail "$name: the stream did not start"; }
  if [ "$name" = killed ] && { [ "$mode" = tp ] || [ "$mode" = dpa ]; }; then
    check_rank_metrics "$port" "$out"
  fi
  local r1
  r1=$(rank_pid "$launcher" "$victim")
  [ -n "$r1" ] || fail "$name: rank $victim not found"
  local t0 unhealthy_ms=""
  t0=$(now_ms)
  kill "-$sig" "$r1"
  while kill -0 "$launcher" 2>/dev/null; do
    if [ -z "$unhealthy_ms" ] &&
      curl -s -m 0.5 "http://127.0.0.1:$port/health" 2>/dev/null | grep -q unhealthy; then
      unhealthy_ms=$(($(now_ms) - t0))
    fi
    [ $(($(now_ms) - t0)) -lt 15000 ] || fail "$name: ranks still running after 15 s"
    sleep 0.05
  done
  local rc=0
  wait "$launcher" || rc=$?
  local gone_ms=$(($(now_ms) - t0))
  # Every rank gone (mpirun exits after its children).
  for r in $(seq 0 $((np - 1))); do
    [ -z "$(rank_pid "$launcher" "$r")" ] || fail "$name: rank $r outlived mpirun"
  done
  wait "$client" || true
  echo "$name: all ranks gone $gone_ms ms after SIG$sig to rank $victim, mpirun exit status $rc," \
    "/health unhealthy at ${unhealthy_ms:-never seen} ms"
  [ "$gone_ms" -le 10000 ] || fail "$name: took $gone_ms ms (> 10 s)"
  [ "$rc" -ne 0 ] || fail "$name: exit status 0"
  local error=$killed_error
  [ "$sig" = KILL ] || error=$hung_error
  grep -qE "^data: \\{\"error\":\\{\"message\":\"($error)" "$out" ||
    { tail -c 500 "$out" >&2; fail "$name: the stream has no error event"; }
  [ "$(grep '^data: ' "$out" | tail -1)" = "data: [DONE]" ] || fail "$name: no [DONE] after the error"
  [ "$mode" != tp ] || grep -q "stalled for" "$log" || { cat "$log" >&2; fail "$name: the log has no stall line"; }
  if [ "$sig" = KILL ]; then
    grep -q "process rank $victim .*exited on signal 9" "$log" ||
      { cat "$log" >&2; fail "$name: log does not name rank $victim"; }
  else
    [ -n "$unhealthy_ms" ] || fail "$name: /health never turned unhealthy"
  fi
}

run_case killed KILL
run_case hung STOP
echo "tp_fault_test ($mode): all passed"
