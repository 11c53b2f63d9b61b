#!/usr/bin/env bash
# The batching engine under tensor parallelism and data-parallel replicas, through the real
# binary: 32 concurrent greedy requests of mixed lengths (prompts 3-120 tokens, 4-24 new tokens;
# golden tiny-v3 and tiny-v32, --matmul-dtype f32) through `mpirun -np 2 dsserve generate
# --tp-size 2` (and --ep-size 2), `-np 2 ... --dp-size 2`, `-np 4 ... --tp-size 2 --dp-size 2`
# give token for token what one process gives; world rank 0 alone prints, in input order. The
# NGRAM configuration verifies prompt-lookup drafts under TP 2 (the step channel carries them);
# then DP attention 2 (two attention groups stepping in lockstep, experts exchanged); the last two
# write, then map, each rank's --weight-cache file (the ranks' arenas have the same layout and
# different slices: each its own file).
# Usage: tp_generate_test.sh DSSERVE DATA_DIR
set -uo pipefail
bin="$1" data="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none --mca btl self,vader)
python3 - "$tmp/req.jsonl" <<'PY'
import json, random, sys
r = random.Random(11)
with open(sys.argv[1], "w") as f:
    for i in range(32):
        n = r.randint(3, 120)
        f.write(json.dumps({"prompt_ids": [r.randrange(2048) for _ in range(n)],
                            "max_tokens": r.randint(4, 24), "temperature": 0,
                            "ignore_eos": True}) + "\n")
PY
fails=0
for model in tiny-v3 tiny-v32; do
  common=(generate --model "$data/golden/$model" --requests "$tmp/req.jsonl" --matmul-dtype f32
          --threads 1 --max-running-requests 16 --chunked-prefill-size 64 --page-size 16)
  "$bin" "${common[@]}" >"$tmp/one.jsonl" 2>"$tmp/one.err" || { cat "$tmp/one.err"; exit 1; }
  for cfg in "2 --tp-size 2" "2 --tp-size 2 --ep-size 2" "2 --dp-size 2" "4 --tp-size 2 --dp-size 2" \
    "2 --tp-size 2 --speculative-algorithm ngram --speculative-num-steps 3" \
    "2 --tp-size 2 --dp-size 2 --ep-size 2 --enable-dp-attention" \
    "2 --tp-size 2 --weight-cache $tmp/wc-$model" "2 --tp-size 2 --weight-cache $tmp/wc-$model"; do
    read -r np flags <<<"$cfg"
    name="$model np $np $flags"
    # shellcheck disable=SC2086  # flags is a list
    if ! "${mpirun[@]}" -np "$np" "$bin" "${common[@]}" $flags >"$tmp/tp.jsonl" \
        2>"$tmp/tp.err"; then
      echo "FAIL $name: exit code"; cat "$tmp/tp.err"; fails=$((fails + 1)); continue
    fi
    python3 - "$tmp/one.jsonl" "$tmp/tp.jsonl" "$name" <<'PY' || fails=$((fails + 1))
import json, sys
one = [json.loads(l) for l in open(sys.argv[1])]
tp = [json.loads(l) for l in open(sys.argv[2])]
name = sys.argv[3]
assert len(one) == 32 and len(tp) == 32, f"{name}: {len(one)} and {len(tp)} result lines"
bad = [i for i in range(32) if one[i]["output_ids"] != tp[i]["output_ids"]]
assert not bad, f"{name}: requests {bad} differ"
n = sum(len(x["output_ids"]) for x in tp)
print(f"ok   {name}: 32 requests, {n} tokens equal to one process")
PY
  done
done
[ "$fails" -eq 0 ]
