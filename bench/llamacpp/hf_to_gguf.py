#!/usr/bin/python3
"""Converts a DeepSeek-V3-architecture Hugging Face checkpoint (FP8 128x128 block-scaled, BF16 or
F32 tensors, as `dsserve init-model` writes them) into a GGUF file for llama.cpp's `deepseek2`
architecture, without torch or transformers: numpy plus the gguf-py package of a llama.cpp
checkout (PYTHONPATH=<llama.cpp>/gguf-py).

It reproduces what llama.cpp's convert_hf_to_gguf.py (DeepseekV2Model) writes for such a
checkpoint, for benchmarking against llama.cpp on the same weights (bench/llamacpp/README.md):
  - FP8 weights are dequantised (weight * weight_scale_inv per 128x128 block) to f32 first;
  - routed experts are stacked per layer ([n_experts, rows, cols]);
  - kv_b_proj is split per head into attn_k_b (W_UK, transposed) and attn_v_b (W_UV) (MLA);
  - MTP layers (index >= num_hidden_layers) are skipped;
  - 1-D tensors, norms, the router (ffn_gate_inp) and the expert bias (exp_probs_b) stay F32,
    every other tensor takes --outtype (q8_0 | bf16 | f16 | f32);
  - the tokenizer is the byte-level BPE of tokenizer.json (gpt2 model, pre "deepseek-v3").

Usage: hf_to_gguf.py MODEL_DIR OUT.gguf [--outtype q8_0] [--tokenizer-dir DIR]
"""
import argparse
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("hf_to_gguf.py: needs gguf-py: PYTHONPATH=<llama.cpp>/gguf-py")


def fp8_e4m3fn_table() -> np.ndarray:
    """float32 value of each of the 256 float8_e4m3fn codes (0x7F / 0xFF are NaN)."""
    t = np.zeros(256, dtype=np.float32)
    for v in range(256):
        s, e, m = v >> 7, (v >> 3) & 0xF, v & 7
        if e == 0xF and m == 7:
            x = float("nan")
        elif e == 0:
            x = (m / 8.0) * 2.0 ** -6
        else:
            x = (1.0 + m / 8.0) * 2.0 ** (e - 7)
        t[v] = -x if s else x
    return t


FP8 = fp8_e4m3fn_table()


class Checkpoint:
    """Tensors of the *.safetensors files of a directory, read lazily as float32."""

    def __init__(self, d: Path):
        self.where = {}  # name -> (file, dtype, shape, byte offset, byte length)
        for f in sorted(d.glob("*.safetensors")):
            with open(f, "rb") as fh:
                n = struct.unpack("<Q", fh.read(8))[0]
                header = json.loads(fh.read(n))
            for name, v in header.items():
                if name == "__metadata__":
                    continue
                b, e = v["data_offsets"]
                self.where[name] = (f, v["dtype"], v["shape"], 8 + n + b, e - b)

    def raw(self, name: str) -> np.ndarray:
        f, dtype, shape, off, n = self.where[name]
        np_dtype = {"F32": np.float32, "BF16": np.uint16, "F16": np.float16,
                    "F8_E4M3": np.uint8}[dtype]
        a = np.fromfile(f, dtype=np_dtype, count=n // np.dtype(np_dtype).itemsize, offset=off)
        return a.reshape(shape)

    def f32(self, name: str) -> np.ndarray:
        """The tensor as float32, FP8 dequantised with its weight_scale_inv block grid."""
        dtype = self.where[name][1]
        a = self.raw(name)
        if dtype == "BF16":
            return (a.astype(np.uint32) << 16).view(np.float32)
        if dtype == "F16":
            return a.astype(np.float32)
        if dtype == "F8_E4M3":
            w = FP8[a]
            s = self.f32(name.removesuffix(".weight") + ".weight_scale_inv")
            rows, cols = w.shape
            grid = np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[:rows, :cols]
            return w * grid
        return a.astype(np.float32, copy=False)


def write_vocab(w, tok_dir: Path, vocab_size: int):
    """gpt2-style BPE vocabulary as convert_hf_to_gguf.py's _set_vocab_gpt2 writes it."""
    tj = json.load(open(tok_dir / "tokenizer.json", encoding="utf-8"))
    reverse = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    for i, a in added.items():
        reverse[i] = a["content"]
    assert max(reverse) < vocab_size, (max(reverse), vocab_size)
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        t = reverse[i]
        if i in added:
            looks_special = (t.startswith("<｜") and t.endswith("｜>")) or \
                (t.startswith("<|") and t.endswith("|>"))
            types.append(gguf.TokenType.CONTROL if added[i]["special"] or looks_special
                         else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(t)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("deepseek-v3")
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(tok_dir, load_merges=True).add_to_gguf(w)


def write_hparams(w, c: dict, ftype):
    """The keys DeepseekV2Model.set_gguf_parameters (+ TextModel's) writes for deepseek_v3."""
    w.add_block_count(c["num_hidden_layers"])
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(1)  # MLA runs as MQA over the latent
    rs = c.get("rope_scaling") or {}
    if rs.get("type", rs.get("rope_type")) == "yarn" and rs.get("factor"):
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rs["factor"])
        w.add_rope_scaling_orig_ctx_len(rs["original_max_position_embeddings"])
        if "beta_fast" in rs:
            w.add_rope_scaling_yarn_beta_fast(rs["beta_fast"])
        if "beta_slow" in rs:
            w.add_rope_scaling_yarn_beta_slow(rs["beta_slow"])
    w.add_rope_freq_base(c.get("rope_theta", 10000.0))
    w.add_layer_norm_rms_eps(c.get("rms_norm_eps", 1e-6))
    w.add_expert_count(c["n_routed_experts"])
    w.add_expert_used_count(c["num_experts_per_tok"])
    if "n_group" in c:
        w.add_expert_group_count(c["n_group"])
    if "topk_group" in c:
        w.add_expert_group_used_count(c["topk_group"])
    gating = {"sigmoid": gguf.ExpertGatingFuncType.SIGMOID,
              "softmax": gguf.ExpertGatingFuncType.SOFTMAX}[c.get("scoring_func", "softmax")]
    w.add_expert_gating_func(gating)
    w.add_file_type(ftype)
    w.add_leading_dense_block_count(c.get("first_k_dense_replace", 0))
    w.add_vocab_size(c["vocab_size"])
    if c.get("q_lora_rank"):
        w.add_q_lora_rank(c["q_lora_rank"])
    kv = c["kv_lora_rank"]
    w.add_kv_lora_rank(kv)
    w.add_key_length(kv + c["qk_rope_head_dim"])
    w.add_value_length(kv)
    w.add_key_length_mla(c["qk_nope_head_dim"] + c["qk_rope_head_dim"])
    w.add_value_length_mla(c["v_head_dim"])
    w.add_expert_feed_forward_length(c["moe_intermediate_size"])
    w.add_expert_shared_count(c.get("n_shared_experts", 0))
    if "routed_scaling_factor" in c:
        w.add_expert_weights_scale(c["routed_scaling_factor"])
    if c.get("norm_topk_prob"):
        w.add_expert_weights_norm(True)
    w.add_rope_dimension_count(c["qk_rope_head_dim"])
    if "mscale_all_dim" in rs:
        w.add_rope_scaling_yarn_log_mul(0.1 * rs["mscale_all_dim"])


def hf_tensors(ck: Checkpoint, c: dict):
    """(HF-style name, float32 array) in llama.cpp's layout: experts stacked, kv_b split."""
    n_layers, n_exp = c["num_hidden_layers"], c["n_routed_experts"]
    H, d_nope, d_v = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"]
    for name in ck.where:
        if name.endswith(".weight_scale_inv"):
            continue
        m = re.match(r"model\.layers\.(\d+)\.", name)
        bid = int(m.group(1)) if m else None
        if bid is not None and bid >= n_layers:
            continue  # MTP
        if ".mlp.experts." in name:
            if not name.endswith(".experts.0.down_proj.weight"):
                continue  # stacked once per layer, below
            for proj in ("down_proj", "gate_proj", "up_proj"):
                yield (f"model.layers.{bid}.mlp.experts.{proj}.weight",
                       np.stack([ck.f32(f"model.layers.{bid}.mlp.experts.{e}.{proj}.weight")
                                 for e in range(n_exp)]))
            continue
        a = ck.f32(name)
        if name.endswith("kv_b_proj.weight"):
            kv_b = a.reshape(H, d_nope + d_v, a.shape[-1])
            k_b = np.ascontiguousarray(kv_b[:, :d_nope, :].transpose(0, 2, 1))
            v_b = np.ascontiguousarray(kv_b[:, d_nope:, :])
            yield name.replace("kv_b_proj", "k_b_proj"), k_b
            yield name.replace("kv_b_proj", "v_b_proj"), v_b
            continue
        if c.get("tie_word_embeddings") and name == "lm_head.weight":
            continue
        if name.endswith("e_score_correction_bias"):
            name = name.replace("e_score_correction_bias", "e_score_correction.bias")
        yield name, a


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model_dir", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--outtype", default="q8_0", choices=["q8_0", "bf16", "f16", "f32"])
    p.add_argument("--tokenizer-dir", type=Path, default=None,
                   help="directory of tokenizer.json + tokenizer_config.json (default: MODEL_DIR)")
    a = p.parse_args()
    c = json.load(open(a.model_dir / "config.json"))
    qt = gguf.GGMLQuantizationType
    out_q, ftype = {"q8_0": (qt.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
                    "bf16": (qt.BF16, gguf.LlamaFileType.MOSTLY_BF16),
                    "f16": (qt.F16, gguf.LlamaFileType.MOSTLY_F16),
                    "f32": (qt.F32, gguf.LlamaFileType.ALL_F32)}[a.outtype]
    arch = gguf.MODEL_ARCH.DEEPSEEK2
    names = gguf.get_tensor_name_map(arch, c["num_hidden_layers"])
    w = gguf.GGUFWriter(a.out, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(a.model_dir.name)
    write_hparams(w, c, ftype)
    write_vocab(w, a.tokenizer_dir or a.model_dir, c["vocab_size"])
    ck = Checkpoint(a.model_dir)
    for name, data in hf_tensors(ck, c):
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            sys.exit(f"hf_to_gguf.py: cannot map tensor {name!r}")
        ttype = names.get_type(name, try_suffixes=(".weight", ".bias"))
        keep_f32 = (data.ndim <= 1 or new.endswith("_norm.weight") or not new.endswith(".weight")
                    or ttype == gguf.MODEL_TENSOR.FFN_GATE_INP)
        q = qt.F32 if keep_f32 else out_q
        w.add_tensor(new, gguf.quants.quantize(data, q), raw_dtype=q)
        print(f"{new:32s} {q.name:5s} {list(reversed(data.shape))}", file=sys.stderr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"hf_to_gguf.py: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
