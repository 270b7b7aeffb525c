#!/usr/bin/env python3
"""TRL's SFTTrainer loss (loss_type "chunked_nll", the default since TRL 1.7), measured on the CPU.

    .venv-frameworks/bin/python tools/frameworks/trl_loss.py   # writes out/trl_loss.json

TRL patches the model's forward (trl/trainer/sft_trainer.py, _patch_chunked_ce_lm_head): the
decoder runs up to its last hidden state, the valid positions are packed to the front
(hidden[..., :-1, :] reshaped, then gathered in label order) and the head and the cross-entropy run
256 tokens at a time, each chunk under torch.utils.checkpoint (_chunked_cross_entropy_loss, _chunk:
h.float() @ w.float().t(), log_softmax, nll, argmax and the entropy), so no B x T x V tensor ever
exists and each chunk is recomputed in its backward.

This script runs TRL's own _chunked_cross_entropy_loss on a hidden state and a head weight as the
model hands them over, and records with the CPU allocator timeline (measure.py's Timeline) the
bytes above what was alive before the loss: its forward high point, what is still alive when it
returns (kept for backward), and the backward high point until the hidden state's gradient exists.
Four recipes: fp32; pure bf16; fp32 weights under bf16 autocast (as Trainer + accelerate run it:
torch's CPU autocast, with log_softmax moved to the fp32 list as CUDA's has it); a frozen bf16 head
under autocast (LoRA). compare.py --check holds
memfit's `loss: chunked_recompute` to them.
"""

import contextlib
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure as M  # noqa: E402  (the allocator timeline and the CUDA autocast emulation)
import torch  # noqa: E402

OUT = os.path.join(HERE, "out", "trl_loss.json")
# (batch, sequence, hidden, vocabulary): 2 x 512 valid targets, four chunks of 256; one shape where
# the chunks' V-wide tensors are the larger, one where the head weight's copies are.
SHAPES = [(2, 513, 384, 8192), (2, 257, 2048, 8192), (4, 257, 2048, 8192), (2, 257, 3072, 4096)]
RECIPES = {
    # name: (hidden dtype, head weight dtype, head trains, autocast)
    "fp32": (torch.float32, torch.float32, True, False),
    "bf16": (torch.bfloat16, torch.bfloat16, True, False),
    "bf16_mixed": (torch.float32, torch.float32, True, True),
    "lora_bf16_base": (torch.bfloat16, torch.bfloat16, False, True),
}


class _CudaListFunctional:
    """torch.nn.functional as TRL's _chunk calls it, with log_softmax on CUDA autocast's fp32 list
    (CPU autocast leaves it in the input's dtype; every other op of the chunk has the same rule on
    both: the matmul in bf16, nll_loss in fp32)."""

    def __getattr__(self, name):
        return getattr(torch.nn.functional, name)

    @staticmethod
    def log_softmax(x, dim):
        if torch.is_autocast_enabled("cpu"):
            x = x.float()
        return torch.nn.functional.log_softmax(x, dim=dim)


def run(shape, hidden_dtype, weight_dtype, trains, autocast):
    BATCH, SEQ, HIDDEN, VOCAB = shape
    import trl.trainer.sft_trainer as sft
    from trl.trainer.sft_trainer import _CHUNKED_LM_HEAD_CHUNK_SIZE, _chunked_cross_entropy_loss
    sft.F = _CudaListFunctional()
    torch.manual_seed(0)
    # The decoder's output needs a gradient (the blocks below train or carry adapters).
    hidden = torch.randn(BATCH, SEQ, HIDDEN, dtype=hidden_dtype).requires_grad_(True)
    weight = torch.nn.Parameter((torch.randn(VOCAB, HIDDEN) * 0.02).to(weight_dtype), requires_grad=trains)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ))
    context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with M.Timeline() as tl:
        tl.mark("start")
        with context:
            loss, _, _, _ = _chunked_cross_entropy_loss(hidden, weight, _CHUNKED_LM_HEAD_CHUNK_SIZE, labels=labels)
        tl.mark("forward_end")
        loss.backward()  # torch.utils.checkpoint restores the forward's autocast state to recompute
        tl.mark("backward_end")
    cum, pos = tl.cumulative()
    base = cum[pos["start"]]
    return {"forward_peak_bytes": max(cum[pos["start"]:pos["forward_end"] + 1]) - base,
            "kept_bytes": cum[pos["forward_end"]] - base,
            "backward_peak_bytes": max(cum[pos["forward_end"]:pos["backward_end"] + 1]) - base,
            "chunk_size": _CHUNKED_LM_HEAD_CHUNK_SIZE}


def main():
    import importlib.metadata as md
    out = {"versions": {k: md.version(k) for k in ("torch", "trl")}, "cases": []}
    for shape in SHAPES:
        for name, args in RECIPES.items():
            r = dict(zip(("batch", "seq", "hidden", "vocab"), shape), recipe=name, **run(shape, *args))
            out["cases"].append(r)
            print("%-18s %-15s forward %10d  kept %9d  backward %10d" % (
                "x".join(map(str, shape)), name, r["forward_peak_bytes"], r["kept_bytes"], r["backward_peak_bytes"]))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote %s" % OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
