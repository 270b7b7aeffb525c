"""CUDA autocast policy, emulated on the CPU (a TorchFunctionMode).

`torch.autocast("cpu")` and `torch.autocast("cuda")` use different op lists. On CUDA,
layer_norm, rms_norm, softmax, log_softmax, exp, pow, rsqrt, sum, nll_loss, ... run in
float32 (``AT_FORALL_FP32`` and ``AT_FORALL_FP32_SET_OPT_DTYPE`` in
torch/include/ATen/autocast_mode.h); on the CPU most of them run in bf16. What autograd
saves therefore differs (e.g. a GPT-2 LayerNorm under CUDA autocast returns float32, and
the next Linear saves a bf16 copy of it). This mode reproduces the CUDA lists at the
torch-function level, above autograd, exactly as the Autocast dispatch key does (the casts
are recorded by autograd), including autocast's cache of casts of leaf tensors that
require grad (one bf16 copy of each trainable weight per forward).

Lists copied from torch 2.13.0 autocast_mode.h (AT_FORALL_LOWER_PRECISION_FP,
AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE).
"""

import torch
from torch.overrides import TorchFunctionMode, resolve_name

LOWER = {"linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "baddbmm", "addmm",
         "addbmm", "addmv", "addr", "mv", "einsum", "scaled_dot_product_attention", "conv1d",
         "conv2d", "conv3d", "prelu", "chain_matmul", "linalg_vecdot"}
FP32 = {"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
        "reciprocal", "rsqrt", "sinh", "tan", "pow", "__pow__", "__rpow__", "softplus",
        "layer_norm", "rms_norm", "group_norm", "cosine_similarity", "nll_loss", "kl_div",
        "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "binary_cross_entropy_with_logits",
        "logsumexp", "dist", "cdist", "renorm", "poisson_nll_loss",
        # composite: decomposes into log_softmax (fp32_set_opt_dtype) + nll_loss (fp32)
        "cross_entropy",
        # composite below this layer: aten::square has no Autocast kernel, only a
        # CompositeImplicitAutograd one (at::pow(self, 2); its grad_fn is PowBackward0), so the
        # Autocast key falls through and the pow it calls runs in fp32 on CUDA
        "square"}
SET_OPT_DTYPE = {"softmax", "log_softmax", "cumsum", "cumprod", "prod", "sum"}


def _last(func):
    try:
        n = resolve_name(func) or getattr(func, "__name__", "")
    except Exception:
        n = getattr(func, "__name__", "")
    return n.rsplit(".", 1)[-1]


class CudaAutocastEmulation(TorchFunctionMode):
    def __init__(self, dtype=torch.bfloat16):
        super().__init__()
        self.dtype = dtype
        self.cache = {}
        self.counts = {}

    def _cast(self, x, dtype, cache):
        if isinstance(x, torch.Tensor):
            if x.is_floating_point() and x.dtype != torch.float64 and x.dtype != dtype:
                if cache and x.is_leaf and x.requires_grad:
                    k = (id(x), dtype)
                    if k not in self.cache:
                        self.cache[k] = (x, x.to(dtype))
                    return self.cache[k][1]
                return x.to(dtype)
            return x
        if isinstance(x, (list, tuple)) and x and all(isinstance(e, torch.Tensor) for e in x):
            return type(x)(self._cast(e, dtype, cache) for e in x)
        return x

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _last(func)
        if name in LOWER:
            self.counts[name] = self.counts.get(name, 0) + 1
            args = tuple(self._cast(a, self.dtype, True) for a in args)
            kwargs = {k: self._cast(v, self.dtype, True) for k, v in kwargs.items()}
        elif name in FP32:
            self.counts[name] = self.counts.get(name, 0) + 1
            args = tuple(self._cast(a, torch.float32, False) for a in args)
            kwargs = {k: self._cast(v, torch.float32, False) for k, v in kwargs.items()}
        elif name in SET_OPT_DTYPE:
            x = args[0] if args else None
            if (isinstance(x, torch.Tensor) and x.dtype in (torch.bfloat16, torch.float16)
                    and kwargs.get("dtype") is None):
                self.counts[name] = self.counts.get(name, 0) + 1
                kwargs = dict(kwargs, dtype=torch.float32)
        return func(*args, **kwargs)

    def __exit__(self, *exc):
        self.cache = {}
        return super().__exit__(*exc)
