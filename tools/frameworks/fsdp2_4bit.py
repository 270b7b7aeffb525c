#!/usr/bin/env python3
"""How accelerate's FSDP2 preparation treats bitsandbytes 4-bit weights, by bnb_4bit_quant_storage,
measured with the real accelerate, bitsandbytes and torch code on the CPU.

    .venv-frameworks/bin/python tools/frameworks/fsdp2_4bit.py   # writes out/fsdp2_4bit.json

accelerate's fsdp2_prepare_model (accelerate/utils/fsdp_utils.py) collects frozen Params4bit that are
not floating point (the default uint8 quant storage) into `incompatible_params4bit` and passes them to
fully_shard as `ignored_params` (torch >= 2.7): they stay whole on every rank. A floating quant
storage (bf16, the QLoRA-FSDP recipe) is sharded like any other parameter.

Two gloo ranks, a tiny Llama from its config saved as bf16 and reloaded through transformers'
BitsAndBytesConfig (nf4, the quant storage under test, bf16 compute) onto the CPU, so the decoder
blocks' linear layers are real bnb Linear4bit with Params4bit weights (lm_head stays 16-bit); PEFT
LoRA r4 on q and v. Then accelerate's own fsdp2_prepare_model with a real
FullyShardedDataParallelPlugin(fsdp_version=2, transformer-based wrap). On the CPU accelerate's
AcceleratorState only attaches the FSDP plugin for accelerator device types (MULTI_CPU is not among
them, accelerate/state.py), so a real Accelerator(cpu=True) is built (it starts the gloo group) and
fsdp2_prepare_model gets a view of it whose `.state.fsdp_plugin` is the real plugin; every other
attribute the function reads (torch_device_mesh, parallelism_config, device, is_main_process,
mixed_precision) comes from the real Accelerator. The function's code runs unmodified.

Recorded per quant storage, rank 0's numbers: bytes it holds of the 4-bit linear weights (a DTensor's
local shard, a plain tensor whole), bytes of all other parameters it holds, the 4-bit weights' element
count whole, how many of them are DTensors, and one forward and backward after preparation.
"""

import importlib.metadata as md
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gloo_ranks import LORA_RANK, LORA_TARGETS, MODEL, WORLD, write_result  # noqa: E402

OUT = os.path.join(HERE, "out", "fsdp2_4bit.json")
# (bnb_4bit_quant_storage, bnb_4bit_use_double_quant)
CASES = (("uint8", False), ("bfloat16", False), ("bfloat16", True))


class _AcceleratorView:
    """The real Accelerator, except that `.state.fsdp_plugin` is the real FSDP2 plugin, which
    accelerate's AcceleratorState does not attach when the distributed type is MULTI_CPU."""

    def __init__(self, accelerator, plugin):
        self._accelerator = accelerator
        self.state = type("StateView", (), {"fsdp_plugin": plugin})()

    def __getattr__(self, name):
        return getattr(self._accelerator, name)


def _save_base(folder):
    """The 16-bit checkpoint both ranks quantise, written once before the ranks start (transformers'
    save_pretrained writes only on rank 0 once a process group exists)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**MODEL)).to(torch.bfloat16).save_pretrained(folder)


def _build(folder, quant_storage, double_quant):
    from compat import peft_without_torchao
    peft_without_torchao()
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    torch.manual_seed(0)  # same LoRA initialisation on both ranks
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
                               bnb_4bit_quant_storage=getattr(torch, quant_storage),
                               bnb_4bit_use_double_quant=double_quant)
    model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant, dtype=torch.bfloat16,
                                                 device_map="cpu", attn_implementation="eager")
    model = get_peft_model(model, LoraConfig(r=LORA_RANK, lora_alpha=8, lora_dropout=0.0, target_modules=LORA_TARGETS))
    model.train()
    return model


def _fourbit_weights(model):
    import bitsandbytes as bnb
    return [m.weight for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]


def quant_state_bytes(modules):
    """Bytes of the 4-bit layers' quantisation state among `modules` (bitsandbytes QuantState: absmax,
    code book, and with double quantisation the nested absmax and code book): tensors held beside
    the parameter (weight.quant_state, kept on the module too), not parameters, so no sharding
    touches them. Counted per distinct tensor, wherever the state is found after preparation (also
    used by vision_tower.py)."""
    import bitsandbytes as bnb
    seen, total = set(), 0
    def add(t):
        nonlocal total
        if torch.is_tensor(t) and id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    for m in modules:
        if not isinstance(m, bnb.nn.Linear4bit):
            continue
        state = getattr(m.weight, "quant_state", None) or getattr(m, "quant_state", None)
        if state is None:
            continue
        add(state.absmax); add(state.code); add(getattr(state, "offset", None))
        if getattr(state, "state2", None) is not None:
            add(state.state2.absmax); add(state.state2.code)
    return total


def _local_bytes(p):
    from torch.distributed.tensor import DTensor
    t = p.to_local() if isinstance(p, DTensor) else p
    return t.numel() * t.element_size()


def _case(accelerator, folder, quant_storage, double_quant):
    from accelerate import FullyShardedDataParallelPlugin
    from accelerate.utils.fsdp_utils import fsdp2_prepare_model
    from torch.distributed.tensor import DTensor

    model = _build(folder, quant_storage, double_quant)
    fourbit = _fourbit_weights(model)
    before = {"fourbit_params": len(fourbit),
              "fourbit_classes": sorted({type(p).__name__ for p in fourbit}),
              "fourbit_dtype": str(fourbit[0].dtype).replace("torch.", ""),
              "fourbit_bytes_whole": sum(_local_bytes(p) for p in fourbit),
              "fourbit_elements_whole": sum(p.numel() for p in fourbit),
              "other_bytes_whole": sum(_local_bytes(p) for p in model.parameters()
                                       if all(p is not q for q in fourbit)),
              "quant_state_bytes": quant_state_bytes(model.modules())}
    plugin = FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy="transformer_based_wrap",
                                            reshard_after_forward=True)
    view = (accelerator if getattr(accelerator.state, "fsdp_plugin", None) is not None
            else _AcceleratorView(accelerator, plugin))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = fsdp2_prepare_model(view, model)
    accel_warnings = [str(w.message) for w in caught if "Params4bit" in str(w.message)]

    fourbit = _fourbit_weights(model)
    fourbit_ids = {id(p) for p in fourbit}
    others = [p for p in model.parameters() if id(p) not in fourbit_ids]
    rec = {"quant_storage": quant_storage, "double_quant": double_quant,
           "before_prepare": before,
           "fourbit_local_bytes": sum(_local_bytes(p) for p in fourbit),
           "quant_state_local_bytes": quant_state_bytes(model.modules()),
           "other_local_bytes": sum(_local_bytes(p) for p in others),
           "fourbit_elements_whole": sum(p.numel() for p in fourbit),  # DTensor.numel() is the global count
           "fourbit_dtensors": sum(isinstance(p, DTensor) for p in fourbit),
           "fourbit_params": len(fourbit),
           "fourbit_classes_after": sorted({type(p).__name__ for p in fourbit}),
           "other_dtensors": sum(isinstance(p, DTensor) for p in others),
           "other_params": len(others),
           "accelerate_warning": accel_warnings[0] if accel_warnings else None}
    try:
        ids = torch.randint(0, MODEL["vocab_size"], (2, 16), generator=torch.Generator().manual_seed(1))
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        rec["forward_backward"] = {"ok": True, "loss": round(float(loss), 4),
                                   "trainable_with_grad": sum(g is not None for g in grads),
                                   "trainable": len(grads)}
    except Exception as e:  # recorded, not hidden
        rec["forward_backward"] = {"ok": False, "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])}
    del model
    return rec


def _worker(rank, port, folder, path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(WORLD), OMP_NUM_THREADS="1")
    from accelerate import Accelerator, FullyShardedDataParallelPlugin

    accelerator = Accelerator(cpu=True, fsdp_plugin=FullyShardedDataParallelPlugin(fsdp_version=2))
    setup = {"distributed_type": str(accelerator.distributed_type), "backend": dist.get_backend(),
             "world_size": dist.get_world_size(), "device": str(accelerator.device),
             "state_has_fsdp_plugin": getattr(accelerator.state, "fsdp_plugin", None) is not None,
             "mixed_precision": accelerator.mixed_precision}
    cases = [_case(accelerator, folder, qs, dq) for qs, dq in CASES]
    gathered = [None] * WORLD
    dist.all_gather_object(gathered, cases)
    if rank == 0:
        for case, r1 in zip(cases, gathered[1]):
            case["rank1_fourbit_local_bytes"] = r1["fourbit_local_bytes"]
            case["rank1_other_local_bytes"] = r1["other_local_bytes"]
        with open(path, "w") as f:
            json.dump({"setup": setup, "cases": cases}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path, folder = os.path.join(tmp, "r.json"), os.path.join(tmp, "base")
        _save_base(folder)
        torch.multiprocessing.spawn(_worker, args=(29543, folder, path), nprocs=WORLD)
        with open(path) as f:
            result = json.load(f)
    out = {"versions": {k: md.version(k) for k in ("torch", "accelerate", "bitsandbytes", "transformers", "peft")},
           "world_size": WORLD, "model": MODEL, "quantised": "decoder-block linear layers (q,k,v,o,gate,up,down), nf4",
           "lora_rank": LORA_RANK, "lora_targets": LORA_TARGETS,
           "accelerate_setup": result["setup"],
           "cases": result["cases"]}
    write_result(OUT, out)
    for c in out["cases"]:
        print("%-8s 4-bit: %d/%d DTensors, rank0 holds %d of %d bytes (rank1 %d); other params rank0 %d bytes; "
              "fwd/bwd %s" % (c["quant_storage"], c["fourbit_dtensors"], c["fourbit_params"], c["fourbit_local_bytes"],
                              c["before_prepare"]["fourbit_bytes_whole"], c["rank1_fourbit_local_bytes"],
                              c["other_local_bytes"], c["forward_backward"]))


if __name__ == "__main__":
    main()
