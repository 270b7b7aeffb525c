#!/usr/bin/env python3
"""The model families memfit imports from config.json, checked against transformers' own classes.

    .venv-frameworks/bin/python tools/frameworks/families.py            # -> out/families.json
    options: --memfit BIN (default build/cli/memfit), --only bloom,gptj, --explain

For each vendored config.json in FIXTURES (tests/fixtures/hf/):

* the parameter count of the real model class, built on the meta device from the whole file
  (transformers' AutoModelForCausalLM.from_config; nothing downloaded), against memfit's import of
  the same file (`memfit --hf-config FILE`): they must be equal;
* one training step of a tiny model of the same family (the file with its sizes shrunk: hidden 128,
  2 layers, 4 heads, vocabulary 512, batch 2 x 64 tokens; every other key kept, dropouts 0), run
  by measure.py's step (saved-tensor hooks, CUDA-equivalent bytes), in fp32 with eager attention
  and under bf16 autocast with SDPA, against memfit's activations for the same tiny file.

The activations are reported as memfit / measured (PROBLEM lines beyond ACTIVATION_TOLERANCE); the
check is compare.py --check, which knows the gaps explained so far (FAMILY_GAPS, COUNT_DIFFERENCES).
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import measure as M  # noqa: E402  (sets up torch, the save tracker and the CUDA rules)
import torch  # noqa: E402
import compat  # noqa: E402
import gdn_kernels  # noqa: E402


def gdn_modules():
    from transformers.models.qwen3_5 import modeling_qwen3_5
    from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe
    from transformers.models.qwen3_next import modeling_qwen3_next
    return modeling_qwen3_5, modeling_qwen3_5_moe, modeling_qwen3_next


def install_gdn_kernels():
    """Qwen3.5's Gated DeltaNet runs its CUDA kernels' stand-ins (gdn_kernels.py), as on a GPU with
    flash-linear-attention and causal-conv1d installed, not transformers' CPU fallback."""
    for module in gdn_modules():
        if not getattr(module, "_memfit_gdn_kernels", False):
            gdn_kernels.install(module)
            module._memfit_gdn_kernels = True


install_gdn_kernels()
compat.register_causal_lms()

FIXTURES = {
    "bloom": "bigscience__bloom-560m.json",
    "gpt_bigcode": "bigcode__gpt_bigcode-santacoder.json",
    "gptj": "EleutherAI__gpt-j-6b.json",
    "stablelm": "stabilityai__stablelm-3b-4e1t.json",
    "stablelm_qkv_bias": "stabilityai__stablelm-2-zephyr-1_6b.json",
    "starcoder2": "bigcode__starcoder2-7b.json",
    "cohere": "CohereForAI__aya-23-8B.json",
    # Cohere2's class (Cohere2ForCausalLM: three sliding-window layers with rotary positions to one
    # full layer without) on Aya-23-8B's shapes: a test shape, not a released model.
    "cohere2": ("CohereForAI__aya-23-8B.json", {"model_type": "cohere2", "architectures": ["Cohere2ForCausalLM"],
                                                 "sliding_window": 4096, "layer_types": [
                                                     "sliding_attention", "sliding_attention", "sliding_attention",
                                                     "full_attention"] * 8}),
    "gemma3_text": "google__gemma-3-1b-it.json",
    # Presets' families with a norm on the queries and keys (per head; over the whole projection).
    "qwen3_moe": "Qwen__Qwen3-30B-A3B.json",
    # Qwen3's dense class (Qwen3ForCausalLM) on the same file's shapes: a test shape, not a released model.
    "qwen3": ("Qwen__Qwen3-30B-A3B.json", {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}),
    "olmo2": "allenai__OLMo-2-1124-7B.json",
    "gemma": "google__gemma-2b.json",
    # The other preset families' classes.
    "gemma2": "google__gemma-2-2b.json",
    "mixtral": "mistralai__Mixtral-8x7B-v0.1.json",
    "qwen2_moe": "Qwen__Qwen1.5-MoE-A2.7B.json",
    "deepseek_v3": "deepseek-ai__DeepSeek-V3.json",
    # Mistral 4 (Mistral Small 4's language model, in Mistral 3's wrapper): DeepSeek-V3's block under
    # a softmax router without a correction bias, the queries scaled by position.
    "mistral4": "mistralai__Mistral-Small-4-119B-2603.json",
    # MiniMax-M2: Mixtral's block with norms over the whole query and key projections, rotary
    # positions on half of each head and a sigmoid router with a correction bias.
    "minimax_m2": "MiniMaxAI__MiniMax-M2.json",
    # Phi-3.5-MoE's class (PhimoeForCausalLM: Mixtral's block with LayerNorms, biased attention and
    # head, a sparsemixer router) on Mixtral-8x7B's file: a test shape, not a released model.
    "phimoe": ("mistralai__Mixtral-8x7B-v0.1.json", {"model_type": "phimoe", "architectures": ["PhimoeForCausalLM"],
                                                   "attention_bias": True, "lm_head_bias": True}),
    # The same two with their jitter on (Phi-3.5-MoE's input_jitter_noise, Mixtral's router_jitter_noise):
    # each in-place multiply of the mixture's input by uniform noise keeps the noise for backward.
    "phimoe_jitter": ("mistralai__Mixtral-8x7B-v0.1.json", {"model_type": "phimoe", "architectures": ["PhimoeForCausalLM"],
                                                          "attention_bias": True, "lm_head_bias": True,
                                                          "input_jitter_noise": 0.01}),
    "mixtral_jitter": ("mistralai__Mixtral-8x7B-v0.1.json", {"router_jitter_noise": 0.01}),
    # GLM-4.7-Flash: DeepSeek-V3's latent attention over GLM-4.5's mixture.
    "glm4_moe_lite": "zai-org__GLM-4.7-Flash.json",
    "phi": "microsoft__phi-2.json",
    "phi3": "microsoft__Phi-3-mini-4k-instruct.json",
    "falcon": "tiiuae__falcon-7b-instruct.json",
    "gpt_neox": "EleutherAI__pythia-1b.json",
    "opt": "facebook__opt-125m.json",
    "gpt_oss": "openai__gpt-oss-20b.json",
    # Llama's layout under other classes: Granite's multipliers, SmolLM3's layers without rotary
    # positions, Seed-OSS's biases on q, k and v only (the file, put together from partial copies,
    # has no dropout keys: SeedOssConfig's defaults of 0.1 are set to 0 as tiny() does the others).
    "granite": "ibm-granite__granite-3.3-8b-instruct.json",
    "smollm3": "HuggingFaceTB__SmolLM3-3B.json",
    # Ministral's class (MinistralForCausalLM: Mistral's block, sliding-window and full layers) on
    # Mistral-7B-v0.3's file: a test shape, not a released model.
    # Ministral 3's class (Ministral3ForCausalLM: the queries scaled by position) on the same file.
    "ministral3": ("mistralai__Mistral-7B-v0.3.json", {"model_type": "ministral3", "architectures": ["Ministral3ForCausalLM"],
                                                       "head_dim": 128, "rope_parameters": {
                                                           "rope_type": "default", "rope_theta": 1000000.0,
                                                           "llama_4_scaling_beta": 0.1,
                                                           "original_max_position_embeddings": 16384}}),
    # (MinistralAttention reads head_dim without a fallback: the file's 128 is given.)
    "ministral": ("mistralai__Mistral-7B-v0.3.json", {"model_type": "ministral", "architectures": ["MinistralForCausalLM"],
                                                      "head_dim": 128, "sliding_window": 4096, "layer_types": [
                                                          "full_attention", "sliding_attention", "sliding_attention",
                                                          "sliding_attention"] * 8}),
    "seed_oss": ("ByteDance-Seed__Seed-OSS-36B-Instruct.json", {"residual_dropout": 0.0, "attention_dropout": 0.0}),
    # OLMo-2's block with Qwen3's per-head query and key norms and Llama's RMSNorm (the weight
    # applied to the 16-bit normalised x).
    "exaone4": "LGAI-EXAONE__EXAONE-4.0-1.2B.json",
    # OLMo-3's class (Olmo3ForCausalLM, three sliding-window layers to one full) on OLMo-2 7B's
    # shapes: a test shape, not a released model.
    # GLM-4.5 (DeepSeek-V3's mixture under Llama's attention with biased q, k, v), OLMoE, ERNIE 4.5
    # (each layer's own fp32 rotary tables), and Llama 4's language model (every expert on every
    # token; a multimodal file, read through its text_config as memfit reads it).
    "glm4_moe": "zai-org__GLM-4.5-Air.json",
    # Hunyuan dense: Llama's block with per-head q/k norms after the rotary positions.
    "hunyuan_v1_dense": "tencent__Hunyuan-MT-7B.json",
    # dots.llm1: GLM-4.5's layers with whole-head rotary positions and per-head q/k norms always.
    "dots1": "rednote-hilab__dots.llm1.inst.json",
    "glm": "zai-org__glm-4-9b-chat-hf.json",
    "glm4": "zai-org__GLM-4-9B-0414.json",
    "olmoe": "allenai__OLMoE-1B-7B-0125-Instruct.json",
    "ernie4_5": "baidu__ERNIE-4.5-0.3B-PT.json",
    "llama4_text": "meta-llama__Llama-4-Scout-17B-16E-Instruct.json",
    # ERNIE 4.5's mixture (Ernie4_5_MoeForCausalLM) on the 0.3B file's shapes with
    # Ernie4_5_MoeConfig's defaults (ERNIE-4.5-21B-A3B's mixture): a test shape.
    "ernie4_5_moe": ("baidu__ERNIE-4.5-0.3B-PT.json", {
        "model_type": "ernie4_5_moe", "architectures": ["Ernie4_5_MoeForCausalLM"],
        "moe_num_experts": 64, "moe_k": 6, "moe_intermediate_size": 1536, "moe_num_shared_experts": 2,
        "moe_layer_start_index": 1, "moe_layer_interval": 1}),
    # Qwen3.5's language models (three Gated DeltaNet layers to one gated attention layer; the MoE
    # model's every layer a mixture), their CUDA kernels stood in for by gdn_kernels.py.
    "qwen3_5_text": "Qwen__Qwen3.5-9B.json",
    "qwen3_5_moe_text": "Qwen__Qwen3.5-35B-A3B.json",
    # Qwen3-Next: the same layers with the Gated DeltaNet's projections fused (in_proj_qkvz, in_proj_ba).
    "qwen3_next": "Qwen__Qwen3-Next-80B-A3B-Instruct.json",
    # OLMo-1 (OlmoForCausalLM: LayerNorms without weight or bias, run on an fp32 copy), also with
    # OLMo-7B-0424's clip_qkv (q, k and v clamped in place) on the 1B's shapes: a test shape.
    "olmo": "allenai__OLMo-1B-hf.json",
    "olmo_clip_qkv": ("allenai__OLMo-1B-hf.json", {"clip_qkv": 8.0}),
    # Arcee's class (ArceeForCausalLM: Llama's block with a squared-ReLU up / down MLP) on
    # Llama-2-7B's file: a test shape, not a released model.
    "arcee": ("meta-llama__Llama-2-7b-hf.json", {"model_type": "arcee", "architectures": ["ArceeForCausalLM"],
                                                 "hidden_act": "relu2"}),
    # Nemotron's class (NemotronForCausalLM: LayerNorm1P norms run in the autocast dtype, squared
    # ReLU, rotary positions on half of each head) on Llama-2-7B's file: a test shape.
    "nemotron": ("meta-llama__Llama-2-7b-hf.json", {"model_type": "nemotron", "architectures": ["NemotronForCausalLM"],
                                                    "hidden_act": "relu2"}),
    # Apertus's class (ApertusForCausalLM: xIELU's Python arithmetic with two learned scalars per
    # layer, a norm on each query and key head) on Llama-2-7B's file: a test shape.
    "apertus": ("meta-llama__Llama-2-7b-hf.json", {"model_type": "apertus", "architectures": ["ApertusForCausalLM"],
                                                   "hidden_act": "xielu"}),
    "olmo3": ("allenai__OLMo-2-1124-7B.json", {"model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"],
                                               "sliding_window": 4096, "layer_types": [
                                                   "sliding_attention", "sliding_attention", "sliding_attention",
                                                   "full_attention"] * 8}),
}
# LoRA on every linear (PEFT's "all-linear", rank 4, no dropout) on the same tiny models, fp32 and
# under bf16 autocast over a bf16 base with fp32 adapters (PEFT's recipe), eager attention (the
# CPU's SDPA differs from CUDA's kernels where FAMILY_GAPS says so): memfit's targets for the same
# layers, its trainable count equal to PEFT's. A fused q/k/v is memfit's `qkv`; a mixture of experts
# adds its router. Left out, with why:
# (Phi-3's gate_up_proj is one layer too: memfit's gate and up, under its fused projections.)
LORA_FUSED_QKV = ("bloom", "gpt_bigcode", "falcon", "gpt_neox", "phi3")
# Families whose all-linear PEFT cannot run: their LoRA steps name the modules instead (Llama 4's
# router is an nn.Linear returning (scores, logits), on which PEFT's LoRA layer fails; memfit
# refuses router there).
LORA_NAMED_TARGETS = {
    "llama4_text": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    # Phi-3.5-MoE's router is an nn.Linear returning (weights, experts), on which PEFT's LoRA layer
    # fails as on Llama 4's; its experts are stacked parameters no module name reaches (not in PEFT's
    # mapping): the attention's names.
    "phimoe": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "phimoe_jitter": ["q_proj", "k_proj", "v_proj", "o_proj"],
    # Qwen3.5-MoE's all-linear would adapt shared_expert_gate (d -> 1), as Qwen2-MoE's; its router
    # is a parameter, which all-linear does not reach. The module names reach the stacked experts
    # through transformers' conversion mapping (memfit's gate, up and down).
    "qwen3_5_moe_text": ["q_proj", "k_proj", "v_proj", "o_proj", "in_proj_qkv", "in_proj_z", "in_proj_b",
                         "in_proj_a", "out_proj", "gate_proj", "up_proj", "down_proj"],
    "qwen3_next": ["q_proj", "k_proj", "v_proj", "o_proj", "in_proj_qkvz", "in_proj_ba", "out_proj", "gate_proj",
                   "up_proj", "down_proj"],
}
LORA_NOT_EXPRESSIBLE = {
    "qwen2_moe": "all-linear also adapts shared_expert_gate (d -> 1), which no memfit target names",
}
# QLoRA: the same LoRA over a real bitsandbytes 4-bit base (NF4, double quantisation, bf16 compute)
# loaded on the CPU, under bf16 autocast, with and without prepare_model_for_kbit_training.
# (transformers 5 leaves Falcon's FalconLinear unquantised: its QLoRA steps check memfit's
# falcon_left_unquantized, a 16-bit base, fp32 after prepare_model_for_kbit_training.)
ACTIVATION_TOLERANCE = 0.01
# Families also measured with transformers' torch fallback for the Gated DeltaNet (no
# flash-linear-attention or causal-conv1d installed): memfit's training.linear_attention_kernel torch.
FALLBACK_FAMILIES = ("qwen3_5_text",)
TINY = dict(vocab=512, hidden=128, layers=2, heads=4, ff=344, head_dim=32, positions=256, batch=2, seq=64)
HYBRID_TINY_LAYERS = 4


def tiny(config):
    """The config with its sizes shrunk and its dropouts off; every other key as the file has it."""
    d = {k: v for k, v in config.items() if not k.startswith("_")}
    heads = d.get("num_attention_heads", d.get("n_head"))
    for k, v in list(d.items()):
        if k == "vocab_size":
            d[k] = TINY["vocab"]
        elif k in ("hidden_size", "n_embd", "n_embed"):
            d[k] = TINY["hidden"]
        elif k in ("num_hidden_layers", "n_layer"):
            d[k] = TINY["layers"]
        elif k in ("num_attention_heads", "n_head"):
            d[k] = TINY["heads"]
        elif k in ("num_key_value_heads", "num_kv_heads"):
            d[k] = TINY["heads"] if v == heads else (1 if v == 1 else 2)
        elif k in ("intermediate_size", "ffn_dim", "shared_expert_intermediate_size"):
            d[k] = TINY["ff"]
        elif k == "n_inner" and v is not None:
            d[k] = 4 * TINY["hidden"]
        elif k == "head_dim":
            d[k] = TINY["head_dim"]
        elif k == "rotary_dim":
            d[k] = 8
        elif k in ("max_position_embeddings", "n_positions", "seq_length"):
            d[k] = TINY["positions"]
        elif k == "moe_intermediate_size":
            d[k] = 64
        elif k in ("num_experts", "num_local_experts", "moe_num_experts"):
            d[k] = 8
        elif k in ("num_experts_per_tok", "moe_k"):
            d[k] = 2
        elif k in ("max_window_layers",):
            d[k] = TINY["layers"]
        elif k in ("word_embed_proj_dim",):
            d[k] = TINY["hidden"]
        elif k == "layer_types" and isinstance(v, list):
            d[k] = v[:TINY["layers"]]
        elif k == "first_k_dense_replace":
            d[k] = 1
        elif k == "n_routed_experts":
            d[k] = 8
        elif k in ("q_lora_rank", "kv_lora_rank") and v:
            d[k] = 64 if k == "q_lora_rank" else 32
        elif k in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            d[k] = 16
        elif k == "n_group":
            d[k] = 2
        elif k == "topk_group":
            d[k] = 1
        elif k.endswith("_token_id") and v is not None:
            d[k] = [1] * len(v) if isinstance(v, list) else 1   # inside the tiny vocabulary
        elif ("dropout" in k or "pdrop" in k) and isinstance(v, float):
            d[k] = 0.0
        elif k in ("linear_num_key_heads", "linear_num_value_heads"):
            d[k] = 2 if k == "linear_num_key_heads" else 4
        elif k in ("linear_key_head_dim", "linear_value_head_dim"):
            d[k] = TINY["head_dim"]
    # A hybrid model keeps one whole span of its pattern (Qwen3.5: three Gated DeltaNet layers, then
    # attention), and its multimodal rotary sections fit the tiny head's rotary half.
    if "linear_attention" in (config.get("layer_types") or []) or "full_attention_interval" in config:
        d["num_hidden_layers"] = HYBRID_TINY_LAYERS
        if config.get("layer_types"):
            d["layer_types"] = config["layer_types"][:HYBRID_TINY_LAYERS]
    rope = d.get("rope_parameters")
    if isinstance(rope, dict) and rope.get("mrope_section"):
        half = int(TINY["head_dim"] * rope.get("partial_rotary_factor", 1.0)) // 2
        d["rope_parameters"] = dict(rope, mrope_section=[half - 2 * (half // 4), half // 4, half // 4])
    return d


def language_model(config, family):
    """A multimodal file's language model (its text_config, as memfit reads it); else the file."""
    if isinstance(config.get("text_config"), dict):
        return dict(config["text_config"], model_type=family)
    return config


def count_full(config):
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(**{k: v for k, v in config.items() if not k.startswith("_")})
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(cfg)
    return sum(p.numel() for p in {id(p): p for p in m.parameters()}.values()), type(m).__name__


def _fixture_build(case):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(**case["hf_config"])
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=case["attention"], dtype=torch.float32)
    model.train()
    return M.Built(model, M.hf_trainer_forward(model, case["precision"]),
                   note="transformers %s %s" % (transformers.__version__, type(model).__name__))


def memfit_json(binary, path, sets):
    """memfit's result for a config.json with `sets` (path -> value), or {"error": why}."""
    cmd = [binary, "--hf-config", path, "--json"]
    for k, v in sets.items():
        cmd += ["--set", "%s=%s" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return {"error": (p.stderr or p.stdout).strip()[:400]}
    if not r.get("ok", True):
        return {"error": "; ".join("%s: %s" % (e.get("field"), e.get("message")) for e in r.get("errors", []))}
    return r


def run_memfit(binary, path, precision, attention, extra=None):
    sets = {"training.micro_batch_size": TINY["batch"], "training.seq_len": TINY["seq"],
            "training.precision": precision, "training.attention": attention,
            "training.checkpointing": "none", "training.dropout": 0, "training.optimizer": "adamw",
            "hardware.gpu": "h100-sxm-80gb", **(extra or {})}
    r = memfit_json(binary, path, sets)
    if "error" in r:
        return r
    b = r["breakdown"]
    return {"activations": b["activations"], "logits_and_loss": b["logits_and_loss"],
            "parameter_count": r["parameter_count"]}


def lora_targets(family, small):
    """memfit's targets for PEFT's all-linear on this family (None: not expressible)."""
    if family in LORA_NOT_EXPRESSIBLE:
        return None
    attention = ["qkv", "o"] if family in LORA_FUSED_QKV else ["q", "k", "v", "o"]
    moe = family in ("mixtral", "qwen3_moe", "deepseek_v3", "mistral4", "glm4_moe_lite", "minimax_m2", "phimoe", "phimoe_jitter", "mixtral_jitter", "gpt_oss", "glm4_moe", "dots1", "olmoe", "ernie4_5_moe",
                     "qwen3_5_moe_text", "qwen3_next")
    hybrid = ["linear_attn"] if family in ("qwen3_5_text", "qwen3_5_moe_text", "qwen3_next") else []
    router = ["router"] if moe and family not in LORA_NAMED_TARGETS else []
    return attention + hybrid + ["gate", "up", "down"] + router


def adapter_steps(family, small, small_path, binary, problems, label, variants):
    """PEFT's LoRA on every linear of the tiny model against memfit, one step per variant:
    (the keys the step records, the measured case's settings, memfit's precision and settings)."""
    import moe_lora  # imports this module: loaded here, not at the top
    targets = lora_targets(family, small)
    if targets is None:
        return {"skipped": LORA_NOT_EXPRESSIBLE[family]}
    steps = []
    for keys, settings, precision, sets in variants:
        # A variant may name its own targets (PEFT's in peft_targets, memfit's here).
        settings = dict(settings)
        variant_targets = settings.pop("memfit_targets", targets)
        what = "%s %s %s" % (family, label, " ".join("%s %s" % kv for kv in keys.items()))
        name = "-".join([family, label] + [str(v) for v in keys.values()])
        M.SIZES[name] = dict(vocab_size=TINY["vocab"], batch=TINY["batch"], seq_len=TINY["seq"])
        case = dict({"name": name, "family": family, "size": name, "attention": "eager", "hf_config": small},
                    **settings)
        measured = M.run_once(case, "cuda" if case["precision"] == "bf16_mixed" else None)
        mf = moe_lora.run_memfit(binary, small_path, precision, "eager", variant_targets, sets)
        step = dict(keys, memfit_targets=variant_targets, measured_body_bytes_cuda=measured["saved"]["body_bytes_cuda"],
                    measured_trainable=measured["trainable_parameter_count"], memfit=mf)
        if mf.get("activations") is None:
            problems.append("%s: %s" % (what, mf.get("error", "no result")))
        else:
            step["ratio"] = round(mf["activations"] / step["measured_body_bytes_cuda"], 4)
            if mf["trainable"] != step["measured_trainable"]:
                problems.append("%s: trainable memfit %d, PEFT %d" % (what, mf["trainable"], step["measured_trainable"]))
            if abs(step["ratio"] - 1) > ACTIVATION_TOLERANCE:
                problems.append("%s: memfit activations %d, measured %d (ratio %.4f)" % (
                    what, mf["activations"], step["measured_body_bytes_cuda"], step["ratio"]))
        print("%-40s measured %9d  memfit %9s  ratio %s" % (
            what, step["measured_body_bytes_cuda"], mf.get("activations"), step.get("ratio")), file=sys.stderr)
        steps.append(step)
    return steps


# LoRA on some modules only (PEFT's module names, memfit's targets). A hybrid model's blocks of one kind
# adapted and the other's not: the blocks below the first adapted one keep nothing, and the
# attention's output gate keeps the attention's output whatever o_proj does.
TARGET_SUBSETS = {
    "qwen3_5_text": [
        (["q_proj", "k_proj", "v_proj", "o_proj"], ["q", "k", "v", "o"]),
        (["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"], ["linear_attn"]),
        (["gate_proj", "up_proj", "down_proj"], ["gate", "up", "down"]),
    ],
    # Four norms a block with the attention frozen: in the first block only the norm after the MLP
    # reads a tensor that needs a gradient.
    "gemma2": [(["gate_proj", "up_proj", "down_proj"], ["gate", "up", "down"])],
    "glm4": [(["gate_up_proj", "down_proj"], ["gate", "up", "down"])],
}


def lora_steps(family, small, small_path, binary, problems):
    """LoRA over the 16-bit base, fp32 and under bf16 autocast (PEFT's recipe: bf16 base, fp32 adapters)."""
    import moe_lora
    M.BUILDERS["moe_lora"] = moe_lora._build
    variants = [
        ({"precision": p, "attention": "eager"},
         {"framework": "moe_lora", "precision": p,
          "peft_targets": {"target_modules": LORA_NAMED_TARGETS.get(family, "all-linear")}}, p, {})
        for p in ("fp32", "bf16_mixed")]
    variants += [
        ({"precision": p, "attention": "eager", "targets": "+".join(mine)},
         {"framework": "moe_lora", "precision": p, "peft_targets": {"target_modules": peft}, "memfit_targets": mine},
         p, {})
        for peft, mine in TARGET_SUBSETS.get(family, []) for p in ("fp32", "bf16_mixed")]
    return adapter_steps(family, small, small_path, binary, problems, "LoRA", variants)


def _qlora_build(case):
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig
    from compat import peft_without_torchao
    peft_without_torchao()
    from peft import IA3Config, LoraConfig, RoadConfig, get_peft_model, prepare_model_for_kbit_training
    # the checkpoint's own quantisation (DeepSeek-V3's FP8) is not this run's
    cfg = AutoConfig.for_model(**{k: v for k, v in case["hf_config"].items() if k != "quantization_config"})
    with tempfile.TemporaryDirectory() as folder:
        AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).save_pretrained(folder)
        quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
                                   bnb_4bit_use_double_quant=True)
        model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant, dtype=torch.bfloat16,
                                                     device_map="cpu", attn_implementation="eager")
    if case["prepare_kbit"]:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    targets = case.get("peft_targets") or LORA_NAMED_TARGETS.get(case["family"], "all-linear")
    method = case.get("peft_method", "lora")
    if method == "ia3":  # memfit's default feedforward module: down_proj
        config = IA3Config(target_modules=targets, feedforward_modules=[
            m for m in ("down_proj",) if not isinstance(targets, list) or m in targets])
    elif method == "road":
        config = RoadConfig(target_modules=targets)
    else:
        config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=targets, use_dora=method == "dora")
    model = get_peft_model(model, config)
    model.train()
    return M.Built(model, M.hf_trainer_forward(model, "bf16_mixed"),
                   note="bitsandbytes NF4 base%s + peft %s" % (", prepare_model_for_kbit_training"
                                                               if case["prepare_kbit"] else "", method))


# DoRA over the 4-bit base (QDoRA) on dense families of each kind of block: its layers return fp32
# under autocast (lora/bnb.py, lora/dora.py). With prepare_model_for_kbit_training (an fp32 stream
# throughout) on every linear; without it on q and v alone, which leave the stream 16-bit. (Without
# prepare_kbit on every linear, the tiny model's first block reads the 16-bit embedding where memfit
# takes every block fp32: +2.5 to +3.5 % on two blocks, one of 32 in a 32-layer model.) IA3 and
# RoAd over the 4-bit base return fp32 the same way (ia3/bnb.py, road/bnb.py): IA3 on Granite and
# Qwen3 as DoRA, RoAd on q and v (its groups of 64 need out_features divisible by 64).
DORA_FAMILIES = {"granite": ["q_proj", "v_proj"], "qwen3": ["q_proj", "v_proj"], "gemma": ["q_proj", "v_proj"],
                 "olmo2": ["q_proj", "v_proj"], "phi3": None, "gpt_neox": None, "falcon": None}


def qlora_steps(family, small, small_path, binary, problems):
    """LoRA over a real bitsandbytes 4-bit base (NF4, double quantisation, bf16 compute) under bf16
    autocast, with and without prepare_model_for_kbit_training."""
    M.BUILDERS["qlora"] = _qlora_build
    base = {"training.finetune.base_bits": 4, "training.finetune.quant_type": "nf4",
            "training.finetune.double_quant": "true", "training.lora_adapter_dtype": "fp32"}
    variants = [
        ({"prepare_kbit": prepare}, {"framework": "qlora", "precision": "bf16_mixed", "prepare_kbit": prepare},
         "bf16_autocast", dict(base, **{"training.finetune.prepare_kbit": str(prepare).lower()}))
        for prepare in (False, True)]
    methods = ["dora"] + (["ia3", "road"] if family in ("granite", "qwen3") else [])
    for method in methods if family in DORA_FAMILIES else []:
        sets = dict(base, **{"training.finetune.method": method})
        if method != "road":  # (RoAd's groups of 64 do not divide the tiny MLP's 344)
            variants.append(({"prepare_kbit": True, "method": method},
                             {"framework": "qlora", "precision": "bf16_mixed", "prepare_kbit": True,
                              "peft_method": method},
                             "bf16_autocast", dict(sets, **{"training.finetune.prepare_kbit": "true"})))
        if DORA_FAMILIES[family]:
            variants.append(({"prepare_kbit": False, "method": method, "targets": "q+v"},
                             {"framework": "qlora", "precision": "bf16_mixed", "prepare_kbit": False,
                              "peft_method": method, "peft_targets": DORA_FAMILIES[family],
                              "memfit_targets": ["q", "v"]},
                             "bf16_autocast", dict(sets, **{"training.finetune.prepare_kbit": "false"})))
    return adapter_steps(family, small, small_path, binary, problems, "QLoRA", variants)


def tool_args(out_name, doc=None):
    """The command line these tools share (--memfit, --only, --explain, --out), parsed; --explain set
    for measure.py."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--memfit", default=os.path.join(ROOT, "build", "cli", "memfit"))
    ap.add_argument("--only")
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "out", out_name))
    args = ap.parse_args()
    M.ARGS = types.SimpleNamespace(explain=args.explain)
    return args


def write_report(doc, path, problems, write=True):
    """The measurement file (unless a partial run: --only) and the problems, one line each."""
    if write:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print("wrote %s" % path, file=sys.stderr)
    for p in problems:
        print("PROBLEM " + p, file=sys.stderr)


def main():
    args = tool_args("families.json")
    M.BUILDERS["hf_fixture"] = _fixture_build
    want = set(args.only.split(",")) if args.only else set(FIXTURES)
    rows, problems = [], []
    for family, fixture in FIXTURES.items():
        if family not in want:
            continue
        fixture, overrides = fixture if isinstance(fixture, tuple) else (fixture, {})
        path = os.path.join(ROOT, "tests", "fixtures", "hf", fixture)
        config = language_model(dict(json.load(open(path)), **overrides), family)
        row = {"family": family, "fixture": fixture, "overrides": overrides}
        if overrides:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(config, f)
                path = f.name
        row["transformers_count"], row["class"] = count_full(config)
        full = run_memfit(args.memfit, path, "bf16_mixed", "sdpa")  # a count: any kernel the class has
        if overrides:
            os.unlink(path)
        row["memfit_count"] = full.get("parameter_count")
        if row["memfit_count"] != row["transformers_count"]:
            problems.append("%s: parameter count memfit %s, transformers %s" % (
                family, row["memfit_count"], row["transformers_count"]))
        small = tiny(config)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(small, f)
            small_path = f.name
        row["tiny_config"] = small
        row["steps"] = []
        try:
            from transformers import AutoConfig, AutoModelForCausalLM
            cls = AutoModelForCausalLM._model_mapping[type(AutoConfig.for_model(**small))]
            # A class without an SDPA path (BLOOM) trains with eager attention whatever is asked.
            fast = ("sdpa", "sdpa") if cls._supports_sdpa else ("eager", "eager")
            row["sdpa"] = bool(cls._supports_sdpa)
            for precision, attention, memfit_attention in (("fp32", "eager", "eager"), ("bf16_mixed",) + fast):
                name = "%s-%s-%s" % (family, attention, precision)
                M.SIZES[name] = dict(vocab_size=TINY["vocab"], batch=TINY["batch"], seq_len=TINY["seq"])
                case = {"name": name, "framework": "hf_fixture", "family": family, "size": name,
                        "attention": attention, "precision": precision, "hf_config": small}
                measured = M.run_once(case, "cuda" if precision == "bf16_mixed" else None)
                body = measured["saved"]["body_bytes_cuda"]
                mf = run_memfit(args.memfit, small_path, precision, memfit_attention)
                step = {"precision": precision, "attention": attention, "measured_body_bytes_cuda": body,
                        "measured_head_bytes_cuda": measured["saved"]["head_bytes_cuda"],
                        "measured_parameter_count": measured["parameter_count"],
                        "implementation": measured["implementation"], "memfit": mf}
                if mf.get("activations") is not None and body:
                    step["ratio"] = round(mf["activations"] / body, 4)
                    if abs(step["ratio"] - 1) > ACTIVATION_TOLERANCE:
                        problems.append("%s %s/%s: memfit activations %d, measured %d (ratio %.4f)" % (
                            family, attention, precision, mf["activations"], body, step["ratio"]))
                else:
                    problems.append("%s %s/%s: %s" % (family, attention, precision, mf.get("error", "no result")))
                if mf.get("parameter_count") != measured["parameter_count"]:
                    problems.append("%s tiny: parameter count memfit %s, transformers %s" % (
                        family, mf.get("parameter_count"), measured["parameter_count"]))
                row["steps"].append(step)
                print("%-22s %-6s %-10s measured %9d  memfit %9s  ratio %s" % (
                    family, attention, precision, body, mf.get("activations"), step.get("ratio")), file=sys.stderr)
            if family in FALLBACK_FAMILIES:
                row["fallback_steps"] = []
                for precision, attention in (("fp32", "eager"), ("bf16_mixed", "sdpa")):
                    name = "%s-fallback-%s-%s" % (family, attention, precision)
                    M.SIZES[name] = dict(vocab_size=TINY["vocab"], batch=TINY["batch"], seq_len=TINY["seq"])
                    case = {"name": name, "framework": "hf_fixture", "family": family, "size": name,
                            "attention": attention, "precision": precision, "hf_config": small}
                    with gdn_kernels.torch_fallback(gdn_modules()):
                        measured = M.run_once(case, "cuda" if precision == "bf16_mixed" else None)
                    body = measured["saved"]["body_bytes_cuda"]
                    mf = run_memfit(args.memfit, small_path, precision, attention,
                                    {"training.linear_attention_kernel": "torch"})
                    step = {"precision": precision, "attention": attention, "measured_body_bytes_cuda": body,
                            "memfit": mf, "ratio": round(mf["activations"] / body, 4) if mf.get("activations") else None}
                    row["fallback_steps"].append(step)
                    print("%-22s torch fallback %-6s %-10s measured %9d  memfit %9s  ratio %s" % (
                        family, attention, precision, body, mf.get("activations"), step["ratio"]), file=sys.stderr)
            row["lora_steps"] = lora_steps(family, small, small_path, args.memfit, problems)
            row["qlora_steps"] = qlora_steps(family, small, small_path, args.memfit, problems)
        finally:
            os.unlink(small_path)
        print("%-22s parameters: transformers %d, memfit %s (%s)" % (
            family, row["transformers_count"], row["memfit_count"], row["class"]), file=sys.stderr)
        rows.append(row)
    import importlib.metadata as md
    doc = {"about": __doc__.strip().splitlines()[0],
           "versions": {k: md.version(k) for k in ("torch", "transformers", "accelerate")},
           "tiny": TINY, "activation_tolerance": ACTIVATION_TOLERANCE, "cuda_rules": M.CUDA_RULES,
           "families": rows, "problems": problems}
    write_report(doc, args.out, problems, write=not args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
