#!/usr/bin/env python3
"""Which FSDP1 units of a LoRA model get gradients, measured with torch's real FSDP1 on the CPU.

    .venv-frameworks/bin/python tools/frameworks/fsdp1_units.py   # writes out/fsdp1_units.json

FSDP1 flattens each unit's parameters into one flat parameter; with use_orig_params=True a unit that
mixes frozen and trainable parameters gives the whole flat parameter a gradient (torch
distributed/fsdp/_flat_param.py), so a LoRA pays for the frozen weights' gradients, and with
use_orig_params=False such a unit cannot be built at all ("Must flatten tensors with uniform
requires_grad"). Whether units mix depends on the wrap policy:

- "trainer": the HF Trainer replaces accelerate's policy for a PEFT model by PEFT's
  fsdp_auto_wrap_policy (transformers trainer.py, _fsdp_qlora_plugin_updates), which gives every
  leaf module with a trainable weight (the adapters) a unit of its own: the decoder-layer units are
  all frozen and get no gradient, whatever use_orig_params says (torchtune's FSDP1 LoRA recipe did
  the same, lora_fsdp_wrap_policy: "to work around FSDP allocating extra gradient memory").
- "blocks": whole decoder layers as units (transformer_auto_wrap_policy; LitGPT's FSDPStrategy with
  auto_wrap_policy={Block}, accelerate's TRANSFORMER_BASED_WRAP without the Trainer): each block
  mixes the adapters with the frozen base, and its whole flat parameter gets a gradient.

IA3 under the Trainer's policy: its vectors are parameter dicts inside the wrapped linear layer, not
leaf modules, so they stay in the blocks' units, which mix; without use_orig_params FSDP1 refuses to
build such a unit ("Must flatten tensors with uniform requires_grad"), which is recorded.

Two gloo ranks, a tiny Llama from its config (no weights), PEFT LoRA r4 on q and v (and IA3), fp32; one
forward and backward, then rank 0's flat-parameter gradient elements (its shards) are recorded per
case. compare.py --check holds memfit's gradients (breakdown.gradients, ZeRO-3 over 2 GPUs, fp32) to
them: framework hf for "trainer", litgpt for "blocks".
"""

import functools
import importlib.metadata as md
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compat import peft_without_torchao  # noqa: E402

peft_without_torchao()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gloo_ranks import IA3_TARGETS, LORA_RANK, LORA_TARGETS, MODEL, WORLD, run_ranks  # noqa: E402

OUT = os.path.join(HERE, "out", "fsdp1_units.json")
OFT_BLOCK = 16  # OFT on q and v (LORA_TARGETS), blocks of 16
# (wrap policy, use_orig_params, PEFT method)
CASES = [("trainer", True, "lora"), ("trainer", False, "lora"), ("blocks", True, "lora"), ("trainer", True, "ia3"),
         ("trainer", False, "ia3"),  # FSDP1 refuses a unit mixing requires_grad without use_orig_params
         ("trainer", True, "oft")]  # OFT's rotations: leaf modules with their own weight, units apart


def _rank(rank, port, results):
    from peft import IA3Config, LoraConfig, OFTConfig, get_peft_model
    from peft.utils.other import fsdp_auto_wrap_policy
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    for policy_name, orig, method in CASES:
        torch.manual_seed(0)
        # IA3 on its Llama defaults (k, v and down; down as a feed-forward module).
        if method == "lora":
            peft_config = LoraConfig(r=LORA_RANK, target_modules=LORA_TARGETS)
        elif method == "oft":
            peft_config = OFTConfig(r=0, oft_block_size=OFT_BLOCK, target_modules=LORA_TARGETS)
        else:
            peft_config = IA3Config(target_modules=IA3_TARGETS, feedforward_modules=["down_proj"])
        model = get_peft_model(LlamaForCausalLM(LlamaConfig(**MODEL)), peft_config)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        if policy_name == "trainer":
            policy = fsdp_auto_wrap_policy(model)
        else:
            policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
        try:
            wrapped = FSDP(model, auto_wrap_policy=policy, use_orig_params=orig, device_id=torch.device("cpu"),
                           sharding_strategy=ShardingStrategy.FULL_SHARD)
        except ValueError as e:  # the refusal is the finding: recorded
            if rank == 0:
                results.append({"policy": policy_name, "use_orig_params": orig, "method": method,
                                "error": str(e).splitlines()[0][:200]})
            del model
            continue
        ids = torch.randint(0, MODEL["vocab_size"], (2, 16))
        wrapped(input_ids=ids, labels=ids).loss.backward()
        units, frozen_units, grad_elements = 0, 0, 0
        for module in wrapped.modules():
            if isinstance(module, FSDP) and module._handle is not None:
                flat = module._handle.flat_param
                units += 1
                frozen_units += 0 if flat.requires_grad else 1
                grad_elements += 0 if flat.grad is None else flat.grad.numel()
        if rank == 0:
            results.append({"policy": policy_name, "use_orig_params": orig, "method": method, "units": units,
                            "frozen_units": frozen_units, "trainable_elements": trainable,
                            "parameter_elements": total, "rank0_gradient_elements": grad_elements})
        del wrapped, model
    dist.destroy_process_group()


def _worker(rank, port, path):
    results = []
    _rank(rank, port, results)
    if rank == 0:
        with open(path, "w") as f:
            json.dump(results, f)


def main():
    cases = run_ranks(_worker, 29541)
    out = {"versions": {k: md.version(k) for k in ("torch", "transformers", "peft")},
           "world_size": WORLD, "model": MODEL, "lora_rank": LORA_RANK, "lora_targets": LORA_TARGETS,
           "ia3_targets": IA3_TARGETS, "oft_block_size": OFT_BLOCK,
           "cases": cases}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
    for c in cases:
        if "error" in c:
            print(f"{c['policy']:8s} {c['method']:4s} use_orig_params={c['use_orig_params']!s:5s} refused: {c['error']}")
            continue
        print(f"{c['policy']:8s} {c['method']:4s} use_orig_params={c['use_orig_params']!s:5s} units {c['units']:2d} "
              f"(frozen {c['frozen_units']}), rank 0 gradient elements {c['rank0_gradient_elements']} "
              f"(trainable {c['trainable_elements']} of {c['parameter_elements']})")


if __name__ == "__main__":
    main()
