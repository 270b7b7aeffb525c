#!/usr/bin/env python3
"""Golden results: the CLI's JSON for a fixed grid of configurations, pinned by hash.

    python3 tests/golden/golden.py [--memfit build/cli/memfit]            # check
    python3 tests/golden/golden.py --update                                # re-pin (after a deliberate change)

The grid: every preset x every precision recipe x every checkpointing mode x full / LoRA, plus a
set of variations (optimizers, parallel layouts, attention, dropout, offload, QLoRA, ...) on a few
models, plus the PyTorch harness's configurations (tools/validate/grid.py).
Each case's `--json` output is normalised (keys listed in IGNORED, which later versions added to
the result or the configuration echo, are removed) and hashed; tests/golden/golden.json holds
the hashes, and the full output of a sample of cases so that a failure can show what moved.
Standard library only.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(HERE, "golden.json")

PRECISIONS = ["fp32", "fp16_mixed", "bf16_mixed", "fp16_master", "bf16_master", "bf16", "fp8_mixed",
              "seed_14p", "bf16_fsdp"]
CHECKPOINTING = ["none", "selective", "full", "selective_op"]
# Keys that did not exist when the golden file was pinned: removed before hashing, so that adding
# a field (with a default that reproduces the old behaviour) does not count as a change.
IGNORED = {
    "config": {
        "model": ["residual_dropout", "hidden_act", "normalize_before", "num_labels", "lm_head_transform",
                  "is_encoder_decoder", "num_decoder_layers", "decoder_attention_heads", "decoder_ffn_dim",
                  "relative_attention_num_buckets", "position_buckets", "max_relative_positions", "pos_att_type",
                  "share_att_key", "norm_rel_ebd", "attention_sinks", "input_norm", "rotary_per_layer", "qk_norm_layers", "moe_layers_interleaved", "moe_input_jitter", "attention_output_dropout", "head_dropout", "qk_norm_after_rotary",
                  "linear_attention_layers", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                  "linear_value_head_dim", "linear_conv_kernel_dim", "attention_output_gate", "linear_attention_fused",
                  "rotary_table_dtype", "rotary_dim", "norm_weight", "clip_qkv", "multimodal_type",
                  "vision_type", "vision_depth", "vision_hidden_size", "vision_intermediate_size",
                  "vision_out_hidden_size", "vision_patch_size", "vision_temporal_patch_size", "vision_in_channels",
                  "vision_spatial_merge_size", "vision_num_position_embeddings", "vision_deepstack_layers",
                  "vision_use_head", "vision_projector_bias", "vision_encoder", "vision_num_heads",
                  "vision_feature_layer", "vision_tokens_per_image"],
        "training": ["framework", "images_per_sample", "image_patches", "softmax_dtype", "logits_dtype", "attention_mask", "loss", "norm_kernel",
                     "kv_saved", "projections", "activation_kernel", "loop_keeps_logits", "lora_base_dtype", "load",
                     "lora_adapter_dtype", "target_len", "galore_rank", "galore_update_interval", "max_preconditioner_dim",
                     "goal", "sequence_lengths", "compile", "use_cache", "float8", "checkpointed_layers", "loss_shift_copy", "weight_quant", "weight_quant_group_size", "galore_proj_quant", "zero_grad_set_to_none", "checkpoint_impl", "linear_attention_kernel"],
        "parallel": ["fsdp_use_orig_params", "fsdp_version", "async_tp", "reduce_bucket_elements", "virtual_stages", "shard_degree", "pipeline_schedule", "overlap_comm", "float8_all_gather", "zero3_max_reuse_distance", "fsdp_limit_all_gathers", "gradient_sync", "reshard_after_forward", "ddp_bucket_view", "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients", "zero_sub_group_size"],
        "hardware": ["expandable_segments", "gpus_per_node", "price_per_gpu_hour"],
        "training.finetune": ["stable_embedding", "use_rslora", "quant_type", "double_quant", "quant_block_size", "prepare_kbit",
                              "num_virtual_tokens", "encoder_hidden_size", "prefix_projection",
                              "encoder_reparameterization_type", "adapter_len", "adapter_start_layer",
                              "block_size", "boft_n_butterfly_factor", "n_frequency", "num_trainable_tokens", "num_adapters",
                              "modules_to_save", "loaded_before_wrapping", "feedforward_modules", "decompose_factor", "quant_method", "gptq_kernel", "gptq_group_size", "bnb_keeps_input", "trainable_layers", "lowest_trainable_layer", "train_embeddings", "train_head", "train_vision", "nf4_whole_tensor", "target_parameters", "quant_storage"],
    },
    "result": ["implementation", "allocator", "vision_parameter_count", "vision_trained_parameter_count", "vision_activation_bytes"],
    "gpu_row": ["runs", "lacks", "budget_left_bytes"],
}
# Statistics of docs/accuracy.md that tools/accuracy/band.py compiles into the core: they move whenever the
# published-measurement report is regenerated, not when the memory model changes, so they are not pinned.
REPORT_STATISTICS = ["measured_band_bytes", "measured_band_cases", "device_total_band_bytes"]
# GPUs added to the table after the golden file was pinned: their rows in "gpus" are removed.
ADDED_GPUS = {"a100-pcie-80gb", "mi250-64gb", "mi300x-192gb", "mi325x-256gb", "titan-rtx-24gb", "a800-80gb",
              "h800-80gb", "h100-nvl-94gb", "h100-96gb", "rtx-3060-12gb", "rtx-4060ti-16gb", "rtx-5080-16gb",
              "a10-24gb", "rtx-5090-32gb", "rtx-6000-ada-48gb", "a40-48gb", "rtx-pro-6000-96gb"}
SAMPLE_EVERY = 97  # keep the full output of every 97th case


def memfit_json(binary, config):
    proc = subprocess.run([binary, "--config", "-", "--json"], input=json.dumps(config),
                          capture_output=True, text=True)
    if proc.returncode not in (0, 2):
        raise SystemExit(f"memfit failed ({proc.returncode}) on {json.dumps(config)}: {proc.stderr}")
    # Invalid configurations are part of the contract too: their messages are pinned.
    return proc.stdout if proc.returncode == 0 else "ERR " + proc.stderr


def normalise(text):
    if text.startswith("ERR "):
        return text
    result = json.loads(text)
    for key in IGNORED["result"] + REPORT_STATISTICS:
        result.pop(key, None)
    for key in IGNORED["gpu_row"]:
        result.get("fits", {}).pop(key, None)
    if "gpus" in result:
        result["gpus"] = [{k: v for k, v in g.items() if k not in IGNORED["gpu_row"]}
                          for g in result["gpus"] if g.get("gpu") not in ADDED_GPUS]
    for section, keys in IGNORED["config"].items():
        node = result.get("config", {})
        for part in section.split("."):
            node = node.get(part, {})
        for key in keys:
            node.pop(key, None)
    return json.dumps(result, indent=1, sort_keys=False)


def presets(binary):
    out = subprocess.run([binary, "--list-presets"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def cases(binary):
    """(name, config) pairs in a fixed order."""
    for preset in presets(binary):
        for precision in PRECISIONS:
            for ckpt in CHECKPOINTING:
                for method in ("full", "lora"):
                    yield (f"{preset}/{precision}/{ckpt}/{method}",
                           {"model": {"preset": preset},
                            "training": {"precision": precision, "checkpointing": ckpt,
                                         "micro_batch_size": 2, "seq_len": 512,
                                         "finetune": {"method": method}}})
    variations = {
        "optimizer": [{"training": {"optimizer": o}} for o in
                      ("adamw", "adamw_8bit", "paged_adamw", "paged_adamw_8bit", "adafactor", "sgd",
                       "sgd_momentum", "lion")],
        "impl": [{"training": {"optimizer_impl": i}} for i in ("foreach", "fused", "for_loop", "foreach_legacy")],
        "attention": [{"training": {"attention": "eager"}},
                      {"training": {"attention": "eager", "dropout": 0.1}},
                      {"training": {"attention": "eager", "checkpointing": "full"}},
                      {"training": {"attention": "eager", "checkpointing": "selective"}},
                      {"training": {"dropout": 0.1, "finetune": {"method": "lora", "lora_dropout": 0.05}}}],
        "loss": [{"training": {"chunked_loss": True}}, {"training": {"optimizer_in_backward": True}},
                 {"training": {"activation_offload": True}}, {"training": {"grad_accum_steps": 4}}],
        "lora": [{"training": {"finetune": {"method": "lora", "base_bits": b, "lora_rank": r,
                                            "lora_targets": t}}}
                 for b in (16, 8, 4) for r in (8, 64)
                 for t in (["q", "v"], ["q", "k", "v", "o", "gate", "up", "down"], ["q", "head"])],
        "parallel": [{"parallel": p} for p in (
            {"num_gpus": 8, "zero_stage": 1}, {"num_gpus": 8, "zero_stage": 2}, {"num_gpus": 8, "zero_stage": 3},
            {"num_gpus": 8, "zero_stage": 3, "offload_optimizer": True},
            {"num_gpus": 8, "zero_stage": 3, "offload_params": True},
            {"num_gpus": 8, "tensor": 2}, {"num_gpus": 8, "tensor": 2, "sequence_parallel": True},
            {"num_gpus": 8, "pipeline": 2}, {"num_gpus": 16, "tensor": 2, "pipeline": 2, "zero_stage": 1},
            {"num_gpus": 8, "context": 2, "zero_stage": 3})] +
            [{"parallel": {"num_gpus": 8, "pipeline": 4}, "training": {"grad_accum_steps": 8}}],
        "hardware": [{"hardware": h} for h in (
            {"gpu": "t4-16gb"}, {"gpu": "a100-40gb", "budget_fraction": 0.9},
            {"overhead_bytes": 0}, {"fragmentation": 0.0}, {"fragmentation": 0.25})],
        "invalid": [{"training": {"seq_len": 0}}, {"parallel": {"num_gpus": 3, "tensor": 2}},
                    {"model": {"num_attention_heads": 7}}, {"hardware": {"gpu": "nope"}}],
    }
    models = ["gpt2", "llama-3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "bert-base-uncased",
              "gemma-2-9b", "seed-llama-7b"]
    for model in models:
        for group, items in variations.items():
            for i, patch in enumerate(items):
                config = {"model": {"preset": model}, "training": {"micro_batch_size": 2, "seq_len": 512}}
                for section, values in patch.items():
                    config.setdefault(section, {})
                    for k, v in values.items():
                        if isinstance(v, dict):
                            config[section].setdefault(k, {}).update(v)
                        else:
                            config[section][k] = v
                if model in ("mixtral-8x7b", "qwen3-30b-a3b") and group == "parallel" and i == 0:
                    config["parallel"]["expert"] = 8
                yield f"{model}/{group}/{i}", config
    sys.path.insert(0, os.path.join(ROOT, "tools", "validate"))
    import grid  # the PyTorch harness's configurations (its module imports no torch at load time)
    for entry in grid.grid():
        yield f"harness/{entry['name']}", entry["config"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memfit", default=os.path.join(ROOT, "build", "cli", "memfit"))
    ap.add_argument("--update", action="store_true", help="re-pin the golden hashes")
    args = ap.parse_args()

    hashes, samples = {}, {}
    for i, (name, config) in enumerate(cases(args.memfit)):
        text = normalise(memfit_json(args.memfit, config))
        hashes[name] = hashlib.sha256(text.encode()).hexdigest()[:24]
        if i % SAMPLE_EVERY == 0:
            samples[name] = {"config": config, "output": text}

    if args.update:
        with open(GOLDEN, "w") as f:
            json.dump({"about": "tests/golden/golden.py --update writes this; see the script's docstring",
                       "hashes": hashes, "samples": samples}, f, indent=0, sort_keys=True)
            f.write("\n")
        print(f"golden: pinned {len(hashes)} cases")
        return 0

    with open(GOLDEN) as f:
        golden = json.load(f)
    moved = [n for n in golden["hashes"] if hashes.get(n) != golden["hashes"][n]]
    added = [n for n in hashes if n not in golden["hashes"]]
    for name in moved[:int(os.environ.get("GOLDEN_SHOW", "10"))]:
        print(f"golden: {name} changed" + ("" if name in hashes else " (case no longer generated)"))
        if name in golden["samples"]:
            old = golden["samples"][name]["output"].splitlines()
            new = samples.get(name, {}).get("output", "").splitlines()
            import difflib
            for line in list(difflib.unified_diff(old, new, "pinned", "now", lineterm="", n=1))[:40]:
                print("   ", line)
    if moved:
        print(f"golden: {len(moved)} of {len(golden['hashes'])} cases changed; if deliberate, re-pin with --update")
        return 1
    print(f"golden: {len(hashes)} cases identical to the pinned results"
          + (f" ({len(added)} new, not pinned)" if added else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
