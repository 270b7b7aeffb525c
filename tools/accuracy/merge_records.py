#!/usr/bin/python3
"""Merges the research branches' records (tools/accuracy/incoming/*.json) into
docs/data/published_measurements.json and regenerates docs/data/published_measurements.md.

    /usr/bin/python3 tools/accuracy/merge_records.py

Idempotent: a record whose id is already in the measurement file is replaced by its incoming version, so
running it twice gives the same file. What the merge does to each incoming record, and nothing else:

- keeps source (title, path/commit, locator, kind), model, model_type, setup, measured (value and per_gpu as
  written), quote, confidence, notes, framework and unstated;
- drops `memfit_config` (a proposal; the configuration that is scored lives in tools/accuracy/cases.json,
  and the proposals stay in incoming/ for reference);
- splits a unit field that carries a comment ("GB (torchtitan logs GiB)", "MB (MiB)", "GB (presumably)",
  "GB (~)") into the unit as the source writes it and a `unit_note`;
- gives every record a `framework` (the stack that ran it, as the source names it): records without one get
  it from SOURCE_FRAMEWORK below;
- leaves out an incoming record that repeats an existing measurement (same run, same number, same source
  lineage): DUPLICATES names each one and the record it repeats.
Standard library only.
"""

import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MEASUREMENTS = os.path.join(ROOT, "docs", "data", "published_measurements.json")
MEASUREMENTS_MD = os.path.join(ROOT, "docs", "data", "published_measurements.md")
INCOMING = [os.path.join(HERE, "incoming", "papers.json"), os.path.join(HERE, "incoming", "frameworks.json")]

# Incoming records that repeat a measurement already in the file. The LitGPT LoRA tutorial's tables were
# added six days after the resource tables (Oct 2023, same lit-gpt benchmark campaign) and print the same
# numbers for the same runs.
DUPLICATES = {
    "litgpt-tut-lora-stablelm-3b-bf16-true": "lg-rt-slm-lora-mbs1-1gpu",
    "litgpt-tut-lora-stablelm-3b-bf16-true-nf4": "lg-rt-slm-qlora-nf4-mbs1-1gpu",
    "litgpt-tut-lora-llama2-7b-bf16-true": "lg-rt-l7-lora-mbs1-1gpu",
    "litgpt-tut-lora-llama2-7b-bf16-true-nf4": "lg-rt-l7-qlora-nf4-mbs1-1gpu",
    "litgpt-tut-lora-llama2-7b-bf16-true-nf4-dq": "lg-rt-l7-qlora-nf4-dq-mbs1-1gpu",
}

# The stack that ran each source's runs, for records that do not name one (the original 112 and the papers).
SOURCE_FRAMEWORK = [
    ("Efficient Training on a Single GPU", "hf"),
    ("torchtune", "torchtune"),
    ("LitGPT", "litgpt"),
    ("PEFT", "hf"),
    ("FastGECToR", "deepspeed"),
    ("torchtitan benchmark", "torchtitan"),
    ("TorchTitan:", "torchtitan"),
    ("LOMO", "deepspeed"),
    ("GaLore", "hf"),
    ("Q-GaLore", "hf"),
    ("APOLLO", "hf"),
    ("BAdam", "llama-factory"),
    ("LoRA: Low-Rank Adaptation", "other (OpenAI internal)"),
    ("MeZO", "hf"),
    ("Qwen", "hf"),
    ("HiFT", "hf"),
    ("ChatGLM-6B", "hf"),
    ("ChatGLM3", "hf"),
]

UNIT_RE = re.compile(r"^\s*(bytes|[KMGT]i?B|G)\s*(?:\((.*)\))?\s*$")


def framework_for(record):
    if record.get("framework"):
        return record["framework"]
    title = record["source"]["title"]
    for needle, fw in SOURCE_FRAMEWORK:
        if needle in title:
            return fw
    raise ValueError(f"{record['id']}: no framework for source {title!r}")


def split_unit(measured):
    """('GB', 'torchtitan logs GiB') from 'GB (torchtitan logs GiB)'; (None, None) for an OOM record."""
    unit = measured.get("unit")
    if unit is None:
        return None, None
    m = UNIT_RE.match(unit)
    if not m:
        raise ValueError(f"unit {unit!r} is not a unit with an optional comment")
    return m.group(1), m.group(2)


def normalise(record):
    r = json.loads(json.dumps(record))
    r.pop("memfit_config", None)
    unit, note = split_unit(r["measured"])
    if note:
        r["measured"]["unit"] = unit
        r["measured"]["unit_note"] = note
    r["framework"] = framework_for(r)
    return r


def merge(existing, incoming):
    """(merged records, dropped duplicates as (incoming id, existing id))."""
    incoming = [r for r in incoming]
    ids = [r["id"] for r in incoming]
    dup = [i for i, n in collections.Counter(ids).items() if n > 1]
    if dup:
        raise ValueError(f"incoming ids repeated: {dup}")
    incoming_ids = set(ids)
    kept = [normalise(r) for r in existing if r["id"] not in incoming_ids]
    have = {r["id"] for r in kept}
    dropped = []
    for r in incoming:
        if r["id"] in DUPLICATES:
            target = DUPLICATES[r["id"]]
            if target not in have:
                raise ValueError(f"{r['id']} is listed as a duplicate of {target}, which is not in the file")
            dropped.append((r["id"], target))
            continue
        kept.append(normalise(r))
    return kept, dropped


# ----------------------------------------------------------------------------- the Markdown view

def setup_line(r):
    s = r["setup"]
    ft = s.get("finetune") or {}
    method = ft.get("method", "?")
    if ft.get("lora_rank") is not None or ft.get("targets"):
        tg = ft.get("targets")
        tg = ",".join(tg) if isinstance(tg, list) else (tg or "?")
        method = f"{method}(r={ft.get('lora_rank', '?')},{tg})"
    parts = [f"{s.get('num_gpus', '?')}x {s.get('gpu', '?')}", method, str(s.get("precision", "?")),
             str(s.get("optimizer", "?")), f"mbs={s.get('micro_batch_size', '?')}", f"seq={s.get('seq_len', '?')}"]
    if s.get("grad_accum_steps") not in (None, 1):
        parts.append(f"ga={s.get('grad_accum_steps')}")
    parts.append(f"ckpt={s.get('gradient_checkpointing', '?')}")
    for k in ("zero_stage", "fsdp", "offload"):
        if s.get(k) not in (None, "none", "None"):
            parts.append(f"{k}={s[k]}" if k == "zero_stage" else str(s[k]))
    if s.get("other"):
        parts.append(str(s["other"]))
    return "; ".join(parts)


def value_text(m):
    if m["quantity"] == "oom":
        return "**out of memory**"
    total = "" if m.get("per_gpu", True) else ", total over all GPUs"
    note = f" [{m['unit_note']}]" if m.get("unit_note") else ""
    return f"**{m['value']} {m['unit']}{note} ({m['quantity']}{total})**"


CAVEATS_FILE = os.path.join(HERE, "measurement_caveats.md")


def render_md(records, dropped):
    by_source = collections.OrderedDict()
    for r in records:
        by_source.setdefault(r["source"]["title"], []).append(r)
    L = []
    w = L.append
    w("# Published GPU-memory measurements for training / fine-tuning")
    w("")
    w("Generated by `tools/accuracy/merge_records.py` from `published_measurements.json` (same ids): do not edit by "
      "hand. Every value below is a measurement of a real run reported by its authors, not an estimate, or a run "
      "its authors report as out of memory. Each JSON record carries the exact source path/commit, a locator, a "
      "verbatim quote, the quantity measured (max_memory_allocated / max_memory_reserved / nvidia-smi / unknown / "
      "oom), the unit exactly as written (a reader's comment on it in `unit_note`), a confidence level, notes, the "
      "stack that ran it (`framework`) and, for the records merged from the research branches, the settings the "
      "source leaves unstated (`unstated`).")
    w("")
    w("Columns: id | model | setup (GPUs; method; precision; optimizer; micro-batch; seq len; grad-accum; "
      "checkpointing; sharding/offload; other) | value (quantity) | locator | confidence | framework")
    w("")
    for title, rs in by_source.items():
        w(f"## {title}")
        w("")
        paths = sorted({r['source']['url_or_repo_path'] for r in rs})
        for p in paths:
            w(f"Source: `{p}`")
        w("")
        for r in rs:
            w(f"- `{r['id']}` | {r['model']} | {setup_line(r)} | {value_text(r['measured'])} | "
              f"{r['source']['locator']} | {r['confidence']} | {r['framework']}")
        w("")
    # Coverage, computed.
    n = len(records)
    q = collections.Counter(r["measured"]["quantity"] for r in records)
    conf = collections.Counter(r["confidence"] for r in records)
    fw = collections.Counter(r["framework"] for r in records)
    multi = sum(1 for r in records if isinstance(r["setup"].get("num_gpus"), int) and r["setup"]["num_gpus"] > 1)
    w("## Coverage")
    w("")
    w(f"{n} records from {len(by_source)} source documents. Out-of-memory records: {q.get('oom', 0)}. "
      f"Multi-GPU records: {multi}. Quantities: {dict(sorted(q.items()))}. Confidence: {dict(sorted(conf.items()))}. "
      f"Stacks: {dict(fw.most_common())}.")
    w("")
    if dropped:
        w("Incoming records left out as repeats of a measurement already here (same run, same number):")
        w("")
        for a, b in dropped:
            w(f"- `{a}` repeats `{b}`")
        w("")
    with open(CAVEATS_FILE) as f:
        w(f.read().rstrip())
    w("")
    return "\n".join(L)


def main():
    with open(MEASUREMENTS) as f:
        existing = json.load(f)
    incoming = []
    for p in INCOMING:
        with open(p) as f:
            incoming.extend(json.load(f))
    merged, dropped = merge(existing, incoming)
    with open(MEASUREMENTS, "w") as f:
        json.dump(merged, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(MEASUREMENTS_MD, "w") as f:
        f.write(render_md(merged, dropped))
    print(f"merge_records.py: {len(merged)} records ({len(dropped)} incoming repeats left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
