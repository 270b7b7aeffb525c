#!/usr/bin/python3
"""Measure ground-truth training memory for a memfit configuration (CPU).

    /usr/bin/python3 tools/validate/measure.py CONFIG.json [--explain] [--no-profile]

Prints one JSON object (see README.md for every key).  --explain prints a
readable per-op breakdown of the saved tensors to stderr as well.
"""

import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import tracker as trk  # noqa: E402
from adafactor import Adafactor  # noqa: E402
from models import DTYPES, build_model, family_of  # noqa: E402

MODEL_DEFAULTS = {
    "num_key_value_heads": None, "head_dim": None, "mlp": "plain", "hidden_act": "gelu",
    "norm": "layernorm", "position_embedding": "learned", "max_position_embeddings": 1024,
    "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
    "num_experts": 0, "num_experts_per_tok": 0, "moe_intermediate_size": None,
}
TRAINING_DEFAULTS = {
    "micro_batch_size": 1, "precision": "fp32", "optimizer": "adamw", "checkpointing": "none",
    "attention": "eager", "dropout": 0.0, "finetune": {"method": "full"},
}
REQUIRED_MODEL = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size")


class ConfigError(ValueError):
    pass


def normalize_config(cfg):
    """Fill defaults and check the fields this harness relies on."""
    if "model" not in cfg or "training" not in cfg:
        raise ConfigError("config needs 'model' and 'training' objects")
    cfg = copy.deepcopy(cfg)
    m, t = cfg["model"], cfg["training"]
    for k in REQUIRED_MODEL:
        if k not in m:
            raise ConfigError("model.%s is required" % k)
    if "seq_len" not in t:
        raise ConfigError("training.seq_len is required")
    for k, v in MODEL_DEFAULTS.items():
        if m.get(k) is None and v is not None:
            m[k] = v
        m.setdefault(k, v)
    for k, v in TRAINING_DEFAULTS.items():
        if t.get(k) is None:
            t[k] = copy.deepcopy(v)
    if t["precision"] not in DTYPES:
        raise ConfigError("training.precision must be fp32 or bf16")
    if t["optimizer"] not in OPTIMIZERS:
        raise ConfigError("training.optimizer must be one of %s" % ", ".join(OPTIMIZERS))
    if t["checkpointing"] not in ("none", "full"):
        raise ConfigError("training.checkpointing must be none or full")
    if t["attention"] != "eager":
        raise ConfigError("only eager attention is measured")
    if m["position_embedding"] == "learned" and m["max_position_embeddings"] < t["seq_len"]:
        raise ConfigError("seq_len exceeds max_position_embeddings")
    return cfg


def _adamw(params, t):
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


def _sgd_momentum(params, t):
    return torch.optim.SGD(params, lr=1e-2, momentum=0.9)


def _sgd(params, t):
    return torch.optim.SGD(params, lr=1e-2)


def _adafactor(params, t):
    return Adafactor(params, beta1=t.get("adafactor_beta1"))


OPTIMIZERS = {"adamw": _adamw, "sgd_momentum": _sgd_momentum, "sgd": _sgd, "adafactor": _adafactor}


# ------------------------------------------------------------------ memory timeline
class MemoryTimeline:
    """CPU allocator timeline from torch.profiler (profile_memory=True).

    Boundaries are found exactly with sentinel allocations of unique sizes:
    mark(name) allocates and frees a uint8 tensor whose size identifies it."""

    BASE = 1_000_003

    def __init__(self):
        self.names = []
        self.prof = None

    def mark(self, name):
        n = self.BASE + 2 * len(self.names)
        self.names.append(name)
        x = torch.empty(n, dtype=torch.uint8)
        del x

    def __enter__(self):
        self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                           profile_memory=True)
        self.prof.__enter__()
        return self

    def __exit__(self, *exc):
        self.prof.__exit__(*exc)
        return False

    def analyse(self):
        evs = [e for e in self.prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        evs = sorted(range(len(evs)), key=lambda i: (evs[i].start_us(), i)), evs
        order, evs = evs
        live = 0
        cum = []       # live bytes after each event
        pos = {}       # marker name -> index in cum (before the sentinel alloc)
        sizes = {self.BASE + 2 * i: nm for i, nm in enumerate(self.names)}
        for i in order:
            nb = evs[i].nbytes()
            if nb in sizes and sizes[nb] not in pos:
                pos[sizes[nb]] = len(cum)
                cum.append(live)
                continue
            if -nb in sizes:
                continue
            live += nb
            cum.append(live)
        return cum, pos

    def summary(self):
        cum, pos = self.analyse()
        need = ("forward_start", "head_start", "head_end", "forward_end", "backward_end")
        if any(k not in pos for k in need):
            return {"error": "markers missing from the profiler timeline: %s" %
                    [k for k in need if k not in pos]}
        base = cum[pos["forward_start"]]

        def peak(a, b):
            return max(cum[pos[a]:pos[b] + 1]) - base

        hs = cum[pos["head_start"]]
        return {
            "note": "CPU allocator bytes relative to just before forward; parameters excluded",
            "forward_peak_bytes": peak("forward_start", "forward_end"),
            "live_after_forward_bytes": cum[pos["forward_end"]] - base,
            "head_start_live_bytes": hs - base,
            "head_transient_peak_bytes": max(cum[pos["head_start"]:pos["head_end"] + 1]) - hs,
            "head_net_bytes": cum[pos["head_end"]] - hs,
            "backward_peak_bytes": peak("forward_end", "backward_end"),
            "live_after_backward_bytes": cum[pos["backward_end"]] - base,
        }


# ------------------------------------------------------------------ passes
def make_batch(cfg, seed):
    t = cfg["training"]
    g = torch.Generator().manual_seed(seed + 7)
    ids = torch.randint(0, cfg["model"]["vocab_size"], (t["micro_batch_size"], t["seq_len"]), generator=g)
    return ids, ids.clone()


def run_pass(model, ids, labels, checkpointing, seed, profile=True):
    """One forward + backward with saved-tensor tracking. Returns
    (tracker, loss value, timeline summary or None, tokens per expert)."""
    for p in model.parameters():
        p.grad = None
    model.checkpointing = checkpointing
    tr = trk.Tracker(model)
    tl = MemoryTimeline() if profile else None
    tr.marker = tl.mark if tl else None
    torch.manual_seed(seed + 1)
    try:
        if tl:
            tl.__enter__()
        with tr.measuring():
            trk.mark("forward_start")
            loss = model(ids, labels)
            trk.mark("forward_end")
        tr._keep = []  # let backward free saved tensors as usual
        tr.loss_bytes = loss.numel() * loss.element_size()
        tr.preexisting_ptrs = {trk.storage_of(ids)[0], trk.storage_of(labels)[0]}
        loss.backward()
        del loss
        if tl:
            tl.mark("backward_end")
    finally:
        if tl:
            tl.__exit__(None, None, None)
        tr.remove_hooks()
    experts = []
    for blk in model.layers:
        c = getattr(blk.mlp, "last_tokens_per_expert", None)
        if c is not None:
            experts.append(c)
    summary = tl.summary() if tl else None
    return tr, summary, experts


def optimizer_bytes(opt):
    state_bytes = scalar_bytes = 0
    detail = {}
    py_scalars = 0
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                nb = v.numel() * v.element_size()
                if v.dim() == 0:
                    scalar_bytes += nb
                    detail["%s (0-dim %s)" % (k, str(v.dtype).replace("torch.", ""))] = \
                        detail.get("%s (0-dim %s)" % (k, str(v.dtype).replace("torch.", "")), 0) + nb
                else:
                    state_bytes += nb
                    key = "%s (%s)" % (k, str(v.dtype).replace("torch.", ""))
                    detail[key] = detail.get(key, 0) + nb
            elif v is not None:
                py_scalars += 1
    return state_bytes, scalar_bytes, detail, py_scalars


def _summ_records(tr):
    body = tr.total("body")
    head = tr.total("head")
    return {
        "body": body, "head": head,
        "body_cuda": tr.total("body", "cuda_bytes"), "head_cuda": tr.total("head", "cuda_bytes"),
        "body_tensor_view": tr.tensor_view_total("body"), "head_tensor_view": tr.tensor_view_total("head"),
        "save_events": len(tr.records),
        "save_events_of_parameters_or_buffers": sum(1 for r in tr.records if r["owner"]),
        "duplicate_save_events": sum(1 for r in tr.records if not r["counted"] and not r["owner"]
                                     and r["storage_bytes"] > 0),
    }


def layer_breakdown(tr):
    raw, cuda = tr.per_layer(), tr.per_layer("cuda_bytes")
    cl = {L["layer"]: L for L in cuda["layers"]}
    layers = []
    for L in raw["layers"]:
        c = cl.get(L["layer"], {"total": 0, "ops": {}})
        e = {"layer": L["layer"], "total": L["total"], "total_cuda": c["total"], "ops": L["ops"]}
        if c["ops"] != L["ops"]:
            e["ops_cuda"] = c["ops"]
        layers.append(e)
    out = {"source": "pass without checkpointing" if not tr.model.checkpointing else "pass with checkpointing",
           "bytes": "storage bytes, each storage counted once, attributed to its first saver",
           "layers": layers, "outside_layers": raw["outside_layers"]}
    if cuda["outside_layers"] != raw["outside_layers"]:
        out["outside_layers_cuda"] = cuda["outside_layers"]
    return out


def measure(cfg, seed=0, profile=True, keep_trackers=False):
    cfg = normalize_config(cfg)
    m, t = cfg["model"], cfg["training"]
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    model = build_model(cfg, seed)
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    ids, labels = make_batch(cfg, seed)
    ckpt = t["checkpointing"] == "full"

    res = {
        "family": family_of(cfg),
        "parameter_count": sum(p.numel() for p in params),
        "trainable_parameter_count": sum(p.numel() for p in trainable),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in model.buffers()),
        "master_weights_bytes": 0,
    }

    tr_a, tl_a, experts = run_pass(model, ids, labels, False, seed, profile)
    sa = _summ_records(tr_a)
    trackers = {"no_checkpoint": tr_a}
    res["per_layer_breakdown"] = layer_breakdown(tr_a)
    layer_tot = [L["total"] for L in res["per_layer_breakdown"]["layers"]]
    layer_tot_cuda = [L["total_cuda"] for L in res["per_layer_breakdown"]["layers"]]
    res["per_layer_totals"] = layer_tot
    res["per_layer_totals_cuda"] = layer_tot_cuda
    if experts:
        res["tokens_per_expert"] = experts

    if ckpt:
        grads_a = [p.grad.detach().clone() if p.grad is not None else None for p in trainable]
        tr_b, tl_b, _ = run_pass(model, ids, labels, True, seed, profile)
        trackers["checkpoint"] = tr_b
        sb = _summ_records(tr_b)
        same = all((ga is None and p.grad is None) or
                   (ga is not None and p.grad is not None and torch.allclose(ga.float(), p.grad.float(),
                                                                              rtol=1e-3, atol=1e-5))
                   for ga, p in zip(grads_a, trainable))
        res["checkpoint_impl"] = "torch.utils.checkpoint.checkpoint(block, use_reentrant=False) per block"
        res["checkpoint_grads_match_no_checkpoint"] = same
        res["one_block_saved_bytes"] = max(layer_tot) if layer_tot else 0
        res["one_block_saved_bytes_cuda"] = max(layer_tot_cuda) if layer_tot_cuda else 0
        res["checkpoint_rng_state_bytes"] = m["num_hidden_layers"] * torch.get_rng_state().numel()
        res["activations_without_checkpointing_bytes"] = sa["body"]
        main, tl = sb, tl_b
        res["checkpoint_pass_breakdown"] = layer_breakdown(tr_b)
    else:
        main, tl = sa, tl_a

    main_tr = trackers["checkpoint" if ckpt else "no_checkpoint"]
    if tl is not None and "live_after_forward_bytes" in tl:
        pre = sum(r["storage_bytes"] for r in main_tr.counted() if r["storage_ptr"] in main_tr.preexisting_ptrs)
        explained = (main["body"] + main["head"] - pre + main_tr.loss_bytes +
                     res.get("checkpoint_rng_state_bytes", 0))
        tl["explained_live_after_forward_bytes"] = explained
        tl["unexplained_live_after_forward_bytes"] = tl["live_after_forward_bytes"] - explained
    res["activations_bytes"] = main["body"]
    res["activations_bytes_cuda"] = main["body_cuda"]
    res["activations_tensor_view_bytes"] = main["body_tensor_view"]
    res["logits_and_loss_saved_bytes"] = main["head"]
    res["logits_and_loss_saved_bytes_cuda"] = main["head_cuda"]
    res["logits_and_loss_tensor_view_bytes"] = main["head_tensor_view"]
    res["save_event_counts"] = {k: main[k] for k in ("save_events", "save_events_of_parameters_or_buffers",
                                                      "duplicate_save_events")}
    info = model.last_logits_info or {}
    res["logits"] = dict(info)
    if tl is not None:
        res["memory_timeline"] = tl
        if "head_transient_peak_bytes" in tl:
            res["logits"]["measured_head_peak_bytes"] = tl["head_transient_peak_bytes"]

    missing = [i for i, p in enumerate(trainable) if p.grad is None]
    if missing:
        res["warning_params_without_grad"] = len(missing)
    res["gradient_bytes"] = sum(p.grad.numel() * p.grad.element_size() for p in trainable if p.grad is not None)

    opt = OPTIMIZERS[t["optimizer"]](trainable, t)
    opt.step()
    sbytes, scalars, detail, pys = optimizer_bytes(opt)
    res["optimizer_state_bytes"] = sbytes
    res["optimizer_step_scalar_bytes"] = scalars
    res["optimizer_state_detail"] = detail
    res["optimizer_python_scalar_states"] = pys
    res["torch_version"] = torch.__version__
    res["dropout_impl"] = t.get("dropout_impl", "cuda")
    res["config"] = cfg
    if keep_trackers:
        return res, trackers
    return res


# ------------------------------------------------------------------ explain
def _fmt_shape(s):
    return "(" + ",".join(str(x) for x in s) + ")"


def explain(res, trackers, out=sys.stderr):
    cfg = res["config"]
    m, t = cfg["model"], cfg["training"]
    B, T, d = t["micro_batch_size"], t["seq_len"], m["hidden_size"]
    w = out.write
    w("== memfit validate: %s, %s, %s, B=%d T=%d d=%d L=%d V=%d\n" % (
        res["family"], t["precision"], t["optimizer"], B, T, d, m["num_hidden_layers"], m["vocab_size"]))
    w("parameters %d (trainable %d), %d bytes; buffers %d bytes\n" % (
        res["parameter_count"], res["trainable_parameter_count"], res["parameter_bytes"], res["buffer_bytes"]))
    w("gradients %d bytes; optimizer states %d bytes + %d bytes of 0-dim step tensors\n" % (
        res["gradient_bytes"], res["optimizer_state_bytes"], res["optimizer_step_scalar_bytes"]))
    for k, v in sorted(res["optimizer_state_detail"].items()):
        w("    %-34s %12d\n" % (k, v))
    for name, tr in trackers.items():
        w("\n-- saved tensors, pass: %s\n" % name)
        rows = tr.records
        layers = sorted({r["layer"] for r in rows if r["layer"] is not None})
        show = [None] + layers
        for L in show:
            sel = [r for r in rows if r["layer"] == L]
            if not sel:
                continue
            w("\n  [%s]\n" % ("outside layers" if L is None else "layer %d" % L))
            w("  %-44s %-18s %-9s %10s %10s  %s\n" % ("saved by (module:op)", "shape", "dtype", "bytes",
                                                       "/(B*T)", "note"))
            tot = 0
            for r in sel:
                note = []
                if r["owner"]:
                    note.append("excluded, " + r["owner"])
                elif not r["counted"]:
                    if r["storage_bytes"] == 0:
                        note.append("empty")
                    else:
                        note.append("same storage as %s%s" % (
                            "" if r.get("first_saved_layer") is None else "layer %s " % r["first_saved_layer"],
                            r.get("first_saved_by")))
                else:
                    tot += r["storage_bytes"]
                    if r["tensor_bytes"] != r["storage_bytes"]:
                        note.append("view: tensor %d B of a %d B storage" % (r["tensor_bytes"],
                                                                            r["storage_bytes"]))
                if r.get("cuda_note") and not r["owner"]:
                    note.append("CUDA-equiv: %s B (%s)" % (r["cuda_bytes"] or 0, r["cuda_note"]))
                if r["kind"] == "kept":
                    note.append("kept alive by checkpoint")
                if r["region"] == "head":
                    note.append("head")
                nb = r["storage_bytes"] if r["counted"] else 0
                w("  %-44s %-18s %-9s %10d %10s  %s\n" % (
                    (r["tag"] or "(top)")[:44], _fmt_shape(r["shape"]), r["dtype"], nb,
                    ("%.2f" % (nb / (B * T))) if nb else "-", "; ".join(note)))
            w("  %-44s %-18s %-9s %10d\n" % ("TOTAL", "", "", tot))
    w("\nactivations_bytes (body) %d   [CUDA-equivalent %d]\n" % (res["activations_bytes"],
                                                              res["activations_bytes_cuda"]))
    w("logits_and_loss_saved_bytes (head) %d\n" % res["logits_and_loss_saved_bytes"])
    if "one_block_saved_bytes" in res:
        w("one_block_saved_bytes %d (largest block, no checkpointing)\n" % res["one_block_saved_bytes"])
    if "memory_timeline" in res:
        w("memory timeline: %s\n" % json.dumps(res["memory_timeline"]))
    w("logits: %s\n" % json.dumps(res["logits"]))
    try:
        import formulas
        w("\n-- paper formulas (formulas.py), CUDA-equivalent; steady-state block (layer >= 1 under LoRA)\n")
        w(formulas.render(cfg, "cuda") + "\n")
        e = formulas.expected(cfg, "cuda")
        w("formula totals: block %d, body %d, head %d\n" % (e["block"], e["body"], e["head"]))
    except Exception as exc:  # the formulas cover the harness's own models only
        w("(formulas not available for this configuration: %s)\n" % exc)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--explain", action="store_true", help="print the per-op breakdown to stderr")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiler memory timeline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="keep per-layer breakdown for every layer in JSON")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: also run a real training step on the GPU and record torch.cuda.max_memory_allocated()")
    a = ap.parse_args(argv)
    try:
        with open(a.config) as f:
            cfg = json.load(f)
        res, trackers = measure(cfg, seed=a.seed, profile=not a.no_profile, keep_trackers=True)
        if a.device == "cuda":
            import cuda_step
            res["cuda_step"] = cuda_step.measure_cuda_step(normalize_config(cfg), seed=a.seed)
    except (OSError, ValueError, RuntimeError) as e:
        print("measure.py: error: %s" % e, file=sys.stderr)
        return 2
    if a.explain:
        explain(res, trackers)
    print(json.dumps(res, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
