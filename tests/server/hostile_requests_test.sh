#!/usr/bin/env bash
# Hostile requests and bad weights against the real `dsserve serve` on 127.0.0.1 (issue: no
# request can crash or stall the server): deeply nested and very wide JSON, out-of-range
# integers, context-length and queue-size errors, NaN weights (a per-request failure at run time;
# at load, a start-up error naming the tensor), an eos_token_id outside the vocabulary.
# Usage: hostile_requests_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$1
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir hostile-req
PY="$ROOT/tests/server/hostile_requests.py"

"$DSSERVE" init-model --preset tiny-v32 --out "$WORK/m" --seed 7 >/dev/null 2>&1

echo "== deep and wide JSON, small defects"
start_server A --model "$WORK/m" --api-key k --max-request-bytes 4000000 \
  --max-queued-requests 8 --context-length 2048
PIDS+=("$A_PID")
python3 "$PY" "http://127.0.0.1:$A_PORT" k deep wide small
kill -0 "$A_PID" || fail "server A died"
stop_server A

echo "== deadlines"
start_server C --model "$WORK/m" --api-key k --request-timeout 1 --max-queue-time 0.3 \
  --max-running-requests 1
PIDS+=("$C_PID")
python3 "$PY" "http://127.0.0.1:$C_PORT" k deadlines
stop_server C

# poison DIR TENSOR INDEX_FROM INDEX_TO: sets elements [from, to) of a BF16/F32 tensor to NaN in
# place (safetensors: 8-byte header length, JSON header, data).
poison() {
  python3 - "$@" <<'PYEOF'
import json, struct, sys, glob, os
d, name, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for path in glob.glob(os.path.join(d, "*.safetensors")):
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        if name not in h:
            continue
        t = h[name]
        size = {"BF16": 2, "F32": 4}[t["dtype"]]
        nan = b"\xc0\x7f" if size == 2 else struct.pack("<f", float("nan"))
        f.seek(8 + n + t["data_offsets"][0] + lo * size)
        f.write(nan * (hi - lo))
        sys.exit(0)
sys.exit(f"{name} not found in {d}")
PYEOF
}

echo "== NaN weights at run time: the request fails, the server goes on"
cp -r "$WORK/m" "$WORK/nan"
d_model=$(python3 -c "import json;print(json.load(open('$WORK/m/config.json'))['hidden_size'])")
token=77
poison "$WORK/nan" model.embed_tokens.weight $((token * d_model)) $(((token + 1) * d_model))
start_server B --model "$WORK/nan" --api-key k
PIDS+=("$B_PID")
python3 "$PY" "http://127.0.0.1:$B_PORT" k nan "$token"
kill -0 "$B_PID" || fail "server B died"
stop_server B

# fails_to_start NAME MODEL PATTERN...: `serve` exits non-zero and its log matches every pattern.
fails_to_start() {
  local name=$1 model=$2; shift 2
  local rc=0
  timeout 120 "$DSSERVE" serve --model "$model" --port 0 >"$WORK/$name.log" 2>&1 || rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || { cat "$WORK/$name.log" >&2; fail "$name: rc $rc"; }
  for p in "$@"; do
    grep -q -- "$p" "$WORK/$name.log" || { cat "$WORK/$name.log" >&2; fail "$name: no '$p'"; }
  done
  echo "ok   $name: start-up error: $(grep -m1 -- "$1" "$WORK/$name.log" | cut -c1-160)"
}

echo "== non-finite norms and scales, eos outside the vocabulary: start-up errors"
cp -r "$WORK/m" "$WORK/badnorm"
poison "$WORK/badnorm" model.layers.0.post_attention_layernorm.weight 3 4
fails_to_start badnorm "$WORK/badnorm" "model.layers.0.post_attention_layernorm.weight" "finite"
cp -r "$WORK/m" "$WORK/badscale"
scale=$(python3 - "$WORK/m" <<'PYEOF'
import json, struct, sys, glob
for p in sorted(glob.glob(sys.argv[1] + "/*.safetensors")):
    with open(p, "rb") as f:
        h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    names = sorted(k for k in h if k.endswith("q_b_proj.weight_scale_inv"))
    if names:
        print(names[0]); break
PYEOF
)
[ -n "$scale" ] || fail "no FP8 scale tensor in the demo model"
poison "$WORK/badscale" "$scale" 0 1
fails_to_start badscale "$WORK/badscale" "$scale" "finite"
cp -r "$WORK/m" "$WORK/badeos"
python3 - "$WORK/badeos/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c["eos_token_id"] = c["vocab_size"]
json.dump(c, open(sys.argv[1], "w"))
PYEOF
fails_to_start badeos "$WORK/badeos" "eos_token_id" "outside the vocabulary"
echo "PASS hostile_requests"
