#!/usr/bin/env python3
"""Independent float64 numpy reference of the DeepSeek-V3 forward pass and its MTP (next-n) module.

Written from the published description, not from dsserve's sources:
  * shared/docs/deepseek-reference.md: 2.1 top level, 2.2 RMSNorm, 2.3 MLA (naive form), 2.4 RoPE/YaRN
    (interleaved pairs), 2.5 SwiGLU, 2.6 noaux_tc routing, 2.8 MTP, 3.2/3.3 tensor names and FP8 block
    dequantisation, implementer's notes 1-8;
  * shared/golden/README.md: checkpoint format, how the golden logits were produced.
MTP input hidden state: the main model's output AFTER the final model.norm, which is what vLLM's and
SGLang's DeepSeek models return from the model forward and hand to their MTP module; the embedding half
comes first in eh_proj's input (vLLM's order). Unlike vLLM, the embedding at position 0 is not zeroed.

Contracts:
  forward(ids) -> (final-normed hidden [n, d], logits [n, vocab]) for one causal sequence at positions 0..n-1.
  mtp(ids, h)  -> logits [n-1, vocab]; row i predicts token i+2 from h[i] and the embedding of ids[i+1].
Only DeepSeek-V3 (V3.1 has the same architecture); V3.2 (sparse-attention indexer) is refused.

Usage: mtp_reference.py --model DIR [--ids 1,2,3] [--golden golden.json] [--compare dsserve.json] [--tol 1e-4]
  --golden   self-check: main-model logits against DeepSeek's golden cases (prompt last position and the
             teacher-forced greedy steps); exit 1 if any max |diff| > GOLDEN_TOL.
  --compare  FILE from `dsserve logits ... --matmul-dtype f32 --speculative-algorithm nextn`: compare
             last_logits and mtp_logits; exit 1 if either max |diff| > --tol, 2 if FILE has no mtp_logits.
  otherwise  print {"argmax", "last_logits", "mtp_logits"} as JSON.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

# The golden is a float32 run; the golden README measured that rounding-sized (1e-6 relative) noise on
# every matrix moves tiny-v3 logits by < 5e-5, so a correct float64 evaluation lands within ~5e-5 of it.
# 1e-4 leaves a 2x margin while every modelling error (gate bias, YaRN, RoPE layout, mscale) costs O(0.1-1).
GOLDEN_TOL = 1e-4


# ---------------------------------------------------------------- checkpoint reading (safetensors)

def _e4m3fn_table():
    """float8_e4m3fn code -> value: 1 sign, 4 exponent bits (bias 7), 3 mantissa; 0x7F/0xFF NaN."""
    t = np.empty(256, np.float32)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            v = float("nan")
        elif e == 0:
            v = (m / 8.0) * 2.0 ** -6
        else:
            v = (1.0 + m / 8.0) * 2.0 ** (e - 7)
        t[b] = -v if s else v
    return t


E4M3 = _e4m3fn_table()


class Checkpoint:
    """Tensors of a sharded (or single-file) safetensors checkpoint, decoded to float64 on demand."""

    def __init__(self, path):
        self.dir = path
        idx = os.path.join(path, "model.safetensors.index.json")
        files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) \
            else [f for f in sorted(os.listdir(path)) if f.endswith(".safetensors")]
        self.where = {}  # name -> (file, dtype, shape, begin, end)
        for f in files:
            fn = os.path.join(path, f)
            with open(fn, "rb") as fh:
                n = int.from_bytes(fh.read(8), "little")
                header = json.loads(fh.read(n))
            for name, meta in header.items():
                if name != "__metadata__":
                    b, e = meta["data_offsets"]
                    self.where[name] = (fn, meta["dtype"], meta["shape"], 8 + n + b, 8 + n + e)
        self.cache = {}

    def __contains__(self, name):
        return name in self.where

    def raw(self, name):
        fn, dt, shape, b, e = self.where[name]
        with open(fn, "rb") as fh:
            fh.seek(b)
            buf = fh.read(e - b)
        if dt == "F32":
            a = np.frombuffer(buf, "<f4")
        elif dt == "F16":
            a = np.frombuffer(buf, "<f2").astype(np.float32)
        elif dt == "BF16":  # the upper half of an IEEE float32
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif dt == "F8_E4M3":
            a = E4M3[np.frombuffer(buf, np.uint8)]
        else:
            raise SystemExit(f"{name}: unsupported dtype {dt}")
        return a.reshape(shape)

    def get(self, name):
        """float64 copy; FP8 weights are multiplied (one float32 product) by their 128x128 block scale."""
        if name not in self.cache:
            a = self.raw(name)
            if self.where[name][1] == "F8_E4M3":
                s = self.raw(name + "_scale_inv").astype(np.float32)
                r, c = a.shape
                s = np.repeat(np.repeat(s, 128, axis=0)[:r], 128, axis=1)[:, :c]
                a = a * s
            self.cache[name] = a.astype(np.float64)
        return self.cache[name]


# ---------------------------------------------------------------- model pieces

def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope_tables(cfg, n):
    """cos/sin [n, rope_dim/2] for positions 0..n-1 and the softmax scale (doc 2.3, 2.4, notes 2-3)."""
    d, base = cfg["qk_rope_head_dim"], float(cfg.get("rope_theta", 10000.0))
    freqs = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    scale = (cfg["qk_nope_head_dim"] + d) ** -0.5
    rs, cos_sin_gain = cfg.get("rope_scaling") or {}, 1.0
    kind = rs.get("type", rs.get("rope_type"))
    if kind == "yarn" and float(rs.get("factor", 1.0)) > 1.0:
        factor, l0 = float(rs["factor"]), float(rs["original_max_position_embeddings"])
        corr = lambda r: d * math.log(l0 / (2 * math.pi * r)) / (2 * math.log(base))
        low = max(math.floor(corr(float(rs.get("beta_fast", 32)))), 0)
        high = min(math.ceil(corr(float(rs.get("beta_slow", 1)))), d - 1)  # clamp to d-1, as HF/model.py
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        smooth = 1.0 - ramp
        freqs = freqs / factor * (1.0 - smooth) + freqs * smooth
        msc = lambda m: 0.1 * m * math.log(factor) + 1.0 if m else 1.0
        m_all = float(rs.get("mscale_all_dim", 0.0) or 0.0)
        scale *= msc(m_all) ** 2
        # HF/vLLM scale cos/sin by mscale(mscale)/mscale(mscale_all_dim); 1 when the two keys agree.
        cos_sin_gain = msc(float(rs.get("mscale", 1.0))) / msc(m_all)
    elif kind not in (None, "default"):
        raise SystemExit(f"unsupported rope_scaling type {kind}")
    ang = np.arange(n, dtype=np.float64)[:, None] * freqs[None, :]
    return np.cos(ang) * cos_sin_gain, np.sin(ang) * cos_sin_gain, scale


def rope_interleaved(x, cos, sin):
    """x [..., n, (heads,) d]: pairs (2i, 2i+1) rotate by the angle of pair i (doc 2.4, MLA layout)."""
    if x.ndim == 3:  # [n, heads, d]
        cos, sin = cos[:, None, :], sin[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def mla(ck, cfg, p, x, cos, sin, scale):
    """Naive MLA over a causal sequence x [n, d] (doc 2.3); p = 'model.layers.L.self_attn.'."""
    n, H, eps = x.shape[0], cfg["num_attention_heads"], cfg["rms_norm_eps"]
    dn, dr, dv, r = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    if cfg.get("q_lora_rank"):
        cq = rms_norm(x @ ck.get(p + "q_a_proj.weight").T, ck.get(p + "q_a_layernorm.weight"), eps)
        q = cq @ ck.get(p + "q_b_proj.weight").T
    else:
        q = x @ ck.get(p + "q_proj.weight").T
    q = q.reshape(n, H, dn + dr)                                    # per head: nope first, rope last
    q_nope, q_pe = q[..., :dn], rope_interleaved(q[..., dn:], cos, sin)
    kva = x @ ck.get(p + "kv_a_proj_with_mqa.weight").T             # [n, r + dr]
    c_kv = rms_norm(kva[:, :r], ck.get(p + "kv_a_layernorm.weight"), eps)
    k_pe = rope_interleaved(kva[:, r:], cos, sin)                   # one rope key shared by all heads
    kv = (c_kv @ ck.get(p + "kv_b_proj.weight").T).reshape(n, H, dn + dv)
    k_nope, v = kv[..., :dn], kv[..., dn:]                          # per head: k_nope rows, then v rows
    s = np.einsum("thd,shd->hts", q_nope, k_nope) + np.einsum("thd,sd->hts", q_pe, k_pe)
    s = s * scale + np.triu(np.full((n, n), -np.inf), 1)[None]
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    prob = s / s.sum(axis=-1, keepdims=True)
    o = np.einsum("hts,shd->thd", prob, v).reshape(n, H * dv)      # input index = h * v_head_dim + d
    return o @ ck.get(p + "o_proj.weight").T


def swiglu(ck, p, x):
    g, u = x @ ck.get(p + "gate_proj.weight").T, x @ ck.get(p + "up_proj.weight").T
    return (silu(g) * u) @ ck.get(p + "down_proj.weight").T


def moe(ck, cfg, p, x):
    """noaux_tc MoE (doc 2.6): biased sigmoid scores select, unbiased ones weigh; plus shared experts."""
    n, E = x.shape[0], cfg["n_routed_experts"]
    G, k, kg = cfg["n_group"], cfg["num_experts_per_tok"], cfg["topk_group"]
    scores = 1.0 / (1.0 + np.exp(-(x @ ck.get(p + "gate.weight").T)))              # [n, E]
    biased = scores + ck.get(p + "gate.e_score_correction_bias")[None, :]
    grouped = biased.reshape(n, G, E // G)
    group_score = np.sort(grouped, axis=-1)[..., -2:].sum(axis=-1)                # sum of top-2 per group
    keep = np.argsort(-group_score, axis=-1, kind="stable")[:, :kg]
    gmask = np.zeros((n, G), bool)
    np.put_along_axis(gmask, keep, True, axis=-1)
    sel_scores = np.where(np.repeat(gmask, E // G, axis=-1), biased, -np.inf)      # -inf, not 0 (doc 5.1)
    chosen = np.argsort(-sel_scores, axis=-1, kind="stable")[:, :k]                # [n, k]
    w = np.take_along_axis(scores, chosen, axis=-1)
    if cfg.get("norm_topk_prob", True):
        w = w / w.sum(axis=-1, keepdims=True)
    w = w * cfg.get("routed_scaling_factor", 1.0)
    out = np.zeros_like(x)
    for e in np.unique(chosen):
        rows, slot = np.nonzero(chosen == e)
        out[rows] += w[rows, slot][:, None] * swiglu(ck, f"{p}experts.{e}.", x[rows])
    if cfg.get("n_shared_experts"):
        out += swiglu(ck, p + "shared_experts.", x)
    return out


def block(ck, cfg, layer, h, cos, sin, scale):
    """Pre-norm decoder block (doc 2.1): attention then dense MLP or MoE, each with a residual."""
    p, eps = f"model.layers.{layer}.", cfg["rms_norm_eps"]
    h = h + mla(ck, cfg, p + "self_attn.", rms_norm(h, ck.get(p + "input_layernorm.weight"), eps), cos, sin, scale)
    x = rms_norm(h, ck.get(p + "post_attention_layernorm.weight"), eps)
    is_moe = cfg.get("n_routed_experts") and layer >= cfg.get("first_k_dense_replace", 0) \
        and layer % cfg.get("moe_layer_freq", 1) == 0
    return h + (moe(ck, cfg, p + "mlp.", x) if is_moe else swiglu(ck, p + "mlp.", x))


def forward(ck, cfg, ids):
    """Main model: returns (hidden after model.norm [n, d], logits [n, vocab])."""
    cos, sin, scale = rope_tables(cfg, len(ids))
    h = ck.get("model.embed_tokens.weight")[np.asarray(ids)]
    for layer in range(cfg["num_hidden_layers"]):
        h = block(ck, cfg, layer, h, cos, sin, scale)
    h = rms_norm(h, ck.get("model.norm.weight"), cfg["rms_norm_eps"])
    return h, h @ ck.get("lm_head.weight").T


def mtp(ck, cfg, ids, hidden):
    """MTP module 0 (doc 2.8): x_i = eh_proj [enorm(E_mtp[ids[i+1]]); hnorm(hidden[i])], i = 0..n-2,
    one causal decoder block at positions 0..n-2, then shared_head.head(shared_head.norm(.))."""
    L, eps, m = cfg["num_hidden_layers"], cfg["rms_norm_eps"], len(ids) - 1
    p = f"model.layers.{L}."
    if p + "eh_proj.weight" not in ck:
        raise SystemExit(f"checkpoint has no MTP module ({p}eh_proj.weight missing)")
    if m < 1:
        return np.zeros((0, cfg["vocab_size"]))
    emb_name = p + "embed_tokens.weight" if p + "embed_tokens.weight" in ck else "model.embed_tokens.weight"
    head_name = p + "shared_head.head.weight" if p + "shared_head.head.weight" in ck else "lm_head.weight"
    e = rms_norm(ck.get(emb_name)[np.asarray(ids[1:])], ck.get(p + "enorm.weight"), eps)
    hh = rms_norm(hidden[:m], ck.get(p + "hnorm.weight"), eps)
    x = np.concatenate([e, hh], axis=-1) @ ck.get(p + "eh_proj.weight").T
    cos, sin, scale = rope_tables(cfg, m)
    x = block(ck, cfg, L, x, cos, sin, scale)
    return rms_norm(x, ck.get(p + "shared_head.norm.weight"), eps) @ ck.get(head_name).T


# ---------------------------------------------------------------- driver

def load(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    arch = " ".join(cfg.get("architectures", []))
    if "V32" in arch or cfg.get("model_type") == "deepseek_v32" or "index_topk" in cfg:
        raise SystemExit("DeepSeek-V3.2 config (sparse-attention indexer): not implemented by this reference")
    if cfg.get("scoring_func", "sigmoid") != "sigmoid" or cfg.get("topk_method", "noaux_tc") != "noaux_tc":
        raise SystemExit("only sigmoid scoring with noaux_tc routing (DeepSeek-V3) is implemented")
    cfg.setdefault("rms_norm_eps", 1e-6)
    return cfg, Checkpoint(model_dir)


def golden_check(ck, cfg, path):
    """Prompt last-position logits and teacher-forced greedy-step logits against the golden."""
    g, worst = json.load(open(path)), 0.0
    for c in g["cases"]:
        prompt, toks = c["prompt"], c["greedy"]["tokens"]
        _, logits = forward(ck, cfg, prompt + toks[:-1])
        n = len(prompt)
        d_last = float(np.max(np.abs(logits[n - 1] - np.asarray(c["last_logits"]))))
        d_greedy = max(float(np.max(np.abs(logits[n - 1 + s] - np.asarray(gl))))
                       for s, gl in enumerate(c["greedy"]["logits"]))
        am = float(np.mean(np.argmax(logits[:n], axis=-1) == np.asarray(c["prompt_argmax"])))
        print(f"golden {c['name']:>12} n={n:4d} max|diff| last={d_last:.3e} greedy={d_greedy:.3e} "
              f"prompt-argmax agreement={am:.3f}", file=sys.stderr)
        worst = max(worst, d_last, d_greedy)
    ok = worst <= GOLDEN_TOL
    print(f"golden worst max|diff| {worst:.3e} (tolerance {GOLDEN_TOL:g}): {'ok' if ok else 'FAIL'}",
          file=sys.stderr)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", help="comma-separated prompt token ids")
    ap.add_argument("--golden")
    ap.add_argument("--compare")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    cfg, ck = load(a.model)
    if a.golden and not golden_check(ck, cfg, a.golden):
        return 1
    if not a.ids:
        if a.golden:
            return 0
        ap.error("--ids is required unless --golden is given")
    ids = [int(t) for t in a.ids.split(",") if t.strip()]
    hidden, logits = forward(ck, cfg, ids)
    mtp_logits = mtp(ck, cfg, ids, hidden)
    if not a.compare:
        json.dump({"argmax": [int(i) for i in np.argmax(logits, axis=-1)],
                   "last_logits": logits[-1].tolist(), "mtp_logits": mtp_logits.tolist()}, sys.stdout)
        print()
        return 0
    other = json.load(open(a.compare))
    if "mtp_logits" not in other:
        print(f"{a.compare} has no mtp_logits (was dsserve run with --speculative-algorithm nextn?)",
              file=sys.stderr)
        return 2
    theirs = np.asarray(other["mtp_logits"], dtype=np.float64).reshape(-1, logits.shape[1])
    if theirs.shape != mtp_logits.shape:
        print(f"mtp_logits shape {theirs.shape}, expected {mtp_logits.shape}", file=sys.stderr)
        return 1
    d_last = float(np.max(np.abs(np.asarray(other["last_logits"]) - logits[-1])))
    d_mtp = float(np.max(np.abs(theirs - mtp_logits))) if mtp_logits.size else 0.0
    print(f"last_logits: max|diff| {d_last:.3e}  (max|logit| {np.max(np.abs(logits[-1])):.3f})")
    if mtp_logits.size:
        am = float(np.mean(np.argmax(theirs, -1) == np.argmax(mtp_logits, -1)))
        print(f"mtp_logits:  max|diff| {d_mtp:.3e}  (max|logit| {np.max(np.abs(mtp_logits)):.3f}, "
              f"{mtp_logits.shape[0]} rows, argmax agreement {am:.3f})")
    ok = d_last <= a.tol and d_mtp <= a.tol
    print(f"tolerance {a.tol:g}: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
