#!/usr/bin/env python3
"""What a block under torchtitan's op-level selective checkpointing keeps for backward, eager and compiled.

    .venv-frameworks/bin/python tools/frameworks/sac_compile.py [--out tools/frameworks/out/sac_compile.json]

torchtitan (torchtitan/models/llama3/infra/parallelize.py, _apply_ac_to_transformer_block with
mode "selective", option "op") checkpoints each TransformerBlock with a policy that marks the
outputs of every second matmul (counted in forward order within the block) and of the attention
kernel MUST_SAVE, and everything else PREFER_RECOMPUTE; with training.compile the block is
compiled after it is wrapped. Compiled, the policy becomes tags on the traced graph and the
min-cut partitioner (torch/_functorch/partitioners.py) saves only values that backward reads.

Eager, torch.utils.checkpoint caches every MUST_SAVE output for the recomputation (its
_CachingTorchDispatchMode), whether backward reads it or not.

This builds a Llama-style block (RMSNorm, q/k/v/o, SDPA, SwiGLU MLP) in fp32 on the CPU and runs
it through torch.utils.checkpoint with that policy twice:
  compiled: every storage saved for backward that is not a parameter (saved-tensor hooks see what
            the compiled function saves);
  eager:    every storage alive after forward that was not before it, less the block's output,
            plus the block's input (the checkpoint keeps it) and less the CPU generator state that
            checkpointing stores to replay randomness (a host tensor on a GPU too).
compare.py --check holds memfit's selective_op terms for the same block to both, to the byte.
"""

import argparse
import gc
import json
import os
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

HERE = os.path.dirname(os.path.abspath(__file__))
DIMS = dict(hidden=256, intermediate=704, heads=4, batch=2, seq=64)


class Block(nn.Module):
    def __init__(self, d, ff, heads):
        super().__init__()
        self.heads = heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.w2 = nn.Linear(ff, d, bias=False)
        self.attention_norm, self.ffn_norm = nn.RMSNorm(d), nn.RMSNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.attention_norm(x)
        q, k, v = (w(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.wo(a)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


# torchtitan's _save_list (the ops of it that run here) and its policy: an mm is saved unless it
# is the block's 2nd, 4th, ... (a count kept apart for the forward and the recomputation).
SAVE_LIST = {
    torch.ops.aten.mm.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
}


def context_fn():
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute_mm_count" if ctx.is_recompute else "forward_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        save = func in SAVE_LIST and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def measure():
    torch.manual_seed(0)
    d = DIMS
    block = Block(d["hidden"], d["intermediate"], d["heads"])
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    step = torch.compile(lambda x: checkpoint(block, x, use_reentrant=False, context_fn=context_fn))
    x = torch.randn(d["batch"], d["seq"], d["hidden"], requires_grad=True)
    saved = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                                         "storage_bytes": storage.nbytes()}
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = step(x)
    y.sum().backward()
    return list(saved.values())


def _live_storages():
    """data_ptr -> (bytes, a tensor's description) of every CPU tensor the interpreter holds."""
    out = {}
    for o in gc.get_objects():
        try:
            if isinstance(o, torch.Tensor) and o.device.type == "cpu":
                s = o.untyped_storage()
                out[s.data_ptr()] = (s.nbytes(), {"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", "")})
        except Exception:  # noqa: BLE001  (objects that only look like tensors)
            continue
    return out


def measure_eager():
    torch.manual_seed(0)
    d = DIMS
    block = Block(d["hidden"], d["intermediate"], d["heads"])
    x = torch.randn(d["batch"], d["seq"], d["hidden"], requires_grad=True)
    rng_bytes = torch.get_rng_state().untyped_storage().nbytes()
    gc.collect()
    before = _live_storages()
    y = checkpoint(block, x, use_reentrant=False, context_fn=context_fn)
    gc.collect()
    after = _live_storages()
    kept = []
    for ptr, (nbytes, desc) in after.items():
        if ptr in before or ptr == y.untyped_storage().data_ptr():
            continue
        if desc["dtype"] == "uint8" and nbytes == rng_bytes:   # the saved generator state (host memory)
            continue
        kept.append(dict(desc, storage_bytes=nbytes))
    kept.append({"shape": list(x.shape), "dtype": "float32", "storage_bytes": x.untyped_storage().nbytes(),
                 "note": "the block's input, which the checkpoint keeps"})
    y.sum().backward()
    return kept


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "sac_compile.json"))
    args = ap.parse_args()
    saved = measure()
    eager = measure_eager()
    out = {
        "about": "a Llama-style block under torchtitan's op-level selective checkpointing policy, fp32 on the CPU: "
                 "compiled, every non-parameter storage saved for backward; eager, every storage kept after "
                 "forward (tools/frameworks/sac_compile.py)",
        "torch": torch.__version__,
        "dims": DIMS,
        "saved": saved,
        "saved_bytes": sum(s["storage_bytes"] for s in saved),
        "eager_kept": eager,
        "eager_kept_bytes": sum(s["storage_bytes"] for s in eager),
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for s in saved:
        print("  %-18s %-8s %9d" % (s["shape"], s["dtype"], s["storage_bytes"]))
    print("compiled, saved for backward: %d bytes" % out["saved_bytes"])
    for s in eager:
        print("  %-18s %-8s %9d" % (s["shape"], s["dtype"], s["storage_bytes"]))
    print("eager, kept after forward: %d bytes (%s)" % (out["eager_kept_bytes"], args.out))


if __name__ == "__main__":
    main()
