#!/bin/bash
# dsserve convert / eval-quant / --weight-dtype / --act-quant end to end on the golden tiny-v3.
set -euo pipefail
DSSERVE=$1
DATA=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$DSSERVE" convert --model "$DATA/golden/tiny-v3" --out "$TMP/int8" --to int8 2> "$TMP/err"
grep -q "convert: \[#" "$TMP/err" || fail "no progress bar: $(cat "$TMP/err")"
grep -q '"w8a8_int8"' "$TMP/int8/config.json" || fail "int8 config"
"$DSSERVE" inspect --model "$TMP/int8" | grep -q "I8" || fail "inspect shows no I8"
# lm_head quantised only when asked.
"$DSSERVE" convert --model "$DATA/golden/tiny-v3" --out "$TMP/int8all" --to int8 --quiet \
  --exclude embed_tokens
"$DSSERVE" inspect --model "$TMP/int8all" --json > "$TMP/all.json"
"$DSSERVE" inspect --model "$TMP/int8" --json > "$TMP/def.json"
python3 - "$TMP/all.json" "$TMP/def.json" <<'PY'
import json, sys
a, d = (json.load(open(p)) for p in sys.argv[1:3])
assert a["tensors_by_dtype"]["I8"]["elements"] > d["tensors_by_dtype"]["I8"]["elements"], (a, d)
PY
# Bad input: clear error, non-zero exit.
if "$DSSERVE" convert --model "$TMP/nowhere" --out "$TMP/x" --to bf16 --quiet 2> "$TMP/err"; then
  fail "convert of a missing model succeeded"
fi
grep -q "nowhere" "$TMP/err" || fail "error does not name the input: $(cat "$TMP/err")"

# eval-quant: reference row + candidates, markdown and JSON.
"$DSSERVE" eval-quant --model "$DATA/golden/tiny-v3,label=fp8" \
  --candidate "$TMP/int8,label=int8" --candidate "$DATA/golden/tiny-v3,act-quant=fp8,label=w8a8" \
  --n-prompts 2 --prompt-len 16 --decode-tokens 2 --json > "$TMP/eval.json"
python3 - "$TMP/eval.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = {r["label"]: r for r in j["models"]}
assert j["positions"] == 32, j
assert m["fp8"]["top1_agreement"] == 1.0 and m["fp8"]["mean_kl_nats"] == 0.0, m["fp8"]
for k in ("int8", "w8a8"):
    assert 0.5 <= m[k]["top1_agreement"] <= 1.0, m[k]
    assert m[k]["mean_kl_nats"] > 0 and m[k]["max_abs_logit_diff"] > 0, m[k]
    assert m[k]["decode_tok_s"] > 0, m[k]
assert m["int8"]["weight_bytes"] > 0 and "I8" in m["int8"]["weights"], m["int8"]
PY
"$DSSERVE" eval-quant --model "$DATA/golden/tiny-v3" --candidate "$TMP/int8" --n-prompts 1 \
  --prompt-len 8 --decode-tokens 1 | grep -q "| top-1 agreement |" || fail "no markdown table"

# Run-time flags on logits.
"$DSSERVE" logits --model "$DATA/golden/tiny-v3" --ids 0,15,27 --weight-dtype int8 --act-quant fp8 \
  | grep -q '"argmax"' || fail "logits with --weight-dtype/--act-quant"
# ... and on the engine (generate): W8A8 with weights converted to FP8 at load.
echo '{"prompt_ids": [0, 15, 27], "max_tokens": 3, "ignore_eos": true}' > "$TMP/req.jsonl"
"$DSSERVE" generate --model "$DATA/golden/tiny-v3-bf16" --requests "$TMP/req.jsonl" \
  --weight-dtype fp8 --act-quant fp8 --max-total-tokens 512 --context-length 256 2> /dev/null \
  | grep -q '"finish_reason":"length"' || fail "generate with --weight-dtype fp8 --act-quant fp8"
if "$DSSERVE" generate --model "$DATA/golden/tiny-v3" --requests "$TMP/req.jsonl" \
  --weight-dtype int4 > /dev/null 2>&1; then
  fail "--weight-dtype int4 accepted"
fi
echo "cli_quant_test: ok"
