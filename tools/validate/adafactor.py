"""Adafactor for torch 1.13 (which has none), with the state layout of
Hugging Face transformers' Adafactor:

* "step": Python int (not a tensor), "RMS": Python float;
* params with >= 2 dims: factored second moment, "exp_avg_sq_row" of shape
  shape[:-1] and "exp_avg_sq_col" of shape shape[:-2] + shape[-1:];
* 1-D params: full second moment "exp_avg_sq";
* "exp_avg" (first moment, full size) only when beta1 is set;
* all state tensors take the dtype of the gradient *after* HF's upcast of
  fp16/bf16 gradients to float32, so they are float32 even for pure bf16
  parameters.

The update follows the Adafactor paper / HF defaults (relative step,
parameter scaling, update clipping), so a step changes the parameters the
way HF's does.
"""

import math

import torch


class Adafactor(torch.optim.Optimizer):
    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8,
                 beta1=None, weight_decay=0.0, scale_parameter=True, relative_step=True,
                 warmup_init=False):
        if lr is not None and relative_step:
            raise ValueError("cannot combine a manual lr with relative_step=True")
        defaults = dict(lr=lr, eps=eps, clip_threshold=clip_threshold, decay_rate=decay_rate,
                        beta1=beta1, weight_decay=weight_decay, scale_parameter=scale_parameter,
                        relative_step=relative_step, warmup_init=warmup_init)
        super().__init__(params, defaults)

    @staticmethod
    def _rms(t):
        return t.norm(2) / (t.numel() ** 0.5)

    @staticmethod
    def _lr(group, state):
        rel = group["lr"]
        if group["relative_step"]:
            min_step = 1e-6 * state["step"] if group["warmup_init"] else 1e-2
            rel = min(min_step, 1.0 / math.sqrt(state["step"]))
        scale = max(group["eps"][1], state["RMS"]) if group["scale_parameter"] else 1.0
        return scale * rel

    @staticmethod
    def _approx_sq_grad(row, col):
        r = (row / row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
        c = col.unsqueeze(-2).rsqrt()
        return r * c

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.dtype in (torch.float16, torch.bfloat16):
                    grad = grad.float()
                state = self.state[p]
                shape = grad.shape
                factored = len(shape) >= 2
                first_moment = group["beta1"] is not None
                if len(state) == 0:
                    state["step"] = 0
                    if first_moment:
                        state["exp_avg"] = torch.zeros_like(grad)
                    if factored:
                        state["exp_avg_sq_row"] = torch.zeros(shape[:-1]).to(grad)
                        state["exp_avg_sq_col"] = torch.zeros(shape[:-2] + shape[-1:]).to(grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    state["RMS"] = 0
                pw = p.float() if p.dtype in (torch.float16, torch.bfloat16) else p
                state["step"] += 1
                state["RMS"] = float(self._rms(pw))
                lr = self._lr(group, state)
                beta2t = 1.0 - math.pow(state["step"], group["decay_rate"])
                upd = grad ** 2 + group["eps"][0]
                if factored:
                    row, col = state["exp_avg_sq_row"], state["exp_avg_sq_col"]
                    row.mul_(beta2t).add_(upd.mean(dim=-1), alpha=1.0 - beta2t)
                    col.mul_(beta2t).add_(upd.mean(dim=-2), alpha=1.0 - beta2t)
                    upd = self._approx_sq_grad(row, col).mul_(grad)
                else:
                    sq = state["exp_avg_sq"]
                    sq.mul_(beta2t).add_(upd, alpha=1.0 - beta2t)
                    upd = sq.rsqrt().mul_(grad)
                upd.div_((self._rms(upd) / group["clip_threshold"]).clamp_(min=1.0))
                upd.mul_(lr)
                if first_moment:
                    ea = state["exp_avg"]
                    ea.mul_(group["beta1"]).add_(upd, alpha=1 - group["beta1"])
                    upd = ea
                if group["weight_decay"] != 0:
                    pw.add_(pw, alpha=-group["weight_decay"] * lr)
                pw.add_(-upd)
                if pw is not p:
                    p.copy_(pw)
        return loss
