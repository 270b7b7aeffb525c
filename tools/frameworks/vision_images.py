#!/usr/bin/env python3
"""What images leave saved for backward in a Qwen-VL vision tower, measured with transformers' real
classes on the CPU.

    .venv-frameworks/bin/python tools/frameworks/vision_images.py   # writes out/vision_images.json

memfit's training.images_per_sample and training.image_patches run images through the tower
(vision.cpp, vision_saved_bytes): what autograd keeps of them depends on which parts of the tower
train (training.finetune.train_vision), on checkpointing (transformers' non-reentrant checkpoint of
every vision block) and on the precision. This script builds small Qwen2-VL, Qwen2.5-VL and
Qwen3-VL models (widths, MLP sizes, heads, depths and deepstack layers of their own, none of them the
sizes memfit's coefficients were worked out on), sets each part of the tower to require grad,
runs one or two images through the class's get_image_features with SDPA (its CPU flash kernel
saves what FlashAttention does) in fp32, under CUDA's autocast policy emulated on the CPU
(cuda_amp.py; fp32 weights), and in bf16 weights, with and without gradient checkpointing, and
records every tensor autograd still keeps once the features are made (savetrack.py's counted():
each storage once, parameters, autocast's weight copies and saves whose graph died during forward
left out). compare.py (check_vision_images) reads each config.json through --hf-config and holds
memfit's vision_activation_bytes to the bytes measured, exactly.
"""

import collections
import contextlib
import importlib.metadata as md
import json
import os
import sys
import tempfile
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
        "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]}}
# (model_type, vision_config)
TOWERS = (
    ("qwen2_vl", {"depth": 3, "embed_dim": 160, "hidden_size": 256, "num_heads": 5, "mlp_ratio": 3, "patch_size": 14}),
    ("qwen2_5_vl", {"depth": 3, "hidden_size": 160, "intermediate_size": 224, "num_heads": 5, "out_hidden_size": 256,
                    "fullatt_block_indexes": [2], "patch_size": 14}),
    ("qwen3_vl", {"depth": 4, "hidden_size": 160, "intermediate_size": 224, "num_heads": 5, "out_hidden_size": 256,
                  "num_position_embeddings": 64, "deepstack_visual_indexes": [1, 2], "patch_size": 16}),
)
PRECISIONS = {"fp32": "fp32", "amp": "bf16_mixed", "bf16": "bf16"}
PARTS = ("none", "projector", "encoder", "all")
IMAGES = ((1, (6, 8)), (2, (4, 4)))  # images a micro-batch, each one's patch grid


def _measure(folder, precision, part, checkpointing, images, grid):
    from transformers import AutoModelForImageTextToText
    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32, device_map="cpu",
                                                        attn_implementation="sdpa").train()
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    for name, p in model.named_parameters():
        projector = ".merger." in name or "deepstack_merger" in name
        tower = "language_model" not in name and "lm_head" not in name
        p.requires_grad_(not tower or part == "all" or (part != "none" and (part == "projector") == projector))
    v = model.config.vision_config
    h, w = grid
    pixels = torch.randn(images * h * w, v.in_channels * v.temporal_patch_size * v.patch_size ** 2)
    if precision == "bf16":
        pixels = pixels.to(torch.bfloat16)
    tracker = SaveTracker({"": model})
    mode = CudaAutocastEmulation(torch.bfloat16) if precision == "amp" else contextlib.nullcontext()
    torch.manual_seed(0)
    with mode, tracker.measuring():
        out = model.model.get_image_features(pixel_values=pixels, image_grid_thw=torch.tensor([[1, h, w]] * images))
    features = out.pooler_output if getattr(out, "pooler_output", None) is not None else out
    if isinstance(features, (tuple, list)):
        features = torch.cat([f.reshape(-1) for f in features])
    if features.requires_grad:
        tracker.name_ops([features.float().sum()])
    width = getattr(v, "embed_dim", None) or v.hidden_size
    # What autograd still holds with the features in hand (savetrack's counted(): each storage once,
    # a save whose graph died during forward left out), but autocast's copies of the weights (the
    # patch convolution's is 5-D), which are weight copies.
    return sum(r["storage_bytes"] for r in tracker.counted() if not (len(r["shape"]) == 5 and r["shape"][0] == width))


def main():
    from transformers import AutoConfig, AutoModelForImageTextToText
    cases = []
    for model_type, vision in TOWERS:
        config = AutoConfig.for_model(model_type, text_config=dict(TEXT), vision_config=dict(vision))
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as folder:
            AutoModelForImageTextToText.from_config(config).save_pretrained(folder)
            with open(os.path.join(folder, "config.json")) as f:
                hf_config = json.load(f)
            for precision in PRECISIONS:
                for part in PARTS:
                    for checkpointing in (False, True):
                        for images, grid in IMAGES:
                            saved = _measure(folder, precision, part, checkpointing, images, grid)
                            cases.append({"model_type": model_type, "hf_config": hf_config,
                                          "precision": PRECISIONS[precision], "train_vision": part,
                                          "checkpointing": "full" if checkpointing else "none",
                                          "images_per_sample": images, "image_patches": grid[0] * grid[1],
                                          "saved_bytes": saved})
            print(f"{model_type}: {sum(1 for c in cases if c['model_type'] == model_type)} cases")
    write_result(OUT, {"versions": {p: md.version(p) for p in ("torch", "transformers")}, "cases": cases})


if __name__ == "__main__":
    main()
