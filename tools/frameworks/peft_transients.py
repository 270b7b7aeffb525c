#!/usr/bin/env python3
"""What PEFT's methods allocate for a moment in a training step, measured on PEFT's real layers (CPU).

    .venv-frameworks/bin/python tools/frameworks/peft_transients.py   # -> tests/fixtures/peft/peft_transients.json (~30 s)

PEFT's DoRA (peft/tuners/lora/dora.py, DoraLinearLayer.forward) rebuilds the dense update of every
adapted layer in every forward, to norm the adapted weight: get_lora_weight runs lora_B(lora_A(x_eye))
on an [in, in] identity, the base weight is cast to the adapters' dtype (the layer cast x to it), and
get_weight_norm makes s * dW and W + s * dW, [out, in] each. None of it is saved for backward (the
norm is detached), so peft_saved.py, which counts saved tensors, does not see it; it shows in the
step's peaks. A tiny LlamaForCausalLM (peft_saved.py's, with a wider MLP so that down_proj's [in, in]
identity stands out) is wrapped with LoRA and with DoRA on the same targets and runs one training
step under torch.profiler's memory events (measure.py's Timeline); the fixture records the peaks of
forward and backward and what is alive after forward, for each, with and without non-reentrant
activation checkpointing, on a bf16 model (PEFT's fp32 adapters) and an fp32 one.
The same step runs for every method of peft_saved.py's cases (on q, v and down_proj where the method
adapts linear layers), on the bf16 model, with and without autocast and checkpointing: methods that build a dense
update in forward (LoHa, LoKr, FourierFT, HiRA, HRA, BOFT, ...) make its pieces beside it, and its
gradient and more in backward; under checkpointing they build what they would have saved and drop it.
tests/core/peft_test.cpp compares each method's difference from LoRA with memfit's.
"""

import itertools
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "peft", "peft_transients.json")

import torch  # noqa: E402
import transformers  # noqa: E402
from peft_fixture import peft  # noqa: E402  (imported with the torchao workaround)
from measure import Timeline  # noqa: E402
import peft_saved  # noqa: E402

# peft_saved.py's tiny Llama with a wider MLP (down_proj's 1,024 inputs make a dense update stand out),
# one short sequence.
TINY = dict(peft_saved.TINY, intermediate_size=1024)
MEMFIT_MODEL = dict(peft_saved.MEMFIT_MODEL, intermediate_size=1024)
BATCH, SEQ = 1, 16
NAMES = peft_saved.NAMES
TARGETS = [["q", "v"], ["down"], ["q", "k", "v", "o", "gate", "up", "down"]]


def step(dora, targets, checkpointing, dtype, finetune=None, autocast=False):
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY)).to(dtype)
    model.config.use_cache = False
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if finetune is None or "lora_dropout" in finetune:
        targets = targets or finetune["lora_targets"]
        config = peft.LoraConfig(r=8, target_modules=[NAMES[t] for t in targets], task_type="CAUSAL_LM",
                                 use_dora=dora or (finetune or {}).get("method") == "dora",
                                 lora_dropout=(finetune or {}).get("lora_dropout", 0.0))
    else:
        config = peft_saved.peft_config(finetune)
    pm = peft.get_peft_model(model, config)
    if finetune is not None and finetune["method"] == "lora_fa":
        for n, p in pm.named_parameters():
            if "lora_A" in n:
                p.requires_grad_(False)
    pm.train()
    ids = torch.randint(0, TINY["vocab_size"], (BATCH, SEQ))
    timeline = Timeline()
    with timeline:
        timeline.mark("forward_start")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = pm(input_ids=ids, labels=ids).loss
        timeline.mark("forward_end")
        loss.backward()
        del loss
        timeline.mark("backward_end")
        timeline.mark("optimizer_end")
        timeline.mark("zero_grad_end")
    s = timeline.summary()
    return {k: s[k] for k in ("forward_peak_bytes", "backward_peak_bytes", "live_after_forward_bytes")}


def main():
    cases = []
    for precision, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for targets in TARGETS:
            for checkpointing in (False, True):
                case = {"precision": precision, "lora_targets": targets,
                        "checkpointing": "full" if checkpointing else "none",
                        "lora": step(False, targets, checkpointing, dtype),
                        "dora": step(True, targets, checkpointing, dtype)}
                print(json.dumps(case), file=sys.stderr)
                cases.append(case)
    # Every method once (peft_saved.py's first case of it), on q, v and down_proj where it adapts
    # linear layers; the bf16 model, without and under torch.autocast (the Trainer's bf16=True, memfit's
    # bf16_mixed), with and without checkpointing. Methods whose PEFT layer refuses
    # this model (VB-LoRA's vector length), needs task ids (Poly, multitask prompt tuning) or refuses
    # checkpointing (prefix tuning) are recorded with the error.
    methods, seen = [], set()
    # DoRA with dropout as well: the base output is computed again and saves the weight it read.
    for ft in peft_saved.CASES + [{"method": "dora", "lora_targets": ["q", "v", "down"], "lora_dropout": 0.05}]:
        if ft.get("lora_dropout"):
            seen.discard("dora")
        if ft["method"] in seen or ft["method"] in ("xlora", "shadow", "cartridge"):
            continue
        seen.add(ft["method"])
        ft = dict(ft)
        if "lora_targets" in ft and ft["method"] != "ia3":
            ft["lora_targets"] = ["q", "v", "down"]
        for (precision, autocast), checkpointing in itertools.product((("bf16", False), ("bf16_mixed", True)),
                                                                       (False, True)):
            case = {"finetune": ft, "precision": precision, "checkpointing": "full" if checkpointing else "none"}
            try:
                case["measured"] = step(False, None, checkpointing, torch.bfloat16, ft, autocast)
            except Exception as e:  # noqa: BLE001
                case["error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
            print(json.dumps(case), file=sys.stderr)
            methods.append(case)
    doc = {"source": "tools/frameworks/peft_transients.py (torch %s, transformers %s, peft %s; CPU, "
                     "torch.profiler memory events)" % (torch.__version__, transformers.__version__, peft.__version__),
           "memfit_model": MEMFIT_MODEL, "micro_batch_size": BATCH, "seq_len": SEQ, "lora_rank": 8,
           "cases": cases, "methods": methods}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(OUT, ROOT))


if __name__ == "__main__":
    main()
