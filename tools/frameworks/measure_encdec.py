#!/usr/bin/env python3
"""Encoder-decoder and encoder-only models: what transformers' real classes save for backward.

    .venv-frameworks/bin/python tools/frameworks/measure_encdec.py            # -> out/encdec.json
    .venv-frameworks/bin/python tools/frameworks/measure_encdec.py --only t5-eager-fp32 --explain
    options: --memfit BIN (default build/cli/memfit), --no-memfit, --list, --out FILE

Each case builds a tiny model of one family (T5 v1.0, T5 v1.1 / Flan-T5, mT5, BART, BERT,
DistilBERT, RoBERTa, XLM-RoBERTa, DeBERTa-v2) with one task head from a config (no weights are downloaded),
runs two training steps the way the HF Trainer runs them (outputs = model(**inputs, labels=...);
loss = outputs["loss"]; under bf16_mixed accelerate's autocast with the CUDA op lists emulated,
see cuda_amp.py) and measures the second step with saved_tensors_hooks (savetrack.py: each
storage once, parameter and buffer storages excluded), with the CUDA-equivalent rules of
measure.py applied per saved tensor. The same tiny config.json goes through memfit's importer
(`memfit --hf-config`) with the same run settings, and memfit's saved activations
(breakdown.activations) and head (activation_terms and logits_and_loss) are put beside it.

Parameter counts of the real presets (tests/fixtures/hf/*.json, built on the meta device) are
measured too, for the classes the presets stand for; see `parameter_counts()`.
"""

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402

torch.set_num_threads(1)

import measure  # noqa: E402
from measure import _emulated  # noqa: E402

CUDA_RULES = dict(measure.CUDA_RULES, cpu_scalar=(
    "DeBERTa divides by torch.sqrt(torch.tensor(size, dtype=float) * scale_factor), a 0-dim tensor made on "
    "the CPU (scaled_size_sqrt); on CUDA it stays a CPU scalar: 0 GPU bytes"))


def cuda_bytes(rec, precision):
    if (not rec["shape"] and rec["module"].endswith("attention.self") and any(
            n.startswith("DivBackward") for n in rec["nodes"])):
        return 0, "cpu_scalar"
    return measure.cuda_bytes(rec, precision)
from savetrack import SaveTracker  # noqa: E402

# --------------------------------------------------------------------------- tiny shapes
# B sequences of S source tokens (the encoder) and T target tokens (the decoder); d_kv differs
# from d_model / num_heads and the decoder is deeper than the encoder, so that every symbol of the
# formulas is told apart.
B, S, T = 2, 48, 40
V = 384
NUM_LABELS = 3

FAMILIES = {
    "t5": dict(model_type="t5", vocab_size=V, d_model=64, d_kv=24, d_ff=160, num_layers=2,
               num_decoder_layers=3, num_heads=4, relative_attention_num_buckets=8,
               relative_attention_max_distance=20, feed_forward_proj="relu", dropout_rate=0.0,
               decoder_start_token_id=0, pad_token_id=0, tie_word_embeddings=True),
    "t5v11": dict(model_type="t5", vocab_size=V, d_model=64, d_kv=24, d_ff=160, num_layers=2,
                  num_decoder_layers=3, num_heads=4, relative_attention_num_buckets=8,
                  relative_attention_max_distance=20, feed_forward_proj="gated-gelu", dropout_rate=0.0,
                  decoder_start_token_id=0, pad_token_id=0, tie_word_embeddings=False),
    "mt5": dict(model_type="mt5", vocab_size=V, d_model=64, d_kv=24, d_ff=160, num_layers=2,
                num_decoder_layers=3, num_heads=4, relative_attention_num_buckets=8,
                relative_attention_max_distance=20, feed_forward_proj="gated-gelu", dropout_rate=0.0,
                decoder_start_token_id=0, pad_token_id=0, tie_word_embeddings=False),
    "bart": dict(model_type="bart", vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=3,
                 encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=160,
                 decoder_ffn_dim=160, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                 activation_dropout=0.0, pad_token_id=1, decoder_start_token_id=2, bos_token_id=0,
                 eos_token_id=2, forced_eos_token_id=2),
    "bert": dict(model_type="bert", vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=160, max_position_embeddings=128, type_vocab_size=2,
                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    "distilbert": dict(model_type="distilbert", vocab_size=V, dim=64, n_layers=2, n_heads=4, hidden_dim=160,
                       max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                       seq_classif_dropout=0.0),
    "distilbert_relu": dict(model_type="distilbert", vocab_size=V, dim=64, n_layers=2, n_heads=4, hidden_dim=160,
                            max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                            seq_classif_dropout=0.0, activation="relu"),
    "roberta": dict(model_type="roberta", vocab_size=V, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=160, max_position_embeddings=130,
                    type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    "xlm-roberta": dict(model_type="xlm-roberta", vocab_size=V, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=160, max_position_embeddings=130,
                        type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    "deberta-v2": dict(model_type="deberta-v2", vocab_size=V, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=160, max_position_embeddings=128,
                       relative_attention=True, position_buckets=16, max_relative_positions=-1,
                       pos_att_type=["p2c", "c2p"], position_biased_input=False, share_att_key=True,
                       norm_rel_ebd="layer_norm", type_vocab_size=0, pad_token_id=0,
                       pooler_hidden_size=64, pooler_dropout=0, pooler_hidden_act="gelu",
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
}
SEQ2SEQ = ("t5", "t5v11", "mt5", "bart")
DROPOUT_KEYS = {"t5": ["dropout_rate"], "t5v11": ["dropout_rate"], "mt5": ["dropout_rate"],
                "bart": ["dropout", "attention_dropout", "activation_dropout"],
                "bert": ["hidden_dropout_prob", "attention_probs_dropout_prob"],
                "distilbert": ["dropout", "attention_dropout", "seq_classif_dropout"],
                "distilbert_relu": ["dropout", "attention_dropout", "seq_classif_dropout"],
                "roberta": ["hidden_dropout_prob", "attention_probs_dropout_prob"],
                "xlm-roberta": ["hidden_dropout_prob", "attention_probs_dropout_prob"],
                "deberta-v2": ["hidden_dropout_prob", "attention_probs_dropout_prob"]}
# memfit's spelling of the head each case trains
HEADS = {"lm": "lm", "seqcls": "sequence_classification", "tokcls": "token_classification", "base": "none"}


def case(family, head, attention, precision, dropout=0.0, src=S, tgt=T, ckpt=False, lora=None):
    name = "-".join([family, head, attention, precision] + (["drop%g" % dropout] if dropout else []) +
                    (["S%dT%d" % (src, tgt)] if (src, tgt) != (S, T) else []) + (["ckpt"] if ckpt else []) +
                    (["qlora" if lora.get("bits") == 4 else "lora"] if lora else []))
    return dict(name=name, family=family, head=head, attention=attention, precision=precision,
                dropout=dropout, src=src, tgt=tgt, ckpt=ckpt, lora=lora)


def all_cases():
    cs = []
    for fam in ("t5", "t5v11", "bart"):
        for att in ("eager", "sdpa"):
            for prec in ("fp32", "bf16", "bf16_mixed"):
                cs.append(case(fam, "lm", att, prec))
        cs.append(case(fam, "lm", "eager", "fp32", dropout=0.1))
    cs.append(case("mt5", "lm", "eager", "bf16_mixed"))
    # lengths that are not multiples of 8 (T5's sdpa bias is padded) nor of 32 (the log-sum-exp)
    for fam in ("t5", "t5v11"):
        for prec in ("fp32", "bf16_mixed"):
            cs.append(case(fam, "lm", "sdpa", prec, src=44, tgt=36))
    cs.append(case("bart", "lm", "sdpa", "fp32", src=44, tgt=36))
    cs.append(case("t5", "seqcls", "eager", "fp32"))
    cs.append(case("bart", "seqcls", "sdpa", "bf16_mixed"))
    for fam in ("bert", "distilbert", "roberta", "xlm-roberta"):
        for att in ("eager", "sdpa"):
            for prec in ("fp32", "bf16", "bf16_mixed"):
                cs.append(case(fam, "seqcls", att, prec))
        cs.append(case(fam, "tokcls", "sdpa", "bf16_mixed"))
        cs.append(case(fam, "lm", "sdpa", "fp32"))
        cs.append(case(fam, "seqcls", "eager", "fp32", dropout=0.1))
    for prec in ("fp32", "bf16", "bf16_mixed"):
        cs.append(case("deberta-v2", "seqcls", "eager", prec))
    cs.append(case("deberta-v2", "tokcls", "eager", "fp32"))
    cs.append(case("deberta-v2", "lm", "eager", "bf16_mixed"))
    cs.append(case("deberta-v2", "seqcls", "eager", "fp32", dropout=0.1))
    # transformers' gradient checkpointing (each block a checkpoint region; not under autocast: the
    # emulated CUDA lists are not re-entered by the recomputation in backward)
    cs.append(case("t5", "lm", "eager", "fp32", ckpt=True))
    cs.append(case("t5v11", "lm", "sdpa", "bf16", ckpt=True))
    cs.append(case("bart", "lm", "sdpa", "fp32", ckpt=True))
    cs.append(case("bart", "lm", "eager", "bf16", ckpt=True))
    cs.append(case("roberta", "seqcls", "sdpa", "fp32", ckpt=True))
    cs.append(case("distilbert", "seqcls", "sdpa", "bf16", ckpt=True))
    cs.append(case("deberta-v2", "seqcls", "eager", "fp32", ckpt=True))
    # PEFT LoRA (r 8 on the query and value projections; a bf16 base, fp32 adapters, autocast)
    cs.append(case("t5v11", "lm", "eager", "bf16_mixed", lora={"r": 8, "targets": ["q", "v"]}))
    cs.append(case("t5v11", "lm", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["q", "v"]}))
    cs.append(case("bart", "lm", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["q_proj", "v_proj"]}))
    cs.append(case("roberta", "seqcls", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["query", "value"]}))
    cs.append(case("distilbert", "seqcls", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["q_lin", "v_lin"]}))
    cs.append(case("distilbert", "seqcls", "eager", "bf16", lora={"r": 8, "targets": ["q_lin", "v_lin"]}))
    cs.append(case("roberta", "seqcls", "eager", "bf16", lora={"r": 8, "targets": ["query", "value"]}))
    # ReLU keeps its output, and under autocast the down adapter (lin2) its own bf16 copy beside it
    cs.append(case("distilbert_relu", "seqcls", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["q_lin", "v_lin", "lin2"]}))
    # a bf16 base without autocast: PEFT casts each adapter's 16-bit input to its fp32 weights
    cs.append(case("t5v11", "lm", "eager", "bf16", lora={"r": 8, "targets": ["q", "k", "v", "o", "wo"]}))
    cs.append(case("bart", "lm", "sdpa", "bf16", lora={"r": 8, "targets": ["q_proj", "k_proj", "v_proj", "fc2"]}))
    # QLoRA: the same over a bitsandbytes NF4 base (double quantisation, bf16 compute), without
    # prepare_model_for_kbit_training: PEFT's bitsandbytes LoRA layers cast nothing under autocast.
    cs.append(case("t5v11", "lm", "eager", "bf16_mixed", lora={"r": 8, "targets": ["q", "v"], "bits": 4}))
    cs.append(case("bart", "lm", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["q_proj", "v_proj"], "bits": 4}))
    cs.append(case("roberta", "seqcls", "sdpa", "bf16_mixed", lora={"r": 8, "targets": ["query", "value"], "bits": 4}))
    return cs


# --------------------------------------------------------------------------- building
def hf_config_dict(c):
    d = dict(FAMILIES[c["family"]])
    for k in DROPOUT_KEYS[c["family"]]:
        d[k] = c["dropout"]
    if c["head"] in ("seqcls", "tokcls"):
        d["num_labels"] = NUM_LABELS
    return d


def build(c):
    from transformers import (AutoConfig, AutoModel, AutoModelForMaskedLM, AutoModelForSeq2SeqLM,
                              AutoModelForSequenceClassification, AutoModelForTokenClassification)
    d = hf_config_dict(c)
    cfg = AutoConfig.for_model(**d)
    cls = {"lm": AutoModelForSeq2SeqLM if c["family"] in SEQ2SEQ else AutoModelForMaskedLM,
           "seqcls": AutoModelForSequenceClassification, "tokcls": AutoModelForTokenClassification,
           "base": AutoModel}[c["head"]]
    dtype = torch.bfloat16 if c["precision"] == "bf16" else torch.float32
    kw = {} if c["family"] == "deberta-v2" else {"attn_implementation": c["attention"]}
    if c["lora"]:
        dtype = torch.bfloat16   # PEFT's recipe: the frozen base loaded in bf16 (see measure.py)
    model = cls.from_config(cfg, dtype=dtype, **kw)
    untie_like_checkpoint(model, d)
    if c["lora"] and c["lora"].get("bits") == 4:
        # the same weights saved and loaded back quantised, as a QLoRA run loads its checkpoint
        import tempfile
        from transformers import BitsAndBytesConfig
        quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
                                   bnb_4bit_use_double_quant=True)
        with tempfile.TemporaryDirectory() as folder:
            model.save_pretrained(folder)
            model = cls.from_pretrained(folder, quantization_config=quant, dtype=dtype, device_map="cpu", **kw)
    if c["ckpt"]:
        # Trainer(gradient_checkpointing=True): each block a non-reentrant checkpoint region
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if c["lora"]:
        from peft import LoraConfig, get_peft_model
        from compat import peft_without_torchao
        peft_without_torchao()
        model = get_peft_model(model, LoraConfig(r=c["lora"]["r"], lora_alpha=2 * c["lora"]["r"],
                                                 target_modules=c["lora"]["targets"], lora_dropout=0.0))
    model.train()
    return model


def untie_like_checkpoint(model, d):
    """transformers 5 forces T5Config.tie_word_embeddings = True (the flag now only chooses the
    decoder-output scaling, `scale_decoder_outputs`), so from_config ties lm_head to the shared
    embedding even for T5 v1.1 / Flan-T5 / mT5. Their checkpoints store a separate lm_head.weight,
    and from_pretrained does not tie two weights that both exist with different values
    (PreTrainedModel.tie_weights: "both are present in the checkpoints with different values, so
    we will NOT tie them"). A trained Flan-T5 therefore has its own head, as here."""
    if d["model_type"] in ("t5", "mt5") and d.get("tie_word_embeddings") is False and hasattr(model, "lm_head"):
        if model.lm_head.weight is model.get_input_embeddings().weight:
            w = model.lm_head.weight
            model.lm_head.weight = torch.nn.Parameter(w.detach().clone())


def make_inputs(c, seed):
    g = torch.Generator().manual_seed(seed)
    # no padding token in the ids: the masks HF builds from them stay all-ones (or None)
    src, tgt = c["src"], c["tgt"]
    ids = torch.randint(3, V, (B, src), generator=g)
    inputs = {"input_ids": ids}
    if c["family"] in SEQ2SEQ and c["head"] == "lm":
        inputs["labels"] = torch.randint(3, V, (B, tgt), generator=g)
    elif c["family"] in SEQ2SEQ and c["head"] == "seqcls":
        # BART / T5 sequence classification read the eos token of every row
        eos = 2 if c["family"] == "bart" else 1
        ids[:, -1] = eos
        inputs["labels"] = torch.randint(0, NUM_LABELS, (B,), generator=g)
    elif c["head"] == "seqcls":
        inputs["labels"] = torch.randint(0, NUM_LABELS, (B,), generator=g)
    elif c["head"] == "tokcls":
        inputs["labels"] = torch.randint(0, NUM_LABELS, (B, src), generator=g)
    elif c["head"] == "lm":
        inputs["labels"] = torch.randint(3, V, (B, src), generator=g)
    return inputs


# --------------------------------------------------------------------------- sdpa on CUDA
class EfficientAttention(torch.autograd.Function):
    """What torch's memory-efficient kernel saves on CUDA when sdpa receives a float attn_mask
    (T5's relative position bias, which needs a gradient). FlashAttention takes no arbitrary mask
    (sdp_utils.cpp check_for_attn_mask), so the dispatcher picks the memory-efficient kernel, after
    `preprocess_mask` (aten/src/ATen/native/transformers/attention.cpp) has padded the mask's last
    dimension to a multiple of 8 when its strides are not 8-aligned (`aligned_tensor<8>`,
    `pad_bias<8>`: a new padded storage, sliced back) and expanded it to (B, h, T, S) (a view). The
    kernel's forward saves query, key, value (the projections' outputs as BMHK views, no copy), that
    bias, the output (BMHK layout: the o projection reads it without a copy) and a float32
    log-sum-exp of shape (B, h, ceil(T / 32) * 32) (kAlignLSE), plus an 8-byte philox seed and
    offset (not counted, as in measure.py). On the CPU the same call takes the math path (T x T
    scores and softmax saved); this Function computes the values with that math and saves what the
    CUDA kernel saves."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale):
        S = mask.size(-1)
        aligned = all(mask.stride(i) % 8 == 0 for i in range(mask.dim() - 1)) and mask.stride(-1) == 1
        bias = mask if aligned else torch.nn.functional.pad(mask, (0, 8 - S % 8))[..., :S]
        bias = bias.expand(q.size(0), q.size(1), q.size(2), k.size(2))
        with torch.no_grad():
            scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale + bias.float()
            out = torch.matmul(torch.softmax(scores, dim=-1), v.float()).to(q.dtype)
        out = out.transpose(1, 2).contiguous().transpose(1, 2)   # BMHK storage
        lse = torch.zeros(q.size(0), q.size(1), -(-q.size(2) // 32) * 32, dtype=torch.float32)
        ctx.scale = scale
        ctx.mask_shape = mask.shape
        ctx.save_for_backward(q, k, v, bias, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, bias, out, lse = ctx.saved_tensors
        with torch.enable_grad():
            qq, kk, vv, bb = (t.detach().requires_grad_(True) for t in (q, k, v, bias))
            scores = torch.matmul(qq, kk.transpose(-1, -2)) * ctx.scale + bb
            o = torch.matmul(torch.softmax(scores.float(), dim=-1).to(vv.dtype), vv)
            gq, gk, gv, gb = torch.autograd.grad(o, (qq, kk, vv, bb), grad_out)
        gb = gb.sum_to_size(ctx.mask_shape)
        return gq, gk, gv, gb, None


_ORIG_SDPA = torch.nn.functional.scaled_dot_product_attention
_AMP = {"on": False}


def cuda_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
    if attn_mask is None or attn_mask.dtype == torch.bool:
        return _ORIG_SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                          scale=scale, **kw)
    if _AMP["on"]:   # CUDA autocast: sdpa is on the lower-precision list, every float input is cast
        query, key, value, attn_mask = (t.to(torch.bfloat16) for t in (query, key, value, attn_mask))
    if scale is None:
        scale = query.size(-1) ** -0.5
    return EfficientAttention.apply(query, key, value, attn_mask, scale)


# --------------------------------------------------------------------------- attribution
class Tracker(SaveTracker):
    """SaveTracker that also records whether a saved tensor is a constant made without autograd
    (dropout's CPU noise tensor is one) so the CUDA dropout rule can find it anywhere."""

    def pack(self, t):
        handle = super().pack(t)
        r = self.records[handle.rid]
        if r is not None:
            r["constant_float"] = bool(t.is_floating_point() and t.grad_fn is None and not t.requires_grad
                                       and t.dim() >= 2)
        return handle


STACK_RE = [
    re.compile(r"(?:^|\.)(encoder|decoder)\.block\.(\d+)(?:\.|$)"),    # T5
    re.compile(r"(?:^|\.)(encoder|decoder)\.layers\.(\d+)(?:\.|$)"),   # BART
    re.compile(r"(?:^|\.)(encoder)\.layer\.(\d+)(?:\.|$)"),            # BERT / RoBERTa / DeBERTa
    re.compile(r"(?:^|\.)transformer\.(layer)\.(\d+)(?:\.|$)"),        # DistilBERT
]
# the backbone's attribute in each task class; everything else (lm_head, classifier, pooler,
# ContextPooler's dropout, the loss, activation modules called without being registered) is head
BACKBONES = {"encoder", "decoder", "shared", "model", "transformer", "bert", "distilbert", "roberta", "deberta"}


def place(rec, names):
    """(region, stack, layer): region body (embeddings, blocks, final norms) or head."""
    mod = rec["module"]
    if mod.startswith("base_model.model."):   # PEFT's wrappers
        mod = mod[len("base_model.model."):]
        names = {n[len("base_model.model."):] for n in names if n.startswith("base_model.model.")}
    for rx in STACK_RE:
        m = rx.search(mod)
        if m:
            return "body", m.group(1), int(m.group(2))
    parts = mod.split(".") if mod else []
    if mod not in names or not parts or parts[0] not in BACKBONES or "pooler" in parts:
        return "head", None, None
    if len(parts) == 1 and parts[0] not in ("encoder", "decoder", "shared"):
        return "head", None, None   # the task class's own forward (the decoder-output scaling, the loss)
    return "body", None, None


def classify(tr):
    for r in tr.records:
        if r is None:
            continue
        # dropout's CPU noise: a constant float tensor, shaped like its input (DeBERTa's (B, S, 1)
        # input mask multiply is not one)
        if (r.get("constant_float") and r["owner"] is None and r["nodes"] and r["shape"][-1] > 1
                and all(n.startswith("MulBackward") for n in r["nodes"])):
            r["dropout_noise"] = True
        if any("FlashAttentionForCpu" in n for n in r["nodes"]) and len(r["shape"]) == 3 and r["dtype"] == "float32":
            r["sdpa_lse"] = True
    return tr.counted()


def op_tag(rec):
    nodes = sorted(set(rec["nodes"]))
    node = ",".join(n.replace("Backward0", "").replace("Backward1", "") for n in nodes) or "?"
    mod = rec["module"]
    for rx in STACK_RE:
        mod = rx.sub(".", mod)
    mod = mod.strip(".")
    return (mod + ":" if mod else "") + node


def record_checkpoint_inputs(model, out, tr):
    """Non-reentrant checkpointing keeps the tensors a region was called with (the closure of its
    recomputation), not through saved_tensors_hooks: record them as they are passed in
    (transformers' GradientCheckpointingLayer calls self._gradient_checkpointing_func(
    partial(forward, **kwargs), *args))."""
    from savetrack import storage_key

    def tensors(x):
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, (list, tuple)):
            for e in x:
                yield from tensors(e)
        elif isinstance(x, dict):
            for e in x.values():
                yield from tensors(e)

    for name, mod in model.named_modules():
        func = getattr(mod, "_gradient_checkpointing_func", None)
        if func is None or getattr(func, "_recording", False):
            continue

        def wrapper(fn, *args, _func=func, _name=name, **kw):
            if tr.active:
                found = list(tensors(args)) + list(tensors(getattr(fn, "keywords", {}))) + list(tensors(kw))
                for t in found:
                    ptr, nb = storage_key(t)
                    if nb and ptr not in tr.param_ptrs and ptr not in out:
                        out[ptr] = {"module": _name, "module_type": "checkpoint", "region": "body",
                                    "layer": None, "shape": list(t.shape),
                                    "dtype": str(t.dtype).replace("torch.", ""), "tensor_bytes": nb,
                                    "storage_bytes": nb, "storage_ptr": ptr, "owner": None,
                                    "requires_grad": bool(t.requires_grad), "nodes": ["CheckpointInput"],
                                    "weight_copy": None}
            return _func(fn, *args, **kw)
        wrapper._recording = True
        mod._gradient_checkpointing_func = wrapper


# --------------------------------------------------------------------------- one step
def run_once(c, amp):
    # sdpa as CUDA runs it, through backward too (checkpointing recomputes forward there)
    torch.nn.functional.scaled_dot_product_attention = cuda_sdpa
    try:
        return _run_once(c, amp)
    finally:
        torch.nn.functional.scaled_dot_product_attention = _ORIG_SDPA


def _run_once(c, amp):
    torch.manual_seed(0)
    model = build(c)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=False)
    call = model
    if amp:
        from accelerate.utils import convert_outputs_to_fp32
        call = convert_outputs_to_fp32(model.forward)

    @contextlib.contextmanager
    def amp_ctx():
        _AMP["on"] = amp
        try:
            with (_emulated() if amp else contextlib.nullcontext()):
                yield
        finally:
            _AMP["on"] = False

    def forward(inputs):
        out = call(**inputs)
        if c["head"] == "base":
            # a bare encoder (BertModel with its pooler) under a loss the training code would add:
            # the mean of the last hidden state saves nothing (its gradient is a constant)
            return out["last_hidden_state"].float().mean() + out["pooler_output"].float().mean()
        return out["loss"]

    with amp_ctx():
        loss = forward(make_inputs(c, 1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del loss
    inputs = make_inputs(c, 2)
    tr = Tracker({"": model})
    region_inputs = {}
    if c["ckpt"]:
        record_checkpoint_inputs(model, region_inputs, tr)
    with tr.measuring():
        with amp_ctx():
            loss = forward(inputs)
    tr.name_ops([loss])
    counted = classify(tr)
    if c["ckpt"]:
        # what each checkpoint region keeps instead of its saved tensors: its tensor arguments
        seen = {r["storage_ptr"] for r in counted}
        for ptr, rec in region_inputs.items():
            if ptr not in seen:
                counted.append(rec)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)

    body = head = 0
    names = set(tr.names.values())
    per_layer, outside = {}, {}
    rules = {}
    for r in counted:
        cb, rule = cuda_bytes(r, c["precision"])
        if rule:
            rules[rule] = rules.get(rule, 0) + cb - r["storage_bytes"]
        region, stack, layer = place(r, names)
        if region == "body":
            body += cb
        else:
            head += cb
        key = "%s.%d" % (stack, layer) if stack else region
        tgt = per_layer.setdefault(key, {}) if stack else outside.setdefault(region, {})
        e = tgt.setdefault(op_tag(r), {"cuda_bytes": 0, "n": 0, "shapes": []})
        e["cuda_bytes"] += cb
        e["n"] += 1
        desc = "%s%s" % (r["dtype"], r["shape"])
        if desc not in e["shapes"] and len(e["shapes"]) < 4:
            e["shapes"].append(desc)
    layers = {k: {"total": sum(e["cuda_bytes"] for e in v.values()), "ops": v} for k, v in sorted(per_layer.items())}
    n_params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    out = {"body_bytes_cuda": body, "head_bytes_cuda": head, "total_bytes_cuda": body + head,
           "cuda_rule_deltas": rules, "parameter_count": n_params, "layers": layers, "outside": outside,
           "model_class": type(model).__name__}
    if ARGS.explain:
        print("== %s" % c["name"], file=sys.stderr)
        for k, L in layers.items():
            if k.endswith(".0") or k.endswith(".1"):
                for tag, e in sorted(L["ops"].items(), key=lambda kv: -kv[1]["cuda_bytes"]):
                    print("  %-10s %-58s %8d %s" % (k, tag[:58], e["cuda_bytes"], e["shapes"]), file=sys.stderr)
        for region, ops in outside.items():
            for tag, e in sorted(ops.items(), key=lambda kv: -kv[1]["cuda_bytes"]):
                print("  %-10s %-58s %8d %s" % (region, tag[:58], e["cuda_bytes"], e["shapes"]), file=sys.stderr)
    return out


# --------------------------------------------------------------------------- memfit
LORA_TARGETS = {"q_lin": "q", "v_lin": "v", "lin2": "down", "wo": "down", "fc2": "down", "k_proj": "k", "q": "q", "v": "v", "k": "k", "o": "o", "q_proj": "q", "v_proj": "v", "query": "q", "value": "v",
                "query_proj": "q", "value_proj": "v"}


def memfit_settings(c, general_path=False):
    """The run's settings as memfit fields (applied over the imported tiny config.json, as
    `memfit --hf-config` does). BERT's importer keeps it on the general decoder-style path (its
    golden results are pinned), so BERT is also run with model.normalize_before false, the post-norm
    encoder model the other encoders use; `general_path` gives the importer's default."""
    model = {"output_head": HEADS[c["head"]]}
    if c["head"] in ("seqcls", "tokcls"):
        model["num_labels"] = NUM_LABELS
    if c["family"] == "bert" and not general_path:
        model["normalize_before"] = False
    training = {"micro_batch_size": B, "seq_len": c["src"], "precision": c["precision"],
                "attention": "eager" if c["attention"] == "eager" else "flash", "dropout": c["dropout"],
                "optimizer": "adamw", "checkpointing": "full" if c["ckpt"] else "none"}
    if c["family"] in SEQ2SEQ and c["head"] == "lm":
        training["target_len"] = c["tgt"]
    if c["lora"]:
        training["finetune"] = {"method": "lora", "lora_rank": c["lora"]["r"],
                                "lora_targets": [LORA_TARGETS[t] for t in c["lora"]["targets"]]}
        if c["lora"].get("bits") == 4:
            training["finetune"].update({"base_bits": 4, "quant_type": "nf4", "double_quant": True,
                                         "prepare_kbit": False})
    return {"model": model, "training": training}


def memfit_args(c, general_path=False):
    args = []
    for section, fields in memfit_settings(c, general_path).items():
        for key, value in fields.items():
            if isinstance(value, dict):
                for k2, v2 in value.items():
                    args += ["--set", "%s.%s.%s=%s" % (section, key, k2, json.dumps(v2) if isinstance(v2, (list, bool)) else v2)]
            else:
                args += ["--set", "%s.%s=%s" % (section, key, str(value).lower() if isinstance(value, bool) else value)]
    return args


def run_memfit(binary, c, general_path=False):
    if not binary:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(hf_config_dict(c), f)
        path = f.name
    try:
        p = subprocess.run([binary, "--hf-config", path] + memfit_args(c, general_path) + ["--json"],
                           capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    try:
        r = json.loads(p.stdout)
    except Exception:
        return {"error": (p.stderr or p.stdout).strip()[:400]}
    b = r["breakdown"]
    return {"activations": b["activations"], "logits_and_loss": b["logits_and_loss"],
            "parameter_count": r["parameter_count"]}


# --------------------------------------------------------------------------- parameter counts
PRESET_CLASSES = {"t5": "seq2seq", "mt5": "seq2seq", "bart": "seq2seq", "roberta": "base", "distilbert": "base",
                  "xlm-roberta": "base", "deberta-v2": "base"}


def parameter_counts():
    """sum(p.numel()) of the classes the presets stand for, built on the meta device from the
    vendored config.json files, plus each task head (num_labels 2, transformers' default)."""
    from transformers import (AutoConfig, AutoModel, AutoModelForMaskedLM, AutoModelForSeq2SeqLM,
                              AutoModelForSequenceClassification, AutoModelForTokenClassification)
    presets = json.load(open(os.path.join(ROOT, "tools", "presets.json")))
    out = {}
    for p in presets:
        d = json.load(open(os.path.join(ROOT, "tests", "fixtures", "hf", p["fixture"])))
        if d.get("model_type") not in PRESET_CLASSES:
            continue
        cfg = AutoConfig.for_model(**d)
        counts = {}
        with torch.device("meta"):
            seq2seq = d["model_type"] in ("t5", "mt5", "bart")
            m = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForMaskedLM).from_config(cfg)
            tied = m.get_output_embeddings().weight is m.get_input_embeddings().weight
            counts["lm_from_config"] = count(m)
            untie_like_checkpoint(m, d)
            counts["lm"] = count(m)
            counts["lm_head_tied"] = m.get_output_embeddings().weight is m.get_input_embeddings().weight
            counts["lm_head_tied_by_from_config"] = tied
            counts["none"] = count(AutoModel.from_config(cfg))
            counts["sequence_classification"] = count(AutoModelForSequenceClassification.from_config(cfg))
            if d["model_type"] != "bart":
                counts["token_classification"] = count(AutoModelForTokenClassification.from_config(cfg))
        out[p["id"]] = counts
    return out


def count(m):
    return sum(p.numel() for p in {id(p): p for p in m.parameters()}.values())


def write_test_cases(doc, path):
    """The measured cases as a C++ table for tests/core/encdec_test.cpp: the tiny config.json, the
    memfit settings, the measured saved bytes and memfit's own number (pinned)."""
    lines = ["// Generated by tools/frameworks/measure_encdec.py --write-test-cases from its measurements",
             "// (tools/frameworks/out/encdec.json): do not edit.",
             "// {name, config.json, memfit settings, measured saved bytes (CUDA-equivalent), memfit's}"]
    for r in doc["cases"]:
        if "measured" not in r or not (r.get("memfit") or {}).get("activations"):
            continue
        lines.append('{"%s",' % r["name"])
        lines.append(' R"(%s)",' % json.dumps(r["hf_config"], separators=(",", ":")))
        lines.append(' R"(%s)",' % json.dumps(r["memfit_settings"], separators=(",", ":")))
        lines.append(" %d, %d}," % (r["measured"]["body_bytes_cuda"], r["memfit"]["activations"]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--memfit", default=os.path.join(ROOT, "build", "cli", "memfit"))
    ap.add_argument("--no-memfit", action="store_true")
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--no-counts", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "encdec.json"))
    ap.add_argument("--write-test-cases", metavar="INC", nargs="?", const=os.path.join(
        ROOT, "tests", "core", "encdec_measured_cases.inc"),
        help="also write the C++ table tests/core/encdec_test.cpp reads")
    ARGS = ap.parse_args()
    cases = all_cases()
    if ARGS.list:
        print("\n".join(c["name"] for c in cases))
        return 0
    if ARGS.only:
        want = set(ARGS.only.split(","))
        cases = [c for c in cases if c["name"] in want or c["family"] in want]
    binary = None if ARGS.no_memfit else ARGS.memfit
    results = []
    for c in cases:
        t0 = time.time()
        r = {"name": c["name"], "case": c, "hf_config": hf_config_dict(c), "memfit_settings": memfit_settings(c)}
        try:
            r["measured"] = run_once(c, c["precision"] == "bf16_mixed")
        except Exception as e:
            import traceback
            r["error"] = "%s: %s" % (type(e).__name__, e)
            r["traceback"] = traceback.format_exc()[-1500:]
        r["memfit"] = run_memfit(binary, c)
        if c["family"] == "bert":
            r["memfit_bert_import_default"] = run_memfit(binary, c, general_path=True)
        m, mf = r.get("measured", {}), r.get("memfit") or {}
        if mf.get("activations") is not None and m:
            r["ratio_body"] = round(mf["activations"] / max(1, m["body_bytes_cuda"]), 5)
        r["seconds"] = round(time.time() - t0, 2)
        results.append(r)
        print("%-40s body %9s head %8s | memfit %9s  ratio %s %s" % (
            c["name"], m.get("body_bytes_cuda"), m.get("head_bytes_cuda"), mf.get("activations"),
            r.get("ratio_body"), r.get("error", mf.get("error", ""))[:120]), file=sys.stderr)
    import importlib.metadata as md
    doc = {"about": __doc__.strip().splitlines()[0],
           "versions": {k: md.version(k) for k in ("torch", "transformers", "accelerate")},
           "shapes": {"B": B, "S": S, "T": T, "V": V, "num_labels": NUM_LABELS},
           "families": FAMILIES, "cuda_rules": CUDA_RULES,
           "conventions": {"body": "embeddings, encoder and decoder blocks, final norms",
                           "head": "lm_head / classifier / pooler and the loss",
                           "bytes": "CUDA-equivalent bytes (measure.py's cuda_rules) of the storages "
                                    "autograd saves, each once, parameters and buffers excluded"},
           "cases": results}
    if not ARGS.no_counts and not ARGS.only:
        doc["parameter_counts"] = parameter_counts()
    os.makedirs(os.path.dirname(ARGS.out), exist_ok=True)
    with open(ARGS.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote %s (%d cases)" % (ARGS.out, len(results)), file=sys.stderr)
    if ARGS.write_test_cases:
        write_test_cases(doc, ARGS.write_test_cases)
        print("wrote %s" % ARGS.write_test_cases, file=sys.stderr)
    return 0


ARGS = None
if __name__ == "__main__":
    sys.exit(main())
