#!/usr/bin/env python3
"""What a vision-language model's vision tower holds when only its language model trains, measured
with the real transformers, bitsandbytes and PEFT code on the CPU.

    .venv-frameworks/bin/python tools/frameworks/vision_tower.py   # writes out/vision_tower.json

memfit holds a multimodal model's vision encoder and projector (model.vision_type) frozen beside the
language model: counted from vision_config as transformers' class builds it, stored as the frozen
base is (16-bit; fp32 when a full fine-tune loads the model in fp32; under a bitsandbytes 4-bit base
its nn.Linear weights quantised, with their quantisation state, and the rest cast to fp32 by
prepare_model_for_kbit_training), never run by a text-only step. This script builds each vision-
language class memfit reads (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Gemma 3, LLaVA, Mistral 3, PaliGemma) from a small config, saves it, loads it
back the way each variant does (bf16; fp32; NF4 with double quantisation, with and without
prepare_model_for_kbit_training) and wraps it in PEFT LoRA on the language model's q and v. Recorded
per case: the config.json transformers wrote, the vision tower's parameter count, and the bytes it
holds: every parameter's numel x element size outside the language model and its head, plus the bitsandbytes
quantisation state of its Linear4bit layers (absmax, code book, nested absmax and code book). The
check is in compare.py (check_vision_tower): memfit's vision_parameter_count equal, and the bytes
the vision tower adds to memfit's breakdown.parameters equal to the bytes measured.

A full fine-tune can also train the tower's projector, its encoder or both
(training.finetune.train_vision): per class, the fp32 model with each part set to require grad by
module name (ms-swift's aligner and vision tower, PROJECTOR below), its trainable parameters in the
tower and the AdamW states torch makes for them at a first step; compare.py checks memfit's
trainable_parameter_count and optimizer_states against them. With the whole tower trained, an image
runs through it under CUDA's autocast policy (cuda_amp.py) and the 16-bit copies autocast caches of
the tower's weights are recorded, against memfit's weight_copies under bf16_mixed.
"""

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

from fsdp2_4bit import quant_state_bytes  # noqa: E402
from gloo_ranks import write_result  # noqa: E402

OUT = os.path.join(HERE, "out", "vision_tower.json")

TEXT = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1024, "max_position_embeddings": 512}
QWEN_TEXT = dict(TEXT, rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]})
# (model_type, text_config, vision_config, the wrapper's own keys): small towers with every size the
# classes read set to a value of its own (Qwen2-VL's mlp_ratio, Qwen3-VL's learned positions and
# deepstack mergers, SigLIP's head on and off, the projectors' biases, Mistral 3's merge, LLaVA over SigLIP and Pixtral).
TOWERS = (
    ("qwen2_vl", QWEN_TEXT, {"depth": 2, "embed_dim": 128, "hidden_size": 256, "num_heads": 4, "mlp_ratio": 2,
                             "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3}, {}),
    ("qwen2_5_vl", QWEN_TEXT, {"depth": 2, "hidden_size": 128, "intermediate_size": 192, "num_heads": 4,
                               "out_hidden_size": 256, "fullatt_block_indexes": [1], "patch_size": 14,
                               "spatial_merge_size": 2}, {}),
    ("qwen3_vl", QWEN_TEXT, {"depth": 3, "hidden_size": 128, "intermediate_size": 192, "num_heads": 4,
                             "out_hidden_size": 256, "num_position_embeddings": 64, "deepstack_visual_indexes": [0, 1],
                             "patch_size": 16}, {}),
    ("gemma3", dict(TEXT, model_type="gemma3_text", head_dim=64),
     {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "image_size": 64, "patch_size": 16, "vision_use_head": False}, {"mm_tokens_per_image": 4}),
    ("gemma3", dict(TEXT, model_type="gemma3_text", head_dim=64),
     {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 3,
      "num_attention_heads": 4, "image_size": 96, "patch_size": 16}, {"mm_tokens_per_image": 4}),
    ("llava", dict(TEXT, model_type="llama"),
     {"model_type": "clip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "image_size": 64, "patch_size": 16}, {}),
    ("llava", dict(TEXT, model_type="llama"),
     {"model_type": "clip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "image_size": 70, "patch_size": 14}, {"multimodal_projector_bias": False}),
    # LLaVA over the other encoders its vision_config can name: SigLIP with its head (LLaVA-Interleave)
    # and Pixtral (Pixtral-12B).
    ("llava", dict(TEXT, model_type="llama"),
     {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "image_size": 64, "patch_size": 16}, {}),
    ("llava", dict(TEXT, model_type="mistral"),
     {"model_type": "pixtral", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "head_dim": 32, "image_size": 64, "patch_size": 16}, {}),
    ("mistral3", dict(TEXT, model_type="mistral"),
     {"model_type": "pixtral", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "head_dim": 32, "image_size": 64, "patch_size": 16}, {"spatial_merge_size": 3}),
    ("mistral3", dict(TEXT, model_type="mistral"),
     {"model_type": "pixtral", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "head_dim": 32, "image_size": 64, "patch_size": 16}, {"multimodal_projector_bias": True}),
    # PaliGemma: SigLIP (its head off, as PaliGemma's sub-config sets it, and on) and one biased
    # linear to projection_dim, the language model's width.
    ("paligemma", dict(TEXT, model_type="gemma", head_dim=64),
     {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 2,
      "num_attention_heads": 4, "image_size": 64, "patch_size": 16, "vision_use_head": False}, {"projection_dim": 256}),
    ("paligemma", dict(TEXT, model_type="gemma2", head_dim=64),
     {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 192, "num_hidden_layers": 3,
      "num_attention_heads": 4, "image_size": 96, "patch_size": 16, "vision_use_head": True}, {"projection_dim": 256}),
)
# (name, how the model is loaded, prepare_model_for_kbit_training)
VARIANTS = (("bf16", "bf16", False), ("fp32", "fp32", False), ("nf4", "nf4", False), ("nf4_prepare_kbit", "nf4", True))


def _case(model_type, folder, load, prepare_kbit):
    from transformers import AutoModelForImageTextToText, BitsAndBytesConfig
    from compat import peft_without_torchao
    peft_without_torchao()
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    import bitsandbytes as bnb
    kwargs = {"dtype": torch.float32 if load == "fp32" else torch.bfloat16, "device_map": "cpu"}
    if load == "nf4":
        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
            bnb_4bit_use_double_quant=True)
    model = AutoModelForImageTextToText.from_pretrained(folder, **kwargs)
    if prepare_kbit:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    # LoRA on the language model's q and v only (what LLaMA-Factory and ms-swift target with the
    # vision tower frozen); the tower is left as loaded.
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=r".*language_model.*\.(q_proj|v_proj)"))
    # The tower: every module and parameter outside the language model and its head.
    def tower(name):
        return "language_model" not in name and "lm_head" not in name
    params = [p for n, p in model.named_parameters() if tower(n)]
    modules = [m for n, m in model.named_modules() if tower(n)]
    return {"parameters": sum(p.numel() for p in params),
            "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
            "quant_state_bytes": quant_state_bytes(modules),
            "linear4bit_layers": sum(isinstance(m, bnb.nn.Linear4bit) for m in modules),
            "trainable_in_tower": sum(p.numel() for p in params if p.requires_grad)}


# The tower's parts by module name, as ms-swift's model metadata names them (the aligner beside the
# vision tower: freeze_aligner, freeze_vit; LLaMA-Factory's projector_key and vision_model_keys in
# model_utils/visual.py are the same modules but for Qwen3-VL, whose pos_embed and deepstack mergers
# it names in neither list): the projector, and the encoder, everything else outside the language model.
PROJECTOR = {"qwen2_vl": ("model.visual.merger.",), "qwen2_5_vl": ("model.visual.merger.",),
             "qwen3_vl": ("model.visual.merger.", "model.visual.deepstack_merger_list."),
             "gemma3": ("model.multi_modal_projector.",), "llava": ("model.multi_modal_projector.",),
             "mistral3": ("model.multi_modal_projector.",), "paligemma": ("model.multi_modal_projector.",)}


def _trained(model_type, folder):
    """A full fine-tune in fp32 that trains the language model and a part of the tower (projector,
    encoder, all): the trainable parameters in the tower, and the bytes of the AdamW states
    torch.optim.AdamW makes for them at its first step (exp_avg and exp_avg_sq; its 0-dim step
    counters are left out, as memfit leaves them out)."""
    from transformers import AutoModelForImageTextToText
    out = {}
    for part in ("projector", "encoder", "all"):
        model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32, device_map="cpu")

        def in_tower(name):
            return "language_model" not in name and "lm_head" not in name

        def trains(name):
            if not in_tower(name):
                return True
            projector = name.startswith(PROJECTOR[model_type])
            return part == "all" or projector == (part == "projector")
        for name, p in model.named_parameters():
            p.requires_grad_(trains(name))
        tower = {id(p) for n, p in model.named_parameters() if in_tower(n) and p.requires_grad}
        trained = [p for p in model.parameters() if p.requires_grad]
        for p in trained:
            p.grad = torch.zeros_like(p)
        optimizer = torch.optim.AdamW(trained, lr=1e-3, foreach=False)
        optimizer.step()
        state_bytes = sum(t.numel() * t.element_size() for p in trained if id(p) in tower
                          for key, t in optimizer.state[p].items() if key != "step")
        out[part] = {"tower_trainable": sum(p.numel() for p in trained if id(p) in tower),
                     "tower_state_bytes": state_bytes}
    return out


def _image_inputs(model_type, config):
    """One small image as each class's get_image_features takes it: Qwen's flattened patches with
    their grid; the others' pixels (Pixtral's with their size, a whole number of merged patches;
    under LLaVA every patch kept, as Pixtral-12B's vision_feature_select_strategy "full")."""
    v = config.vision_config
    if model_type.startswith("qwen"):
        p, t, c = v.patch_size, getattr(v, "temporal_patch_size", 2), getattr(v, "in_channels", 3)
        h, w = 4, 8
        return {"pixel_values": torch.randn(h * w, c * t * p * p), "image_grid_thw": torch.tensor([[1, h, w]])}
    side, kw = v.image_size, {}
    if getattr(v, "model_type", "") == "pixtral":
        side = v.patch_size * (getattr(config, "spatial_merge_size", 1) if model_type == "mistral3" else 1) * 2
        kw["image_sizes"] = torch.tensor([[side, side]])
        if model_type == "llava":
            kw["vision_feature_select_strategy"] = "full"
    kw["pixel_values"] = torch.randn(1, getattr(v, "num_channels", 3), side, side)
    return kw


def _autocast_copies(model_type, folder):
    """The fp32 model with the whole tower trained, an image through it under CUDA's autocast
    policy (cuda_amp.py: its cache of casts of leaf tensors that require grad): the bytes of the
    16-bit copies of the tower's weights it keeps."""
    from transformers import AutoModelForImageTextToText
    from cuda_amp import CudaAutocastEmulation
    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32, device_map="cpu").train()
    tower = {id(p) for n, p in model.named_parameters() if "language_model" not in n and "lm_head" not in n}
    mode = CudaAutocastEmulation(torch.bfloat16)
    torch.manual_seed(0)
    with mode:
        model.model.get_image_features(**_image_inputs(model_type, model.config))
        cached = [copy for leaf, copy in mode.cache.values() if id(leaf) in tower]
    return sum(c.numel() * c.element_size() for c in cached)


def main():
    from transformers import AutoConfig, AutoModelForImageTextToText
    cases = []
    for model_type, text, tower, outer in TOWERS:
        config = AutoConfig.for_model(model_type, text_config=dict(text), vision_config=dict(tower), **outer)
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as folder:
            AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16).save_pretrained(folder)
            with open(os.path.join(folder, "config.json")) as f:
                hf_config = json.load(f)
            trained = _trained(model_type, folder)
            trained["all"]["autocast_copy_bytes"] = _autocast_copies(model_type, folder)
            print(f"{model_type:11s} trained parts: " + ", ".join(f"{k} {v['tower_trainable']:,}" for k, v in trained.items()))
            for name, load, prepare_kbit in VARIANTS:
                measured = _case(model_type, folder, load, prepare_kbit)
                cases.append({"model_type": model_type, "variant": name, "load": load, "prepare_kbit": prepare_kbit,
                              "hf_config": hf_config, "measured": measured,
                              **({"trained": trained} if load == "fp32" else {})})
                print(f"{model_type:11s} {name:17s} {measured['parameters']:>9,} parameters "
                      f"{measured['parameter_bytes'] + measured['quant_state_bytes']:>10,} bytes "
                      f"({measured['linear4bit_layers']} Linear4bit)")
    write_result(OUT, {"versions": {p: md.version(p) for p in ("torch", "transformers", "peft", "bitsandbytes")},
                       "cases": cases})


if __name__ == "__main__":
    main()
