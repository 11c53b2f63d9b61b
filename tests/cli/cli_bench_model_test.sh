#!/usr/bin/env bash
# End-to-end test of `dsserve bench-model` on tiny random checkpoints (V3 and V3.2): the JSON has
# every key with positive values, and the weight bytes per decoded token equal an independent
# count made here from the safetensors headers (not from the binary's code path).
# Usage: cli_bench_model_test.sh <dsserve binary>
set -uo pipefail
bin="$1"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $name"; fail=$((fail + 1)); fi
}

# Independent count: every tensor of layers < num_hidden_layers (MTP layers are not run) in its
# stored dtype, scales included; routed experts scaled by num_experts_per_tok / n_routed_experts
# (all experts have one shape); the embedding as one row (its bytes / vocab_size, scales too).
count_bytes() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, json, re, struct, sys
d = sys.argv[1]
cfg = json.load(open(d + "/config.json"))
sizes = {}
for f in glob.glob(d + "/*.safetensors"):
    with open(f, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
    for name, v in header.items():
        if name != "__metadata__":
            sizes[name] = v["data_offsets"][1] - v["data_offsets"][0]
n_layers, k, n_exp = cfg["num_hidden_layers"], cfg["num_experts_per_tok"], cfg["n_routed_experts"]
total, routed = 0, 0
for name, b in sizes.items():
    m = re.match(r"model\.layers\.(\d+)\.", name)
    if m and int(m.group(1)) >= n_layers:
        continue
    if name.startswith("model.embed_tokens."):
        rows = cfg["vocab_size"] if name.endswith(".weight") else -(-cfg["vocab_size"] // 128)
        assert b % rows == 0, name
        total += b // rows
    elif ".mlp.experts." in name:
        routed += b
    else:
        total += b
assert routed * k % n_exp == 0
if cfg.get("tie_word_embeddings"):
    total += sizes["model.embed_tokens.weight"]
print(total + routed * k // n_exp)
PY
}

check_json() {  # check_json FILE EXPECTED_BYTES CONTEXTS MODEL_DIR
  /usr/bin/python3 - "$@" <<'PY'
import json, os, sys
o = json.load(open(sys.argv[1]))
keys = ["prefill_16_tok_s", "prefill_32_tok_s", "decode_bs1_tok_s", "decode_bs2_tok_s",
        "roofline_bs1_tok_s", "read_gbps_before", "read_gbps_after", "read_gbps_bs1_before",
        "read_gbps_bs1_after", "decode_bs1_roofline_pct"]
keys += ["decode_ctx_%s_tpot_ms" % c for c in sys.argv[3].split(",")]
for k in keys:
    assert k in o and o[k] > 0, (k, o.get(k))
assert o["active_weight_bytes_per_token"] == int(sys.argv[2]), (o["active_weight_bytes_per_token"], sys.argv[2])
assert sum(o["active_weight_bytes"].values()) == o["active_weight_bytes_per_token"]
assert abs(o["roofline_bs1_tok_s"] - o["read_gbps"] * 1e9 / o["active_weight_bytes_per_token"]) < 1e-6 * o["roofline_bs1_tok_s"]
assert o["read_gbps"] == max([o["read_gbps_before"], o["read_gbps_after"]] +
                            o["read_gbps_bs1_samples"])
first = sys.argv[3].split(",")[0]
assert o["decode_ctx_%s_tpot_ratio" % first] == 1.0
# The host CPU against /proc/cpuinfo (the kernel's own CPUID reading), where it is x86 Linux.
cpu = o["cpu"]
assert cpu["target"] and isinstance(cpu["bf16_dot"], bool), cpu
info = {}
if os.path.exists("/proc/cpuinfo"):
    for line in open("/proc/cpuinfo"):
        if not line.strip():
            break
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
if all(k in info for k in ("vendor_id", "cpu family", "model", "stepping", "model name")):
    assert cpu["vendor"].strip() == info["vendor_id"], (cpu, info["vendor_id"])
    assert (cpu["family"], cpu["model"], cpu["stepping"]) == (
        int(info["cpu family"]), int(info["model"]), int(info["stepping"])), (cpu, info)
    brand = cpu["brand"] or "%02x/%02x" % (cpu["family"], cpu["model"])  # Linux's fallback
    # Linux reads the brand string at boot; a hypervisor may present another one to CPUID later
    # (cpu_features_test then checks the brand against its own CPUID read).
    if brand != info["model name"]:
        print(f"note: CPUID brand '{brand}' differs from /proc/cpuinfo '{info['model name']}'")
        assert cpu["brand"].strip() == cpu["brand"] and cpu["brand"].isprintable(), cpu
# Prefill GFLOP/s: an independent count from config.json of what src/perf/prefill_flops.h
# defines (2 per multiply-add; projections and FFN/experts per token, kv_b per position, causal
# (V3.2: top-k limited) pairs, the V3.2 indexer, lm_head for the last token), times the measured
# tok/s; the percentages against the peaks measured in the same run.
cfg = json.load(open(sys.argv[4] + "/config.json"))
d, H = cfg["hidden_size"], cfg["num_attention_heads"]
nope, rope, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
R, Q = cfg["kv_lora_rank"], cfg.get("q_lora_rank") or 0
topk = cfg.get("index_topk", 0)
HI, D = cfg.get("index_n_heads", 0), cfg.get("index_head_dim", 0)
def flops(n):
    qk = nope + rope
    proj = (d * Q + Q * H * qk if Q else d * H * qk) + d * (R + rope) + H * dv * d
    if topk:
        proj += Q * HI * D + d * D + d * HI
    pairs = sum(min(t + 1, topk) if topk else t + 1 for t in range(n))
    macs = 0
    for i in range(cfg["num_hidden_layers"]):
        macs += n * proj + n * R * H * (nope + dv) + pairs * H * (qk + dv)
        if topk:  # scored only past index_topk (within it the selection is dense)
            macs += sum(t + 1 for t in range(n) if t + 1 > topk) * HI * D
        if i >= cfg["first_k_dense_replace"]:
            macs += n * (d * cfg["n_routed_experts"] + (cfg["num_experts_per_tok"] +
                     cfg["n_shared_experts"]) * 3 * d * cfg["moe_intermediate_size"])
        else:
            macs += n * 3 * d * cfg["intermediate_size"]
    return 2 * (macs + d * cfg["vocab_size"])
assert o["bf16_dot_peak_gflops"] > 0 and o["fma_peak_gflops"] > 0
for n in (16, 32):
    g = flops(n) / n * o["prefill_%d_tok_s" % n] * 1e-9
    assert abs(o["prefill_%d_gflops" % n] - g) <= 1e-9 * g, (n, o["prefill_%d_gflops" % n], g)
    pct = 100 * g / o["bf16_dot_peak_gflops"]
    assert abs(o["prefill_%d_bf16_peak_pct" % n] - pct) <= 1e-9 * pct, (n, pct)
PY
}

# Batch 1 bracketed per repetition: repetitions + 1 bandwidth samples (the first and last also
# reported as before / after); each repetition's paired percentage turned back into tok/s through
# the higher sample around it must give the reported mean and sample stddev of batch 1, and the
# paired figure is their median (an odd count of repetitions: a true median, not the mean).
check_paired() {  # check_paired FILE
  /usr/bin/python3 - "$@" <<'PY'
import json, statistics, sys
o = json.load(open(sys.argv[1]))
bw = o["read_gbps_bs1_samples"]
assert len(bw) == o["repetitions"] + 1 and min(bw) > 0, bw
assert (bw[0], bw[-1]) == (o["read_gbps_bs1_before"], o["read_gbps_bs1_after"])
assert o["read_gbps"] == max([o["read_gbps_before"], o["read_gbps_after"]] + bw)
reps = o["decode_bs1_roofline_pct_paired_reps"]
assert len(reps) == o["repetitions"], reps
B = o["active_weight_bytes_per_token"]
tok = [p / 100 * max(bw[i], bw[i + 1]) * 1e9 / B for i, p in enumerate(reps)]
mean = sum(tok) / len(tok)
assert abs(mean - o["decode_bs1_tok_s"]) < 1e-6 * mean, (tok, o["decode_bs1_tok_s"])
if len(tok) > 1:
    sd = statistics.stdev(tok)
    assert abs(sd - o["decode_bs1_tok_s_stddev"]) < 1e-6 * mean, (sd, o["decode_bs1_tok_s_stddev"])
med = statistics.median(reps)
assert abs(o["decode_bs1_roofline_pct_paired"] - med) < 1e-9 * med, (o["decode_bs1_roofline_pct_paired"], med)
PY
}

# The bytes-and-FLOPs bound of each batch (src/perf/decode_flops.h), recomputed here: FLOPs
# per step counted from config.json (absorbed MLA: projections, W_UK, W_UV, H (2R + rope) per
# attended position; the V3.2 indexer's projections and, past index_topk, every cached position
# scored (within it none: the selection is dense); dense FFN or
# router + routed + shared experts; lm_head; 2 per multiply-add per token, the mean over the tg
# steps from an empty cache, step i attending i + 1 positions (V3.2: at most index_topk)), bytes
# per phase from the batch-1 parts with the step's routed experts, and per phase the slower of
# bytes at read_gbps and FLOPs at the peak of the matmuls' arithmetic, summed.
bound_lib='
def check_bound(o, cfg, expert, batches):
    d, H, V = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"]
    nope, rope, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    R, Q = cfg["kv_lora_rank"], cfg.get("q_lora_rank") or 0
    topk = cfg.get("index_topk", 0)
    HI, D = cfg.get("index_n_heads", 0), cfg.get("index_head_dim", 0)
    F, k = cfg["moe_intermediate_size"], cfg["num_experts_per_tok"]
    L, dense = cfg["num_hidden_layers"], cfg["first_k_dense_replace"]
    T = o["decode_tokens"]
    att = sum(min(i + 1, topk) if topk else i + 1 for i in range(T)) / T
    scored = sum(i + 1 for i in range(T) if topk and i + 1 > topk) / T
    macs = {"attention": 0, "indexer": 0, "dense_ffn": 0, "router": 0, "experts": 0}
    for i in range(L):
        macs["attention"] += ((d * Q + Q * H * (nope + rope) if Q else d * H * (nope + rope)) +
                              d * (R + rope) + H * dv * d + H * nope * R + H * R * dv +
                              att * H * (2 * R + rope))
        if topk:
            macs["indexer"] += Q * HI * D + d * D + d * HI + scored * HI * D
        if i >= dense:
            macs["router"] += d * cfg["n_routed_experts"]
            macs["experts"] += (k + cfg["n_shared_experts"]) * 3 * d * F
        else:
            macs["dense_ffn"] += 3 * d * cfg["intermediate_size"]
    macs["lm_head"] = d * V
    bf16 = o["matmul_dtype"] == "bf16"
    assert o["bound_peak"] == ("bf16_dot" if bf16 else "fma"), o["bound_peak"]
    peak = o["bf16_dot_peak_gflops" if bf16 else "fma_peak_gflops"]
    assert o["bound_peak_gflops"] == peak
    parts, bw = o["active_weight_bytes"], o["read_gbps"]
    n_moe = L - dense
    bound = {}
    for b in batches:
        routed = o["decode_bs%d_routed_experts_per_layer" % b] * n_moe * expert
        by = {"attention": parts["attention"], "indexer": parts["indexer"],
              "dense_ffn": parts["dense_ffn"], "router": parts["router"],
              "experts": parts["shared_experts"] + routed, "lm_head": parts["lm_head"],
              "other": parts["embedding"] + parts["norms"]}
        fl = {p: 2 * b * m for p, m in macs.items()}
        total = sum(fl.values())
        got = o["decode_bs%d_flops_per_step" % b]
        assert abs(got - total) <= 1e-9 * total, (b, got, total)
        phases = o["decode_bs%d_bound_phases" % b]
        want = [p for p in ("attention", "indexer", "dense_ffn", "router", "experts", "lm_head",
                            "other") if by[p] or fl.get(p, 0)]
        assert list(phases) == want, (b, list(phases), want)
        s = 0
        for p in want:
            ph = phases[p]
            assert abs(ph["bytes"] - by[p]) <= 1e-9 * by[p], (b, p, ph, by[p])
            f = fl.get(p, 0)
            assert abs(ph["flops"] - f) <= 1e-9 * f, (b, p, ph, f)
            bms, fms = by[p] / bw * 1e-6, f / peak * 1e-6
            assert abs(ph["bytes_ms"] - bms) <= 1e-9 * bms and abs(ph["flops_ms"] - fms) <= 1e-9 * fms
            s += max(bms, fms)
        bound[b] = b / s * 1e3
        got = o["bound_bs%d_tok_s" % b]
        assert abs(got - bound[b]) <= 1e-9 * bound[b], (b, got, bound[b])
        pct = 100 * o["decode_bs%d_tok_s" % b] / bound[b]
        assert abs(o["decode_bs%d_bound_pct" % b] - pct) <= 1e-9 * pct, (b, pct)
        # The bound is never above the bytes-only roofline (it adds the FLOPs).
        assert bound[b] <= o["roofline_bs%d_tok_s" % b] * (1 + 1e-9), (b, bound[b])
    for b in batches:
        if b != 1 and 1 in bound:
            sp = bound[b] / bound[1]
            assert abs(o["bound_bs%d_speedup" % b] - sp) <= 1e-9 * sp, (b, sp)
'

# Each batch against its own weight bytes per step: the batch-1 bytes with the routed experts
# replaced by those the step's tokens chose (each distinct expert of a layer once), one expert's
# bytes counted here from the safetensors headers (layer first_k_dense_replace's expert 0). Batch
# 1 reads exactly num_experts_per_tok experts per MoE layer; batch 2 (a mean over the timed steps
# of the fixed seed's ids) strictly between that and twice it: a count per (token, expert) pair
# would read twice.
check_batch() {  # check_batch FILE MODEL_DIR
  BOUND_LIB="$bound_lib" /usr/bin/python3 - "$@" <<'PY'
import glob, json, os, struct, sys
exec(os.environ["BOUND_LIB"])
o = json.load(open(sys.argv[1]))
cfg = json.load(open(sys.argv[2] + "/config.json"))
prefix = "model.layers.%d.mlp.experts.0." % cfg["first_k_dense_replace"]
expert = 0
for f in glob.glob(sys.argv[2] + "/*.safetensors"):
    with open(f, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
    for name, v in header.items():
        if name.startswith(prefix):
            expert += v["data_offsets"][1] - v["data_offsets"][0]
assert expert > 0
k = cfg["num_experts_per_tok"]
n_moe = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"]
B1, bw = o["active_weight_bytes_per_token"], o["read_gbps"]
for b in (1, 2):
    e = o["decode_bs%d_routed_experts_per_layer" % b]
    assert (e == k) if b == 1 else (k < e < 2 * k), (b, e)
    step = o["decode_bs%d_weight_bytes_per_step" % b]
    want = B1 + (e - k) * n_moe * expert
    assert abs(step - want) <= 1e-9 * want, (b, step, want)
    rl = b * bw * 1e9 / step
    assert abs(o["roofline_bs%d_tok_s" % b] - rl) <= 1e-9 * rl, (b, o["roofline_bs%d_tok_s" % b], rl)
    pct = 100 * o["decode_bs%d_tok_s" % b] / rl
    assert abs(o["decode_bs%d_roofline_pct" % b] - pct) <= 1e-9 * pct, (b, pct)
assert o["decode_bs1_weight_bytes_per_step"] == B1
s = o["decode_bs2_tok_s"] / o["decode_bs1_tok_s"]
assert abs(o["decode_bs2_speedup"] - s) <= 1e-9 * s
s = o["roofline_bs2_tok_s"] / o["roofline_bs1_tok_s"]
assert abs(o["roofline_bs2_speedup"] - s) <= 1e-9 * s
for kind in ("bf16_dot", "fma"):  # the higher of the samples before and after the prefill runs
    samples = o[kind + "_peak_gflops_samples"]
    assert len(samples) == 2 and min(samples) > 0 and o[kind + "_peak_gflops"] == max(samples)
check_bound(o, cfg, expert, [1, 2])
PY
}


small=(--threads 2 --prefill 16,32 --decode-batch 1,2 --decode-tokens 4 --context-steps 2
       --context-chunk 16 --repetitions 2 --bandwidth-mib 16)
for preset in tiny tiny-v32; do
  "$bin" init-model --preset "$preset" --out "$tmp/$preset" --vocab-size 1000 --seed 5 \
    >"$tmp/init-$preset.out" 2>&1
  check "init-model $preset" test $? -eq 0
  expected="$(count_bytes "$tmp/$preset")"
  check "independent byte count of $preset" test -n "$expected"
  # tiny-v32 has index_topk 16: a 40-token context decodes sparsely.
  "$bin" bench-model --model "$tmp/$preset" "${small[@]}" --decode-context 8,40 --json \
    >"$tmp/$preset.json" 2>"$tmp/$preset.err"
  check "bench-model --json on $preset exits 0" test $? -eq 0
  check "bench-model JSON on $preset" check_json "$tmp/$preset.json" "$expected" 8,40 "$tmp/$preset"
  check "bench-model batch-1 pairing on $preset" check_paired "$tmp/$preset.json"
  check "bench-model batch rooflines on $preset" check_batch "$tmp/$preset.json" "$tmp/$preset"
done

# tiny-v32 (index_topk 16) decoding 20 tokens: the last 4 steps attend 16 of their 17-20 positions
# and have the indexer score all of them, the first 16 attend all and score none (check_bound's
# count; with 4 tokens above neither limit is reached).
"$bin" bench-model --model "$tmp/tiny-v32" --threads 2 --prefill 16 --decode-batch 1,2 \
  --decode-tokens 20 --repetitions 1 --bandwidth-mib 16 --json >"$tmp/v32-t20.json" 2>"$tmp/v32-t20.err"
check "bench-model tiny-v32 --decode-tokens 20 exits 0" test $? -eq 0
check "bench-model batch rooflines, tiny-v32 past index_topk" check_batch "$tmp/v32-t20.json" "$tmp/tiny-v32"

# Batch 1 with 5 repetitions (6 samples: a repetition paired with one sample only, or a mean for
# the median, would show); batch 1 listed twice (the second run is reported); no batch 1 (no
# batch-1 keys at all).
"$bin" bench-model --model "$tmp/tiny" --threads 2 --prefill 16 --decode-batch 1 \
  --decode-tokens 4 --repetitions 5 --bandwidth-mib 16 --json >"$tmp/r5.json" 2>"$tmp/r5.err"
check "bench-model -r 5 exits 0" test $? -eq 0
check "bench-model batch-1 pairing, 5 repetitions" check_paired "$tmp/r5.json"
"$bin" bench-model --model "$tmp/tiny" --threads 2 --prefill 16 --decode-batch 1,1 \
  --decode-tokens 4 --repetitions 3 --bandwidth-mib 16 --json >"$tmp/twice.json" 2>"$tmp/twice.err"
check "bench-model --decode-batch 1,1 exits 0" test $? -eq 0
check "bench-model batch-1 pairing, batch 1 twice" check_paired "$tmp/twice.json"
"$bin" bench-model --model "$tmp/tiny" --threads 2 --prefill 16 --decode-batch 2 \
  --decode-tokens 4 --repetitions 2 --bandwidth-mib 16 --json >"$tmp/nobs1.json" 2>"$tmp/nobs1.err"
check "bench-model without batch 1 exits 0" test $? -eq 0
check "no batch-1 keys without batch 1" /usr/bin/python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
bad = [k for k in o if "bs1" in k]
assert o["decode_bs2_tok_s"] > 0 and bad == ["roofline_bs1_tok_s"], bad
assert o["decode_bs2_roofline_pct"] > 0 and o["roofline_bs2_tok_s"] > 0
assert "decode_bs2_speedup" not in o and "roofline_bs2_speedup" not in o' "$tmp/nobs1.json"
"$bin" bench-model --model "$tmp/tiny" --threads 2 --prefill 16 --decode-batch 2 \
  --decode-tokens 4 --repetitions 2 --bandwidth-mib 16 >"$tmp/nobs1.out" 2>&1
check "batch roofline row without batch 1" grep -qE "^\|     2 \| .* \|     - \|             - \|$" "$tmp/nobs1.out"
check "batch bound row without batch 1" grep -qE "^\|     2 \| +[0-9.]+ \| .* \| +- \| [-a-z_, ]+ \|$" "$tmp/nobs1.out"

# Human output: the tables and the roofline line.
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" >"$tmp/human.out" 2>&1
check "bench-model (tables) exits 0" test $? -eq 0
check "prefill row" grep -q "| pp32 " "$tmp/human.out"
check "decode row" grep -q "| tg4 bs2 " "$tmp/human.out"
check "roofline line" grep -q "roofline at batch 1: .* tok/s; decode bs1 reaches" "$tmp/human.out"
check "paired roofline line" grep -q "decode bs1 per repetition against the higher bandwidth sample around it: .*; median .*%" "$tmp/human.out"
check "prefill peak line" grep -q "pp32 .* GFLOP/s = .*% of the bf16-dot peak" "$tmp/human.out"
check "batch bound rows" grep -qE "^\|     2 \| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+% \| +[0-9.]+ \| [-a-z_, ]+ \|$" "$tmp/human.out"
check "batch roofline rows" grep -qE "^\|     2 \| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+% \| +[0-9.]+ \| +[0-9.]+ \|$" "$tmp/human.out"

# --phase-times: each pp / tg test's phases per forward; their calls per forward counted here
# from config.json (one forward, MLA in every layer, MoE / dense per layer kind, lm_head once),
# sub-phases within their block's time and the blocks within the forward's; without the flag no
# phases at all.
check "no phases without --phase-times" /usr/bin/python3 -c "
o = __import__('json').load(open('$tmp/tiny.json'))
assert 'phases_per_forward' not in o and 'phases_vs_bound' not in o"
for preset in tiny tiny-v32; do
  "$bin" bench-model --model "$tmp/$preset" "${small[@]}" --phase-times --json \
    >"$tmp/phases-$preset.json" 2>"$tmp/phases-$preset.err"
  check "bench-model --phase-times on $preset exits 0" test $? -eq 0
  check "phase table on stderr ($preset)" grep -q "tg4_bs2 phases per forward" "$tmp/phases-$preset.err"
  check "phases per forward on $preset" /usr/bin/python3 - "$tmp/phases-$preset.json" "$tmp/$preset/config.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["phases_per_forward"]
cfg = json.load(open(sys.argv[2]))
L, dense = cfg["num_hidden_layers"], cfg["first_k_dense_replace"]
assert sorted(o) == ["pp16", "pp32", "tg4_bs1", "tg4_bs2"], sorted(o)
want = {"forward": 1, "mla": L, "mla.q_a+kv_a": L, "mla.q_b": L, "mla.rope+cache": L,
        "mla.attn": L, "mla.o": L, "moe": L - dense, "moe.route": L - dense,
        "moe.experts": L - dense, "moe.sum": L - dense, "lm_head": 1}
if dense:
    want["dense_ffn"] = dense
for test, ph in o.items():
    assert {k: v["calls"] for k, v in ph.items()} == want, (test, ph)
    assert all(v["ms"] > 0 for v in ph.values()), (test, ph)
    eps = 1e-3  # ms: rounding of the per-phase nanosecond sums
    for block in ("mla", "moe"):
        sub = sum(v["ms"] for k, v in ph.items() if k.startswith(block + "."))
        assert sub <= ph[block]["ms"] + eps, (test, block, sub, ph[block]["ms"])
    blocks = sum(ph[k]["ms"] for k in ("mla", "moe", "dense_ffn", "lm_head") if k in ph)
    assert blocks <= ph["forward"]["ms"] + eps, (test, blocks, ph["forward"]["ms"])
PY
  # Each tg test's measured phases beside their bound: the same ms as phases_per_forward, the
  # bound of the mapped phases (mla: attention + indexer) as the slower of their bytes_ms and
  # flops_ms, the forward's as the whole step's (batch / bound_bsB_tok_s).
  check "phases against the bound on $preset" /usr/bin/python3 - "$tmp/phases-$preset.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ph, pv = j["phases_per_forward"], j["phases_vs_bound"]
assert sorted(pv) == ["tg4_bs1", "tg4_bs2"], sorted(pv)
mapping = {"mla": ["attention", "indexer"], "moe.route": ["router"], "moe.experts": ["experts"],
           "dense_ffn": ["dense_ffn"], "lm_head": ["lm_head"]}
for test, v in pv.items():
    b = int(test.split("_bs")[1])
    bp = j["decode_bs%d_bound_phases" % b]
    want = [k for k in mapping if k in ph[test]] + ["forward"]
    assert list(v) == want, (test, list(v), want)
    for name, e in v.items():
        assert e["ms"] == ph[test][name]["ms"], (test, name, e)
        if name == "forward":
            bound = b / j["bound_bs%d_tok_s" % b] * 1e3
        else:
            bound = sum(max(bp[p]["bytes_ms"], bp[p]["flops_ms"]) for p in mapping[name] if p in bp)
        assert bound > 0 and abs(e["bound_ms"] - bound) <= 1e-9 * bound, (test, name, e, bound)
PY
  "$bin" bench-model --model "$tmp/$preset" "${small[@]}" --phase-times >"$tmp/phases-$preset.out" 2>&1
  check "phases against the bound, table ($preset)" grep -qE "^\|     2 \| moe\.experts +\| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+% \|$" "$tmp/phases-$preset.out"
done

# --ab-variants 2: the forward calls alternate two variants (no code reads them here, so this
# checks the bookkeeping): every test's phases also per variant, each variant's calls per forward
# as the whole run's, decode steps split evenly (a tg test's steps alternate), stderr tables per
# variant; out of range refused.
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" --ab-variants 2 --json \
  >"$tmp/ab.json" 2>"$tmp/ab.err"
check "bench-model --ab-variants 2 exits 0" test $? -eq 0
check "variant tables on stderr" grep -q "tg4_bs2 variant 1 phases per forward" "$tmp/ab.err"
check "phases per variant" /usr/bin/python3 - "$tmp/ab.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
whole, per = j["phases_per_forward"], j["phases_per_variant"]
assert sorted(per) == sorted(whole), (sorted(per), sorted(whole))
for test, variants in per.items():
    assert len(variants) == 2, (test, variants)
    for v in variants:
        assert v["forwards"] > 0, (test, v)
        calls = {k: p["calls"] for k, p in v.items() if k != "forwards"}
        assert calls == {k: p["calls"] for k, p in whole[test].items()}, (test, v, whole[test])
    if test.startswith("tg"):
        assert abs(variants[0]["forwards"] - variants[1]["forwards"]) <= 1, (test, variants)
PY
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" --ab-variants 5 --json >/dev/null 2>&1
check "--ab-variants 5 refused" test $? -ne 0

# --weight-dtype bf16: the count follows the converted weights (more bytes than FP8).
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" --weight-dtype bf16 --json \
  >"$tmp/bf16.json" 2>"$tmp/bf16.err"
check "bench-model --weight-dtype bf16" /usr/bin/python3 -c "
import json; a=json.load(open('$tmp/tiny.json')); b=json.load(open('$tmp/bf16.json'))
assert b['active_weight_bytes_per_token'] > a['active_weight_bytes_per_token']"

# --matmul-dtype f32: the bound takes the f32 FMA peak (the bytes are the stored weights').
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" --matmul-dtype f32 --json \
  >"$tmp/f32.json" 2>"$tmp/f32.err"
check "bench-model --matmul-dtype f32 exits 0" test $? -eq 0
check "bench-model f32 bound takes the FMA peak" /usr/bin/python3 -c "
import json; o=json.load(open('$tmp/f32.json'))
assert o['matmul_dtype'] == 'f32' and o['bound_peak'] == 'fma', o['bound_peak']"
check "bench-model batch rooflines, --matmul-dtype f32" check_batch "$tmp/f32.json" "$tmp/tiny"

# --lm-head-dtype fp8: lm_head alone becomes FP8 (1 byte per weight + one f32 scale per 128x128
# block, from the BF16 checkpoint's 2 bytes), every other count unchanged.
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" --lm-head-dtype fp8 --json \
  >"$tmp/lmfp8.json" 2>"$tmp/lmfp8.err"
check "bench-model --lm-head-dtype fp8" /usr/bin/python3 -c "
import json; a=json.load(open('$tmp/tiny.json'))['active_weight_bytes']; b=json.load(open('$tmp/lmfp8.json'))
assert b['lm_head_dtype'] == 'fp8', b['lm_head_dtype']
b=b['active_weight_bytes']; ceil=lambda x: (x + 127) // 128
n = a['lm_head'] // 2  # BF16 elements: vocab 1000 x d_model
d = $(/usr/bin/python3 -c "import json; print(json.load(open('$tmp/tiny/config.json'))['hidden_size'])")
assert b['lm_head'] == n + ceil(n // d) * ceil(d) * 4, (a['lm_head'], b['lm_head'])
assert {k: v for k, v in a.items() if k != 'lm_head'} == {k: v for k, v in b.items() if k != 'lm_head'}"
"$bin" bench-model --model "$tmp/tiny" --lm-head-dtype fp4 >"$tmp/e0" 2>&1; rc=$?
check "bad --lm-head-dtype is rejected and named" grep -q -- "--lm-head-dtype" "$tmp/e0"

# --speculative-algorithm nextn on a checkpoint with the MTP module: the step timings of MTP
# speculative decoding per batch size, positive, with the implied speedups derived from them.
"$bin" init-model --preset tiny --out "$tmp/mtp" --vocab-size 1000 --seed 3 --mtp-layers 1 \
  >/dev/null 2>&1
"$bin" bench-model --model "$tmp/mtp" "${small[@]}" --json --speculative-algorithm nextn \
  --speculative-num-steps 3 --spec-batch 1,3 --spec-context 20 >"$tmp/spec.json" 2>"$tmp/spec.err"
check "bench-model --speculative-algorithm nextn" /usr/bin/python3 -c "
import json; s=json.load(open('$tmp/spec.json'))['speculative']
assert sorted(s) == ['bs1', 'bs3'], sorted(s)
for b in s.values():
    assert b['num_steps'] == 3 and b['context'] == 20
    for k in ('plain_step_ms', 'verify_step_ms', 'mtp_catchup_ms', 'mtp_draft_step_ms'):
        assert b[k] > 0, (k, b[k])
    cycle = b['verify_step_ms'] + b['mtp_catchup_ms'] + 2 * b['mtp_draft_step_ms']
    assert abs(b['cycle_ms'] - cycle) < 1e-9 * cycle
    e = 1 + 0.8 + 0.8 ** 2 + 0.8 ** 3
    assert abs(b['implied_speedup_at_80'] - e * b['plain_step_ms'] / cycle) < 1e-9"
"$bin" bench-model --model "$tmp/tiny" "${small[@]}" --speculative-algorithm nextn >"$tmp/e3" 2>&1
check "nextn without the MTP module is explained" grep -q "num_nextn_predict_layers 0" "$tmp/e3"

# Bad flags: exit 2 with the flag named.
"$bin" bench-model --model "$tmp/tiny" --decode-batch 0 >"$tmp/e1" 2>&1; rc=$?
check "bad --decode-batch exits 2" test $rc -eq 2
check "bad --decode-batch is named" grep -q -- "--decode-batch" "$tmp/e1"
"$bin" bench-model --model "$tmp/nonexistent" >"$tmp/e2" 2>&1; rc=$?
check "missing model exits 1" test $rc -eq 1

echo "cli_bench_model_test: $pass passed, $fail failed"
test $fail -eq 0
