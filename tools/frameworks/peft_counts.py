#!/usr/bin/env python3
"""Trainable-parameter counts of every PEFT method, on real model configs (meta device).

    .venv-frameworks/bin/python tools/frameworks/peft_counts.py                 # -> out/peft_counts.json
    .venv-frameworks/bin/python tools/frameworks/peft_counts.py --models gpt2 --methods lora,ia3

For each model config (the vendored tests/fixtures/hf/*.json files, plus T5-base,
Flan-T5-base, BART-base and RoBERTa-base written from their published config values) the
model is built on the meta device (no weights, no memory), each PEFT method is applied
with its default settings and with one non-default setting, and PEFT's own
`get_nb_trainable_parameters()` is recorded, with the shapes of the trainable tensors
(grouped over layers) so that the C++ side can derive the formula.
"""

import argparse
import copy
import importlib.metadata as md
import json
import os
import re
import sys
import time
import traceback
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, "tests", "fixtures", "hf")

import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402
from peft import get_peft_model  # noqa: E402

sys.path.insert(0, HERE)
from compat import peft_without_torchao  # noqa: E402

peft_without_torchao()

transformers.logging.set_verbosity_error()

# --------------------------------------------------------------------------- models
# Published config values (the models' config.json on the Hub), for models without a
# vendored fixture. Only the keys that size the model are given; the rest are transformers'
# defaults, which equal the published files for these keys.
EXTRA = {
    "t5-base": {"model_type": "t5", "d_model": 768, "d_ff": 3072, "d_kv": 64, "num_heads": 12,
                "num_layers": 12, "num_decoder_layers": 12, "vocab_size": 32128,
                "relative_attention_num_buckets": 32, "feed_forward_proj": "relu",
                "tie_word_embeddings": True},
    "google__flan-t5-base": {"model_type": "t5", "d_model": 768, "d_ff": 2048, "d_kv": 64, "num_heads": 12,
                             "num_layers": 12, "num_decoder_layers": 12, "vocab_size": 32128,
                             "relative_attention_num_buckets": 32, "feed_forward_proj": "gated-gelu",
                             "tie_word_embeddings": False},
    "facebook__bart-base": {"model_type": "bart", "d_model": 768, "encoder_layers": 6, "decoder_layers": 6,
                            "encoder_attention_heads": 12, "decoder_attention_heads": 12,
                            "encoder_ffn_dim": 3072, "decoder_ffn_dim": 3072, "vocab_size": 50265,
                            "max_position_embeddings": 1024},
    "FacebookAI__roberta-base": {"model_type": "roberta", "vocab_size": 50265, "hidden_size": 768,
                                 "num_hidden_layers": 12, "num_attention_heads": 12,
                                 "intermediate_size": 3072, "max_position_embeddings": 514,
                                 "type_vocab_size": 1, "layer_norm_eps": 1e-5, "pad_token_id": 1},
}
MODEL_NOTES = {
    "google__flan-t5-base": "transformers 5.24's T5Config forces tie_word_embeddings=True "
                            "(transformers/models/t5/configuration_t5.py:77-82), so the lm_head is tied "
                            "here; the published Flan-T5-base checkpoint has an untied lm_head "
                            "(247,577,856 parameters; 24,674,304 more than counted here)",
}
FIXTURES = ["meta-llama__Llama-2-7b-hf", "meta-llama__Meta-Llama-3-8B", "mistralai__Mistral-7B-v0.1",
            "Qwen__Qwen2.5-7B", "gpt2", "facebook__opt-125m", "bert-base-uncased"]
MODELS = FIXTURES + list(EXTRA)

# q/v-style targets and other module names per family, for methods without a PEFT default
ARCH = {
    "llama": dict(qv=["q_proj", "v_proj"], attn=["q_proj", "k_proj", "v_proj", "o_proj"],
                  mlp=["gate_proj", "up_proj", "down_proj"], ff=["down_proj"], emb="embed_tokens",
                  norm=["input_layernorm", "post_attention_layernorm"]),
    "gpt2": dict(qv=["c_attn"], attn=["c_attn", "attn.c_proj"], mlp=["c_fc", "mlp.c_proj"], ff=["mlp.c_proj"],
                 emb="wte", norm=["ln_1", "ln_2"]),
    "opt": dict(qv=["q_proj", "v_proj"], attn=["q_proj", "k_proj", "v_proj", "out_proj"], mlp=["fc1", "fc2"],
                ff=["fc2"], emb="embed_tokens", norm=["self_attn_layer_norm", "final_layer_norm"]),
    "bert": dict(qv=["query", "value"], attn=["query", "key", "value", "attention.output.dense"],
                 mlp=["intermediate.dense", "output.dense"], ff=["output.dense"], emb="word_embeddings",
                 norm=["LayerNorm"]),
    "t5": dict(qv=["q", "v"], attn=["q", "k", "v", "o"], mlp=["wi", "wo", "wi_0", "wi_1"], ff=["wo"],
               emb="shared", norm=["layer_norm"]),
    "bart": dict(qv=["q_proj", "v_proj"], attn=["q_proj", "k_proj", "v_proj", "out_proj"], mlp=["fc1", "fc2"],
                 ff=["fc2"], emb="shared", norm=["self_attn_layer_norm", "final_layer_norm"]),
}
ARCH["mistral"] = ARCH["qwen2"] = ARCH["llama"]
ARCH["roberta"] = ARCH["bert"]
TASK = {"bert": "SEQ_CLS", "roberta": "SEQ_CLS", "t5": "SEQ_2_SEQ_LM", "bart": "SEQ_2_SEQ_LM"}


def load_config(name):
    if name in EXTRA:
        d = dict(EXTRA[name])
        return transformers.AutoConfig.for_model(d.pop("model_type"), **d), "published values (EXTRA table)"
    path = os.path.join(FIX, name + ".json")
    with open(path) as f:
        d = json.load(f)
    d.pop("quantization_config", None)
    mt = d.pop("model_type")
    for k in ("architectures", "transformers_version", "torch_dtype", "_name_or_path", "auto_map"):
        d.pop(k, None)
    return transformers.AutoConfig.for_model(mt, **d), "tests/fixtures/hf/%s.json" % name


def build_meta(name, device="meta"):
    cfg, src = load_config(name)
    task = TASK.get(cfg.model_type, "CAUSAL_LM")
    auto = {"CAUSAL_LM": transformers.AutoModelForCausalLM, "SEQ_CLS": transformers.AutoModelForSequenceClassification,
            "SEQ_2_SEQ_LM": transformers.AutoModelForSeq2SeqLM}[task]
    if task == "SEQ_CLS":
        cfg.num_labels = 2
    with torch.device(device):
        model = auto.from_config(cfg)
    return model, cfg, task, src


# --------------------------------------------------------------------------- methods
def methods(arch, cfg, task):
    """(method, label, config class, kwargs, note) for every method, default + one non-default."""
    a = ARCH[arch]
    C = peft
    L = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "num_layers", None) or getattr(cfg, "n_layer", None)
    out = []

    def add(method, label, cls, kw, note=""):
        out.append((method, label, cls, kw, note))
    add("lora", "default", C.LoraConfig, {}, "r=8, alpha=8, PEFT's default targets for the model type")
    add("lora", "r16_all_linear", C.LoraConfig, {"r": 16, "lora_alpha": 32, "target_modules": "all-linear"})
    add("rslora", "default", C.LoraConfig, {"use_rslora": True}, "rsLoRA changes the scaling only")
    add("dora", "default", C.LoraConfig, {"use_dora": True}, "DoRA: + a magnitude vector per target")
    add("dora", "r16_all_linear", C.LoraConfig, {"use_dora": True, "r": 16, "target_modules": "all-linear"})
    add("lora_fa", "default", C.LoraConfig, {}, "LoRA-FA = LoRA + peft.optimizers.create_lorafa_optimizer, "
        "which sets requires_grad=False on every lora_A")
    add("adalora", "default", C.AdaLoraConfig, {"total_step": 1000},
        "init_r=12 (the trainable count is at init_r; ranks are pruned to target_r during training)")
    add("adalora", "init_r24", C.AdaLoraConfig, {"total_step": 1000, "init_r": 24, "target_r": 16})
    add("vera", "default", C.VeraConfig, {"target_modules": a["qv"]},
        "shared random A/B are buffers (vera_A/vera_B), not trainable")
    add("vera", "r512", C.VeraConfig, {"target_modules": a["qv"], "r": 512})
    add("ia3", "default", C.IA3Config, {})
    add("ia3", "attn_only", C.IA3Config, {"target_modules": a["qv"], "feedforward_modules": []})
    add("loha", "default", C.LoHaConfig, {"target_modules": a["qv"]})
    add("loha", "r16", C.LoHaConfig, {"target_modules": a["qv"], "r": 16})
    add("lokr", "default", C.LoKrConfig, {"target_modules": a["qv"]})
    add("lokr", "r16_decompose_both", C.LoKrConfig, {"target_modules": a["qv"], "r": 16, "decompose_both": True})
    add("oft", "default", C.OFTConfig, {"target_modules": a["qv"]})
    add("oft", "block64", C.OFTConfig, {"target_modules": a["qv"], "r": 0, "oft_block_size": 64})
    add("boft", "default", C.BOFTConfig, {"target_modules": a["qv"], "boft_block_size": 4})
    add("boft", "block8_butterfly2", C.BOFTConfig, {"target_modules": a["qv"], "boft_block_size": 8,
                                                    "boft_n_butterfly_factor": 2})
    add("hra", "default", C.HRAConfig, {"target_modules": a["qv"]})
    add("hra", "r16", C.HRAConfig, {"target_modules": a["qv"], "r": 16})
    add("miss", "default", C.MissConfig, {"target_modules": a["qv"]}, "MiSS (formerly Bone)")
    add("miss", "r128", C.MissConfig, {"target_modules": a["qv"], "r": 128})
    add("fourierft", "default", C.FourierFTConfig, {"target_modules": a["qv"]})
    add("fourierft", "n3000", C.FourierFTConfig, {"target_modules": a["qv"], "n_frequency": 3000})
    add("vblora", "default", C.VBLoRAConfig, {"target_modules": a["qv"]})
    add("randlora", "default", C.RandLoraConfig, {"target_modules": a["qv"]})
    add("shira", "default", C.ShiraConfig, {"target_modules": a["qv"]})
    add("c3a", "default", C.C3AConfig, {"target_modules": a["qv"]})
    add("road", "default", C.RoadConfig, {"target_modules": a["qv"]})
    add("waveft", "default", C.WaveFTConfig, {"target_modules": a["qv"]})
    add("delora", "default", C.DeloraConfig, {"target_modules": a["qv"]})
    add("gralora", "default", C.GraloraConfig, {"target_modules": a["qv"]})
    add("tinylora", "default", C.TinyLoraConfig, {"target_modules": a["qv"]})
    add("ln_tuning", "default", C.LNTuningConfig, {"target_modules": a["norm"]})
    add("trainable_tokens", "default", C.TrainableTokensConfig,
        {"target_modules": [a["emb"]], "token_indices": list(range(10))})
    add("prompt_tuning", "default", C.PromptTuningConfig, {"num_virtual_tokens": 20})
    add("prompt_tuning", "v100", C.PromptTuningConfig, {"num_virtual_tokens": 100})
    add("prefix_tuning", "default", C.PrefixTuningConfig, {"num_virtual_tokens": 20},
        "past_key_values of num_virtual_tokens are built at every forward (B x 2L x kv_heads x n x head_dim); "
        "the count needs no forward")
    add("prefix_tuning", "projection", C.PrefixTuningConfig, {"num_virtual_tokens": 20, "prefix_projection": True})
    add("p_tuning", "default", C.PromptEncoderConfig, {"num_virtual_tokens": 20},
        "encoder_reparameterization_type MLP, encoder_hidden_size = hidden size")
    add("p_tuning", "lstm", C.PromptEncoderConfig, {"num_virtual_tokens": 20, "encoder_reparameterization_type": "LSTM"})
    if arch in ("llama", "mistral", "qwen2"):
        add("adaption_prompt", "default", C.AdaptionPromptConfig, {"adapter_len": 10, "adapter_layers": min(30, L)},
            "LLaMA-Adapter; adapter_len/adapter_layers have no defaults (the paper's 10 and 30)")
    return out


def group_shapes(model):
    groups = {}
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        key = re.sub(r"\.\d+\.", ".*.", n)
        g = groups.setdefault(key, {"shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", ""),
                                    "count": 0, "numel_each": p.numel(), "shapes_differ": False})
        g["count"] += 1
        if list(p.shape) != g["shape"]:
            g["shapes_differ"] = True
    return groups


def apply(name, method, label, cls, kw, task, meta_adapters=True, device="meta"):
    model, cfg, task, src = build_meta(name, device)
    base_total = sum(p.numel() for p in model.parameters())
    kwargs = dict(kw)
    if cls not in (peft.LNTuningConfig, peft.TrainableTokensConfig) or True:
        kwargs.setdefault("task_type", task)
    pc = cls(**kwargs)
    import contextlib
    with (torch.device("meta") if meta_adapters else contextlib.nullcontext()):
        pm = get_peft_model(model, pc)
        if method == "lora_fa":
            from peft.optimizers import create_lorafa_optimizer
            try:
                create_lorafa_optimizer(pm, r=pc.r, lora_alpha=pc.lora_alpha, lr=1e-4)
            except Exception:
                for n, p in pm.named_parameters():   # what create_lorafa_optimizer does first
                    if "lora_A" in n:
                        p.requires_grad_(False)
    trainable, total = pm.get_nb_trainable_parameters()
    d = pc.to_dict()
    for k, v in list(d.items()):
        if isinstance(v, set):
            d[k] = sorted(v)
    return {"trainable": int(trainable), "total": int(total), "base_total": int(base_total),
            "trainable_tensors": group_shapes(pm), "peft_config": json.loads(json.dumps(d, default=str))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models")
    ap.add_argument("--methods")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "peft_counts.json"))
    args = ap.parse_args()
    models = args.models.split(",") if args.models else MODELS
    want = set(args.methods.split(",")) if args.methods else None
    results = []
    for name in models:
        model, cfg, task, src = build_meta(name)
        arch = cfg.model_type
        base_total = sum(p.numel() for p in model.parameters())
        entry = {"model": name, "model_type": arch, "task_type": task, "config_source": src,
                 "base_parameter_count": base_total, "methods": []}
        if name in MODEL_NOTES:
            entry["note"] = MODEL_NOTES[name]
        del model
        for method, label, cls, kw, note in methods(arch, cfg, task):
            if want and method not in want:
                continue
            t0 = time.time()
            try:
                extra = ""
                try:
                    r = apply(name, method, label, cls, kw, task)
                except ValueError as e:
                    if "target_modules" not in str(e) or "target_modules" in kw:
                        raise
                    # PEFT has no default targets for this model type (e.g. AdaLoRA on Mistral)
                    kw = dict(kw, target_modules=ARCH[arch]["qv"])
                    r = apply(name, method, label, cls, kw, task)
                    extra = "; PEFT has no default target_modules for %s: q/v given" % arch
                except (RuntimeError, NotImplementedError) as e:
                    # BOFT (Tensor.item() in its init) and SHiRA (random sparse indices) cannot
                    # initialise adapters on the meta device: adapters on the CPU, base on meta
                    try:
                        r = apply(name, method, label, cls, kw, task, meta_adapters=False)
                        extra = "; adapters initialised on the CPU (meta failed: %s)" % str(e)[:80]
                    except (RuntimeError, NotImplementedError) as e2:
                        # SHiRA sizes its sparse mask from the base weight (nonzero): real weights
                        # needed; only for models small enough to build on the CPU
                        if entry["base_parameter_count"] > 1_000_000_000:
                            raise RuntimeError("needs real base weights (%s); model too large for "
                                               "the CPU here" % str(e2)[:120])
                        r = apply(name, method, label, cls, kw, task, meta_adapters=False, device="cpu")
                        extra = "; model built on the CPU (meta failed: %s)" % str(e2)[:80]
                r.update(method=method, setting=label, note=note + extra)
            except Exception as e:
                r = {"method": method, "setting": label, "note": note, "kwargs": kw,
                     "error": "%s: %s" % (type(e).__name__, str(e)[:400])}
            r["seconds"] = round(time.time() - t0, 2)
            entry["methods"].append(r)
            print("%-28s %-18s %-20s %s" % (name, method, label, r.get("trainable", r.get("error", "")[:90])),
                  file=sys.stderr)
        results.append(entry)
    doc = {"about": "PEFT get_nb_trainable_parameters() per method and model (meta device)",
           "versions": {k: md.version(k) for k in ("torch", "transformers", "peft")},
           "conventions": {
               "trainable/total": "PeftModel.get_nb_trainable_parameters(): (trainable, all) parameter counts",
               "base_total": "sum(p.numel()) of the model before PEFT",
               "trainable_tensors": "trainable parameters grouped by name with layer indices replaced by *: "
                                    "shape, count of tensors, numel each (shapes_differ: not all equal)",
               "task_type": "CAUSAL_LM for decoders, SEQ_CLS (num_labels=2; PEFT adds the classifier to "
                            "modules_to_save, so it is trainable) for BERT/RoBERTa, SEQ_2_SEQ_LM for T5/BART",
           },
           "models": results}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
