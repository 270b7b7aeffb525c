"""Stand-ins, on the CPU, for the two CUDA kernels a Gated DeltaNet layer (Qwen3.5) runs on a GPU.

transformers' Qwen3_5GatedDeltaNet calls flash-linear-attention's chunk_gated_delta_rule and
Dao-AILab's causal_conv1d_fn when they are installed (its fast path); on the CPU it falls back to
torch code that keeps a different, much larger, set of tensors. Neither CUDA kernel runs here, so
families.py swaps in these autograd functions: each computes its output with the torch fallback
(no graph), and saves for backward exactly the tensors the CUDA kernel's autograd function saves,
with their shapes and dtypes (read from the kernels' code: docs/frameworks.md, "Hybrid linear
attention"); backward recomputes through the torch fallback, so the step's gradients are real.
Everything around the kernels (projections, gates, the gated norm, the attention layers, the MLP)
is transformers' own code, measured as it runs.

  * CausalConv1dFn (causal-conv1d, causal_conv1d_interface.py) keeps x and the weight; the output
    and its SiLU are recomputed.
  * ChunkGatedDeltaRuleFunction (fla/ops/gated_delta_rule/chunk.py) keeps q and k after the L2
    norm (the input dtype) with their fp32 rstd, v, the fp32 chunk-local cumulative gate, beta, and
    A, the solved (I + A)^-1 of each 64-token chunk (in k's dtype, [B, T, Hv, 64]); the chunk states are
    recomputed in backward.
"""

import contextlib

import torch

CHUNK = 64


class CausalConv1d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, fallback, activation):
        with torch.no_grad():
            out = fallback(x, weight, None, activation=activation)
        ctx.save_for_backward(x, weight)
        ctx.fallback, ctx.activation = fallback, activation
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        with torch.enable_grad():
            xr, wr = x.detach().requires_grad_(x.requires_grad), weight.detach().requires_grad_(weight.requires_grad)
            out = ctx.fallback(xr, wr, None, activation=ctx.activation)
            inputs = [t for t in (xr, wr) if t.requires_grad]
            grads = torch.autograd.grad(out, inputs, grad) if inputs else ()
        it = iter(grads)
        return (next(it) if x.requires_grad else None, next(it) if weight.requires_grad else None, None, None)


def _l2norm_rstd(x):
    xf = x.float()
    return torch.rsqrt((xf * xf).sum(-1) + 1e-6)


class ChunkGatedDeltaRule(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, g, beta, fallback):
        with torch.no_grad():
            out, _ = fallback(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
            q_rstd, k_rstd = _l2norm_rstd(q), _l2norm_rstd(k)
            q_n = (q.float() * q_rstd.unsqueeze(-1)).to(q.dtype)
            k_n = (k.float() * k_rstd.unsqueeze(-1)).to(k.dtype)
            b, t, hv = g.shape
            g_cumsum = (g.float().reshape(b, -1, CHUNK, hv).cumsum(2).reshape(b, t, hv) if t % CHUNK == 0
                        else g.float().clone())
            solved = torch.zeros(b, t, hv, CHUNK, dtype=k.dtype)
        ctx.save_for_backward(q_n, k_n, q_rstd, k_rstd, v.contiguous(), g_cumsum, beta, solved)
        ctx.fallback = fallback
        ctx.grads = [t.requires_grad for t in (q, k, v, g, beta)]
        ctx.g_dtype = g.dtype
        return out

    @staticmethod
    def backward(ctx, grad):
        # The CPU recomputation starts from what fla keeps: the normalised q and k stand for q and k
        # (the L2 norm of a unit vector is itself: the gradients' values differ a little from
        # fla's, their shapes and the memory do not), and g is the cumulative gate's difference.
        q_n, k_n, _, _, v, g_cumsum, beta, _ = ctx.saved_tensors
        b, t, hv = g_cumsum.shape
        chunks = g_cumsum.reshape(b, -1, CHUNK, hv) if t % CHUNK == 0 else None
        g = (torch.diff(chunks, dim=2, prepend=torch.zeros_like(chunks[:, :, :1])).reshape(b, t, hv)
             if chunks is not None else g_cumsum).to(ctx.g_dtype)
        with torch.enable_grad():
            leaves = [x.detach().requires_grad_(r) for x, r in zip((q_n, k_n, v, g, beta), ctx.grads)]
            out, _ = ctx.fallback(*leaves[:3], g=leaves[3], beta=leaves[4], use_qk_l2norm_in_kernel=True)
            wanted = [t for t in leaves if t.requires_grad]
            grads = iter(torch.autograd.grad(out, wanted, grad) if wanted else ())
        return tuple(next(grads) if t.requires_grad else None for t in leaves) + (None,)


def install(module):
    """Swap the kernels into a transformers modeling module (modeling_qwen3_5, modeling_qwen3_5_moe)."""
    conv_fallback = module.causal_conv1d_fn
    rule_fallback = module.torch_chunk_gated_delta_rule

    def causal_conv1d_fn(x, weight, bias=None, activation=None, **kwargs):
        assert bias is None
        return CausalConv1d.apply(x, weight, conv_fallback, activation)

    def chunk_gated_delta_rule(q, k, v, g, beta, initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False, **kwargs):
        # use_cache left on in training hands a cache, which takes the final state (fla returns it
        # outside the graph: no gradient flows through it here).
        assert initial_state is None and use_qk_l2norm_in_kernel
        final = None
        if output_final_state:
            with torch.no_grad():
                _, final = rule_fallback(q, k, v, g=g, beta=beta, output_final_state=True, use_qk_l2norm_in_kernel=True)
        return ChunkGatedDeltaRule.apply(q, k, v, g, beta, rule_fallback), final

    module.causal_conv1d_fn = causal_conv1d_fn
    module.torch_chunk_gated_delta_rule = chunk_gated_delta_rule
    module._memfit_fallbacks = (conv_fallback, rule_fallback)
    module._memfit_kernels = (causal_conv1d_fn, chunk_gated_delta_rule)
    return conv_fallback, rule_fallback


@contextlib.contextmanager
def torch_fallback(modules):
    """transformers' own torch fallbacks for the duration (what runs without the CUDA kernels)."""
    for m in modules:
        m.causal_conv1d_fn, m.torch_chunk_gated_delta_rule = m._memfit_fallbacks
    try:
        yield
    finally:
        for m in modules:
            m.causal_conv1d_fn, m.torch_chunk_gated_delta_rule = m._memfit_kernels
