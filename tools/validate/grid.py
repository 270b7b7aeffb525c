#!/usr/bin/python3
"""Grid of small memfit configurations: measure them, and compare memfit.

    /usr/bin/python3 tools/validate/grid.py                 # measure -> out/grid.json
    /usr/bin/python3 tools/validate/grid.py --memfit BIN [--json-report FILE.json] [--report FILE.md]
    /usr/bin/python3 tools/validate/grid.py --only NAME[,NAME] --list

Measuring writes every configuration to out/configs/NAME.json and all
results to out/grid.json.  With --memfit, each configuration is also run
through `BIN --config out/configs/NAME.json --json` and compared with the
measurement, into a JSON report (--json-report; its Markdown rendering with
--report); the exit status is 1 if parameters, gradients, optimizer states
or master weights are not exact to the byte, or activations are off by more
than --tolerance (default 3 %), and 2 for usage errors (missing binary...).
"""

import argparse
import copy
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))

import memfit_cli  # noqa: E402
from memfit_cli import MemfitError  # noqa: E402

OUT = os.path.join(HERE, "out")


def gpt2_model(vocab=1000, d=64, layers=2, heads=4, ff=None, tied=True, maxpos=128, fused=False):
    m = {"model_type": "gpt2", "vocab_size": vocab, "hidden_size": d, "num_hidden_layers": layers, "num_attention_heads": heads,
         "num_key_value_heads": heads, "head_dim": d // heads, "intermediate_size": ff or 4 * d,
         "mlp": "plain", "hidden_act": "gelu", "norm": "layernorm", "position_embedding": "learned",
         "max_position_embeddings": maxpos, "tie_word_embeddings": tied, "attention_bias": True,
         "mlp_bias": True, "num_experts": 0, "num_experts_per_tok": 0, "moe_intermediate_size": None,
         "residual_dropout": True}
    if fused:
        m["fused_qkv"] = True
    return m


def llama_model(vocab=2000, d=128, layers=2, heads=4, kv=2, ff=None, head_dim=None, experts=0, topk=0,
                moe_ff=None):
    return {"model_type": "mixtral" if experts else "llama", "vocab_size": vocab, "hidden_size": d, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "head_dim": head_dim or d // heads, "intermediate_size": ff or (8 * d) // 3,
            "mlp": "gated", "hidden_act": "silu", "norm": "rmsnorm", "position_embedding": "rotary",
            "max_position_embeddings": 2048, "tie_word_embeddings": False, "attention_bias": False,
            "mlp_bias": False, "num_experts": experts, "num_experts_per_tok": topk,
            "moe_intermediate_size": moe_ff}


def training(b=2, t=32, prec="fp32", opt="adamw", ckpt="none", dropout=0.0, ft=None):
    return {"micro_batch_size": b, "seq_len": t, "precision": prec, "optimizer": opt, "checkpointing": ckpt,
            "attention": "eager", "dropout": dropout, "finetune": ft or {"method": "full"}}


def lora(rank, targets, dropout=None):
    f = {"method": "lora", "lora_rank": rank, "lora_targets": targets}
    if dropout is not None:
        f["lora_dropout"] = dropout
    return f


def grid():
    G = []

    def add(name, model, train):
        if train["finetune"]["method"] == "lora":
            # models.py's adapters take the model's dtype (not PEFT's fp32 adapters).
            train = dict(train, lora_adapter_dtype="weights")
        if model["model_type"] == "gpt2":
            # models.py's GPT-2 blocks run attention as transformers' GPT-2 class does: softmax in
            # the compute dtype, causality from a buffer (no mask tensor per layer). Their q, k and
            # v are separate linears unless the model asks for one c_attn (fused_qkv), where
            # transformers' class always fuses them (memfit's gpt2 class: projections fused).
            train = dict(train, softmax_dtype="compute", attention_mask="implicit",
                         projections="fused" if model.get("fused_qkv") else "separate")
        if model.get("num_experts"):
            # models.py's MoE block loops over its experts (Mixtral's transformers 4 block).
            train = dict(train, moe_dispatch="loop")
        G.append({"name": name, "config": {"model": model, "training": train}})

    # GPT-2 style
    add("gpt2_fp32_tied_adamw", gpt2_model(), training())
    add("gpt2_fp32_untied_sgdm", gpt2_model(tied=False), training(b=1, t=64, opt="sgd_momentum"))
    add("gpt2_fp32_dropout_adamw", gpt2_model(), training(dropout=0.1))
    add("gpt2_bf16_tied_adamw", gpt2_model(d=128, vocab=3000), training(prec="bf16"))
    add("gpt2_bf16_untied_dropout_sgd", gpt2_model(d=128, tied=False), training(b=4, t=16, prec="bf16",
                                                                               opt="sgd", dropout=0.1))
    add("gpt2_fp32_adafactor", gpt2_model(d=96, heads=6, layers=3), training(t=48, opt="adafactor"))
    add("gpt2_fp32_ckpt_adamw", gpt2_model(layers=3), training(ckpt="full"))
    add("gpt2_bf16_ckpt_dropout_adamw", gpt2_model(d=128), training(prec="bf16", ckpt="full", dropout=0.1))
    add("gpt2_fp32_fusedqkv_adamw", gpt2_model(fused=True), training())
    add("gpt2_fp32_wide_t128", gpt2_model(d=256, heads=8, vocab=5000, layers=2), training(b=1, t=128))
    # LLaMA style
    add("llama_fp32_gqa_adamw", llama_model(), training())
    add("llama_fp32_mha_adamw", llama_model(kv=4), training())
    add("llama_bf16_gqa_adamw", llama_model(d=192, heads=6, kv=2, vocab=4000), training(prec="bf16"))
    add("llama_bf16_mha_sgdm", llama_model(kv=4), training(b=4, t=16, prec="bf16", opt="sgd_momentum"))
    add("llama_fp32_gqa_adafactor", llama_model(d=256, heads=8, kv=2, layers=3), training(b=1, t=64,
                                                                                         opt="adafactor"))
    add("llama_bf16_adafactor", llama_model(), training(prec="bf16", opt="adafactor"))
    add("llama_fp32_ckpt_sgd", llama_model(layers=4), training(ckpt="full", opt="sgd"))
    add("llama_bf16_ckpt_adamw", llama_model(), training(prec="bf16", ckpt="full"))
    add("llama_fp32_attn_dropout", llama_model(kv=1), training(dropout=0.1))
    # Mixtral-style MoE (4 experts, top-2)
    add("moe_fp32_adamw", llama_model(d=64, ff=128, experts=4, topk=2, moe_ff=128), training())
    add("moe_bf16_sgdm", llama_model(d=64, ff=128, experts=4, topk=2, moe_ff=96), training(prec="bf16",
                                                                                          opt="sgd_momentum"))
    add("moe_fp32_ckpt_adafactor", llama_model(d=64, experts=4, topk=2, moe_ff=128), training(ckpt="full",
                                                                                             opt="adafactor"))
    # LoRA
    add("lora_gpt2_qv_r8_adamw", gpt2_model(d=128), training(ft=lora(8, ["q", "v"])))
    add("lora_gpt2_all_r4_dropout", gpt2_model(d=128, tied=False),
        training(dropout=0.1, ft=lora(4, ["q", "k", "v", "o", "up", "down"], dropout=0.05)))
    add("lora_llama_qkvo_r16_adamw", llama_model(), training(ft=lora(16, ["q", "k", "v", "o"])))
    add("lora_llama_mlp_r8_bf16", llama_model(), training(prec="bf16", ft=lora(8, ["gate", "up", "down"])))
    add("lora_llama_all_r8_ckpt", llama_model(), training(ckpt="full", ft=lora(8, ["q", "k", "v", "o", "gate",
                                                                                   "up", "down"])))
    add("lora_moe_qv_r4_sgd", llama_model(d=64, ff=128, experts=4, topk=2, moe_ff=128),
        training(opt="sgd", ft=lora(4, ["q", "v"])))
    return G


# ------------------------------------------------------------------ measuring
def run_measurements(entries, profile=True, verbose=True, device="cpu"):
    from measure import measure, normalize_config
    out = []
    for e in entries:
        t0 = time.time()
        res = measure(e["config"], profile=profile)
        res.pop("config", None)
        if device == "cuda":
            import cuda_step
            res["cuda_step"] = cuda_step.measure_cuda_step(normalize_config(copy.deepcopy(e["config"])))
        out.append({"name": e["name"], "config": e["config"], "measured": res,
                    "seconds": round(time.time() - t0, 2)})
        if verbose:
            print("%-34s %6.2fs  params %9d  act %9d  head %9d" % (
                e["name"], time.time() - t0, res["parameter_count"], res["activations_bytes"],
                res["logits_and_loss_saved_bytes"]), file=sys.stderr)
    return out


def write_configs(entries, folder):
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for e in entries:
        p = os.path.join(folder, e["name"] + ".json")
        with open(p, "w") as f:
            json.dump(e["config"], f, indent=1)
        paths[e["name"]] = p
    return paths


# ------------------------------------------------------------------ comparing
EXACT = [  # (label, measured key, memfit path)
    ("parameter_count", "parameter_count", ("parameter_count",)),
    ("trainable_parameter_count", "trainable_parameter_count", ("trainable_parameter_count",)),
    ("parameters (bytes)", "parameter_bytes", ("breakdown", "parameters")),
    ("gradients (bytes)", "gradient_bytes", ("breakdown", "gradients")),
    ("optimizer_states (bytes)", "optimizer_state_bytes", ("breakdown", "optimizer_states")),
    ("master_weights (bytes)", "master_weights_bytes", ("breakdown", "master_weights")),
]
APPROX = [
    ("activations (bytes)", "activations_bytes_cuda", ("breakdown", "activations")),
]
INFO = [
    ("activations, raw torch 1.13 CPU (bytes)", "activations_bytes", ("breakdown", "activations")),
    ("logits_and_loss (bytes)", "logits_and_loss_saved_bytes", ("breakdown", "logits_and_loss")),
    ("overhead (bytes)", None, ("breakdown", "overhead")),
]


def _get(d, path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _rel(meas, est):
    if meas == 0:
        return 0.0 if est == 0 else float("inf")
    return (est - meas) / meas


def _row(quantity, measured, memfit, status, check, ok=True, field=None):
    """One compared quantity. check: "exact" (must be equal), "tolerance" (within --tolerance) or
    "info" (shown only). relative_error is (memfit - measured) / measured, null where undefined."""
    rel = _rel(measured, memfit) if measured is not None and memfit is not None else None
    return {"quantity": quantity, "field": field, "measured": measured, "memfit": memfit,
            "relative_error": rel if rel is not None and math.isfinite(rel) else None,
            "status": status, "check": check, "ok": ok}


def compare_one(meas, est, tolerance):
    """Returns (rows, failures): the rows as in the JSON report, failures as sentences."""
    rows, fails = [], []
    for label, mkey, path in EXACT:
        mv, ev = meas.get(mkey), _get(est, path)
        field = ".".join(path)
        if ev is None:
            rows.append(_row(label, mv, None, "MISSING", "exact", False, field))
            fails.append("%s: memfit field %s is absent" % (label, field))
            continue
        ok = ev == mv
        status = "exact" if ok else "MISMATCH"
        if not ok and mkey == "optimizer_state_bytes" and ev == mv + meas.get("optimizer_step_scalar_bytes", 0):
            ok, status = True, "exact (incl. %d B of step scalars)" % meas["optimizer_step_scalar_bytes"]
        rows.append(_row(label, mv, ev, status, "exact", ok, field))
        if not ok:
            fails.append("%s: measured %s, memfit %s" % (label, mv, ev))
    for label, mkey, path in APPROX:
        mv, ev = meas.get(mkey), _get(est, path)
        field = ".".join(path)
        if ev is None:
            rows.append(_row(label, mv, None, "MISSING", "tolerance", False, field))
            fails.append("%s: memfit field %s is absent" % (label, field))
            continue
        r = _rel(mv, ev)
        ok = abs(r) <= tolerance
        rows.append(_row(label, mv, ev, "ok" if ok else "OFF > %g%%" % (tolerance * 100), "tolerance", ok, field))
        if not ok:
            fails.append("%s: measured %s, memfit %s (%+.2f%%)" % (label, mv, ev, 100 * r))
    tl = meas.get("memory_timeline")
    if tl and est.get("phases"):
        # The CPU allocator's timeline of the (first) step against memfit's phases, both relative
        # to just before forward: memfit's phases less weights, master weights and optimizer
        # states; the measurement less what only torch 1.13 on a CPU saves.
        b = est["breakdown"]
        statics = b["parameters"] + b["master_weights"] + b["optimizer_states"]
        cpu_only = meas["activations_bytes"] - meas["activations_bytes_cuda"]
        phases = {p["name"]: p["bytes"] - statics for p in est["phases"]}
        for label, mkey, phase in (("forward peak (CPU allocator timeline)", "forward_peak_bytes", "forward"),
                                   ("backward peak (CPU allocator timeline)", "backward_peak_bytes", "backward")):
            if phase in phases and mkey in tl:
                rows.append(_row(label, tl[mkey] - cpu_only, phases[phase], "info", "info", field="phases." + phase))
    if "cuda_step" in meas:  # a real step on a GPU (grid.py --device cuda): information
        rows.append(_row("torch.cuda.max_memory_allocated vs peak_allocated_bytes",
                         meas["cuda_step"]["max_memory_allocated_bytes"], _get(est, ["peak_allocated_bytes"]),
                         "info (GPU step)", "info", field="peak_allocated_bytes"))
    for label, mkey, path in INFO:
        ev = _get(est, path)
        rows.append(_row(label, meas.get(mkey) if mkey else None, ev, "info" if ev is not None else "absent (info)",
                         "info", field=".".join(path)))
    return rows, fails


def compare(results, binary, tolerance, cfg_paths):
    """Runs memfit on every configuration: the comparison as a JSON-ready dict (see render_markdown)."""
    memfit_cli.check_binary(binary)
    configurations = []
    for r in results:
        name = r["name"]
        entry = {"name": name, "memfit_error": None, "rows": [], "failures": []}
        try:
            est = memfit_cli.estimate(binary, cfg_paths[name])
        except MemfitError as e:
            entry["memfit_error"] = str(e)
            entry["failures"] = [str(e)]
        else:
            entry["rows"], entry["failures"] = compare_one(r["measured"], est, tolerance)
        entry["pass"] = not entry["failures"]
        configurations.append(entry)
    return {
        "torch_version": results[0]["measured"].get("torch_version", "?"),
        "tolerance": tolerance,
        "configuration_count": len(configurations),
        "passing_count": sum(1 for c in configurations if c["pass"]),
        "configurations": configurations,
    }


def _fmt(v):
    return "-" if v is None else str(v)


def _fmtr(r):
    if r is None:
        return "-"
    if r == float("inf"):
        return "inf"
    return "%+.3f%%" % (100 * r)


def render_markdown(report):
    """The comparison as Markdown, from the JSON report alone."""
    lines = ["# memfit vs measured (PyTorch %s, CPU)" % report["torch_version"], "",
             "Exact: parameters, gradients, optimizer states, master weights. Activations: within %g %% "
             "(measured = CUDA-equivalent saved bytes of the body). logits_and_loss and overhead: "
             "information only." % (report["tolerance"] * 100), ""]
    for c in report["configurations"]:
        lines += ["## %s" % c["name"], ""]
        if c["memfit_error"] is not None:
            lines += ["memfit failed: %s" % c["memfit_error"], ""]
            continue
        lines.append("| quantity | measured | memfit | rel. error | status |")
        lines.append("|---|---:|---:|---:|---|")
        for row in c["rows"]:
            mv, ev = row["measured"], row["memfit"]
            rel = _rel(mv, ev) if mv is not None and ev is not None else None
            lines.append("| %s | %s | %s | %s | %s |" % (row["quantity"], _fmt(mv), _fmt(ev), _fmtr(rel), row["status"]))
        lines.append("")
    lines += ["## Summary", ""]
    failing = [c for c in report["configurations"] if not c["pass"]]
    if failing:
        lines.append("%d of %d configurations FAIL:" % (len(failing), report["configuration_count"]))
        for c in failing:
            for f in c["failures"]:
                lines.append("- %s: %s" % (c["name"], f))
    else:
        lines.append("all %d configurations pass" % report["configuration_count"])
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memfit", help="path to the memfit binary: compare its estimates")
    ap.add_argument("--json-report", help="the comparison as JSON (with --memfit)")
    ap.add_argument("--report", help="the comparison as Markdown, rendered from the JSON (with --memfit); "
                                     "default: stdout when --json-report is not given")
    ap.add_argument("--tolerance", type=float, default=0.03, help="relative tolerance on activations")
    ap.add_argument("--only", help="comma-separated configuration names")
    ap.add_argument("--list", action="store_true", help="list configuration names and exit")
    ap.add_argument("--reuse", action="store_true",
                    help="with --memfit: compare against an existing out/grid.json instead of re-measuring")
    ap.add_argument("--out", default=OUT, help="output folder (default tools/validate/out)")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiler memory timelines")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: also run each configuration for a real step on the GPU (max_memory_allocated)")
    a = ap.parse_args(argv)

    entries = grid()
    if a.list:
        for e in entries:
            print(e["name"])
        return 0
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {e["name"] for e in entries}
        if unknown:
            print("grid.py: unknown configuration(s): %s" % ", ".join(sorted(unknown)), file=sys.stderr)
            return 2
        entries = [e for e in entries if e["name"] in want]
    if a.memfit and not (os.path.isfile(a.memfit) and os.access(a.memfit, os.X_OK)):
        print("grid.py: memfit binary not found or not executable: %s" % a.memfit, file=sys.stderr)
        return 2

    cfg_paths = write_configs(entries, os.path.join(a.out, "configs"))
    gpath = os.path.join(a.out, "grid.json")
    if a.reuse:
        try:
            with open(gpath) as f:
                old = {r["name"]: r for r in json.load(f)["results"]}
        except (OSError, ValueError, KeyError) as e:
            print("grid.py: cannot reuse %s: %s" % (gpath, e), file=sys.stderr)
            return 2
        results = []
        for e in entries:
            if e["name"] not in old or old[e["name"]]["config"] != e["config"]:
                print("grid.py: %s missing or stale in %s; measure again without --reuse" % (e["name"], gpath),
                      file=sys.stderr)
                return 2
            results.append(old[e["name"]])
    else:
        t0 = time.time()
        try:
            results = run_measurements(entries, profile=not a.no_profile, device=a.device)
        except RuntimeError as e:
            print("grid.py: %s" % e, file=sys.stderr)
            return 2
        import torch
        doc = {"torch_version": torch.__version__, "device": a.device, "seconds": round(time.time() - t0, 1),
               "results": results}
        os.makedirs(a.out, exist_ok=True)
        if not a.only:
            with open(gpath, "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
            print("wrote %s (%d configurations, %.1fs)" % (gpath, len(results), time.time() - t0),
                  file=sys.stderr)
        else:
            p = os.path.join(a.out, "grid_subset.json")
            with open(p, "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
            print("wrote %s" % p, file=sys.stderr)

    if not a.memfit:
        return 0
    try:
        report = compare(results, a.memfit, a.tolerance, cfg_paths)
    except MemfitError as e:
        print("grid.py: %s" % e, file=sys.stderr)
        return 2
    if a.json_report:
        with open(a.json_report, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        print("wrote %s" % a.json_report, file=sys.stderr)
    if a.report:
        with open(a.report, "w") as f:
            f.write(render_markdown(report))
        print("wrote %s" % a.report, file=sys.stderr)
    elif not a.json_report:
        sys.stdout.write(render_markdown(report))
    return 0 if report["passing_count"] == report["configuration_count"] else 1


if __name__ == "__main__":
    sys.exit(main())
