"""The backward working set of transformers' torch fallback for the gated delta rule, measured.

Without flash-linear-attention, Qwen3.5's and Qwen3-Next's Gated DeltaNet layers run
`torch_chunk_gated_delta_rule` (transformers/models/qwen3_5/modeling_qwen3_5.py): fp32 chunk tensors
and a Python loop over 64-token chunks that autograd records step by step. This script runs that
function alone on the CPU, under torch.profiler's memory timeline, for a few shapes, and reports:

  * saved: what the forward leaves alive besides its inputs (the output included);
  * working: how far the backward climbs above that, with the output's gradient allocated before it;

beside memfit's model of the working set (`linear_attention_kernel: torch` in
`layer_backward_working_bytes`, core/src/activations.cpp, restated here as `modelled_working`;
tests/core/parameters_test.cpp holds the core to the measured bytes of one shape). Writes
out/gdn_fallback_backward.json. Run with the frameworks' virtual environment (~1 min):

    .venv-frameworks/bin/python tools/frameworks/gdn_fallback_backward.py
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure as M  # noqa: E402  (the CPU allocator timeline)

CHUNK = 64


def timeline(fn):
    """fn(mark) under measure.py's allocator timeline: (live bytes after each event, {mark: index})."""
    t = M.Timeline()
    with t:
        fn(t.mark)
    return t.cumulative()


def measure(batch, seq, hk, hv, k, v, dtype):
    from transformers.models.qwen3_5.modeling_qwen3_5 import torch_chunk_gated_delta_rule as rule
    rule = getattr(rule, "__wrapped__", rule)
    g0 = torch.Generator().manual_seed(0)
    out = {}

    def step(mark):
        q = torch.randn(batch, seq, hk, k, generator=g0).to(dtype).requires_grad_()
        kk = torch.randn(batch, seq, hk, k, generator=g0).to(dtype).requires_grad_()
        vv = torch.randn(batch, seq, hv, v, generator=g0).to(dtype).requires_grad_()
        g = (-torch.rand(batch, seq, hv, generator=g0)).to(dtype).requires_grad_()
        beta = torch.rand(batch, seq, hv, generator=g0).to(dtype).requires_grad_()
        mark("forward_start")
        y, _ = rule(q, kk, vv, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
        mark("forward_end")
        grad = torch.randn_like(y)
        mark("backward_start")
        y.backward(grad)
        mark("backward_end")
        out["grads"] = sum(t.grad.numel() * t.grad.element_size() for t in (q, kk, vv, g, beta))

    cum, pos = timeline(step)
    base = cum[pos["forward_start"]]
    saved = cum[pos["forward_end"]] - base
    start = cum[pos["backward_start"]]
    peak = max(cum[pos["backward_start"]:pos["backward_end"] + 1])
    return {"batch": batch, "seq": seq, "key_heads": hk, "value_heads": hv, "key_dim": k, "value_dim": v,
            "dtype": str(dtype).replace("torch.", ""), "saved_bytes": saved, "working_bytes": peak - start}


def modelled_working(batch, seq, hk, hv, k, v):
    """memfit's working set of the fallback's backward (activations.cpp, torch kernel), fp32."""
    chunks = -(-seq // CHUNK)
    padded = batch * chunks * CHUNK
    f = 4
    # The fp32 gradients autograd accumulates at full size while it walks the chunk loop back: the
    # chunked query's, key's and decayed keys' (K wide, at the value heads), the new values' and the
    # output's (V wide), the intra-chunk scores' (64 wide); one select_backward zero-filled tensor of
    # the widest at a time; the state's gradient twice.
    return padded * hv * (k * 3 + v * 2 + CHUNK + max(k, v, CHUNK)) * f + batch * hv * k * v * f * 2


# (batch, tokens, key heads, value heads, key head size, value head size): four chunks or more,
# grouped and not, K and V apart, a length that pads; then three of one or two chunks.
SHAPES = [
    (1, 256, 2, 4, 32, 32), (1, 512, 2, 4, 64, 64), (2, 256, 4, 4, 32, 64), (1, 1024, 2, 4, 64, 64),
    (1, 300, 2, 4, 32, 32), (1, 512, 4, 8, 128, 128), (1, 256, 4, 4, 16, 48), (1, 768, 1, 1, 32, 32),
    (1, 512, 2, 2, 96, 32), (2, 384, 1, 3, 32, 80), (1, 2048, 1, 2, 32, 32),
    (3, 128, 2, 2, 48, 16), (1, 128, 1, 1, 64, 64), (4, 64, 2, 2, 32, 32),
]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "gdn_fallback_backward.json")


def main():
    rows = []
    for shape in SHAPES:
        for dtype in (torch.float32, torch.bfloat16):
            r = measure(*shape, dtype)
            r["memfit_working_bytes"] = modelled_working(*shape)
            r["ratio"] = round(r["memfit_working_bytes"] / r["working_bytes"], 4)
            rows.append(r)
            print("%-40s %-8s saved %11d  working %11d  memfit %11d  ratio %.4f" % (
                shape, r["dtype"], r["saved_bytes"], r["working_bytes"], r["memfit_working_bytes"], r["ratio"]),
                file=sys.stderr)
    import transformers
    doc = {"about": __doc__.strip().splitlines()[0], "torch": torch.__version__,
           "transformers": transformers.__version__, "rows": rows}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", OUT, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
