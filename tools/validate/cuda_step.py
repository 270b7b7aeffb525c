"""A real training step on a CUDA device: what torch.cuda reports, phase by phase.

measure_cuda_step(cfg) builds the same module as measure.py, moves it to the GPU, and runs two
full steps (forward + loss, backward, optimizer.step(), zero_grad(set_to_none=True)); the second
is the steady state memfit estimates (optimizer states already exist). It records
torch.cuda.max_memory_allocated() for each phase of that step, the allocated bytes at the
phase boundaries, and max_memory_reserved(). Used by `measure.py --device cuda` and
`grid.py --device cuda`; on a machine without CUDA it raises a clear error.
"""

import torch

import measure
import models


def _require_cuda():
    if not torch.cuda.is_available():
        raise RuntimeError("--device cuda: this machine has no CUDA device (torch.cuda.is_available() is False)")


def measure_cuda_step(cfg, seed=0):
    _require_cuda()
    dev = torch.device("cuda")
    model = models.build_model(cfg, seed=seed).to(dev)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = measure.OPTIMIZERS[cfg["training"]["optimizer"]](trainable, cfg["training"])
    ids, labels = measure.make_batch(cfg, seed)
    ids, labels = ids.to(dev), labels.to(dev)
    model.checkpointing = cfg["training"].get("checkpointing", "none") == "full"

    def step(record):
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        loss = model(ids, labels)
        torch.cuda.synchronize()
        record["forward_peak_bytes"] = torch.cuda.max_memory_allocated()
        record["after_forward_bytes"] = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        loss.backward()
        del loss
        torch.cuda.synchronize()
        record["backward_peak_bytes"] = torch.cuda.max_memory_allocated()
        record["after_backward_bytes"] = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        opt.step()
        torch.cuda.synchronize()
        record["optimizer_step_peak_bytes"] = torch.cuda.max_memory_allocated()
        record["start_bytes"] = start
        record["max_memory_reserved_bytes"] = torch.cuda.max_memory_reserved()

    first, steady = {}, {}
    step(first)   # allocates the optimizer states
    step(steady)  # the steady state
    steady["max_memory_allocated_bytes"] = max(steady["forward_peak_bytes"], steady["backward_peak_bytes"],
                                               steady["optimizer_step_peak_bytes"])
    steady["first_step"] = first
    steady["device_name"] = torch.cuda.get_device_name(0)
    steady["torch_version"] = torch.__version__
    return steady
