#!/usr/bin/env python3
"""PEFT's own trainable-parameter counts for every method memfit models, as a test fixture.

    .venv-frameworks/bin/python tools/frameworks/peft_fixture.py      # -> tests/fixtures/peft/peft_counts.json

Each case is a memfit configuration (a preset and `training.finetune`) and the same adapter built by
the real library on the real model: the model from its vendored config.json (tests/fixtures/hf/),
built on the meta device (no weights, no downloads), wrapped with PEFT's get_peft_model (or
LitGPT's adapter_v2 for llama_adapter_v2), and counted with get_nb_trainable_parameters().
tests/core/peft_test.cpp asserts that memfit's trainable_parameter_count and parameter_count equal
these numbers exactly. BOFT and SHiRA cannot initialise on the meta device (BOFT calls
Tensor.item(), SHiRA samples indices from the weight): their adapters are built on the CPU, on a
copy of the model cut to 2 layers where the model is too large for the CPU (recorded as
`layers_built`); both methods' parameters are per layer, so the count is scaled by layers / 2 and
checked on the full model as well where it fits.
"""

import argparse
import importlib.metadata as md
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, "tests", "fixtures", "hf")
OUT = os.path.join(ROOT, "tests", "fixtures", "peft", "peft_counts.json")

import torch  # noqa: E402
import transformers  # noqa: E402


def peft_without_torchao():
    """peft 0.21 refuses torchao < 0.16, which torchtune 0.6 in the same venv needs; nothing here
    uses torchao-quantised layers, so tell peft it is absent (same workaround as the frameworks
    helper's compat.py)."""
    import peft  # noqa: F401
    import peft.import_utils as iu
    orig = iu.is_torchao_available
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("peft") and getattr(mod, "is_torchao_available", None) is orig:
            mod.is_torchao_available = lambda: False


peft_without_torchao()
import peft  # noqa: E402

transformers.logging.set_verbosity_error()

# memfit preset -> vendored config, and how PEFT names each memfit target in that family.
MODELS = {
    "llama-2-7b": "meta-llama__Llama-2-7b-hf",
    "llama-3-8b": "meta-llama__Meta-Llama-3-8B",
    "mistral-7b-v0.1": "mistralai__Mistral-7B-v0.1",
    "qwen2.5-7b": "Qwen__Qwen2.5-7B",
    "gpt2": "gpt2",
    "opt-125m": "facebook__opt-125m",
    "bert-base-uncased": "bert-base-uncased",
    # Mixtures of experts: transformers 5 stacks each expert projection into one 3-D parameter, which
    # PEFT adapts through target_parameters (one adapter per projection, gate and up fused).
    "mixtral-8x7b": "mistralai__Mixtral-8x7B-v0.1",
    "qwen3-30b-a3b": "Qwen__Qwen3-30B-A3B",
    # Qwen2-MoE is not in PEFT's mapping: its module names reach the shared expert's nn.Linear
    # projections only, not the stacked routed experts (memfit: peft.hpp ExpertTargeting).
    "qwen1.5-moe-a2.7b": "Qwen__Qwen1.5-MoE-A2.7B",
    # Phi-3: fused qkv_proj and gate_up_proj, each one adapted layer (memfit: qkv; gate and up together).
    "phi-3-mini-4k": "microsoft__Phi-3-mini-4k-instruct",
    # Encoder-decoders (SEQ_2_SEQ_LM): PEFT gives prompt methods a prompt per stack.
    "t5-base": "google-t5__t5-base",
    "bart-base": "facebook__bart-base",
}
LLAMA = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
         "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj", "head": "lm_head",
         "_norms": r"(input_layernorm|post_attention_layernorm|model\.norm)", "_emb": "embed_tokens"}
NAMES = {
    "llama": LLAMA, "mistral": LLAMA, "qwen2": LLAMA,
    # The checkpoints' (transformers 4) expert names, which PEFT maps onto the stacked parameters
    # (peft/utils/transformers_weight_conversion.py _MOE_TARGET_MODULE_MAPPING), and the router.
    "mixtral": dict(LLAMA, gate="w1", up="w3", down="w2", router="mlp.gate"),
    "qwen3_moe": dict(LLAMA, gate="gate_proj", up="up_proj", down="down_proj", router="mlp.gate"),
    "qwen2_moe": dict(LLAMA, gate="gate_proj", up="up_proj", down="down_proj"),
    "phi3": dict(LLAMA, qkv="self_attn.qkv_proj", gate="mlp.gate_up_proj", up="mlp.gate_up_proj"),
    "gpt2": {"qkv": "attn.c_attn", "o": "attn.c_proj", "up": "mlp.c_fc", "down": "mlp.c_proj", "head": "lm_head",
             "_norms": r"(ln_1|ln_2|ln_f)", "_emb": "wte"},
    "opt": {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.out_proj",
            "up": "fc1", "down": "fc2", "head": "lm_head",
            "_norms": r"(self_attn_layer_norm|final_layer_norm)", "_emb": "embed_tokens"},
    "bert": {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "up": "intermediate.dense", "down": r"layer\.\d+\.output\.dense",
             "_norms": "LayerNorm", "_emb": "word_embeddings"},
}


def load(preset, layers=None):
    with open(os.path.join(FIX, MODELS[preset] + ".json")) as f:
        d = json.load(f)
    d.pop("quantization_config", None)
    for k in ("architectures", "transformers_version", "torch_dtype", "_name_or_path", "auto_map"):
        d.pop(k, None)
    cfg = transformers.AutoConfig.for_model(d.pop("model_type"), **d)
    if layers is not None:
        for key in ("num_hidden_layers", "n_layer"):
            if hasattr(cfg, key):
                setattr(cfg, key, layers)
    return cfg


def build(preset, device="meta", layers=None):
    cfg = load(preset, layers)
    auto = (transformers.AutoModel if cfg.model_type == "bert" else
            transformers.AutoModelForSeq2SeqLM if cfg.model_type in SEQ2SEQ else transformers.AutoModelForCausalLM)
    with torch.device(device):
        model = auto.from_config(cfg, torch_dtype=torch.float32 if device == "cpu" else None)
    return model, cfg


SEQ2SEQ = ("t5", "bart")


def target_regex(family, targets):
    names = NAMES[family]
    return r".*\.(" + "|".join(names[t] for t in targets) + r")$"


def peft_config(family, ft, cfg, task):
    """The PEFT config equivalent to memfit's training.finetune `ft`."""
    m, r, targets = ft["method"], ft.get("lora_rank", 16), ft.get("lora_targets", [])
    tm = target_regex(family, targets) if targets else None
    C = peft
    common = {"task_type": task} if task else {}
    if m in ("lora", "dora", "lora_fa"):
        return C.LoraConfig(r=r, target_modules=tm, use_dora=m == "dora", use_rslora=ft.get("use_rslora", False),
                            **common)
    if m == "adalora":
        return C.AdaLoraConfig(init_r=r, target_r=max(1, r // 2), total_step=1000, target_modules=tm, **common)
    if m == "vera":
        return C.VeraConfig(r=r, target_modules=tm, **common)
    if m == "ia3":
        ff = [t for t in targets if t == "down"]
        return C.IA3Config(target_modules=tm, feedforward_modules=target_regex(family, ff) if ff else [], **common)
    if m == "prompt_tuning":
        return C.PromptTuningConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common)
    if m == "prefix_tuning":
        kw = {"prefix_projection": ft.get("prefix_projection", False)}
        if ft.get("encoder_hidden_size"):
            kw["encoder_hidden_size"] = ft["encoder_hidden_size"]
        return C.PrefixTuningConfig(num_virtual_tokens=ft["num_virtual_tokens"], **kw, **common)
    if m == "p_tuning":
        kw = {"encoder_reparameterization_type": ft.get("encoder_reparameterization_type", "mlp").upper()}
        if ft.get("encoder_hidden_size"):
            kw["encoder_hidden_size"] = ft["encoder_hidden_size"]
        return C.PromptEncoderConfig(num_virtual_tokens=ft["num_virtual_tokens"], **kw, **common)
    if m == "llama_adapter":
        return C.AdaptionPromptConfig(adapter_len=ft["adapter_len"],
                                      adapter_layers=cfg.num_hidden_layers - ft["adapter_start_layer"], **common)
    if m == "oft":
        return C.OFTConfig(r=0, oft_block_size=ft.get("block_size") or 32, target_modules=tm, **common)
    if m == "boft":
        return C.BOFTConfig(boft_block_size=ft.get("block_size") or 4,
                            boft_n_butterfly_factor=ft.get("boft_n_butterfly_factor", 1), target_modules=tm, **common)
    if m == "ln_tuning":
        return C.LNTuningConfig(target_modules=r".*" + NAMES[family]["_norms"] + r"$", **common)
    if m == "trainable_tokens":
        return C.TrainableTokensConfig(target_modules=[NAMES[family]["_emb"]],
                                       token_indices=list(range(ft["num_trainable_tokens"])), **common)
    if m == "multitask_prompt_tuning":
        return C.MultitaskPromptTuningConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common)
    if m == "cpt":  # the context's token ids set the virtual tokens (cpt/config.py: cpt_token_ids)
        return C.CPTConfig(cpt_token_ids=list(range(ft["num_virtual_tokens"])), **common)
    if m == "cartridge":
        return C.CartridgeConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common)
    if m == "lily":  # Lily shares its B experts per matched entry: names, as users write them (not a regex)
        tm = [NAMES[family][t].split(".")[-1] for t in targets]
    simple = {"loha": (C.LoHaConfig, {"r": r}), "lokr": (C.LoKrConfig, {"r": r}), "hra": (C.HRAConfig, {"r": r}),
              "miss": (C.MissConfig, {"r": r}), "vblora": (C.VBLoRAConfig, {"r": r}),
              "randlora": (C.RandLoraConfig, {"r": r}), "delora": (C.DeloraConfig, {"r": r}),
              "gralora": (C.GraloraConfig, {"r": r}), "tinylora": (C.TinyLoraConfig, {"r": r}),
              "shira": (C.ShiraConfig, {"r": r}), "hira": (C.HiraConfig, {"r": r}), "road": (C.RoadConfig, {}),
              "c3a": (C.C3AConfig, {"block_size": ft.get("block_size") or 256}),
              "fourierft": (C.FourierFTConfig, {"n_frequency": ft.get("n_frequency") or 1000}),
              "waveft": (C.WaveFTConfig, {"n_frequency": ft.get("n_frequency") or 2592}),
              "adamss": (C.AdamssConfig, {"r": r}), "beft": (C.BeftConfig, {}), "lily": (C.LilyConfig, {"r": r}),
              "poly": (C.PolyConfig, {"r": r}), "frod": (C.FrodConfig, {}), "pvera": (C.PveraConfig, {"r": r}),
              "glora": (C.GloraConfig, {"r": r}), "unilora": (C.UniLoraConfig, {"r": r}), "osf": (C.OSFConfig, {}),
              "psoft": (C.PsoftConfig, {"r": r}), "peanut": (C.PeanutConfig, {"r": r}),
              "supertuning": (C.SupertuningConfig, {}), "deft": (C.DeftConfig, {"r": r})}
    cls, kw = simple[m]
    return cls(target_modules=tm, **kw, **common)


def count_peft(preset, ft, device="meta", layers=None):
    model, cfg = build(preset, "meta" if device == "meta" else "cpu", layers)
    family = cfg.model_type
    task = "FEATURE_EXTRACTION" if family == "bert" else "SEQ_2_SEQ_LM" if family in SEQ2SEQ else "CAUSAL_LM"
    pc = peft_config(family, ft, cfg, task)
    pm = peft.get_peft_model(model, pc)
    if ft["method"] == "lora_fa":  # what peft.optimizers.create_lorafa_optimizer does to the model
        for n, p in pm.named_parameters():
            if "lora_A" in n:
                p.requires_grad_(False)
    trainable, total = pm.get_nb_trainable_parameters()
    return int(trainable), int(total), pc.to_dict()


def count_layers_extended(preset, wrap):
    """Counts of `wrap(model, cfg)` on real CPU models of 1 and 2 layers (the vocabulary cut: the
    methods counted so do not touch it), extended to the model's layers: a fixed part and a part per
    layer. For methods that need real modules (X-LoRA loads adapters from disk, ShadowPEFT builds a
    copy of a block)."""
    import gc

    def small(layers):
        cfg = load(preset, layers)
        cfg.vocab_size = 256
        with torch.device("cpu"):
            return transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16), cfg
    counts = []
    for layers in (1, 2):
        model, cfg = small(layers)
        base = sum(p.numel() for p in model.parameters())
        model.config.use_cache = False
        pm = wrap(model, cfg, small, layers)
        trainable, total = pm.get_nb_trainable_parameters()
        counts.append((int(trainable), int(total) - base))
        del model, pm
        gc.collect()
    full_layers = load(preset).num_hidden_layers
    (t1, a1), (t2, a2) = counts
    base_full = sum(p.numel() for p in build(preset, "meta")[0].parameters())
    return t1 + (t2 - t1) * (full_layers - 1), base_full + a1 + (a2 - a1) * (full_layers - 1), {"layers_built": [1, 2]}


def count_shadow(preset, ft):
    """ShadowPEFT with its defaults (a one-layer mirror, update_hidden_size = r)."""
    return count_layers_extended(preset, lambda model, cfg, small, layers: peft.get_peft_model(
        model, peft.ShadowConfig(task_type="CAUSAL_LM", r=ft["lora_rank"])))


def count_xlora(preset, ft):
    """X-LoRA over `num_adapters` LoRA adapters saved from the same base (fresh ones: X-LoRA loads
    adapters from disk, xlora/model.py)."""
    import gc
    import tempfile

    def wrap(model, cfg, small, layers):
        tmp = tempfile.mkdtemp()
        adapters = {}
        for i in range(ft["num_adapters"]):
            other, _ = small(layers)
            lora = peft.LoraConfig(r=ft["lora_rank"], target_modules=target_regex(cfg.model_type, ft["lora_targets"]),
                                   task_type="CAUSAL_LM")
            adapters[str(i)] = os.path.join(tmp, str(i))  # X-LoRA activates its adapters by these names
            peft.get_peft_model(other, lora).save_pretrained(adapters[str(i)])
            del other
            gc.collect()
        return peft.get_peft_model(model, peft.XLoraConfig(task_type="CAUSAL_LM", hidden_size=cfg.hidden_size,
                                                           adapters=adapters))
    return count_layers_extended(preset, wrap)


def count_litgpt_v2(preset, ft):
    """LLaMA-Adapter v2 as LitGPT implements it (litgpt/adapter_v2.py)."""
    import litgpt.adapter_v2 as a2
    name = {"llama-2-7b": "Llama-2-7b-hf", "llama-3-8b": "Meta-Llama-3-8B", "mistral-7b-v0.1": "Mistral-7B-v0.1",
            "qwen2.5-7b": "Qwen2.5-7B"}[preset]
    cfg = a2.Config.from_name(name, adapter_prompt_length=ft["adapter_len"],
                              adapter_start_layer=ft["adapter_start_layer"])
    with torch.device("meta"):
        model = a2.GPT(cfg)
    a2.mark_only_adapter_v2_as_trainable(model)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return int(trainable), int(total), {"litgpt_config": name, "padded_vocab_size": cfg.padded_vocab_size}


def cases():
    """(preset, finetune) pairs: every method on every model PEFT supports it on."""
    decoders = ["llama-2-7b", "llama-3-8b", "mistral-7b-v0.1", "qwen2.5-7b", "opt-125m"]
    everyone = decoders + ["gpt2", "bert-base-uncased"]
    qv = {p: ["q", "v"] for p in everyone}
    qv["gpt2"] = ["qkv"]
    every_linear = {p: ["q", "k", "v", "o", "gate", "up", "down"] for p in decoders[:4]}
    every_linear.update({"opt-125m": ["q", "k", "v", "o", "up", "down"], "bert-base-uncased":
                         ["q", "k", "v", "o", "up", "down"], "gpt2": ["qkv", "o", "up", "down"]})
    ia3 = {p: ["k", "v", "down"] for p in everyone}
    ia3["gpt2"] = ["qkv", "down"]
    conv1d = {"lora", "dora", "lora_fa", "adalora", "vera", "ia3", "fourierft", "vblora", "randlora", "waveft",
              "gralora", "tinylora", "deft", "frod", "pvera", "unilora"}  # PEFT layers that accept GPT-2's Conv1D
    for p in everyone:
        for m, r in (("lora", 8), ("dora", 8), ("lora_fa", 8), ("adalora", 12), ("vera", 256), ("loha", 8),
                     ("lokr", 8), ("hra", 8), ("miss", 64), ("vblora", 4), ("randlora", 32), ("delora", 8),
                     ("gralora", 32), ("tinylora", 2), ("fourierft", 8), ("waveft", 8), ("road", 8), ("oft", 8),
                     ("c3a", 8), ("shira", 32), ("boft", 8), ("hira", 32), ("adamss", 100), ("beft", 8),
                     ("lily", 32), ("poly", 8), ("frod", 8), ("pvera", 256), ("glora", 8), ("unilora", 4),
                     ("osf", 8), ("psoft", 32), ("peanut", 32), ("supertuning", 8), ("deft", 8)):
            if p == "gpt2" and m not in conv1d:
                continue
            yield p, {"method": m, "lora_rank": r, "lora_targets": qv[p]}
        if p == "gpt2":
            yield p, {"method": "lora", "lora_rank": 16, "lora_targets": every_linear[p], "use_rslora": True}
        else:
            for m in ("lora", "dora", "loha", "lokr", "hra", "oft", "glora", "deft", "poly", "supertuning"):
                yield p, {"method": m, "lora_rank": 16, "lora_targets": every_linear[p]}
            if p != "bert-base-uncased":  # BERT's two `dense` names would share Lily's experts across both
                yield p, {"method": "lily", "lora_rank": 16, "lora_targets": every_linear[p]}
        yield p, {"method": "ia3", "lora_targets": ia3[p]}
        yield p, {"method": "prompt_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "prompt_tuning", "num_virtual_tokens": 100}
        if p != "bert-base-uncased":  # transformers 5's BERT takes no past keys and values
            yield p, {"method": "prefix_tuning", "num_virtual_tokens": 20}
            yield p, {"method": "prefix_tuning", "num_virtual_tokens": 30, "prefix_projection": True}
        yield p, {"method": "p_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "p_tuning", "num_virtual_tokens": 20, "encoder_reparameterization_type": "lstm",
                  "encoder_hidden_size": 256}
        if p != "bert-base-uncased":  # BERT takes no cache (Cartridge); CPT is for causal language models
            # only; multitask prompt tuning needs task ids, which PEFT's model without a head does not pass
            yield p, {"method": "cartridge", "num_virtual_tokens": 20}
            yield p, {"method": "cpt", "num_virtual_tokens": 10}
            yield p, {"method": "multitask_prompt_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "ln_tuning"}
        yield p, {"method": "trainable_tokens", "num_trainable_tokens": 10}
        if p in decoders[:4]:  # ShadowPEFT: memfit models rotary decoders (OPT's mirror keeps its positions)
            yield p, {"method": "shadow", "lora_rank": 8}
            yield p, {"method": "shadow", "lora_rank": 16}
        if p in decoders:  # X-LoRA: decoders whose layers sit under `model.` (GPT-2's names fail)
            yield p, {"method": "xlora", "num_adapters": 2, "lora_rank": 8, "lora_targets": qv[p]}
            yield p, {"method": "xlora", "num_adapters": 3, "lora_rank": 4, "lora_targets": every_linear[p]}
        if p in ("llama-2-7b", "llama-3-8b", "mistral-7b-v0.1"):  # PEFT's adaption_prompt: llama and mistral
            yield p, {"method": "llama_adapter", "adapter_len": 10, "adapter_start_layer": 2}
        if p in decoders[:4]:
            yield p, {"method": "llama_adapter_v2", "adapter_len": 10, "adapter_start_layer": 2}
    for p in ("mixtral-8x7b", "qwen3-30b-a3b"):
        mlp = ["q", "k", "v", "o", "gate", "up", "down"]
        yield p, {"method": "lora", "lora_rank": 8, "lora_targets": ["q", "v"]}
        yield p, {"method": "lora", "lora_rank": 16, "lora_targets": mlp}
        yield p, {"method": "lora", "lora_rank": 16, "lora_targets": mlp + ["router"]}
        yield p, {"method": "lora", "lora_rank": 8, "lora_targets": ["q", "k", "v", "o", "down"]}
        yield p, {"method": "lora_fa", "lora_rank": 8, "lora_targets": mlp}
    mlp = ["q", "k", "v", "o", "gate", "up", "down"]
    yield "qwen1.5-moe-a2.7b", {"method": "lora", "lora_rank": 8, "lora_targets": ["q", "v"]}
    yield "qwen1.5-moe-a2.7b", {"method": "lora", "lora_rank": 16, "lora_targets": mlp}
    yield "qwen1.5-moe-a2.7b", {"method": "lora", "lora_rank": 8, "lora_targets": ["q", "k", "v", "o", "down"]}
    yield "qwen1.5-moe-a2.7b", {"method": "dora", "lora_rank": 8, "lora_targets": mlp}
    phi3 = ["qkv", "o", "gate", "up", "down"]
    yield "phi-3-mini-4k", {"method": "lora", "lora_rank": 8, "lora_targets": ["qkv", "o"]}
    yield "phi-3-mini-4k", {"method": "lora", "lora_rank": 16, "lora_targets": phi3}
    yield "phi-3-mini-4k", {"method": "dora", "lora_rank": 8, "lora_targets": phi3}
    yield "phi-3-mini-4k", {"method": "vera", "lora_rank": 64, "lora_targets": ["qkv", "o"]}
    for p in ("t5-base", "bart-base"):  # the prompt methods on encoder-decoders
        yield p, {"method": "prompt_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "p_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "prefix_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "multitask_prompt_tuning", "num_virtual_tokens": 20}
        yield p, {"method": "cartridge", "num_virtual_tokens": 20}
    yield "llama-2-7b", {"method": "oft", "lora_targets": ["q", "v"], "block_size": 48}  # adjusted to 64
    # Butterfly factors > 1 need PEFT's fbd CUDA extension; without it (on the CPU) PEFT forces the
    # factor to 1 (boft/layer.py update_layer, get_fbd_cuda), so only factor 1 can be checked here.
    yield "llama-2-7b", {"method": "boft", "lora_targets": ["q", "v"], "block_size": 8}
    yield "llama-3-8b", {"method": "c3a", "lora_targets": ["q", "v"], "block_size": 128}
    yield "llama-3-8b", {"method": "fourierft", "lora_targets": ["q", "v"], "n_frequency": 3000}


# Methods that cannot initialise on the meta device: BOFT (Tensor.item()), SHiRA (samples indices from
# the weight), and those that decompose the weight (FRoD, OSF, PSOFT: SVD or QR; AdaMSS: SVD and k-means).
REAL_WEIGHTS = ("boft", "shira", "frod", "osf", "psoft", "adamss")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--only", help="comma-separated presets: measure only these, keep the file's other cases")
    ap.add_argument("--methods", help="comma-separated methods: measure only these, keep the file's other cases")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    methods = set(args.methods.split(",")) if args.methods else None

    def chosen(preset, ft):
        return (not only or preset in only) and (not methods or ft["method"] in methods)
    out = []
    if only or methods:
        with open(args.out) as f:
            kept = [c for c in json.load(f)["cases"] if not chosen(c["preset"], c["finetune"])]
    for preset, ft in cases():
        if not chosen(preset, ft):
            continue
        entry = {"preset": preset, "finetune": ft}
        try:
            if ft["method"] == "shadow":
                t, total, conf = count_shadow(preset, ft)
                entry["library"] = "peft %s" % md.version("peft")
            elif ft["method"] == "xlora":
                t, total, conf = count_xlora(preset, ft)
                entry["library"] = "peft %s" % md.version("peft")
            elif ft["method"] == "llama_adapter_v2":
                t, total, conf = count_litgpt_v2(preset, ft)
                entry["library"] = "litgpt %s" % md.version("litgpt")
            elif ft["method"] in REAL_WEIGHTS:
                small = preset in ("opt-125m", "bert-base-uncased", "gpt2")
                layers = None if small else 2
                t, total, conf = count_peft(preset, ft, device="cpu", layers=layers)
                if layers:
                    full_layers = load(preset).num_hidden_layers
                    base_small = sum(p.numel() for p in build(preset, "meta", layers)[0].parameters())
                    base_full = sum(p.numel() for p in build(preset, "meta")[0].parameters())
                    t = t * full_layers // layers
                    total = base_full + (total - base_small) * full_layers // layers
                    entry["layers_built"] = layers
                entry["library"] = "peft %s" % md.version("peft")
            else:
                t, total, conf = count_peft(preset, ft)
                entry["library"] = "peft %s" % md.version("peft")
            entry.update(trainable=t, total=total)
        except Exception as e:  # recorded, and the test skips nothing silently: it fails on a missing count
            entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        print("%-18s %-34s %s" % (preset, json.dumps(ft)[:34], entry.get("trainable", entry.get("error"))),
              file=sys.stderr)
        out.append(entry)
    if only or methods:  # the file's order: every case where cases() yields it
        measured = {(c["preset"], json.dumps(c["finetune"], sort_keys=True)): c for c in out}
        old = {(c["preset"], json.dumps(c["finetune"], sort_keys=True)): c for c in kept}
        out = [measured.get(k) or old[k] for k in
               ((p, json.dumps(ft, sort_keys=True)) for p, ft in cases()) if k in measured or k in old]
    doc = {"about": "tools/frameworks/peft_fixture.py writes this: PEFT's get_nb_trainable_parameters() "
                    "(trainable, total) for memfit configurations on real model configs (meta device)",
           "versions": {k: md.version(k) for k in ("torch", "transformers", "peft", "litgpt")},
           "cases": out}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
