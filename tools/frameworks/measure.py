#!/usr/bin/env python3
"""Ground truth from the frameworks' real code: one training step per case, on the CPU.

    .venv-frameworks/bin/python tools/frameworks/measure.py            # all cases -> out/measurements.json
    .venv-frameworks/bin/python tools/frameworks/measure.py --only hf-llama-s1-eager-fp32,nanogpt-s1-flash-bf16_mixed
    .venv-frameworks/bin/python tools/frameworks/measure.py --list
    options: --memfit BIN (default /work/main/build/cli/memfit, then build/cli/memfit), --no-memfit,
             --nanogpt PATH/model.py (default: karpathy/nanoGPT's model.py from the fetched mirror),
             --out FILE, --explain (per-op table on stderr: the first layer, or EXPLAIN_LAYERS=N layers)

Each case builds the framework's real model from a tiny config (no weights are downloaded),
runs two training steps the way the framework's recipe runs them (its loss, its dtype
handling, what its loop keeps alive), and measures the second step:

* parameters, trainable parameters, gradient bytes, AdamW state bytes;
* bytes saved for backward (torch.autograd.graph.saved_tensors_hooks; each storage once;
  parameter and buffer storages excluded), split body (embeddings, blocks, final norm) /
  head (output projection and loss), per layer and per (module, backward node);
* the CPU allocator timeline (torch.profiler, profile_memory): live bytes after forward,
  forward / backward / optimizer peaks, and what is alive after forward that autograd
  did not save (logits the loop keeps, the loss);
* under bf16 autocast, two runs: the real CPU autocast (`cpu_raw`) and the CUDA autocast
  op lists emulated on the CPU (`cuda_amp`, see cuda_amp.py), because the two lists differ;
* a CUDA-equivalent total where a CPU/CUDA kernel difference is a known rule (rules listed
  in the output's "cuda_rules" and applied per saved tensor).

Then memfit's current CLI is run on the equivalent configuration (today's fields) and its
breakdown.activations / logits_and_loss / peak_allocated_bytes are put beside the numbers.
"""

import argparse
import contextlib
import copy
import importlib.util
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402

torch.set_num_threads(1)

from cuda_amp import CudaAutocastEmulation  # noqa: E402
from savetrack import SaveTracker, storage_key  # noqa: E402

NANOGPT_MIRROR = "/work/.mirror/karpathy+nanoGPT/repo"

# --------------------------------------------------------------------------- sizes
SIZES = {
    # d=128, 2 layers, 4 heads (2 kv heads where GQA), V=512, T=64, B=2
    "s1": dict(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, intermediate_size=344, seq_len=64, batch=2),
    # d=256, 3 layers, 8 heads (2 kv heads), V=1000, T=128, B=2
    "s2": dict(vocab_size=1000, hidden_size=256, num_hidden_layers=3, num_attention_heads=8,
               num_key_value_heads=2, intermediate_size=688, seq_len=128, batch=2),
}


def V(s, k):
    return SIZES[s][k]


# --------------------------------------------------------------------------- frameworks
class Built:
    """A model plus the framework's step: forward(ids, labels) -> (loss, held)
    where held are the tensors the framework's loop keeps referenced through backward
    (and, for loops that reassign at the next forward, until the next forward ends)."""

    def __init__(self, model, forward, modules=None, note="", buffers_note=""):
        self.model = model
        self.forward = forward
        self.modules = modules or {"": model}
        self.note = note


def _hf_build(case):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    s, fam = case["size"], case["family"]
    common = dict(vocab_size=V(s, "vocab_size"), hidden_size=V(s, "hidden_size"),
                  num_hidden_layers=V(s, "num_hidden_layers"),
                  num_attention_heads=V(s, "num_attention_heads"))
    if fam == "gpt2":
        drop = case.get("dropout", 0.0)
        cfg = AutoConfig.for_model("gpt2", vocab_size=V(s, "vocab_size"), n_embd=V(s, "hidden_size"),
                                   n_layer=V(s, "num_hidden_layers"), n_head=V(s, "num_attention_heads"),
                                   n_positions=2 * V(s, "seq_len"), resid_pdrop=drop, embd_pdrop=drop,
                                   attn_pdrop=drop)
    else:
        extra = dict(num_key_value_heads=V(s, "num_key_value_heads"),
                     intermediate_size=V(s, "intermediate_size"),
                     max_position_embeddings=4 * V(s, "seq_len"), tie_word_embeddings=False)
        if fam == "mistral":
            extra["sliding_window"] = None
        cfg = AutoConfig.for_model(fam, **common, **extra)
    dtype = torch.bfloat16 if case["precision"] == "bf16" else torch.float32
    if case.get("weights") == "bf16":
        # transformers 5: from_pretrained(dtype="auto") loads a bf16 checkpoint in bf16; with
        # Trainer bf16=True that is bf16 weights (and AdamW states) + autocast
        dtype = torch.bfloat16
    if case.get("peft"):
        # PEFT's recipe: the frozen base loaded in bf16 (torch_dtype=torch.bfloat16), the
        # adapters upcast to fp32 by get_peft_model (autocast_adapter_dtype=True), Trainer bf16=True
        dtype = torch.bfloat16
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=case["attention"], dtype=dtype)
    note = "transformers %s %s" % (transformers.__version__, type(model).__name__)
    if case.get("peft"):
        from peft import LoraConfig, get_peft_model
        from compat import peft_without_torchao
        peft_without_torchao()
        model = get_peft_model(model, LoraConfig(r=case["peft"]["r"], lora_alpha=2 * case["peft"]["r"],
                                                 target_modules=case["peft"]["targets"], lora_dropout=0.0))
        note += " + peft LoRA"
    model.train()
    return Built(model, hf_trainer_forward(model, case["precision"]), note=note)


def hf_trainer_forward(model, precision):
    """The step's forward as HF Trainer runs a transformers model: forward(ids, labels) -> (loss, held)."""
    call = model
    if precision == "bf16_mixed":
        # accelerate.prepare (HF Trainer, bf16=True): model.forward = convert_outputs_to_fp32(
        # autocast(forward)) -- the returned bf16 logits get an fp32 copy (accelerator.py:1830)
        from accelerate.utils import convert_outputs_to_fp32
        call = convert_outputs_to_fp32(model.forward)

    def forward(ids, labels):
        # HF Trainer.compute_loss: outputs = model(**inputs); loss = outputs["loss"];
        # the outputs (and their logits) go out of scope before backward.
        out = call(input_ids=ids, labels=labels)
        return out["loss"], []
    return forward


def _torchtune_build(case):
    from torchtune.models.llama3 import llama3, lora_llama3
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    from torchtune.modules.peft import get_adapter_params, set_trainable_params
    s = case["size"]
    dims = dict(vocab_size=V(s, "vocab_size"), num_layers=V(s, "num_hidden_layers"),
                num_heads=V(s, "num_attention_heads"), num_kv_heads=V(s, "num_key_value_heads"),
                embed_dim=V(s, "hidden_size"), max_seq_len=4 * V(s, "seq_len"),
                intermediate_dim=V(s, "intermediate_size"))
    dtype = torch.bfloat16 if case["precision"] == "bf16" else torch.float32
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # torchtune: training.set_default_dtype(self._dtype) around the build
    try:
        if case.get("peft"):
            model = lora_llama3(lora_attn_modules=case["peft"]["targets"], lora_rank=case["peft"]["r"],
                                lora_alpha=2 * case["peft"]["r"], apply_lora_to_mlp=case["peft"].get("mlp", False),
                                **dims)
            set_trainable_params(model, get_adapter_params(model))
        else:
            model = llama3(**dims)
    finally:
        torch.set_default_dtype(old)
    loss_fn = CEWithChunkedOutputLoss()   # recipes' default loss, 8 output chunks
    if case.get("compile_loss"):
        # recipe `compile: True` -> training.compile_loss(loss_fn): torch.compile of
        # compute_cross_entropy only (the upcast + CE of one chunk)
        from torchtune.training import compile_loss
        compile_loss(loss_fn, verbose=False)
    model.set_num_output_chunks(loss_fn.num_output_chunks)
    model.train()
    B = V(s, "batch")
    ignore_labels_cache = torch.full((B, 1), loss_fn.ignore_index)

    def forward(ids, labels):
        # recipes/full_finetune_single_device.py _loss_step + train loop
        logits = model(ids)
        labels = torch.hstack((labels[..., 1:], ignore_labels_cache[: labels.shape[0]]))
        num_tokens = (labels != loss_fn.ignore_index).sum()
        loss = loss_fn(logits, labels)
        del logits   # "free logits otherwise it peaks backward memory"
        return loss * num_tokens, []
    return Built(model, forward, modules={"": model, "loss": loss_fn},
                 note="torchtune llama3%s builder, CEWithChunkedOutputLoss(8)%s" %
                 (" LoRA" if case.get("peft") else "",
                  ", compute_cross_entropy compiled (inductor)" if case.get("compile_loss") else ""))


def _litgpt_build(case):
    from litgpt.utils import chunked_cross_entropy
    s = case["size"]
    kw = dict(block_size=4 * V(s, "seq_len"), vocab_size=V(s, "vocab_size"), padding_multiple=1,
              padded_vocab_size=V(s, "vocab_size"), n_layer=V(s, "num_hidden_layers"),
              n_embd=V(s, "hidden_size"), n_head=V(s, "num_attention_heads"))
    if case["family"] == "llama":
        kw.update(n_query_groups=V(s, "num_key_value_heads"), rotary_percentage=1.0,
                  parallel_residual=False, bias=False, norm_class_name="RMSNorm",
                  mlp_class_name="LLaMAMLP", intermediate_size=V(s, "intermediate_size"))
    else:  # GPT-NeoX / Pythia style: LayerNorm, GELU MLP, biases, parallel residual, 25% rotary
        kw.update(n_query_groups=V(s, "num_attention_heads"), rotary_percentage=0.25,
                  parallel_residual=True, bias=True, norm_class_name="LayerNorm",
                  mlp_class_name="GptNeoxMLP", intermediate_size=4 * V(s, "hidden_size"))
    lora = case.get("peft")
    if lora:
        from litgpt.lora import GPT, Config, mark_only_lora_as_trainable
        cfg = Config(lora_r=lora["r"], lora_alpha=2 * lora["r"], lora_dropout=0.0,
                     lora_query="q" in lora["targets"], lora_key="k" in lora["targets"],
                     lora_value="v" in lora["targets"], lora_projection="o" in lora["targets"],
                     lora_mlp=lora.get("mlp", False),
                     lora_head=False, **kw)
    else:
        from litgpt import GPT, Config
        cfg = Config(**kw)
    dtype = torch.bfloat16 if case["precision"] == "bf16" else torch.float32
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # fabric.init_module() under "bf16-true"
    try:
        model = GPT(cfg)
    finally:
        torch.set_default_dtype(old)
    if lora:
        mark_only_lora_as_trainable(model)
    model.max_seq_length = V(s, "seq_len")  # finetune/*.py: the longest sequence in the data
    model.train()

    if lora:
        def forward(ids, targets):
            # litgpt/finetune/lora.py fit(): the loop variable `logits` lives until reassigned
            logits = model(ids, lm_head_chunk_size=128)
            logits[-1] = logits[-1][..., :-1, :]
            loss = chunked_cross_entropy(logits, targets[..., 1:])
            return loss, list(logits)
    else:
        def forward(ids, targets):
            # litgpt/finetune/full.py fit()
            logits = model(ids)
            loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:])
            return loss, [logits]
    return Built(model, forward, note="litgpt GPT (%s), chunked_cross_entropy%s" %
                 (case["family"], ", LoRA, lm_head_chunk_size=128" if lora else ""))


_NANOGPT = {}


def _nanogpt_module(path):
    if "mod" in _NANOGPT:
        return _NANOGPT["mod"]
    if path is None:
        tmp = tempfile.mkdtemp(prefix="nanogpt-")
        path = os.path.join(tmp, "model.py")
        with open(path, "wb") as f:
            f.write(subprocess.check_output(["git", "-C", NANOGPT_MIRROR, "show", "HEAD:model.py"]))
        _NANOGPT["commit"] = subprocess.check_output(
            ["git", "-C", NANOGPT_MIRROR, "rev-parse", "HEAD"]).decode().strip()
    spec = importlib.util.spec_from_file_location("nanogpt_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _NANOGPT["mod"] = mod
    return mod


def _nanogpt_build(case):
    mod = _nanogpt_module(ARGS.nanogpt)
    s = case["size"]
    cfg = mod.GPTConfig(block_size=2 * V(s, "seq_len"), vocab_size=V(s, "vocab_size"),
                        n_layer=V(s, "num_hidden_layers"), n_head=V(s, "num_attention_heads"),
                        n_embd=V(s, "hidden_size"), dropout=case.get("dropout", 0.0), bias=True)
    with contextlib.redirect_stdout(io.StringIO()):
        model = mod.GPT(cfg)
    if case["attention"] == "eager":   # the model's manual path (torch < 2.0)
        bs = cfg.block_size
        for m in model.modules():
            if hasattr(m, "flash"):
                m.flash = False
                m.register_buffer("bias", torch.tril(torch.ones(bs, bs)).view(1, 1, bs, bs))
    if case.get("_attn_dropout_off"):   # see CUDA_RULES["sdpa_dropout"]
        for m in model.modules():
            if hasattr(m, "flash"):
                m.dropout = 0.0
    if case["precision"] == "bf16":
        model.to(torch.bfloat16)
    model.train()

    def forward(ids, targets):
        # train.py: `logits, loss = model(X, Y)`; `logits` stays referenced through
        # backward and until the next micro-step's forward reassigns it.
        logits, loss = model(ids, targets)
        return loss, [logits]
    return Built(model, forward, note="nanoGPT model.py @%s" % _NANOGPT.get("commit", "local")[:12])


BUILDERS = {"hf": _hf_build, "torchtune": _torchtune_build, "litgpt": _litgpt_build,
            "nanogpt": _nanogpt_build}


# --------------------------------------------------------------------------- cases
def _mk(fw, family, size, attention, precision, **kw):
    name = "-".join([fw, family, size, attention, precision] +
                    (["compiled_loss"] if kw.get("compile_loss") else []) +
                    (["w16"] if kw.get("weights") == "bf16" else []) +
                    (["lora"] if kw.get("peft") else []) +
                    (["mlp"] if (kw.get("peft") or {}).get("mlp") else []) +
                    (["drop%g" % kw["dropout"]] if kw.get("dropout") else []))
    c = dict(name=name, framework=fw, family=family, size=size, attention=attention,
             precision=precision)
    c.update(kw)
    return c


def all_cases():
    cs = []
    LORA = {"r": 8, "targets": ["q_proj", "v_proj"]}
    for fam in ("llama", "gpt2"):
        for att in ("eager", "sdpa"):
            for prec in ("fp32", "bf16_mixed"):
                cs.append(_mk("hf", fam, "s1", att, prec))
    cs.append(_mk("hf", "llama", "s1", "eager", "bf16"))
    cs.append(_mk("hf", "llama", "s1", "sdpa", "bf16"))
    cs.append(_mk("hf", "gpt2", "s1", "eager", "fp32", dropout=0.1))
    cs.append(_mk("hf", "mistral", "s1", "eager", "bf16_mixed"))
    cs.append(_mk("hf", "mistral", "s1", "sdpa", "bf16_mixed"))
    cs.append(_mk("hf", "qwen2", "s1", "eager", "bf16_mixed"))
    cs.append(_mk("hf", "qwen2", "s1", "sdpa", "bf16_mixed"))
    cs.append(_mk("hf", "llama", "s2", "eager", "bf16_mixed"))
    cs.append(_mk("hf", "llama", "s2", "sdpa", "bf16_mixed"))
    cs.append(_mk("hf", "gpt2", "s2", "eager", "bf16_mixed"))
    cs.append(_mk("hf", "llama", "s1", "sdpa", "bf16_mixed", peft=LORA))
    cs.append(_mk("hf", "llama", "s1", "sdpa", "bf16_mixed", weights="bf16"))
    cs.append(_mk("hf", "gpt2", "s1", "sdpa", "bf16_mixed", weights="bf16"))
    for s in ("s1", "s2"):
        cs.append(_mk("torchtune", "llama", s, "sdpa", "bf16"))
    cs.append(_mk("torchtune", "llama", "s1", "sdpa", "fp32"))
    cs.append(_mk("torchtune", "llama", "s1", "sdpa", "bf16", compile_loss=True))
    cs.append(_mk("torchtune", "llama", "s1", "sdpa", "bf16", peft={"r": 8, "targets": ["q_proj", "v_proj"]}))
    # Every projection and the MLP (torchtune's lora_attn_modules + apply_lora_to_mlp; LitGPT's lora_* flags).
    cs.append(_mk("torchtune", "llama", "s1", "sdpa", "bf16",
                  peft={"r": 8, "targets": ["q_proj", "k_proj", "v_proj", "output_proj"], "mlp": True}))
    for fam in ("llama", "neox"):
        for prec in ("fp32", "bf16_mixed", "bf16"):
            cs.append(_mk("litgpt", fam, "s1", "sdpa", prec))
    cs.append(_mk("litgpt", "llama", "s2", "sdpa", "bf16_mixed"))
    cs.append(_mk("litgpt", "llama", "s1", "sdpa", "bf16_mixed", peft={"r": 8, "targets": ["q", "v"]}))
    cs.append(_mk("litgpt", "llama", "s1", "sdpa", "bf16", peft={"r": 8, "targets": ["q", "k", "v", "o"], "mlp": True}))
    cs.append(_mk("litgpt", "neox", "s1", "sdpa", "bf16", peft={"r": 8, "targets": ["q", "k", "v", "o"], "mlp": True}))
    for att in ("flash", "eager"):
        for prec in ("fp32", "bf16_mixed"):
            cs.append(_mk("nanogpt", "gpt2", "s1", att, prec))
    cs.append(_mk("nanogpt", "gpt2", "s2", "flash", "bf16_mixed"))
    cs.append(_mk("nanogpt", "gpt2", "s1", "flash", "bf16_mixed", dropout=0.1))
    return cs


# --------------------------------------------------------------------------- memfit config
def shape_fields(case):
    s, fam, fw = case["size"], case["family"], case["framework"]
    m = dict(vocab_size=V(s, "vocab_size"), hidden_size=V(s, "hidden_size"),
             num_hidden_layers=V(s, "num_hidden_layers"),
             num_attention_heads=V(s, "num_attention_heads"), head_dim=0)
    if fam in ("gpt2",):
        m.update(num_key_value_heads=V(s, "num_attention_heads"), intermediate_size=4 * V(s, "hidden_size"),
                 mlp="plain", norm="layernorm", norm_bias=True, position_embedding="learned",
                 max_position_embeddings=2 * V(s, "seq_len"), tie_word_embeddings=True,
                 attention_bias=True, mlp_bias=True, block="sequential", model_type="gpt2",
                 # transformers' GPT2MLP uses activation_function "gelu_new" (Python arithmetic);
                 # nanoGPT's MLP is nn.GELU(). Both drop out on the embeddings and residuals.
                 hidden_act="gelu_new" if fw == "hf" else "gelu", residual_dropout=True)
    elif fam == "neox":
        m.update(num_key_value_heads=V(s, "num_attention_heads"), intermediate_size=4 * V(s, "hidden_size"),
                 mlp="plain", norm="layernorm", norm_bias=True, position_embedding="rotary",
                 max_position_embeddings=4 * V(s, "seq_len"), tie_word_embeddings=False,
                 attention_bias=True, mlp_bias=True, block="parallel", model_type="gpt_neox",
                 rotary_pct=0.25, hidden_act="gelu")
    else:
        m.update(num_key_value_heads=V(s, "num_key_value_heads"), intermediate_size=V(s, "intermediate_size"),
                 mlp="gated", norm="rmsnorm", position_embedding="rotary",
                 max_position_embeddings=4 * V(s, "seq_len"), tie_word_embeddings=False,
                 attention_bias=False, mlp_bias=False, block="sequential",
                 model_type={"llama": "llama", "mistral": "mistral", "qwen2": "qwen2"}[fam])
        if fam == "qwen2":
            m["qkv_bias"] = True
    m["lm_head_bias"] = False
    m["norms_per_block"] = 2
    m["final_norm"] = True
    return m


def knobs(case):
    """The planned implementation-profile knobs this case exercises (what the code does)."""
    fw, fam, att, prec = case["framework"], case["family"], case["attention"], case["precision"]
    k = {"framework": fw, "attention": att}
    if fw == "hf":
        k["softmax_dtype"] = "fp32" if fam in ("llama", "mistral", "qwen2") else "compute"
        if fam == "gpt2":                     # GPT-2's class: one c_attn matmul, causality from a buffer
            k["projections"] = "fused"
            k["attention_mask"] = "implicit"
        k["logits_dtype"] = "fp32"            # ForCausalLMLoss: logits.float()
        k["loss"] = "eager"
        if case.get("peft"):
            k["lora_base_dtype"] = "bf16"
            k["lora_adapter_dtype"] = "fp32"
    elif fw == "torchtune":
        k["softmax_dtype"] = None             # SDPA only
        k["logits_dtype"] = "fp32"            # per chunk: logits.float()
        k["loss"] = "chunked"
        k["loss_chunks"] = 8
        k["loss_compiled"] = bool(case.get("compile_loss"))
    elif fw == "litgpt":
        k["softmax_dtype"] = None
        k["logits_dtype"] = "fp32" if prec in ("fp32", "bf16_mixed") else "compute"
        k["loss"] = "chunked"
        k["loss_chunk_size"] = 128
        k["loop_keeps_logits"] = True
        if case.get("peft"):
            k["lora_base_dtype"] = "fp32" if prec in ("fp32", "bf16_mixed") else "bf16"
            k["lora_adapter_dtype"] = k["lora_base_dtype"]
    elif fw == "nanogpt":
        k["softmax_dtype"] = "compute" if att == "eager" else None
        k["logits_dtype"] = "fp32" if prec in ("fp32", "bf16_mixed") else "compute"
        k["loss"] = "eager"
        k["loop_keeps_logits"] = True
    if prec == "bf16_mixed":
        k["autocast_note"] = "under CUDA autocast softmax/log_softmax/layer_norm/cross_entropy run in fp32"
    return k


def memfit_configs(case):
    m = shape_fields(case)
    t = {"micro_batch_size": V(case["size"], "batch"), "seq_len": V(case["size"], "seq_len"),
         "precision": case["precision"], "optimizer": "adamw", "checkpointing": "none",
         "dropout": case.get("dropout", 0.0)}
    ft = {"method": "full"}
    if case.get("peft"):
        tg = {"q_proj": "q", "v_proj": "v", "k_proj": "k", "o_proj": "o", "output_proj": "o", "q": "q", "v": "v",
              "k": "k", "o": "o"}
        mlp = ["gate", "up", "down"] if case["family"] in ("llama", "mistral", "qwen2") else ["up", "down"]
        ft = {"method": "lora", "lora_rank": case["peft"]["r"],
              "lora_targets": [tg[x] for x in case["peft"]["targets"]] + (mlp if case["peft"].get("mlp") else []),
              "lora_dropout": 0.0}
    kb = knobs(case)
    if case.get("weights") == "bf16":
        kb["weights_dtype"] = "bf16"   # autocast over bf16 weights (no fp32 master)
    planned = {"model": dict(m), "training": dict(t, finetune=ft, **{k: v for k, v in kb.items()
                                                                     if k != "autocast_note"})}
    if case.get("weights") == "bf16":
        t = dict(t, precision="bf16")   # today's closest recipe: pure bf16 (2+2+4 B/param)
    today_t = dict(t, finetune=ft, attention="eager" if case["attention"] == "eager" else "flash",
                   chunked_loss=kb["loss"] == "chunked")
    today_m = {k: v for k, v in m.items() if k not in ("rotary_pct",)}
    today = {"model": today_m, "training": today_t, "hardware": {"gpu": "h100-sxm-80gb"}}
    return planned, today


def run_memfit(binary, cfg):
    if not binary:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
        path = f.name
    try:
        p = subprocess.run([binary, "--config", path, "--json"], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    try:
        r = json.loads(p.stdout)
    except Exception:
        return {"error": (p.stderr or p.stdout).strip()[:500], "exit": p.returncode}
    b = r.get("breakdown", {})
    return {"activations": b.get("activations"), "logits_and_loss": b.get("logits_and_loss"),
            "parameters": b.get("parameters"), "gradients": b.get("gradients"),
            "optimizer_states": b.get("optimizer_states"),
            "peak_allocated_bytes": r.get("peak_allocated_bytes"),
            "parameter_count": r.get("parameter_count"),
            "trainable_parameter_count": r.get("trainable_parameter_count"),
            "warnings": [l for l in p.stderr.splitlines() if l.strip()][:12]}


# --------------------------------------------------------------------------- timeline
class Timeline:
    """CPU allocator timeline (torch.profiler, profile_memory=True); sentinel
    allocations of unique sizes mark the phase boundaries exactly."""
    BASE = 1_000_003

    def __init__(self):
        self.names = []

    def mark(self, name):
        x = torch.empty(self.BASE + 2 * len(self.names), dtype=torch.uint8)
        self.names.append(name)
        del x

    def __enter__(self):
        self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                           profile_memory=True)
        with contextlib.redirect_stdout(io.StringIO()):
            self.prof.__enter__()
        return self

    def __exit__(self, *exc):
        with contextlib.redirect_stdout(io.StringIO()):
            self.prof.__exit__(*exc)

    def cumulative(self):
        """(live bytes after each allocator event, {mark: index of the live bytes at the mark})."""
        evs = [e for e in self.prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        order = sorted(range(len(evs)), key=lambda i: (evs[i].start_ns(), i))
        sizes = {self.BASE + 2 * i: n for i, n in enumerate(self.names)}
        live, cum, pos = 0, [], {}
        for i in order:
            nb = evs[i].nbytes()
            if nb in sizes and sizes[nb] not in pos:
                pos[sizes[nb]] = len(cum)
                cum.append(live)
                continue
            if -nb in sizes:
                continue
            live += nb
            cum.append(live)
        return cum, pos

    def summary(self):
        cum, pos = self.cumulative()
        base = cum[pos["forward_start"]]

        def peak(a, b):
            return max(cum[pos[a]:pos[b] + 1]) - base
        head = {}
        if "head_start" in pos:
            hs = cum[pos["head_start"]]
            head = {"live_at_head_start_bytes": hs - base,
                    "head_forward_peak_bytes": max(cum[pos["head_start"]:pos["forward_end"] + 1]) - hs,
                    "head_forward_net_bytes": cum[pos["forward_end"]] - hs}
        return {
            **head,
            "forward_peak_bytes": peak("forward_start", "forward_end"),
            "live_after_forward_bytes": cum[pos["forward_end"]] - base,
            "backward_peak_bytes": peak("forward_end", "backward_end"),
            "live_after_backward_bytes": cum[pos["backward_end"]] - base,
            "optimizer_peak_bytes": peak("backward_end", "optimizer_end"),
            "live_after_zero_grad_bytes": cum[pos["zero_grad_end"]] - base,
        }


# --------------------------------------------------------------------------- CUDA rules
CUDA_RULES = {
    "wrapped_scalar": "0-dim float64 tensors from Python scalars stay on the CPU: 0 GPU bytes",
    "layernorm_stats": "CPU layer_norm keeps mean/rstd in the input dtype for bf16 inputs; the CUDA "
                       "kernel keeps them in float32: x2",
    "dropout_mask": "CPU dropout (at::_dropout_impl) saves a float noise tensor of the input dtype; "
                    "CUDA uses the fused native_dropout, which saves a bool mask: 1 byte/element",
    "sdpa_lse_pad": "CPU flash SDPA saves logsumexp (B,h,T) fp32; on CUDA, fp32 inputs go to the "
                    "memory-efficient kernel, whose logsumexp is (B,h,ceil(T/32)*32) fp32; bf16 inputs "
                    "go to FlashAttention-2, same (B,h,T) fp32 logsumexp (+16 B philox seed/offset, "
                    "not counted)",
    "sdpa_dropout": "on the CPU, SDPA with dropout_p > 0 falls back to the math path (T x T scores, "
                    "softmax output, float dropout noise saved); on CUDA the flash / memory-efficient "
                    "kernels apply dropout inside the kernel and save only the philox seed/offset: the "
                    "CUDA-equivalent body is measured again with the attention's dropout_p = 0 (residual "
                    "dropouts kept, their masks at 1 byte/element)",
}


def cuda_bytes(rec, precision):
    """(bytes on a GPU, rule) for one counted saved tensor."""
    nb = rec["storage_bytes"]
    if not rec["shape"] and rec["dtype"] == "float64":
        return 0, "wrapped_scalar"
    nodes = rec["nodes"]
    mt = rec["module"].rsplit(".", 1)[-1]
    if (any(n.startswith("NativeLayerNormBackward") for n in nodes) and rec["dtype"] in ("bfloat16", "float16")
            and rec["shape"] and rec["shape"][-1] == 1):
        return nb * 2, "layernorm_stats"
    if rec.get("dropout_noise"):
        return nb // {"float32": 4, "bfloat16": 2, "float16": 2}.get(rec["dtype"], 1), "dropout_mask"
    if (any("FlashAttentionForCpu" in n for n in nodes) and rec["dtype"] == "float32"
            and len(rec["shape"]) == 3 and rec.get("sdpa_lse") and precision == "fp32"):
        B, h, T = rec["shape"]
        return B * h * (int(math.ceil(T / 32)) * 32) * 4, "sdpa_lse_pad"
    return nb, None


def classify(tr, precision, modules):
    """Annotate records (dropout noise, sdpa logsumexp) and return counted records."""
    # dropout noise: saved by a MulBackward0 inside a Dropout module or F.dropout, not requiring grad,
    # same shape as the module output: on CPU _dropout_impl multiplies by a float noise tensor.
    for r in tr.records:
        if r is None:
            continue
        if (not r["requires_grad"] and r["owner"] is None and any(n.startswith("MulBackward") for n in r["nodes"])
                and ("dropout" in r["module"].lower() or r["module"].endswith("drop"))):
            r["dropout_noise"] = True
        if any("FlashAttentionForCpu" in n for n in r["nodes"]) and len(r["shape"]) == 3 and r["dtype"] == "float32":
            r["sdpa_lse"] = True
    return tr.counted()


def op_tag(rec):
    nodes = sorted(set(rec["nodes"]))
    node = ",".join(n.replace("Backward0", "").replace("Backward1", "") for n in nodes) or "?"
    mod = rec["module"]
    # strip the layer prefix: "model.layers.0.self_attn.q_proj" -> "self_attn.q_proj"
    import re
    mod = re.sub(r"^.*?(?:layers|h|layer|blocks)\.\d+\.?", "", mod)
    return (mod + ":" if mod else "") + node


# --------------------------------------------------------------------------- one case
def param_stats(model):
    seen, n, tn, pb = set(), 0, 0, 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n += p.numel()
        pb += p.numel() * p.element_size()
        if p.requires_grad:
            tn += p.numel()
    return n, tn, pb


def make_batch(case, seed):
    s = case["size"]
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V(s, "vocab_size"), (V(s, "batch"), V(s, "seq_len")), generator=g)
    return ids, ids.clone()


def run_once(case, amp):
    """amp: None (fp32 / pure bf16), 'cpu' (torch.autocast cpu) or 'cuda' (emulated lists)."""
    torch.manual_seed(0)
    built = BUILDERS[case["framework"]](case)
    model = built.model
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=False)
    nparams, ntrain, pbytes = param_stats(model)
    buffers = {n: b.numel() * b.element_size() for n, b in model.named_buffers()}

    def amp_ctx():
        if amp == "cpu":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        if amp == "cuda":
            return _emulated()
        return contextlib.nullcontext()

    held = []
    # step 1: warm-up (optimizer states exist afterwards, like any step but the first)
    ids, labels = make_batch(case, 1)
    with amp_ctx():
        loss, held = built.forward(ids, labels)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del loss
    # step 2: measured
    ids, labels = make_batch(case, 2)
    pre_ptrs = {storage_key(ids)[0], storage_key(labels)[0]}
    held_bytes_before = sum(storage_key(h)[1] for h in held)
    tr = SaveTracker(built.modules)
    tl = Timeline()
    head_mod = None
    for n, mod in model.named_modules():
        if n.split(".")[-1] in ("lm_head", "output") and isinstance(mod, torch.nn.Linear):
            head_mod = mod
    if head_mod is None:
        for n, mod in model.named_modules():
            if n.split(".")[-1] in ("lm_head", "output"):
                head_mod = mod
    hstate = {"marked": False}

    def head_pre(mod, args):
        if not hstate["marked"]:
            hstate["marked"] = True
            tl.mark("head_start")
    hh = head_mod.register_forward_pre_hook(head_pre) if head_mod is not None else None
    with tl:
        tl.mark("forward_start")
        with tr.measuring():
            with amp_ctx():
                loss, new_held = built.forward(ids, labels)
        held = new_held   # the loop's reassignment frees the previous step's held tensors here
        tl.mark("forward_end")
        tr.name_ops([loss])
        counted = classify(tr, case["precision"], built.modules)
        wcopies = tr.weight_copies()   # (before backward, which frees what autograd held)
        loss_bytes = storage_key(loss)[1]
        loss.backward()
        tl.mark("backward_end")
        grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
        opt.step()
        tl.mark("optimizer_end")
        opt.zero_grad(set_to_none=True)
        tl.mark("zero_grad_end")
    if hh is not None:
        hh.remove()
    timeline = tl.summary()
    st_bytes = 0
    st_detail = {}
    for st in opt.state.values():
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim() >= 1:
                st_bytes += v.numel() * v.element_size()
                key = "%s:%s" % (k, str(v.dtype).replace("torch.", ""))
                st_detail[key] = st_detail.get(key, 0) + v.numel() * v.element_size()

    body = [r for r in counted if r["region"] == "body"]
    head = [r for r in counted if r["region"] == "head"]

    def tot(rs, cuda=False):
        return sum(cuda_bytes(r, case["precision"])[0] if cuda else r["storage_bytes"] for r in rs)

    per_layer, outside = {}, {}
    rules_used = {}
    for r in counted:
        cb, rule = cuda_bytes(r, case["precision"])
        if rule:
            rules_used[rule] = rules_used.get(rule, 0) + (cb - r["storage_bytes"])
        tag = op_tag(r)
        tgt = per_layer.setdefault(r["layer"], {}) if r["layer"] is not None else outside
        if r["layer"] is None:
            tag = r["region"] + ":" + tag
        e = tgt.setdefault(tag, {"bytes": 0, "cuda_bytes": 0, "n": 0, "shapes": []})
        e["bytes"] += r["storage_bytes"]
        e["cuda_bytes"] += cb
        e["n"] += 1
        desc = "%s%s" % (r["dtype"], r["shape"])
        if desc not in e["shapes"] and len(e["shapes"]) < 4:
            e["shapes"].append(desc)
    layers = [{"layer": i, "total": sum(v["bytes"] for v in per_layer[i].values()),
               "total_cuda": sum(v["cuda_bytes"] for v in per_layer[i].values()),
               "ops": per_layer[i]} for i in sorted(per_layer)]
    # torchtune's RMSNorm calls F.rms_norm(x.float()): on the CPU the composite saves x, rstd
    # and the normalised x; on CUDA F.rms_norm can use the fused _fused_rms_norm kernel, whose
    # backward needs only x and rstd (inferred, not measured: see docs/frameworks.md)
    fused_norm_delta = -sum(cuda_bytes(r, case["precision"])[0] for r in counted
                            if r["module_type"] == "RMSNorm" and case["framework"] == "torchtune"
                            and set(r["nodes"]) == {"MulBackward0"} and len(r["shape"]) == 3)
    saved_preexisting = sum(r["storage_bytes"] for r in counted if r["storage_ptr"] in pre_ptrs)
    saved_total = tot(counted)
    held_bytes = sum(storage_key(h)[1] for h in held)
    alive_not_saved = (timeline["live_after_forward_bytes"] - (saved_total - saved_preexisting)
                       - sum(r["storage_bytes"] for r in wcopies))
    out = {
        "parameter_count": nparams, "trainable_parameter_count": ntrain, "parameter_bytes": pbytes,
        "gradient_bytes": grad_bytes, "optimizer_state_bytes": st_bytes,
        "optimizer_state_detail": st_detail,
        "buffer_bytes": buffers,
        "saved": {
            "body_bytes": tot(body), "head_bytes": tot(head),
            "body_bytes_cuda": tot(body, True), "head_bytes_cuda": tot(head, True),
            "total_bytes": saved_total, "total_bytes_cuda": tot(counted, True),
            "cuda_rule_deltas": rules_used,
            "body_bytes_cuda_if_fused_rms_norm": (tot(body, True) + fused_norm_delta) if fused_norm_delta else None,
            "per_layer": layers, "outside_layers": outside,
        },
        "autocast_weight_copies": {
            "bytes": sum(r["storage_bytes"] for r in wcopies),
            "count": len(wcopies),
            "trainable": sum(r["storage_bytes"] for r in wcopies if r["weight_copy"] == "trainable"),
            "frozen": sum(r["storage_bytes"] for r in wcopies if r["weight_copy"] == "frozen"),
            "note": "bf16 casts of fp32 weights that the matmuls save (autocast caches one per trainable "
                    "leaf per forward; frozen weights are cast at every use); not in saved.*"},
        "after_forward": {
            "live_bytes": timeline["live_after_forward_bytes"],
            "saved_storages_allocated_in_forward": saved_total - saved_preexisting,
            "alive_not_saved_bytes": alive_not_saved,
            "loop_held_bytes": held_bytes,
            "loop_held": [{"dtype": str(h.dtype).replace("torch.", ""), "shape": list(h.shape)} for h in held],
            "loss_bytes": loss_bytes,
            "previous_step_held_bytes_freed_at_forward_end": held_bytes_before,
        },
        "timeline": timeline,
        "implementation": built.note,
    }
    if ARGS.explain:
        print("== %s (%s)" % (case["name"], amp or "-"), file=sys.stderr)
        for L in layers[:int(os.environ.get("EXPLAIN_LAYERS", "1"))]:
            for tag, e in sorted(L["ops"].items(), key=lambda kv: -kv[1]["bytes"]):
                print("  L%d %-60s %9d %9d %s" % (L["layer"], tag[:60], e["bytes"], e["cuda_bytes"],
                                                   e["shapes"]), file=sys.stderr)
        for tag, e in sorted(outside.items(), key=lambda kv: -kv[1]["bytes"]):
            print("  -- %-60s %9d %9d %s" % (tag[:60], e["bytes"], e["cuda_bytes"], e["shapes"]),
                  file=sys.stderr)
    del held, loss
    return out


@contextlib.contextmanager
def _emulated():
    """CUDA autocast lists on the CPU; torch.autocast(enabled=False) blocks (HF's rotary
    embedding) switch the emulation off as they switch real autocast off."""
    from torch.amp import autocast_mode
    mode = CudaAutocastEmulation(torch.bfloat16)
    orig_enter, orig_exit = autocast_mode.autocast.__enter__, autocast_mode.autocast.__exit__
    stack = []

    def enter(self):
        stack.append(self._enabled)
        if not self._enabled:
            mode.__exit__(None, None, None) if mode_on[0] else None
            mode_on[0] = False
        return orig_enter(self)

    def exit_(self, *a):
        r = orig_exit(self, *a)
        was = stack.pop()
        if not was and not mode_on[0] and (not stack or stack[-1]):
            mode.__enter__()
            mode_on[0] = True
        return r
    mode_on = [True]
    # Model code that asks whether autocast is on (transformers' maybe_autocast, which opens its
    # enabled=False block only then; NemotronLayerNorm1P, which then casts its arguments to the
    # autocast dtype; PEFT's bitsandbytes LoRA layers) hears what it would on a GPU under autocast:
    # yes, in bfloat16. (torch.utils.checkpoint reads it too and would recompute under real CPU
    # autocast: no case here checkpoints under autocast; one that does needs its own switch.)
    orig_enabled, orig_dtype = torch.is_autocast_enabled, torch.get_autocast_dtype

    def is_enabled(*a, **k):
        return True if mode_on[0] else orig_enabled(*a, **k)

    def autocast_dtype(*a, **k):
        return torch.bfloat16 if mode_on[0] else orig_dtype(*a, **k)
    autocast_mode.autocast.__enter__, autocast_mode.autocast.__exit__ = enter, exit_
    torch.is_autocast_enabled, torch.get_autocast_dtype = is_enabled, autocast_dtype
    mode.__enter__()
    try:
        yield mode
    finally:
        if mode_on[0]:
            mode.__exit__(None, None, None)
        autocast_mode.autocast.__enter__, autocast_mode.autocast.__exit__ = orig_enter, orig_exit
        torch.is_autocast_enabled, torch.get_autocast_dtype = orig_enabled, orig_dtype


def run_case(case, memfit):
    t0 = time.time()
    res = {"name": case["name"], "case": case}
    planned, today = memfit_configs(case)
    res["memfit_config"] = planned
    res["memfit_config_today"] = today
    if case["precision"] == "bf16_mixed":
        res["cpu_raw"] = run_once(case, "cpu")
        res["measured"] = run_once(case, "cuda")
        res["measured_note"] = ("bf16 autocast: 'measured' uses the CUDA autocast op lists emulated on the "
                                "CPU (tools/frameworks/cuda_amp.py); 'cpu_raw' is torch.autocast('cpu')")
    else:
        res["measured"] = run_once(case, None)
    if case.get("dropout") and case["attention"] in ("sdpa", "flash"):
        c2 = dict(case, _attn_dropout_off=True)
        alt = run_once(c2, "cuda" if case["precision"] == "bf16_mixed" else None)
        sv = res["measured"]["saved"]
        sv["body_bytes_cuda_cpu_math_path"] = sv["body_bytes_cuda"]
        sv["head_bytes_cuda_cpu_math_path"] = sv["head_bytes_cuda"]
        sv["body_bytes_cuda"] = alt["saved"]["body_bytes_cuda"]
        sv["head_bytes_cuda"] = alt["saved"]["head_bytes_cuda"]
        sv["total_bytes_cuda"] = alt["saved"]["total_bytes_cuda"]
        sv["cuda_rule_deltas"]["sdpa_dropout"] = (alt["saved"]["body_bytes_cuda"] -
                                                   sv["body_bytes_cuda_cpu_math_path"])
    res["memfit_today"] = run_memfit(memfit, today)
    m = res["measured"]["saved"]
    mf = res["memfit_today"] or {}
    if mf.get("activations") is not None:
        res["gap"] = {
            "activations_memfit_over_measured_body_cuda": round(mf["activations"] / max(1, m["body_bytes_cuda"]), 4),
            "logits_and_loss_memfit_bytes": mf["logits_and_loss"],
            "measured_head_saved_cuda": m["head_bytes_cuda"],
        }
        tl = res["measured"]["timeline"]
        ms = res["measured"]
        # steady-state step peak on the CPU allocator: parameters + optimizer states + the
        # largest of the forward / backward / optimizer phases (relative to before forward)
        res["measured"]["step_peak_bytes"] = (ms["parameter_bytes"] + ms["optimizer_state_bytes"] +
                                              max(tl["forward_peak_bytes"], tl["backward_peak_bytes"],
                                                  tl["optimizer_peak_bytes"]))
        res["gap"]["measured_step_peak"] = res["measured"]["step_peak_bytes"]
        res["gap"]["peak_memfit_over_measured"] = round(mf["peak_allocated_bytes"] /
                                                        res["measured"]["step_peak_bytes"], 4)
    res["seconds"] = round(time.time() - t0, 2)
    return res


def find_memfit(arg):
    if ARGS.no_memfit:
        return None
    for c in ([arg] if arg else []) + ["/work/main/build/cli/memfit", os.path.join(ROOT, "build/cli/memfit")]:
        if c and os.access(c, os.X_OK):
            return c
    return None


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--memfit")
    ap.add_argument("--no-memfit", action="store_true")
    ap.add_argument("--nanogpt")
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "measurements.json"))
    ARGS = ap.parse_args()
    cases = all_cases()
    if ARGS.list:
        for c in cases:
            print(c["name"])
        return 0
    if ARGS.only:
        want = set(ARGS.only.split(","))
        cases = [c for c in cases if c["name"] in want or c["framework"] in want]
    memfit = find_memfit(ARGS.memfit)
    results = []
    for c in cases:
        if c["framework"] == "nanogpt" and ARGS.nanogpt is None and not os.path.isdir(NANOGPT_MIRROR):
            results.append({"name": c["name"], "case": c, "skipped": "nanoGPT model.py not available "
                            "(fetch github:karpathy/nanoGPT or pass --nanogpt PATH)"})
            continue
        try:
            r = run_case(c, memfit)
        except Exception as e:  # keep going; the entry says what failed
            import traceback
            r = {"name": c["name"], "case": c, "error": "%s: %s" % (type(e).__name__, e),
                 "traceback": traceback.format_exc()[-2000:]}
        results.append(r)
        m = r.get("measured", {}).get("saved", {})
        print("%-44s body %9s cuda %9s head %9s | memfit act %9s l&l %9s  %s" % (
            c["name"], m.get("body_bytes"), m.get("body_bytes_cuda"), m.get("head_bytes_cuda"),
            (r.get("memfit_today") or {}).get("activations"),
            (r.get("memfit_today") or {}).get("logits_and_loss"),
            r.get("error", "")), file=sys.stderr)
    import transformers, peft, torchtune, litgpt  # noqa: E401
    import importlib.metadata as md
    doc = {
        "about": __doc__.strip().splitlines()[0],
        "versions": {k: md.version(k) for k in ("torch", "transformers", "peft", "torchtune", "litgpt",
                                                "accelerate")},
        "nanogpt_commit": _NANOGPT.get("commit"),
        "memfit_binary": memfit,
        "sizes": SIZES,
        "conventions": {
            "saved": "bytes autograd saves for backward at the end of forward, each storage once, "
                     "parameter and buffer storages excluded; body = embeddings + blocks + final norm, "
                     "head = output projection + loss (and anything saved outside any module)",
            "bytes_cuda": "the same with CUDA-equivalent rules applied per saved tensor (cuda_rules)",
            "timeline": "CPU allocator bytes relative to just before forward (parameters, optimizer "
                        "states, the batch and anything the loop held from the previous step excluded)",
            "step_peak_bytes": "parameter bytes + optimizer state bytes + the largest phase peak of the "
                               "timeline: the steady-state analogue of torch.cuda.max_memory_allocated "
                               "on the CPU allocator (no caching-allocator rounding)",
            "optimizer": "torch.optim.AdamW(foreach=False); 0-dim step tensors not counted",
            "alive_not_saved_bytes": "live after forward minus saved storages allocated in forward: the "
                                     "loss, tensors the loop keeps (e.g. logits), caches",
        },
        "cuda_rules": CUDA_RULES,
        "cases": results,
    }
    os.makedirs(os.path.dirname(ARGS.out), exist_ok=True)
    with open(ARGS.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote %s (%d cases)" % (ARGS.out, len(results)), file=sys.stderr)
    return 0


ARGS = None
if __name__ == "__main__":
    sys.exit(main())
