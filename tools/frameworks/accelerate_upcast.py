#!/usr/bin/env python3
"""What accelerate's FSDP preparation does to 16-bit trainable parameters under mixed precision,
measured with the real accelerate, transformers, peft and torch code on the CPU.

    .venv-frameworks/bin/python tools/frameworks/accelerate_upcast.py   # writes out/accelerate_upcast.json

When mixed precision is on (the HF Trainer's bf16=True / fp16=True), accelerate follows DeepSpeed and
keeps what the optimizer steps in fp32, whatever dtype the model was loaded in:
- FSDP1 (Accelerator.prepare_model): every unit's FlatParameter that requires a gradient and is not
  fp32 is cast to fp32 after wrapping ("Upcasted low precision parameters ... because mixed precision
  turned on in FSDP"). A unit that mixes frozen and trainable parameters (use_orig_params) is cast
  whole, its frozen weights too.
- FSDP2 (utils/fsdp_utils.py, fsdp2_prepare_model): every parameter that requires a gradient and is
  not fp32 is cast to fp32 before fully_shard.
And FSDP1 flattens a unit into one tensor of one dtype (torch/distributed/fsdp/_flat_param.py,
_validate_tensors_to_flatten: "Must flatten tensors with uniform dtype"): a unit that holds PEFT's
fp32 adapters (autocast_adapter_dtype, PEFT's default) beside the 16-bit base cannot be built.

Two gloo ranks; a tiny Llama from its config, cast to bf16 (a checkpoint loaded in bf16); the
Accelerator is built with mixed_precision="bf16". For PEFT models the wrap policy is the HF Trainer's
(transformers.distributed.fsdp.update_fsdp_plugin_peft: PEFT's fsdp_auto_wrap_policy, which gives each
leaf module with a trainable weight a unit of its own); for full fine-tuning accelerate's
TRANSFORMER_BASED_WRAP. On the CPU accelerate's state is MULTI_CPU and attaches no FSDP plugin
(accelerate/state.py attaches it only for accelerator devices), so the tool puts into the shared state
what AcceleratorState sets on GPUs: distributed_type FSDP, the plugin (with set_mixed_precision), and
the plain "cpu" device that FSDP1 takes as device_id. Accelerator.prepare_model (FSDP1) and
fsdp2_prepare_model (FSDP2) then run unmodified.

Recorded per case, rank 0's numbers: the bytes of the parameters it holds (FSDP1: each unit's flat
shard; FSDP2: each DTensor's local shard), split by dtype and by whether they train, the units' flat
parameter dtypes (FSDP1), its gradient bytes after one forward and backward, or the error the
preparation raised.
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

from gloo_ranks import IA3_TARGETS, LORA_RANK, LORA_TARGETS, MODEL, WORLD, run_ranks, write_result  # noqa: E402

OUT = os.path.join(HERE, "out", "accelerate_upcast.json")
# (FSDP version, method): "full"; "lora_mts" = LoRA with modules_to_save=["lm_head"] (PEFT's trainable
# copy of the head); "ia3" with PEFT's fp32 vectors; "ia3_weights" with autocast_adapter_dtype=False
# (the vectors in the base's bf16); "ia3_weights_mts" the same with a modules_to_save copy of the head
CASES = [(1, "full"), (1, "lora_mts"), (1, "ia3"), (1, "ia3_weights"), (1, "ia3_weights_mts"),
         (2, "full"), (2, "lora_mts"), (2, "ia3")]


def _build(method):
    from compat import peft_without_torchao
    peft_without_torchao()
    from peft import IA3Config, LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**MODEL)).to(torch.bfloat16)
    if method == "full":
        return model
    if method == "lora_mts":
        return get_peft_model(model, LoraConfig(r=LORA_RANK, lora_alpha=8, lora_dropout=0.0,
                                                target_modules=LORA_TARGETS, modules_to_save=["lm_head"]))
    ia3 = IA3Config(target_modules=IA3_TARGETS, feedforward_modules=["down_proj"],
                    modules_to_save=["lm_head"] if method.endswith("_mts") else None)
    return get_peft_model(model, ia3, autocast_adapter_dtype=(method == "ia3"))


def _local(p):
    from torch.distributed.tensor import DTensor
    return p.to_local() if isinstance(p, DTensor) else p


def _held(model, version):
    """Rank 0's parameter bytes by (dtype, trains) and, under FSDP1, its units' flat parameters."""
    held, units = {}, []
    def add(dtype, trains, t):
        key = "%s %s" % (str(dtype).replace("torch.", ""), "trainable" if trains else "frozen")
        held[key] = held.get(key, 0) + t.numel() * t.element_size()
    if version == 1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        for m in FSDP.fsdp_modules(model):
            if getattr(m, "_has_params", False):
                flat = m._flat_param
                add(flat.dtype, flat.requires_grad, flat)
                units.append({"dtype": str(flat.dtype).replace("torch.", ""), "requires_grad": flat.requires_grad,
                              "local_elements": flat.numel()})
    else:
        for p in model.parameters():
            add(p.dtype, p.requires_grad, _local(p))
    return held, units


def _gradient_bytes(model, version):
    """Rank 0's gradient bytes after one backward: each unit's flat-parameter gradient (FSDP1, where
    a unit mixing frozen and trained tensors gets one for all of it) or each parameter's local
    gradient shard (FSDP2)."""
    total = 0
    if version == 1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        for m in FSDP.fsdp_modules(model):
            if getattr(m, "_has_params", False) and m._flat_param.grad is not None:
                g = m._flat_param.grad
                total += g.numel() * g.element_size()
    else:
        for p in model.parameters():
            if p.grad is not None:
                g = _local(p.grad)
                total += g.numel() * g.element_size()
    return total


def _case(accelerator, version, method):
    from accelerate import FullyShardedDataParallelPlugin
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType
    from accelerate.utils.fsdp_utils import fsdp2_prepare_model

    plugin = FullyShardedDataParallelPlugin(fsdp_version=version, auto_wrap_policy="transformer_based_wrap",
                                            transformer_cls_names_to_wrap=["LlamaDecoderLayer"],
                                            **({"use_orig_params": True} if version == 1 else {}))
    PartialState._shared_state["distributed_type"] = DistributedType.FSDP
    PartialState._shared_state["device"] = torch.device("cpu")
    accelerator.state.distributed_type = DistributedType.FSDP
    accelerator.state.fsdp_plugin = plugin
    plugin.set_mixed_precision(accelerator.mixed_precision)
    model = _build(method)
    if method != "full":
        from transformers.distributed.fsdp import update_fsdp_plugin_peft
        update_fsdp_plugin_peft(model, accelerator)  # the Trainer's own policy update for a PEFT model
    before = {}
    for p in model.parameters():
        key = "%s %s" % (str(p.dtype).replace("torch.", ""), "trainable" if p.requires_grad else "frozen")
        before[key] = before.get(key, 0) + p.numel()
    rec = {"fsdp_version": version, "method": method, "elements_before": before}
    try:
        prepared = accelerator.prepare_model(model) if version == 1 else fsdp2_prepare_model(accelerator, model)
        rec["rank0_bytes"], rec["units"] = _held(prepared, version)
        ids = torch.randint(0, MODEL["vocab_size"], (2, 16), generator=torch.Generator().manual_seed(1))
        prepared(input_ids=ids, labels=ids).loss.backward()
        rec["forward_backward"] = True
        rec["rank0_gradient_bytes"] = _gradient_bytes(prepared, version)
    except Exception as e:  # the refusal is the finding: recorded, not hidden
        rec["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    return rec


def _worker(rank, port, path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(WORLD), OMP_NUM_THREADS="1")
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True, mixed_precision="bf16")
    setup = {"backend": dist.get_backend(), "world_size": dist.get_world_size(),
             "mixed_precision": accelerator.mixed_precision}
    cases = [_case(accelerator, version, method) for version, method in CASES]
    if rank == 0:
        with open(path, "w") as f:
            json.dump({"setup": setup, "cases": cases}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    result = run_ranks(_worker, 29547)
    out = {"versions": {k: md.version(k) for k in ("torch", "accelerate", "transformers", "peft")},
           "world_size": WORLD, "model": MODEL, "loaded_dtype": "bfloat16", "lora_rank": LORA_RANK,
           "lora_targets": LORA_TARGETS, "ia3_targets": IA3_TARGETS, "accelerate_setup": result["setup"],
           "cases": result["cases"]}
    write_result(OUT, out)
    for c in out["cases"]:
        print("FSDP%d %-11s %s" % (c["fsdp_version"], c["method"], c.get("error") or c["rank0_bytes"]))


if __name__ == "__main__":
    main()
