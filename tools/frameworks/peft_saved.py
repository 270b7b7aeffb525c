#!/usr/bin/env python3
"""What each PEFT method saves for backward, measured on PEFT's real layers (CPU, fp32).

    .venv-frameworks/bin/python tools/frameworks/peft_saved.py   # -> tests/fixtures/peft/peft_saved.json

A tiny LlamaForCausalLM (transformers, eager attention, fp32, no dropout) is wrapped with each PEFT
method and run forward under torch.autograd.graph.saved_tensors_hooks; every saved tensor is
counted once per storage if it is still alive at the end of forward (parameters and buffers
excluded) and attributed to the decoder layer it
was saved in (module forward hooks). The fixture records the bytes saved in the last layer (every
layer but the first sees a gradient-carrying input) and in the whole model. tests/core/peft_test.cpp
compares memfit's per-layer terms for the same configuration (precision fp32, attention eager):
each method's difference from LoRA on the same targets, so that the check isolates what the method
itself saves from the base layer (which tools/validate checks).
"""

import gc
import json
import os
import sys
import warnings
import weakref

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "peft", "peft_saved.json")

import torch  # noqa: E402
import transformers  # noqa: E402
from peft_fixture import peft  # noqa: E402  (imported with the torchao workaround)

TINY = {"vocab_size": 512, "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "max_position_embeddings": 256,
        "tie_word_embeddings": False, "attn_implementation": "eager"}
MEMFIT_MODEL = {k: v for k, v in TINY.items() if k != "attn_implementation"}
MEMFIT_MODEL.update(model_type="llama", mlp="gated", norm="rmsnorm", position_embedding="rotary")
BATCH, SEQ = 2, 32
NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
         "down": "down_proj"}


def peft_config(ft):
    C = peft
    m, r = ft["method"], ft.get("lora_rank", 8)
    tm = [NAMES[t] for t in ft.get("lora_targets", [])]
    common = {"task_type": "CAUSAL_LM"}
    table = {
        "lora": lambda: C.LoraConfig(r=r, target_modules=tm, **common),
        "dora": lambda: C.LoraConfig(r=r, target_modules=tm, use_dora=True, **common),
        "lora_fa": lambda: C.LoraConfig(r=r, target_modules=tm, **common),
        "vera": lambda: C.VeraConfig(r=r, target_modules=tm, **common),
        "ia3": lambda: C.IA3Config(target_modules=tm, feedforward_modules=[t for t in tm if t == "down_proj"],
                                   **common),
        "oft": lambda: C.OFTConfig(r=0, oft_block_size=32, target_modules=tm, **common),
        "loha": lambda: C.LoHaConfig(r=r, target_modules=tm, **common),
        "lokr": lambda: C.LoKrConfig(r=r, target_modules=tm, **common),
        "fourierft": lambda: C.FourierFTConfig(n_frequency=1000, target_modules=tm, **common),
        "hra": lambda: C.HRAConfig(r=r, target_modules=tm, **common),
        "hira": lambda: C.HiraConfig(r=r, target_modules=tm, **common),
        "road": lambda: C.RoadConfig(target_modules=tm, **common),
        "adalora": lambda: C.AdaLoraConfig(init_r=r, total_step=1000, target_modules=tm, **common),
        "delora": lambda: C.DeloraConfig(r=r, target_modules=tm, **common),
        "gralora": lambda: C.GraloraConfig(r=r, target_modules=tm, **common),
        "vblora": lambda: C.VBLoRAConfig(r=r, target_modules=tm, **common),
        "randlora": lambda: C.RandLoraConfig(r=r, target_modules=tm, **common),
        "tinylora": lambda: C.TinyLoraConfig(r=r, target_modules=tm, **common),
        "miss": lambda: C.MissConfig(r=r, target_modules=tm, **common),
        "c3a": lambda: C.C3AConfig(block_size=64, target_modules=tm, **common),
        "waveft": lambda: C.WaveFTConfig(target_modules=tm, **common),
        "shira": lambda: C.ShiraConfig(r=r, target_modules=tm, **common),
        "boft": lambda: C.BOFTConfig(boft_block_size=4, target_modules=tm, **common),
        "cartridge": lambda: C.CartridgeConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common),
        "multitask_prompt_tuning": lambda: C.MultitaskPromptTuningConfig(num_virtual_tokens=ft["num_virtual_tokens"],
                                                                         **common),
        "p_tuning": lambda: C.PromptEncoderConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common),
        "llama_adapter": lambda: C.AdaptionPromptConfig(adapter_len=ft["adapter_len"],
                                                        adapter_layers=TINY["num_hidden_layers"] -
                                                        ft["adapter_start_layer"], **common),
        "trainable_tokens": lambda: C.TrainableTokensConfig(target_modules=["embed_tokens"],
                                                            token_indices=list(range(ft["num_trainable_tokens"])),
                                                            **common),
        "prompt_tuning": lambda: C.PromptTuningConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common),
        "prefix_tuning": lambda: C.PrefixTuningConfig(num_virtual_tokens=ft["num_virtual_tokens"], **common),
        "ln_tuning": lambda: C.LNTuningConfig(target_modules=["input_layernorm", "post_attention_layernorm", "norm"],
                                              **common),
    }
    table["shadow"] = lambda: C.ShadowConfig(r=r, shadow_dropout=ft.get("lora_dropout", 0.0), **common)
    # The methods added with PEFT 0.21.2's newer tuners: a config class, ranked or not.
    for name, cls, ranked in (("adamss", "AdamssConfig", True), ("beft", "BeftConfig", False),
                              ("lily", "LilyConfig", True), ("poly", "PolyConfig", True), ("frod", "FrodConfig", False),
                              ("pvera", "PveraConfig", True), ("glora", "GloraConfig", True),
                              ("unilora", "UniLoraConfig", True), ("osf", "OSFConfig", False),
                              ("psoft", "PsoftConfig", True), ("peanut", "PeanutConfig", True),
                              ("supertuning", "SupertuningConfig", False), ("deft", "DeftConfig", True)):
        table[name] = (lambda cls=cls, ranked=ranked:
                       getattr(C, cls)(target_modules=tm, **({"r": r} if ranked else {}), **common))
    return table[m]()


def measure(ft, dtype=torch.float32, autocast=False):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**TINY)
    model = transformers.LlamaForCausalLM(cfg).to(dtype)
    model.config.use_cache = False
    if ft["method"] == "xlora":  # X-LoRA loads its adapters from disk: fresh ones saved from the same base
        import tempfile
        tmp = tempfile.mkdtemp()
        adapters = {}
        for i in range(ft["num_adapters"]):
            torch.manual_seed(i)
            other = transformers.LlamaForCausalLM(cfg).to(dtype)
            lora = peft.LoraConfig(r=ft.get("lora_rank", 8), task_type="CAUSAL_LM",
                                   target_modules=[NAMES[t] for t in ft["lora_targets"]])
            peft.get_peft_model(other, lora).save_pretrained(os.path.join(tmp, str(i)))
            adapters[str(i)] = os.path.join(tmp, str(i))
        pm = peft.get_peft_model(model, peft.XLoraConfig(task_type="CAUSAL_LM", hidden_size=TINY["hidden_size"],
                                                         adapters=adapters))
    else:
        pm = peft.get_peft_model(model, peft_config(ft))
    if ft["method"] == "lora_fa":
        for n, p in pm.named_parameters():
            if "lora_A" in n:
                p.requires_grad_(False)
    pm.train()
    owned = {p.untyped_storage().data_ptr() for p in pm.parameters()}
    owned |= {b.untyped_storage().data_ptr() for b in pm.buffers()}
    names = {id(m): n for n, m in pm.named_modules()}
    stack, packed = [], []

    def pre(mod, args):
        stack.append(names.get(id(mod), ""))

    def post(mod, args, out):
        stack.pop()

    def pack(t):
        layer = "outside"
        for n in reversed(stack):
            if ".layers." in n:
                layer = "layer" + n.split(".layers.")[1].split(".")[0]
                break
        packed.append((weakref.ref(t), layer))
        return t

    hooks = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
             torch.nn.modules.module.register_module_forward_hook(post)]
    ids = torch.randint(0, TINY["vocab_size"], (BATCH, SEQ))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
                torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            extra = {}
            if ft["method"] in ("poly", "multitask_prompt_tuning"):  # one task: every sequence's id is 0
                extra["task_ids"] = torch.zeros(BATCH, dtype=torch.long)
            loss = pm(input_ids=ids, labels=ids, **extra).loss
    finally:
        for h in hooks:
            h.remove()
    # What is still saved at the end of forward: graphs built and dropped inside forward (DoRA's
    # lora_weight, computed through an identity matrix and detached) hold nothing by then.
    gc.collect()
    seen, by_layer = set(), {}
    for ref, layer in packed:
        t = ref()
        if t is None:
            continue
        if t.is_sparse:  # SHiRA's sparse delta: its values and indices
            parts = [t._values(), t._indices()]
        else:
            parts = [t]
        for part in parts:
            st = part.untyped_storage()
            key = st.data_ptr()
            if key in owned or key in seen or not st.nbytes():
                continue
            seen.add(key)
            by_layer[layer] = by_layer.get(layer, 0) + st.nbytes()
    loss.backward()
    return by_layer


# On a bf16 model PEFT keeps these methods' adapters in fp32 (autocast_adapter_dtype) and each casts
# its input to them: one fp32 copy per adapted layer instead of the shared input.
CASES_BF16_CAST = [{"method": "lora", "lora_targets": ["q", "v"]}, {"method": "lily", "lora_targets": ["q", "v"]},
              {"method": "poly", "lora_targets": ["q", "v"]}, {"method": "unilora", "lora_targets": ["q", "v"]},
              {"method": "osf", "lora_targets": ["q", "v"]}, {"method": "peanut", "lora_targets": ["q", "v"]},
              {"method": "deft", "lora_targets": ["q", "v"]},
              {"method": "xlora", "num_adapters": 2, "lora_targets": ["q", "v"]}]

CASES = [{"method": "lora", "lora_targets": ["q", "v"]}, {"method": "dora", "lora_targets": ["q", "v"]},
         {"method": "lora_fa", "lora_targets": ["q", "v"]}, {"method": "vera", "lora_targets": ["q", "v"]},
         {"method": "ia3", "lora_targets": ["k", "v", "down"]}, {"method": "oft", "lora_targets": ["q", "v"]},
         {"method": "loha", "lora_targets": ["q", "v"]}, {"method": "lokr", "lora_targets": ["q", "v"]},
         {"method": "fourierft", "lora_targets": ["q", "v"]}, {"method": "hra", "lora_targets": ["q", "v"]},
         {"method": "hira", "lora_targets": ["q", "v"]}, {"method": "road", "lora_targets": ["q", "v"]},
         {"method": "lora", "lora_targets": ["k", "v", "down"]},
         {"method": "prompt_tuning", "num_virtual_tokens": 8}, {"method": "prefix_tuning", "num_virtual_tokens": 8},
         {"method": "ln_tuning"}, {"method": "adalora", "lora_targets": ["q", "v"]},
         {"method": "delora", "lora_targets": ["q", "v"]}, {"method": "gralora", "lora_targets": ["q", "v"]},
         {"method": "lora", "lora_targets": ["q", "o"]}, {"method": "vblora", "lora_targets": ["q", "o"]},
         {"method": "randlora", "lora_targets": ["q", "v"]}, {"method": "tinylora", "lora_targets": ["q", "v"]},
         {"method": "miss", "lora_targets": ["q", "v"]}, {"method": "c3a", "lora_targets": ["q", "v"], "block_size": 64},
         {"method": "waveft", "lora_targets": ["q", "v"]}, {"method": "shira", "lora_targets": ["q", "v"]},
         {"method": "boft", "lora_targets": ["q", "v"], "block_size": 4},
         {"method": "p_tuning", "num_virtual_tokens": 8},
         {"method": "llama_adapter", "adapter_len": 4, "adapter_start_layer": 0},
         {"method": "trainable_tokens", "num_trainable_tokens": 10},
         {"method": "adamss", "lora_targets": ["q", "v"]}, {"method": "beft", "lora_targets": ["q", "v"]},
         {"method": "lily", "lora_targets": ["q", "v"]}, {"method": "poly", "lora_targets": ["q", "v"]},
         {"method": "frod", "lora_targets": ["q", "v"]}, {"method": "pvera", "lora_targets": ["q", "v"]},
         {"method": "glora", "lora_targets": ["q", "v"]}, {"method": "unilora", "lora_targets": ["q", "v"]},
         {"method": "osf", "lora_targets": ["q", "v"]}, {"method": "psoft", "lora_targets": ["q", "v"]},
         {"method": "peanut", "lora_targets": ["q", "v"]}, {"method": "supertuning", "lora_targets": ["q", "v"]},
         {"method": "deft", "lora_targets": ["q", "v"]}, {"method": "deft", "lora_targets": ["k", "v", "down"]},
         {"method": "glora", "lora_targets": ["q", "o", "down"]},
         {"method": "cartridge", "num_virtual_tokens": 8},
         {"method": "multitask_prompt_tuning", "num_virtual_tokens": 8},
         {"method": "xlora", "num_adapters": 2, "lora_targets": ["q", "v"]},
         {"method": "shadow"}]

# Every other method on the same bf16 model (its configuration in CASES): what each builds from its
# fp32 adapters (a dense update, a rotation, a product) is fp32 too, beside the bf16 activations of
# the layer it adapts.
CASES_BF16 = CASES_BF16_CAST + [
    next(c for c in CASES if c["method"] == m) for m in (
        "dora", "lora_fa", "vera", "ia3", "oft", "loha", "lokr", "fourierft", "hra", "hira", "road", "adalora",
        "delora", "gralora", "randlora", "tinylora", "miss", "c3a", "waveft", "shira", "boft", "adamss", "beft",
        "frod", "pvera", "glora", "psoft", "supertuning")]
# The same bf16 model under torch.autocast (the Trainer's bf16=True; memfit's bf16_mixed over a 16-bit
# base): every adapter matmul gives bf16 again.
CASES_AUTOCAST = CASES_BF16_CAST + [{"method": m, "lora_targets": ["q", "v"]} for m in
                               ("adamss", "beft", "frod", "pvera", "glora", "psoft", "supertuning")] + [
    c for c in CASES_BF16[len(CASES_BF16_CAST):] if c["method"] not in
    ("adamss", "beft", "frod", "pvera", "glora", "psoft", "supertuning")]


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", help="comma-separated methods: measure only these, keep the file's other cases")
    args = ap.parse_args()
    chosen = set(args.methods.split(",")) if args.methods else None
    old, old_doc = {}, {}
    if chosen:
        with open(OUT) as f:
            old_doc = json.load(f)
        old = {json.dumps(c["finetune"], sort_keys=True): c for c in old_doc["cases"]}
    out = []
    for ft in CASES:
        if chosen and ft["method"] not in chosen:
            out.append(old[json.dumps(ft, sort_keys=True)])
            continue
        try:
            r = {"finetune": ft, "saved_bytes": measure(ft)}
        except Exception as e:
            r = {"finetune": ft, "error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        print(json.dumps(r), file=sys.stderr)
        out.append(r)

    def bf16_cases(key, cases, autocast):  # the bf16 model, measured again only for the chosen methods
        done = []
        for ft in cases:
            if chosen and ft["method"] not in chosen and key in old_doc and ft in [c["finetune"] for c in old_doc[key]]:
                done.append(next(c for c in old_doc[key] if c["finetune"] == ft))
                continue
            r = {"finetune": ft, "saved_bytes": measure(ft, torch.bfloat16, autocast=autocast)}
            print(json.dumps(r), file=sys.stderr)
            done.append(r)
        return done
    out_bf16 = bf16_cases("cases_bf16", CASES_BF16, False)
    out_autocast = bf16_cases("cases_bf16_autocast", CASES_AUTOCAST, True)
    doc = {"about": "tools/frameworks/peft_saved.py writes this: bytes PEFT methods save for backward on a "
                    "tiny fp32 Llama (CPU, eager attention), by decoder layer; cases_bf16: the same model in bf16 "
                    "with PEFT's default fp32 adapters; cases_bf16_autocast: that under torch.autocast(bf16)",
           "memfit_model": MEMFIT_MODEL, "micro_batch_size": BATCH, "seq_len": SEQ, "cases": out,
           "cases_bf16": out_bf16, "cases_bf16_autocast": out_autocast}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
