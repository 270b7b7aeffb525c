#!/usr/bin/python3
"""Score memfit against published GPU-memory measurements.

    /usr/bin/python3 tools/accuracy/accuracy.py                 # regenerate everything
    /usr/bin/python3 tools/accuracy/accuracy.py --memfit PATH   # another memfit binary
    /usr/bin/python3 tools/accuracy/accuracy.py --no-grid       # skip the PyTorch grid section

Reads tools/accuracy/cases.json (one memfit configuration per published measurement) and
docs/data/published_measurements.json (the measurements), runs every case through
`memfit --config FILE --json`, compares the memfit quantity that matches what the source measured
(max_memory_allocated -> peak_allocated_bytes, max_memory_reserved -> peak_reserved_bytes,
nvidia-smi -> device_total_bytes) and writes

    docs/accuracy.md                    the report (also embeds tools/validate/grid.py's report, whose
                                        numbers it reads from grid.py's JSON)
    docs/data/accuracy_summary.json     the statistics, for the page's uncertainty band

Relative error = (memfit - measured) / measured. Standard library only; Debian's /usr/bin/python3.
Exit status: 0 on success, 1 if memfit failed on a case, 2 on usage errors.
"""

import argparse
import hashlib
import json
import statistics
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "common"))

import memfit_cli  # noqa: E402

DEFAULT_MEMFIT = os.path.join("build", "cli", "memfit")
CASES = os.path.join("tools", "accuracy", "cases.json")
MEASUREMENTS = os.path.join("docs", "data", "published_measurements.json")
OUT_MD = os.path.join("docs", "accuracy.md")
OUT_JSON = os.path.join("docs", "data", "accuracy_summary.json")
# Every scored case's measured value and memfit's estimate of it (bytes), for the page's scatter.
OUT_POINTS = os.path.join("docs", "data", "accuracy_points.json")
EXCLUDING = ("torch_compile", "float8", "padded_seq_cap", "screenshot_value")
GRID = os.path.join("tools", "validate", "grid.py")
GRID_JSON = os.path.join("tools", "validate", "out", "grid.json")

QUANTITIES = ("peak_allocated_bytes", "peak_reserved_bytes", "device_total_bytes")
QUANTITY_LABEL = {
    "peak_allocated_bytes": "max_memory_allocated",
    "peak_reserved_bytes": "max_memory_reserved",
    "device_total_bytes": "nvidia-smi (device total)",
}
UNITS = {"GB": 10**9, "GiB": 2**30, "MB": 10**6, "MiB": 2**20, "TB": 10**12, "TiB": 2**40, "bytes": 1}
# How a unit as written in a source may be read (the notes in published_measurements.md): 'G' (Qwen-1,
# ChatGLM) may be either; bytes are bytes.
UNIT_READINGS = {"MB": ("MB", "MiB"), "GB": ("GB", "GiB"), "G": ("GB", "GiB"), "TB": ("TB", "TiB"),
                 "GiB": ("GiB",), "MiB": ("MiB",), "bytes": ("bytes",)}
# An out-of-memory record is scored by memfit's verdict on the stated card, not by a number.
OOM_QUANTITY = "fits.verdict"
OOM_VERDICT = "does_not_fit"
# Kinds of run (cases.json `kind`), by fine-tuning method: the population 'method' of the report and the band.
KIND_LABEL = {"full": "full", "lora": "LoRA", "qlora": "QLoRA", "peft": "other PEFT"}
KIND_METHODS = {"full": {"full"}, "lora": {"lora"}, "qlora": {"lora"}}  # 'peft': any other PEFT method
# The implementation profiles (training.framework), in the order the core's band table uses.
PROFILES = ("hf", "torchtune", "torchtitan", "litgpt", "megatron", "megatron_te", "deepspeed", "nanogpt", "llm_c",
            "unsloth", "liger", "trl")
BAND_MIN_CASES = 10      # a population with fewer scored cases takes the whole set's band
SOURCE_MIN_CASES = 5     # sources reported on their own
WITHIN = 0.15            # the 'share within' threshold of the headline statistics
THRESHOLD = 0.25
GIB = 2**30

# "Cases memfit can express": a case is left out of that population when it carries one of these flags
# (or any flag named unmodelled_*), because the run used something memfit has no setting for, or the
# measured value does not belong to one definite configuration. The reason for each is printed at the
# top of the report.
EXPRESSIBLE_EXCLUDED_FLAGS = {
    "torch_compile": "torch.compile changes what is saved for backward; memfit has no compile setting",
    "float8": "torchao Float8 linears; memfit has no Float8-training setting",
    "padded_seq_cap": "padded data whose real length is unknown (only the cap is documented)",
    "screenshot_value": "value read off a GPU-memory plot, not printed",
    "seq_from_average": "the source gives the average length of dynamically padded data; the peak step is longer",
    "longest_sample_estimated": "dynamic padding without a cap; the longest sample's length is only estimated",
}
# Flags that mean a setting the source states was dropped (memfit has no setting for it): the expressible
# share counts the cases without any of them (and without unmodelled_*).
SETTING_DROPPED_FLAGS = {"torch_compile", "float8"}
UNMODELLED_PREFIX = "unmodelled_"
# Flags that do not exclude a case by themselves, and why.
EXPRESSIBLE_KEPT_FLAGS = {
    "longest_sample_len": "padded data, but the length at the peak is known: lit-gpt's finetune scripts of the time put "
                          "the longest sample into the first batch (Lightning-AI/litgpt#184, removed in 2024, "
                          "Lightning-AI/litgpt#1195), so the peak runs at the documented longest-sample length",
    "seq_from_default": "the length is the framework's documented config default: a definite configuration",
    "low_confidence": "a doubt about the record, not a setting memfit lacks",
}


def excluding_flags(case):
    """The flags that keep a case out of the 'memfit can express' population (empty: expressible)."""
    return [f for f in case.get("flags", []) if f in EXPRESSIBLE_EXCLUDED_FLAGS or f.startswith(UNMODELLED_PREFIX)]


def is_expressible(case):
    return not excluding_flags(case)


def dropped_settings(case):
    """Flags naming a stated setting memfit cannot express (empty: every stated setting is in the configuration)."""
    return [f for f in case.get("flags", []) if f in SETTING_DROPPED_FLAGS or f.startswith(UNMODELLED_PREFIX)]


def is_oom_case(case):
    return case.get("quantity") == OOM_QUANTITY


def profile_of(case):
    return case["config"].get("training", {}).get("framework", "hf")


def gpu_class(case):
    return "multi-GPU" if case["config"].get("parallel", {}).get("num_gpus", 1) > 1 else "1 GPU"


# ----------------------------------------------------------------------------- statistics

def rel_error(estimate, measured):
    """(estimate - measured) / measured."""
    if measured <= 0:
        raise ValueError("measured value must be positive")
    return (estimate - measured) / measured


def percentile(values, p):
    """Linear-interpolation percentile (numpy's default): rank p/100 * (n - 1) in the sorted list."""
    if not values:
        raise ValueError("percentile of an empty list")
    s = sorted(values)
    if not 0 <= p <= 100:
        raise ValueError("p must be within [0, 100]")
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median(values):
    return percentile(values, 50)


def stats(errors, ids=None):
    """Summary of signed relative errors: absolute-error statistics plus the signed bias."""
    if not errors:
        return {"count": 0}
    abs_err = [abs(e) for e in errors]
    worst = max(range(len(errors)), key=lambda i: abs_err[i])
    out = {
        "count": len(errors),
        "median_abs_error": median(abs_err),
        "mean_abs_error": sum(abs_err) / len(abs_err),
        "p90_abs_error": percentile(abs_err, 90),
        "worst_abs_error": abs_err[worst],
        "median_signed_error": median(errors),
        "p10_signed_error": percentile(errors, 10),
        "p90_signed_error": percentile(errors, 90),
        "share_over": sum(1 for e in errors if e > 0) / len(errors),
        "share_within_10pct": sum(1 for e in abs_err if e <= 0.10) / len(errors),
        "share_within_15pct": sum(1 for e in abs_err if e <= WITHIN) / len(errors),
        "share_within_25pct": sum(1 for e in abs_err if e <= 0.25) / len(errors),
    }
    if ids is not None:
        out["worst_id"] = ids[worst]
    return out


# ----------------------------------------------------------------------------- inputs

def load_json(path):
    with open(path) as f:
        return json.load(f)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def measured_bytes(case, record):
    """The measured value in bytes per GPU, with the unit the case resolved the source's spelling to.

    A total over all GPUs (per_gpu false) is divided by the case's `measured_divisor`, which must be the
    case's GPU count (the case says why the load is even); a per-GPU value must not be divided."""
    unit = case["measured_unit"]
    written = record["measured"]["unit"]
    if unit not in UNIT_READINGS.get(written, ()):
        raise ValueError(f"{case['id']}: unit {unit!r} is not a reading of the source's {written!r}")
    value = float(record["measured"]["value"]) * UNITS[unit]
    divisor = case.get("measured_divisor")
    total = record["measured"].get("per_gpu") is False
    if divisor is not None:
        if not total:
            raise ValueError(f"{case['id']}: measured_divisor on a per-GPU measurement")
        gpus = case["config"].get("parallel", {}).get("num_gpus", 1)
        if divisor != gpus:
            raise ValueError(f"{case['id']}: measured_divisor {divisor} is not the GPU count {gpus}")
        value /= divisor
    elif total:
        raise ValueError(f"{case['id']}: a total over GPUs needs measured_divisor (or a skip)")
    return value


def set_path(config, dotted, value):
    node = config
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


# ----------------------------------------------------------------------------- what this build knows

# The cases are written with the configuration fields of the implementation profiles, PEFT methods and
# optimizers that the core gains (issue 8): `training.framework` beyond hf, `training.attention` sdpa,
# `training.loss`, `precision` bf16_autocast, PEFT methods beyond LoRA, GPU aliases, ... A build that does not
# know one of them rejects the configuration (an unknown value) or ignores the field (an unknown key, a
# warning). So that the report can still be written with such a build, a rejected case is run once more with
# the closest setting this build knows (the table below, nothing else) and its row is marked **provisional**;
# so is a row whose configuration has a field the build ignored. Provisional rows are counted and listed apart
# in the report; with a core that knows every field there are none.
PROVISIONAL_VALUES = {
    # (field, value the case uses): value this build gets instead (None: drop the field, the build's default)
    ("training.attention", "sdpa"): "flash",       # SDPA's flash / memory-efficient kernels store no T x T scores
    ("training.precision", "bf16_autocast"): "bf16",  # bf16 weights, grads and states; autocast makes no copies
    ("training.finetune.method", "dora"): "lora",
    ("training.finetune.method", "lora_fa"): "lora",
    ("training.finetune.method", "adalora"): "lora",
    ("training.finetune.method", "rslora"): "lora",
    ("training.optimizer", "adamw_4bit"): "adamw_8bit",
    ("training.optimizer", "galore_adamw_8bit"): None,
}
# Values the core gains with issue 8 (a build without them cannot run such a case and the case waits for the
# core); a value outside these and outside the build's own choices is a mistake in the case (the tests check).
PENDING_VALUES = {
    "training.framework": {"hf", "torchtune", "torchtitan", "litgpt", "megatron", "megatron_te", "deepspeed", "nanogpt",
                           "llm_c", "unsloth", "liger", "trl"},
    "training.attention": {"auto", "flash", "eager", "sdpa"},
    "training.precision": {"bf16_autocast"},
    "training.optimizer": {"galore_adamw", "galore_adamw_8bit", "adam_mini", "muon", "lomo", "adalomo", "came", "sophia",
                           "schedule_free_adamw", "shampoo", "soap", "lion_8bit", "sgd_momentum_8bit", "adamw_4bit"},
    "training.finetune.method": {"lora", "dora", "lora_fa", "adalora", "vera", "ia3", "prompt_tuning", "prefix_tuning",
                                 "p_tuning", "llama_adapter", "llama_adapter_v2", "oft", "boft", "ln_tuning",
                                 "trainable_tokens", "loha", "lokr"},
    "training.finetune.lora_targets": {"qkv"},
    "hardware.gpu": {"a100-sxm4-40gb", "a100-sxm4-80gb", "a800-80gb", "h800", "h100-96gb", "titan-rtx-24gb", "mi300x", "mi300x-192gb"},
}
# A field value this build lacks for which no closest setting exists (a method or optimizer with other
# state): the case waits for the core.
PROVISIONAL_DROP_FIELDS = {"training.framework"}  # an unknown profile runs as the build's default (hf)
PROVISIONAL_TARGETS = {"qkv": ["q", "k", "v"]}     # a fused q/k/v adapter as three adapters
# Cards this build lacks, run on the nearest card this build has (same memory where one exists: the A100/A800
# aliases, H800, Titan RTX; nearest otherwise: H100 96 GB -> H100 80 GB, MI300X 192 GB -> B200 180 GB). The fit
# verdict and the context allowance are then the listed card's, which is why such rows are provisional.
GPU_ALIASES = {"a100-sxm4-40gb": "a100-40gb", "a100-sxm4-80gb": "a100-80gb"}  # the same card: not provisional
PROVISIONAL_GPUS = {
    "a100-sxm4-40gb": "a100-40gb", "a100-sxm4-80gb": "a100-80gb", "a800-80gb": "a100-80gb",
    "h800": "h100-sxm-80gb", "h100-96gb": "h100-sxm-80gb", "titan-rtx-24gb": "rtx-3090-24gb",
    "l40s": "l40s-48gb", "rtx-a6000": "rtx-a6000-48gb", "mi300x": "b200-180gb", "a100-40gb-pcie": "a100-40gb",
}
# How a `training.loss` translates into the older `training.chunked_loss` switch.
LOSS_TO_CHUNKED = {"chunked": True, "fused_linear_ce": True, "fused_ce": False, "compiled_ce": False, "loss_parallel": False,
                   "eager": False, "auto": None}
LOSS_EXACT = {"chunked", "eager", "auto"}
# Fields a build may not know whose value here is what such a build assumes anyway (so ignoring them changes nothing).
HARMLESS_IGNORED = {("training.finetune.quant_type", "nf4"), ("training.finetune.double_quant", True),
                    ("training.loop_keeps_logits", "auto"), ("training.lora_base_dtype", "auto"),
                    ("training.softmax_dtype", "auto"), ("training.logits_dtype", "auto"), ("training.attention", "auto")}


class Build:
    """The fields, choices and cards one memfit binary knows (from --schema and --list-gpus)."""

    def __init__(self, fields, gpus):
        self.fields = fields  # dotted name -> list of choices (None when not a choice)
        self.gpus = set(gpus)

    @classmethod
    def of(cls, binary):
        schema = json.loads(subprocess.run([binary, "--schema"], capture_output=True, text=True, check=True).stdout)
        fields = {f["field"]: f.get("choices") for f in schema}
        listing = subprocess.run([binary, "--list-gpus"], capture_output=True, text=True, check=True).stdout
        gpus = [line.split()[0] for line in listing.splitlines() if line.strip()]
        return cls(fields, gpus)


def leaves(config, prefix=""):
    for k, v in config.items():
        if isinstance(v, dict):
            yield from leaves(v, prefix + k + ".")
        else:
            yield prefix + k, v


def del_path(config, dotted):
    node = config
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.get(p, {})
    node.pop(parts[-1], None)


def provisional_config(config, build):
    """(configuration this build can run, [what was changed]) or (None, [why it cannot run])."""
    cfg = json.loads(json.dumps(config))
    changes, blockers = [], []
    for path, value in list(leaves(config)):
        if path == "training.loss" and path not in build.fields:
            chunked = LOSS_TO_CHUNKED.get(value)
            del_path(cfg, path)
            if chunked is not None and "training.chunked_loss" in build.fields:
                set_path(cfg, "training.chunked_loss", chunked)
                if value not in LOSS_EXACT:  # the older switch says the same thing for eager and chunked
                    changes.append(f"training.loss {value} -> chunked_loss {str(chunked).lower()}")
            continue
        if path not in build.fields:
            continue  # an unknown key: the build warns and ignores it (see ignored_fields)
        choices = build.fields[path]
        if path == "hardware.gpu":
            if value not in build.gpus:
                alt = PROVISIONAL_GPUS.get(value)
                if alt in build.gpus:
                    set_path(cfg, path, alt)
                    if GPU_ALIASES.get(value) != alt:
                        changes.append(f"hardware.gpu {value} -> {alt}")
                else:
                    blockers.append(f"hardware.gpu {value!r} is not a card this build knows")
            continue
        if choices is None:
            continue
        if isinstance(value, list):
            if all(v in choices for v in value):
                continue
            mapped = []
            for v in value:
                mapped.extend(PROVISIONAL_TARGETS.get(v, [v]) if v not in choices else [v])
            if all(v in choices for v in mapped):
                set_path(cfg, path, list(dict.fromkeys(mapped)))
                changes.append(f"{path} {value} -> {list(dict.fromkeys(mapped))}")
            else:
                blockers.append(f"{path} {value} has values this build does not know")
            continue
        if value in choices:
            continue
        if path in PROVISIONAL_DROP_FIELDS:
            del_path(cfg, path)
            changes.append(f"{path} {value} -> (build default)")
        elif (path, value) in PROVISIONAL_VALUES and PROVISIONAL_VALUES[(path, value)] in choices:
            set_path(cfg, path, PROVISIONAL_VALUES[(path, value)])
            changes.append(f"{path} {value} -> {PROVISIONAL_VALUES[(path, value)]}")
        else:
            blockers.append(f"{path} {value!r} is not a value this build knows")
    if blockers:
        return None, blockers
    return cfg, changes


def blocker_is_pending(config, blocker):
    """True when a blocker of provisional_config names a field value listed in PENDING_VALUES."""
    values = dict(leaves(config))
    path = blocker.split(" ")[0]
    v = values.get(path)
    pending = PENDING_VALUES.get(path, set())
    if isinstance(v, list):
        return all(x in pending or x in ("q", "k", "v", "o", "gate", "up", "down", "head") for x in v)
    return v in pending


def ignored_fields(result, config):
    """Fields the build warned it ignored (not memfit fields for it), except those whose value changes nothing."""
    values = dict(leaves(config))
    out = []
    for w in (result or {}).get("warnings", []):
        if not (isinstance(w, dict) and "not a memfit field" in w.get("message", "")):
            continue
        f = w["field"]
        if f.endswith(".note") or (f, values.get(f)) in HARMLESS_IGNORED:
            continue
        out.append(f)
    return sorted(out)


# ----------------------------------------------------------------------------- evaluation

def run_case(binary, config, build):
    """(result, provisional changes, error). With a Build, the case runs in the form this build knows
    (provisional_config); the changes that alter what is modelled, and the fields the build ignored, make
    the row provisional. Without one (tests), the case runs as written."""
    if build is None:
        rc, result, err, _ = memfit_cli.run(binary, config)
        if rc == 0 and result and result.get("ok"):
            return result, [f"{f} ignored by this build" for f in ignored_fields(result, config)], None
        return None, [], err or (result or {}).get("errors")
    cfg, changes = provisional_config(config, build)
    if cfg is None:
        return None, [], "awaiting core support: " + "; ".join(changes)
    rc, result, err, _ = memfit_cli.run(binary, cfg)
    if rc != 0 or not result or not result.get("ok"):
        return None, [], err or (result or {}).get("errors")
    return result, changes + [f"{f} ignored by this build" for f in ignored_fields(result, cfg)], None


def evaluate(cases_doc, records, binary, build=None):
    """(scored rows, out-of-memory rows, failures). A failure is (id, reason)."""
    by_id = {r["id"]: r for r in records}
    rows, ooms, failures = [], [], []
    for case in cases_doc["cases"]:
        record = by_id[case["id"]]
        result, provisional, error = run_case(binary, case["config"], build)
        if result is None:
            failures.append((case["id"], error))
            continue
        if is_oom_case(case):
            verdict = result["fits"]["verdict"]
            ooms.append({"case": case, "record": record, "result": result, "verdict": verdict,
                         "ok": verdict == OOM_VERDICT, "provisional": provisional,
                         "need": float(result["fits"]["need_bytes"]), "memory": float(result["fits"]["memory_bytes"])})
            continue
        measured = measured_bytes(case, record)
        estimate = shown(result, case["quantity"])
        row = {
            "case": case,
            "record": record,
            "measured": measured,
            "estimate": estimate,
            "error": rel_error(estimate, measured),
            "result": result,
            "multi_gpu": case["config"].get("parallel", {}).get("num_gpus", 1) > 1,
            "provisional": provisional,
        }
        row["what_if"] = []
        for alt in case.get("what_if", []):
            cfg = json.loads(json.dumps(case["config"]))
            for k, v in alt["set"].items():
                set_path(cfg, k, v)
            res2, _, _ = run_case(binary, cfg, build)
            if res2 is not None:
                est2 = shown(res2, case["quantity"])
                row["what_if"].append({"label": alt["label"], "estimate": est2, "error": rel_error(est2, measured)})
        rows.append(row)
    return rows, ooms, failures


def shown(result, quantity):
    """memfit's value for what the source read. Under FSDP1 with limit_all_gathers false the reserve and
    nvidia-smi show the all-gathers running ahead (result.allocator.fsdp_runahead, up to the card), not
    the step's need, which the fit uses; max_memory_allocated is the same either way."""
    ahead = result.get("allocator", {}).get("fsdp_runahead")
    if ahead and quantity in ahead:
        return float(ahead[quantity])
    return float(result[quantity])


def group_stats(rows, key):
    groups = {}
    for r in rows:
        for g in key(r):
            groups.setdefault(g, []).append(r)
    return {g: stats([r["error"] for r in rs], [r["case"]["id"] for r in rs]) for g, rs in groups.items()}


def kinds(r):
    out = {"full": ["full fine-tune / pre-training"], "lora": ["LoRA"], "qlora": ["QLoRA"],
           "peft": ["other PEFT"]}[r["case"]["kind"]]
    out = list(out)
    out.append("multi-GPU" if r["multi_gpu"] else "single GPU")
    return out


def length_class(r):
    flags = r["case"].get("flags", [])
    if "padded_seq_cap" in flags:
        return ["length = documented cap (padded data)"]
    if "longest_sample_len" in flags:
        return ["length = longest sample (padded data)"]
    if "seq_from_default" in flags:
        return ["length = framework default (packed)"]
    return ["length exact (stated / packed / fixed)"]


def compile_class(r):
    compiled = r["case"]["config"].get("training", {}).get("compile") == "yes"
    return ["torch.compile" if compiled or "torch_compile" in r["case"].get("flags", []) else "no torch.compile"]


def unmodelled_class(r):
    u = [f for f in r["case"].get("flags", []) if f.startswith(UNMODELLED_PREFIX)]
    return ["unmodelled setting (" + ", ".join(u) + ")"] if u else ["no unmodelled setting"]


def expressible_rows(rows):
    return [r for r in rows if is_expressible(r["case"])]


def method_class(r):
    return [KIND_LABEL[r["case"]["kind"]]]


def profile_class(r):
    return [profile_of(r["case"])]


def gpus_class(r):
    return [gpu_class(r["case"])]


def population(case):
    """(profile, method kind, 'single'|'multi'): the population a case's band comes from."""
    return (profile_of(case), case["kind"], "multi" if gpu_class(case) == "multi-GPU" else "single")


def headline(rows):
    """The five numbers every breakdown shows: count, median |error|, p90 |error|, share within 15 %, median signed."""
    s = stats([r["error"] for r in rows], [r["case"]["id"] for r in rows])
    if not s["count"]:
        return s
    return {k: s[k] for k in ("count", "median_abs_error", "p90_abs_error", "share_within_15pct", "median_signed_error",
                              "worst_abs_error", "worst_id")}


def grouped_headlines(rows, key, min_count=1):
    groups = {}
    for r in rows:
        for g in key(r):
            groups.setdefault(g, []).append(r)
    return {g: headline(rs) for g, rs in sorted(groups.items()) if len(rs) >= min_count}


def source_counts(rows, ooms=()):
    """Scored and out-of-memory cases per source, most first."""
    counts = {}
    for r in list(rows) + list(ooms):
        k = source_key(r["record"])
        counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def expressible_share(cases_doc, records, failures=()):
    """Cases (scored or out-of-memory) with no stated setting dropped, divided by all records.

    A case counts when none of its flags names a setting the source states that memfit cannot express
    (SETTING_DROPPED_FLAGS, unmodelled_*); records that are skipped count in the denominator only."""
    n_records = len(records)
    ok = [c["id"] for c in cases_doc["cases"] if not dropped_settings(c)]
    return {"records": n_records, "cases": len(cases_doc["cases"]), "without_dropped_setting": len(ok),
            "skipped": sum(len(s["ids"]) for s in cases_doc.get("skipped", [])),
            "share": len(ok) / n_records if n_records else 0.0}


def oom_summary(ooms):
    shown = [o for o in ooms if o["ok"]]
    return {"count": len(ooms), "does_not_fit": len(shown),
            "shown_fitting": sorted(o["case"]["id"] for o in ooms if o["verdict"] == "fits"),
            "shown_tight": sorted(o["case"]["id"] for o in ooms if o["verdict"] == "tight"),
            "provisional": sorted(o["case"]["id"] for o in ooms if o["provisional"])}


def ran_summary(rows):
    """The other direction of the out-of-memory check: runs that ran, shown as not fitting their card."""
    return {"count": len(rows),
            "does_not_fit": sorted(r["case"]["id"] for r in rows
                                   if r.get("result", {}).get("fits", {}).get("verdict") == OOM_VERDICT)}


def band_of(rows):
    """(low, high) = measured / estimate at the 10th and 90th percentiles of the signed error."""
    errs = [r["error"] for r in rows]
    return 1.0 / (1.0 + percentile(errs, 90)), 1.0 / (1.0 + percentile(errs, 10))


def population_bands(rows):
    """The measured band of every population profile x method x GPU count (PROFILES x KIND_LABEL x single/multi):
    from its own scored cases when it has at least BAND_MIN_CASES, else the whole set's band (fallback)."""
    whole_low, whole_high = band_of(rows)
    by_pop = {}
    for r in rows:
        by_pop.setdefault(population(r["case"]), []).append(r)
    out = []
    for fw in PROFILES:
        for kind in KIND_LABEL:
            for g in ("single", "multi"):
                rs = by_pop.get((fw, kind, g), [])
                own = len(rs) >= BAND_MIN_CASES
                low, high = band_of(rs) if own else (whole_low, whole_high)
                out.append({"framework": fw, "method": kind, "gpus": g, "cases": len(rs), "fallback": not own,
                            "low": round(low, 6), "high": round(high, 6)})
    return {"whole": {"low": round(whole_low, 6), "high": round(whole_high, 6), "cases": len(rows)},
            "min_cases": BAND_MIN_CASES, "populations": out}


def measured_over_estimate(rows, quantity="peak_allocated_bytes"):
    """Quantiles of measured / memfit for one quantity: 80 % of the cases lie between p10 and p90."""
    ratios = [r["measured"] / r["estimate"] for r in rows if r["case"]["quantity"] == quantity and r["estimate"] > 0]
    out = {"quantity": quantity, "count": len(ratios)}
    if ratios:
        out.update({"p10": percentile(ratios, 10), "median": median(ratios), "p90": percentile(ratios, 90)})
    return out


# ----------------------------------------------------------------------------- the PyTorch grid

def run_grid(binary, python=sys.executable):
    """Run tools/validate/grid.py --reuse: (exit status, its Markdown report, its log, summary by configuration).

    The numbers come from grid.py's JSON report (summarize_grid); its Markdown rendering is only
    embedded as it is."""
    # grid.py writes its configurations next to grid.json; work on a copy so tools/validate/out stays untouched.
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        src = os.path.join(ROOT, GRID_JSON)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(out, "grid.json"))
        report_json = os.path.join(tmp, "grid_report.json")
        report_md = os.path.join(tmp, "grid_report.md")
        proc = subprocess.run([python, os.path.join(ROOT, GRID), "--reuse", "--out", out, "--memfit", binary,
                               "--json-report", report_json, "--report", report_md],
                              capture_output=True, text=True, cwd=ROOT)
        report = load_json(report_json) if os.path.exists(report_json) else None
        text = open(report_md).read() if os.path.exists(report_md) else ""
    return proc.returncode, text, (proc.stdout + proc.stderr).strip(), summarize_grid(report)


def summarize_grid(report):
    """Per configuration of grid.py's JSON report: {'exact': [...], 'not_exact': [...],
    'activation_error': float, 'activation_status': str, 'activation_exact': bool}; {} without a report."""
    configs = {}
    for c in (report or {}).get("configurations", []):
        entry = configs[c["name"]] = {"exact": [], "not_exact": [], "activation_error": None,
                                      "activation_status": None, "activation_exact": None}
        for row in c["rows"]:
            if row["check"] == "exact":
                (entry["exact"] if row["ok"] else entry["not_exact"]).append(row["quantity"])
            elif row["check"] == "tolerance" and row["field"] == "breakdown.activations":
                entry["activation_error"] = row["relative_error"]
                entry["activation_status"] = row["status"]
                entry["activation_exact"] = row["measured"] == row["memfit"]
    return configs


RANGE_FIELD = {"peak_reserved_bytes": "peak_reserved_range_bytes", "device_total_bytes": "device_total_range_bytes"}
ALT_QUANTITY = {"nvidia-smi": "device_total_bytes", "max_memory_reserved": "peak_reserved_bytes",
                "max_memory_allocated": "peak_allocated_bytes"}


def in_range(row):
    """True/False if the measurement lies in memfit's [low, high] range for this quantity; None if it has none."""
    field = RANGE_FIELD.get(row["case"]["quantity"])
    if not field or field not in row["result"]:
        return None
    lo, hi = row["result"][field]
    hi = max(hi, shown(row["result"], row["case"]["quantity"]))  # up to the run-ahead reserve, where shown
    return lo <= row["measured"] <= hi


def alt_comparisons(rows):
    """Second quantities some sources give for the same run (e.g. FastGECToR's nvidia-smi column)."""
    out = []
    for r in rows:
        m = r["record"]["measured"]
        q = ALT_QUANTITY.get(m.get("alt_quantity"))
        if not q or "alt_value" not in m or m.get("alt_unit") not in UNITS:
            continue
        measured = float(m["alt_value"]) * UNITS[m["alt_unit"]]
        est = shown(r["result"], q)
        rng = r["result"].get(RANGE_FIELD.get(q, ""), None)
        out.append({"id": r["case"]["id"], "quantity": q, "unit": m["alt_unit"], "measured": measured, "estimate": est,
                    "error": rel_error(est, measured), "in_range": (rng[0] <= measured <= rng[1]) if rng else None,
                    "primary_measured": r["measured"], "primary_unit": r["case"]["measured_unit"]})
    return out


def batch_slopes(rows):
    """Cases that differ only in micro-batch (and grad accumulation): per-sequence cost, measured vs memfit.

    The slope (M(b2) - M(b1)) / (b2 - b1) cancels everything that does not grow with the batch (weights, states,
    context, most allocator slack), so it isolates the per-sequence activation cost."""
    groups = {}
    for r in rows:
        cfg = json.loads(json.dumps(r["case"]["config"]))
        b = cfg["training"].pop("micro_batch_size")
        cfg["training"].pop("grad_accum_steps", None)
        key = (source_key(r["record"]), r["case"]["quantity"], json.dumps(cfg, sort_keys=True))
        groups.setdefault(key, {}).setdefault(b, r)
    out = []
    for key, by_b in groups.items():
        if len(by_b) < 2:
            continue
        b1, b2 = min(by_b), max(by_b)
        r1, r2 = by_b[b1], by_b[b2]
        meas = (r2["measured"] - r1["measured"]) / (b2 - b1)
        est = (r2["estimate"] - r1["estimate"]) / (b2 - b1)
        out.append({"ids": (r1["case"]["id"], r2["case"]["id"]), "batches": (b1, b2), "measured": meas, "estimate": est,
                    "ratio": meas / est if est else float("nan"), "seq": r1["case"]["config"]["training"]["seq_len"]})
    return out


# ----------------------------------------------------------------------------- formatting

def pct(x, digits=1):
    return f"{x * 100:+.{digits}f} %"


def apct(x, digits=1):
    return f"{x * 100:.{digits}f} %"


def fmt_value(value_bytes, unit):
    v = value_bytes / UNITS[unit]
    if unit in ("MB", "MiB"):
        return f"{v:,.0f} {unit}"
    return f"{v:,.2f} {unit}"


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def stats_table(title_col, groups, order=None):
    lines = [f"| {title_col} | n | median abs | mean abs | 90th pct abs | worst abs (case) | median signed | over / within 10 % / within 25 % |",
             "|---|---:|---:|---:|---:|---|---:|---|"]
    keys = order or sorted(groups)
    for k in keys:
        s = groups.get(k)
        if not s or not s.get("count"):
            continue
        lines.append(
            f"| {md_escape(k)} | {s['count']} | {apct(s['median_abs_error'])} | {apct(s['mean_abs_error'])} | "
            f"{apct(s['p90_abs_error'])} | {apct(s['worst_abs_error'])} (`{s.get('worst_id', '')}`) | "
            f"{pct(s['median_signed_error'])} | {s['share_over'] * 100:.0f} % / {s['share_within_10pct'] * 100:.0f} % / "
            f"{s['share_within_25pct'] * 100:.0f} % |")
    return "\n".join(lines)


def source_key(record):
    return record["source"]["title"]


def breakdown_line(result):
    b = result["breakdown"]
    parts = [("weights", b["parameters"]), ("grads", b["gradients"]), ("states", b["optimizer_states"]),
             ("master", b["master_weights"]), ("act", b["activations"]), ("logits", b["logits_and_loss"]),
             ("autocast copies", b["weight_copies"]), ("offloaded", b["offloaded"])]
    text = ", ".join(f"{n} {v / GIB:.2f}" for n, v in parts if v)
    phases = ", ".join(f"{p['name']} {p['bytes'] / GIB:.2f}" for p in result["phases"])
    return f"GiB: {text}; phases: {phases}"


TARGETS = [
    ("median |error| over all published cases", "median_abs_error", 0.05, "<="),
    ("90th percentile |error| over all published cases", "p90_abs_error", 0.15, "<="),
]


def headline_table(title_col, groups, order=None):
    lines = [f"| {title_col} | n | median abs | 90th pct abs | within 15 % | median signed | worst abs (case) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for k in (order or list(groups)):
        s = groups.get(k)
        if not s or not s.get("count"):
            continue
        lines.append(f"| {md_escape(k)} | {s['count']} | {apct(s['median_abs_error'])} | {apct(s['p90_abs_error'])} | "
                     f"{s['share_within_15pct'] * 100:.0f} % | {pct(s['median_signed_error'])} | "
                     f"{apct(s['worst_abs_error'])} (`{s['worst_id']}`) |")
    return "\n".join(lines)


def write_markdown(path, rows, failures, cases_doc, records, grid, binary_display, threshold, ooms=()):
    L = []
    w = L.append
    expr = expressible_rows(rows)
    all_h = headline(rows) if rows else {"count": 0}
    expr_h = headline(expr) if expr else {"count": 0}
    share = expressible_share(cases_doc, records, failures)
    oom = oom_summary(ooms)
    n_sources = len({r["source"]["title"] for r in records})
    skipped_n = share["skipped"]
    provisional = [r for r in rows if r["provisional"]] + [o for o in ooms if o["provisional"]]
    awaiting = [(i, e) for i, e in failures if str(e).startswith("awaiting core support")]
    broken = [(i, e) for i, e in failures if not str(e).startswith("awaiting core support")]

    w("# How close memfit is to real GPU memory")
    w("")
    w(f"memfit is checked against **{len(records)} published measurements of real training runs** from {n_sources} "
      "source documents: papers' memory tables and their official repositories (LOMO, GaLore, Q-GaLore, APOLLO, MeZO, "
      "TorchTitan, Qwen, ChatGLM), framework documentation and benchmarks (Hugging Face, PEFT, torchtune, torchtitan, "
      "torchao, LitGPT, ms-swift, fms-acceleration, Liger-Kernel, LLaMA-Factory, FastGECToR, llm.c) and issue threads that "
      "state their configuration. Each one has a case in `tools/accuracy/cases.json`: the memfit configuration of that run, "
      "written from what the source states (or the framework's documented default where it is silent; never chosen to "
      "improve agreement), one line of justification per setting, and the memfit quantity that matches what was measured "
      "(`max_memory_allocated` → allocated peak, `max_memory_reserved` → reserved peak, nvidia-smi → device total). "
      f"{len(rows)} cases are compared with a number, {len(ooms)} runs that ran **out of memory** are checked against "
      f"memfit's verdict on that card, and {skipped_n} records are left out, each with its reason (end of this page). "
      "The error is **(memfit − measured) / measured**: negative means memfit is below the measurement. Every case counts "
      "once; nothing is weighted. How to regenerate this page: README, section Accuracy.")
    w("")
    w(f"memfit binary: `{binary_display}`.")
    w("")
    if provisional or awaiting or broken:
        kinds_of = sorted({c.split(" ")[0] for p in provisional for c in p["provisional"]} |
                          {str(e).split(": ", 1)[-1].split(" ")[0] for _, e in awaiting})
        w("> **This page was produced with a memfit build that does not yet know some configuration fields or values the "
          "cases use** (" + ", ".join(f"`{k}`" for k in kinds_of) + "). "
          f"{len(provisional)} cases ran **provisionally** with the closest setting this build knows (the rule is "
          "`PROVISIONAL_*` in `tools/accuracy/accuracy.py`, and each case's substitutions are listed in the table of "
          f"cases); {len(awaiting)} cases could not run at all and wait for the core"
          + (f"; {len(broken)} failed for another reason" if broken else "") +
          ". Regenerated with a core that knows every field, the numbers below change; the cases do not.")
        w("")

    # ---------------------------------------------------------------- headline
    w("## How close, in five numbers")
    w("")
    w(headline_table("population", {"all scored cases": all_h, "cases memfit can express": expr_h},
                     ["all scored cases", "cases memfit can express"]))
    w("")
    w("'Cases memfit can express' leave out runs that used something memfit has no setting for, or whose measured value "
      "does not belong to one definite configuration (flags below); the first row is the headline.")
    w("")
    w("| what issue 8 asks | reported here | reached |")
    w("|---|---|---|")
    if all_h.get("count"):
        w(f"| median abs error <= 5 % over all published cases | {apct(all_h['median_abs_error'])} | "
          f"{'yes' if all_h['median_abs_error'] <= 0.05 else 'no'} |")
        w(f"| 90th percentile abs error <= 15 % over all published cases | {apct(all_h['p90_abs_error'])} | "
          f"{'yes' if all_h['p90_abs_error'] <= 0.15 else 'no'} |")
        src = grouped_headlines(rows, lambda r: [source_key(r["record"])], SOURCE_MIN_CASES)
        ok_src = sum(1 for v in src.values() if v["median_abs_error"] <= 0.05 and v["p90_abs_error"] <= 0.15)
        w(f"| the same per source with at least {SOURCE_MIN_CASES} cases | {ok_src} of {len(src)} sources | "
          f"{'yes' if ok_src == len(src) else 'no'} |")
    w(f"| every published out-of-memory run shown as not fitting | {oom['does_not_fit']} of {oom['count']} | "
      f"{'yes' if oom['does_not_fit'] == oom['count'] else 'no'} |")
    w(f"| >= 95 % of published cases expressible without dropping a stated setting | "
      f"{share['without_dropped_setting']} of {share['records']} ({share['share'] * 100:.1f} %) | "
      f"{'yes' if share['share'] >= 0.95 else 'no'} |")
    w("")
    multi = grouped_headlines(rows, gpus_class).get("multi-GPU", {})
    if multi.get("count"):
        w("| what issue 9 asks | reported here | reached |")
        w("|---|---|---|")
        w(f"| sharded memory (ZeRO / FSDP, TP, PP) within 10 % of published multi-GPU measurements (median abs error, "
          f"{multi['count']} runs) | {apct(multi['median_abs_error'])} | "
          f"{'yes' if multi['median_abs_error'] <= 0.10 else 'no'} |")
        w("")

    # ---------------------------------------------------------------- OOM
    w("## Runs that ran out of memory")
    w("")
    w(f"{oom['count']} published runs ran out of memory on the stated card (some are stated, some inferred by the source's "
      "own table, e.g. 'largest model that fits'; each case says which). memfit shows "
      f"**{oom['does_not_fit']} of them as not fitting**.")
    if oom["shown_fitting"]:
        w("")
        w("Shown as **fitting** (memfit is wrong about these): " + ", ".join(f"`{i}`" for i in oom["shown_fitting"]) + ".")
    if oom["shown_tight"]:
        w("")
        w("Shown as **tight** (above the planning budget but within the card, so not ruled out): "
          + ", ".join(f"`{i}`" for i in oom["shown_tight"]) + ".")
    w("")
    ran = ran_summary(rows)
    w(f"The other direction: of the {ran['count']} scored runs, which all ran on their card, memfit shows "
      f"**{len(ran['does_not_fit'])} as not fitting**" +
      (": " + ", ".join(f"`{i}`" for i in ran["does_not_fit"]) + "." if ran["does_not_fit"] else "."))
    w("")
    w("| id | card | memfit's need | card memory | verdict | provisional |")
    w("|---|---|---:|---:|---|---|")
    for o in sorted(ooms, key=lambda o: (o["ok"], o["case"]["id"])):
        c = o["case"]
        w(f"| `{c['id']}` | {c['config'].get('hardware', {}).get('gpu', '')} | {o['need'] / GIB:.1f} GiB | "
          f"{o['memory'] / GIB:.1f} GiB | {'**' + o['verdict'] + '**' if not o['ok'] else o['verdict']} | "
          f"{'; '.join(o['provisional']) or '-'} |")
    w("")

    # ---------------------------------------------------------------- expressible share
    w("## How many published runs memfit can express")
    w("")
    w(f"{share['without_dropped_setting']} of the {share['records']} records ({share['share'] * 100:.1f} %) are written "
      "as a memfit configuration without dropping any setting the source states. The others: "
      f"{skipped_n} records are skipped (the configuration is not stated well enough, or the method has no memfit "
      "setting - reasons at the end), and these cases keep the closest setting and are flagged:")
    w("")
    counts = {}
    for c in cases_doc["cases"]:
        for f in dropped_settings(c):
            counts[f] = counts.get(f, 0) + 1
    meanings = cases_doc.get("flag_meanings", {})
    w("| flag | what memfit lacks | cases |")
    w("|---|---|---:|")
    for f, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        w(f"| `{f}` | {md_escape(meanings.get(f, EXPRESSIBLE_EXCLUDED_FLAGS.get(f, '')))} | {n} |")
    w("")

    # ---------------------------------------------------------------- dominance
    w("## Which sources dominate")
    w("")
    counts = source_counts(rows, ooms)
    total = sum(counts.values())
    w(f"Every case counts once, so a source with many rows weighs more. Cases (scored and out-of-memory) per source, "
      f"{total} in all:")
    w("")
    w("| source | cases | share |")
    w("|---|---:|---:|")
    for k, n in counts.items():
        w(f"| {md_escape(k)} | {n} | {n / total * 100:.0f} % |")
    w("")

    # ---------------------------------------------------------------- breakdowns
    w("## Breakdowns")
    w("")
    w(f"**By source** (sources with at least {SOURCE_MIN_CASES} scored cases)")
    w("")
    w(headline_table("source", grouped_headlines(rows, lambda r: [source_key(r["record"])], SOURCE_MIN_CASES)))
    w("")
    w("**By implementation profile** (`training.framework`: the code that ran the model)")
    w("")
    w(headline_table("profile", grouped_headlines(rows, profile_class)))
    w("")
    w("**By method**")
    w("")
    w(headline_table("method", grouped_headlines(rows, method_class), ["full", "LoRA", "QLoRA", "other PEFT"]))
    w("")
    w("**By GPU count**")
    w("")
    w(headline_table("GPUs", grouped_headlines(rows, gpus_class), ["1 GPU", "multi-GPU"]))
    w("")
    w("**By measured quantity**")
    w("")
    w(headline_table("quantity", {QUANTITY_LABEL[q] + f" → `{q}`": v for q, v in
                                  grouped_headlines(rows, lambda r: [r["case"]["quantity"]]).items()}))
    w("")
    w("**By how well the sequence length is known, by torch.compile, by unmodelled settings, by the record's confidence**")
    w("")
    w(headline_table("length", grouped_headlines(rows, length_class)))
    w("")
    w(headline_table("compile", grouped_headlines(rows, compile_class)))
    w("")
    w(headline_table("unmodelled", grouped_headlines(rows, unmodelled_class)))
    w("")
    w(headline_table("confidence", grouped_headlines(rows, lambda r: [r["record"]["confidence"]]), ["high", "medium", "low"]))
    w("")

    # ---------------------------------------------------------------- bands
    if rows:
        bands = population_bands(rows)
        w("## The band the calculator shows")
        w("")
        wb = bands["whole"]
        w("Next to its estimate, memfit shows where published runs of the same kind landed relative to its estimate: "
          "measured / memfit at the 10th and 90th percentiles of the signed error. The band is per population - "
          f"implementation profile x method x GPU count - from that population's own cases when it has at least "
          f"{BAND_MIN_CASES}, otherwise the whole set's band ({wb['low']:.2f}x to {wb['high']:.2f}x over {wb['cases']} "
          "cases). `tools/accuracy/band.py` writes the table into `core/src/accuracy_band.inc`; the core multiplies, the "
          "page only shows the result. Populations with their own band:")
        w("")
        w("| profile | method | GPUs | cases | band (measured / memfit) |")
        w("|---|---|---|---:|---|")
        for b in bands["populations"]:
            if not b["fallback"]:
                w(f"| {b['framework']} | {KIND_LABEL[b['method']]} | {b['gpus']} | {b['cases']} | "
                  f"{b['low']:.2f}x to {b['high']:.2f}x |")
        w("")
        fb = [b for b in bands["populations"] if b["fallback"] and b["cases"]]
        if fb:
            w("Populations with cases but fewer than the minimum (they show the whole set's band): " + ", ".join(
                f"{b['framework']}/{KIND_LABEL[b['method']]}/{b['gpus']} ({b['cases']})" for b in fb) + ".")
            w("")
        moe = measured_over_estimate(expr)
        if moe["count"]:
            w(f"For reference, over the cases memfit can express and their allocated peaks alone ({moe['count']} cases), "
              f"80 % measured between {moe['p10']:.2f}x and {moe['p90']:.2f}x memfit (median {moe['median']:.2f}x).")
            w("")

    # ---------------------------------------------------------------- far
    big = sorted([r for r in rows if abs(r["error"]) > threshold], key=lambda r: -abs(r["error"]))
    w(f"## Where memfit is far, and why (cases off by more than {threshold * 100:.0f} %)")
    w("")
    w(f"{len(big)} of {len(rows)} scored cases ({sum(1 for r in big if is_expressible(r['case']))} of them among the "
      f"{len(expr)} cases memfit can express). For each: memfit's components and the mechanisms that make the run "
      "differ from what memfit models (`discrepancy_notes` in cases.json).")
    w("")
    for r in big:
        c = r["case"]
        excl = excluding_flags(c)
        w(f"### `{c['id']}`: {pct(r['error'])}")
        w("")
        w(f"{md_escape(c['setup_summary'])}. Measured {fmt_value(r['measured'], c['measured_unit'])} "
          f"({QUANTITY_LABEL[c['quantity']]}), memfit {fmt_value(r['estimate'], c['measured_unit'])}; "
          + ("expressible" if not excl else "not expressible: " + ", ".join(f"`{f}`" for f in excl))
          + (f"; provisional: {'; '.join(r['provisional'])}" if r["provisional"] else "") + ".")
        w("")
        w(f"- memfit {breakdown_line(r['result'])}")
        for n in c.get("discrepancy_notes", []) or ["no specific mechanism identified"]:
            w(f"- {md_escape(n)}")
        for a in r["what_if"]:
            w(f"- what if {a['label']}: memfit {fmt_value(a['estimate'], c['measured_unit'])}, error {pct(a['error'])}")
        w("")
    L_grid = grid_section(grid, binary_display)
    L.extend(L_grid)
    L.extend(case_table_section(rows, failures))
    L.extend(extra_sections(rows, cases_doc))
    with open(path, "w") as f:
        f.write("\n".join(L))


def grid_section(grid, binary_display):
    L = []
    w = L.append
    w("## The PyTorch grid (tools/validate)")
    w("")
    w("Beside the published runs, `tools/validate` builds small models in real PyTorch on the CPU, trains one step and "
      "counts parameters, gradients, optimizer states and every tensor autograd saves for backward, term by term against "
      "memfit's components. It checks memfit's anatomy exactly, but on toy models and without a GPU (no allocator, CUDA "
      "context or kernel workspaces).")
    w("")
    if grid is None:
        w("Skipped (`--no-grid`).")
        w("")
        return L
    rc, text, log, parsed = grid
    if not parsed:
        w(f"`tools/validate/grid.py --reuse` did not produce a report (exit status {rc}; it needs the PyTorch measurements "
          "in `tools/validate/out/grid.json`). Output:")
        w("")
        w("```")
        w(log[-3000:])
        w("```")
        w("")
        return L
    n = len(parsed)
    all_exact = sum(1 for c in parsed.values() if not c["not_exact"])
    act = [c["activation_error"] for c in parsed.values() if c["activation_error"] is not None]
    act_exact = sum(1 for c in parsed.values() if c["activation_exact"])
    summary_line = next((l for l in text.splitlines()[::-1] if l.strip()), "")
    w(f"Command: `/usr/bin/python3 tools/validate/grid.py --reuse --memfit {binary_display} --report FILE` (exit status "
      f"{rc}). Its verdict: *{summary_line.strip()}*.")
    w("")
    w(f"- Parameter counts, parameters, gradients, optimizer states and master weights: exact to the byte in "
      f"**{all_exact} of {n}** configurations.")
    if act:
        w(f"- Saved activations: exact to the byte in **{act_exact} of {len(act)}**; largest deviation "
          f"{max(abs(e) for e in act) * 100:.3f} % (tolerance 3 %).")
    w("")
    w("| configuration | exact components | activations error |")
    w("|---|---|---:|")
    for name, c in parsed.items():
        ex = "all 6" if not c["not_exact"] else "not exact: " + ", ".join(c["not_exact"])
        ae = "-" if c["activation_error"] is None else pct(c["activation_error"], 3)
        w(f"| `{name}` | {ex} | {ae} |")
    w("")
    w("<details><summary>Full grid report (as written by grid.py)</summary>")
    w("")
    w(text.replace("# memfit vs measured", "### memfit vs measured", 1).replace("\n## ", "\n#### "))
    w("")
    w("</details>")
    w("")
    return L


FLAG_LETTER = {"padded_seq_cap": "P", "longest_sample_len": "S", "longest_sample_estimated": "E", "seq_from_default": "D",
               "seq_from_average": "A", "torch_compile": "C", "float8": "F", "screenshot_value": "V", "low_confidence": "L"}


def case_table_section(rows, failures):
    L = []
    w = L.append
    w("## Every scored case")
    w("")
    w("Sorted by source. Measured values in the unit the source uses (after resolving its spelling); memfit in the same "
      "unit; a total over several GPUs is shown per GPU. Flags: P = padded data, length is the documented cap; S = padded "
      "data, longest sample used; E = longest sample estimated; A = average length used; D = length (or batch) from a "
      "config default; C = torch.compile; F = Float8; V = value read off a plot; U = a setting memfit cannot express "
      "(`unmodelled_*`); L = low-confidence record. 'Expressible' = none of P, E, A, C, F, V, U. 'Provisional' lists what "
      "this build substituted.")
    w("")
    w("| id | profile | method | setup | source (locator) | quantity | measured | memfit | error | flags | expressible | "
      "provisional |")
    w("|---|---|---|---|---|---|---:|---:|---:|---|---|---|")
    order = sorted(range(len(rows)), key=lambda i: (source_key(rows[i]["record"]), i))
    for i in order:
        r = rows[i]
        c, rec = r["case"], r["record"]
        unit = c["measured_unit"]
        src = f"{rec['source']['title']} — {rec['source']['locator']}"
        flags = "".join(FLAG_LETTER.get(f, "U" if f.startswith(UNMODELLED_PREFIX) else "") for f in c.get("flags", []))
        written = f"{rec['measured']['value']} {rec['measured']['unit']}"
        shown = fmt_value(r["measured"], unit)
        measured_cell = shown if (rec["measured"]["unit"] == unit and not c.get("measured_divisor")) else \
            f"{shown} (written {written}{', total' if c.get('measured_divisor') else ''})"
        w(f"| `{c['id']}` | {profile_of(c)} | {KIND_LABEL[c['kind']]} | {md_escape(c['setup_summary'])} | "
          f"{md_escape(src)} | {QUANTITY_LABEL[c['quantity']]} | {measured_cell} | {fmt_value(r['estimate'], unit)} | "
          f"**{pct(r['error'])}** | {flags} | {'yes' if is_expressible(c) else 'no'} | "
          f"{md_escape('; '.join(r['provisional'])) or '-'} |")
    w("")
    if failures:
        w("**Not run with this build**")
        w("")
        for i, e in failures:
            w(f"- `{i}`: {md_escape(e)}")
        w("")
    return L


def extra_sections(rows, cases_doc):
    L = []
    w = L.append
    slopes = batch_slopes(rows)
    if slopes:
        w("## Per-sequence cost from batch-size pairs")
        w("")
        w("Where a source reports the same run at two micro-batch sizes, the difference divided by the batch difference is "
          "the memory one more sequence costs. It cancels weights, optimizer states, context and most allocator slack, so "
          "it tests memfit's activation (and logits) terms alone. Ratio > 1: the run stores more per sequence than memfit "
          "counts.")
        w("")
        w("| cases (smallest, largest batch) | batches | seq | measured per sequence | memfit per sequence | ratio |")
        w("|---|---|---:|---:|---:|---:|")
        for s_ in sorted(slopes, key=lambda x: x["ids"]):
            w(f"| `{s_['ids'][0]}`, `{s_['ids'][1]}` | {s_['batches'][0]} → {s_['batches'][1]} | {s_['seq']} | "
              f"{s_['measured'] / GIB:.3f} GiB | {s_['estimate'] / GIB:.3f} GiB | {s_['ratio']:.2f} |")
        w("")
    alts = alt_comparisons(rows)
    if alts:
        w("## Second quantity reported for the same run (not part of the statistics)")
        w("")
        groups = {}
        for a in alts:
            multi = next(r for r in rows if r["case"]["id"] == a["id"])["multi_gpu"]
            groups.setdefault((a["quantity"], multi), []).append(a["error"])
        for (q, multi), errs in sorted(groups.items()):
            w(f"- {QUANTITY_LABEL.get(q, q)}, {'several GPUs' if multi else 'one GPU'}: {len(errs)} runs, median error "
              f"{pct(statistics.median(errs))}, median abs {apct(statistics.median(abs(e) for e in errs))}.")
        w("")
        w("| id | primary (measured) | second quantity (measured) | gap | memfit | error | in memfit's range |")
        w("|---|---:|---:|---:|---:|---:|---|")
        for a in alts:
            gap = a["measured"] - a["primary_measured"]
            w(f"| `{a['id']}` | {a['primary_measured'] / GIB:.2f} GiB | {fmt_value(a['measured'], a['unit'])} | "
              f"{gap / GIB:+.2f} GiB | {fmt_value(a['estimate'], a['unit'])} | {pct(a['error'])} | "
              f"{'-' if a['in_range'] is None else ('yes' if a['in_range'] else 'no')} |")
        w("")
    wi = [r for r in rows if r["what_if"]]
    if wi:
        w("## What-if runs (not part of the statistics)")
        w("")
        w("Some cases carry an alternative setting (`what_if`): a property of the run that memfit does not take from its "
          "default, or a framework behaviour memfit cannot express directly. They are evidence for model changes, not "
          "alternative scores.")
        w("")
        w("| id | baseline error | alternative | error |")
        w("|---|---:|---|---:|")
        for r in wi:
            for a in r["what_if"]:
                w(f"| `{r['case']['id']}` | {pct(r['error'])} | {md_escape(a['label'])} | {pct(a['error'])} |")
        w("")
    w("## Skipped measurements")
    w("")
    for s in cases_doc.get("skipped", []):
        w(f"- {', '.join('`' + i + '`' for i in s['ids'])}: {md_escape(s['reason'])}")
    w("")
    w("## Assumptions, case by case")
    w("")
    w("<details><summary>Every case's configuration choices (from cases.json)</summary>")
    w("")
    for r in sorted(rows, key=lambda r: (source_key(r["record"]), r["case"]["id"])):
        c = r["case"]
        w(f"**`{c['id']}`** ({md_escape(c['setup_summary'])})")
        w("")
        for a in c["assumptions"]:
            w(f"- {md_escape(a)}")
        w("")
    w("</details>")
    w("")
    return L


def summary_block(rows):
    """The summary statistics of one population of rows: overall, by quantity and by kind."""
    errs = [r["error"] for r in rows]
    ids = [r["case"]["id"] for r in rows]
    overall = stats(errs, ids)
    keep = ("count", "median_abs_error", "mean_abs_error", "p90_abs_error", "worst_abs_error", "worst_id",
            "median_signed_error", "p10_signed_error", "p90_signed_error", "share_over")

    def r6(d):
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in d.items() if k in keep}

    out = {"count": overall["count"]}
    if overall["count"]:
        for k in ("median_abs_error", "mean_abs_error", "p90_abs_error", "worst_abs_error", "worst_id",
                  "median_signed_error", "p10_signed_error", "p90_signed_error"):
            out[k] = round(overall[k], 6) if isinstance(overall[k], float) else overall[k]
    by_q = group_stats(rows, lambda r: [r["case"]["quantity"]])
    by_kind = group_stats(rows, kinds)
    out["by_quantity"] = {q: r6(by_q[q]) for q in QUANTITIES if q in by_q}
    out["by_kind"] = {k: r6(v) for k, v in sorted(by_kind.items())}
    return out


def r6(d):
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in d.items()}


def build_summary(rows, cases_path, meas_path, binary_display, ooms=(), failures=(), cases_doc=None, records=None):
    expr = expressible_rows(rows)
    out = {"error_definition": "(memfit - measured) / measured; *_abs_error are |error| as fractions (0.1 = 10 %)"}
    out.update(summary_block(rows))
    if rows:
        out["share_within_15pct"] = round(headline(rows)["share_within_15pct"], 6)
    block = {
        "definition": "scored cases carrying none of excluded_flags (nor any flag named " + UNMODELLED_PREFIX + "*): "
                      "the run used nothing memfit has no setting for, and the measured value belongs to one definite "
                      "configuration",
        "excluded_flags": sorted(set(EXPRESSIBLE_EXCLUDED_FLAGS) | {f for r in rows for f in excluding_flags(r["case"])}),
        "ids": sorted(r["case"]["id"] for r in expr),
    }
    block.update(summary_block(expr))
    out["expressible"] = block
    moe = measured_over_estimate(expr)
    out["measured_over_estimate"] = {
        "definition": "measured / memfit estimate of peak_allocated_bytes over the cases memfit can express; 80 % of "
                      "them lie between p10 and p90",
        "population": "expressible",
        **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in moe.items()},
    }
    out["headline"] = {
        "definition": "count, median |error|, 90th percentile |error|, share within 15 %, median signed error; every case "
                      "counts once (no weights)",
        "all": r6(headline(rows)) if rows else {"count": 0},
        "expressible": r6(headline(expr)) if expr else {"count": 0},
        "by_source": {k: r6(v) for k, v in grouped_headlines(rows, lambda r: [source_key(r["record"])],
                                                             SOURCE_MIN_CASES).items()},
        "by_profile": {k: r6(v) for k, v in grouped_headlines(rows, profile_class).items()},
        "by_method": {k: r6(v) for k, v in grouped_headlines(rows, method_class).items()},
        "by_gpus": {k: r6(v) for k, v in grouped_headlines(rows, gpus_class).items()},
        "cases_per_source": source_counts(rows, ooms),
    }
    out["oom_check"] = oom_summary(ooms)
    out["ran_check"] = ran_summary(rows)
    if cases_doc is not None and records is not None:
        out["expressible_share"] = r6(expressible_share(cases_doc, records, failures))
    if rows:
        out["bands"] = population_bands(rows)
    out["provisional"] = {
        "definition": "cases run with the closest setting this memfit build knows because it lacks a field or value the "
                      "case uses (accuracy.py PROVISIONAL_*); none with a core that knows every field",
        "ids": sorted([r["case"]["id"] for r in rows if r["provisional"]] +
                      [o["case"]["id"] for o in ooms if o["provisional"]]),
    }
    out["not_run"] = [{"id": i, "reason": str(e)} for i, e in failures]
    out["generated_from"] = {
        "command": "/usr/bin/python3 tools/accuracy/accuracy.py",
        "cases": CASES,
        "cases_sha256": sha256(cases_path),
        "measurements": MEASUREMENTS,
        "measurements_sha256": sha256(meas_path),
        "memfit": binary_display,
    }
    return out


def write_points(path, rows):
    """The scatter's points: what each published run measured and what memfit estimated (the build that
    wrote the report), in bytes, with the case's kind, source and whether memfit can express it."""
    points = []
    for r in rows:
        flags = r["case"].get("flags", [])
        points.append({"id": r["case"]["id"], "kind": r["case"]["kind"], "label": r["case"].get("setup_summary", ""),
                       "source": r["record"]["source"]["title"], "quantity": r["case"]["quantity"],
                       "measured": round(r["measured"]), "predicted": round(r["estimate"]),
                       "error": round(r["error"], 6), "provisional": bool(r["provisional"]),
                       "expressible": not any(f in EXCLUDING or f.startswith("unmodelled_") for f in flags)})
    with open(path, "w") as f:
        json.dump({"about": "written by tools/accuracy/accuracy.py with the report; memfit's estimate of each "
                            "published measurement", "points": points}, f, indent=0)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memfit", default=DEFAULT_MEMFIT, help="memfit binary (default build/cli/memfit, from the repo root)")
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--measurements", default=MEASUREMENTS)
    ap.add_argument("--out-md", default=OUT_MD)
    ap.add_argument("--out-json", default=OUT_JSON)
    ap.add_argument("--no-grid", action="store_true", help="do not run tools/validate/grid.py")
    ap.add_argument("--threshold", type=float, default=THRESHOLD, help="list cases with |error| above this (0.25)")
    args = ap.parse_args(argv)

    def at_root(p):
        return p if os.path.isabs(p) else os.path.join(ROOT, p)

    binary = at_root(args.memfit)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"accuracy.py: memfit binary not found or not executable: {binary}\n"
              "build it: cmake -S . -B build && cmake --build build -j2", file=sys.stderr)
        return 2
    binary_display = os.path.relpath(binary, ROOT) if binary.startswith(ROOT + os.sep) else binary
    cases_path, meas_path = at_root(args.cases), at_root(args.measurements)
    cases_doc = load_json(cases_path)
    records = load_json(meas_path)

    build = Build.of(binary)
    rows, ooms, failures = evaluate(cases_doc, records, binary, build)
    for cid, err in failures:
        print(f"accuracy.py: not run: {cid}: {err}", file=sys.stderr)
    grid = None if args.no_grid else run_grid(binary)
    write_markdown(at_root(args.out_md), rows, failures, cases_doc, records, grid, binary_display, args.threshold,
                   ooms=ooms)
    summary = build_summary(rows, cases_path, meas_path, binary_display, ooms, failures, cases_doc, records)
    with open(at_root(args.out_json), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    if os.path.abspath(at_root(args.out_json)) == os.path.abspath(os.path.join(ROOT, OUT_JSON)):
        write_points(os.path.join(ROOT, OUT_POINTS), rows)
    h = summary["headline"]["all"]
    print(f"{len(rows)} cases scored, {len(ooms)} out-of-memory checks, {len(failures)} not run: "
          f"median |error| {h['median_abs_error'] * 100:.1f} %, p90 {h['p90_abs_error'] * 100:.1f} %, "
          f"within 15 % {h['share_within_15pct'] * 100:.0f} %, median signed {h['median_signed_error'] * 100:+.1f} %")
    o = summary["oom_check"]
    print(f"out of memory shown as not fitting: {o['does_not_fit']} of {o['count']}")
    ran = summary["ran_check"]
    print(f"runs that ran shown as not fitting: {len(ran['does_not_fit'])} of {ran['count']}")
    e = summary.get("expressible_share", {})
    if e:
        print(f"expressible share: {e['without_dropped_setting']} of {e['records']} records ({e['share'] * 100:.1f} %)")
    prov = summary["provisional"]["ids"]
    if prov:
        print(f"{len(prov)} cases provisional (this build lacks a field they use)")
    print(f"wrote {os.path.relpath(at_root(args.out_md), ROOT)} and {os.path.relpath(at_root(args.out_json), ROOT)}")
    if os.path.abspath(at_root(args.out_json)) == os.path.abspath(os.path.join(ROOT, "docs/data/accuracy_summary.json")):
        import band
        band.main()
        print("wrote core/src/accuracy_band.inc (rebuild memfit to use it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
