#!/usr/bin/env bash
# End-to-end test of the real dsserve binary's model commands: init-model -> inspect -> logits,
# plus clear errors (non-zero exit, message naming the problem) for bad input.
# Usage: cli_model_test.sh <dsserve binary> <tests/data dir>
set -uo pipefail
bin="$1"; data="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $name"; fail=$((fail + 1)); fi
}

# init-model with a small vocabulary (no tokenizer copied), then inspect and logits.
"$bin" init-model --preset tiny --out "$tmp/m" --vocab-size 1000 --seed 3 >"$tmp/init.out" 2>&1
check "init-model exits 0" test $? -eq 0
check "init-model writes the index" test -f "$tmp/m/model.safetensors.index.json"
check "no tokenizer for a synthetic vocabulary" test ! -f "$tmp/m/tokenizer.json"
"$bin" inspect --model "$tmp/m" >"$tmp/inspect.out" 2>&1
check "inspect exits 0" test $? -eq 0
check "inspect names the architecture" grep -q "DeepseekV3ForCausalLM" "$tmp/inspect.out"
check "inspect reports FP8 tensors" grep -q "F8_E4M3" "$tmp/inspect.out"
"$bin" logits --model "$tmp/m" --ids 0,15,27 --decode 4 >"$tmp/logits.json" 2>"$tmp/logits.err"
check "logits exits 0" test $? -eq 0
check "logits prints the JSON fields" /usr/bin/python3 -c "
import json,sys; o=json.load(open('$tmp/logits.json'))
assert len(o['argmax'])==3 and len(o['argmax_logit'])==3 and len(o['last_logits'])==1000 and len(o['greedy'])==4
assert o['greedy'][0]==o['argmax'][-1]"

# A V3.2 checkpoint (indexer, F32 norms, UE8M0 scales) from init-model loads and runs sparse
# attention (40 tokens > index_topk 16).
"$bin" init-model --preset tiny-v32 --out "$tmp/m32" --vocab-size 1000 --seed 4 >"$tmp/init32.out" 2>&1
check "init-model tiny-v32 exits 0" test $? -eq 0
"$bin" inspect --model "$tmp/m32" >"$tmp/inspect32.out" 2>&1
check "tiny-v32 is a V3.2 model" grep -q "DeepseekV32ForCausalLM" "$tmp/inspect32.out"
"$bin" logits --model "$tmp/m32" --ids "$(seq -s, 1 40)" --decode 3 >"$tmp/logits32.json" 2>&1
check "logits on tiny-v32" test $? -eq 0

# --mtp-layers 1: the MTP module's tensors under model.layers.{num_hidden_layers} with the
# released checkpoints' names, shapes and dtypes (deepseek-reference.md 2.8: eh_proj [d, 2d]
# BF16, its own embed_tokens and shared_head.head [V, d] BF16, a whole FP8 decoder block), and
# the main model unchanged by it (the same seed gives the same logits).
"$bin" init-model --preset tiny --out "$tmp/mtp" --vocab-size 1000 --seed 3 --mtp-layers 1 \
  >"$tmp/initmtp.out" 2>&1
check "init-model --mtp-layers 1 exits 0" test $? -eq 0
check "the MTP tensors have DeepSeek's names, shapes and dtypes" python3 - "$tmp/mtp" <<'PY'
import json, struct, sys
d = sys.argv[1]
cfg = json.load(open(f"{d}/config.json"))
assert cfg["num_nextn_predict_layers"] == 1, cfg["num_nextn_predict_layers"]
n, h, v = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"]
wm = json.load(open(f"{d}/model.safetensors.index.json"))["weight_map"]
meta = {}
for shard in set(wm.values()):
    with open(f"{d}/{shard}", "rb") as f:
        k = struct.unpack("<Q", f.read(8))[0]
        meta.update(json.loads(f.read(k)))
p = f"model.layers.{n}."
want = {"enorm.weight": [h], "hnorm.weight": [h], "eh_proj.weight": [h, 2 * h],
        "embed_tokens.weight": [v, h], "shared_head.norm.weight": [h],
        "shared_head.head.weight": [v, h]}
for name, shape in want.items():
    t = meta[p + name]
    assert t["shape"] == shape, (name, t["shape"], shape)
for name in ("eh_proj.weight", "embed_tokens.weight", "shared_head.head.weight"):
    assert meta[p + name]["dtype"] == "BF16", (name, meta[p + name]["dtype"])
assert meta[p + "self_attn.q_b_proj.weight"]["dtype"] == "F8_E4M3"
assert p + "self_attn.q_b_proj.weight_scale_inv" in meta
assert any(k.startswith(p + "mlp.experts.") for k in meta)  # a MoE block, as layer 61 is
assert not any(k.startswith(f"model.layers.{n + 1}.") for k in meta)
PY
"$bin" logits --model "$tmp/m" --ids 1,2,3,4,5 --decode 3 --matmul-dtype f32 >"$tmp/nomtp.json" 2>/dev/null
"$bin" logits --model "$tmp/mtp" --ids 1,2,3,4,5 --decode 3 --matmul-dtype f32 >"$tmp/mtp.json" 2>/dev/null
check "the main model's logits are the same with the MTP module present" python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert (a['argmax'], a['greedy'], a['last_logits']) == (b['argmax'], b['greedy'], b['last_logits'])
" "$tmp/nomtp.json" "$tmp/mtp.json"

# The MTP forward (--speculative-algorithm nextn: mtp_logits) against an independent numpy
# implementation of the published formula (scripts/mtp_reference.py, which itself reproduces the
# golden logits of DeepSeek's reference code), in float32 arithmetic: within 1e-4 at every
# position of a 40-token prompt.
ref="$(dirname "$0")/../../scripts/mtp_reference.py"
check "the numpy reference reproduces DeepSeek's golden logits" /usr/bin/python3 "$ref" \
  --model "$data/golden/tiny-v3" --golden "$data/golden/tiny-v3/golden.json"
ids40="$(seq -s, 3 23 920)"
"$bin" logits --model "$tmp/mtp" --ids "$ids40" --matmul-dtype f32 --speculative-algorithm nextn \
  >"$tmp/mtp40.json" 2>/dev/null
check "logits --speculative-algorithm nextn exits 0" test $? -eq 0
check "the MTP logits match the numpy reference within 1e-4" \
  /usr/bin/python3 "$ref" --model "$tmp/mtp" --ids "$ids40" --compare "$tmp/mtp40.json" --tol 1e-4
"$bin" logits --model "$tmp/m" --ids 1,2 --speculative-algorithm nextn >"$tmp/e7" 2>&1; rc=$?
check "nextn without an MTP module exits 1" test $rc -eq 1
check "nextn without an MTP module is explained" grep -q "num_nextn_predict_layers 0" "$tmp/e7"

# --weight-cache: the first start writes the placed weights to one file, the second maps it and
# generates the same tokens.
printf '{"prompt_ids":[1,2,3,4,5],"max_tokens":6,"temperature":0,"ignore_eos":true}\n' >"$tmp/wc.jsonl"
for run in 1 2; do
  "$bin" generate --model "$data/golden/tiny-v3" --requests "$tmp/wc.jsonl" --matmul-dtype f32 \
    --weight-cache "$tmp/wcache" >"$tmp/wc$run.out" 2>/dev/null
done
check "--weight-cache writes one file" test "$(ls "$tmp/wcache" | grep -c '\.weights$')" -eq 1
check "--weight-cache: the mapped weights generate the same tokens" /usr/bin/python3 -c "
import json, sys
a, b = (json.loads(open(f).read()) for f in sys.argv[1:])
assert a['output_ids'] == b['output_ids'] and len(a['output_ids']) == 6, (a, b)
" "$tmp/wc1.out" "$tmp/wc2.out"

# The golden prompt through the CLI gives the reference greedy continuation.
"$bin" logits --model "$data/golden/tiny-v3" --ids 1,2,3,4,5,6,7 --decode 8 >"$tmp/g.json" 2>&1
check "logits on the golden checkpoint" test $? -eq 0
# Work is split across threads by output rows / heads, never inside one sum: the logits must be
# bit-identical whatever the thread count (1 vs 3 on any machine), in each arithmetic (named:
# --matmul-dtype auto measures per thread count and may pick either; bf16 where the CPU has it).
for md in f32 bf16; do
  "$bin" logits --model "$data/golden/tiny-v3" --ids 1,2,3,4,5,6,7 --decode 8 --threads 1 \
    --matmul-dtype $md >"$tmp/t1.json" 2>/dev/null || continue  # bf16 without AVX512-BF16
  "$bin" logits --model "$data/golden/tiny-v3" --ids 1,2,3,4,5,6,7 --decode 8 --threads 3 \
    --matmul-dtype $md >"$tmp/t3.json" 2>/dev/null
  check "logits are identical with --threads 1 and 3 ($md)" /usr/bin/python3 -c "
import json; a=json.load(open('$tmp/t1.json')); b=json.load(open('$tmp/t3.json'))
assert a['last_logits']==b['last_logits'] and a['argmax']==b['argmax'] and a['greedy']==b['greedy'], 'differ'
"
done
# The tiled weight layout (default) and the zero-copy row-major mapping agree in the float32
# arithmetic (mmap has no other): each has its own summation order (docs/architecture.md), so the
# logits match to rounding and the tokens exactly.
"$bin" logits --model "$data/golden/tiny-v3" --ids 1,2,3,4,5,6,7 --decode 8 --matmul-dtype f32 >"$tmp/f32.json" 2>/dev/null
"$bin" logits --model "$data/golden/tiny-v3" --ids 1,2,3,4,5,6,7 --decode 8 --weight-layout mmap >"$tmp/mmap.json" 2>/dev/null
check "logits agree with --weight-layout mmap and tiled" /usr/bin/python3 -c "
import json; a=json.load(open('$tmp/f32.json')); b=json.load(open('$tmp/mmap.json'))
assert a['argmax']==b['argmax'] and a['greedy']==b['greedy'], 'tokens differ'
d=max(abs(x-y) for x,y in zip(a['last_logits'],b['last_logits']))
assert d <= 1e-3, d
"
# --matmul-dtype bf16 (x rounded to bf16, AVX512-BF16 dot products) where the CPU has it: the
# same tokens on this prompt, logits within the official bf16 run's deviation from the golden
# (golden.json tolerance_hint; tests/model/golden_test.cc checks every case); elsewhere a clear
# error. It needs the tiled layout either way.
if grep -qw avx512_bf16 /proc/cpuinfo; then
  "$bin" logits --model "$data/golden/tiny-v3" --ids 1,2,3,4,5,6,7 --decode 8 --matmul-dtype bf16 >"$tmp/bf16.json" 2>/dev/null
  check "--matmul-dtype bf16 runs" test $? -eq 0
  check "--matmul-dtype bf16 agrees with f32 within the official bf16 deviation" /usr/bin/python3 -c "
import json; a=json.load(open('$tmp/f32.json')); b=json.load(open('$tmp/bf16.json'))
g=json.load(open('$data/golden/tiny-v3/golden.json'))
assert a['argmax']==b['argmax'] and a['greedy']==b['greedy'], 'tokens differ'
d=max(abs(x-y) for x,y in zip(a['last_logits'],b['last_logits']))
assert 0 < d <= g['tolerance_hint'], d
"
else
  "$bin" logits --model "$data/golden/tiny-v3" --ids 1 --matmul-dtype bf16 >"$tmp/e5" 2>&1; rc=$?
  check "--matmul-dtype bf16 without AVX512-BF16 exits 1" test $rc -eq 1
  check "--matmul-dtype bf16 without AVX512-BF16 is explained" grep -q "no AVX512-BF16" "$tmp/e5"
fi
"$bin" logits --model "$data/golden/tiny-v3" --ids 1 --matmul-dtype bf16 --weight-layout mmap >"$tmp/e6" 2>&1
check "--matmul-dtype bf16 with mmap is refused" grep -q -- "--matmul-dtype bf16" "$tmp/e6"
"$bin" logits --model "$data/golden/tiny-v3" --ids 1 --weight-layout rows >"$tmp/e0" 2>&1; rc=$?
check "bad --weight-layout is rejected and named" grep -q "weight-layout" "$tmp/e0"

# Bad input: clear errors, no crash.
"$bin" logits --model "$tmp/m" --ids 0,abc >"$tmp/e1" 2>&1; rc=$?
check "bad --ids exits 2" test $rc -eq 2
check "bad --ids is named" grep -q "'abc' is not a token id" "$tmp/e1"
"$bin" logits --model "$tmp/m" --ids 0,5000 >"$tmp/e2" 2>&1; rc=$?
check "out-of-vocab id exits 2" test $rc -eq 2
check "out-of-vocab id is named" grep -q "5000 >= vocab_size 1000" "$tmp/e2"
"$bin" logits --model "$tmp/nonexistent" --ids 0 >"$tmp/e3" 2>&1; rc=$?
check "missing model exits 1" test $rc -eq 1
check "missing model is named" grep -q "nonexistent" "$tmp/e3"
rm "$tmp/m/model-00001-of-000001.safetensors"
"$bin" inspect --model "$tmp/m" >"$tmp/e4" 2>&1; rc=$?
check "missing shard exits 1" test $rc -eq 1
check "missing shard is named" grep -q "model-00001-of-000001.safetensors" "$tmp/e4"

echo "cli_model_test: $pass passed, $fail failed"
test $fail -eq 0
