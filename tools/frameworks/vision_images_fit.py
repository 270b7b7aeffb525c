#!/usr/bin/env python3
"""Exact integer formulas for what images leave saved in the plain-ViT towers (Gemma 3's SigLIP,
LLaVA over CLIP, SigLIP and Pixtral, Mistral 3's Pixtral), checked against vision_images.py's
measurements (out/vision_images.json), case by case, to the byte.

    python3 tools/frameworks/vision_images_fit.py [out/vision_images.json]   # needs numpy

saved_bytes(case) is built term by term below (terms(): BLOCK, ROTARY, CKPT_INPUT, PIXELS,
LAYERNORM, LN_PRE, MASK, PROJ, each saying which module keeps what); every case must match exactly
(exit status 1 otherwise). Then, per (tower, precision, train_vision, checkpointing), numpy's least
squares refits the coefficients of the terms that group uses, free and real, over its cases (terms
equal on every case, as n·e and k·p·e without a class token, as one column): printed are the largest
residual (0 up to rounding where the terms explain the bytes), the rank over the columns (the configs
must tell every term apart) and the formula; "<-- check" marks a group whose rank falls short, whose
residual is not 0 or whose refit coefficients are not the integers.

Symbols (bytes; a case runs images_per_sample images of one micro-batch: the core's k is
micro_batch_size × images_per_sample):
  k images; p = patches an image (image_patches); t = tokens an image through the encoder (p, and
  CLIP's class token: p + 1); n = k·t tokens through the encoder; e width, ff MLP size, h heads,
  hd = e/h; L = blocks whose output is used: Gemma 3 all (depth), LLaVA and Mistral 3
  depth + 1 + vision_feature_layer (a negative index: -1 all, -2 all but the last; the blocks after
  it leave nothing, their graph dying in forward); P = channels·patch² pixels a patch; m = features
  an image gives the language model (image_tokens: Gemma 3's mm_tokens_per_image, LLaVA's p, Mistral
  3's p / spatial_merge_size²); d = the language model's width; [k=1]: 1 when a single image goes
  through (a micro-batch of one image), else 0.
"""

import collections
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

BASIS = {
    "neL": lambda V: V["n"] * V["e"] * V["L"], "nfL": lambda V: V["n"] * V["ff"] * V["L"],
    "nhL": lambda V: V["n"] * V["h"] * V["L"], "nL": lambda V: V["n"] * V["L"],
    "nhd": lambda V: V["n"] * V["hd"], "nnL": lambda V: V["n"] ** 2 * V["L"], "nn": lambda V: V["n"] ** 2,
    "kpP": lambda V: V["k"] * V["p"] * V["P"], "ne": lambda V: V["n"] * V["e"], "n": lambda V: V["n"],
    "kpe": lambda V: V["k"] * V["p"] * V["e"], "kp": lambda V: V["k"] * V["p"],
    "kme": lambda V: V["k"] * V["m"] * V["e"], "kmd": lambda V: V["k"] * V["m"] * V["d"],
    "km": lambda V: V["k"] * V["m"], "e": lambda V: V["e"], "k1e": lambda V: int(V["k"] == 1) * V["e"],
}
NAMES = {"neL": "L·n·e", "nfL": "L·n·ff", "nhL": "L·n·h", "nL": "L·n", "nhd": "n·hd", "nnL": "L·n²", "nn": "n²",
         "kpP": "k·p·P", "ne": "n·e", "n": "n", "kpe": "k·p·e", "kp": "k·p", "kme": "k·m·e", "kmd": "k·m·d",
         "km": "k·m", "e": "e", "k1e": "[k=1]·e"}
PRECISIONS = ("fp32", "bf16_mixed", "bf16")
PARTS = ("none", "projector", "encoder", "all")

# ---------------------------------------------------------------- what each module keeps, a token
# An encoder block that trains, a token: (e, ff, 1) coefficients, and 4·h (SDPA's fp32 log-sum-exp, a
# head) in every precision. SigLIP (Gemma 3's, LLaVA-Interleave's): LayerNorm 1's input and
# mean/rstd, q/k/v's input (its output), SDPA's q, k, v and output (out_proj's input is that output,
# the same storage), LayerNorm 2's, fc1's input, GELU(tanh)'s input, fc2's input. CLIP: the same with
# quick_gelu (x·sigmoid(1.702x): its input, the sigmoid and the product, 3·ff). Pixtral: two RMSNorms
# (input, rsqrt, the normalised input for the weight, its output for the linears), q_proj's input,
# SDPA's rotated q and k, v, output, gate's input, SiLU's input and output, up's output, down's input.
# Under autocast every linear casts its input apart (q, k, v: three 16-bit copies) and norms run in
# fp32; a LayerNorm's mean and rstd are fp32 in every precision, as CUDA's kernel keeps them (the
# CPU's keeps a 16-bit input's in its dtype: vision_images.py counts them as on the GPU).
BLOCK = {"siglip": {"fp32": (32, 8, 16), "bf16_mixed": (24, 4, 16), "bf16": (16, 4, 16)},
         "clip": {"fp32": (32, 12, 16), "bf16_mixed": (24, 6, 16), "bf16": (16, 6, 16)},
         "pixtral": {"fp32": (40, 16, 8), "bf16_mixed": (34, 8, 8), "bf16": (24, 8, 8)}}
# Pixtral's rotary cos and sin, (n, hd) each, kept once (every block's rotation saves the same two).
ROTARY = {"fp32": 8, "bf16_mixed": 8, "bf16": 4}
# Under checkpointing, each block's input (the residual stream: fp32 under autocast).
CKPT_INPUT = {"fp32": 4, "bf16_mixed": 4, "bf16": 2}
# The patch convolution's input (pixels; autocast's 16-bit copy of them), when its weight trains.
PIXELS = {"fp32": 4, "bf16_mixed": 2, "bf16": 2}
# A LayerNorm over n tokens (CLIP's pre_layrnorm, SigLIP's post_layernorm under Gemma 3): (e, 1).
LAYERNORM = {"fp32": (4, 8), "bf16_mixed": (4, 8), "bf16": (2, 8)}
# Pixtral's ln_pre (an RMSNorm over n): trained (its input in fp32, rsqrt, the normalised input), frozen.
LN_PRE = {True: {"fp32": (8, 4), "bf16_mixed": (6, 4), "bf16": (6, 4)}, False: (4, 4)}
# Pixtral's SDPA attention mask (n × n, the block-diagonal mask of the images concatenated into one
# sequence), kept once; under autocast each block casts it to 16 bits apart (2·n² a block), and under
# checkpointing the checkpoint keeps the fp32 mask it is given.
MASK = {"fp32": 4, "bf16": 2}
# The projectors, by which of encoder and projector the graph reaches: "all" (the encoder's output
# needs grad and the projector trains), "encoder" (needs grad, the projector frozen), "alone" (the
# projector trains on an output that needs no grad). {term: coefficient}.
PROJ = {
    # Gemma3MultiModalProjector: AvgPool2d's input (a contiguous copy, k·p·e), the RMSNorm's fp32 input
    # (pow), its rsqrt (fp32, a pooled token), x·rsqrt (for the weight), (1 + weight) in fp32 (e, once),
    # the matmul's input (16-bit in AMP and bf16); frozen projection weight: its own copy (left out).
    "gemma3": {
        "all": {"fp32": {"kpe": 4, "kme": 12, "km": 4, "e": 4}, "bf16_mixed": {"kpe": 4, "kme": 10, "km": 4, "e": 4},
                "bf16": {"kpe": 2, "kme": 10, "km": 4, "e": 4}},
        "encoder": {"fp32": {"kpe": 4, "kme": 4, "km": 4, "e": 4}, "bf16_mixed": {"kpe": 4, "kme": 4, "km": 4, "e": 4},
                    "bf16": {"kpe": 2, "kme": 4, "km": 4, "e": 4}},
        "alone": {"fp32": {"kme": 8}, "bf16_mixed": {"kme": 6}, "bf16": {"kme": 6}}},
    # LlavaMultiModalProjector over CLIP with strategy "default": linear_1's input, the selected layer
    # without CLS (one image: a view of the whole hidden state, CLS included, (p + 1)·e; more: a copy,
    # p·e; under autocast always its 16-bit copy), GELU's input, linear_2's input (k·m·d each, m = p).
    "clip": {
        "all": {"fp32": {"kpe": 4, "k1e": 4, "kmd": 8}, "bf16_mixed": {"kpe": 2, "kmd": 4},
                "bf16": {"kpe": 2, "k1e": 2, "kmd": 4}},
        "encoder": {"fp32": {"kmd": 4}, "bf16_mixed": {"kmd": 2}, "bf16": {"kmd": 2}}},
    # The same over SigLIP or Pixtral, strategy "full": linear_1's input is the selected hidden state itself.
    "siglip": {
        "all": {"fp32": {"kpe": 4, "kmd": 8}, "bf16_mixed": {"kpe": 2, "kmd": 4}, "bf16": {"kpe": 2, "kmd": 4}},
        "encoder": {"fp32": {"kmd": 4}, "bf16_mixed": {"kmd": 2}, "bf16": {"kmd": 2}}},
    # Mistral3MultiModalProjector: the RMSNorm over every patch (fp32 input, rsqrt, the normalised input
    # for the weight), the patch merger's input (the unfolded grid, k·p·e), linear_1's input (k·m·e),
    # GELU's and linear_2's inputs (k·m·d).
    "mistral3": {
        "all": {"fp32": {"kpe": 12, "kp": 4, "kme": 4, "kmd": 8}, "bf16_mixed": {"kpe": 10, "kp": 4, "kme": 2, "kmd": 4},
                "bf16": {"kpe": 8, "kp": 4, "kme": 2, "kmd": 4}},
        "encoder": {"fp32": {"kpe": 4, "kp": 4, "kmd": 4}, "bf16_mixed": {"kpe": 4, "kp": 4, "kmd": 2},
                    "bf16": {"kpe": 4, "kp": 4, "kmd": 2}},
        "alone": {"fp32": {"kpe": 8, "kme": 4, "kmd": 8}, "bf16_mixed": {"kpe": 6, "kme": 2, "kmd": 4},
                  "bf16": {"kpe": 4, "kme": 2, "kmd": 4}}},
}
PROJ["pixtral"] = PROJ["siglip"]
for family in ("clip", "siglip"):
    PROJ[family]["alone"] = PROJ[family]["all"]  # linear_1 keeps its input for its weight either way


def tower(case):
    """(family: the tower, encoder: the ViT, the projector's table)."""
    encoder = case["hf_config"]["vision_config"]["model_type"].replace("_vision_model", "")
    if case["model_type"] == "gemma3":
        return "gemma3", encoder, "gemma3"
    if case["model_type"] == "mistral3":
        return "mistral3", encoder, "mistral3"
    return "llava_" + encoder, encoder, encoder


def variables(case):
    h = case["hf_config"]
    v, t = h["vision_config"], h["text_config"]
    family, encoder, _ = tower(case)
    depth = v["num_hidden_layers"]
    layer = h.get("vision_feature_layer", -1) if family != "gemma3" else -1
    k, p = case["images_per_sample"], case["image_patches"]
    cls = int(encoder == "clip")
    assert case.get("encoder_tokens", p + cls) == p + cls
    return {"k": k, "p": p, "t": p + cls, "n": k * (p + cls), "e": v["hidden_size"], "ff": v["intermediate_size"],
            "h": v["num_attention_heads"], "hd": v["hidden_size"] // v["num_attention_heads"],
            "L": depth + 1 + layer if layer < 0 else layer, "P": v.get("num_channels", 3) * v["patch_size"] ** 2,
            "m": case["image_tokens"], "d": t["hidden_size"]}


def terms(case):
    """{basis term: integer coefficient} for the case's tower, precision, part and checkpointing."""
    family, encoder, proj = tower(case)
    prec, part, ckpt = case["precision"], case["train_vision"], case["checkpointing"] == "full"
    trains_encoder, trains_projector = part in ("encoder", "all"), part in ("projector", "all")
    # The encoder's graph: its weights train, or checkpointing's enable_input_require_grads makes the
    # patch embedding's output need grad (SigLIP's and CLIP's get_input_embeddings is the patch
    # embedding, Pixtral's the patch convolution: every ViT tower here is reached).
    graph = trains_encoder or ckpt
    out = collections.Counter()
    if trains_encoder:
        out["kpP"] += PIXELS[prec]
    if graph:
        if ckpt:
            out["neL"] += CKPT_INPUT[prec]
        else:  # the encoder trains
            be, bf, b1 = BLOCK[encoder][prec]
            out.update({"neL": be, "nfL": bf, "nhL": 4, "nL": b1})
            if encoder == "pixtral":
                out["nhd"] += ROTARY[prec]
        if family == "gemma3" or encoder == "clip":  # SigLIP's post_layernorm (Gemma 3), CLIP's pre_layrnorm
            ce, c1 = LAYERNORM[prec]
            out.update({"ne": ce, "n": c1})
        if encoder == "pixtral":
            ce, c1 = LN_PRE[True][prec] if trains_encoder else LN_PRE[False]
            out.update({"ne": ce, "n": c1})
            if prec == "bf16_mixed":
                out["nn" if ckpt else "nnL"] += 4 if ckpt else 2
            else:
                out["nn"] += MASK[prec]
        out.update(PROJ[proj]["all" if trains_projector else "encoder"][prec])
    elif trains_projector:
        out.update(PROJ[proj]["alone"][prec])
    return {k: v for k, v in out.items() if v}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out", "vision_images.json")
    doc = json.load(open(path))
    cases = [dict(c, hf_config=doc["models"][c["model"]]) for c in doc["cases"]
             if c["model_type"] in ("gemma3", "llava", "mistral3")]
    groups = collections.defaultdict(list)
    off = 0
    for c in cases:
        V, T = variables(c), terms(c)
        model = sum(coef * BASIS[b](V) for b, coef in T.items())
        if model != c["saved_bytes"]:
            off += 1
            print(f"OFF {tower(c)[0]} {c['precision']} {c['train_vision']} {c['checkpointing']} k={V['k']} p={V['p']}: "
                  f"model {model:,}, measured {c['saved_bytes']:,}")
        groups[(tower(c)[0], c["precision"], c["train_vision"], c["checkpointing"])].append((V, T, c["saved_bytes"]))
    print(f"{len(cases)} ViT cases, {len(cases) - off} exact to the byte, {off} off\n")
    print(f"{'tower':14s} {'precision':10s} {'part':9s} {'ckpt':4s} {'cases':>5s} {'rank':>5s} {'max |res|':>9s}  bytes")
    worst = 0.0
    for key in sorted(groups, key=lambda k: (k[0], PRECISIONS.index(k[1]), PARTS.index(k[2]), k[3])):
        rows = groups[key]
        names = sorted({b for _, T, _ in rows for b in T}, key=list(BASIS).index)
        assert all(set(T) == set(names) for _, T, _ in rows)
        y = np.array([b for _, _, b in rows], dtype=float)
        # Terms equal on every case are one column (without a class token n = k·p: n·e is k·p·e, n is
        # k·p): their coefficients add up there.
        columns = {}
        for b in names:
            col = tuple(BASIS[b](V) for V, _, _ in rows)
            columns.setdefault(col, []).append(b)
        merged = list(columns.values())
        if merged:
            X = np.array(list(columns), dtype=float).T
            coef, *_ = np.linalg.lstsq(X, y, rcond=None)
            res = np.abs(X @ coef - y).max()
            rank = np.linalg.matrix_rank(X)
            same = np.allclose(coef, [sum(rows[0][1][b] for b in bs) for bs in merged], atol=1e-6)
        else:
            res, rank, same = np.abs(y).max(), 0, True
        worst = max(worst, res)
        formula = " + ".join(f"{rows[0][1][b]}·{NAMES[b]}" for b in names) or "0"
        flag = "" if rank == len(merged) and same and res < 1e-6 else "   <-- check"
        print(f"{key[0]:14s} {key[1]:10s} {key[2]:9s} {key[3]:4s} {len(rows):5d} {rank:2d}/{len(merged):<2d} "
              f"{res:9.2g}  {formula}{flag}")
    print(f"\nlargest least-squares residual over the groups: {worst:.3g} bytes")
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
