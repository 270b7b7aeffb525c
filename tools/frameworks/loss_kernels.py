#!/usr/bin/env python3
"""The loss kernels' transient memory, measured on the CPU with PyTorch's own code.

    .venv-frameworks/bin/python tools/frameworks/loss_kernels.py   # writes out/loss_kernels.json

torchtitan computes `cross_entropy(pred.float(), labels)`; under tensor parallelism it runs it
inside `torch.distributed.tensor.parallel.loss_parallel()` on vocabulary-sharded DTensor logits,
whose handlers (torch/distributed/tensor/parallel/loss.py) replace aten's log-softmax and NLL
kernels with tensor arithmetic. This script runs both on the same bf16 logits (T x V) and records,
with the CPU allocator timeline (torch.profiler, profile_memory=True), the most bytes alive above
what was alive before the loss:

  forward   from pred.float() to the loss (the bf16 logits are held by the caller throughout),
  backward  from loss.backward() until the logits' gradient exists.

The loss-parallel run uses a one-rank gloo process group and a one-device mesh: the shard is the
whole vocabulary, and the handlers' arithmetic (what sets the memory) is the same on every rank.
Sentinel allocations of unique sizes mark the phases (measure.py's Timeline).
compare.py --check holds memfit's `loss: loss_parallel` and `loss: eager` to these numbers.
"""

import contextlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from measure import Timeline  # noqa: E402  (the CPU allocator timeline with sentinel marks)
OUT = os.path.join(HERE, "out", "loss_kernels.json")
TOKENS, VOCAB = 512, 8192


def peaks(timeline):
    """The loss's high points above what was alive at its start."""
    cum, pos = timeline.cumulative()
    base = cum[pos["start"]]
    return {"forward_peak_bytes": max(cum[pos["start"]:pos["forward_end"] + 1]) - base,
            "backward_peak_bytes": max(cum[pos["forward_end"]:pos["backward_end"] + 1]) - base}


def run(parallel):
    torch.manual_seed(0)
    logits = torch.randn(TOKENS, VOCAB, dtype=torch.bfloat16)
    labels = torch.randint(0, VOCAB, (TOKENS,))
    context = contextlib.nullcontext()
    if parallel:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Shard, distribute_tensor
        from torch.distributed.tensor.parallel import loss_parallel
        mesh = init_device_mesh("cpu", (1,))
        logits = distribute_tensor(logits, mesh, [Shard(1)])
        labels = distribute_tensor(labels, mesh, [torch.distributed.tensor.Replicate()])
        context = loss_parallel()
    pred = logits.detach().requires_grad_(True)
    with context, Timeline() as tl:
        tl.mark("start")
        loss = F.cross_entropy(pred.float(), labels)
        tl.mark("forward_end")
        loss.backward()
        tl.mark("backward_end")
    return peaks(tl)


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        out = {"torch": torch.__version__, "tokens": TOKENS, "vocab": VOCAB,
               "fp32_logits_bytes": TOKENS * VOCAB * 4, "bf16_logits_bytes": TOKENS * VOCAB * 2,
               "kernels": {"eager": run(False), "loss_parallel": run(True)}}
    finally:
        dist.destroy_process_group()
    f = out["fp32_logits_bytes"]
    for name, k in out["kernels"].items():
        print(f"{name:14s} forward {k['forward_peak_bytes'] / f:5.2f} x fp32 logits   "
              f"backward {k['backward_peak_bytes'] / f:5.2f} x")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
