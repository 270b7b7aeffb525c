#!/usr/bin/env python3
"""Real training steps on one GPU for a grid of Hugging Face models, beside memfit's estimates.

    python3 tools/validate/cuda_grid.py --dry-run              # any machine: plan, memfit accepts every
                                                                # configuration, parameter counts exact
    python3 tools/validate/cuda_grid.py                        # on a GPU: measure the grid (< 8 min)
    python3 tools/validate/cuda_grid.py --reuse out/cuda_grid.json   # memfit columns again, no GPU
    options: --only NAME[,NAME|SUBSTRING] --list --out-dir DIR --memfit BIN --no-memfit --gpu ID
             --time-budget-s S --cpu-smoke (tiny models, the real step loop on the CPU)

Every configuration builds its model with `AutoModelForCausalLM.from_config` (no weights are
downloaded, ever) directly on the GPU in the precision's dtype, wraps it in PEFT LoRA where asked
(QLoRA through bitsandbytes and FlashAttention-2 only where those packages import; otherwise the
configuration is reported as skipped), enables Hugging Face's activation checkpointing where asked,
and runs three training steps the way transformers' Trainer + accelerate do (forward with labels
under autocast where the recipe has it, the outputs dropped before backward, backward,
AdamW.step(), zero_grad(set_to_none=True)). The first step creates AdamW's states; the last one is
recorded phase by phase: torch.cuda.max_memory_allocated() / max_memory_reserved() of forward,
backward and the optimizer step (reset_peak_memory_stats between phases), memory_allocated() at
each boundary, the step's overall peaks, and memory_stats()'s segment counts.

For every configuration the memfit configuration that describes it (model shape, training.framework
"hf" and the knobs the code exercises, precision, attention, checkpointing, finetune, hardware.gpu
from the detected card) runs through `memfit --batch`; out/cuda_grid.json holds the measurements,
memfit's numbers beside them and the relative errors, out/cuda_grid.md a summary.

Exit status: 0 when every configuration ran, was skipped for a stated reason or ran out of memory;
1 on a harness error (an exception in a configuration, memfit refusing a configuration or naming an
unknown field, and in --dry-run a parameter count that differs from memfit's); 2 usage errors.
Large estimate errors never change the exit status: they are the result.

Standard library at import time; torch, transformers, peft (and accelerate) are imported when a
model is built, so the pure helpers (GPU names, the plan, the report) run under any Python 3.
"""

import argparse
import contextlib
import gc
import importlib
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "out")
COUNTS_FIXTURE = os.path.join(HERE, "fixtures", "cuda_grid_counts.json")
DEFAULT_GPU = "h100-sxm-80gb"   # hardware.gpu when no card is detected (--dry-run, --cpu-smoke)
DEFAULT_TIME_BUDGET_S = 450     # a configuration that would end past this is skipped (issue: < 8 min)
GIB = 1024 ** 3

# --------------------------------------------------------------------------- model shapes
# Sizes chosen so that each step holds hundreds of MB to a few GB beside ~40 MB of cuBLAS
# workspaces, the largest configuration stays under ~35 GB (an 80 GB card has room to spare),
# and the whole grid runs in ~2-4 minutes on an H100/H200 (estimate_seconds, printed by --dry-run).
MODELS = {
    # Llama-style: GQA 16 q heads / 4 kv heads, SwiGLU, RMSNorm, rotary, untied head (~492 M)
    "llama": dict(model_type="llama", vocab_size=32000, hidden_size=2048, num_hidden_layers=8,
                  num_attention_heads=16, num_key_value_heads=4, intermediate_size=5632,
                  max_position_embeddings=4096, tie_word_embeddings=False),
    # Mistral-style: 32 heads of 64, 8 kv heads, full attention (sliding_window None) (~486 M)
    "mistral": dict(model_type="mistral", vocab_size=32768, hidden_size=2048, num_hidden_layers=6,
                    num_attention_heads=32, num_key_value_heads=8, intermediate_size=7168,
                    max_position_embeddings=4096, tie_word_embeddings=False),
    # Qwen2-style: q/k/v biases, 12 heads of 128, 2 kv heads, tied 152k vocabulary (~608 M; the loss
    # dominates: B·T·V logits)
    "qwen2": dict(model_type="qwen2", vocab_size=151936, hidden_size=1536, num_hidden_layers=8,
                  num_attention_heads=12, num_key_value_heads=2, intermediate_size=8960,
                  max_position_embeddings=4096, tie_word_embeddings=True),
    # GPT-2-style: learned positions, LayerNorm, fused c_attn, gelu_new, dropout 0.1, tied (~207 M)
    "gpt2": dict(model_type="gpt2", vocab_size=50257, hidden_size=1024, num_hidden_layers=12,
                 num_attention_heads=16, num_key_value_heads=16, intermediate_size=4096,
                 max_position_embeddings=2048, tie_word_embeddings=True),
    # Mixtral-style MoE: 8 experts, top-2, GQA (~353 M total, ~133 M active per token)
    "mixtral": dict(model_type="mixtral", vocab_size=32000, hidden_size=1024, num_hidden_layers=4,
                    num_attention_heads=16, num_key_value_heads=4, intermediate_size=3584,
                    max_position_embeddings=4096, tie_word_embeddings=False, num_experts=8,
                    num_experts_per_tok=2),
    # DeepSeek-V3-style: multi-head latent attention (q through a rank-384 latent, k/v through a
    # rank-256 latent and a shared 32-wide rotary key; q/k head 64 + 32, v head 64), one dense layer
    # then MoE layers of 8 routed experts (top 2) and one shared expert (~300 M)
    "deepseek_v3": dict(model_type="deepseek_v3", vocab_size=32000, hidden_size=1024, num_hidden_layers=4,
                        num_attention_heads=16, num_key_value_heads=16, intermediate_size=2816,
                        max_position_embeddings=4096, tie_word_embeddings=False, num_experts=8,
                        num_experts_per_tok=2, moe_intermediate_size=704, num_shared_experts=1,
                        first_k_dense_replace=1, q_lora_rank=384, kv_lora_rank=256, qk_rope_head_dim=32,
                        qk_nope_head_dim=64, v_head_dim=64),
    # gpt-oss-style: biases everywhere, a learned sink per head, 8 experts (top 2) with biases and the
    # clamped SwiGLU, no SDPA path (eager or flash only) (~400 M)
    "gpt_oss": dict(model_type="gpt_oss", vocab_size=32000, hidden_size=1024, num_hidden_layers=4,
                    num_attention_heads=16, num_key_value_heads=4, intermediate_size=1024,
                    max_position_embeddings=4096, tie_word_embeddings=False, num_experts=8,
                    num_experts_per_tok=2, head_dim=64),
}

# --cpu-smoke: the same families shrunk so the real step loop runs on a CPU in a second or two.
TINY = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=256)
TINY_KV = {"llama": 2, "mistral": 2, "qwen2": 2, "gpt2": 4, "mixtral": 2, "deepseek_v3": 4, "gpt_oss": 2}
TINY_BATCH = (2, 32)


def model_dims(family, tiny=False):
    m = dict(MODELS[family])
    if tiny:
        m.update(TINY)
        m["num_key_value_heads"] = TINY_KV[family]
        if family in ("mixtral", "deepseek_v3", "gpt_oss"):
            m["num_experts"] = 4
        if family == "deepseek_v3":
            m.update(moe_intermediate_size=64, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8,
                     qk_nope_head_dim=16, v_head_dim=16)
        if family == "gpt_oss":
            m["head_dim"] = 16
    return m


# --------------------------------------------------------------------------- the grid
LORA_TARGETS = {
    # PEFT target_modules -> memfit lora_targets
    "qv": (["q_proj", "v_proj"], ["q", "v"]),
    "all": ("all-linear", ["q", "k", "v", "o", "gate", "up", "down"]),   # PEFT: every Linear but the head
}


def case(family, precision, attention, batch, seq, *, ckpt=False, lora=None, fused=False, dropout=None,
         trl=False, note=""):
    """One configuration. lora: dict(r=, targets='qv'|'all', dropout=0.0, bits=16|4, double_quant=False,
    prepare=False: PEFT's prepare_model_for_kbit_training on the 4-bit model)."""
    if dropout is None:
        dropout = 0.1 if family == "gpt2" else 0.0     # GPT-2's defaults; Llama's attention_dropout 0
    c = dict(family=family, precision=precision, attention=attention, batch=batch, seq=seq,
             checkpointing=bool(ckpt), optimizer_impl="fused" if fused else "foreach", dropout=dropout,
             lora=lora, trl=trl, note=note)
    parts = [family, precision, {"flash_attention_2": "fa2"}.get(attention, attention), "b%dt%d" % (batch, seq)]
    if lora:
        parts.append("%slora%d%s" % ("q" if lora.get("bits", 16) == 4 else "", lora["r"], lora["targets"]))
        if lora.get("dropout"):
            parts.append("ldrop%g" % lora["dropout"])
        if lora.get("double_quant"):
            parts.append("dq")
        if lora.get("prepare"):
            parts.append("prep")
    if ckpt:
        parts.append("ckpt")
    if trl:
        parts.append("trl")
    if fused:
        parts.append("fused")
    if family == "gpt2" and dropout == 0.0:
        parts.append("drop0")
    c["name"] = "-".join(parts)
    c["requires"] = []
    if attention == "flash_attention_2":
        c["requires"].append("flash_attn")
    if lora and lora.get("bits", 16) == 4:
        c["requires"].append("bitsandbytes")
    if trl:
        c["requires"].append("trl.trainer.sft_trainer")  # TRL, and the datasets package it imports
    return c


def grid():
    G = []
    a = G.append
    L = dict(r=8, targets="qv")
    ALL = dict(r=64, targets="all")
    # Llama-style (GQA): every precision x eager/sdpa, checkpointing, fused AdamW, batch x sequence
    for prec in ("fp32", "bf16_mixed", "bf16_autocast", "bf16"):
        for att in ("eager", "sdpa"):
            a(case("llama", prec, att, 4, 1024))
    for prec in ("fp32", "bf16_mixed", "bf16"):
        a(case("llama", prec, "sdpa", 4, 1024, ckpt=True))
    a(case("llama", "bf16_mixed", "eager", 4, 1024, ckpt=True))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, fused=True))
    a(case("llama", "bf16", "sdpa", 4, 1024, fused=True))
    a(case("llama", "bf16_mixed", "sdpa", 1, 4096))
    a(case("llama", "bf16_mixed", "sdpa", 8, 512))
    a(case("llama", "bf16_mixed", "sdpa", 16, 256))
    a(case("llama", "bf16", "sdpa", 2, 2048))
    a(case("llama", "bf16_mixed", "eager", 1, 2048))
    # LoRA on the Llama-style model (PEFT's recipe: 16-bit base, fp32 adapters, Trainer bf16=True)
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=L))
    a(case("llama", "bf16_mixed", "eager", 4, 1024, lora=L))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=dict(L, dropout=0.05)))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=ALL))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=ALL, ckpt=True))
    a(case("llama", "bf16_mixed", "sdpa", 1, 4096, lora=ALL))
    a(case("llama", "bf16", "sdpa", 4, 1024, lora=L, note="pure bf16: base and adapters bf16, no autocast"))
    a(case("llama", "fp32", "sdpa", 4, 1024, lora=L, note="fp32 base and adapters, no autocast"))
    # Mistral-style
    for prec in ("fp32", "bf16_mixed", "bf16"):
        a(case("mistral", prec, "sdpa", 4, 1024))
    a(case("mistral", "bf16_mixed", "eager", 4, 1024))
    a(case("mistral", "bf16_mixed", "sdpa", 4, 1024, lora=L))
    # Qwen2-style: biases on q/k/v, tied 152k vocabulary (logits dominate)
    a(case("qwen2", "bf16_mixed", "sdpa", 2, 2048))
    a(case("qwen2", "bf16_mixed", "eager", 2, 1024))
    a(case("qwen2", "bf16", "sdpa", 2, 2048))
    a(case("qwen2", "bf16_autocast", "sdpa", 2, 2048))
    a(case("qwen2", "bf16_mixed", "sdpa", 2, 2048, ckpt=True))
    a(case("qwen2", "bf16_mixed", "sdpa", 2, 2048, lora=ALL))
    # GPT-2-style: gelu_new, dropout 0.1 on embeddings, attention and residuals, tied
    for prec, att in (("fp32", "eager"), ("fp32", "sdpa"), ("bf16_mixed", "eager"), ("bf16_mixed", "sdpa"),
                      ("bf16_autocast", "sdpa"), ("bf16", "sdpa")):
        a(case("gpt2", prec, att, 8, 1024))
    a(case("gpt2", "bf16_mixed", "sdpa", 8, 1024, ckpt=True))
    a(case("gpt2", "bf16_mixed", "sdpa", 8, 1024, dropout=0.0))
    # Mixtral-style MoE
    a(case("mixtral", "bf16_mixed", "sdpa", 4, 1024))
    a(case("mixtral", "bf16_mixed", "eager", 4, 1024))
    a(case("mixtral", "bf16", "sdpa", 4, 1024))
    a(case("mixtral", "bf16_mixed", "sdpa", 4, 1024, ckpt=True))
    a(case("mixtral", "bf16_mixed", "sdpa", 4, 1024, lora=L))
    # LoRA on transformers 5's stacked experts: one adapter per projection folded into a merged
    # copy of the experts every forward (kept without checkpointing, rebuilt in backward with it),
    # and a 4-bit base that bitsandbytes leaves unquantised in the experts
    a(case("mixtral", "bf16_mixed", "sdpa", 4, 1024, lora=dict(r=16, targets="all")))
    a(case("mixtral", "bf16_mixed", "sdpa", 4, 1024, lora=dict(r=16, targets="all"), ckpt=True))
    # DeepSeek-V3-style MLA + MoE: SDPA's kernel with unequal q/k and v head dims (the CPU cannot
    # tell which CUDA kernel keeps what), eager, checkpointing, a long sequence. Under fp32 weights
    # only: transformers keeps the router's weight in fp32 in a 16-bit model too
    # (_keep_in_fp32_modules_strict), which memfit does not model (a few bytes per expert and
    # hidden unit: 0.07 % of DeepSeek-V3's parameter bytes).
    a(case("deepseek_v3", "bf16_mixed", "sdpa", 4, 1024))
    a(case("deepseek_v3", "bf16_mixed", "eager", 4, 1024))
    a(case("deepseek_v3", "bf16_mixed", "sdpa", 1, 4096))
    a(case("deepseek_v3", "bf16_mixed", "sdpa", 4, 1024, ckpt=True))
    # gpt-oss-style: sinks and the clamped SwiGLU experts, eager attention (its default)
    a(case("gpt_oss", "bf16_mixed", "eager", 4, 1024))
    a(case("gpt_oss", "bf16", "eager", 4, 1024))
    a(case("gpt_oss", "bf16_mixed", "eager", 4, 1024, ckpt=True))
    a(case("gpt_oss", "bf16_mixed", "eager", 4, 1024, lora=L))
    # Optional packages, last: FlashAttention-2 (flash_attn) and QLoRA (bitsandbytes)
    a(case("llama", "bf16_mixed", "flash_attention_2", 4, 1024))
    a(case("llama", "bf16", "flash_attention_2", 4, 1024))
    a(case("mistral", "bf16_mixed", "flash_attention_2", 4, 1024, ckpt=True))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=dict(r=8, targets="qv", bits=4)))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=dict(r=64, targets="all", bits=4, double_quant=True)))
    a(case("mixtral", "bf16_mixed", "sdpa", 4, 1024, lora=dict(r=16, targets="all", bits=4), ckpt=True))
    # prepare_model_for_kbit_training: every unquantised weight in fp32, so the stream is fp32 and
    # bitsandbytes' linears (which return their input's dtype) give the MLP fp32 intermediates
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=dict(r=8, targets="all", bits=4, prepare=True)))
    # TRL's SFTTrainer loss (chunked_nll, its default from TRL 1.7): the head and the cross-entropy
    # 256 tokens at a time under checkpointing; full fine-tuning and LoRA, TRL's default checkpointing
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, ckpt=True, trl=True))
    a(case("llama", "bf16_mixed", "sdpa", 4, 1024, lora=L, ckpt=True, trl=True))
    names = [c["name"] for c in G]
    assert len(names) == len(set(names)), "duplicate configuration names"
    return G


def axis_counts(cases):
    """How many configurations exercise each value of each axis."""
    out = {}

    def inc(axis, value):
        out.setdefault(axis, {})
        out[axis][value] = out[axis].get(value, 0) + 1
    for c in cases:
        inc("family", c["family"])
        inc("precision", c["precision"])
        inc("attention", c["attention"])
        lo = c["lora"]
        inc("finetune", "full" if not lo else ("qlora" if lo.get("bits", 16) == 4 else "lora") +
            " r%d %s" % (lo["r"], lo["targets"]))
        inc("checkpointing", "full" if c["checkpointing"] else "none")
        inc("batch x seq", "%dx%d" % (c["batch"], c["seq"]))
        inc("optimizer", "adamw " + c["optimizer_impl"])
        inc("dropout", "%g" % c["dropout"])
    return out


# --------------------------------------------------------------------------- run-time estimate
# Effective throughputs for these mid-sized steps (not peaks): H100/H200-class and A100-class.
THROUGHPUT = {
    "h100": {"bf16": 250e12, "fp32": 25e12},   # fp32 matmuls without TF32 (PyTorch's default)
    "a100": {"bf16": 140e12, "fp32": 13e12},
}
FIXED_SECONDS = 2.5       # per configuration: from_config on the GPU, PEFT, empty_cache, bookkeeping
STEP_OVERHEAD_S = 0.08    # per step: Python and kernel launches (more for the MoE expert loop)
QLORA_EXTRA_S = 12.0      # save_pretrained of the random model, then a quantised from_pretrained
STARTUP_S = 20.0          # once: importing torch + transformers, CUDA initialisation, the warm-up


def step_flops(c, tiny=False):
    """Matmul FLOPs of one training step (forward 2·N·tokens, backward twice that; attention
    scores; checkpointing recomputes the blocks' forward; a frozen base skips weight gradients)."""
    m = model_dims(c["family"], tiny)
    d, L, V = m["hidden_size"], m["num_hidden_layers"], m["vocab_size"]
    h, kv = m["num_attention_heads"], m["num_key_value_heads"]
    hd = d // h
    ff = m["intermediate_size"]
    tokens = c["batch"] * c["seq"]
    attn_proj = d * h * hd * 2 + d * kv * hd * 2
    mlp = (3 if c["family"] != "gpt2" else 2) * d * ff
    if c["family"] in ("mixtral", "gpt_oss"):
        mlp = mlp * m["num_experts_per_tok"] + d * m["num_experts"]
    if c["family"] == "deepseek_v3":   # routed experts and the shared one (the dense first layer as one more)
        mlp = 3 * d * m["moe_intermediate_size"] * (m["num_experts_per_tok"] + m["num_shared_experts"])
    block_fwd = 2 * tokens * (attn_proj + mlp) + 4 * c["batch"] * c["seq"] ** 2 * h * hd
    fwd = L * block_fwd + 2 * tokens * d * V
    backward = 2 * fwd if not c["lora"] else fwd * 1.1   # frozen weights: input gradients only
    total = fwd + backward
    if c["checkpointing"]:
        total += L * block_fwd
    return total


def estimate_seconds(c, gpu="h100", steps=3):
    kind = "fp32" if c["precision"] == "fp32" else "bf16"
    t = FIXED_SECONDS + steps * (step_flops(c) / THROUGHPUT[gpu][kind] + STEP_OVERHEAD_S)
    if c["family"] == "mixtral":
        t += steps * 0.15    # the expert loop: one host sync and small kernels per expert and layer
    if c["lora"] and c["lora"].get("bits", 16) == 4:
        t += QLORA_EXTRA_S
    return t


# --------------------------------------------------------------------------- GPU names -> memfit ids
# (substring patterns of torch.cuda.get_device_name, lower case, checked in order) -> memfit GPU id.
# Names seen from the driver: "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200",
# "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA L40S",
# "NVIDIA A10G", "NVIDIA L4", "Tesla T4", "Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 4090", ...
GPU_PATTERNS = [
    (("b200",), "b200-180gb"),
    (("h200",), "h200-141gb"),
    (("h100", "pcie"), "h100-pcie-80gb"),
    (("h100",), "h100-sxm-80gb"),
    (("a100", "40gb"), "a100-40gb"),
    (("a100",), None),                    # by memory: 40 or 80 GB
    (("l40s",), "l40s-48gb"),
    (("a10g",), "a10g-24gb"),
    (("rtx a6000",), "rtx-a6000-48gb"),
    (("rtx 4090",), "rtx-4090-24gb"),
    (("rtx 4080",), "rtx-4080-16gb"),
    (("rtx 3090",), "rtx-3090-24gb"),
    (("v100",), None),                    # by memory: 16 or 32 GB
    (("t4",), "t4-16gb"),
    (("l4",), "l4-24gb"),
]


def gpu_id_for(name, total_bytes=None, table=None):
    """memfit's GPU id for a CUDA device name; unknown names go to the table's entry of nearest
    memory (table: [(id, memory_bytes)], from `memfit --list-gpus`), else DEFAULT_GPU."""
    low = (name or "").lower()
    for keys, gid in GPU_PATTERNS:
        if all(k in low for k in keys):
            if gid:
                return gid
            break
    if total_bytes and table:
        family = [t for t in table if any(k in t[0] for k in low.replace("-", " ").split() if len(k) > 2)]
        pool = family or table
        return min(pool, key=lambda t: abs(t[1] - total_bytes))[0]
    return DEFAULT_GPU


def parse_list_gpus(text):
    """`memfit --list-gpus` lines -> [(id, bytes)]."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        # id, name words, "<memory> GiB", then (newer builds) peaks and a price: the first "GiB" token.
        if "GiB" in parts[2:]:
            at = parts.index("GiB", 2)
            try:
                out.append((parts[0], int(float(parts[at - 1]) * GIB)))
            except ValueError:
                pass
    return out


# --------------------------------------------------------------------------- memfit configuration
def memfit_model(family, tiny=False):
    m = model_dims(family, tiny)
    gpt2 = family == "gpt2"
    out = {
        # every field explicit: fields left out keep the default preset's values
        "preset": "", "model_type": m["model_type"], "vocab_size": m["vocab_size"],
        "hidden_size": m["hidden_size"], "num_hidden_layers": m["num_hidden_layers"],
        "num_attention_heads": m["num_attention_heads"], "num_key_value_heads": m["num_key_value_heads"],
        "head_dim": 0, "intermediate_size": m["intermediate_size"],
        "mlp": "plain" if gpt2 else "gated", "hidden_act": "gelu_new" if gpt2 else "silu",
        "norm": "layernorm" if gpt2 else "rmsnorm", "norm_bias": gpt2,
        "position_embedding": "learned" if gpt2 else "rotary",
        "max_position_embeddings": m["max_position_embeddings"], "position_embedding_offset": 0,
        "tie_word_embeddings": m["tie_word_embeddings"], "output_head": "lm", "lm_head_bias": False,
        "attention_bias": gpt2, "qkv_bias": family == "qwen2", "mlp_bias": gpt2, "block": "sequential",
        "norms_per_block": 2, "final_norm": True, "residual_dropout": gpt2, "qk_norm": "none",
        "type_vocab_size": 0, "embedding_norm": False, "pooler": False,
        "num_experts": m.get("num_experts", 0), "num_experts_per_tok": m.get("num_experts_per_tok", 0),
        "num_shared_experts": 0,
        "moe_intermediate_size": m["intermediate_size"] if family == "mixtral" else 0,
        "shared_expert_intermediate_size": 0, "shared_expert_gate": False, "router_bias": False,
        "first_k_dense_replace": 0, "attention_type": "standard", "nominal_parameter_count": 0,
    }
    if family == "deepseek_v3":
        # DeepseekV3ForCausalLM: MLA, a dense first layer, then routed experts beside a shared expert;
        # the router's per-expert correction bias is a buffer in transformers 5 (no gradient, no
        # state), so it is not counted here
        out.update(attention_type="mla", num_key_value_heads=0, q_lora_rank=m["q_lora_rank"],
                   kv_lora_rank=m["kv_lora_rank"], qk_rope_head_dim=m["qk_rope_head_dim"],
                   qk_nope_head_dim=m["qk_nope_head_dim"], v_head_dim=m["v_head_dim"],
                   moe_intermediate_size=m["moe_intermediate_size"], num_shared_experts=m["num_shared_experts"],
                   first_k_dense_replace=m["first_k_dense_replace"], router_bias=False)
    if family == "gpt_oss":
        # GptOssForCausalLM: attention and expert biases, a sink per head, a biased router, the
        # experts' clamped SwiGLU
        out.update(head_dim=m["head_dim"], attention_bias=True, mlp_bias=True, router_bias=True,
                   attention_sinks=True, hidden_act="clamped_swiglu", moe_intermediate_size=m["intermediate_size"])
    return out


def memfit_config(c, gpu_id, tiny=False, expandable_segments=False):
    """The memfit configuration of one grid configuration, and the knobs it exercises (why)."""
    B, T = (TINY_BATCH if tiny else (c["batch"], c["seq"]))
    t = {
        "framework": "trl" if c.get("trl") else "hf", "micro_batch_size": B, "seq_len": T, "grad_accum_steps": 1,
        "precision": c["precision"], "optimizer": "adamw", "optimizer_impl": c["optimizer_impl"],
        "checkpointing": "full" if c["checkpointing"] else "none",
        "attention": {"eager": "eager", "sdpa": "sdpa", "flash_attention_2": "flash"}[c["attention"]],
        "dropout": c["dropout"],
    }
    knobs = {"framework": "transformers model classes under a Trainer-style loop (memfit's hf profile)"}
    if c["family"] == "gpt2":
        # transformers' GPT2Attention: softmax in the compute dtype then .type(value.dtype)
        # (modeling_gpt2.py eager_attention_forward); one c_attn matmul for q, k, v
        t["softmax_dtype"] = "compute"
        t["projections"] = "fused"
        knobs["softmax_dtype"] = "GPT-2 eager softmax in the compute dtype (fp32 under CUDA autocast)"
        knobs["projections"] = "GPT-2's single c_attn (Conv1D) for q, k, v"
    lo = c["lora"]
    if lo:
        _, targets = LORA_TARGETS[lo["targets"]]
        if lo["targets"] == "all" and "num_experts" in MODELS[c["family"]]:
            targets = targets + ["router"]  # all-linear reaches a mixture of experts' router too
        t["finetune"] = {"method": "lora", "lora_rank": lo["r"], "lora_targets": targets,
                         "lora_dropout": lo.get("dropout", 0.0), "base_bits": lo.get("bits", 16),
                         "prepare_kbit": bool(lo.get("prepare"))}
        if c["precision"] == "fp32":
            t["lora_base_dtype"] = "fp32"
            t["lora_adapter_dtype"] = "weights"
            knobs["lora_base_dtype"] = "base built in fp32"
        elif c["precision"] == "bf16":
            t["lora_base_dtype"] = "half"
            t["lora_adapter_dtype"] = "weights"
            knobs["lora_adapter_dtype"] = "get_peft_model(autocast_adapter_dtype=False): bf16 adapters"
        else:
            t["lora_base_dtype"] = "half"
            t["lora_adapter_dtype"] = "fp32"
            knobs["lora_adapter_dtype"] = "PEFT upcasts adapters to fp32 (autocast_adapter_dtype=True)"
            knobs["lora_base_dtype"] = "base built in bf16 (PEFT's recipe), Trainer bf16=True autocast"
    else:
        t["finetune"] = {"method": "full"}
    cfg = {"model": memfit_model(c["family"], tiny), "training": t,
           "hardware": {"gpu": gpu_id, "expandable_segments": bool(expandable_segments)}}
    return cfg, knobs


# --------------------------------------------------------------------------- building the model
def _peft_tolerating_old_torchao():
    """peft 0.21 refuses to import its LoRA layers when torchao < 0.16 is installed (its
    is_torchao_available raises); the frameworks venv has torchao 0.13 for torchtune. torchao only
    matters to peft for torchao-quantised layers, which nothing here uses: report it absent."""
    import peft  # noqa: F401
    import peft.import_utils as iu
    orig = iu.is_torchao_available
    try:
        orig()
        return
    except ImportError:
        pass
    for name, mod in list(sys.modules.items()):
        if name.startswith("peft") and getattr(mod, "is_torchao_available", None) is orig:
            mod.is_torchao_available = lambda: False


def importable(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def hf_config(c, tiny=False):
    from transformers import AutoConfig
    m = model_dims(c["family"], tiny)
    fam = c["family"]
    if fam == "gpt2":
        return AutoConfig.for_model(
            "gpt2", vocab_size=m["vocab_size"], n_embd=m["hidden_size"], n_layer=m["num_hidden_layers"],
            n_head=m["num_attention_heads"], n_inner=m["intermediate_size"],
            n_positions=m["max_position_embeddings"], activation_function="gelu_new",
            resid_pdrop=c["dropout"], embd_pdrop=c["dropout"], attn_pdrop=c["dropout"],
            tie_word_embeddings=True)
    kw = dict(vocab_size=m["vocab_size"], hidden_size=m["hidden_size"], num_hidden_layers=m["num_hidden_layers"],
              num_attention_heads=m["num_attention_heads"], num_key_value_heads=m["num_key_value_heads"],
              intermediate_size=m["intermediate_size"], max_position_embeddings=m["max_position_embeddings"],
              tie_word_embeddings=m["tie_word_embeddings"], attention_dropout=0.0)
    if fam == "mistral":
        kw["sliding_window"] = None
    if fam == "qwen2":
        kw["use_sliding_window"] = False
    if fam == "mixtral":
        kw.update(num_local_experts=m["num_experts"], num_experts_per_tok=m["num_experts_per_tok"],
                  router_jitter_noise=0.0, output_router_logits=False, sliding_window=None)
    if fam == "deepseek_v3":
        kw.update(n_routed_experts=m["num_experts"], num_experts_per_tok=m["num_experts_per_tok"],
                  moe_intermediate_size=m["moe_intermediate_size"], n_shared_experts=m["num_shared_experts"],
                  first_k_dense_replace=m["first_k_dense_replace"], q_lora_rank=m["q_lora_rank"],
                  kv_lora_rank=m["kv_lora_rank"], qk_rope_head_dim=m["qk_rope_head_dim"],
                  qk_nope_head_dim=m["qk_nope_head_dim"], v_head_dim=m["v_head_dim"], n_group=1, topk_group=1,
                  num_nextn_predict_layers=0)
    if fam == "gpt_oss":
        kw.update(num_local_experts=m["num_experts"], num_experts_per_tok=m["num_experts_per_tok"],
                  head_dim=m["head_dim"], sliding_window=128, output_router_logits=False)
        # (alternating sliding and full layers as in gpt-oss; eager attention computes every score
        # either way, so the window changes no memory)
    return AutoConfig.for_model(m["model_type"], **kw)


def weights_dtype(c):
    import torch
    if c["precision"] in ("bf16", "bf16_autocast"):
        return torch.bfloat16
    if c["lora"] and c["precision"] == "bf16_mixed":
        return torch.bfloat16     # PEFT's recipe: the frozen base loaded in bf16
    return torch.float32


def _enable_checkpointing(model):
    # transformers >= 5.2x: activation_checkpointing_enable (default use_reentrant=False);
    # older: gradient_checkpointing_enable. Both also call enable_input_require_grads.
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def build(c, device, tiny=False, quant_dir=None):
    """The model as the configuration trains it, on `device` ('cuda', 'cpu' or 'meta')."""
    import torch
    from transformers import AutoModelForCausalLM
    attn = c["attention"]
    if device == "meta" and attn == "flash_attention_2":
        attn = "sdpa"          # only the counts are used on the meta device
    cfg = hf_config(c, tiny)
    dtype = weights_dtype(c)
    lo = c["lora"]
    quantised = bool(lo and lo.get("bits", 16) == 4) and device != "meta"
    if quantised:
        model = _build_quantised(c, cfg, dtype, attn, quant_dir)
        if lo.get("prepare"):
            _peft_tolerating_old_torchao()
            from peft import prepare_model_for_kbit_training
            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    else:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=dtype)
    model.train()
    if c["checkpointing"]:
        _enable_checkpointing(model)
    if lo:
        _peft_tolerating_old_torchao()
        from peft import LoraConfig, get_peft_model
        targets, _ = LORA_TARGETS[lo["targets"]]
        lcfg = LoraConfig(r=lo["r"], lora_alpha=2 * lo["r"], target_modules=targets,
                          lora_dropout=lo.get("dropout", 0.0), task_type="CAUSAL_LM")
        # PEFT's default autocast_adapter_dtype=True upcasts bf16 adapters to fp32; the pure bf16
        # recipe keeps them in the weights' dtype
        with torch.device(device):
            model = get_peft_model(model, lcfg, autocast_adapter_dtype=c["precision"] != "bf16")
        model.train()
    if c.get("trl"):
        # SFTTrainer's loss_type "chunked_nll": the inner causal LM's forward patched
        # (trl/trainer/sft_trainer.py, _patch_chunked_ce_lm_head), as SFTTrainer.__init__ does it
        from trl.trainer.sft_trainer import _CHUNKED_LM_HEAD_CHUNK_SIZE, _patch_chunked_ce_lm_head
        target = model.get_base_model() if lo else model
        _patch_chunked_ce_lm_head(target, chunk_size=_CHUNKED_LM_HEAD_CHUNK_SIZE)
    return model


def _build_quantised(c, cfg, dtype, attn, quant_dir):
    """QLoRA: transformers quantises on load (from_pretrained), so the random model is saved to a
    local temporary folder first and loaded back with a BitsAndBytesConfig (nothing downloaded)."""
    import torch
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    lo = c["lora"]
    path = tempfile.mkdtemp(prefix="cuda_grid_qlora_", dir=quant_dir)
    with torch.device("cuda"):
        src = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=dtype)
    src.save_pretrained(path)
    del src
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
                           bnb_4bit_use_double_quant=bool(lo.get("double_quant")))
    model = AutoModelForCausalLM.from_pretrained(path, quantization_config=q, dtype=dtype,
                                                 attn_implementation=attn, device_map={"": 0})
    with contextlib.suppress(OSError):
        import shutil
        shutil.rmtree(path)
    return model


def count_parameters(model):
    """(all, trainable, bytes, trainable bytes); bitsandbytes' packed 4-bit tensors counted by the
    shape they quantise (quant_state.shape), as memfit and PEFT count them."""
    seen, n, tn, nb, tb = set(), 0, 0, 0, 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        qs = getattr(p, "quant_state", None)
        k = p.numel()
        if qs is not None and getattr(qs, "shape", None) is not None:
            k = math.prod(qs.shape)
        n += k
        nb += p.numel() * p.element_size()
        if p.requires_grad:
            tn += k
            tb += p.numel() * p.element_size()
    return n, tn, nb, tb


# --------------------------------------------------------------------------- measuring
class Probe:
    """torch.cuda's allocator statistics; on a CPU (--cpu-smoke) every number is None."""

    def __init__(self, device):
        import torch
        self.torch = torch
        self.cuda = device == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def empty_cache(self):
        if self.cuda:
            self.torch.cuda.empty_cache()

    def reset(self):
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.reset_peak_memory_stats()

    def allocated(self):
        return self.torch.cuda.memory_allocated() if self.cuda else None

    def reserved(self):
        return self.torch.cuda.memory_reserved() if self.cuda else None

    def peak(self):
        if not self.cuda:
            return {"peak_allocated_bytes": None, "peak_reserved_bytes": None, "allocated_after_bytes": None}
        self.torch.cuda.synchronize()
        return {"peak_allocated_bytes": self.torch.cuda.max_memory_allocated(),
                "peak_reserved_bytes": self.torch.cuda.max_memory_reserved(),
                "allocated_after_bytes": self.torch.cuda.memory_allocated()}

    STATS = ("segment.all.current", "segment.all.peak", "segment.large_pool.current", "segment.small_pool.current",
             "allocation.all.current", "active_bytes.all.peak", "inactive_split_bytes.all.current",
             "inactive_split_bytes.all.peak", "reserved_bytes.all.current", "reserved_bytes.all.peak",
             "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")

    def stats(self):
        if not self.cuda:
            return {}
        s = self.torch.cuda.memory_stats()
        return {k: s.get(k) for k in self.STATS}

    def device_used(self):
        if not self.cuda:
            return None
        free, total = self.torch.cuda.mem_get_info()
        return total - free


def _convert_outputs_to_fp32(forward):
    """accelerate.utils.convert_outputs_to_fp32: what Trainer + accelerate put around forward under
    mixed precision (the returned 16-bit logits get an fp32 copy); a local equivalent if accelerate is
    missing."""
    try:
        from accelerate.utils import convert_outputs_to_fp32
        return convert_outputs_to_fp32(forward), "accelerate.utils.convert_outputs_to_fp32"
    except ImportError:
        import torch

        def wrapped(*a, **k):
            out = forward(*a, **k)
            for key in list(out.keys()):
                v = out[key]
                if torch.is_tensor(v) and v.dtype in (torch.float16, torch.bfloat16):
                    out[key] = v.float()
            return out
        return wrapped, "local equivalent of accelerate's convert_outputs_to_fp32"


def run_steps(c, device, tiny=False, steps=3, quant_dir=None, probe=None):
    """Builds the configuration's model on `device` and runs `steps` training steps; returns the
    measurement record (bytes are absolute torch.cuda numbers; None on a CPU). `probe`: the
    statistics source (tests pass a stand-in)."""
    import torch
    probe = probe or Probe(device)
    rec = {"sdpa_backend": sdpa_choice(c, device, tiny)}
    torch.manual_seed(0)
    gc.collect()
    probe.empty_cache()
    probe.reset()
    rec["baseline"] = {"allocated_bytes": probe.allocated(), "reserved_bytes": probe.reserved(),
                       "device_used_bytes": probe.device_used()}
    t0 = time.time()
    model = build(c, device, tiny, quant_dir=quant_dir)
    probe.sync()
    rec["load"] = probe.peak()
    rec["build_seconds"] = round(time.time() - t0, 3)
    n, tn, nb, tb = count_parameters(model)
    rec.update(parameter_count=n, trainable_parameter_count=tn, parameter_bytes=nb, trainable_parameter_bytes=tb)
    rec["parameter_dtypes"] = sorted({str(p.dtype).replace("torch.", "") + (":trainable" if p.requires_grad else "")
                                      for p in model.parameters()})
    params = [p for p in model.parameters() if p.requires_grad]
    opt_kw = {"lr": 1e-5, "weight_decay": 0.0}
    if c["optimizer_impl"] == "fused":
        opt_kw["fused"] = True
    opt = torch.optim.AdamW(params, **opt_kw)
    rec["optimizer"] = "torch.optim.AdamW(%s)" % ", ".join("%s=%r" % kv for kv in sorted(opt_kw.items()))
    autocast = c["precision"] in ("bf16_mixed", "bf16_autocast")
    call, rec["forward_wrapper"] = (_convert_outputs_to_fp32(model.forward) if autocast else (model.forward, None))
    B, T = TINY_BATCH if tiny else (c["batch"], c["seq"])
    V = model_dims(c["family"], tiny)["vocab_size"]
    g = torch.Generator(device=device).manual_seed(1234)
    ids = torch.randint(0, V, (B, T), device=device, generator=g)
    labels = ids.clone()
    dev_type = "cuda" if device == "cuda" else "cpu"

    def ctx():
        return torch.autocast(dev_type, dtype=torch.bfloat16) if autocast else contextlib.nullcontext()

    records = []
    for i in range(steps):
        s = {}
        t1 = time.time()
        probe.reset()
        s["start_allocated_bytes"] = probe.allocated()
        with ctx():
            out = call(input_ids=ids, labels=labels)
        loss = out["loss"]
        del out                          # Trainer keeps only the loss; the logits go here
        s["forward"] = probe.peak()
        probe.reset()
        loss.backward()
        s["loss"] = float(loss.detach().float().item())
        del loss
        s["backward"] = probe.peak()
        if i == steps - 1:
            rec["gradient_bytes"] = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
        probe.reset()
        opt.step()
        s["optimizer_step"] = probe.peak()
        probe.reset()
        opt.zero_grad(set_to_none=True)
        s["zero_grad"] = {"allocated_after_bytes": probe.allocated()}
        if probe.cuda:
            s["peak_allocated_bytes"] = max(s[k]["peak_allocated_bytes"] for k in ("forward", "backward", "optimizer_step"))
            s["peak_reserved_bytes"] = max(s[k]["peak_reserved_bytes"] for k in ("forward", "backward", "optimizer_step"))
        s["memory_stats"] = probe.stats()
        probe.sync()
        s["seconds"] = round(time.time() - t1, 4)
        records.append(s)
    rec["steps"] = records
    last = records[-1]
    rec["step"] = last
    rec["peak_allocated_bytes"] = last.get("peak_allocated_bytes")
    rec["peak_reserved_bytes"] = last.get("peak_reserved_bytes")
    rec["device_used_bytes"] = probe.device_used()
    st_bytes, step_bytes = 0, 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v):
                if v.dim() >= 1:
                    st_bytes += v.numel() * v.element_size()
                elif v.device.type != "cpu":
                    step_bytes += v.numel() * v.element_size()
    rec["optimizer_state_bytes"] = st_bytes
    rec["optimizer_step_tensor_bytes_on_device"] = step_bytes
    rec["use_cache"] = bool(getattr(getattr(model, "config", None), "use_cache", False))
    del model, opt, params, ids, labels, call
    gc.collect()
    probe.empty_cache()
    if probe.cuda:
        rec["after_cleanup_allocated_bytes"] = probe.allocated()
        rec["leaked_bytes"] = rec["after_cleanup_allocated_bytes"] - rec["baseline"]["allocated_bytes"]
    rec["seconds"] = round(time.time() - t0, 3)
    return rec


def _sdp_backend_name(i):
    import torch
    with contextlib.suppress(Exception):
        for name, b in torch.nn.attention.SDPBackend.__members__.items():
            if int(b) == i:
                return name
    return str(i)


def sdpa_choice(c, device, tiny=False):
    """The kernel torch's SDPA dispatcher picks for this configuration's attention call (as
    transformers makes it: causal, no mask, enable_gqa when kv heads < heads; bf16 under autocast,
    which casts SDPA's inputs): FLASH_ATTENTION, EFFICIENT_ATTENTION, CUDNN_ATTENTION or MATH."""
    import torch
    if device != "cuda" or c["attention"] != "sdpa":
        return None
    m = model_dims(c["family"], tiny)
    h, kv = m["num_attention_heads"], m["num_key_value_heads"]
    hd = m["hidden_size"] // h
    T = TINY_BATCH[1] if tiny else c["seq"]
    dt = torch.float32 if c["precision"] == "fp32" else torch.bfloat16
    try:
        q = torch.empty(1, h, T, hd, device="cuda", dtype=dt)
        k = torch.empty(1, kv, T, hd, device="cuda", dtype=dt)
        kw = {"dropout_p": c["dropout"], "is_causal": True}
        if kv != h:
            kw["enable_gqa"] = True
        choice = torch._fused_sdp_choice(q, k, k, **kw)
        del q, k
        return _sdp_backend_name(int(choice))
    except Exception as ex:  # noqa: BLE001  (informational only)
        return "unknown (%s)" % type(ex).__name__


def warm_up(device):
    """cuBLAS / cuBLASLt workspaces come from the caching allocator and stay: create them before the
    first configuration, so every configuration starts from the same baseline."""
    import torch
    if device != "cuda":
        return {}
    before = torch.cuda.memory_allocated()
    for dt in (torch.float32, torch.bfloat16):
        lin = torch.nn.Linear(256, 256, device="cuda", dtype=dt)
        x = torch.randn(64, 256, device="cuda", dtype=dt, requires_grad=True)
        lin(x).sum().backward()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            lin.float()(x.float()).sum().backward()
        del lin, x
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    return {"workspace_allocated_bytes": torch.cuda.memory_allocated() - before,
            "reserved_bytes": torch.cuda.memory_reserved(),
            "device_used_bytes": torch.cuda.mem_get_info()[1] - torch.cuda.mem_get_info()[0]}


# --------------------------------------------------------------------------- environment
def versions():
    out = {"python": platform.python_version()}
    for mod in ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "flash_attn"):
        try:
            import importlib.metadata as md
            out[mod] = md.version(mod.replace("_", "-"))
        except Exception:
            out[mod] = None
    try:
        import torch
        out["torch_cuda"] = torch.version.cuda
        out["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:
        pass
    return out


def environment(device):
    env = {"versions": versions(), "device": device,
           "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
           "expandable_segments": "expandable_segments:true" in
           (os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or "").replace(" ", "").lower()}
    if device == "cuda":
        import torch
        p = torch.cuda.get_device_properties(0)
        env.update(gpu_name=torch.cuda.get_device_name(0), gpu_total_bytes=p.total_memory,
                   gpu_capability="%d.%d" % (p.major, p.minor), gpu_count=torch.cuda.device_count(),
                   allow_tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
                   allow_tf32_cudnn=torch.backends.cudnn.allow_tf32,
                   sdpa_backends={"flash": torch.backends.cuda.flash_sdp_enabled(),
                                  "mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                                  "math": torch.backends.cuda.math_sdp_enabled(),
                                  "cudnn": getattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: None)()})
        with contextlib.suppress(Exception):
            env["sdpa_priority_order"] = [_sdp_backend_name(int(b)) for b in torch._C._get_sdp_priority_order()]
        with contextlib.suppress(Exception):
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20).stdout.strip() or None
    return env


# --------------------------------------------------------------------------- memfit
def find_memfit(arg):
    """--memfit BIN exactly as given; else build/cli/memfit when it is built."""
    cand = arg or os.path.join(ROOT, "build", "cli", "memfit")
    return cand if os.path.isfile(cand) and os.access(cand, os.X_OK) else None


def memfit_gpu_table(binary):
    if not binary:
        return []
    try:
        p = subprocess.run([binary, "--list-gpus"], capture_output=True, text=True, timeout=60)
        return parse_list_gpus(p.stdout)
    except (OSError, subprocess.SubprocessError):
        return []


def memfit_batch(binary, configs):
    """`memfit --batch`: one configuration per line in, one result per line out."""
    p = subprocess.run([binary, "--batch"], input="".join(json.dumps(c) + "\n" for c in configs),
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("memfit --batch exited %d: %s" % (p.returncode, p.stderr.strip()[:500]))
    lines = p.stdout.splitlines()
    if len(lines) != len(configs):
        raise RuntimeError("memfit --batch answered %d lines for %d configurations" % (len(lines), len(configs)))
    return [json.loads(line) for line in lines]


def memfit_summary(r):
    if not r.get("ok"):
        return {"ok": False, "errors": r.get("errors"), "warnings": r.get("warnings")}
    ph = {p["name"]: p["bytes"] for p in r.get("phases", [])}
    b = r.get("breakdown", {})
    return {"ok": True, "parameter_count": r.get("parameter_count"),
            "trainable_parameter_count": r.get("trainable_parameter_count"),
            "breakdown": b, "phases": ph, "peak_allocated_bytes": r.get("peak_allocated_bytes"),
            "peak_reserved_bytes": r.get("peak_reserved_bytes"), "device_total_bytes": r.get("device_total_bytes"),
            "implementation": {k: v for k, v in (r.get("implementation") or {}).items()
                               if k not in ("description", "source")},
            "warnings": r.get("warnings") or [], "unknown_fields": unknown_fields(r)}


def unknown_fields(r):
    return [w.get("field") for w in (r.get("warnings") or []) if "not a memfit field" in (w.get("message") or "")]


def rel(memfit, measured):
    if memfit is None or measured is None or measured == 0:
        return None
    return round((memfit - measured) / measured, 5)


# (name, memfit value, measured value); relative error = (memfit - measured) / measured
def comparisons(mf, ms):
    if not mf or not mf.get("ok") or not ms:
        return {}
    b, ph, step = mf["breakdown"], mf["phases"], ms.get("step") or {}
    pairs = {
        "parameter_count": (mf["parameter_count"], ms.get("parameter_count")),
        "trainable_parameter_count": (mf["trainable_parameter_count"], ms.get("trainable_parameter_count")),
        "parameter_bytes": (b.get("parameters"), ms.get("parameter_bytes")),
        "gradient_bytes": (b.get("gradients"), ms.get("gradient_bytes")),
        "optimizer_state_bytes": (b.get("optimizer_states"), ms.get("optimizer_state_bytes")),
        "load_peak_allocated_bytes": (ph.get("load"), (ms.get("load") or {}).get("peak_allocated_bytes")),
        "forward_peak_allocated_bytes": (ph.get("forward"), (step.get("forward") or {}).get("peak_allocated_bytes")),
        "backward_peak_allocated_bytes": (ph.get("backward"), (step.get("backward") or {}).get("peak_allocated_bytes")),
        "optimizer_step_peak_allocated_bytes": (ph.get("optimizer_step"),
                                                (step.get("optimizer_step") or {}).get("peak_allocated_bytes")),
        "peak_allocated_bytes": (mf["peak_allocated_bytes"], ms.get("peak_allocated_bytes")),
        "peak_reserved_bytes": (mf["peak_reserved_bytes"], ms.get("peak_reserved_bytes")),
        "device_total_bytes": (mf["device_total_bytes"], ms.get("device_used_bytes")),
    }
    return {k: {"memfit": a, "measured": m, "relative_error": rel(a, m)} for k, (a, m) in pairs.items()}


# --------------------------------------------------------------------------- report
HEADLINE = ("peak_allocated_bytes", "peak_reserved_bytes", "forward_peak_allocated_bytes",
            "backward_peak_allocated_bytes", "optimizer_step_peak_allocated_bytes", "load_peak_allocated_bytes",
            "parameter_bytes", "gradient_bytes", "optimizer_state_bytes", "device_total_bytes")


def summarise(entries):
    out = {}
    for key in HEADLINE:
        errs = [e["comparison"][key]["relative_error"] for e in entries
                if e.get("comparison", {}).get(key, {}).get("relative_error") is not None]
        if not errs:
            continue
        a = sorted(abs(x) for x in errs)
        out[key] = {"n": len(errs), "median_abs": round(statistics.median(a), 4),
                    "p90_abs": round(a[min(len(a) - 1, int(math.ceil(0.9 * len(a))) - 1)], 4),
                    "worst_abs": round(a[-1], 4), "median_signed": round(statistics.median(errs), 4),
                    "within_5pct": sum(1 for x in a if x <= 0.05), "within_15pct": sum(1 for x in a if x <= 0.15)}
    return out


def _gib(v):
    return "–" if v is None else "%.2f" % (v / GIB)


def _pct(v):
    return "–" if v is None else "%+.1f%%" % (100 * v)


def render_markdown(doc):
    env = doc.get("environment", {})
    v = env.get("versions", {})
    lines = ["# memfit against real CUDA training steps (tools/validate/cuda_grid.py)", ""]
    lines.append("GPU: %s (%s GiB; memfit `%s`), torch %s (CUDA %s), transformers %s, peft %s, accelerate %s; "
                 "bitsandbytes %s, flash_attn %s." % (
                     env.get("gpu_name", "–"), _gib(env.get("gpu_total_bytes")), doc.get("memfit_gpu"),
                     v.get("torch"), v.get("torch_cuda"), v.get("transformers"), v.get("peft"), v.get("accelerate"),
                     v.get("bitsandbytes") or "absent", v.get("flash_attn") or "absent"))
    c = doc.get("counts", {})
    lines.append("Configurations: %s measured, %s skipped, %s out of memory, %s harness errors; %s s in all." % (
        c.get("measured"), c.get("skipped"), c.get("oom"), c.get("error"), doc.get("elapsed_seconds")))
    lines.append("")
    lines.append("Relative error = (memfit − measured) / measured; measured = the last of three steps "
                 "(`torch.cuda.max_memory_allocated` / `max_memory_reserved` per phase, absolute).")
    lines.append("")
    s = doc.get("summary") or {}
    if s:
        lines += ["| quantity | n | median abs | p90 abs | worst abs | median signed | within 5 % | within 15 % |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for k, x in s.items():
            lines.append("| %s | %d | %.1f %% | %.1f %% | %.1f %% | %+.1f %% | %d | %d |" % (
                k, x["n"], 100 * x["median_abs"], 100 * x["p90_abs"], 100 * x["worst_abs"],
                100 * x["median_signed"], x["within_5pct"], x["within_15pct"]))
        lines.append("")
    lines += ["| configuration | status | peak alloc GiB (meas / memfit) | err | peak reserved GiB (meas / memfit) "
              "| err | fwd err | bwd err | opt err | params exact |",
              "|---|---|---|---:|---|---:|---:|---:|---:|---|"]
    for e in doc.get("configurations", []):
        cmp_ = e.get("comparison") or {}

        def g(k, field):
            return (cmp_.get(k) or {}).get(field)
        exact = ("yes" if g("parameter_count", "relative_error") == 0 and g("trainable_parameter_count",
                                                                             "relative_error") == 0
                 else ("–" if not cmp_ else "**no**"))
        status = e.get("status")
        if status != "measured":
            status += ": " + (e.get("reason") or "")[:60]
        lines.append("| %s | %s | %s / %s | %s | %s / %s | %s | %s | %s | %s | %s |" % (
            e["name"], status, _gib(g("peak_allocated_bytes", "measured")), _gib(g("peak_allocated_bytes", "memfit")),
            _pct(g("peak_allocated_bytes", "relative_error")), _gib(g("peak_reserved_bytes", "measured")),
            _gib(g("peak_reserved_bytes", "memfit")), _pct(g("peak_reserved_bytes", "relative_error")),
            _pct(g("forward_peak_allocated_bytes", "relative_error")),
            _pct(g("backward_peak_allocated_bytes", "relative_error")),
            _pct(g("optimizer_step_peak_allocated_bytes", "relative_error")), exact))
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- modes
def select(cases, only):
    if not only:
        return cases
    want = [w.strip() for w in only.split(",") if w.strip()]
    picked = [c for c in cases if any(w == c["name"] or w in c["name"] for w in want)]
    if not picked:
        raise SystemExit("cuda_grid: --only matched no configuration (--list lists them)")
    return picked


_IMPORTS = {}


def usable(module):
    """The optional package imports (not only is installed): bitsandbytes loads its CUDA library at
    import, flash_attn its extension."""
    if module not in _IMPORTS:
        ok = importable(module)
        if ok:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importlib.import_module(module)
            except Exception:  # noqa: BLE001  (any failure means: not usable here)
                ok = False
        _IMPORTS[module] = ok
    return _IMPORTS[module]


def missing_requirements(c):
    return [m for m in c["requires"] if not usable(m)]


def dry_run(cases, args, memfit):
    """Build every model on the meta device, run memfit on every configuration: memfit must accept
    each one without naming an unknown field, and count exactly the parameters the model has."""
    import torch  # noqa: F401  (the meta device)
    gpu = args.gpu or DEFAULT_GPU
    rows, problems = [], []
    t0 = time.time()
    for c in cases:
        model = build(c, "meta")
        n, tn, _, _ = count_parameters(model)
        del model
        cfg, knobs = memfit_config(c, gpu)
        rows.append({"case": c, "parameter_count": n, "trainable_parameter_count": tn, "memfit_config": cfg,
                     "knobs": knobs, "missing": missing_requirements(c),
                     "estimate_seconds": {k: round(estimate_seconds(c, k), 2) for k in THROUGHPUT},
                     "step_tflop": round(step_flops(c) / 1e12, 3)})
    build_s = time.time() - t0
    results = memfit_batch(memfit, [r["memfit_config"] for r in rows]) if memfit else [None] * len(rows)
    for r, res in zip(rows, results):
        if res is None:
            continue
        mf = memfit_summary(res)
        r["memfit"] = {k: mf.get(k) for k in ("ok", "parameter_count", "trainable_parameter_count",
                                               "peak_allocated_bytes", "peak_reserved_bytes", "unknown_fields",
                                               "errors")}
        name = r["case"]["name"]
        if not mf["ok"]:
            problems.append("%s: memfit refused the configuration: %s" % (name, mf.get("errors")))
            continue
        if mf["unknown_fields"]:
            problems.append("%s: memfit ignored unknown fields %s" % (name, mf["unknown_fields"]))
        if mf["parameter_count"] != r["parameter_count"]:
            problems.append("%s: parameter count %d, memfit %d" % (name, r["parameter_count"], mf["parameter_count"]))
        if mf["trainable_parameter_count"] != r["trainable_parameter_count"]:
            problems.append("%s: trainable parameters %d, memfit %d" % (
                name, r["trainable_parameter_count"], mf["trainable_parameter_count"]))
    runnable = [r for r in rows if not r["missing"]]
    tot = {k: round(STARTUP_S + sum(r["estimate_seconds"][k] for r in runnable), 1) for k in THROUGHPUT}
    tot_all = {k: round(STARTUP_S + sum(r["estimate_seconds"][k] for r in rows), 1) for k in THROUGHPUT}
    print("%-52s %13s %11s %9s %9s %8s  %s" % ("configuration", "parameters", "memfit peak", "TFLOP/step",
                                               "est. s", "exact", "needs"))
    for r in rows:
        mf = r.get("memfit") or {}
        exact = ("yes" if mf.get("parameter_count") == r["parameter_count"] and
                 mf.get("trainable_parameter_count") == r["trainable_parameter_count"] else
                 ("–" if not mf else "NO"))
        print("%-52s %13s %8s GiB %9.2f %9.1f %8s  %s" % (
            r["case"]["name"], format(r["parameter_count"], ","), _gib(mf.get("peak_allocated_bytes")),
            r["step_tflop"], r["estimate_seconds"]["h100"], exact, ",".join(r["missing"]) or ""))
    print()
    print("%d configurations (%d runnable here, %d need a package this interpreter lacks: %s)" % (
        len(rows), len(runnable), len(rows) - len(runnable),
        ", ".join(sorted({m for r in rows for m in r["missing"]})) or "none"))
    for axis, counts in axis_counts([r["case"] for r in rows]).items():
        print("  %-14s %s" % (axis, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    print("estimated GPU run time: %.0f s on an H100/H200, %.0f s on an A100 for the %d runnable here; %.0f s / "
          "%.0f s with all %d (budget %d s)" % (tot["h100"], tot["a100"], len(runnable), tot_all["h100"],
                                                tot_all["a100"], len(rows), DEFAULT_TIME_BUDGET_S))
    print("models built on the meta device in %.1f s; memfit: %s" % (build_s, memfit or "not run (--no-memfit)"))
    plan = {"about": "cuda_grid.py --dry-run: the planned grid", "memfit_binary": memfit, "gpu": gpu,
            "counts": {"configurations": len(rows), "runnable_here": len(runnable)},
            "axes": axis_counts([r["case"] for r in rows]), "estimated_seconds": tot,
            "estimated_seconds_all": tot_all, "problems": problems,
            "versions": versions(), "configurations": rows}
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        with open(os.path.join(args.out_dir, "cuda_grid_plan.json"), "w") as f:
            json.dump(plan, f, indent=1)
            f.write("\n")
    counts = {r["case"]["name"]: {"parameter_count": r["parameter_count"],
                                  "trainable_parameter_count": r["trainable_parameter_count"]} for r in rows}
    if args.write_counts:
        v = versions()
        with open(COUNTS_FIXTURE, "w") as f:
            json.dump({"about": "parameter counts of every cuda_grid.py configuration as transformers + peft build "
                                "them (cuda_grid.py --dry-run --write-counts); test_cuda_grid.py checks memfit "
                                "against them where transformers is not installed",
                       "versions": {k: v.get(k) for k in ("torch", "transformers", "peft")},
                       "configurations": counts}, f, indent=1, sort_keys=False)
            f.write("\n")
        print("wrote %s" % os.path.relpath(COUNTS_FIXTURE, ROOT))
    if problems:
        print("\nPROBLEMS (%d):" % len(problems))
        for p in problems:
            print("  " + p)
        return 1
    if memfit:
        print("dry run: memfit accepted all %d configurations with no unknown field; parameter and trainable "
              "counts exact in all %d" % (len(rows), len(rows)))
    return 0


def write_outputs(doc, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "cuda_grid.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    with open(os.path.join(out_dir, "cuda_grid.md"), "w") as f:
        f.write(render_markdown(doc))
    return path


def attach_memfit(doc, memfit):
    """memfit's numbers and the relative errors beside every measured configuration."""
    entries = doc["configurations"]
    todo = [e for e in entries if e.get("memfit_config")]
    problems = []
    if not memfit:
        doc["memfit_binary"] = None
        doc["memfit_note"] = "memfit not run here; `cuda_grid.py --reuse FILE --memfit BIN` adds its numbers"
        return problems
    for e in todo:
        e["memfit_config"]["hardware"]["gpu"] = doc["memfit_gpu"]
        e["memfit_config"]["hardware"]["expandable_segments"] = bool(doc.get("environment", {}).get(
            "expandable_segments"))
    results = memfit_batch(memfit, [e["memfit_config"] for e in todo])
    for e, r in zip(todo, results):
        e["memfit"] = memfit_summary(r)
        if not e["memfit"]["ok"]:
            problems.append("%s: memfit refused the configuration: %s" % (e["name"], e["memfit"].get("errors")))
        elif e["memfit"]["unknown_fields"]:
            problems.append("%s: memfit ignored unknown fields %s" % (e["name"], e["memfit"]["unknown_fields"]))
        e["comparison"] = comparisons(e["memfit"], e.get("measured"))
    doc["memfit_binary"] = memfit
    doc["summary"] = summarise([e for e in entries if e.get("status") == "measured"])
    return problems


def measure_grid(cases, args, memfit):
    import torch
    device = "cpu" if args.cpu_smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("cuda_grid: no CUDA device (torch.cuda.is_available() is False); use --dry-run or --cpu-smoke",
              file=sys.stderr)
        return 2
    t_start = time.time()
    env = environment(device)
    table = memfit_gpu_table(memfit)
    gpu = args.gpu or (gpu_id_for(env.get("gpu_name"), env.get("gpu_total_bytes"), table) if device == "cuda"
                       else DEFAULT_GPU)
    doc = {"about": "memfit against real CUDA training steps: tools/validate/cuda_grid.py",
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "mode": "cpu-smoke (tiny models, no CUDA numbers)" if args.cpu_smoke else "cuda",
           "environment": env, "memfit_gpu": gpu, "warm_up": warm_up(device),
           "conventions": {
               "bytes": "absolute torch.cuda numbers (the warm-up's cuBLAS workspaces included, see baseline)",
               "step": "the last of 3 steps (the first creates AdamW's states); phases forward (model call "
                       "with labels, outputs dropped), backward, optimizer_step; reset_peak_memory_stats "
                       "before each; zero_grad(set_to_none=True) after",
               "relative_error": "(memfit - measured) / measured",
               "device_total_bytes": "memfit's device total vs torch.cuda.mem_get_info used after the last step "
                                     "(CUDA context + reserved)",
               "loop": "Trainer + accelerate: torch.autocast(bf16) and convert_outputs_to_fp32 for bf16_mixed "
                       "and bf16_autocast; HF activation checkpointing (use_reentrant=False); use_cache left at "
                       "the config's default as Trainer leaves it",
           },
           "grid_axes": axis_counts(cases), "configurations": []}
    out_dir = args.out_dir or OUT
    budget = args.time_budget_s
    errors = 0
    for i, c in enumerate(cases):
        cfg, knobs = memfit_config(c, gpu, tiny=args.cpu_smoke, expandable_segments=env["expandable_segments"])
        e = {"name": c["name"], "case": c, "memfit_config": cfg, "knobs": knobs,
             "estimate_seconds": round(estimate_seconds(c), 2)}
        missing = missing_requirements(c)
        elapsed = time.time() - t_start
        if missing:
            e.update(status="skipped", reason="needs %s (not importable here)" % ", ".join(missing))
        elif not args.cpu_smoke and elapsed + e["estimate_seconds"] > budget:
            e.update(status="skipped", reason="time budget: %.0f s used of %d s" % (elapsed, budget))
        else:
            try:
                e["measured"] = run_steps(c, device, tiny=args.cpu_smoke, quant_dir=args.quant_dir)
                e["status"] = "measured"
            except Exception as ex:  # noqa: BLE001  (each configuration reports its own failure)
                oom = type(ex).__name__ == "OutOfMemoryError" or "out of memory" in str(ex).lower()
                e.update(status="oom" if oom else "error", reason="%s: %s" % (type(ex).__name__, str(ex)[:400]),
                         traceback=traceback.format_exc()[-3000:])
                errors += 0 if oom else 1
            if e["status"] != "measured":
                # outside the except block: the traceback (and the model its frames hold) is gone now
                gc.collect()
                if device == "cuda":
                    torch.cuda.empty_cache()
        doc["configurations"].append(e)
        ms = e.get("measured") or {}
        print("[%2d/%d] %-52s %-8s %7s GiB alloc %7s GiB reserved %6.1f s%s" % (
            i + 1, len(cases), c["name"], e["status"], _gib(ms.get("peak_allocated_bytes")),
            _gib(ms.get("peak_reserved_bytes")), ms.get("seconds") or 0.0,
            ("  " + e.get("reason", "")) if e["status"] != "measured" else ""), flush=True)
        doc["elapsed_seconds"] = round(time.time() - t_start, 1)
        doc["counts"] = {k: sum(1 for x in doc["configurations"] if x["status"] == k)
                         for k in ("measured", "skipped", "oom", "error")}
        write_outputs(doc, out_dir)      # after every configuration: a killed run keeps what it measured
    problems = []
    if not args.no_memfit:
        try:
            problems = attach_memfit(doc, memfit)
        except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as ex:
            doc["memfit_note"] = "memfit failed here (%s); run cuda_grid.py --reuse on this file" % ex
            print("cuda_grid: memfit failed: %s" % ex, file=sys.stderr)
    doc["problems"] = problems
    doc["elapsed_seconds"] = round(time.time() - t_start, 1)
    path = write_outputs(doc, out_dir)
    print("wrote %s and cuda_grid.md (%s); %.0f s" % (path, ", ".join("%s %d" % kv for kv in doc["counts"].items()),
                                                      doc["elapsed_seconds"]))
    for p in problems:
        print("problem: " + p, file=sys.stderr)
    return 1 if errors or problems else 0


def reuse(path, args, memfit):
    with open(path) as f:
        doc = json.load(f)
    if args.gpu:
        doc["memfit_gpu"] = args.gpu
    problems = attach_memfit(doc, memfit)
    doc["problems"] = problems
    out = write_outputs(doc, args.out_dir or os.path.dirname(os.path.abspath(path)))
    print("wrote %s and cuda_grid.md (memfit %s)" % (out, memfit))
    for k, x in (doc.get("summary") or {}).items():
        print("  %-38s n=%2d median |err| %5.1f %%  p90 %5.1f %%  worst %5.1f %%" % (
            k, x["n"], 100 * x["median_abs"], 100 * x["p90_abs"], 100 * x["worst_abs"]))
    for p in problems:
        print("problem: " + p, file=sys.stderr)
    return 1 if problems else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="plan and check, no GPU: meta-device models + memfit")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny models, the real step loop on the CPU")
    ap.add_argument("--reuse", metavar="FILE", help="add memfit's numbers to an existing cuda_grid.json")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", help="names or substrings, comma separated")
    ap.add_argument("--out-dir", help="where cuda_grid.json / .md go (default tools/validate/out)")
    ap.add_argument("--memfit", help="memfit binary (default build/cli/memfit)")
    ap.add_argument("--no-memfit", action="store_true")
    ap.add_argument("--gpu", help="memfit GPU id (default: from the detected card)")
    ap.add_argument("--time-budget-s", type=float, default=DEFAULT_TIME_BUDGET_S)
    ap.add_argument("--write-counts", action="store_true",
                    help="with --dry-run: write the built models' parameter counts to fixtures/cuda_grid_counts.json")
    ap.add_argument("--quant-dir", help="folder for QLoRA's temporary checkpoint (default: the system's tmp)")
    args = ap.parse_args(argv)
    cases = select(grid(), args.only)
    if args.list:
        for c in cases:
            print(c["name"])
        return 0
    memfit = None if args.no_memfit else find_memfit(args.memfit)
    if args.memfit and not memfit:
        print("cuda_grid: memfit binary not found or not executable: %s" % args.memfit, file=sys.stderr)
        return 2
    if args.reuse:
        if not memfit:
            print("cuda_grid: --reuse needs memfit (build it: cmake --build build --target memfit)", file=sys.stderr)
            return 2
        return reuse(args.reuse, args, memfit)
    missing = [m for m in ("torch", "transformers", "peft") if not importable(m)]
    if missing:
        print("cuda_grid: this interpreter lacks %s (tools/validate/requirements-cuda.txt; on a CPU machine "
              "tools/frameworks/setup_venv.sh makes .venv-frameworks)" % ", ".join(missing), file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with contextlib.suppress(Exception):
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
    if args.dry_run:
        return dry_run(cases, args, memfit)
    return measure_grid(cases, args, memfit)


if __name__ == "__main__":
    sys.exit(main())
