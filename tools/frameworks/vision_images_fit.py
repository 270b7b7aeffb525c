#!/usr/bin/env python3
"""Exact integer formulas for what images leave saved in the plain-ViT towers (Gemma 3's SigLIP,
LLaVA over CLIP, SigLIP and Pixtral, Mistral 3's Pixtral), checked against vision_images.py's
measurements (out/vision_images.json), case by case, to the byte; and the Qwen-VL towers' cases held
to core/src/vision.cpp's vision_saved (its Qwen part, re-implemented below with its kImageTerms
table, KIMAGE, and the ckpt_first_e field as QWEN_CKPT_FIRST).

    python3 tools/frameworks/vision_images_fit.py [out/vision_images.json]   # needs numpy

saved_bytes(case) is built term by term below (terms(): BLOCK, ROTARY, CKPT_INPUT, PIXELS,
LAYERNORM, LN_PRE, MASK, PROJ, each saying which module keeps what); every case must match exactly
(exit status 1 otherwise). Then, per (tower, precision, train_vision, checkpointing), numpy's least
squares refits the coefficients of the terms that group uses, free and real, over its cases (terms
equal on every case, as n·e and k·p·e without a class token, as one column): printed are the largest
residual (0 up to rounding where the terms explain the bytes), the rank over the columns (the configs
must tell every term apart) and the formula; "<-- check" marks a group whose rank falls short, whose
residual is not 0 or whose refit coefficients are not the integers. Then every Qwen case against
qwen_saved() (exit status 1 if one is off).

The precisions (columns): fp32, bf16_mixed (fp32 weights under CUDA's autocast), bf16 (16-bit
weights, no autocast), bf16_autocast (16-bit weights under autocast: HF Trainer's bf16=True over a
model loaded in bf16), and QLoRA's 4-bit base (precision qlora_nf4: bitsandbytes NF4, bf16 compute,
under autocast, the tower frozen), as loaded ("qlora_nf4") and after peft's
prepare_model_for_kbit_training ("qlora_nf4_kbit", the case's prepare_kbit true). What sets each
column apart is the dtype the residual stream runs in, which the norms and the linears decide:
- under autocast a LayerNorm runs in fp32 whatever its weights (its output fp32), an nn.Linear in 16
  bits (its output bf16), while an RMSNorm returns weight · x.to(input dtype): bf16 with a bf16 weight,
  fp32 with an fp32 one (or on an fp32 input);
- bitsandbytes' Linear4bit computes in bf16 and casts its output back to its input's dtype
  (Linear4bit.forward: ... .to(inp_dtype)), so a 4-bit linear after an fp32 norm returns fp32, where an
  nn.Linear under autocast would return bf16. The MLP after a LayerNorm (SigLIP, CLIP, Qwen2-VL) or
  an fp32-weighted RMSNorm (after prepare_model_for_kbit_training: Qwen2.5-VL, Pixtral) then adds fp32
  to the residual: the stream turns fp32 in the first block and stays so;
- a frozen Linear4bit keeps nothing for backward: bitsandbytes' MatMul4Bit saves no input (no weight
  gradient) and holds its packed 4-bit weight B as a ctx attribute (ctx.tensors = (None, B)), not
  through save_for_backward, so no saved-tensor hook sees it, and it dequantises B again in backward
  (no dequantised copy outlives forward). Nothing of the 4-bit weights is among the saves; autocast's
  casts of the fp32 parameters prepare_model_for_kbit_training makes (the patch convolution's weight,
  the norms') are weight copies, left out as everywhere.

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
PRECISIONS = ("fp32", "bf16_mixed", "bf16", "bf16_autocast", "qlora_nf4", "qlora_nf4_kbit")
PARTS = ("none", "projector", "encoder", "all")


def precision(case):
    """The case's column: its precision, and qlora_nf4_kbit for a 4-bit base after
    prepare_model_for_kbit_training."""
    return case["precision"] + ("_kbit" if case.get("prepare_kbit") else "")


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
# bf16_autocast (16-bit weights under autocast): SigLIP and CLIP keep what they keep under AMP, the
# same tensors in the same dtypes (a LayerNorm under autocast runs in fp32 whatever its weights: it
# keeps autocast's fp32 copy of a bf16 input where AMP keeps the fp32 input itself, and hands fp32 to
# the linears, which cast it apart); Pixtral keeps what it keeps in bf16 weights (autocast changes
# nothing there: its RMSNorms compute in fp32 by hand and return weight · x in the stream's bf16, one
# 16-bit input shared by q, k and v; every linear's operands are 16-bit already).
BLOCK = {"siglip": {"fp32": (32, 8, 16), "bf16_mixed": (24, 4, 16), "bf16": (16, 4, 16), "bf16_autocast": (24, 4, 16)},
         "clip": {"fp32": (32, 12, 16), "bf16_mixed": (24, 6, 16), "bf16": (16, 6, 16), "bf16_autocast": (24, 6, 16)},
         "pixtral": {"fp32": (40, 16, 8), "bf16_mixed": (34, 8, 8), "bf16": (24, 8, 8), "bf16_autocast": (24, 8, 8)}}
# Pixtral's rotary cos and sin, (n, hd) each, kept once (every block's rotation saves the same two), in
# the dtype of the patch embeddings (ln_pre's output: fp32 under AMP, bf16 with 16-bit weights).
ROTARY = {"fp32": 8, "bf16_mixed": 8, "bf16": 4, "bf16_autocast": 4}
# Under checkpointing, each block's input: the residual stream, by encoder. Under AMP fp32 (fp32
# position embeddings or ln_pre weight added in). With 16-bit weights under autocast: SigLIP's bf16
# (the convolution's bf16 output plus a bf16 position embedding), CLIP's fp32 (its pre_layrnorm, a
# LayerNorm under autocast, returns fp32, and bf16 block outputs added to fp32 stay fp32), Pixtral's
# bf16 (ln_pre returns bf16). Under a 4-bit base: SigLIP's fp32 (the MLP's Linear4bit layers take
# LayerNorm 2's fp32 output and return fp32: the first block adds fp32 to the stream) but for the
# first block's input (CKPT_FIRST), CLIP's fp32, Pixtral's bf16 (RMSNorms with bf16 weights: every
# Linear4bit sees bf16); after prepare_model_for_kbit_training all fp32 from the first block on
# (SigLIP's position embedding, Pixtral's ln_pre weight fp32).
CKPT_INPUT = {
    "siglip": {"fp32": 4, "bf16_mixed": 4, "bf16": 2, "bf16_autocast": 2, "qlora_nf4": 4, "qlora_nf4_kbit": 4},
    "clip": {"fp32": 4, "bf16_mixed": 4, "bf16": 2, "bf16_autocast": 4, "qlora_nf4": 4, "qlora_nf4_kbit": 4},
    "pixtral": {"fp32": 4, "bf16_mixed": 4, "bf16": 2, "bf16_autocast": 2, "qlora_nf4": 2, "qlora_nf4_kbit": 4}}
# The first checkpointed block's input where it differs from the others' (n·e, once): SigLIP's under
# a 4-bit base as loaded enters bf16 (the patch embedding's convolution under autocast, plus the bf16
# position embedding) and leaves fp32: 2 bytes less than CKPT_INPUT's 4.
CKPT_FIRST = {"siglip": {"qlora_nf4": -2}}
# The patch convolution's input (pixels; autocast's 16-bit copy of them), when its weight trains.
PIXELS = {"fp32": 4, "bf16_mixed": 2, "bf16": 2, "bf16_autocast": 2}
# A LayerNorm over n tokens (CLIP's pre_layrnorm, SigLIP's post_layernorm under Gemma 3): (e, 1). Under
# autocast an fp32 input (the input itself or autocast's fp32 copy of a bf16 one) and fp32 mean, rstd.
LAYERNORM = {"fp32": (4, 8), "bf16_mixed": (4, 8), "bf16": (2, 8), "bf16_autocast": (4, 8), "qlora_nf4": (4, 8),
             "qlora_nf4_kbit": (4, 8)}
# Pixtral's ln_pre (an RMSNorm over n): trained (its input in fp32, rsqrt, the normalised input), frozen
# (its fp32 input and rsqrt: every precision, the 4-bit base's included).
LN_PRE = {True: {"fp32": (8, 4), "bf16_mixed": (6, 4), "bf16": (6, 4), "bf16_autocast": (6, 4)}, False: (4, 4)}
# Pixtral's SDPA attention mask (n × n, the block-diagonal mask of the images concatenated into one
# sequence, in the patch embeddings' dtype), kept once; under AMP each block casts the fp32 mask to 16
# bits apart (2·n² a block), and under checkpointing the checkpoint keeps the fp32 mask it is given.
# With 16-bit weights under autocast, and under a 4-bit base as loaded, the mask is bf16 (nothing to
# cast); after prepare_model_for_kbit_training fp32 (ln_pre's fp32 weight), kept by the checkpoint.
MASK = {"fp32": 4, "bf16": 2, "bf16_autocast": 2, "qlora_nf4": 2, "qlora_nf4_kbit": 4}
# The projectors, by which of encoder and projector the graph reaches: "all" (the encoder's output
# needs grad and the projector trains), "encoder" (needs grad, the projector frozen), "alone" (the
# projector trains on an output that needs no grad). {term: coefficient}. bf16_autocast: Gemma 3's,
# LLaVA's as under AMP (the encoder's output is fp32 or its linears cast it: SigLIP's post_layernorm
# returns fp32, and so does CLIP's stream); Mistral 3's as in bf16 weights (its RMSNorm returns bf16:
# the patch merger's input and the normalised input are 16-bit). A 4-bit base (frozen, "encoder"
# only): the frozen Linear4bit layers keep nothing (no input: no weight gradient), and their outputs
# carry their inputs' dtype, so the activations between them follow the encoder's output: fp32
# (SigLIP's, CLIP's; Pixtral's after prepare_model_for_kbit_training) or bf16 (Pixtral's as loaded).
PROJ = {
    # Gemma3MultiModalProjector: AvgPool2d's input (a contiguous copy, k·p·e), the RMSNorm's fp32 input
    # (pow), its rsqrt (fp32, a pooled token), x·rsqrt (for the weight), (1 + weight) in fp32 (e, once),
    # the matmul's input (16-bit in AMP and bf16); frozen projection weight: its own copy (left out).
    # A 4-bit base: the same as a frozen projector under AMP (post_layernorm's output is fp32; the
    # projection weight, a Parameter, is not quantised and keeps nothing frozen).
    "gemma3": {
        "all": {"fp32": {"kpe": 4, "kme": 12, "km": 4, "e": 4}, "bf16_mixed": {"kpe": 4, "kme": 10, "km": 4, "e": 4},
                "bf16": {"kpe": 2, "kme": 10, "km": 4, "e": 4}, "bf16_autocast": {"kpe": 4, "kme": 10, "km": 4, "e": 4}},
        "encoder": {"fp32": {"kpe": 4, "kme": 4, "km": 4, "e": 4}, "bf16_mixed": {"kpe": 4, "kme": 4, "km": 4, "e": 4},
                    "bf16": {"kpe": 2, "kme": 4, "km": 4, "e": 4}, "bf16_autocast": {"kpe": 4, "kme": 4, "km": 4, "e": 4},
                    "qlora_nf4": {"kpe": 4, "kme": 4, "km": 4, "e": 4},
                    "qlora_nf4_kbit": {"kpe": 4, "kme": 4, "km": 4, "e": 4}},
        "alone": {"fp32": {"kme": 8}, "bf16_mixed": {"kme": 6}, "bf16": {"kme": 6}, "bf16_autocast": {"kme": 6}}},
    # LlavaMultiModalProjector over CLIP with strategy "default": linear_1's input, the selected layer
    # without CLS (one image: a view of the whole hidden state, CLS included, (p + 1)·e; more: a copy,
    # p·e; under autocast always its 16-bit copy), GELU's input, linear_2's input (k·m·d each, m = p).
    # A 4-bit base: GELU's input only, fp32 (linear_1, a Linear4bit, returns the fp32 stream's dtype).
    "clip": {
        "all": {"fp32": {"kpe": 4, "k1e": 4, "kmd": 8}, "bf16_mixed": {"kpe": 2, "kmd": 4},
                "bf16": {"kpe": 2, "k1e": 2, "kmd": 4}, "bf16_autocast": {"kpe": 2, "kmd": 4}},
        "encoder": {"fp32": {"kmd": 4}, "bf16_mixed": {"kmd": 2}, "bf16": {"kmd": 2}, "bf16_autocast": {"kmd": 2},
                    "qlora_nf4": {"kmd": 4}, "qlora_nf4_kbit": {"kmd": 4}}},
    # The same over SigLIP or Pixtral, strategy "full": linear_1's input is the selected hidden state itself.
    # A 4-bit base: GELU's input in the encoder output's dtype (SigLIP's fp32; Pixtral's bf16 as loaded).
    "siglip": {
        "all": {"fp32": {"kpe": 4, "kmd": 8}, "bf16_mixed": {"kpe": 2, "kmd": 4}, "bf16": {"kpe": 2, "kmd": 4},
                "bf16_autocast": {"kpe": 2, "kmd": 4}},
        "encoder": {"fp32": {"kmd": 4}, "bf16_mixed": {"kmd": 2}, "bf16": {"kmd": 2}, "bf16_autocast": {"kmd": 2},
                    "qlora_nf4": {"kmd": 4}, "qlora_nf4_kbit": {"kmd": 4}}},
    # Mistral3MultiModalProjector: the RMSNorm over every patch (fp32 input, rsqrt, the normalised input
    # for the weight), the patch merger's input (the unfolded grid, k·p·e), linear_1's input (k·m·e),
    # GELU's and linear_2's inputs (k·m·d). A 4-bit base: the RMSNorm's fp32 input and rsqrt, and GELU's
    # input in Pixtral's stream dtype (bf16 as loaded, fp32 after prepare_model_for_kbit_training).
    "mistral3": {
        "all": {"fp32": {"kpe": 12, "kp": 4, "kme": 4, "kmd": 8}, "bf16_mixed": {"kpe": 10, "kp": 4, "kme": 2, "kmd": 4},
                "bf16": {"kpe": 8, "kp": 4, "kme": 2, "kmd": 4}, "bf16_autocast": {"kpe": 8, "kp": 4, "kme": 2, "kmd": 4}},
        "encoder": {"fp32": {"kpe": 4, "kp": 4, "kmd": 4}, "bf16_mixed": {"kpe": 4, "kp": 4, "kmd": 2},
                    "bf16": {"kpe": 4, "kp": 4, "kmd": 2}, "bf16_autocast": {"kpe": 4, "kp": 4, "kmd": 2},
                    "qlora_nf4": {"kpe": 4, "kp": 4, "kmd": 2}, "qlora_nf4_kbit": {"kpe": 4, "kp": 4, "kmd": 4}},
        "alone": {"fp32": {"kpe": 8, "kme": 4, "kmd": 8}, "bf16_mixed": {"kpe": 6, "kme": 2, "kmd": 4},
                  "bf16": {"kpe": 4, "kme": 2, "kmd": 4}, "bf16_autocast": {"kpe": 4, "kme": 2, "kmd": 4}}},
}
PROJ["pixtral"] = {part: dict(columns) for part, columns in PROJ["siglip"].items()}
PROJ["pixtral"]["encoder"]["qlora_nf4"] = {"kmd": 2}  # Pixtral's stream is bf16 under a 4-bit base as loaded
for family in ("clip", "siglip", "pixtral"):
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
    prec, part, ckpt = precision(case), case["train_vision"], case["checkpointing"] == "full"
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
            out["neL"] += CKPT_INPUT[encoder][prec]
            out["ne"] += CKPT_FIRST.get(encoder, {}).get(prec, 0)
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


# ---------------------------------------------------------------- the Qwen-VL towers
# core/src/vision.cpp's vision_saved for Qwen2-VL, Qwen2.5-VL and Qwen3-VL, re-implemented (qwen_saved)
# with its ImageTerms fields in the struct's order and kImageTerms[tower][column] copied for fp32,
# bf16_mixed (AMP) and bf16; the columns after them measured by vision_images.py and set here.
FIELDS = ("block_e", "block_ff", "block_1", "ckpt_e", "out_e", "out_1", "deepstack_e", "deepstack_1",
          "enc_out_e", "enc_out_1", "enc_deepstack_e", "enc_deepstack_1", "proj_e", "proj_1",
          "proj_deepstack_e", "proj_deepstack_1")
KIMAGE = {
    "qwen2_vl": {
        "fp32": (44, 12, 16, 4, 16, 8, 0, 0, 8, 8, 0, 0, 16, 8, 0, 0),
        "bf16_mixed": (26, 6, 16, 2, 10, 8, 0, 0, 6, 8, 0, 0, 10, 8, 0, 0),
        "bf16": (22, 6, 16, 2, 8, 8, 0, 0, 4, 8, 0, 0, 8, 8, 0, 0)},
    "qwen2_5_vl": {
        "fp32": (52, 16, 8, 4, 20, 8, 0, 0, 8, 8, 0, 0, 16, 2, 0, 0),
        "bf16_mixed": (32, 8, 8, 2, 12, 8, 0, 0, 6, 8, 0, 0, 8, 2, 0, 0),
        "bf16": (30, 8, 8, 2, 12, 8, 0, 0, 6, 8, 0, 0, 8, 2, 0, 0)},
    "qwen3_vl": {
        "fp32": (44, 8, 16, 4, 16, 56, 12, 2, 8, 56, 4, 2, 16, 8, 16, 2),
        "bf16_mixed": (26, 4, 16, 2, 10, 56, 10, 2, 6, 56, 6, 2, 10, 8, 10, 2),
        "bf16": (22, 4, 16, 2, 8, 56, 6, 2, 4, 56, 2, 2, 8, 8, 8, 2)},
}
# bf16_autocast (16-bit weights under autocast): the same tensors in the same dtypes as under AMP for
# Qwen2-VL and Qwen3-VL (LayerNorms run in fp32 under autocast whatever their weights, keeping an fp32
# input and handing fp32 to the linears, which cast it apart; the stream is bf16 in both, the patch
# embedding's convolution returning bf16), and as in bf16 weights for Qwen2.5-VL (autocast changes
# nothing: its RMSNorms compute in fp32 by hand and return weight · x in the stream's bf16, so
# gate_proj and up_proj share one 16-bit input where AMP's fp32 norm output is cast for each: block_e
# 30, not AMP's 32).
KIMAGE["qwen2_vl"]["bf16_autocast"] = KIMAGE["qwen2_vl"]["bf16_mixed"]
KIMAGE["qwen2_5_vl"]["bf16_autocast"] = KIMAGE["qwen2_5_vl"]["bf16"]
KIMAGE["qwen3_vl"]["bf16_autocast"] = KIMAGE["qwen3_vl"]["bf16_mixed"]
# QLoRA's 4-bit base: the tower frozen (PEFT never trains it), so only the checkpoint's hooked path
# counts: ckpt_e (each block's input), enc_out_e and enc_out_1 (the frozen merger); the other fields
# are never read (0). The Linear4bit layers keep nothing and return their input's dtype.
# Qwen2-VL (as loaded and after prepare_model_for_kbit_training alike: LayerNorms return fp32 under
# autocast either way, and the Conv3d patch embedding returns bf16 under autocast either way): the
# blocks' MLP (fc1, fc2: Linear4bit) takes norm2's fp32 output and returns fp32, so the stream turns
# fp32 in the first block: every block's input fp32 (ckpt_e 4) but the first's, bf16 (QWEN_CKPT_FIRST
# -2); the merger: ln_q's fp32 input, mean and rstd, GELU's fp32 input (mlp.0 returns ln_q's fp32):
# 8·e + 8. Qwen2.5-VL as loaded: RMSNorms with bf16 weights return bf16, the stream stays bf16
# (ckpt_e 2); the merger: ln_q's fp32 input (pow) and rsqrt, GELU's bf16 input, the window index and
# its inverse (int64, a merged token each): 6·e + 8, as under AMP. After prepare_model_for_kbit_training
# the RMSNorm weights are fp32 and the norms return fp32: as Qwen2-VL (ckpt_e 4, the first block -2,
# the merger 8·e + 8). Qwen3-VL: not hooked (kInputHooked false): nothing.
for _t, _nf4, _kbit in (("qwen2_vl", (4, 8, 8), (4, 8, 8)), ("qwen2_5_vl", (2, 6, 8), (4, 8, 8)),
                        ("qwen3_vl", (0, 0, 0), (0, 0, 0))):
    for _column, (_ckpt_e, _enc_out_e, _enc_out_1) in (("qlora_nf4", _nf4), ("qlora_nf4_kbit", _kbit)):
        _row = dict.fromkeys(FIELDS, 0)
        _row.update(ckpt_e=_ckpt_e, enc_out_e=_enc_out_e, enc_out_1=_enc_out_1)
        KIMAGE[_t][_column] = tuple(_row[f] for f in FIELDS)
# The first checkpointed block's input where the stream enters it in another dtype than it enters the
# others (n·e once, added to ckpt_e·e·n·depth, in the blocks' part): bf16 into the first block, fp32
# after it. vision.cpp's ImageTerms field ckpt_first_e.
QWEN_CKPT_FIRST = {("qwen2_vl", "qlora_nf4"): -2, ("qwen2_vl", "qlora_nf4_kbit"): -2,
                   ("qwen2_5_vl", "qlora_nf4_kbit"): -2}
INPUT_HOOKED = {"qwen2_vl": True, "qwen2_5_vl": True, "qwen3_vl": False}  # kInputHooked


def qwen_saved(case, row, first=0):
    """vision_saved's Qwen part (blocks + outside), bytes, for ImageTerms row (a FIELDS tuple) and the
    first checkpointed block's extra n·e coefficient."""
    k = dict(zip(FIELDS, row))
    mt, v = case["model_type"], case["hf_config"]["vision_config"]
    qwen2 = mt == "qwen2_vl"
    e = v["embed_dim"] if qwen2 else v["hidden_size"]
    ff = e * v["mlp_ratio"] if qwen2 else v["intermediate_size"]
    depth, heads, patch = v["depth"], v["num_heads"], v["patch_size"]
    pixels = v.get("in_channels", 3) * v.get("temporal_patch_size", 2) * patch * patch
    deepstack = len(v.get("deepstack_visual_indexes", [])) if mt == "qwen3_vl" else 0
    n = case["images_per_sample"] * case["image_patches"]
    element = 4 if case["precision"] == "fp32" else 2
    part, ckpt = case["train_vision"], case["checkpointing"] == "full"
    encoder = part in ("encoder", "all")

    def per_patch(on_e, one):
        return (e * on_e + one) * n
    hooked = ckpt and INPUT_HOOKED[mt]
    if encoder:
        all_ = part == "all"
        blocks = (per_patch(k["ckpt_e"], 0) * depth + first * e * n if ckpt
                  else (e * k["block_e"] + ff * k["block_ff"] + heads * 4 + k["block_1"]) * n * depth)
        outside = (per_patch(k["out_e"] if all_ else k["enc_out_e"], k["out_1"] if all_ else k["enc_out_1"])
                   + pixels * n * element
                   + per_patch(k["deepstack_e"] if all_ else k["enc_deepstack_e"],
                               k["deepstack_1"] if all_ else k["enc_deepstack_1"]) * deepstack
                   + (0 if ckpt else (e // heads) * n * 8))
    elif part == "projector":
        blocks = per_patch(k["ckpt_e"], 0) * depth + first * e * n if hooked else 0
        outside = ((per_patch(k["out_e"], k["out_1"]) if hooked else per_patch(k["proj_e"], k["proj_1"]))
                   + per_patch(k["proj_deepstack_e"], k["proj_deepstack_1"]) * deepstack)
    elif hooked:
        blocks = per_patch(k["ckpt_e"], 0) * depth + first * e * n
        outside = per_patch(k["enc_out_e"], k["enc_out_1"])
    else:
        blocks = outside = 0
    return blocks + outside


def check_qwen(doc):
    """Every Qwen case against qwen_saved with its column's row and first-block term; the rows of
    vision.cpp's kImageTerms printed (the ImageTerms fields in order, ckpt_first_e last). Returns the
    number of cases off."""
    cases = [dict(c, hf_config=doc["models"][c["model"]]) for c in doc["cases"] if c["model_type"] in KIMAGE]
    off, count = 0, collections.Counter()
    for c in cases:
        column = precision(c)
        first = QWEN_CKPT_FIRST.get((c["model_type"], column), 0)
        model = qwen_saved(c, KIMAGE[c["model_type"]][column], first)
        if model != c["saved_bytes"]:
            off += 1
            print(f"OFF {c['model_type']} {column} {c['train_vision']} {c['checkpointing']} k={c['images_per_sample']} "
                  f"p={c['image_patches']}: model {model:,}, measured {c['saved_bytes']:,}")
        count[(c["model_type"], column)] += 1
    print(f"\n{len(cases)} Qwen cases, {len(cases) - off} exact to the byte (vision_saved's formula), {off} off")
    for t in KIMAGE:
        print(f"  {t}: " + ", ".join(f"{col} {count[(t, col)]}" for col in PRECISIONS if count[(t, col)]))
    print("\nkImageTerms rows (ImageTerms fields in order, ckpt_first_e last):")
    for t in KIMAGE:
        for col in PRECISIONS:
            row = KIMAGE[t][col] + (QWEN_CKPT_FIRST.get((t, col), 0),)
            print(f"  {t:10s} {col:14s} {{{', '.join(map(str, row))}}}")
    return off


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
            print(f"OFF {tower(c)[0]} {precision(c)} {c['train_vision']} {c['checkpointing']} k={V['k']} p={V['p']}: "
                  f"model {model:,}, measured {c['saved_bytes']:,}")
        groups[(tower(c)[0], precision(c), c["train_vision"], c["checkpointing"])].append((V, T, c["saved_bytes"]))
    print(f"{len(cases)} ViT cases, {len(cases) - off} exact to the byte, {off} off\n")
    print(f"{'tower':14s} {'precision':14s} {'part':9s} {'ckpt':4s} {'cases':>5s} {'rank':>5s} {'max |res|':>9s}  bytes")
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
        formula = " ".join(f"{'-' if rows[0][1][b] < 0 else '+' if i else ''} {abs(rows[0][1][b])}·{NAMES[b]}"
                           for i, b in enumerate(names)).strip() or "0"
        flag = "" if rank == len(merged) and same and res < 1e-6 else "   <-- check"
        print(f"{key[0]:14s} {key[1]:14s} {key[2]:9s} {key[3]:4s} {len(rows):5d} {rank:2d}/{len(merged):<2d} "
              f"{res:9.2g}  {formula}{flag}")
    print(f"\nlargest least-squares residual over the groups: {worst:.3g} bytes")
    qwen_off = check_qwen(doc)
    return 1 if off or qwen_off else 0


if __name__ == "__main__":
    sys.exit(main())
