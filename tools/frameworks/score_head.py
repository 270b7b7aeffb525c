#!/usr/bin/env python3
"""A decoder's classification head: what transformers' real classes save for backward.

    .venv-frameworks/bin/python tools/frameworks/score_head.py            # -> out/score_head.json
    options: --memfit BIN (default build/cli/memfit), --out FILE, --explain

A reward model is a decoder with a sequence-classification head (LlamaForSequenceClassification
with one label, trained by TRL's RewardTrainer); token classifiers put a label on every token. Each
case builds a tiny model of one family with that head from a config.json naming the class in
`architectures` (no weights are downloaded), runs two training steps (the loss the class computes
from its labels; plain AdamW), and measures the second with saved_tensors_hooks (savetrack.py:
each storage once, parameters and buffers excluded; measure.py's CUDA rules per tensor), split
into the body (embeddings, blocks, final norm) and the head (the score, the gather of each
sequence's last token, the loss). The same config.json goes through memfit's importer, which
reads the head from `architectures`:

  body: memfit's breakdown.activations;
  head: what memfit's head holds at the end of forward (the rise of its "forward" phase over the
        same run with model.output_head none, less the score's weights and optimizer states) less
        what it holds only while the head runs, which no backward keeps (the score's B x T x L
        logits; the sequence classifier's gathered B x L logits before cross_entropy; the token
        classifier's fp32 copy of its logits, which GPT2ForTokenClassification does not make).

Eager attention only (the head does not depend on the kernel); fp32, pure bf16, and PEFT LoRA on
q and v over a bf16 base with task_type SEQ_CLS / TOKEN_CLS, whose modules_to_save trains a copy
of the score (memfit: training.finetune.modules_to_save head), and once without a task type (the
score frozen).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (its preamble: the Hub offline, warnings off, one CPU thread)
import torch  # noqa: E402
from measure_encdec import Tracker, classify  # noqa: E402  (dropout's CPU noise told apart, as CUDA keeps a bool mask)

HERE, ROOT = measure.HERE, measure.ROOT

B, T, V = 2, 48, 384
FAMILIES = {
    "llama": dict(model_type="llama", vocab_size=V, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0,
                  tie_word_embeddings=False),
    "qwen2": dict(model_type="qwen2", vocab_size=V, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0,
                  tie_word_embeddings=True),
    "gpt2": dict(model_type="gpt2", vocab_size=V, n_embd=64, n_layer=2, n_head=4, n_positions=128, pad_token_id=0,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0),
}
CLASSES = {"llama": "Llama", "qwen2": "Qwen2", "gpt2": "GPT2"}
BODY = ("model.", "transformer.")


def cases():
    out = []
    for fam in FAMILIES:
        for prec in ("fp32", "bf16"):
            out.append(dict(family=fam, head="seqcls", labels=1, precision=prec))
        out.append(dict(family=fam, head="seqcls", labels=3, precision="fp32"))
        out.append(dict(family=fam, head="tokcls", labels=5, precision="bf16"))
        out.append(dict(family=fam, head="seqcls", labels=1, precision="bf16", lora=True))
    out.append(dict(family="llama", head="tokcls", labels=5, precision="bf16", lora=True))
    # the token classifier's own dropout as the classes fill it (no classifier_dropout in the file:
    # GenericForTokenClassification's and GPT2ForTokenClassification's 0.1)
    for fam in ("llama", "gpt2"):
        out.append(dict(family=fam, head="tokcls", labels=5, precision="bf16", head_dropout=True))
    out.append(dict(family="qwen2", head="tokcls", labels=5, precision="bf16", lora=True, head_dropout=True))
    # LoRA without a task type: the score stays frozen, so its dropout keeps the mask alone
    out.append(dict(family="llama", head="tokcls", labels=5, precision="bf16", lora=True, head_dropout=True,
                    frozen_head=True))
    for c in out:
        c["name"] = "-".join([c["family"], c["head"], "L%d" % c["labels"], c["precision"]] +
                             (["lora"] if c.get("lora") else []) + (["headdrop"] if c.get("head_dropout") else []) +
                             (["frozenhead"] if c.get("frozen_head") else []))
    return out


def hf_config(c):
    d = dict(FAMILIES[c["family"]])
    kind = "SequenceClassification" if c["head"] == "seqcls" else "TokenClassification"
    d["architectures"] = [CLASSES[c["family"]] + "For" + kind]
    d["id2label"] = {str(i): "LABEL_%d" % i for i in range(c["labels"])}
    if c["head"] == "tokcls" and not c.get("head_dropout"):
        d["classifier_dropout"] = 0.0
    return d


def build(c):
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoModelForTokenClassification
    d = hf_config(c)
    cfg = AutoConfig.for_model(**{k: v for k, v in d.items() if k != "architectures"})
    cls = AutoModelForSequenceClassification if c["head"] == "seqcls" else AutoModelForTokenClassification
    dtype = torch.bfloat16 if c["precision"] == "bf16" else torch.float32
    model = cls.from_config(cfg, dtype=dtype, attn_implementation="eager")
    if c.get("lora"):
        from peft import LoraConfig, get_peft_model
        from compat import peft_without_torchao
        peft_without_torchao()
        targets = ["c_attn"] if c["family"] == "gpt2" else ["q_proj", "v_proj"]
        task = "SEQ_CLS" if c["head"] == "seqcls" else "TOKEN_CLS"
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=targets, lora_dropout=0.0,
                                                 task_type=None if c.get("frozen_head") else task))
    model.train()
    return model


def inputs(c, seed):
    g = torch.Generator().manual_seed(seed)
    x = {"input_ids": torch.randint(3, V, (B, T), generator=g)}   # no padding token: every row ends at T
    if c["head"] == "seqcls":
        x["labels"] = (torch.randn(B, generator=g) if c["labels"] == 1
                       else torch.randint(0, c["labels"], (B,), generator=g))
        if c["labels"] == 1 and c["precision"] == "bf16":
            x["labels"] = x["labels"].to(torch.bfloat16)
    else:
        x["labels"] = torch.randint(0, c["labels"], (B, T), generator=g)
    return x


def measure_case(c, explain=False):
    torch.manual_seed(0)
    model = build(c)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, foreach=False)
    loss = model(**inputs(c, 1)).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del loss
    tr = Tracker({"": model})
    with tr.measuring():
        loss = model(**inputs(c, 2)).loss
    tr.name_ops([loss])
    body = head = 0
    records = classify(tr)
    for r in records:
        # classify() reads any constant float a multiply saves as dropout's noise; in these
        # decoders' blocks that is the rotary table (cos, sin), which CUDA keeps as it is
        if r["module"].replace("base_model.model.", "", 1).startswith(BODY):
            r.pop("dropout_noise", None)
    for r in records:
        cb, _ = measure.cuda_bytes(r, c["precision"])
        mod = r["module"]
        if mod.startswith("base_model.model."):
            mod = mod[len("base_model.model."):]
        where = "body" if mod.startswith(BODY) else "head"
        if where == "body":
            body += cb
        else:
            head += cb
        if explain and where == "head":
            print("   head %-40s %-30s %8d %s%s" % (mod, ",".join(sorted(set(r["nodes"])))[:30], cb, r["dtype"],
                                                 r["shape"]), file=sys.stderr)
    loss.backward()
    return {"body_bytes_cuda": body, "head_bytes_cuda": head, "model_class": type(model).__name__,
            "parameter_count": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())}


def run_memfit(binary, c):
    with_head = memfit_once(binary, c, head=True)
    if "error" in with_head:
        return with_head
    bare = memfit_once(binary, c, head=False)
    if "error" in bare:
        return bare
    act = 2 if c["precision"] == "bf16" else 4
    transient = B * T * c["labels"] * act
    if c["head"] == "tokcls" and c["family"] != "gpt2":   # GPT2ForTokenClassification does not upcast
        transient += B * T * c["labels"] * 4
    elif c["labels"] > 1:
        transient += B * c["labels"] * act
    resident = ("parameters", "optimizer_states", "master_weights")
    forward = (with_head["phases"]["forward"] - bare["phases"]["forward"] -
               sum(with_head["breakdown"][k] - bare["breakdown"][k] for k in resident))
    b = with_head["breakdown"]
    return {"activations": b["activations"], "logits_and_loss": b["logits_and_loss"], "head_forward": forward,
            "head_saved": forward - transient, "parameter_count": with_head["parameter_count"]}


def memfit_once(binary, c, head):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(hf_config(c), f)
        path = f.name
    sets = {"training.micro_batch_size": B, "training.seq_len": T, "training.precision": c["precision"],
            "training.attention": "eager", "training.dropout": 0, "training.optimizer": "adamw",
            "training.checkpointing": "none"}
    if c.get("lora"):
        targets = '["qkv"]' if c["family"] == "gpt2" else '["q","v"]'
        sets.update({"training.finetune.method": "lora", "training.finetune.lora_rank": 8,
                     "training.finetune.lora_targets": targets})
        if head and not c.get("frozen_head"):
            sets["training.finetune.modules_to_save"] = '["head"]'
    if not head:
        sets["model.output_head"] = "none"
    cmd = [binary, "--hf-config", path, "--json"]
    for k, v in sets.items():
        cmd += ["--set", "%s=%s" % (k, v)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    r = json.loads(p.stdout)
    if not r.get("ok", True):
        return {"error": json.dumps(r.get("errors"))[:300]}
    return {"breakdown": r["breakdown"], "phases": {ph["name"]: ph["bytes"] for ph in r["phases"]},
            "parameter_count": r["parameter_count"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memfit", default=os.path.join(ROOT, "build", "cli", "memfit"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "score_head.json"))
    ap.add_argument("--explain", action="store_true")
    args = ap.parse_args()
    results, off = [], 0
    for c in cases():
        m = measure_case(c, args.explain)
        mf = run_memfit(args.memfit, c)
        row = {"name": c["name"], "case": c, "hf_config": hf_config(c), "measured": m, "memfit": mf}
        if "error" not in mf:
            row["body_ratio"] = round(mf["activations"] / m["body_bytes_cuda"], 5)
            row["head_ratio"] = round(mf["head_saved"] / max(1, m["head_bytes_cuda"]), 5)
            row["count_equal"] = mf["parameter_count"] == m["parameter_count"] if not c.get("lora") else None
            off += int(abs(row["body_ratio"] - 1) > 0.01 or abs(row["head_ratio"] - 1) > 0.01 or
                       row["count_equal"] is False)
        else:
            off += 1
        results.append(row)
        print("%-28s body %8d / %8s  head %8d / %8s  count %s %s" % (
            c["name"], m["body_bytes_cuda"], mf.get("activations"), m["head_bytes_cuda"], mf.get("head_saved"),
            row.get("count_equal"), mf.get("error", "")), file=sys.stderr)
    import importlib.metadata as md
    doc = {"about": __doc__.strip().splitlines()[0],
           "versions": {k: md.version(k) for k in ("torch", "transformers", "peft")},
           "shapes": {"B": B, "T": T, "V": V}, "cases": results,
           "summary": "%d cases, %d off by more than 1 %% (body or head) or with a different count" % (len(results), off)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(doc["summary"], file=sys.stderr)
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
