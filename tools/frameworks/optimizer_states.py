#!/usr/bin/env python3
"""Optimizer state bytes measured on the real libraries, on the CPU, for a tiny Llama.

    pip install --no-deps --target /tmp/optlibs galore-torch==1.0 adam-mini==1.1.1 lomo-optim==0.1.1 \\
        came-pytorch==0.1.3 schedulefree==1.4.1 bitsandbytes==0.50.2
    # plus the single-file / source optimizers from their repositories, into the same folder:
    #   facebookresearch/optimizers distributed_shampoo/ (f606606), nikhilvyas/SOAP soap.py (a1e5535),
    #   Liuhong99/Sophia sophia.py (a7e1572), KellerJordan/Muon muon.py (857d1ad)
    PYTHONPATH=/tmp/optlibs .venv-frameworks/bin/python tools/frameworks/optimizer_states.py
        # -> tests/fixtures/optimizers/optimizer_states.json

Each case builds the same fp32 LlamaForCausalLM (transformers, from the tiny config below), runs one
forward, backward and optimizer step, and sums the bytes of every distinct tensor storage the
optimizer holds (its `state`, walked through dicts, lists and objects such as GaLore's projector and
Shampoo's preconditioner dataclasses). The per-parameter step counters are left out (`step`:
PyTorch keeps them on the CPU unless capturable/fused; LOMO has none), and so are Shampoo's scalar
bookkeeping tensors (0-dim). tests/core/optimizer_test.cpp checks memfit's `optimizer_states` for the
same model (fp32 recipe, full fine-tune) against every case, to the byte. GaLore's 8-bit AdamW
cannot step on the CPU (galore_torch/adamw8bit.py calls CUDA kernels): its states are derived from
the code only.
"""

import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "optimizers", "optimizer_states.json")

import torch  # noqa: E402
import transformers  # noqa: E402

torch.Tensor.cuda = lambda self, *a, **k: self  # AdaLomo allocates its states with .cuda()

TINY = {"vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "max_position_embeddings": 128,
        "tie_word_embeddings": False}
MEMFIT_MODEL = dict(TINY, model_type="llama", mlp="gated", norm="rmsnorm", position_embedding="rotary")


def model():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**TINY)
    return transformers.LlamaForCausalLM(cfg).float()


def hidden_matrices(m):  # Muon's and GaLore's split: 2-D weights inside the blocks
    return [p for n, p in m.named_parameters() if p.ndim >= 2 and ".layers." in n]


def others(m):
    ids = {id(p) for p in hidden_matrices(m)}
    return [p for p in m.parameters() if id(p) not in ids]


def make(name, m, opts):
    import bitsandbytes as bnb
    if name == "adamw":
        return torch.optim.AdamW(m.parameters(), lr=1e-3)
    if name == "sgd_momentum":
        return torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
    if name == "adafactor":
        return transformers.optimization.Adafactor(m.parameters(), lr=None)
    if name == "adamw_8bit":
        return bnb.optim.AdamW8bit(m.parameters(), lr=1e-3)
    if name == "lion":
        return bnb.optim.Lion(m.parameters(), lr=1e-4)
    if name == "lion_8bit":
        return bnb.optim.Lion8bit(m.parameters(), lr=1e-4)
    if name == "sgd_momentum_8bit":
        return bnb.optim.SGD8bit(m.parameters(), lr=1e-3, momentum=0.9)
    if name in ("galore_adamw", "galore_adamw_8bit"):
        import galore_torch
        cls = galore_torch.GaLoreAdamW if name == "galore_adamw" else galore_torch.GaLoreAdamW8bit
        groups = [{"params": others(m)}, {"params": hidden_matrices(m), "rank": opts["galore_rank"],
                                          "update_proj_gap": 200, "scale": 0.25, "proj_type": "std"}]
        return cls(groups, lr=1e-3)
    if name == "adam_mini":
        import adam_mini
        return adam_mini.Adam_mini(named_parameters=m.named_parameters(), lr=1e-3, dim=64, n_heads=4, n_kv_heads=2)
    if name == "muon":
        import muon
        groups = [dict(params=hidden_matrices(m), lr=0.02, momentum=0.95, weight_decay=0, use_muon=True),
                  dict(params=others(m), lr=3e-4, betas=(0.9, 0.95), eps=1e-10, weight_decay=0, use_muon=False)]
        return muon.SingleDeviceMuonWithAuxAdam(groups)
    if name == "shampoo":
        from distributed_shampoo import DistributedShampoo
        kw = {"max_preconditioner_dim": opts["max_preconditioner_dim"]} if opts.get("max_preconditioner_dim") else {}
        return DistributedShampoo(m.parameters(), lr=1e-3, betas=(0.9, 1.0), epsilon=1e-12, **kw)
    if name == "soap":
        import soap
        kw = {"max_precond_dim": opts["max_preconditioner_dim"]} if opts.get("max_preconditioner_dim") else {}
        return soap.SOAP(m.parameters(), lr=3e-3, betas=(0.95, 0.95), precondition_frequency=10, **kw)
    if name == "came":
        import came_pytorch
        return came_pytorch.CAME(m.parameters(), lr=2e-4, weight_decay=1e-2, betas=(0.9, 0.999, 0.9999),
                                 eps=(1e-30, 1e-16))
    if name == "sophia":
        import sophia
        return sophia.SophiaG(m.parameters(), lr=2e-4, betas=(0.965, 0.99), rho=0.01, weight_decay=1e-1)
    if name == "adamw_4bit":
        from torchao.optim import AdamW4bit
        return AdamW4bit(m.parameters(), lr=1e-3)
    if name == "schedule_free_adamw":
        import schedulefree
        opt = schedulefree.AdamWScheduleFree(m.parameters(), lr=1e-3)
        opt.train()
        return opt
    raise ValueError(name)


def storages(obj, seen, out, key="", depth=0):
    """Every tensor reachable from the optimizer's state, once per storage."""
    if depth > 8:
        return
    if torch.is_tensor(obj) and type(obj) is not torch.Tensor and hasattr(obj, "__tensor_flatten__"):
        # A tensor subclass (torchao's OptimState4bit): the tensors it is made of.
        names, _ = obj.__tensor_flatten__()
        for name in names:
            storages(getattr(obj, name), seen, out, key, depth + 1)
        return
    if torch.is_tensor(obj):
        if key == "step" or obj.dim() == 0 and key not in ("vmean",):
            return
        ptr = obj.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            out[key] = out.get(key, 0) + obj.untyped_storage().nbytes()
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            storages(v, seen, out, k if isinstance(k, str) else key, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            storages(v, seen, out, key, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, (torch.nn.Module, type)):
        for k, v in vars(obj).items():
            storages(v, seen, out, k, depth + 1)


def measure(name, opts):
    m = model()
    ids = torch.randint(0, TINY["vocab_size"], (2, 16))
    if name in ("lomo", "adalomo"):
        import lomo_optim
        opt = (lomo_optim.Lomo if name == "lomo" else lomo_optim.AdaLomo)(m, lr=1e-3)
        loss = m(input_ids=ids, labels=ids).loss
        opt.fused_backward(loss, 1e-3)
        state = {k: getattr(opt, k) for k in ("exp_avg_sq", "exp_avg_sq_row", "exp_avg_sq_col") if hasattr(opt, k)}
        grads_left = sum(p.grad is not None for p in m.parameters())
    else:
        opt = make(name, m, opts)
        m(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        state = opt.state
        grads_left = None
    out = {}
    storages(state, set(), out)
    entry = {"optimizer": name, "options": opts, "state_bytes": sum(out.values()), "by_key": out}
    if grads_left is not None:
        entry["parameters_with_grad_after_backward"] = grads_left
    return entry


CASES = [("adamw", {}), ("sgd_momentum", {}), ("adafactor", {}), ("adamw_8bit", {}), ("lion", {}),
         ("lion_8bit", {}), ("sgd_momentum_8bit", {}), ("galore_adamw", {"galore_rank": 16}),
         ("galore_adamw", {"galore_rank": 48}), ("adam_mini", {}),
         ("muon", {}), ("lomo", {}), ("adalomo", {}), ("shampoo", {}), ("shampoo", {"max_preconditioner_dim": 48}),
         ("soap", {}), ("soap", {"max_preconditioner_dim": 100}), ("came", {}), ("sophia", {}),
         ("schedule_free_adamw", {}), ("adamw_4bit", {})]


def main():
    import importlib.metadata as md
    # --only NAME: measure that optimizer's cases again and keep the fixture's others as they are.
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    kept = {}
    if only:
        with open(OUT) as f:
            for r in json.load(f)["cases"]:
                kept[(r["optimizer"], json.dumps(r["options"], sort_keys=True))] = r
    results = []
    for name, opts in CASES:
        if only and name != only and (name, json.dumps(opts, sort_keys=True)) in kept:
            results.append(kept[(name, json.dumps(opts, sort_keys=True))])
            continue
        try:
            r = measure(name, opts)
        except Exception as e:
            r = {"optimizer": name, "options": opts, "error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        print("%-22s %-34s %s" % (name, json.dumps(opts), r.get("state_bytes", r.get("error"))), file=sys.stderr)
        results.append(r)
    versions = {}
    for pkg in ("torch", "transformers", "bitsandbytes", "galore-torch", "adam-mini", "lomo-optim", "came-pytorch",
                "schedulefree", "torchao"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    versions["from source"] = ("distributed_shampoo facebookresearch/optimizers f606606; soap.py nikhilvyas/SOAP "
                               "a1e5535; sophia.py Liuhong99/Sophia a7e1572; muon.py KellerJordan/Muon 857d1ad")
    doc = {"about": "tools/frameworks/optimizer_states.py writes this: optimizer state bytes of real "
                    "libraries after one step on a tiny fp32 Llama (CPU)",
           "versions": versions, "memfit_model": MEMFIT_MODEL, "cases": results}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
