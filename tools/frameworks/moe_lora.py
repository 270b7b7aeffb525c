#!/usr/bin/env python3
"""LoRA on mixture-of-experts models as PEFT applies it to transformers 5's stacked experts.

    .venv-frameworks/bin/python tools/frameworks/moe_lora.py          # -> out/moe_lora.json
    options: --memfit BIN (default build/cli/memfit), --only mixtral, --explain

transformers 5 stores a MoE layer's experts as 3-D parameters (`experts.gate_up_proj` E x 2ff x d,
`experts.down_proj` E x d x ff) and runs them with grouped GEMMs. PEFT 0.21 cannot wrap those in
nn.Linear adapters; it maps the old target names onto the parameters
(peft/utils/transformers_weight_conversion.py `_convert_peft_config_moe`: gate/up -> gate_up_proj
at rank 2r, down -> down_proj, the router `gate` -> gate.weight) and wraps each with a ParamWrapper
(peft/tuners/lora/layer.py): one adapter over all experts, A (r E x in) and B (out x r E), applied
by parametrizing the weight with W + s * B A (`_LoraFactorsProxy`, one baddbmm in the weight's
dtype), which the grouped GEMM then saves for backward.

For each family (the vendored config.json shrunk as families.py shrinks it) and each target set, a
tiny model is wrapped with the real PEFT and the step is measured as families.py measures it
(measure.py: saved-tensor hooks, CUDA-equivalent bytes): fp32 with eager attention, and the PEFT
recipe under bf16 autocast (a bf16 base, fp32 adapters, SDPA). memfit runs the same tiny file with
the same LoRA settings (`training.expert_weights` left at auto: stacked under the hf profile).
Reported: PEFT's trainable count against memfit's (must be equal) and the activations as
memfit / measured; compare.py --check holds them.

A 4-bit base (bitsandbytes NF4, as transformers' BitsAndBytesConfig loads it): bitsandbytes
replaces nn.Linear modules only, so the stacked experts stay in the load dtype, and in fp32 after
PEFT's prepare_model_for_kbit_training. The tiny model is saved in bf16 and loaded back quantised
(no download); its bytes (every parameter, the 4-bit ones with their quantisation state) against
memfit's frozen base for the same file, to the byte.
"""

import json
import os
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import families as F  # noqa: E402
import measure as M  # noqa: E402
import torch  # noqa: E402

# Family -> the names its transformers 4 checkpoint gave the expert projections (what users write in
# target_modules; PEFT maps them onto the stacked parameters), or, for gpt-oss, which is not in
# PEFT's mapping, the stacked parameters themselves (LoraConfig target_parameters: each at rank r;
# memfit's training.finetune.target_parameters). gpt-oss runs eager attention (no SDPA path) and its
# router is not a Linear (no all-linear case).
# Qwen2-MoE (Qwen1.5-MoE) is not in the table either: its module names reach the shared expert's
# nn.Linear projections and not the routed experts; DeepSeek-V3 is, and its names move to the
# stacked experts, so its dense first layer's MLP and its shared experts lose their adapters
# (peft.hpp ExpertTargeting). DeepSeek's latent attention: memfit's q is q_a_proj and q_b_proj, k
# kv_a_proj_with_mqa, v kv_b_proj.
GATED_NAMES = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
FAMILIES = {
    "mixtral": {"gate": "w1", "up": "w3", "down": "w2"},
    # MiniMax-M2: Mixtral's names (transformers' conversion table maps minimax_m2 as mixtral).
    "minimax_m2": {"gate": "w1", "up": "w3", "down": "w2"},
    "qwen3_moe": GATED_NAMES,
    # dots.llm1: in the conversion table as Qwen2-MoE's pattern (transformers' conversion_mapping.py)
    "dots1": GATED_NAMES,
    "gpt_oss": {"parameters": {"gate": "mlp.experts.gate_up_proj", "up": "mlp.experts.gate_up_proj",
                               "down": "mlp.experts.down_proj"}},
    "qwen2_moe": GATED_NAMES,
    "deepseek_v3": dict(GATED_NAMES, attention={"q": ["q_a_proj", "q_b_proj"], "k": ["kv_a_proj_with_mqa"],
                                                "v": ["kv_b_proj"], "o": ["o_proj"]}),
    # GLM-4.7-Flash: DeepSeek-V3's latent attention, its MoE in PEFT's mapping (as GLM-4.5's).
    "glm4_moe_lite": dict(GATED_NAMES, attention={"q": ["q_a_proj", "q_b_proj"], "k": ["kv_a_proj_with_mqa"],
                                                  "v": ["kv_b_proj"], "o": ["o_proj"]}),
    # Mistral 4: DeepSeek-V3's names, but not in PEFT's mapping (alone, or under Mistral 3's wrapper):
    # they reach the first dense layers' MLPs and the shared experts only.
    "mistral4": dict(GATED_NAMES, attention={"q": ["q_a_proj", "q_b_proj"], "k": ["kv_a_proj_with_mqa"],
                                             "v": ["kv_b_proj"], "o": ["o_proj"]}),
    # Llama 4 (every expert on every token through torch.bmm): PEFT's own target_parameters example;
    # its router is an nn.Linear whose tuple output PEFT's LoRA layer cannot take (no all-linear).
    "llama4_text": {"parameters": {"gate": "feed_forward.experts.gate_up_proj",
                                   "up": "feed_forward.experts.gate_up_proj",
                                   "down": "feed_forward.experts.down_proj"}},
}
# PEFT's all-linear on Qwen2-MoE also adapts shared_expert_gate (an nn.Linear d -> 1), which no
# memfit target names; its router, a parameter under transformers 5, is not reached.
NO_ALL_LINEAR = ("gpt_oss", "qwen2_moe", "llama4_text")
QLORA_FAMILIES = ("mixtral", "qwen3_moe")
ATTENTION = ["q", "k", "v", "o"]
TARGET_SETS = {
    "attention": ATTENTION,
    "attention_mlp": ATTENTION + ["gate", "up", "down"],
    "experts_down": ATTENTION + ["down"],
    "all_linear": ATTENTION + ["gate", "up", "down", "router"],
}
RANK = 4
TOLERANCE = 0.01


def peft_targets(family, targets):
    """LoraConfig's target_modules (and target_parameters) for memfit's targets."""
    if targets == TARGET_SETS["all_linear"]:
        return {"target_modules": "all-linear"}
    names = {"q": ["q_proj"], "k": ["k_proj"], "v": ["v_proj"], "o": ["o_proj"]}
    names.update(FAMILIES[family].get("attention", {}))
    parameters = FAMILIES[family].get("parameters")
    if parameters is None:
        names.update({t: [n] for t, n in FAMILIES[family].items() if t in ("gate", "up", "down")})
        return {"target_modules": [n for t in targets for n in names[t]]}
    out = {"target_modules": [n for t in targets if t in names for n in names[t]]}
    stacked = sorted({parameters[t] for t in targets if t in parameters})
    if stacked:
        out["target_parameters"] = stacked
    return out


def memfit_extra(family):
    """The memfit settings a family's cases add (compare.py reads them from the rows)."""
    return {"training.finetune.target_parameters": "true"} if "parameters" in FAMILIES[family] else {}


def _build(case):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    from compat import peft_without_torchao
    peft_without_torchao()
    from peft import LoraConfig, get_peft_model
    cfg = AutoConfig.for_model(**case["hf_config"])
    # PEFT's recipe under autocast: the frozen base in bf16, the adapters upcast to fp32
    # (get_peft_model's autocast_adapter_dtype=True), Trainer bf16=True.
    dtype = torch.bfloat16 if case["precision"] == "bf16_mixed" else torch.float32
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=case["attention"], dtype=dtype)
    model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=2 * RANK, lora_dropout=0.0, **case["peft_targets"]))
    model.train()
    return M.Built(model, M.hf_trainer_forward(model, case["precision"]),
                   note="transformers %s %s + peft LoRA" % (transformers.__version__, type(model).__name__))


def quantized_bytes(model):
    """Every parameter's bytes; a bitsandbytes 4-bit one as stored: the packed weight and its
    QuantState's tensors (absmax, code, and the nested state's under double quantisation)."""
    total = 0
    for p in model.parameters():
        total += p.numel() * p.element_size()
        q = getattr(p, "quant_state", None)
        if q is None:
            continue
        tensors = [q.absmax, q.code] + ([q.offset, q.state2.absmax, q.state2.code] if q.nested else [])
        total += sum(t.numel() * t.element_size() for t in tensors)
    return total


def measure_qlora_base(small, double_quant, prepare):
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig
    cfg = AutoConfig.for_model(**small)
    with tempfile.TemporaryDirectory() as folder:
        AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).save_pretrained(folder)
        quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16,
                                   bnb_4bit_use_double_quant=double_quant)
        model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant, dtype=torch.bfloat16,
                                                     device_map="cpu")
    if prepare:
        from compat import peft_without_torchao
        peft_without_torchao()
        from peft import prepare_model_for_kbit_training
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    experts = [p for n, p in model.named_parameters() if ".experts." in n]
    return {"bytes": quantized_bytes(model), "expert_dtype": str(experts[0].dtype).replace("torch.", "")}


def run_memfit_qlora(binary, path, double_quant, prepare):
    sets = {"training.finetune.method": "lora", "training.finetune.lora_rank": RANK,
            "training.finetune.lora_targets": "q", "training.finetune.base_bits": 4,
            "training.finetune.quant_type": "nf4", "training.finetune.double_quant": str(double_quant).lower(),
            "training.finetune.prepare_kbit": str(prepare).lower(), "training.precision": "bf16_mixed",
            "training.lora_adapter_dtype": "fp32", "hardware.gpu": "h100-sxm-80gb"}
    r = F.memfit_json(binary, path, sets)
    if "error" in r:
        return r
    # the frozen base: the weights less the fp32 adapters
    return {"base_bytes": r["breakdown"]["parameters"] - r["trainable_parameter_count"] * 4}


def run_memfit(binary, path, precision, attention, targets, extra):
    sets = {"training.micro_batch_size": F.TINY["batch"], "training.seq_len": F.TINY["seq"],
            "training.precision": precision, "training.attention": attention,
            "training.checkpointing": "none", "training.dropout": 0, "training.optimizer": "adamw",
            "training.finetune.method": "lora", "training.finetune.lora_rank": RANK,
            "training.finetune.lora_dropout": 0, "training.finetune.lora_targets": ",".join(targets),
            "hardware.gpu": "h100-sxm-80gb"}
    if precision == "bf16_mixed":
        sets["training.lora_base_dtype"] = "half"
        sets["training.lora_adapter_dtype"] = "fp32"
    sets.update(extra)
    r = F.memfit_json(binary, path, sets)
    if "error" in r:
        return r
    return {"activations": r["breakdown"]["activations"], "trainable": r["trainable_parameter_count"]}


def main():
    args = F.tool_args("moe_lora.json")
    M.BUILDERS["moe_lora"] = _build
    want = set(args.only.split(",")) if args.only else set(FAMILIES)
    rows, qlora, problems, tiny_configs = [], [], [], {}
    only_targets = set(os.environ.get("MOE_LORA_TARGETS", ",".join(TARGET_SETS)).split(","))
    for family in FAMILIES:
        if family not in want:
            continue
        config = F.language_model(json.load(open(os.path.join(ROOT, "tests", "fixtures", "hf", F.FIXTURES[family]))),
                                  family)
        small = F.tiny(config)
        tiny_configs[family] = small
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(small, f)
            small_path = f.name
        try:
            sets = [(k, v) for k, v in TARGET_SETS.items() if k in only_targets]
            if family in NO_ALL_LINEAR:
                sets = [(k, v) for k, v in sets if k != "all_linear"]
            # gpt-oss has no SDPA path; DeepSeek's query and value head dims differ, for which the CPU's
            # SDPA takes its math kernel (fp32 bmm and softmax), not CUDA's memory-efficient one
            # (families.py shows the gap): both run eager attention under autocast here.
            fast = "eager" if family in ("gpt_oss", "deepseek_v3", "mistral4", "glm4_moe_lite") else "sdpa"
            for label, targets in sets:
                for precision, attention in (("fp32", "eager"), ("bf16_mixed", fast)):
                    name = "%s-%s-%s" % (family, label, precision)
                    M.SIZES[name] = dict(vocab_size=F.TINY["vocab"], batch=F.TINY["batch"], seq_len=F.TINY["seq"])
                    case = {"name": name, "framework": "moe_lora", "family": family, "size": name,
                            "attention": attention, "precision": precision, "hf_config": small,
                            "peft_targets": peft_targets(family, targets)}
                    measured = M.run_once(case, "cuda" if precision == "bf16_mixed" else None)
                    body = measured["saved"]["body_bytes_cuda"]
                    mf = run_memfit(args.memfit, small_path, precision, attention, targets, memfit_extra(family))
                    row = {"family": family, "targets": label, "memfit_targets": targets,
                           "memfit_extra": memfit_extra(family),
                           "peft_targets": case["peft_targets"], "precision": precision, "attention": attention,
                           "measured_body_bytes_cuda": body,
                           "measured_trainable": measured["trainable_parameter_count"], "memfit": mf}
                    if mf.get("activations") is None:
                        problems.append("%s: %s" % (name, mf.get("error", "no result")))
                    else:
                        row["ratio"] = round(mf["activations"] / body, 4)
                        if abs(row["ratio"] - 1) > TOLERANCE:
                            problems.append("%s: memfit activations %d, measured %d (ratio %.4f)" % (
                                name, mf["activations"], body, row["ratio"]))
                        if mf["trainable"] != row["measured_trainable"]:
                            problems.append("%s: trainable memfit %d, PEFT %d" % (
                                name, mf["trainable"], row["measured_trainable"]))
                    rows.append(row)
                    print("%-10s %-14s %-10s trainable peft %7d memfit %7s   saved %9d memfit %9s ratio %s" % (
                        family, label, precision, row["measured_trainable"], mf.get("trainable"), body,
                        mf.get("activations"), row.get("ratio")), file=sys.stderr)
            for double_quant in ((False, True) if family in QLORA_FAMILIES else ()):
                for prepare in (False, True):
                    measured = measure_qlora_base(small, double_quant, prepare)
                    mf = run_memfit_qlora(args.memfit, small_path, double_quant, prepare)
                    row = {"family": family, "double_quant": double_quant, "prepare_kbit": prepare,
                           "measured_base_bytes": measured["bytes"], "expert_dtype": measured["expert_dtype"],
                           "memfit": mf}
                    qlora.append(row)
                    if mf.get("base_bytes") != measured["bytes"]:
                        problems.append("%s 4-bit base (double_quant %s, prepare_kbit %s): memfit %s, measured %d" % (
                            family, double_quant, prepare, mf.get("base_bytes", mf.get("error")), measured["bytes"]))
                    print("%-10s 4-bit base double_quant %-5s prepare_kbit %-5s experts %-8s measured %9d memfit %9s" % (
                        family, double_quant, prepare, measured["expert_dtype"], measured["bytes"],
                        mf.get("base_bytes")), file=sys.stderr)
        finally:
            os.unlink(small_path)
    import importlib.metadata as md
    doc = {"about": __doc__.strip().splitlines()[0],
           "versions": {k: md.version(k) for k in ("torch", "transformers", "peft", "bitsandbytes")},
           "tiny": F.TINY, "tiny_configs": tiny_configs, "rank": RANK, "tolerance": TOLERANCE, "cases": rows, "qlora_base": qlora,
           "problems": problems}
    F.write_report(doc, args.out, problems, write=not args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
