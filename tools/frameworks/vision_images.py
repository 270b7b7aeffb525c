#!/usr/bin/env python3
"""What images leave saved for backward in a vision-language model's vision tower (Qwen2-VL,
Qwen2.5-VL, Qwen3-VL; Gemma 3; LLaVA over CLIP, SigLIP and Pixtral; Mistral 3), measured with
transformers' real classes on the CPU.

    .venv-frameworks/bin/python tools/frameworks/vision_images.py   # writes out/vision_images.json
    .venv-frameworks/bin/python tools/frameworks/vision_images.py --only gemma3,llava --debug /tmp/records.json

memfit's training.images_per_sample and training.image_patches run images through the tower
(vision.cpp, vision_saved): what autograd keeps of them depends on which parts of the tower train
(training.finetune.train_vision: none, projector, encoder, all), on checkpointing (transformers'
non-reentrant checkpoint of every vision block, gradient_checkpointing_enable with use_reentrant
False, which also calls enable_input_require_grads) and on the precision. This script builds small
towers of every family (TOWERS: widths, MLP sizes, heads, depths, patch sizes, image sizes and text
widths of their own, one Qwen tower each and seven to twelve per ViT family, none of them the sizes
memfit's coefficients were worked out on, so that a fit can tell every term apart): Gemma 3's SigLIP
(without its pooling head, as released; one tower with it) and average-pooling projector; LLaVA over
CLIP as LLaVA-1.5 (vision_feature_layer -2, strategy "default", which drops CLS; towers with -1, -3
and -4 too), over SigLIP as LLaVA-Interleave (-1, "full"; four towers with -2) and over Pixtral as
Pixtral-12B (-1, "full", image_sizes given); Mistral 3 (spatial_merge_size 2, 3 and 4). It sets each
part of the tower to require grad (the projector: Qwen's mergers, the wrappers' multi_modal_projector;
the encoder: the rest outside the language model, which always requires grad), runs one or two
images through the class's get_image_features with SDPA (its CPU flash kernel saves what
FlashAttention does: q, k, v, the output and an fp32 log-sum-exp a head; and Pixtral's block-diagonal
mask over the images of a micro-batch, which Pixtral concatenates into one sequence) in fp32, under
CUDA's autocast policy emulated on the CPU (cuda_amp.py; fp32 weights), in bf16 weights, and in bf16
weights under the autocast emulation (HF Trainer's bf16=True over a model loaded in bf16: a full
fine-tune's, or a LoRA base's), with and without gradient checkpointing; and with QLoRA's 4-bit base
(REGIMES: bitsandbytes NF4 with double quantisation and bf16 compute, loaded in bf16, the tower's
nn.Linear layers quantised too, under the autocast emulation, the tower frozen as PEFT leaves it,
without and with peft's prepare_model_for_kbit_training, which casts every parameter left 16-bit to
fp32; the language model's floating parameters require grad, as LoRA's would). It records every
tensor autograd still keeps once the features are made: savetrack's counting (each storage once,
parameters left out, and saves whose graph died during forward left out), with autocast's 16-bit
copies of the weights left out too (every cast of a parameter the emulation makes, cached copies of
trained weights and per-use copies of frozen ones, of any rank, the patch convolutions' 4-D and 5-D
weights included: they are weight copies; a 4-bit base's weights never show: bitsandbytes' MatMul4Bit
saves no input for a frozen weight and holds its packed weight as a ctx attribute, not through
save_for_backward, and dequantises it again in backward). The bytes are a GPU's: a LayerNorm over
bf16 with bf16 weights keeps its mean and rstd in bf16 on the CPU and in fp32 on CUDA (_cuda_bytes,
measure.py's layernorm_stats rule), so those count twice. (Not modelled: on CUDA, fp32 attention
runs the memory-efficient kernel, whose log-sum-exp is padded to 32 tokens, a few hundred bytes an
image a block.)

Only the image features are kept (get_image_features' pooler_output) for the ViT towers: the model's
forward keeps nothing else of the vision tower's output (the trainer drops the outputs before
backward), so the blocks after LLaVA's vision_feature_layer, CLIP's post_layernorm of the class
token, SigLIP's post_layernorm under LLaVA and its pooling head leave nothing. The Qwen towers keep
their whole output: Qwen3-VL's language model takes the deepstack features in it beside
pooler_output (Qwen2-VL's and Qwen2.5-VL's bytes are the same either way).

Per case: model_type, model (the index of its tower's config.json, as transformers wrote it, in the
file's "models"), precision (memfit's names: fp32, bf16_mixed, bf16, bf16_autocast; qlora_nf4 for the
4-bit base, with prepare_kbit: whether prepare_model_for_kbit_training ran; only train_vision none
there), train_vision, checkpointing,
images_per_sample, image_patches (patches an image as the encoder sees them, before any pooling or
merging, without CLS), saved_bytes; and for the
ViT towers image_grid ([rows, columns] of patches an image), image_size ([height, width] in pixels),
encoder_tokens (an image's tokens through the encoder: CLIP's with its class token), image_tokens
(the features an image gives the language model, from get_image_features: Gemma 3's
mm_tokens_per_image, Mistral 3's merged patches), autocast_copy_bytes (the weight copies left out)
and, under LLaVA and Mistral 3, vision_feature_layer. About 3 minutes on two CPU cores (4,536
cases). compare.py (check_vision_images) reads each config.json through --hf-config and holds
memfit's vision_activation_bytes to the bytes measured, exactly (a tower memfit does not model
images through is reported refused); vision_images_fit.py holds the ViT towers' cases to exact
integer formulas, term by term, and the Qwen towers' to vision.cpp's formula with its table's columns
and the new ones.
"""

import argparse
import contextlib
import copy
import gc
import importlib.metadata as md
import json
import os
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from cuda_amp import CudaAutocastEmulation  # noqa: E402
from gloo_ranks import write_result  # noqa: E402
from savetrack import SaveTracker  # noqa: E402

OUT = os.path.join(HERE, "out", "vision_images.json")

TEXT = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 1, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1024, "max_position_embeddings": 512,
        "rope_scaling": {"type": "mrope", "rope_type": "default", "rope_theta": 1000000.0,
                         "mrope_section": [8, 12, 12]}}


def _text(model_type, d):
    """A one-layer language model of width d (it only sets the projectors' output width here)."""
    return {"model_type": model_type, "hidden_size": d, "intermediate_size": 2 * d, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": d // 2, "vocab_size": 512,
            "max_position_embeddings": 512}


def _siglip(e, ff, heads, depth, side, patch, **kw):
    return dict({"model_type": "siglip_vision_model", "hidden_size": e, "intermediate_size": ff, "num_hidden_layers": depth,
                 "num_attention_heads": heads, "image_size": side * patch, "patch_size": patch,
                 "vision_use_head": False}, **kw)


def _clip(e, ff, heads, depth, side, patch):
    return {"model_type": "clip_vision_model", "hidden_size": e, "intermediate_size": ff, "num_hidden_layers": depth,
            "num_attention_heads": heads, "image_size": side * patch, "patch_size": patch, "projection_dim": 32}


def _pixtral(e, ff, heads, depth, patch):
    # hidden_act silu: Pixtral-12B's and Mistral 3's (the class defaults to gelu)
    return {"model_type": "pixtral", "hidden_size": e, "intermediate_size": ff, "num_hidden_layers": depth,
            "num_attention_heads": heads, "head_dim": e // heads, "image_size": 64 * patch, "patch_size": patch,
            "hidden_act": "silu"}


FULL = {"vision_feature_layer": -1, "vision_feature_select_strategy": "full"}
# (model_type, text_config, vision_config, the wrapper's own keys, images: ((images, (rows, columns)), ...)).
# The ViT towers' grids: SigLIP's and CLIP's are the config's (image_size / patch_size a side: they
# take no other size); Pixtral's any whole number of patches (of merged patches under Mistral 3).
QWEN_IMAGES = ((1, (6, 8)), (2, (4, 4)))
TOWERS = (
    ("qwen2_vl", TEXT, {"depth": 3, "embed_dim": 160, "hidden_size": 256, "num_heads": 5, "mlp_ratio": 3, "patch_size": 14},
     {}, QWEN_IMAGES),
    ("qwen2_5_vl", TEXT, {"depth": 3, "hidden_size": 160, "intermediate_size": 224, "num_heads": 5, "out_hidden_size": 256,
                          "fullatt_block_indexes": [2], "patch_size": 14}, {}, QWEN_IMAGES),
    ("qwen3_vl", TEXT, {"depth": 4, "hidden_size": 160, "intermediate_size": 224, "num_heads": 5, "out_hidden_size": 256,
                        "num_position_embeddings": 64, "deepstack_visual_indexes": [1, 2], "patch_size": 16}, {}, QWEN_IMAGES),
    # Gemma 3: SigLIP (no pooling head, as released; the second tower with it) and the projector's
    # average pool to mm_tokens_per_image tokens (tokens_per_side must divide the patches a side).
    ("gemma3", _text("gemma3_text", 64), _siglip(64, 96, 2, 2, 4, 4), {"mm_tokens_per_image": 4}, None),
    ("gemma3", _text("gemma3_text", 96), _siglip(96, 144, 4, 3, 6, 8, vision_use_head=True), {"mm_tokens_per_image": 9}, None),
    ("gemma3", _text("gemma3_text", 128), _siglip(128, 80, 8, 1, 8, 4), {"mm_tokens_per_image": 16}, None),
    ("gemma3", _text("gemma3_text", 64), _siglip(80, 200, 5, 2, 6, 6), {"mm_tokens_per_image": 4}, None),
    ("gemma3", _text("gemma3_text", 80), _siglip(48, 64, 3, 4, 4, 2), {"mm_tokens_per_image": 16}, None),
    ("gemma3", _text("gemma3_text", 48), _siglip(112, 176, 7, 1, 9, 3), {"mm_tokens_per_image": 9}, None),
    ("gemma3", _text("gemma3_text", 112), _siglip(72, 120, 6, 3, 10, 2), {"mm_tokens_per_image": 25}, None),
    ("gemma3", _text("gemma3_text", 64), _siglip(144, 48, 9, 2, 3, 5), {"mm_tokens_per_image": 1}, None),
    ("gemma3", _text("gemma3_text", 72), _siglip(60, 100, 3, 2, 6, 3), {"mm_tokens_per_image": 9}, None),
    ("gemma3", _text("gemma3_text", 56), _siglip(104, 56, 4, 3, 4, 6), {"mm_tokens_per_image": 4}, None),
    ("gemma3", _text("gemma3_text", 96), _siglip(88, 168, 11, 1, 12, 2), {"mm_tokens_per_image": 16}, None),
    ("gemma3", _text("gemma3_text", 40), _siglip(56, 136, 7, 5, 5, 4), {"mm_tokens_per_image": 25}, None),
    # LLaVA-1.5: CLIP, vision_feature_layer -2, strategy "default" (CLS dropped); three towers with -1, one -3, one -4.
    ("llava", _text("llama", 64), _clip(64, 96, 2, 2, 4, 4), {}, None),
    ("llava", _text("llama", 96), _clip(96, 144, 4, 3, 5, 6), {}, None),
    ("llava", _text("llama", 128), _clip(128, 80, 8, 4, 3, 8), {"multimodal_projector_bias": False}, None),
    ("llava", _text("llama", 64), _clip(80, 200, 5, 2, 6, 4), {"vision_feature_layer": -1}, None),
    ("llava", _text("llama", 80), _clip(48, 64, 3, 5, 7, 2), {}, None),
    ("llava", _text("llama", 48), _clip(112, 176, 7, 3, 4, 3), {"vision_feature_layer": -1}, None),
    ("llava", _text("llama", 112), _clip(72, 120, 6, 2, 8, 2), {}, None),
    ("llava", _text("llama", 64), _clip(144, 48, 9, 4, 5, 5), {"vision_feature_layer": -3}, None),
    ("llava", _text("llama", 72), _clip(60, 100, 3, 3, 6, 3), {}, None),
    ("llava", _text("llama", 56), _clip(104, 56, 4, 2, 4, 6), {"vision_feature_layer": -1}, None),
    ("llava", _text("llama", 96), _clip(88, 168, 11, 4, 9, 2), {}, None),
    ("llava", _text("llama", 40), _clip(56, 136, 7, 5, 5, 4), {"vision_feature_layer": -4}, None),
    # LLaVA-Interleave: SigLIP without its head, vision_feature_layer -1, strategy "full"; four with -2
    # (one with the pooling head, which nothing uses).
    ("llava", _text("qwen2", 64), _siglip(64, 96, 2, 2, 4, 4), FULL, None),
    ("llava", _text("qwen2", 96), _siglip(96, 144, 4, 3, 5, 6), FULL, None),
    ("llava", _text("qwen2", 128), _siglip(128, 80, 8, 1, 3, 8), FULL, None),
    ("llava", _text("qwen2", 64), _siglip(80, 200, 5, 3, 6, 4), dict(FULL, vision_feature_layer=-2), None),
    ("llava", _text("qwen2", 80), _siglip(48, 64, 3, 4, 7, 2), FULL, None),
    ("llava", _text("qwen2", 48), _siglip(112, 176, 7, 2, 4, 3, vision_use_head=True), dict(FULL, vision_feature_layer=-2), None),
    ("llava", _text("qwen2", 112), _siglip(72, 120, 6, 3, 8, 2), FULL, None),
    ("llava", _text("qwen2", 64), _siglip(144, 48, 9, 4, 5, 5), FULL, None),
    ("llava", _text("qwen2", 72), _siglip(60, 100, 3, 3, 6, 3), dict(FULL, vision_feature_layer=-2), None),
    ("llava", _text("qwen2", 56), _siglip(104, 56, 4, 2, 4, 6), FULL, None),
    ("llava", _text("qwen2", 96), _siglip(88, 168, 11, 4, 9, 2), FULL, None),
    ("llava", _text("qwen2", 40), _siglip(56, 136, 7, 5, 5, 4), dict(FULL, vision_feature_layer=-2), None),
    # Pixtral-12B: LLaVA over Pixtral, vision_feature_layer -1, strategy "full", image_sizes given.
    ("llava", _text("mistral", 64), _pixtral(64, 96, 2, 2, 4), FULL, ((1, (3, 5)), (2, (4, 2)))),
    ("llava", _text("mistral", 96), _pixtral(96, 144, 4, 3, 6), FULL, ((1, (4, 4)), (2, (3, 3)))),
    ("llava", _text("mistral", 128), _pixtral(128, 80, 8, 1, 8), FULL, ((1, (2, 6)), (2, (5, 3)))),
    ("llava", _text("mistral", 64), _pixtral(80, 200, 5, 2, 4), dict(FULL, multimodal_projector_bias=False),
     ((1, (5, 5)), (2, (2, 7)))),
    ("llava", _text("mistral", 80), _pixtral(48, 64, 3, 4, 2), FULL, ((1, (7, 3)), (2, (4, 4)))),
    ("llava", _text("mistral", 48), _pixtral(112, 176, 2, 1, 3), FULL, ((1, (6, 1)), (2, (3, 3)))),
    ("llava", _text("mistral", 112), _pixtral(96, 48, 8, 3, 5), FULL, ((1, (2, 2)), (2, (6, 5)))),
    ("llava", _text("mistral", 64), _pixtral(144, 48, 9, 4, 5), FULL, ((1, (3, 4)), (2, (2, 5)))),
    ("llava", _text("mistral", 72), _pixtral(60, 100, 3, 3, 3), FULL, ((1, (5, 2)), (2, (3, 4)))),
    ("llava", _text("mistral", 56), _pixtral(104, 56, 2, 2, 6), FULL, ((1, (4, 5)), (2, (1, 6)))),
    ("llava", _text("mistral", 96), _pixtral(88, 168, 11, 4, 2), FULL, ((1, (6, 6)), (2, (2, 3)))),
    ("llava", _text("mistral", 40), _pixtral(56, 136, 7, 5, 4), FULL, ((1, (3, 3)), (2, (7, 2)))),
    # Mistral 3: Pixtral and the patch merger of spatial_merge_size² patches (grids in whole merges;
    # one image of a single merged token fails in get_image_features' squeeze, so none here).
    ("mistral3", _text("mistral", 64), _pixtral(64, 96, 2, 2, 4), {"spatial_merge_size": 2}, ((1, (4, 6)), (2, (2, 4)))),
    ("mistral3", _text("mistral", 96), _pixtral(96, 144, 4, 3, 6), {"spatial_merge_size": 3}, ((1, (3, 6)), (2, (6, 3)))),
    ("mistral3", _text("mistral", 128), _pixtral(128, 80, 8, 1, 8), {"spatial_merge_size": 2}, ((1, (6, 2)), (2, (4, 4)))),
    ("mistral3", _text("mistral", 64), _pixtral(80, 200, 5, 2, 4), {"spatial_merge_size": 3, "multimodal_projector_bias": True},
     ((1, (6, 6)), (2, (3, 6)))),
    ("mistral3", _text("mistral", 80), _pixtral(48, 64, 3, 4, 2), {"spatial_merge_size": 2}, ((1, (8, 4)), (2, (2, 2)))),
    ("mistral3", _text("mistral", 48), _pixtral(112, 176, 2, 1, 3), {"spatial_merge_size": 4}, ((1, (4, 8)), (2, (8, 4)))),
    ("mistral3", _text("mistral", 112), _pixtral(96, 48, 8, 3, 5), {"spatial_merge_size": 2}, ((1, (2, 4)), (2, (6, 2)))),
    ("mistral3", _text("mistral", 64), _pixtral(144, 48, 9, 4, 5), {"spatial_merge_size": 2}, ((1, (4, 4)), (2, (2, 6)))),
    ("mistral3", _text("mistral", 72), _pixtral(60, 100, 3, 3, 3), {"spatial_merge_size": 3}, ((1, (3, 9)), (2, (3, 3)))),
    ("mistral3", _text("mistral", 56), _pixtral(104, 56, 2, 2, 6), {"spatial_merge_size": 2}, ((1, (2, 8)), (2, (4, 2)))),
    ("mistral3", _text("mistral", 96), _pixtral(88, 168, 11, 4, 2), {"spatial_merge_size": 2}, ((1, (6, 4)), (2, (4, 6)))),
    ("mistral3", _text("mistral", 40), _pixtral(56, 136, 7, 5, 4), {"spatial_merge_size": 3}, ((1, (6, 3)), (2, (3, 9)))),
)
# The regimes: {key: (memfit's precision, how the model is loaded, autocast emulated, prepare_kbit)}.
# fp32 weights; fp32 weights under CUDA's bf16 autocast (AMP, bf16_mixed); bf16 weights without
# autocast; bf16 weights under autocast (bf16_autocast: HF Trainer's bf16=True over a model loaded in
# bf16, a full fine-tune's or a LoRA base's); and QLoRA's 4-bit base (qlora_nf4: bitsandbytes NF4 with
# double quantisation and bf16 compute, loaded in bf16, under autocast, the tower frozen), without and
# with peft's prepare_model_for_kbit_training (use_gradient_checkpointing False: it freezes every
# parameter and casts the ones left 16-bit, every one but the 4-bit weights, to fp32).
REGIMES = {"fp32": ("fp32", "fp32", False, None), "amp": ("bf16_mixed", "fp32", True, None),
           "bf16": ("bf16", "bf16", False, None), "amp16": ("bf16_autocast", "bf16", True, None),
           "nf4": ("qlora_nf4", "nf4", True, False), "nf4_kbit": ("qlora_nf4", "nf4", True, True)}
PRECISIONS = {key: r[0] for key, r in REGIMES.items()}
PARTS = ("none", "projector", "encoder", "all")
# PEFT never trains the tower of a 4-bit base: only "none" there.
REGIME_PARTS = {"nf4": ("none",), "nf4_kbit": ("none",)}


def _qwen(model_type):
    return model_type.startswith("qwen")


def _is_projector(model_type, name):
    if _qwen(model_type):
        return ".merger." in name or "deepstack_merger" in name
    return ".multi_modal_projector." in name


def _images(model_type, config, images, grid):
    """The images as get_image_features takes them: Qwen's flattened patches with their grid; the
    others' pixels (Pixtral's with their sizes)."""
    v = config.vision_config
    h, w = grid
    if _qwen(model_type):
        return {"pixel_values": torch.randn(images * h * w, v.in_channels * v.temporal_patch_size * v.patch_size ** 2),
                "image_grid_thw": torch.tensor([[1, h, w]] * images)}
    p = v.patch_size
    kw = {"pixel_values": torch.randn(images, v.num_channels, h * p, w * p)}
    if v.model_type == "pixtral":
        kw["image_sizes"] = torch.tensor([[h * p, w * p]] * images)
    return kw


class _CastRecorder(CudaAutocastEmulation):
    """The emulation, keeping every cast it makes of a parameter (autocast's cached copies of the
    trained weights and its per-use copies of the frozen ones), so that they can be told from
    activations by storage (and their storages are not reused by activations meanwhile)."""

    def __init__(self, params, dtype=torch.bfloat16):
        super().__init__(dtype)
        self.params = params
        self.copies = []

    def _cast(self, x, dtype, cache):
        out = super()._cast(x, dtype, cache)
        if isinstance(x, torch.Tensor) and id(x) in self.params and out is not x:
            self.copies.append(out)
        return out

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # nn.MultiheadAttention (SigLIP's pooling head) calls F.multi_head_attention_forward, which the
        # mode sees whole: the linears inside run without it. CUDA's autocast casts them at the
        # dispatcher, so a bf16 probe or weight meets an fp32 input (post_layernorm's) in 16 bits
        # there; here every floating argument is cast to 16 bits first, as those linears would.
        # (The head's output reaches nothing the features need: its graph dies, it keeps nothing.)
        if func is torch.nn.functional.multi_head_attention_forward:
            args = tuple(self._cast(a, self.dtype, True) for a in args)
            kwargs = {k: self._cast(v, self.dtype, True) for k, v in (kwargs or {}).items()}
            return func(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)


def _kept(tracker, copies):
    """savetrack's counted() (each storage once, the first save; parameters, buffers and saves whose
    graph died left out) with autocast's weight copies told by storage rather than by shape."""
    seen, out = set(), []
    for rid, r in enumerate(tracker.records):
        if r is None or r["owner"] is not None or r["storage_bytes"] == 0 or not tracker.alive(rid):
            continue
        if r["storage_ptr"] in seen:
            continue
        seen.add(r["storage_ptr"])
        out.append(r)
    kept = [r for r in out if r["storage_ptr"] not in copies]
    return kept, [r for r in out if r["storage_ptr"] in copies]


def _cuda_bytes(record):
    """A kept tensor's bytes on a GPU (measure.py's CUDA_RULES, layernorm_stats): the CPU's
    layer_norm keeps a 16-bit input's mean and rstd in that dtype, CUDA's kernel in fp32
    (aten/src/ATen/native/cuda/layer_norm_kernel.cu: T_ACC mean and rstd), twice the bytes."""
    nb = record["storage_bytes"]
    # (By the module too: a save the features' graph walk did not name, Qwen3-VL's deepstack mergers'.)
    if ((any(n.startswith("NativeLayerNormBackward") for n in record["nodes"]) or record["module_type"] == "LayerNorm")
            and record["dtype"] in ("bfloat16", "float16") and record["shape"] and record["shape"][-1] == 1):
        return nb * 2
    return nb


def _load(folder, regime):
    """The model as the regime loads it: fp32 or bf16 weights, or bitsandbytes' NF4 (nn.Linear
    weights quantised, tower's included; the rest bf16), then prepare_model_for_kbit_training."""
    from transformers import AutoModelForImageTextToText, BitsAndBytesConfig
    _, load, _, prepare_kbit = REGIMES[regime]
    kwargs = {"dtype": torch.float32, "device_map": "cpu", "attn_implementation": "sdpa"}
    if load == "nf4":
        kwargs.update(dtype=torch.bfloat16, quantization_config=BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
            bnb_4bit_use_double_quant=True))
    model = AutoModelForImageTextToText.from_pretrained(folder, **kwargs)
    if load == "bf16":
        model = model.to(torch.bfloat16)
    if prepare_kbit:
        from compat import peft_without_torchao
        peft_without_torchao()
        from peft import prepare_model_for_kbit_training
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    return model


def _measure(base, model_type, precision, part, checkpointing, images, grid, keep_output, debug):
    model = copy.deepcopy(base).train()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    for name, p in model.named_parameters():
        tower = "language_model" not in name and "lm_head" not in name
        projector = _is_projector(model_type, name)
        trains = not tower or part == "all" or (part != "none" and (part == "projector") == projector)
        # (A 4-bit base's quantised weights, uint8 Params4bit, cannot require grad: the language model's
        # others do, as LoRA's adapters would.)
        p.requires_grad_(trains and p.is_floating_point())
    # bitsandbytes' Linear4bit.forward recasts its bias in place to the compute dtype
    # (bias.data = bias.data.to(x.dtype)): after prepare_model_for_kbit_training, which made it fp32,
    # the first forward makes it bf16 again and frees the fp32 storage, which the allocator may then
    # hand to an activation that savetrack, keying parameters by storage when it starts, would take
    # for that bias. Done here first, as every step after the first finds it.
    if REGIMES[precision][1] == "nf4":
        import bitsandbytes as bnb
        for module in model.modules():
            bias = module.bias if isinstance(module, bnb.nn.Linear4bit) else None
            if bias is not None and bias.dtype != module.compute_dtype:
                bias.data = bias.data.to(module.compute_dtype)
    inputs = _images(model_type, model.config, images, grid)
    if precision == "bf16":
        inputs["pixel_values"] = inputs["pixel_values"].to(torch.bfloat16)
    # (Elsewhere the pixels come as the processor gives them, fp32: every tower casts them to its patch
    # embedding's dtype first.)
    tracker = SaveTracker({"": model})
    params = {id(p) for p in model.parameters()}
    mode = _CastRecorder(params) if REGIMES[precision][2] else contextlib.nullcontext()
    torch.manual_seed(0)
    with mode, tracker.measuring():
        out = model.model.get_image_features(**inputs)
    features = out.pooler_output if getattr(out, "pooler_output", None) is not None else out
    if isinstance(features, (tuple, list)):
        tokens = [f.shape[-2] for f in features]
        features = torch.cat([f.reshape(-1) for f in features])
    else:
        tokens = [features.shape[-2]] * (features.shape[0] if features.dim() == 3 else 1)
    if not keep_output:
        del out
    gc.collect()
    if features.requires_grad:
        tracker.name_ops([features.float().sum()])
    copies = {c.untyped_storage().data_ptr() for c in getattr(mode, "copies", ())}
    kept, weight_copies = _kept(tracker, copies)
    if debug is not None:
        debug.append([{k: r[k] for k in ("module", "module_type", "shape", "dtype", "storage_bytes", "nodes")}
                      for r in kept])
    result = (sum(_cuda_bytes(r) for r in kept), sum(r["storage_bytes"] for r in weight_copies), tokens)
    del features, tracker, model
    return result


def main():
    from transformers import AutoConfig, AutoModelForImageTextToText
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="model types to measure (comma-separated); the output then holds only them")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--debug", help="write every kept record of every case here (JSON)")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    debug = [] if args.debug else None
    start = time.time()
    cases = []
    for model_type, text, vision, outer, image_sets in TOWERS:
        if only and model_type not in only:
            continue
        config = AutoConfig.for_model(model_type, text_config=copy.deepcopy(text), vision_config=copy.deepcopy(vision),
                                      **copy.deepcopy(outer))
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as folder:
            AutoModelForImageTextToText.from_config(config).save_pretrained(folder)
            with open(os.path.join(folder, "config.json")) as f:
                hf_config = json.load(f)
            bases = {}
            for precision in PRECISIONS:
                if precision == "amp16":  # the bf16 model (each case runs a deep copy)
                    bases[precision] = bases["bf16"]
                else:
                    bases[precision] = _load(folder, precision)
        gc.freeze()  # what exists now outlives the cases: gc.collect() then walks only what a case makes
        v = bases["fp32"].config.vision_config
        if image_sets is None:  # SigLIP, CLIP: the config's image size
            side = v.image_size // v.patch_size
            image_sets = ((1, (side, side)), (2, (side, side)))
        keep = _qwen(model_type)
        n = 0
        for precision in PRECISIONS:
            for part in REGIME_PARTS.get(precision, PARTS):
                for checkpointing in (False, True):
                    for images, grid in image_sets:
                        saved, copies, tokens = _measure(bases[precision], model_type, precision, part, checkpointing,
                                                         images, grid, keep, debug)
                        case = {"model_type": model_type, "hf_config": hf_config,
                                "precision": PRECISIONS[precision], "train_vision": part,
                                "checkpointing": "full" if checkpointing else "none",
                                "images_per_sample": images, "image_patches": grid[0] * grid[1],
                                "saved_bytes": saved}
                        if REGIMES[precision][3] is not None:
                            case["prepare_kbit"] = REGIMES[precision][3]
                        if not _qwen(model_type):
                            cls = int(v.model_type == "clip_vision_model")
                            case.update(image_grid=list(grid), image_size=[grid[0] * v.patch_size, grid[1] * v.patch_size],
                                        encoder_tokens=grid[0] * grid[1] + cls, image_tokens=tokens[0],
                                        autocast_copy_bytes=copies)
                            if model_type != "gemma3":
                                case["vision_feature_layer"] = hf_config["vision_feature_layer"]
                            assert all(t == tokens[0] for t in tokens) and len(tokens) == images, tokens
                        if debug is not None:
                            debug[-1] = {"case": {k: v for k, v in case.items() if k != "hf_config"},
                                         "records": debug[-1]}
                        cases.append(case)
                        n += 1
        print(f"{model_type:10s} {v.model_type:20s} {n} cases ({time.time() - start:.0f} s)", flush=True)
    # Each tower's config.json once ("models"), a case naming its own by index ("model").
    models, index = [], {}
    for case in cases:
        key = json.dumps(case["hf_config"], sort_keys=True)
        if key not in index:
            index[key] = len(models)
            models.append(case["hf_config"])
        case["model"] = index[key]
        del case["hf_config"]
    versions = {p: md.version(p) for p in ("torch", "transformers", "peft", "bitsandbytes")}
    write_result(args.out, {"versions": versions, "models": models, "cases": cases})
    if debug is not None:
        with open(args.debug, "w") as f:
            json.dump(debug, f)
    print(f"{len(cases)} cases in {time.time() - start:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
