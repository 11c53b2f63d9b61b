#!/usr/bin/env bash
# Tensor and expert parallelism against one process, through the real binary under mpirun:
# `dsserve logits` on the golden tiny-v3 and tiny-v32 prompts (--matmul-dtype f32, a prefill in
# chunks, then greedy decode steps) at TP 2 and 4, each with the experts' rows split (--ep-size
# 1) and with the experts partitioned (--ep-size = --tp-size), must give the single process's
# argmax at every prompt position and its greedy continuation, and last logits within 1e-4
# (the sums over ranks add in another order). The same under DP attention (--dp-size =
# --ep-size = --tp-size --enable-dp-attention: every rank runs the prompt as its own attention
# group, the MoE layers exchange both ranks' tokens). Then the launch errors: a world that does
# not match the flags, heads that do not divide, DP attention's sizes; and bench-model runs under
# expert parallelism and DP attention.
# Usage: tp_logits_test.sh DSSERVE DATA_DIR
set -uo pipefail
bin="$1" data="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none --mca btl self,vader)
fails=0 runs=0
for model in tiny-v3 tiny-v32; do
  dir="$data/golden/$model"
  # Two golden prompts per model: the shortest and the longest.
  mapfile -t prompts < <(python3 -c "
import json
c = json.load(open('$dir/golden.json'))['cases']
c.sort(key=lambda x: len(x['prompt']))
for x in (c[0], c[-1]): print(','.join(map(str, x['prompt'])))")
  for ids in "${prompts[@]}"; do
    common=(logits --model "$dir" --ids "$ids" --decode 6 --chunk 7 --matmul-dtype f32 --threads 1)
    "$bin" "${common[@]}" >"$tmp/one.json" 2>"$tmp/one.err" || { cat "$tmp/one.err"; exit 1; }
    for cfg in "2 1" "2 2" "4 1" "4 4" "2 2 dpa" "4 4 dpa"; do
      read -r tp ep dpa <<<"$cfg"
      flags=(--tp-size "$tp" --ep-size "$ep")
      [ -z "$dpa" ] || flags+=(--dp-size "$tp" --enable-dp-attention)
      name="$model tp $tp ep $ep${dpa:+ dp-attention $tp}"
        runs=$((runs + 1))
        if ! "${mpirun[@]}" -np "$tp" "$bin" "${common[@]}" "${flags[@]}" \
            >"$tmp/tp.json" 2>"$tmp/tp.err"; then
          echo "FAIL $name: exit $?"; cat "$tmp/tp.err"; fails=$((fails + 1)); continue
        fi
        if ! python3 - "$tmp/one.json" "$tmp/tp.json" "$name (${#ids} chars of ids)" <<'PY'
import json, sys
one_lines = open(sys.argv[1]).read().splitlines()
tp_lines = open(sys.argv[2]).read().splitlines()
name = sys.argv[3]
assert len(tp_lines) == 1, f"{name}: {len(tp_lines)} stdout lines (rank 0 alone prints)"
a, b = json.loads(one_lines[0]), json.loads(tp_lines[0])
assert a["argmax"] == b["argmax"], f"{name}: argmax differs"
assert a["greedy"] == b["greedy"], f"{name}: greedy {a['greedy']} vs {b['greedy']}"
d = max(abs(x - y) for x, y in zip(a["last_logits"], b["last_logits"]))
assert len(a["last_logits"]) == len(b["last_logits"])
assert d <= 1e-4, f"{name}: last logits differ by {d}"
print(f"ok   {name}: argmax {len(a['argmax'])} positions, greedy {len(a['greedy'])}, max |dlogit| {d:.2e}")
PY
        then fails=$((fails + 1)); fi
    done
  done
done
# bench-model under expert parallelism (a rank holds part of the experts: its batch-1 bytes are
# an expectation, not an identity) and DP attention: it runs and counts collective bytes.
for flags in "--tp-size 2 --ep-size 2" "--tp-size 2 --dp-size 2 --ep-size 2 --enable-dp-attention"; do
  runs=$((runs + 1))
  # shellcheck disable=SC2086  # flags is a list
  if ! "${mpirun[@]}" -np 2 "$bin" bench-model --model "$data/golden/tiny-v3" --threads 1 $flags \
      --prefill 8 --decode-batch 1,2 --decode-tokens 4 -r 1 --bandwidth-mib 8 --json >"$tmp/bm.json" 2>"$tmp/bm.err" ||
    ! python3 -c "
import json, sys
d = json.load(open('$tmp/bm.json'))
assert d['decode_bs1_collective_bytes_per_step'] > 0 and d['decode_bs2_collective_bytes_per_step'] > 0, d
print('ok   bench-model $flags: collective bytes per step', d['decode_bs1_collective_bytes_per_step'], d['decode_bs2_collective_bytes_per_step'])"; then
    echo "FAIL bench-model $flags"; tail -5 "$tmp/bm.err"; fails=$((fails + 1))
  fi
done
# Launch errors, before anything is loaded.
expect_error() {  # NAME PATTERN COMMAND...
  local name="$1" pattern="$2"; shift 2
  if "$@" >"$tmp/out" 2>"$tmp/err"; then echo "FAIL $name: exit 0"; fails=$((fails + 1)); return; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then
    echo "FAIL $name: no '$pattern' in:"; cat "$tmp/err"; fails=$((fails + 1)); return
  fi
  echo "ok   $name"
}
dir="$data/golden/tiny-v3"
expect_error "world 2, --tp-size 4" "mpirun started 2 ranks but --tp-size 4" \
  "${mpirun[@]}" -np 2 "$bin" logits --model "$dir" --ids 1,2 --tp-size 4
expect_error "8 heads over 3 ranks" "num_attention_heads = 8 is not divisible by --tp-size 3" \
  "${mpirun[@]}" -np 3 "$bin" logits --model "$dir" --ids 1,2 --tp-size 3
expect_error "--ep-size 2 with --tp-size 4" "--ep-size 2: must be 1 or equal to --tp-size" \
  "$bin" logits --model "$dir" --ids 1,2 --tp-size 4 --ep-size 2
expect_error "--tp-size 2 without mpirun" "start with mpirun -np 2" \
  "$bin" logits --model "$dir" --ids 1,2 --tp-size 2
expect_error "DP attention, --dp-size 1" "--enable-dp-attention: --dp-size (1) must equal --tp-size (2)" \
  "$bin" logits --model "$dir" --ids 1,2 --tp-size 2 --ep-size 2 --enable-dp-attention
expect_error "DP attention, --ep-size 1" "give --ep-size 2" \
  "$bin" logits --model "$dir" --ids 1,2 --tp-size 2 --dp-size 2 --enable-dp-attention
expect_error "16 experts over 3 DP-attention ranks" "n_routed_experts = 16 is not divisible by --ep-size 3" \
  "${mpirun[@]}" -np 3 "$bin" logits --model "$dir" --ids 1,2 --tp-size 3 --dp-size 3 --ep-size 3 \
  --enable-dp-attention
expect_error "DP attention, world 4" "mpirun started 4 ranks but --tp-size 2 with DP attention needs 2" \
  "${mpirun[@]}" -np 4 "$bin" logits --model "$dir" --ids 1,2 --tp-size 2 --dp-size 2 --ep-size 2 \
  --enable-dp-attention
echo "$runs parallel runs, $fails failures"
[ "$fails" -eq 0 ]
