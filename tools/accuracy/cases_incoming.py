#!/usr/bin/python3
"""Writes the cases of tools/accuracy/cases.json for the records merged from the research branches
(tools/accuracy/incoming/*.json, ids kept by merge_records.py), and brings the hand-written cases up to
the implementation-profile fields (training.framework, training.loss).

    /usr/bin/python3 tools/accuracy/cases_incoming.py

Idempotent: the cases and skip entries of the merged records are rewritten from the rules below each time;
the hand-written cases (the first 112 records) are kept as they are, apart from the migration in
`migrate_handwritten`.

How a case is written (the conventions of cases.json `about`): every setting follows the source, or the
framework's documented default where the source is silent, each with its own assumption line; nothing is
chosen to improve agreement; a setting memfit has no field for is flagged `unmodelled_*` and the closest
setting is kept. Per source, the rules below state what was read where. Fields the core gains with issue 8
are written with their final names (training.framework, training.loss, training.logits_dtype,
training.loop_keeps_logits, precision bf16_autocast, PEFT methods, new optimizers, GPU aliases,
parallel.fsdp_use_orig_params, parallel.virtual_stages); a build that does not know one yet runs the case
provisionally (tools/accuracy/accuracy.py).
Standard library only.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(HERE, "cases.json")
MEASUREMENTS = os.path.join(ROOT, "docs", "data", "published_measurements.json")
INCOMING = [os.path.join(HERE, "incoming", "papers.json"), os.path.join(HERE, "incoming", "frameworks.json")]


# What bitsandbytes 4-bit linears did before 0.43.2 (July 2024; PR #1270 made it `ctx.tensors = (None, B)`).
BNB_KEEPS_INPUT = ("bitsandbytes before 0.43.2 keeps each 4-bit linear's input (MatMul4Bit ctx.tensors) until the "
                   "step's graph is freed")


# ----------------------------------------------------------------------------- models

def llama_like(hidden, layers, heads, kv, ffn, vocab, max_pos=4096, tied=False):
    return {"preset": "llama-2-7b", "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "intermediate_size": ffn, "vocab_size": vocab,
            "max_position_embeddings": max_pos, "tie_word_embeddings": tied}


def qwen1(hidden, layers, heads, config_ffn, vocab):
    m = llama_like(hidden, layers, heads, heads, config_ffn // 2, vocab, 8192)
    m.update({"model_type": "qwen", "qkv_bias": True})
    return m


def opt(hidden, layers, heads, ffn):
    return {"preset": "opt-125m", "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": heads, "intermediate_size": ffn, "vocab_size": 50272,
            "max_position_embeddings": 2048}


# model key -> (memfit model fields, one-line justification). Dimensions are the models' config.json values.
MODELS = {
    "qwen1-1.8b": (qwen1(2048, 24, 16, 11008, 151936),
                   "Qwen/Qwen-1_8B(-Chat) config.json: hidden 2048, 24 layers, 16 heads (MHA), intermediate_size 11008 "
                   "which QWenMLP halves (w1 and w2 are 5504 wide, c_proj 5504->2048), vocab 151936, c_attn with bias "
                   "(qkv_bias), c_proj without, RMSNorm, rotary, untied lm_head"),
    "qwen1-7b": (qwen1(4096, 32, 32, 22016, 151936),
                 "Qwen/Qwen-7B(-Chat) config.json: hidden 4096, 32 layers, 32 heads (MHA), intermediate_size 22016 "
                 "halved by QWenMLP to 11008, vocab 151936, qkv bias, RMSNorm, rotary, untied lm_head (7.72B params)"),
    "qwen1-14b": (qwen1(5120, 40, 40, 27392, 152064),
                  "Qwen/Qwen-14B(-Chat) config.json: hidden 5120, 40 layers, 40 heads (MHA), intermediate_size 27392 "
                  "halved to 13696, vocab 152064, qkv bias, RMSNorm, rotary, untied lm_head"),
    "qwen1-72b": (qwen1(8192, 80, 64, 49152, 152064),
                  "Qwen/Qwen-72B(-Chat) config.json: hidden 8192, 80 layers, 64 heads (MHA), intermediate_size 49152 "
                  "halved to 24576, vocab 152064, qkv bias, RMSNorm, rotary, untied lm_head"),
    "chatglm3-6b": ({**llama_like(4096, 28, 32, 2, 13696, 65024, 8192), "model_type": "chatglm", "qkv_bias": True},
                    "THUDM/chatglm3-6b config.json: 28 layers, hidden 4096, 32 heads with multi_query_group_num 2 "
                    "(2 key/value heads), ffn_hidden_size 13696 SwiGLU, padded_vocab_size 65024, add_qkv_bias true, "
                    "add_bias_linear false, RMSNorm, rotary, separate output_layer"),
    "chatglm-6b": ({"preset": "llama-2-7b", "model_type": "chatglm", "hidden_size": 4096, "num_hidden_layers": 28,
                    "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 16384, "mlp": "plain",
                    "norm": "layernorm", "norm_bias": True, "attention_bias": True, "mlp_bias": True,
                    "vocab_size": 130528, "max_position_embeddings": 2048, "tie_word_embeddings": False},
                   "THUDM/chatglm-6b config.json: 28 layers, hidden 4096, 32 heads, inner_hidden_size 16384 with GeLU "
                   "(plain MLP with biases), LayerNorm with bias, qkv and dense biases, vocab 130528, 2-D rotary "
                   "positions (no position parameters), separate lm_head"),
    "yi-6b": ({**llama_like(4096, 32, 32, 4, 11008, 64000), "model_type": "llama"},
              "01-ai/Yi-6B-Chat config.json (Llama architecture): hidden 4096, 32 layers, 32 heads, 4 key/value heads, "
              "intermediate 11008, vocab 64000, untied"),
    "yi-34b": ({**llama_like(7168, 60, 56, 8, 20480, 64000), "model_type": "llama"},
               "01-ai/Yi-34B-Chat config.json (Llama architecture): hidden 7168, 60 layers, 56 heads, 8 key/value heads, "
               "intermediate 20480, vocab 64000, untied"),
    "openbuddy-zephyr-7b": ({"preset": "mistral-7b-v0.1", "vocab_size": 36608},
                            "OpenBuddy/openbuddy-zephyr-7b-v14.1 config.json: MistralForCausalLM (preset mistral-7b-v0.1: "
                            "hidden 4096, 32 layers, 32/8 heads, intermediate 14336) with the vocabulary extended to 36608"),
    "baichuan2-7b": ({**llama_like(4096, 32, 32, 32, 11008, 125696), "model_type": "baichuan"},
                     "baichuan-inc/Baichuan2-7B-Chat config.json: hidden 4096, 32 layers, 32 heads, intermediate 11008, "
                     "vocab 125696, fused W_pack q/k/v without bias, RMSNorm, rotary, NormHead (untied)"),
    "baichuan2-13b": ({**llama_like(5120, 40, 40, 40, 13696, 125696), "model_type": "baichuan",
                       "position_embedding": "none"},
                      "baichuan-inc/Baichuan2-13B-Chat config.json: hidden 5120, 40 layers, 40 heads, intermediate 13696, "
                      "vocab 125696, fused W_pack without bias, RMSNorm, ALiBi (no position parameters), NormHead"),
    "qwen2-7b": ({"preset": "qwen2.5-7b"},
                 "Qwen/Qwen2-7B config.json has the same shape as the preset qwen2.5-7b (hidden 3584, 28 layers, 28/4 heads, "
                 "intermediate 18944, vocab 152064, qkv bias, untied)"),
    "qwen2.5-1.5b": ({"preset": "qwen2.5-1.5b"},
                     "preset qwen2.5-1.5b: Qwen/Qwen2.5-1.5B(-Instruct) config.json (hidden 1536, 28 layers, 12/2 heads, "
                     "intermediate 8960, vocab 151936, qkv bias, tied embeddings)"),
    "llama-3-8b": ({"preset": "llama-3-8b"}, "preset llama-3-8b (meta-llama/Meta-Llama-3-8B)"),
    "llama-2-7b": ({"preset": "llama-2-7b"}, "preset llama-2-7b (meta-llama/Llama-2-7b-hf)"),
    "llama-2-70b": ({"preset": "llama-2-70b"}, "preset llama-2-70b (meta-llama/Llama-2-70b-hf)"),
    "mistral-7b": ({"preset": "mistral-7b-v0.1"}, "preset mistral-7b-v0.1"),
    "mixtral-8x7b": ({"preset": "mixtral-8x7b"}, "preset mixtral-8x7b (Mixtral-8x7B-Instruct-v0.1 has the same shape)"),
    "gemma-7b": ({"preset": "gemma-2b", "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
                  "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576, "vocab_size": 256000},
                 "google/gemma-7b config.json on the gemma-2b preset's architecture (GeGLU, RMSNorm, tied embeddings): "
                 "hidden 3072, 28 layers, 16 heads of 256, intermediate 24576, vocab 256000"),
    "santacoder": ({"preset": "gpt2", "model_type": "gpt_bigcode", "hidden_size": 2048, "num_hidden_layers": 24,
                    "num_attention_heads": 16, "num_key_value_heads": 1, "intermediate_size": 8192, "vocab_size": 49280,
                    "max_position_embeddings": 2048},
                   "bigcode/gpt_bigcode-santacoder config.json on the gpt2 preset's architecture (learned positions, "
                   "LayerNorm and linear biases, GELU MLP, tied embeddings): n_embd 2048, 24 layers, 16 heads with "
                   "multi-query attention (1 key/value head), n_inner 8192, vocab 49280, n_positions 2048"),
    "stablelm-3b": ({"preset": "", "model_type": "gpt_neox", "vocab_size": 50688, "hidden_size": 4096,
                     "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 0, "head_dim": 0,
                     "intermediate_size": 16384, "mlp": "plain", "norm": "layernorm", "norm_bias": True,
                     "position_embedding": "rotary", "max_position_embeddings": 4096, "tie_word_embeddings": False,
                     "output_head": "lm", "lm_head_bias": False, "attention_bias": True, "mlp_bias": True,
                     "block": "parallel", "norms_per_block": 2, "final_norm": True},
                    "stabilityai/stablelm-base-alpha-3b config.json (gpt_neox: d 4096, 16 layers, 32 heads, d_ff 16384, "
                    "vocab 50688, parallel residual, untied), the same fields as the hand-written lg-rt-slm cases"),
    "gpt2": ({"preset": "gpt2"}, "preset gpt2 (124M)"),
    "gpt2-xl": ({"preset": "gpt2-xl"}, "preset gpt2-xl (1.56B; llm.c's gpt2_1558M)"),
    "codellama-34b": (llama_like(8192, 48, 64, 8, 22016, 32000, 16384),
                      "codellama/CodeLlama-34b-hf config.json: hidden 8192, 48 layers, 64 heads, 8 key/value heads, "
                      "intermediate 22016, vocab 32000"),
    "llama1-7b": (llama_like(4096, 32, 32, 32, 11008, 32000, 2048),
                  "huggyllama/llama-7b config.json: the Llama-2-7B shape (hidden 4096, 32 layers, 32 heads, intermediate "
                  "11008, vocab 32000), max_position_embeddings 2048"),
    "llama1-13b": (llama_like(5120, 40, 40, 40, 13824, 32000, 2048),
                   "huggyllama/llama-13b config.json: hidden 5120, 40 layers, 40 heads, intermediate 13824, vocab 32000"),
    "llama1-30b": (llama_like(6656, 60, 52, 52, 17920, 32000, 2048),
                   "huggyllama/llama-30b config.json: hidden 6656, 60 layers, 52 heads, intermediate 17920, vocab 32000"),
    "llama1-65b": (llama_like(8192, 80, 64, 64, 22016, 32000, 2048),
                   "huggyllama/llama-65b config.json: hidden 8192, 80 layers, 64 heads (no grouped-query attention), "
                   "intermediate 22016, vocab 32000"),
    "galore-llama-7b": (llama_like(4096, 32, 32, 32, 11008, 32000, 2048),
                        "GaLore configs/llama_7b.json: hidden 4096, intermediate 11008, 32 layers, 32 heads, vocab 32000 "
                        "(T5 tokenizer ids), max_sequence_length 2048, trained from scratch"),
    "llama-3.1-8b": ({"preset": "llama-3.1-8b"}, "preset llama-3.1-8b (architecture; trained from scratch)"),
    "llama-3.1-70b": ({"preset": "llama-3.1-70b"}, "preset llama-3.1-70b (architecture; trained from scratch)"),
    "llama-3.1-405b": ({**llama_like(16384, 126, 128, 8, 53248, 128256, 131072), "preset": "llama-3.1-8b"},
                       "meta-llama/Llama-3.1-405B config.json on the llama-3.1-8b preset: hidden 16384, 126 layers, 128 "
                       "heads, 8 key/value heads, intermediate 53248, vocab 128256"),
    "opt-1.3b": (opt(2048, 24, 32, 8192), "facebook/opt-1.3b config.json on the opt-125m preset: hidden 2048, 24 layers, 32 heads, ffn 8192"),
    "opt-2.7b": (opt(2560, 32, 32, 10240), "facebook/opt-2.7b config.json on the opt-125m preset: hidden 2560, 32 layers, 32 heads, ffn 10240"),
    "opt-6.7b": (opt(4096, 32, 32, 16384), "facebook/opt-6.7b config.json on the opt-125m preset: hidden 4096, 32 layers, 32 heads, ffn 16384"),
    "opt-13b": (opt(5120, 40, 40, 20480), "facebook/opt-13b config.json on the opt-125m preset: hidden 5120, 40 layers, 40 heads, ffn 20480"),
    "opt-30b": (opt(7168, 48, 56, 28672), "facebook/opt-30b config.json on the opt-125m preset: hidden 7168, 48 layers, 56 heads, ffn 28672"),
    "opt-66b": (opt(9216, 64, 72, 36864), "facebook/opt-66b config.json on the opt-125m preset: hidden 9216, 64 layers, 72 heads, ffn 36864"),
}


# ----------------------------------------------------------------------------- one case

def fmt(v):
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


class Case:
    """A case being written: configuration, one assumption line per setting, flags and notes."""

    def __init__(self, rec, kind, summary):
        self.rec = rec
        self.id = rec["id"]
        self.kind = kind
        self.summary = summary
        self.cfg = {"model": {}, "training": {"finetune": {}}, "parallel": {}, "hardware": {}}
        self.assumptions = []
        self.flags = []
        self.notes = []
        self.what_if = []
        self.quantity = None
        self.unit = None
        self.quantity_note = None
        self.divisor = None

    # settings ------------------------------------------------------------------------------------
    def model(self, key, extra=None, why_extra=""):
        fields, why = MODELS[key]
        self.cfg["model"] = dict(fields)
        if extra:
            self.cfg["model"].update(extra)
        self.assumptions.append(f"model: {why}{why_extra}")
        return self

    def t(self, field, value, why):
        """A training field (dotted below training)."""
        node = self.cfg["training"]
        parts = field.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
        self.assumptions.append(f"{parts[-1]} {fmt(value)}: {why}")
        return self

    def ft(self, field, value, why):
        return self.t("finetune." + field, value, why)

    def p(self, field, value, why):
        self.cfg["parallel"][field] = value
        self.assumptions.append(f"{field} {fmt(value)}: {why}")
        return self

    def hw(self, field, value, why):
        """A hardware field (beside the card)."""
        self.cfg["hardware"][field] = value
        self.assumptions.append(f"{field} {fmt(value)}: {why}")
        return self

    def gpu(self, gpu, why, unmodelled=False):
        self.cfg["hardware"]["gpu"] = gpu
        self.assumptions.append(f"gpu {gpu}: {why}")
        if unmodelled:
            self.flag("unmodelled_gpu")
        return self

    def set_quiet(self, section, field, value):
        """A setting whose justification is part of another line (e.g. a group of defaults)."""
        self.cfg[section][field] = value
        return self

    def line(self, text):
        self.assumptions.append(text)
        return self

    def flag(self, f):
        if f not in self.flags:
            self.flags.append(f)
        return self

    def note(self, text):
        self.notes.append(text)
        return self

    def whatif(self, label, **settings):
        self.what_if.append({"label": label, "set": {k.replace("__", "."): v for k, v in settings.items()}})
        return self

    def measure(self, quantity, unit, why, note=None, divisor=None):
        self.quantity, self.unit, self.quantity_note, self.divisor = quantity, unit, note, divisor
        self.assumptions.append(f"quantity: {why}")
        return self

    def oom(self, why):
        self.quantity = "fits.verdict"
        self.assumptions.append(f"out of memory: {why}; the case checks that memfit's verdict on the stated card is "
                                "does_not_fit")
        return self

    def done(self):
        quiet = []
        for k, v in (("tensor", 1), ("pipeline", 1), ("context", 1), ("sequence_parallel", False),
                     ("offload_optimizer", False), ("offload_params", False)):
            if k not in self.cfg["parallel"]:
                self.cfg["parallel"][k] = v
                quiet.append(f"{k} {fmt(v)}")
        if quiet:
            self.assumptions.append(", ".join(quiet) + ": not used - the source states none of them")
        c = {"id": self.id, "kind": self.kind, "setup_summary": self.summary, "config": self.cfg,
             "quantity": self.quantity}
        if self.quantity != "fits.verdict":
            c["measured_unit"] = self.unit
            if self.divisor:
                c["measured_divisor"] = self.divisor
            if self.quantity_note:
                c["quantity_note"] = self.quantity_note
        c["assumptions"] = self.assumptions
        c["flags"] = self.flags
        if self.notes:
            c["discrepancy_notes"] = self.notes
        if self.what_if:
            c["what_if"] = self.what_if
        return c


class Skip(Exception):
    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def low_conf(c):
    if c.rec["confidence"] == "low":
        c.flag("low_confidence")
    return c


FSDP_ORIG_PARAMS_HF = ("transformers' Trainer under FSDP sets use_orig_params from fsdp_config, default \"true\" "
                       "(training_args.py, FSDP_USE_ORIG_PARAMS); for a full fine-tune it decides only that the optimizer "
                       "sees each original parameter's view of the flat shard (set when memfit gained FSDP1's flat parameters)")


def parallel_defaults(c, gpus=1, zero=0, why_gpus="one GPU", why_zero="no sharding"):
    c.p("num_gpus", gpus, why_gpus)
    c.p("zero_stage", zero, why_zero)
    return c


def training_defaults(c):
    """Settings every case states; the rules set them with their reasons before calling this."""
    t = c.cfg["training"]
    for k, v in (("grad_accum_steps", 1), ("optimizer_in_backward", False), ("activation_offload", False)):
        t.setdefault(k, v)
    t.setdefault("finetune", {}).setdefault("method", "full")
    return c


# ============================================================================= sources
# Each rule takes a record and returns a case (Case.done()) or raises Skip(reason).

RULES = []


def rule(prefix):
    def deco(fn):
        RULES.append((prefix, fn))
        return fn
    return deco


# ----------------------------------------------------------------------------- ms-swift Benchmark.md

SWIFT_MODELS = {"qwen-1_8b": "qwen1-1.8b", "qwen-7b": "qwen1-7b", "qwen-14b": "qwen1-14b", "qwen-72b": "qwen1-72b",
                "chatglm3-6b": "chatglm3-6b", "yi-6b": "yi-6b", "yi-34b": "yi-34b",
                "openbuddy-zephyr-7b": "openbuddy-zephyr-7b", "baichuan2-7b": "baichuan2-7b",
                "baichuan2-13b": "baichuan2-13b"}
# swift's DEFAULT lora_target_modules per model family (swift/llm/utils/model.py of Dec 2023), as PEFT
# adapters: a fused q/k/v projection is one adapter ('qkv'); the table's trainable counts confirm it for
# qwen-7b-chat (rank 8: 4.19 M = 32 x 8 x (4096 + 12288)).
SWIFT_DEFAULT_TARGETS = {"qwen1": (["qkv"], "c_attn, Qwen's fused q/k/v projection (one adapter 4096 -> 12288)"),
                         "chatglm3": (["qkv"], "query_key_value, ChatGLM3's fused q/k/v projection"),
                         "baichuan2": (["qkv"], "W_pack, Baichuan2's fused q/k/v projection"),
                         "llama": (["q", "k", "v"], "q_proj, k_proj, v_proj")}


def swift_family(model_key):
    for fam in ("qwen1", "chatglm3", "baichuan2"):
        if model_key.startswith(fam):
            return fam
    return "llama"


def swift_common(c, model_key, mbs=1, ga=16, seq=2048, ckpt=True, flash=True):
    fam = swift_family(model_key)
    c.t("framework", "hf", "swift sft runs the model with transformers + PEFT under HF Trainer (swift's Seq2SeqTrainer)")
    c.t("micro_batch_size", mbs, "--batch_size (Benchmark.md default 1 unless the row varies it)")
    c.t("grad_accum_steps", ga, "--gradient_accumulation_steps (Benchmark.md default 16 unless the row varies it)")
    c.t("seq_len", seq, "--max_length; the benchmark data (cls-fudan-news-zh, 3234 +- 2547 tokens, max 19548, 1000 samples) "
        "is truncated at max_length, so the longest batches run at exactly max_length")
    c.t("sequence_lengths", "varying", "swift's collator pads each batch to its own longest sample (batch_size 1: each "
        "micro-batch is one sample, 3234 +- 2547 tokens cut at max_length), so micro-batch lengths vary up to max_length")
    c.t("optimizer", "adamw", "swift's default optim adamw_torch (torch.optim.AdamW)")
    c.t("optimizer_impl", "foreach", "adamw_torch passes neither foreach nor fused, so torch 2.1's foreach default on CUDA")
    c.t("checkpointing", "full" if ckpt else "none", "--gradient_checkpointing (Benchmark.md default true unless the row "
        "turns it off)")
    if ckpt:
        c.t("checkpoint_impl", "non_reentrant", "swift 1.x replaces torch.utils.checkpoint.checkpoint with a wrapper whose "
            "use_reentrant defaults to False (swift/llm/utils/model.py fix_gradient_checkpointing_warning, from Nov 2023), "
            "and the models' own checkpoint calls pass no use_reentrant")
    if flash:
        if fam in ("chatglm3", "baichuan2"):
            c.t("attention", "sdpa", "ChatGLM3's remote code calls torch's scaled_dot_product_attention and Baichuan2's calls "
                "xformers memory_efficient_attention in training; neither stores T x T scores (swift's use_flash_attn does not "
                "switch these models)")
        else:
            c.t("attention", "flash", "--use_flash_attn true (flash_attn 2.3.4): Qwen's remote code and transformers' "
                "Llama/Mistral FlashAttention-2 path")
    else:
        c.t("attention", "eager", "--use_flash_attn false: Qwen's remote code falls back to its own matmul/softmax attention "
            "(the table's 20 GiB jump without flash and checkpointing matches stored T x T scores)")
    c.t("dropout", 0.0, "attention/hidden dropout 0 in these models' configs")
    c.t("loss", "eager", "the model's own CrossEntropyLoss on the full logits")
    if fam == "qwen1":
        c.t("logits_dtype", "fp32", "Qwen's modeling_qwen.py hands the bf16 lm_head output to CrossEntropyLoss without a "
            "float() upcast, but HF Trainer's bf16 autocast runs cross_entropy in fp32 (autocast's fp32 op list), so the "
            "loss reads an fp32 copy of the logits")
    else:
        c.t("logits_dtype", "auto", "the hf profile's default (fp32 upcast; under autocast cross_entropy reads fp32 anyway)")
    c.note(f"the logits path under bf16 autocast: cross_entropy is on autocast's fp32 list, so the bf16 logits (B x T x V, "
           f"V = {c.cfg['model'].get('vocab_size', 'the vocabulary')}) are copied to fp32 and the log-softmax and its "
           "gradient are fp32 too - several vocabulary-sized fp32 tensors per token, which dominate the per-token cost of "
           "these large-vocabulary models; a build without bf16_autocast runs the case as pure bf16 without them")
    c.note("the figure is the reserved peak of the whole run (1000 samples of varying length, truncated at max_length): "
           "batches of every length leave cached segments of every size; memfit replays micro-batches of lengths spread "
           "over an eighth of max_length to all of it (training.sequence_lengths varying), not this data's own lengths")
    c.t("precision", "bf16_autocast", "swift dtype AUTO loads the weights in bf16 on A100 and HF Trainer runs with bf16=True "
        "(torch.autocast over bf16 weights; full fine-tuning keeps bf16 AdamW states)")
    return c


def swift_lora(c, model_key, rank=8, targets="DEFAULT", bits=16, gptq=False):
    fam = swift_family(model_key)
    c.ft("method", "lora", "--sft_type lora")
    c.ft("lora_rank", rank, "--lora_rank (default 8 unless the row varies it)")
    if targets == "ALL":
        qkv = SWIFT_DEFAULT_TARGETS[fam][0]
        tg = qkv + ["o", "gate", "up", "down"]
        c.ft("lora_targets", tg, "--lora_target_modules ALL = every linear layer except lm_head (qwen-7b-chat rank 8: 17.89 M "
             "trainable, as the table prints)")
    else:
        tg, why = SWIFT_DEFAULT_TARGETS[fam]
        c.ft("lora_targets", tg, f"--lora_target_modules DEFAULT = {why}")
    c.ft("lora_dropout", 0.05, "swift's default lora_dropout_p 0.05")
    c.ft("base_bits", bits, {16: "--quantization_bit 0 (bf16 base)", 8: "--quantization_bit 8",
                             4: "--quantization_bit 4"}[bits])
    if bits == 4 and not gptq:
        c.ft("quant_type", "nf4", "swift's default bnb_4bit_quant_type nf4 (bitsandbytes 0.41.3)")
        c.ft("double_quant", True, "swift's default bnb_4bit_use_double_quant true")
        c.ft("bnb_keeps_input", True, f"bitsandbytes 0.41.3: {BNB_KEEPS_INPUT}")
    if gptq:
        c.ft("quant_method", "gptq", f"pre-quantized qwen-*-chat-int{bits} checkpoint (GPTQ, auto_gptq 0.5.1)")
        c.ft("gptq_group_size", 128, "the Qwen Int4/Int8 checkpoints' quantization_config group_size 128")
        c.ft("gptq_kernel", "dequantize", "auto-gptq's CUDA QuantLinear: the exllama kernel returns no gradient to its "
             "input (qlinear_exllama calls the extension outside autograd), so training runs the CUDA path, which "
             "dequantizes each weight to fp16 for inputs of 128 rows or more (the 8-bit rows have no exllama kernel)")
    return c


def swift_gpu(c, gpus=1):
    c.gpu("a100-80gb", "Benchmark.md's environment 'A100'; 80 GB, since single-GPU rows reach 78.8 GiB")
    if gpus == 1:
        parallel_defaults(c, 1, 0, "one GPU (rows without '2*A100')", "no sharding")
    else:
        parallel_defaults(c, 2, 0, "'2*A100': swift loads the model with device_map='auto' across 2 GPUs in one process",
                          "no sharding")
        c.p("pipeline", 2, "device_map='auto' puts the layers on the two GPUs (accelerate balances them by memory; "
            "memfit splits them evenly); the table prints both GPUs and the record keeps the larger")
        c.p("pipeline_schedule", "sequential", "naive model parallelism: one micro-batch passes both GPUs in turn, no "
            "pipeline schedule")
    return c


def swift_measure(c):
    c.measure("peak_reserved_bytes", "GiB", "swift prints torch.cuda.max_memory_reserved() per device after trainer.train(), "
              "in GiB ('GPU Memory (GiB)') -> peak_reserved_bytes")
    return c


@rule("swift-")
def swift(rec):
    rid = rec["id"]
    s = rec["setup"]
    if rid == "swift-unsloth-llama3-8b-instruct-qlora":
        return swift_unsloth(rec)
    if rid.startswith("swift-tuners-"):
        return swift_tuners(rec)
    name = rid[len("swift-"):]
    model_key = None
    for k, v in SWIFT_MODELS.items():
        if name.startswith(k):
            model_key = v
            break
    if model_key is None:
        raise ValueError(rid)
    gpus = s["num_gpus"]
    full = s["finetune"]["method"] == "full"
    seq = int(str(s["seq_len"]).split()[1]) if str(s["seq_len"]).startswith("max_length") else 2048
    mbs = s["micro_batch_size"]
    ga = s["grad_accum_steps"]
    ckpt = s["gradient_checkpointing"] == "full"
    flash = not str(s["attention"]).startswith("eager")
    quant = s["finetune"].get("base_quant", "")
    bits = 4 if "int4" in quant else (8 if "int8" in quant else 16)
    gptq = "gptq" in quant
    kind = "full" if full else ("qlora" if bits == 4 else "lora")
    summ = (f"{rec['model']} {'full' if full else 'LoRA'}{(' ' + quant) if quant else ''}, "
            f"{gpus}x A100-80GB, bs {mbs} x ga {ga}, max_length {seq}, {'AC' if ckpt else 'no AC'}, "
            f"{'flash' if flash else 'no flash'}")
    c = Case(rec, kind, summ).model(model_key)
    swift_common(c, model_key, mbs, ga, seq, ckpt, flash)
    if full:
        c.ft("method", "full", "--sft_type full")
    else:
        rank = s["finetune"].get("lora_rank", 8)
        targets = "ALL" if "ALL" in str(s["finetune"].get("targets", "")) else "DEFAULT"
        swift_lora(c, model_key, rank, targets, bits, gptq)
    swift_gpu(c, gpus)
    if quant and gptq:
        c.note("GPTQ base: which QuantLinear ran (CUDA, which keeps each dequantized fp16 weight for backward, or a "
               "fused kernel, which keeps nothing) is not stated; memfit takes the CUDA path")
    if model_key == "chatglm3-6b" and seq >= 4096:
        c.note("ChatGLM3's remote code passes an explicit attention mask to scaled_dot_product_attention; if torch 2.1 "
               "dispatches that to the math kernel, each recomputed layer materialises heads x T x T scores and "
               "probabilities (8192 tokens: 4 GiB per copy in bf16) - the 8192-token row is 37 GiB above the 4096-token one")
    if model_key == "baichuan2-13b":
        c.t("attention_mask", "alibi", "Baichuan2-13B's modeling_baichuan.py (final revision, Sep 2023) builds inverted padding "
            "mask + alibi_mask as one B x H x T x T bf16 bias every step, passes it to every (checkpointed) layer's SDPA, and "
            "keeps an H x T x T alibi_mask on the model between steps")
        c.note("the B x T x T padding-mask temporaries Baichuan2 builds beside the bias (2 x B x T x T in bf16, forward only) "
               "are not modelled; earlier revisions of modeling_baichuan.py (Sep 6 2023) differ (xformers with a "
               "LowerTriangularMask, or an expand that fails with a 2-D mask)")
    if gpus > 1:
        c.note("device_map='auto' runs one micro-batch through the two halves in turn; memfit's pipeline model keeps "
               "several micro-batches in flight on the first stage")
    c.t("optimizer_in_backward", False, "not a swift option")
    c.t("activation_offload", False, "not a swift option")
    if rec["measured"]["quantity"] == "oom":
        c.oom("the table prints 'OOM' for this row (2*A100)")
    else:
        swift_measure(c)
    training_defaults(c)
    return low_conf(c).done()


def swift_tuners(rec):
    rid = rec["id"]
    s = rec["setup"]
    method = ("dora" if "-dora" in rid else "adalora" if "-adalora" in rid else "full" if "-full" in rid else
              "llamapro" if "llamapro" in rid else "lisa" if "lisa" in rid else "lora")
    gpus = s["num_gpus"]
    packing = "packing" in rid
    kind = "full" if method in ("full", "llamapro", "lisa") else ("peft" if method in ("dora", "adalora") else "lora")
    c = Case(rec, kind, f"Qwen-7B-Chat {method}{' GaLore' if 'galore' in rid else ''}{' packing' if packing else ''}, "
             f"{gpus}x A100-80GB, ms-agent data (<=2048), bs 1 x ga 16, AC, flash")
    if method == "llamapro":
        c.model("qwen1-7b", {"num_hidden_layers": 36}, "; LLaMA-Pro expands it to 36 blocks (llamapro_num_new_blocks 4)")
    else:
        c.model("qwen1-7b")
    swift_common(c, "qwen1-7b", 1, 16, 2048, True, True)
    # The Tuners runs use ms-agent + ms-bench dialogues truncated at 2048, not the benchmark data.
    c.assumptions = [a if not a.startswith("seq_len") else
                     ("seq_len 2048: --max_length 2048 with --packing true: samples are packed into 2048-token "
                      "sequences, so every step runs at 2048" if packing else
                      "seq_len 2048: --max_length 2048; the Tuners runs train on ms-agent + ms-bench dialogues of "
                      "varying length truncated at 2048, padded per batch, so 2048 is a cap") for a in c.assumptions]
    if not packing:
        c.flag("padded_seq_cap")
    else:
        c.t("sequence_lengths", "fixed", "--packing true: every sequence is packed to 2048 tokens")
    if method == "llamapro":
        c.ft("method", "full", "swift's LLaMA-Pro tuner: the expanded model with every original parameter frozen")
        c.ft("trainable_layers", 4, "llamapro_num_new_blocks 4: only the inserted blocks train (the row's 809.58 M "
             "trainable = 4 blocks of 202.4 M)")
        c.ft("lowest_trainable_layer", 8, "llamapro_num_groups defaults to the number of new blocks: one new block after "
             "each group of 8 original ones, at indices 8, 17, 26 and 35; backward runs down to block 8")
        c.ft("train_embeddings", False, "embeddings frozen")
        c.ft("train_head", False, "lm_head frozen")
    elif method == "lisa":
        c.ft("method", "full", "sft_type full with swift's LISA callback")
        c.ft("trainable_layers", 2, "lisa_activated_layers 2: the callback freezes every decoder layer and unfreezes two "
             "random ones, switched every 20 steps (lisa_step_interval)")
        c.ft("lowest_trainable_layer", 0, "the sampled layers can be any; the embedding trains, so backward runs through "
             "every block regardless")
        c.ft("train_embeddings", True, "the callback freezes only the decoder layers: the embedding keeps requires_grad")
        c.ft("train_head", True, "lm_head keeps requires_grad as well")
        c.flag("unmodelled_lisa_optimizer")
        c.line("swift's DynamicLayerActivationCallback freezes every decoder layer in its __init__, before HF Trainer "
               "builds the optimizer from the parameters that require grad: the optimizer holds the embedding, the final "
               "norm and the head only, and the sampled layers get gradients (zeroed by model.zero_grad()) but no state; "
               "memfit gives the two trained blocks AdamW states too (about 1.5 GiB more)")
    elif method == "full":
        c.ft("method", "full", "sft_type full")
        if "galore" in rid:
            rank = 128 if "galore128" in rid else 32
            c.t("optimizer", "galore_adamw", "swift's GaLore (galore_target_modules: all linear layers; "
                "galore_with_embedding false: embeddings and lm_head keep plain AdamW)")
            c.t("galore_rank", rank, "galore_rank in the row")
            c.t("galore_update_interval", 50, "swift's default galore_update_proj_gap 50")
            if "quantize" in rid:
                c.t("weight_quant", "int8", "galore_quantization true: swift builds GaLoreConfig(quantize=True), which "
                    "runs Q-GaLore's INT8 weights (uint8 codes, a scale and zero per group)")
                c.t("weight_quant_group_size", 256, "Q-GaLore's weight group size default (swift exposes none)")
                c.t("galore_proj_quant", False, "galore_proj_quant default False: the projections stay 16-bit")
    else:
        c.ft("method", method, {"lora": "tuner lora (use_dora false)", "dora": "tuner lora with use_dora true (PEFT DoRA)",
                                "adalora": "tuner adalora (PEFT AdaLoRA)"}[method])
        rank = 12 if method == "adalora" else 8
        c.ft("lora_rank", rank, "AdaLoRA starts every module at swift's adalora_init_r 12 and prunes towards "
             "adalora_target_r 8 (the row's 26.84 M trainable = 1.5 x LoRA's 17.89 M at rank 8)" if method == "adalora"
             else "rank=8 in the row")
        c.ft("lora_targets", ["qkv", "o", "gate", "up", "down"], "target=ALL: every linear layer except lm_head "
             "(17.89 M trainable at rank 8 for LoRA, as the row prints)")
        c.ft("lora_dropout", 0.05, "swift's default lora_dropout_p 0.05")
        c.ft("base_bits", 16, "bf16 base")
    c.gpu("a100-80gb", "the page's environment section names A100; 80 GB (other rows of the page reach 78.8 GiB)")
    if gpus == 1:
        parallel_defaults(c, 1, 0, "one GPU", "no sharding")
    else:
        parallel_defaults(c, 2, 0, "'35.65GiB*2': DDP over 2 GPUs (torchrun), the value is per GPU", "plain DDP")
    c.t("optimizer_in_backward", False, "not a swift option")
    c.t("activation_offload", False, "not a swift option")
    c.measure("peak_reserved_bytes", "GiB", "swift prints torch.cuda.max_memory_reserved() per device after "
              "trainer.train() ('memory' column in GiB, whole run including evaluation) -> peak_reserved_bytes")
    c.note("the memory is the reserved peak over two epochs including evaluation and generation for the inference-speed "
           "column; memfit describes one training step")
    training_defaults(c)
    return low_conf(c).done()


def swift_unsloth(rec):
    c = Case(rec, "qlora", "Llama-3-8B-Instruct QLoRA via swift --use_unsloth, ms-agent (<=2048), bs 1 x ga 16, AC")
    c.model("llama-3-8b")
    c.t("framework", "unsloth", "swift sft --use_unsloth true (unsloth's patched Llama: fused RoPE/RMSNorm/SwiGLU, "
        "its own gradient checkpointing, fused cross-entropy)")
    c.t("micro_batch_size", 1, "swift default batch_size 1")
    c.t("grad_accum_steps", 16, "swift default gradient_accumulation_steps 16")
    c.t("seq_len", 2048, "max_length 2048 over ms-agent dialogues of varying length, padded per batch: a cap")
    c.flag("padded_seq_cap")
    c.t("optimizer", "adamw", "swift's default adamw_torch")
    c.t("optimizer_impl", "foreach", "torch's default")
    c.t("checkpointing", "full", "gradient_checkpointing true in the row (unsloth's offloaded variant not stated)")
    c.t("attention", "flash", "flash_attn true in the row; unsloth uses FlashAttention / xformers")
    c.t("dropout", 0.0, "Llama-3 config")
    c.t("loss", "auto", "the unsloth profile's own loss")
    c.t("precision", "bf16_autocast", "bf16 compute on a 4-bit base (unsloth bnb-4bit checkpoint)")
    c.ft("method", "lora", "tuner lora")
    c.ft("lora_rank", 8, "not in the row: swift's default lora_rank 8; 8 on q,k,v reproduces the row's 4.7186 M trainable")
    c.ft("lora_targets", ["q", "k", "v"], "not in the row: swift's DEFAULT for Llama (q_proj, k_proj, v_proj); rank 8 on "
         "them is 32 x 8 x (4096 + 4096 + 1024 + 4096 + 1024 + 4096) = 4.72 M, the row's count")
    c.ft("lora_dropout", 0.05, "swift's default")
    c.ft("base_bits", 4, "unsloth bnb-4bit base")
    c.ft("quant_type", "nf4", "unsloth's bnb-4bit checkpoints are nf4 with double quantization")
    c.ft("double_quant", True, "as above")
    c.gpu("a100-80gb", "the page's environment section: A100 (80 GB)")
    parallel_defaults(c, 1, 0, "one GPU", "no sharding")
    c.t("optimizer_in_backward", False, "not a swift option")
    c.t("activation_offload", False, "unsloth's 'unsloth' checkpointing offloads to CPU, but the row says only 'true'")
    c.measure("peak_reserved_bytes", "GiB", "swift prints torch.cuda.max_memory_reserved() per device after trainer.train() "
              "(GiB) -> peak_reserved_bytes")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- fms-acceleration a100_80gb.csv

FMS_MODELS = {"santacoder": "santacoder", "mistral-7b": "mistral-7b", "mixtral-8x7b": "mixtral-8x7b",
              "llama2-70b": "llama-2-70b"}


@rule("fms-accel-")
def fms(rec):
    rid = rec["id"]
    s = rec["setup"]
    name = rid[len("fms-accel-"):]
    model_key = next(v for k, v in FMS_MODELS.items() if name.startswith(k))
    scen = ("full-plain" if "-full-plain-" in rid else "lora-plain" if "-lora-plain-" in rid else
            "baseline-peft-bnb" if "baseline-peft-bnb" in rid else "accelerated-peft-bnb" if "-lora-bnb-" in rid else
            "accelerated-peft-autogptq")
    gpus = s["num_gpus"]
    mbs = s["micro_batch_size"]
    is_oom = rec["measured"]["quantity"] == "oom"
    kind = {"full-plain": "full", "lora-plain": "lora"}.get(scen, "qlora")
    c = Case(rec, kind, f"{rec['model']} {scen}, {gpus}x A100-80GB{' FSDP' if gpus > 1 else ''}, bs {mbs}/GPU, "
             f"packed {2048 if model_key == 'santacoder' else 4096}, AC, flash")
    c.model(model_key)
    c.t("framework", "hf", "fms-hf-tuning 2.5.0 sft_trainer: TRL 0.13 SFTTrainer on transformers 4.48.1 + PEFT 0.13.2")
    c.t("micro_batch_size", mbs, f"per_device_train_batch_size = the scenario's effective batch {mbs * gpus} / {gpus} GPU(s) "
        "(benchmark.py)")
    c.t("grad_accum_steps", 1, "defaults.yaml gradient_accumulation_steps 1")
    if model_key == "santacoder":
        c.t("seq_len", 2048, "benchmark.py's --max_seq_len_matrix default is 4096, but fms-hf-tuning's sft_trainer caps "
            "max_seq_length at the tokenizer's model_max_length (2048 for santacoder, whose learned position table has "
            "2048 rows); alpaca-cleaned is packed (--packing_matrix [True]) into 2048-token sequences")
    else:
        c.t("seq_len", 4096, "benchmark.py defaults --packing_matrix [True] --max_seq_len_matrix [4096]: alpaca-cleaned "
            "packed into 4096-token sequences, so every step runs at 4096")
    c.t("optimizer", "adamw", "Trainer default adamw_torch (defaults.yaml sets only adam_epsilon 1e-4)")
    c.t("optimizer_impl", "foreach", "adamw_torch passes neither foreach nor fused: torch 2.4's foreach default on CUDA")
    if model_key == "mixtral-8x7b":
        c.t("moe_dispatch", "loop", "transformers 4.48's MixtralSparseMoeBlock loops over the experts (one_hot expert "
            "mask, index_add_); the grouped experts_implementation came with transformers 5")
    c.t("checkpointing", "full", "defaults.yaml gradient_checkpointing True (HF, use_reentrant default)")
    c.t("checkpoint_impl", "reentrant", "no gradient_checkpointing_kwargs: transformers 4.48's gradient_checkpointing_enable "
        "passes use_reentrant=True (modeling_utils.py)")
    c.t("attention", "flash", "use_flash_attn True -> attn_implementation flash_attention_2 (flash-attn 2.7.3)")
    c.t("dropout", 0.1 if model_key == "santacoder" else 0.0,
        "gpt_bigcode-santacoder config: attn_pdrop, resid_pdrop and embd_pdrop 0.1" if model_key == "santacoder"
        else "attention_dropout 0.0 in the model config")
    if model_key == "santacoder":
        c.t("loss", "eager", "transformers 4.48's GPTBigCodeForCausalLM computes its own CrossEntropyLoss over the full "
            "logits (models/gpt_bigcode/modeling_gpt_bigcode.py; no self.loss_function yet)")
        c.t("logits_dtype", "compute", "GPTBigCodeForCausalLM passes the lm_head output to the loss without upcasting")
        c.t("loss_shift_copy", "yes", "GPTBigCodeForCausalLM shifts the logits with a copy: shift_logits = "
            "lm_logits[..., :-1, :].contiguous()")
        c.t("use_cache", "yes", "santacoder's config.json sets use_cache true and transformers 4.48's GPTBigCodeModel does "
            "not turn it off under gradient checkpointing (modeling_gpt_bigcode.py: presents.append(outputs[1]); no "
            "use_cache = False beside self.gradient_checkpointing), nor do Trainer, TRL 0.13 or fms-hf-tuning: every "
            "block's present (a view of its c_attn output) lives until compute_loss returns")
    else:
        c.t("loss", "eager", "transformers 4.48 ForCausalLMLoss: cross-entropy over the full logits")
        c.t("logits_dtype", "auto", "the hf profile: ForCausalLMLoss upcasts the logits to fp32")
        c.t("loss_shift_copy", "yes", "transformers 4.48's ForCausalLMLoss shifts the upcast logits with a copy "
            "(shift_logits = logits[..., :-1, :].contiguous(), loss/loss_utils.py; 4.49 pads the labels instead)")
    if scen in ("full-plain", "lora-plain"):
        c.t("precision", "bf16", "framework_config 'none': torch_dtype bfloat16 and no bf16/fp16 flag, so weights, gradients "
            "and AdamW states are bf16 and nothing is autocast")
    elif scen == "accelerated-peft-autogptq":
        c.t("precision", "bf16_autocast", "fp16=True with torch_dtype float16: 2-byte weights under autocast; memfit's "
            "bf16_autocast recipe has the same bytes (it has no fp16 twin)")
    else:
        c.t("precision", "bf16_autocast", "bf16=True with torch_dtype bfloat16 (BitsAndBytesConfig compute and storage "
            "dtype bf16): the non-quantized weights are bf16 under torch.autocast")
    if scen == "full-plain":
        c.ft("method", "full", "framework_config 'none', peft_method none")
    else:
        c.ft("method", "lora", "peft_method lora")
        c.ft("lora_rank", 16, "scenarios.yaml r 16 (lora_alpha 16)")
        if model_key == "santacoder":
            c.ft("lora_targets", ["qkv"], "target_modules q_proj,k_proj,v_proj,o_proj,c_attn: only c_attn exists in "
                 "GPTBigCode (its fused q/k/v projection, 2048 -> 2048 + 2 x 128 with multi-query attention)")
        else:
            c.ft("lora_targets", ["q", "k", "v", "o"], "scenarios.yaml target_modules q_proj, k_proj, v_proj, o_proj")
        c.ft("lora_dropout", 0.1, "scenarios.yaml lora_dropout 0.1")
        if scen == "lora-plain":
            c.ft("base_bits", 16, "bf16 base")
        elif scen == "accelerated-peft-autogptq":
            c.ft("base_bits", 4, "TheBloke GPTQ 4-bit checkpoint (group size 128)")
            c.ft("quant_method", "gptq", "accelerated-peft-autogptq: a GPTQ checkpoint through auto-gptq")
            c.ft("gptq_group_size", 128, "TheBloke's GPTQ checkpoints: group size 128")
            c.ft("gptq_kernel", "fused", "fms' accelerated-peft plugin runs auto-gptq's triton QuantLinear "
                 "(QuantLinearFunction keeps only the packed buffers for backward)")
        else:
            c.ft("base_bits", 4, "BitsAndBytesConfig load_in_4bit" if scen == "baseline-peft-bnb"
                 else "fms accelerated-peft plugin: bitsandbytes 4-bit")
            c.ft("quant_type", "nf4", "bnb_4bit_quant_type nf4 (scenarios.yaml)")
            c.ft("double_quant", True, "bnb_4bit_use_double_quant true (scenarios.yaml)")
            c.ft("bnb_keeps_input", False, "bitsandbytes 0.43.3 (the refs' environment): MatMul4Bit keeps no input "
                 "(bitsandbytes PR #1270, in 0.43.2)")
            if scen == "baseline-peft-bnb" and gpus == 1:
                c.ft("prepare_kbit", True, "TRL 0.13 SFTTrainer._prepare_peft_model calls PEFT's "
                     "prepare_model_for_kbit_training for a 4-bit model that is not sharded (is_qlora and not "
                     "is_sharded_qlora): embeddings, norms and head become fp32")
            elif scen == "baseline-peft-bnb":
                c.ft("prepare_kbit", False, "FSDP QLoRA: the 4-bit weights are still on the CPU / meta device when TRL "
                     "checks (is_sharded_qlora), so prepare_model_for_kbit_training is skipped")
    c.gpu("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB (refs/a100_80gb.csv)")
    if gpus == 1:
        parallel_defaults(c, 1, 0, "one GPU, plain python launch", "no FSDP on one GPU")
    else:
        parallel_defaults(c, gpus, 3, "accelerate launch --num_processes 2", "accelerate.yaml: FSDP FULL_SHARD "
                          "(fsdp_sharding_strategy 1), TRANSFORMER_BASED_WRAP, BACKWARD_PRE prefetch, mixed_precision 'no'")
        if kind == "full":
            c.p("fsdp_use_orig_params", True, "`accelerate launch` defaults use_orig_params to true (accelerate.yaml does "
                "not set it) and transformers' Trainer keeps it; for a full fine-tune it decides only that the optimizer "
                "sees each original parameter's view of the flat shard (set when memfit gained FSDP1's flat parameters)")
        else:
            c.p("fsdp_use_orig_params", True, "`accelerate launch` defaults use_orig_params to true (accelerate.yaml does "
                "not set it); transformers 4.48's Trainer (_fsdp_qlora_plugin_updates) installs PEFT's "
                "fsdp_auto_wrap_policy, which wraps every trainable LoRA layer in its own FSDP unit, so no unit mixes "
                "frozen and trainable parameters and the flag costs nothing (memfit: fsdp1_keeps_adapters_apart, measured "
                "by tools/frameworks/fsdp1_units.py; until Dec 5 2026 these cases set it false to say so)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    if is_oom:
        c.oom("inferred by the research notes from a CSV row with no training metrics and nvidia-smi at ~80 GB (fms writes "
              "no error text into the CSV)")
    else:
        c.measure("peak_allocated_bytes", "bytes", "mem_peak_torch_mem_alloc_in_bytes = HF Trainer's memory tracker "
                  "(skip_memory_metrics False) on rank 0: the allocated peak over init and train, i.e. about "
                  "torch.cuda.max_memory_allocated() -> peak_allocated_bytes",
                  note="HF Trainer memory tracker: running sum of allocation deltas plus the peaked delta per stage (about "
                       "max_memory_allocated), rank 0")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- Liger-Kernel

@rule("liger-hfex-")
def liger_hf_example(rec):
    rid = rec["id"]
    s = rec["setup"]
    liger = rid.endswith("-liger")
    model_key = {"qwen2-7b": "qwen2-7b", "llama3-8b": "llama-3-8b", "gemma-7b": "gemma-7b"}[rid.split("-")[2] + "-" + rid.split("-")[3]]
    mbs = s["micro_batch_size"]
    is_oom = rec["measured"]["quantity"] == "oom"
    c = Case(rec, "full", f"{rec['model']} full, 4x A100-80GB FSDP, bs {mbs}/GPU, Alpaca <=512 padded, AC, "
             f"{'Liger' if liger else 'HF'}").model(model_key)
    if liger:
        c.t("framework", "liger", "AutoLigerKernelForCausalLM (--use_liger): Liger RoPE, RMSNorm, SwiGLU/GeGLU and "
            "FusedLinearCrossEntropy patched into the transformers model")
        c.t("loss", "fused_linear_ce", "Liger's FusedLinearCrossEntropy: the lm_head and the loss run in chunks, full logits "
            "never exist")
    else:
        c.t("framework", "hf", "plain transformers model under HF Trainer (TRL SFTTrainer), examples/huggingface/training.py")
        c.t("loss", "eager", "transformers' cross-entropy over the full logits")
    c.t("micro_batch_size", mbs, "'BS' = per_device_train_batch_size (run_*.sh pass it per device)")
    c.t("grad_accum_steps", 1, "run_*.sh set no gradient accumulation")
    c.t("seq_len", 512, "max_seq_length 512 with DataCollatorForCompletionOnlyLM(pad_to_multiple_of=16): batches are padded "
        "to their longest Alpaca sample, mostly far below 512, so 512 is a cap")
    c.flag("padded_seq_cap")
    c.t("optimizer", "adamw", "Trainer default adamw_torch")
    c.t("optimizer_impl", "foreach", "adamw_torch sets neither foreach nor fused: torch's foreach default")
    c.t("checkpointing", "full", "fsdp_config activation_checkpointing true (FSDP's checkpoint wrapper per decoder layer)")
    c.t("attention", "sdpa", "attn_implementation not set: transformers' default sdpa (with a padding mask, the "
        "memory-efficient kernel)")
    c.t("dropout", 0.0, "attention_dropout 0.0 in the model config")
    c.t("precision", "bf16_fsdp", "model loaded with torch_dtype=bfloat16, but Trainer --bf16 under FSDP makes accelerate "
        "(>= 0.30, prepare_model) upcast the wrapped parameters to fp32 ('upcasting', PR #2674) with FSDP MixedPrecision "
        "param_dtype bf16: fp32 sharded weights, gradients and AdamW states, each unit gathered in bf16")
    c.ft("method", "full", "full fine-tuning")
    if model_key == "gemma-7b" and not is_oom:
        c.note("the Gemma-7B rows sit below what fp32 sharded weights, gradients and AdamW states alone take under "
               "accelerate's upcast (16 bytes x 8.5e9 / 4 = 34 GB); the Llama-3-8B and Qwen2-7B rows of the same scripts "
               "match it (Llama bs 32 with Liger: the step peak 20 bytes x 8.03e9 / 4 = 38,291 MiB, measured 38.3k), so "
               "the Gemma runs look like a different setup, which the source does not state")
    c.gpu("a100-80gb", "examples/huggingface/README: the configuration runs on 4 A100 80GB")
    parallel_defaults(c, 4, 3, "torchrun --nproc_per_node 4", "--fsdp 'full_shard auto_wrap'")
    c.p("fsdp_use_orig_params", True, FSDP_ORIG_PARAMS_HF)
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    if is_oom:
        c.oom("the README's chart marks this Hugging Face configuration as out of memory (no bar)")
    else:
        c.note("the 512-token cap overstates the batch: Alpaca samples padded to the longest in each batch of "
               f"{mbs} are mostly far shorter, and the logits term scales with the vocabulary "
               f"({ {'qwen2-7b': '152,064', 'llama-3-8b': '128,256', 'gemma-7b': '256,000'}[model_key] } tokens)")
        if not liger:
            c.note("under bf16 autocast the cross-entropy reads an fp32 copy of the logits and keeps an fp32 log-softmax "
                   "and gradient; a build without bf16_autocast runs the case as pure bf16 without them")
        c.measure("peak_allocated_bytes", "MiB", "callback.py records torch.cuda.max_memory_allocated() and divides by 2**20 "
                  "('binary system'), plotted as 'Peak Allocated Memory (MB)' -> peak_allocated_bytes in MiB")
        if rec["confidence"] == "low" or "llama" in rid or "gemma" in rid:
            c.flag("screenshot_value")
            c.line("value read off the bar chart (llama/gemma charts print no numbers), about +-1-1.5 GB")
    training_defaults(c)
    return low_conf(c).done()


@rule("liger-readme-e2e-")
def liger_readme(rec):
    rid = rec["id"]
    s = rec["setup"]
    liger = rid.endswith("-liger")
    seq = s["seq_len"]
    is_oom = rec["measured"]["quantity"] == "oom"
    c = Case(rec, "full", f"Llama-3-8B full, 8x A100 FSDP1, bs 8/GPU, seq {seq}, AC, {'Liger' if liger else 'HF'}")
    c.model("llama-3-8b")
    if liger:
        c.t("framework", "liger", "'Hugging Face + Liger Kernel': Liger RoPE, RMSNorm, SwiGLU and FusedLinearCrossEntropy")
        c.t("loss", "fused_linear_ce", "Liger's FusedLinearCrossEntropy")
    else:
        c.t("framework", "hf", "'Hugging Face': the plain transformers model")
        c.t("loss", "eager", "transformers' cross-entropy over the full logits")
    c.t("micro_batch_size", 8, "'Batch Size = 8' (taken per device, as in the example scripts)")
    c.t("grad_accum_steps", 1, "not stated; none")
    c.t("seq_len", seq, "the chart's Seq Len")
    c.t("optimizer", "adamw", "'Optimizer = AdamW' (Trainer's adamw_torch)")
    c.t("optimizer_impl", "foreach", "torch's default")
    c.t("checkpointing", "full", "'Gradient Checkpointing = True'")
    c.t("attention", "sdpa", "not stated: transformers' default sdpa")
    c.t("dropout", 0.0, "Llama-3 config")
    c.t("precision", "bf16_fsdp", "'Data Type = bf16': taken as in the example scripts (Trainer --bf16 under FSDP1, where "
        "accelerate >= 0.30 upcasts the parameters to fp32 and FSDP gathers them in bf16)")
    c.ft("method", "full", "full fine-tuning")
    c.gpu("a100-80gb", "'8 A100s'; 80 GB implied by the 77 GB bar")
    parallel_defaults(c, 8, 3, "'Distributed Strategy = FSDP1 on 8 A100s'", "FSDP1 full shard")
    c.p("fsdp_use_orig_params", True, FSDP_ORIG_PARAMS_HF)
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    if is_oom:
        c.oom("README: 'Hugging Face models start to OOM at a 4K context length'")
    else:
        c.measure("peak_reserved_bytes", "MiB", "chart 'Peak Reserved Memory (MB)': torch.cuda.max_memory_reserved(), which "
                  "Liger's benchmark callback divides by 2**20 -> peak_reserved_bytes in MiB")
        c.flag("screenshot_value")
        c.line("value read off the bar chart (no data labels), about +-1.5 GB")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- unsloth README, LLaMA-Factory table

@rule("unsloth-readme-")
def unsloth_readme(rec):
    raise Skip("unsloth README's A100 tables (Dec 2023): batch size, sequence length and optimizer of the A100 runs are not "
               "stated (the T4 settings on the same page are a different campaign, the per-cell Colab notebooks are not "
               "stored), and the counter is not named; any memfit configuration would be a guess")


@rule("llamafactory-perf-")
def llamafactory(rec):
    rid = rec["id"]
    s = rec["setup"]
    unsloth = "unsloth" in rid
    fa2 = "fa2" in rid
    bits = 4 if rid.endswith("4bit") else 16
    c = Case(rec, "qlora" if bits == 4 else "lora",
             f"Llama-2-7B {'QLoRA' if bits == 4 else 'LoRA'} r8, 1x A100, bs 4 x ga 2, max length 1024, "
             f"{'unsloth' if unsloth else 'HF'}{'+FA2' if fa2 else ''}").model("llama-2-7b")
    if unsloth:
        c.t("framework", "unsloth", "method 'Unsloth+FA2' in LLaMA-Factory (use_unsloth)")
    else:
        c.t("framework", "hf", "LLaMA-Factory runs transformers + PEFT under HF Trainer")
    c.t("micro_batch_size", 4, "'Batch size: 4'")
    c.t("grad_accum_steps", 2, "'Gradient accumulation: 2'")
    c.t("seq_len", 1024, "'Max length: 1024' (cutoff_len); samples padded per batch, dataset not named: a cap")
    c.flag("padded_seq_cap")
    c.t("optimizer", "adamw", "not stated: HF Trainer default adamw_torch")
    c.t("optimizer_impl", "foreach", "torch's default")
    c.t("checkpointing", "full", "not stated: LLaMA-Factory enables gradient checkpointing unless "
        "disable_gradient_checkpointing is set")
    if not unsloth:
        c.t("checkpoint_impl", "reentrant", "LLaMA-Factory of Dec 2023 (src/llmtuner/model/patcher.py) calls "
            "gradient_checkpointing_enable() without gradient_checkpointing_kwargs: transformers 4.36 then checkpoints "
            "with torch's default use_reentrant=True")
    if fa2 or unsloth:
        c.t("attention", "flash", "'FA2' in the method name")
    else:
        c.t("attention", "sdpa", "'HF' without FA2 on transformers 4.36 (Dec 2023): the sdpa default")
    c.t("dropout", 0.0, "Llama-2 config; LLaMA-Factory's lora_dropout default 0 too")
    c.t("loss", "auto", "the profile's own loss (transformers cross-entropy; unsloth's fused cross-entropy)")
    c.t("precision", "bf16_autocast", "'16-bit': LLaMA-Factory loads the weights in the compute dtype (bf16 on A100) and runs "
        "the Trainer with bf16")
    c.ft("method", "lora", "LoRA")
    c.ft("lora_rank", 8, "'LoRA rank: 8'")
    c.ft("lora_targets", ["q", "v"], "not stated: LLaMA-Factory's default lora_target of the time, q_proj,v_proj")
    c.ft("lora_dropout", 0.0, "LLaMA-Factory default lora_dropout 0")
    c.ft("base_bits", bits, "'4-bit' rows: bitsandbytes QLoRA" if bits == 4 else "16-bit base")
    if bits == 4:
        c.ft("quant_type", "nf4", "LLaMA-Factory's quantization_type default nf4")
        c.ft("double_quant", True, "LLaMA-Factory's double_quantization default true")
        c.ft("bnb_keeps_input", True, f"a comparison of Dec 2023 - Jan 2024 (bitsandbytes 0.41 / 0.42): {BNB_KEEPS_INPUT}")
    c.gpu("a100-80gb", "'NVIDIA A100 * 1', size not stated (80 GB assumed; it only sets the fit verdict)")
    parallel_defaults(c, 1, 0, "'A100 * 1'", "no sharding")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("device_total_bytes", "GiB", "'GRAM (GB)' rounded to whole numbers, the counter not named; LLaMA-Factory "
              "logs no memory itself, so the figure was read outside the process (nvidia-smi, whose MiB divided by 1024 "
              "give the written GB) -> device_total_bytes, GiB",
              note="unknown counter: taken as nvidia-smi (LLaMA-Factory and HF Trainer log no GPU memory by default)")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- Hugging Face blog OOMs (2022)

@rule("hfblog-")
def hf_blog(rec):
    rid = rec["id"]
    s = rec["setup"]
    gpus = s["num_gpus"]
    fp16 = "fp16" in rid
    c = Case(rec, "full", f"GPT-2 XL full, {gpus}x Titan RTX 24GB DDP, {'fp16 AMP' if fp16 else 'fp32'}, bs 1, "
             "block 128").model("gpt2-xl")
    c.t("framework", "hf", "accelerate + transformers run_clm_no_trainer.py")
    c.t("micro_batch_size", 1, "--per_device_train_batch_size 1 (the blog's OOM row)")
    c.t("grad_accum_steps", 1, "none")
    c.t("seq_len", 128, "--block_size 128: the DeepSpeed blog prints 128 for the same test; the FSDP blog's '12' is that "
        "value cut short (wikitext is grouped into full blocks, so every sequence is 128 tokens)")
    c.t("optimizer", "adamw", "run_clm_no_trainer.py builds torch.optim.AdamW")
    c.t("optimizer_impl", "for_loop", "torch 1.11/1.12 (2022): AdamW's foreach default was off, the single-tensor loop ran")
    c.t("checkpointing", "none", "no gradient checkpointing in the command")
    c.t("attention", "eager", "GPT-2 in transformers of 2022 has only its eager attention")
    c.t("dropout", 0.1, "GPT-2 config attn_pdrop, resid_pdrop, embd_pdrop 0.1")
    c.t("loss", "eager", "GPT2LMHeadModel's cross-entropy over the full logits")
    c.t("precision", "fp16_mixed" if fp16 else "fp32", "accelerate mixed_precision fp16 (torch.autocast + GradScaler over fp32 "
        "weights)" if fp16 else "accelerate mixed_precision 'no': fp32 weights, gradients and AdamW states")
    c.ft("method", "full", "full fine-tuning (the DeepSpeed blog: --config_name gpt2-xl, trained from scratch)")
    c.gpu("titan-rtx-24gb", "'2X24GB NVIDIA Titan RTX' (23.65 GiB total capacity in the error text)")
    parallel_defaults(c, gpus, 0, "DDP via accelerate; the row's GPU count" if gpus > 1 else
                      "one process ('a single 24GB GPU' / the blog's DDP row on 1 GPU)", "plain DDP, no sharding")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.oom("the blog's table prints a CUDA out-of-memory error for this row")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- torchao (torchtitan runs)

# torchtitan compiled its loss with the model from the start, stopped on 2024-12-18 (e8977b0, 'turning off
# compile on loss function', pytorch/torchtitan#755) and started again on 2025-04-02 (bbb1b61,
# pytorch/torchtitan#1033: build_cross_entropy_loss wraps cross_entropy_loss in torch.compile when
# training.compile is set, torchtitan/components/loss.py). Runs under compile from after that date.
COMPILED_LOSS_WHY = ("torchtitan's build_cross_entropy_loss compiles cross_entropy(pred.float(), labels) when "
                     "training.compile is on (torchtitan/components/loss.py, from pytorch/torchtitan#1033 of 2025-04-02"
                     "; {when})")
EAGER_LOSS_WHY = "torchtitan's cross_entropy_loss over the full logits (upcast to fp32)"
LOSS_PARALLEL_BASE = ("torchtitan with tensor parallelism: the output projection keeps its logits sharded on the "
                      "vocabulary (ColwiseParallel output Shard(-1), use_local_output False) and train.py runs "
                      "cross_entropy(pred.float(), labels) inside torch.distributed.tensor.parallel.loss_parallel() "
                      "(parallel_dims.loss_parallel_enabled = TP on and --training.disable_loss_parallel unset), whose "
                      "handlers compute the log-softmax and its backward as fp32 tensor arithmetic "
                      "(torch/distributed/tensor/parallel/loss.py)")
LOSS_PARALLEL_WHY = (LOSS_PARALLEL_BASE + "; the loss was not compiled between 2024-12-18 and 2025-04-02 "
                     "(pytorch/torchtitan#755, #1033)")
LOSS_PARALLEL_PAPER_WHY = (LOSS_PARALLEL_BASE + "; the paper's runs predate 2024-12-18, when torchtitan still wrapped "
                           "the loss in torch.compile (pytorch/torchtitan#755 turned that off): what Inductor makes of "
                           "the DTensor handlers is not modelled, so their eager memory is taken")
# torchtitan's launch script has run train.py under PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"
# since 2024-10-22 (pytorch/torchtitan#643, run_llama_train.sh, later run_train.sh); torchao's float8
# benchmark scripts (float8_training_benchmark.sh, later llama3.sh) and its tutorial launch through it.
EXPANDABLE_WHY = ("launched through torchtitan's run_train.sh (run_llama_train.sh before), which sets "
                  "PYTORCH_CUDA_ALLOC_CONF=\"expandable_segments:True\" since 2024-10-22 (pytorch/torchtitan#643)")
# Until 2025-03-19 torchtitan's default norm_type "rmsnorm" was its own Python RMSNorm,
# self._norm(x.float()).type_as(x) * self.weight (torchtitan/models/norms.py), which saves what
# transformers' does; pytorch/torchtitan#985 switched to nn.RMSNorm (fused). Under torch.compile the
# Python norm saves what the fused one does (training.compile), so only uncompiled runs state it.
EAGER_NORM_WHY = ("torchtitan's default norm_type 'rmsnorm' before 2025-03-19 (pytorch/torchtitan#985): its own "
                  "Python RMSNorm, self._norm(x.float()).type_as(x) * self.weight (torchtitan/models/norms.py), "
                  "not compiled in this run")


def torchtitan_common(c, mbs, seq, ckpt, ckpt_why, fused, fused_why, loss=("eager", EAGER_LOSS_WHY)):
    c.t("framework", "torchtitan", "torchtitan train.py (Llama 3 8B from scratch on C4)")
    c.t("micro_batch_size", mbs, "local batch size")
    c.t("grad_accum_steps", 1, "none")
    c.t("seq_len", seq, "sequence length")
    c.t("optimizer", "adamw", "torchtitan's AdamW (torch.optim.AdamW)")
    c.t("optimizer_impl", "fused" if fused else "foreach", fused_why)
    c.t("checkpointing", ckpt, ckpt_why)
    c.t("attention", "flash", "torchtitan calls F.scaled_dot_product_attention with is_causal (flash kernel)")
    c.t("dropout", 0.0, "torchtitan's Llama has no dropout")
    c.t("loss", loss[0], loss[1])
    c.t("precision", "bf16_fsdp", "FSDP2 MixedPrecisionPolicy(param_dtype bf16, reduce_dtype fp32): fp32 sharded parameters, "
        "gradients and AdamW states, bf16 compute")
    c.ft("method", "full", "pre-training")
    return c


@rule("torchao-train-")
def torchao_train(rec):
    rid = rec["id"]
    s = rec["setup"]
    variant = rid.split("-")[-1]
    gpu = "mi300x-192gb" if "mi300x" in rid else ("b200-180gb" if "b200" in rid else "h100-sxm-80gb")
    fp8 = not rid.endswith("-bf16")
    c = Case(rec, "full", f"Llama-3-8B pre-training, 8x {gpu}, FSDP2, bs 1, seq 8192, per-op SAC, compile"
             f"{', ' + variant if fp8 else ''}").model("llama-3-8b")
    late = gpu != "h100-sxm-80gb"  # the B200 and MI300X tables: torchtitan 6fc499f / 2c8b594 (Aug 2025)
    loss = (("compiled_ce", COMPILED_LOSS_WHY.format(when="this table's run used torchtitan " +
                                                    ("6fc499f" if gpu == "b200-180gb" else "2c8b594") + " of Aug 2025"))
            if late else ("eager", EAGER_LOSS_WHY + "; not compiled: torchtitan 0.0.2 of early 2025 ran between "
                          "e8977b0 (2024-12-18, loss compile turned off) and bbb1b61 (2025-04-02, turned back on)"))
    torchtitan_common(c, 1, 8192, "selective_op", "'per-op SAC' (activation_checkpoint.mode selective, option op): every "
                      "second matmul output and the attention output are kept", True,
                      "torchtitan builds AdamW with fused=True by default since Feb 2025 (pytorch/torchtitan#881); the "
                      "benchmark (torchao 0.10, pytorch 2.7.0a0, Mar 2025) ran after that", loss)
    c.t("compile", "yes", "torch.compile (--compile.enable)")
    if fp8 and variant in ("tensorwise", "rowwise"):
        c.t("float8", variant, f"torchao float8 training, {variant} scaling (the benchmark's recipe)")
        if variant == "tensorwise":
            c.p("float8_all_gather", True, "torchao's benchmarks/float8/training/float8_training_benchmark.sh runs tensorwise "
                "with enable_fsdp_float8_all_gather and precompute_float8_dynamic_scale_for_fsdp")
        c.note("memfit's Float8 is torchao >= 0.13's (the bf16 input saved; 0.9-0.12 tensorwise also kept an fp8 weight, "
               "which FSDP frees under the fp8 all-gather); the run used torchao 0.10")
    elif fp8 and variant.startswith("mxfp8"):
        c.t("float8", "mxfp8", f"torchao MX training, recipe {variant} (torchao.prototype.mx_formats MXLinear: mx_mm "
            "saves the bf16 input and weight, casts along both dimensions in blocks of 32 with E8M0 scales)")
    elif fp8:
        c.flag("float8")
        c.line(f"float8 ({variant}): not representable; the bf16 configuration is kept")
    if gpu == "mi300x-192gb":
        c.gpu("mi300x-192gb", "8x AMD MI300X (192 GB)")
    elif gpu == "b200-180gb":
        c.gpu("b200-180gb", "8x B200 (power limited)")
        c.note("to memfit this is the MI300X row's configuration (same model, batch, length, checkpointing, compile, "
               "loss and torchtitan generation, Aug 2025), which measured 39.1 GiB against this row's 33.7: whatever "
               "makes the 14 % difference (the allocator on ROCm and on CUDA, the card's driver, the kernels compile "
               "picked) has no setting, so memfit gives both rows one estimate")
    else:
        c.gpu("h100-sxm-80gb", "'8xH100', variant not stated; the SXM 80 GB part assumed (peak_reserved does not depend on it)")
    c.hw("expandable_segments", True, "torchao's benchmarks/float8/training script (float8_training_benchmark.sh in Mar "
         "2025, llama3.sh later) is " + EXPANDABLE_WHY)
    parallel_defaults(c, 8, 3, "'Single-node training on 8xH100' (8 GPUs)", "FSDP2 full shard over 8")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("peak_reserved_bytes", "GiB", "'Peak Memory (GB)' is torchtitan's log line 'memory: X GiB' = "
              "torch.cuda.max_memory_reserved() in GiB on rank 0 -> peak_reserved_bytes, read as GiB")
    training_defaults(c)
    return low_conf(c).done()


@rule("torchao-pretrain-tutorial-")
def torchao_tutorial(rec):
    rid = rec["id"]
    fp8 = "fp8" in rid
    variant = rid.split("-")[-1]
    c = Case(rec, "full", f"Llama-3-8B pre-training, 8 GPUs (~95 GiB), FSDP2, bs 1, seq 8192, per-op SAC, compile"
             f"{', float8 ' + variant if fp8 else ''}").model("llama-3-8b")
    torchtitan_common(c, 1, 8192, "selective_op", "llama3_8b.toml @775a486: activation_checkpoint.mode selective, option "
                      "op", True, "torchtitan's default fused AdamW (since Feb 2025, pytorch/torchtitan#881; logs of June "
                      "2025)", ("compiled_ce", COMPILED_LOSS_WHY.format(when="the tutorial's torchtitan is 775a486 of "
                                                                        "2025-06-03")))
    c.t("compile", "yes", "torch.compile (--training.compile)")
    if fp8:
        c.t("float8", variant, f"--model.converters=float8, {variant} scaling (torchao Float8Linear)")
    c.gpu("h100-96gb", "not named; the log's percentage implies about 95 GiB per device (an H100 96 GB-class part)")
    c.note("to memfit this is torchao's MI300X benchmark row's configuration (39.1 GiB measured there), and this "
           "tutorial's log reads 30.9-31.0 GiB: a different generation of torchtitan (775a486, June 2025, against "
           "August's) and an unnamed card; memfit gives both one estimate")
    c.hw("expandable_segments", True, "the tutorial's command './run_train.sh' is " + EXPANDABLE_WHY)
    parallel_defaults(c, 8, 3, "NGPU=8", "FSDP2 full shard over 8 (llama3_8b.toml)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("peak_reserved_bytes", "GiB", "torchtitan's steady log 'memory: X GiB(Y%)' = torch.cuda.max_memory_reserved() "
              "of rank 0 in GiB -> peak_reserved_bytes")
    training_defaults(c)
    return low_conf(c).done()


@rule("torchao-f8nocompile-")
def torchao_f8nocompile(rec):
    rid = rec["id"]
    compiled = rid.endswith("fp8-compile")
    ac = "noac" if "-noac-" in rid else ("sel2" if "-sel2-" in rid else "fullac")
    ckpt = {"noac": "none", "sel2": "full", "fullac": "full"}[ac]
    c = Case(rec, "full", f"Llama-3-8B (assumed) pre-training, 8x H100, FSDP2, bs 1 (assumed), seq 4096, "
             f"{ {'noac': 'no AC', 'sel2': 'AC every 2nd layer', 'fullac': 'full AC'}[ac] }"
             f"{', float8 + compile' if compiled else ', bf16 eager'}").model(
        "llama-3-8b", why_extra=" - the README does not name the model; torchtitan's default Llama 3 8B assumed")
    torchtitan_common(c, 1, 4096, ckpt,
                      {"noac": "'no AC'", "fullac": "'full AC'",
                       "sel2": "'selective per layer (every 2nd layer)': torchtitan's layer-level SAC wraps every "
                               "second block in full checkpointing (checkpointed_layers below)"}[ac],
                      False, "torchtitan of Jan-Feb 2025 (PR #778 integration): --optimizer.fused defaulted to False, "
                      "so foreach")
    if ac == "sel2":
        c.t("checkpointed_layers", 16, "selective_ac_option 2: torchtitan's apply_ac checkpoints a block when its count "
            "is a multiple of 2, so 16 of Llama 3 8B's 32 blocks; the other 16 keep all their activations")
    c.line("micro_batch_size 1 is not stated in the README; torchtitan's llama3_8b.toml default local batch 1 is taken")
    c.flag("seq_from_default")
    if not compiled:
        c.t("norm_kernel", "eager", EAGER_NORM_WHY + " (the Jan-Feb 2025 torchtitan of this README)")
    if compiled:
        c.t("compile", "yes", "'float8 + compile': the baseline runs under torch.compile")
        c.t("float8", "tensorwise", "'float8 + compile': torchao's Float8Linear with dynamic tensorwise scaling, the "
            "baseline the float8nocompile prototype (tensorwise) is compared with")
    c.gpu("h100-sxm-80gb", "'8 H100s', variant not stated; SXM 80 GB assumed (peak_reserved does not depend on it)")
    c.hw("expandable_segments", True, "the benchmark ran torchtitan (the PR #778 integration of Jan-Feb 2025), "
         + EXPANDABLE_WHY)
    parallel_defaults(c, 8, 3, "8 H100s", "FSDP2 (torchtitan default) full shard over 8")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("peak_reserved_bytes", "GiB", "'Peak memory (GB)' = torchtitan's max_reserved log in GiB -> peak_reserved_bytes")
    training_defaults(c)
    return low_conf(c).done()


@rule("torchao-lowbit-optim-")
def torchao_lowbit(rec):
    rid = rec["id"]
    opt = rid.split("torchtune-")[1]
    c = Case(rec, "full", f"Llama-2-7B full, 1x A100-80GB, torchtune, bs 2, Alpaca (dynamic padding), AC, optimizer {opt}")
    c.model("llama-2-7b")
    c.t("framework", "torchtune", "torchtune full_finetune_single_device @52d1b838")
    c.t("micro_batch_size", 2, "llama2/7B_full_low_memory at 52d1b838: batch_size 2 (the README names no override)")
    c.t("grad_accum_steps", 1, "config default")
    c.t("seq_len", 1304, "Alpaca with max_seq_len null: each batch is padded to its longest sample, and the run covers the "
        "whole dataset, so the peak step holds the longest sample; 1304 tokens is the longest Alpaca sample with the Llama "
        "tokenizer (documented for lit-gpt's prompt); torchtune's template differs slightly")
    c.flag("longest_sample_estimated")
    c.t("checkpointing", "full", "7B_full_low_memory: enable_activation_checkpointing True")
    c.t("attention", "flash", "torchtune's attention calls F.scaled_dot_product_attention (flash kernel for bf16)")
    c.t("dropout", 0.0, "torchtune's Llama-2 builder has no dropout")
    c.t("loss", "chunked", "7B_full_low_memory at 52d1b838 uses CEWithChunkedOutputLoss (8 chunks, upcast per chunk)")
    c.t("precision", "bf16", "'full BF16': torchtune dtype bf16 = bf16 weights, gradients and optimizer states")
    if opt == "torch-fused":
        c.t("optimizer", "adamw", "'PyTorch (fused)': torch.optim.AdamW(fused=True)")
        c.t("optimizer_impl", "fused", "fused=True")
    elif opt == "ao-4bit":
        c.t("optimizer", "adamw_4bit", "torchao AdamW4bit (block-wise 4-bit states)")
        c.t("optimizer_impl", "fused", "torchao's low-bit AdamW updates each parameter in one compiled kernel")
    else:
        c.t("optimizer", "adamw_8bit", "bitsandbytes AdamW8bit" if opt == "bnb-8bit" else "torchao AdamW8bit (block-wise 8-bit "
            "states, the same bytes as bitsandbytes')")
        c.t("optimizer_impl", "fused", "8-bit AdamW updates in place (bitsandbytes' kernel / torchao's compiled step)")
    c.t("optimizer_in_backward", False, "the README names no optimizer_in_bwd setting (the config's own optimizer is "
        "PagedAdamW with optimizer_in_bwd True); off is an inference from the numbers, stated as such: bf16 weights, all "
        "gradients and AdamW states are 53.9 GB = 50.2 GiB, just below the 51.6 GiB measured, whereas with the step in "
        "backward they are 40.4 GB and 11 GiB would be left for a batch of two checkpointed ~1.3k-token samples")
    c.whatif("optimizer step fused into backward (the config's optimizer_in_bwd True)", training__optimizer_in_backward=True)
    c.ft("method", "full", "full fine-tuning")
    c.gpu("a100-80gb", "'A100', size not stated; 80 GB (51.6 GiB does not fit 40 GB)")
    parallel_defaults(c, 1, 0, "single device recipe", "no sharding")
    c.t("activation_offload", False, "not in the config of the time")
    c.measure("peak_allocated_bytes", "GiB", "'peak memory allocated' from torchtune's log_memory_stats = "
              "torch.cuda.max_memory_allocated() divided by 1024**3 (training/memory.py get_memory_stats at 52d1b838), "
              "printed as 'GB' -> peak_allocated_bytes, GiB")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- llm.c

@rule("llmc-")
def llmc(rec):
    rid = rec["id"]
    s = rec["setup"]
    big = "1558m" in rid
    is_oom = rec["measured"]["quantity"] == "oom"
    gpus = s["num_gpus"]
    mbs = s["micro_batch_size"]
    zero = 1 if rid.endswith("-z1") else 0
    c = Case(rec, "full", f"GPT-2 {'1558M' if big else '124M'} llm.c, {gpus}x A100{' 40GB' if is_oom else ''}, "
             f"B {mbs}, T 1024, {'ZeRO-1' if zero else 'no ZeRO'}")
    c.model("gpt2-xl" if big else "gpt2", {"vocab_size": 50304},
            "; llm.c pads the vocabulary to Vp = 50304 for the embedding and the logits (train_gpt2.cu)")
    c.t("framework", "llm_c", "karpathy/llm.c train_gpt2cu (C/CUDA): every activation buffer is allocated once at start-up "
        "for the configured B and T, no caching allocator")
    c.t("micro_batch_size", mbs, "-b in the run")
    c.t("grad_accum_steps", 1, "-d equal to B x T x processes: no accumulation")
    c.t("seq_len", 1024, "llm.c's default -t 1024")
    c.t("optimizer", "adamw", "llm.c's AdamW kernel with fp32 m and v")
    c.t("optimizer_impl", "fused", "llm.c updates each parameter in one fused CUDA kernel")
    c.t("checkpointing", "none", "-r 0: no recompute (the -r flag came with PR #422)" if is_oom else
        "no recompute existed yet (PR #422 came later)")
    c.t("attention", "flash", "USE_CUDNN=1: cuDNN flash attention (stores no T x T scores)")
    c.t("dropout", 0.0, "llm.c has no dropout")
    c.t("loss", "fused_ce", "llm.c's fused classifier writes logits (B x T x Vp) and their gradient in place (the llm_c "
        "profile's own loss)")
    c.t("precision", "bf16_master", "llm.c bf16 parameters and activations with an fp32 master copy and fp32 AdamW states")
    c.ft("method", "full", "pre-training / continued training")
    if is_oom:
        c.gpu("a100-40gb", "'my A100 40GB'")
        parallel_defaults(c, 1, 0, "one GPU", "no sharding")
    else:
        c.gpu("a100-80gb", "not stated in the comment (karpathy's machine: A100s, size unknown); device_total depends only on "
              "the architecture's context allowance, the same for 40 and 80 GB")
        parallel_defaults(c, gpus, zero, "mpirun -np 4", "-z 1: ZeRO stage 1 (optimizer states and master weights sharded)"
                          if zero else "-z 0: plain data parallel")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.note("llm.c allocates every buffer once for the configured B and T, with no caching allocator: one bf16 logits buffer "
           "(B x T x Vp) that its fused classifier overwrites with the logits' gradient, and bf16 activations for the "
           "backward pass; a build without the llm_c profile counts fp32 logits, the cross-entropy's buffers and the "
           "allocator's slack (the -z 1 run printed 13,629 MiB of activations, 237 MiB of parameters and 118 MiB for each "
           "of m, v and the master copy)")
    if is_oom:
        c.oom("'with -r 0 I can only fit batch size 10' on an A100 40GB; recorded as out of memory at batch 12 (the batch "
              "that fits with -r 1)")
    else:
        c.measure("device_total_bytes", "MiB", "llm.c prints 'MiB/GPU' from cudaMemGetInfo (total - free): device memory in "
                  "use including the CUDA context and cuBLAS/cuDNN workspaces, like nvidia-smi -> device_total_bytes")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- llama-recipes

@rule("llamarecipes-pr41-")
def llamarecipes_pr41(rec):
    rid = rec["id"]
    limited = "limitallgathers-true" in rid
    nologits = "nologits" in rid
    reserved = rid.endswith("-reserved")
    c = Case(rec, "lora", f"Llama-2-7B LoRA r8 (q,v), 4x A100-40GB FSDP, pure bf16, bs 4, packed 2048, AC, "
             f"limit_all_gathers {limited}{', logits not kept' if nologits else ''}").model("llama-2-7b")
    c.t("framework", "hf", "llama-recipes llama_finetuning.py: transformers LlamaForCausalLM + PEFT under a plain "
        "PyTorch FSDP loop")
    c.t("micro_batch_size", 4, "batch_size_training default 4 (configs/training.py @fb98ba35)")
    c.t("grad_accum_steps", 1, "no accumulation in the loop of the time")
    c.t("seq_len", 2048, "samsum packed by Concatenator(chunk_size=2048): every sequence is 2048 tokens")
    c.t("optimizer", "adamw", "optim.AdamW(model.parameters(), lr, weight_decay=0.0)")
    c.t("optimizer_impl", "foreach", "no foreach/fused argument: torch's foreach default")
    c.t("checkpointing", "full", "fsdp_activation_checkpointing True: checkpoint_wrapper on every LlamaDecoderLayer")
    c.t("checkpoint_impl", "non_reentrant", "llama-recipes' apply_fsdp_checkpointing wraps each LlamaDecoderLayer with "
        "checkpoint_wrapper(checkpoint_impl=CheckpointImpl.NO_REENTRANT)")
    c.t("attention", "eager", "transformers' LlamaAttention of mid-2023 (matmul + softmax upcast to fp32)")
    c.t("dropout", 0.0, "Llama-2 config")
    c.t("loss", "eager", "LlamaForCausalLM's cross-entropy over fp32-upcast logits")
    c.t("loop_keeps_logits", "no" if nologits else "yes",
        "loss = model(**batch).loss: the output object and its logits are dropped before backward" if nologits else
        "outputs = model(**batch); loss = outputs.loss: the loop keeps the output (logits and, with use_cache True, the "
        "past key/values) alive until the step ends")
    c.t("precision", "bf16", "--pure_bf16: model.to(torch.bfloat16), no FSDP MixedPrecision; bf16 weights, gradients, states")
    c.ft("method", "lora", "--use_peft --peft_method lora")
    c.ft("lora_rank", 8, "configs/peft.py lora_config r 8 (alpha 32)")
    c.ft("lora_targets", ["q", "v"], "target_modules q_proj, v_proj")
    c.ft("lora_dropout", 0.05, "lora_dropout 0.05")
    c.ft("base_bits", 16, "bf16 base")
    c.gpu("a100-sxm4-40gb", "'A100 40GB (AWS)': p4d's A100-SXM4-40GB")
    parallel_defaults(c, 4, 3, "torchrun --nproc_per_node 4", "--enable_fsdp: FULL_SHARD with the PEFT-aware wrap policy")
    c.p("fsdp_use_orig_params", False, "FSDP(...) is built without use_orig_params (torch default False); the PEFT wrap policy "
        "wraps the LoRA layers apart so that flat parameters have uniform requires_grad")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.t("use_cache", "yes", "use_cache stays True (FSDP's checkpoint wrapper, not HF's gradient checkpointing, so transformers "
        "does not switch it off): each layer returns its keys and values (4 x 2048 x 4096 x 2 x 2 B = 128 MiB per layer) "
        "with the outputs (PR #165 later measured ~4 GB saved by turning it off)")
    if nologits:
        c.note("the outputs (and the key/value caches) die with the loss here, before backward; the replay's forward under "
               "full checkpointing does not allocate the layers' own transients (the attention scores), so the freed "
               "64 MiB cache segments cannot serve backward's first recomputation and the replayed reserve grows; the "
               "real allocator had cut the scores' segment during forward, while the caches were still small")
    if not limited:
        c.p("fsdp_limit_all_gathers", False, "the PR's baseline: FSDP(..., limit_all_gathers=False), the CPU free to "
            "issue all-gathers ahead of the GPU")
        if not reserved:
            c.flag("unmodelled_active_bytes")
            c.line("'Peak active' counts the gathered units that wait on the GPU's events after the CPU freed them; "
                   "max_memory_allocated, memfit's peak_allocated_bytes, does not (PyTorch's free() drops them from "
                   "allocated at once), so this reading has no memfit quantity once the all-gathers run ahead")
    if reserved:
        c.measure("peak_reserved_bytes", "GB", "'Peak reserved' = torch.cuda.max_memory_reserved() as awgu printed it; 'GB' "
                  "as written, taken as 1e9 bytes (awgu's conversion is not shown; GiB would be 7.4 % more)")
    else:
        c.measure("peak_allocated_bytes", "GB", "'Peak active' = memory_stats active_bytes.all.peak, within a few MB of "
                  "max_memory_allocated -> peak_allocated_bytes; 'GB' as written, taken as 1e9 bytes",
                  note="peak active (memory_stats active_bytes.all.peak), about max_memory_allocated")
    training_defaults(c)
    return low_conf(c).done()


@rule("llamarecipes-issue100-")
def llamarecipes_issue100(rec):
    c = Case(rec, "full", "Llama-2-7B full, 4x A100-40GB FSDP (bf16 MixedPrecision, defaults of Aug 2023), bs 4, packed "
             "2048, AC").model("llama-2-7b")
    c.t("framework", "hf", "llama-recipes llama_finetuning.py with transformers' LlamaForCausalLM")
    c.t("micro_batch_size", 4, "not restated: batch_size_training default 4")
    c.t("grad_accum_steps", 1, "no accumulation in the loop of the time")
    c.t("seq_len", 2048, "not restated: samsum concatenated into 2048-token chunks (the default dataset path of Aug 2023)")
    c.t("optimizer", "adamw", "optim.AdamW")
    c.t("optimizer_impl", "foreach", "torch's default")
    c.t("checkpointing", "full", "not restated: fsdp_activation_checkpointing default True")
    c.t("attention", "eager", "before the flash-attention PR (#97) the comment refers to: eager LlamaAttention")
    c.t("dropout", 0.0, "Llama-2 config")
    c.t("loss", "eager", "LlamaForCausalLM's cross-entropy")
    c.t("loop_keeps_logits", "yes", "the loop of the time kept outputs alive until the step ended (see PR #41)")
    c.t("precision", "bf16_fsdp", "not restated: defaults pure_bf16 False, mixed_precision True -> FSDP MixedPrecision "
        "(param/reduce/buffer bf16) over fp32 sharded parameters and AdamW states")
    c.ft("method", "full", "'FSDP only without PEFT'")
    c.gpu("a100-40gb", "'4 A100 40 GB'")
    parallel_defaults(c, 4, 3, "4 GPUs", "FULL_SHARD")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.t("use_cache", "yes", "use_cache left True under FSDP's checkpoint wrapper (see the PR #41 cases): key/value caches "
        "returned with the outputs, which the loop keeps")
    c.measure("peak_reserved_bytes", "GiB", "'Max CUDA memory reserved was 29 GB': llama-recipes' MemoryTrace prints "
              "byte2gb(torch.cuda.max_memory_reserved()) with byte2gb = int(x / 2**30), an integer of GiB -> "
              "peak_reserved_bytes, GiB")
    c.note("the printed value is truncated to a whole GiB (29 means 29.0-29.99)")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- LitGPT tutorials and issues

@rule("litgpt-tut-lora-")
def litgpt_tutorial(rec):
    rid = rec["id"]
    slm = "stablelm" in rid
    mixed = "bf16-mixed" in rid
    nf4 = "nf4" in rid
    is_oom = rec["measured"]["quantity"] == "oom"
    seq = 1034 if slm else 1304
    kind = "qlora" if nf4 else "lora"
    c = Case(rec, kind, f"{'StableLM-alpha 3B' if slm else 'Llama 2 7B'} {'QLoRA nf4-dq' if nf4 else 'LoRA'} r8 (q,v), "
             f"1x A100-40GB, bs 1, seq ~{seq}, {'bf16-mixed' if mixed else 'bf16-true'}")
    c.model("stablelm-3b" if slm else "llama-2-7b")
    c.t("framework", "litgpt", "lit-gpt finetune/lora.py at 0cc02afa (Oct 2023)")
    c.t("micro_batch_size", 1, "'using a microbatch size of 1'")
    c.t("grad_accum_steps", 128, "batch_size 128 / micro_batch_size 1 (lora.py defaults)")
    c.t("seq_len", seq, "Alpaca at full length, padded per micro-batch (batch 1: the sample's own length); lit-gpt of the "
        "time put the longest sample first, so the peak runs at the longest Alpaca sample (the resource tables' value, "
        f"{seq} tokens for this tokenizer)")
    c.flag("longest_sample_len")
    if nf4:
        c.t("optimizer", "paged_adamw", "lora.py builds bnb.optim.PagedAdamW whenever --quantize sets a BitsandbytesPrecision "
            "plugin (l.138-143)")
        c.t("optimizer_impl", "fused", "bitsandbytes' paged AdamW updates in place")
    else:
        c.t("optimizer", "adamw", "torch.optim.AdamW without --quantize")
        c.t("optimizer_impl", "foreach", "no foreach/fused argument: torch's foreach default")
    c.t("checkpointing", "none", "single-device lora.py uses no activation checkpointing")
    c.t("attention", "flash", "F.scaled_dot_product_attention with is_causal (flash kernel for bf16/fp16 inputs on A100)")
    c.t("dropout", 0.0, "the model has no dropout; LoRA dropout below")
    c.t("loss", "chunked", "lora.py evaluates lm_head in 128-token chunks and sums a chunked cross-entropy: full logits "
        "never exist")
    if mixed:
        c.t("precision", "bf16_mixed", "'Default (bf16-mixed)': Lightning's bf16-mixed keeps fp32 weights and runs the "
            "forward under torch.autocast(bf16)")
        c.t("lora_base_dtype", "fp32", "under bf16-mixed the frozen base stays in fp32 too (the checkpoint is loaded into "
            "an fp32 model; only the autocast copies are bf16)")
    else:
        c.t("precision", "bf16", "--precision bf16-true: pure bf16 weights, gradients and states")
    c.ft("method", "lora", "finetune/lora.py")
    c.ft("lora_rank", 8, "lora_r 8 (lora.py default)")
    c.ft("lora_targets", ["q", "v"], "lora_query True, lora_value True, the rest False (defaults); LitGPT's fused qkv linear "
         "with LoRA on the q and v slices")
    c.ft("lora_dropout", 0.05, "lora_dropout 0.05 (default)")
    c.ft("base_bits", 4 if nf4 else 16, "--quantize bnb.nf4-dq: bitsandbytes NF4 with double quantization on every linear "
         "layer (including lm_head, as memfit's litgpt profile does)" if nf4 else "bf16/fp32 base")
    if nf4:
        c.ft("quant_type", "nf4", "bnb.nf4-dq")
        c.ft("double_quant", True, "the '-dq' variant")
        c.ft("bnb_keeps_input", True, f"lit-gpt of Oct 2023 pinned bitsandbytes 0.41: {BNB_KEEPS_INPUT}")
        c.ft("stable_embedding", "no", STABLE_EMBEDDING_WHY)
    c.gpu("a100-40gb", "not stated in the tutorial; lit-gpt's benchmarks of the time (the resource tables of the same month, "
          "with identical numbers for the shared rows) ran on an A100-SXM4-40GB")
    parallel_defaults(c, 1, 0, "single device", "no sharding")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    if is_oom:
        c.oom("the tutorial's table prints 'OutOfMemoryError' for Llama 2 7B with the default bf16-mixed precision")
    else:
        c.measure("peak_allocated_bytes", "GB", "'Training Memory' = lit-gpt's 'Memory used: "
                  "torch.cuda.max_memory_allocated() / 1e9 GB' -> peak_allocated_bytes, decimal GB")
    training_defaults(c)
    return low_conf(c).done()


@rule("litgpt-tut-prepdata-")
def litgpt_prepdata(rec):
    raise Skip("LitGPT 'Preparing Datasets' Falcon-7B runs: the micro-batch size, the LoRA settings, the GPU and the length "
               "of the longest untruncated Alpaca sample in Falcon's tokenizer are not stated; with length, batch and "
               "adapters all open, a configuration would be a guess")


@rule("litgpt-issue1262-")
def litgpt_issue1262(rec):
    raise Skip("LitGPT issue #1262 (Llama 2 70B nf4-dq on one A100 80GB, batch 1, OOM): sequence length, LoRA settings, "
               "optimizer and checkpointing are not given, and whether 70B QLoRA fits 80 GB depends on exactly those")


@rule("axolotl-issue1522-")
def axolotl(rec):
    c = Case(rec, "qlora", "Llama-2-70B QLoRA r32 all-linear, 2x RTX 3090 FSDP, bs 1, seq 512, AC, flash")
    c.model("llama-2-70b")
    c.t("framework", "hf", "axolotl runs transformers + PEFT under HF Trainer (FSDP-QLoRA)")
    c.t("micro_batch_size", 1, "micro_batch_size: 1")
    c.t("grad_accum_steps", 4, "gradient_accumulation_steps: 4")
    c.t("seq_len", 512, "sequence_len 512 with pad_to_sequence_len true: every sequence is 512 tokens")
    c.t("optimizer", "paged_adamw_8bit", "optimizer: paged_adamw_8bit")
    c.t("optimizer_impl", "fused", "bitsandbytes' 8-bit paged AdamW updates in place")
    c.t("checkpointing", "full", "gradient_checkpointing: true")
    c.t("checkpoint_impl", "reentrant", "axolotl passes gradient_checkpointing_kwargs use_reentrant True unless the config "
        "sets them (axolotl PR #1167, Jan 2024, 'improve vram use w gradient checkpointing'); the config shown sets none")
    c.t("attention", "flash", "flash_attention: true")
    c.t("dropout", 0.0, "Llama-2 config")
    c.t("loss", "eager", "transformers' cross-entropy")
    c.t("precision", "bf16_autocast", "bf16: auto on a 4-bit base (bnb_4bit_quant_storage bf16 for FSDP): bf16 non-quantized "
        "weights under autocast")
    c.ft("method", "lora", "adapter: qlora")
    c.ft("lora_rank", 32, "lora_r: 32")
    c.ft("lora_targets", ["q", "k", "v", "o", "gate", "up", "down"], "lora_target_linear: true")
    c.ft("lora_dropout", 0.05, "lora_dropout: 0.05")
    c.ft("base_bits", 4, "load_in_4bit: true")
    c.ft("quant_type", "nf4", "axolotl's 4-bit default nf4")
    c.ft("double_quant", True, "axolotl's bnb_4bit_use_double_quant default true")
    c.ft("bnb_keeps_input", True, f"axolotl of April 2024 pinned bitsandbytes 0.43.0: {BNB_KEEPS_INPUT}")
    c.gpu("rtx-3090-24gb", "'2*RTX3090 (24G per card)'")
    parallel_defaults(c, 2, 3, "2 GPUs", "fsdp: full_shard auto_wrap")
    c.line("fsdp_offload_params: the fsdp_config is cut off in the stored excerpt; no offload assumed")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.oom("the issue title and thread: OOM with these settings (the stage - loading or training - is not shown)")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- DeepSpeed gist (LLaMA-7B on 8x A800)

@rule("dsgist-")
def ds_gist(rec):
    rid = rec["id"]
    s = rec["setup"]
    zero = s["zero_stage"]
    ckpt = "-ckpt-" in rid
    offopt = "offopt" in rid
    offparam = "offparam" in rid
    zeropp = "zeropp" in rid
    mbs = s["micro_batch_size"]
    ga = int(str(s["grad_accum_steps"]).split()[0])
    c = Case(rec, "full", f"LLaMA-7B full, 8x A800 ZeRO-{zero}{' +opt offload' if offopt else ''}"
             f"{' +param offload' if offparam else ''}{' ZeRO++' if zeropp else ''}, bs {mbs} x ga {ga}, seq 4096, "
             f"{'AC' if ckpt else 'no AC'}").model("llama1-7b")
    c.t("framework", "deepspeed", "the gist's own training code: a transformers LLaMA under the DeepSpeed engine")
    c.t("micro_batch_size", mbs, "'BS' column: batch size per device per iteration")
    c.t("grad_accum_steps", ga, "global batch / (micro-batch x 8 GPUs)")
    c.t("seq_len", 4096, "'sequence length 4096'")
    c.t("optimizer", "adamw", "not stated: DeepSpeed's AdamW presumed")
    c.t("optimizer_impl", "fused", "DeepSpeed's FusedAdam (DeepSpeedCPUAdam when offloaded): in place")
    c.t("checkpointing", "full" if ckpt else "none", "'Ckpt.' column (HF gradient checkpointing)")
    c.t("attention", "sdpa", "not stated: transformers' default sdpa with PyTorch 2.2")
    c.t("dropout", 0.0, "LLaMA config")
    c.t("loss", "eager", "transformers' cross-entropy")
    c.t("precision", "bf16_master", "not stated: DeepSpeed bf16 (bf16 weights, fp32 master and AdamW states) presumed on A800")
    c.ft("method", "full", "full training")
    c.gpu("a800-80gb", "'A800 x 8': the A100 80GB with reduced NVLink")
    parallel_defaults(c, 8, zero, "8 GPUs", f"ZeRO stage {zero}")
    c.p("offload_optimizer", offopt, "'Optim. Off.' column")
    c.p("offload_params", offparam, "'Param. Off.' column")
    if offopt:
        c.note("with offload_optimizer DeepSpeed keeps the gradient partitions, fp32 master weights and AdamW states in "
               "host memory (memfit moves the gradients too; ZeRO-2 keeps one largest-parameter buffer on the GPU)")
    if offparam:
        c.note("with offload_param the GPU holds only the parameters being gathered (stage3_max_live_parameters, the "
               "prefetch bucket) besides the activations")
    if offparam or (mbs == 8 and ga == 2):
        # Research (the gist's own table): the rows' x/y do not belong to the batch their 'BS' column states.
        c.flag("low_confidence")
        implied = 2 if offparam else 16
        c.note(f"the gist's own numbers disagree with its 'BS' column for this row: they fall on the line of the other "
               f"rows at micro-batch {implied} ("
               + ("the offopt-bs2 row minus the 1.57 GiB bf16 parameter partition that param offload moves: 7.83 / 2.23 "
                  "against 7.9 / 2.2; at micro-batch 4 the checkpoints and the fp32 loss alone would exceed 9.8 GiB"
                  if offparam else "the ZeRO-3 rows extrapolated to micro-batch 16 give 64.0 / 21.6 GiB against 63.9 / "
                  "21.4, while two accumulation steps at one micro-batch add nothing")
               + "); the stated batch is kept")
        c.whatif(f"micro-batch {implied}, as the gist's own numbers imply", training__micro_batch_size=implied)
    if zero == 2 and ga == 8 and not offopt:
        c.note("with eight accumulation steps the log line may come before the first optimizer step (DeepSpeed creates "
               "Adam's states lazily, at the first step): the row's x (19.4 GiB) is below the states, master weights "
               "and gradients that a step leaves allocated")
    if zeropp:
        c.p("zero_quantized_weights", True, "'ZeRO++' column, its components unstated: DeepSpeed's ZeRO++ tutorial "
            "turns on zero_quantized_weights, zero_hpz_partition_size (GPUs per node) and zero_quantized_gradients")
        c.p("zero_hpz_partition_size", 8, "the tutorial's GPUs per node, all 8 here; with offload_param the secondary "
            "partition lives on the host (partition_parameters.py: ds_secondary_tensor on the remote device)")
        c.p("zero_quantized_gradients", True, "the tutorial's third ZeRO++ switch (qgZ: gradients reduced through "
            "int4 codes in two all-to-alls)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("peak_allocated_bytes", "GiB", "'GPU Mem. x/y': the gist's footnote 7, 'GPU Mem. represents "
              "torch.cuda.memory_allocated()/torch.cuda.max_memory_allocated()': y is the allocated peak, in bytes / 2**30",
              note="the record left the counter unknown (its copy of the footnote was unreadable); the gist's footnote 7 "
                   "names it: torch.cuda.max_memory_allocated()")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- other issue threads

@rule("megatron-issue606-")
def megatron606(rec):
    c = Case(rec, "full", "Llama-2-7B full, Megatron-LM TP1 PP1 DP8 on 8x A100-40G, bs 1, seq 64").model("llama-2-7b")
    c.t("framework", "megatron", "Megatron-LM pretrain_gpt.py (local transformer implementation)")
    c.t("micro_batch_size", 1, "MICRO_BATCH_SIZE=1")
    c.t("grad_accum_steps", 1, "GLOBAL_BATCH_SIZE=8 over 8 data-parallel ranks")
    c.t("seq_len", 64, "SEQ_LENGTH=64")
    c.t("optimizer", "adamw", "Megatron's default adam (Apex FusedAdam, decoupled weight decay)")
    c.t("optimizer_impl", "fused", "Apex/TE FusedAdam")
    c.t("checkpointing", "none", "recompute flags not visible; Megatron's default is none")
    c.t("attention", "flash", "not visible; irrelevant at 64 tokens")
    c.t("dropout", 0.0, "not visible; taken as 0 (fine-tuning scripts for Llama set --attention-dropout 0 --hidden-dropout 0)")
    c.t("loss", "eager", "Megatron's vocab-parallel cross-entropy")
    c.t("precision", "bf16_master", "precision flags cut off in the excerpt: --bf16 assumed (bf16 weights, fp32 main "
        "gradients, fp32 master weights and Adam states: 18 B/parameter; the fp32 default would need 16 B/parameter and "
        "overflow 40 GB just the same)")
    c.ft("method", "full", "full fine-tuning")
    c.gpu("a100-40gb", "'A100 40G'")
    parallel_defaults(c, 8, 0, "GPUS_PER_NODE=8, TP=1, PP=1: 8-way data parallel", "--use-distributed-optimizer not "
                      "visible: each rank holds the full optimizer state")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.oom("the issue reports CUDA OOM with this script")
    training_defaults(c)
    return low_conf(c).done()


@rule("moddednanogpt-issue12-")
def modded_nanogpt(rec):
    c = Case(rec, "full", "modded-nanogpt GPT-2 124M (RoPE, ReLU^2, RMSNorm), 8x L40S DDP, bs 64, T 1024, Muon, compile")
    c.model("gpt2", {"position_embedding": "rotary", "norm": "rmsnorm", "norm_bias": False, "attention_bias": False,
                     "mlp_bias": False, "residual_dropout": False, "vocab_size": 50304},
            "; modded-nanogpt train_gpt2.py @e5b254f: 12 layers, 768 wide, 12 heads, RoPE instead of learned positions, "
            "ReLU^2 MLP (4x), parameter-free RMSNorm (memfit counts a small norm weight), no biases, vocab 50304, tied head")
    c.t("framework", "nanogpt", "modded-nanogpt's train_gpt2.py (a nanoGPT descendant, DDP)")
    c.t("micro_batch_size", 64, "device_batch_size 64 (default)")
    c.t("grad_accum_steps", 1, "batch 8 x 64 over 8 devices")
    c.t("seq_len", 1024, "sequence_length 1024")
    c.t("optimizer", "muon", "Muon on the transformer blocks' matrices, AdamW on lm_head / the tied embedding")
    c.t("optimizer_impl", "fused", "the AdamW part is torch's fused AdamW")
    c.t("checkpointing", "none", "none")
    c.t("attention", "flash", "F.scaled_dot_product_attention(is_causal=True)")
    c.t("dropout", 0.0, "no dropout")
    c.t("loss", "eager", "F.cross_entropy over the full logits")
    c.t("logits_dtype", "fp32", "the code upcasts the logits (logits.float()) before the loss")
    c.t("loop_keeps_logits", "no", "the training loop calls model(x, y, return_logits=False)")
    c.t("precision", "bf16_mixed", "torch.autocast(bfloat16) over fp32 parameters")
    c.ft("method", "full", "pre-training")
    c.gpu("l40s-48gb", "'8 L4OS (GPU 45GB in RAM)': L40S")
    parallel_defaults(c, 8, 0, "8 GPUs", "DDP")
    c.t("compile", "yes", "torch.compile(model)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.oom("OOM at the default device batch 64; batch 32 fits")
    training_defaults(c)
    return low_conf(c).done()


@rule("torchtune-issue987-")
def torchtune987(rec):
    raise Skip("torchtune issue #987 (~51 GB for Llama2 70B full fine-tuning on 8x A100 80GB): the attached config (batch, "
               "length, checkpointing) is not in the stored excerpt and the figure is approximate ('~')")


@rule("torchtune-pr389-")
def torchtune389(rec):
    raise Skip("torchtune PR #389 (~54 GB, full bf16 Llama2 7B with foreach off): batch size, sequence length and "
               "checkpointing of the prototype recipe are in screenshots that are not stored, and the figure is approximate")


# ============================================================================= papers and their repositories

# ----------------------------------------------------------------------------- LOMO (Lv et al., ACL 2024), Table 2 and prose

@rule("lomo-")
def lomo(rec):
    rid = rec["id"]
    s = rec["setup"]
    size = rid.split("-")[2].replace("llama", "")
    opt = "lomo" if "-lomo-" in rid else ("sgd" if "-sgd-" in rid else "adamw")
    gpus = s["num_gpus"]
    is_oom = rec["measured"]["quantity"] == "oom"
    c = Case(rec, "full", f"LLaMA-{size.upper()} full, {opt.upper()}, {gpus}x RTX 3090"
             f"{' ZeRO-3' if gpus > 1 or opt != 'lomo' else ''}, bs 1, seq 1024, AC").model(f"llama1-{size}")
    c.t("framework", "deepspeed", "the LOMO repository's trainers: a transformers LLaMA with DeepSpeed ZeRO-3 partitioning "
        "(LOMO's own update in backward hooks; the AdamW/SGD baselines through the DeepSpeed engine)")
    c.t("micro_batch_size", 1, "Table 2: 'batch size ... set to ... 1'")
    c.t("grad_accum_steps", 1, "none in the throughput test")
    c.t("seq_len", 1024, "Table 2: 'The sequence length ... set to 1024'")
    if opt == "lomo":
        c.t("optimizer", "lomo", "LOMO: the SGD update fused into backward (each gradient applied and freed as it is "
            "produced), no optimizer state")
        c.t("optimizer_impl", "fused", "LOMO updates each parameter in place inside its gradient hook")
        c.t("precision", "bf16", "LOMO keeps fp16 weights only (no fp32 master, dynamic loss scaling); memfit's pure 16-bit "
            "recipe 'bf16' has the same bytes")
    else:
        c.t("optimizer", opt, "torch AdamW" if opt == "adamw" else "plain SGD (no momentum), the paper's baseline")
        c.t("optimizer_impl", "fused" if opt == "adamw" else "for_loop",
            "DeepSpeed's FusedAdam on the fp32 partitions" if opt == "adamw" else "DeepSpeed steps torch SGD on its fp32 "
            "partitions (one tensor at a time: DeepSpeed flattens the partition)")
        c.t("precision", "fp16_master", "DeepSpeed fp16 (ds_config.json): fp16 weights, fp32 master copy and states")
    c.t("checkpointing", "full", "not stated in the table; the repository's args_lomo.yaml sets gradient_checkpointing: true")
    c.t("attention", "eager", "transformers' LlamaAttention of 2023 (matmul + fp32 softmax)")
    c.t("dropout", 0.0, "LLaMA config")
    c.t("loss", "eager", "LlamaForCausalLM's cross-entropy over fp32-upcast logits")
    c.ft("method", "full", "full-parameter fine-tuning")
    c.gpu("rtx-3090-24gb", "'a server with 8 RTX 3090 GPUs'")
    if gpus > 1 or opt != "lomo":
        parallel_defaults(c, gpus, 3, f"{gpus} GPUs (Table 2 / Section 4.2)", "DeepSpeed ZeRO-3 parameter partitioning "
                          "(stated: 'parameter partitioning with ZeRO-3')")
        c.p("zero_sub_group_size", 100_000_000, "config/ds_config.json: sub_group_size 1e8 (the step makes the fp32 "
            "gradients of 1e8 elements at a time)")
        c.p("zero3_max_reuse_distance", 100_000_000, "config/ds_config.json: stage3_max_reuse_distance 1e8")
        if opt != "lomo":
            c.p("reduce_bucket_elements", 500_000_000, "config/ds_config.json sets no reduce_bucket_size: DeepSpeed's "
                "default 5e8 (runtime/zero/config.py), ZeRO-3's contiguous gradient bucket")
    else:
        parallel_defaults(c, 1, 0, "1x RTX 3090 (Table 2)", "one GPU: nothing to partition")
    c.t("optimizer_in_backward", opt == "lomo", "LOMO applies the update inside backward" if opt == "lomo" else "not used")
    c.t("activation_offload", False, "not used")
    if is_oom:
        c.oom("stated in the paper's prose for the Table 2 setting (seq 1024, batch 1, 8x RTX 3090, ZeRO-3)")
    else:
        c.measure("peak_allocated_bytes", "GB", "'Memory represents the peak memory allocated per GPU' "
                  "(torch.cuda.max_memory_allocated) -> peak_allocated_bytes; 'GB' as written, taken as 1e9 bytes (GiB "
                  "would be 7.4 % more; the conversion is not shown)")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- GaLore, Q-GaLore, APOLLO (GaLore's pre-training code)

GALORE_COUNTER = ("the counter is not stated and the GaLore-derived training script (torchrun_main.py) logs no GPU memory "
                  "itself; its runs log to wandb, whose system metrics read NVML's device memory in use (what nvidia-smi "
                  "shows) -> device_total_bytes; the 'G' read as GiB (NVML bytes / 1024**3)")
GALORE_COUNTER_NOTE = "unknown counter: taken as the device total (wandb/NVML or nvidia-smi); the script logs no counter"


def galore_common(c, mbs, ckpt, why_ckpt):
    c.t("framework", "hf", "GaLore's torchrun_main.py: transformers LlamaForCausalLM in a plain PyTorch loop, single GPU")
    c.t("micro_batch_size", mbs, "--batch_size")
    c.t("grad_accum_steps", 1, "--total_batch_size 512 / --batch_size asks for accumulation, but the per-layer runs "
        "update each parameter in its backward hook every micro-batch (torchrun_main.py: optimizer_hook steps and "
        "zeroes the gradient), so nothing accumulates on the GPU")
    c.t("seq_len", 256, "--max_length default 256 with padding='max_length' (C4, T5 tokenizer): every sequence is 256 tokens")
    c.t("checkpointing", "full" if ckpt else "none", why_ckpt)
    c.t("attention", "flash", "GaLore's peft_pretraining/modeling_llama.py calls F.scaled_dot_product_attention(..., "
        "is_causal=True) without a mask (flash kernel for bf16)")
    c.t("dropout", 0.0, "LLaMA config")
    c.t("loss", "eager", "cross-entropy over the full logits")
    c.t("loop_keeps_logits", "no", "the loop keeps only model(**batch, labels=labels).loss")
    c.t("precision", "bf16", "--dtype bfloat16: the model is cast wholesale to bf16, no fp32 master copy")
    c.ft("method", "full", "pre-training from scratch")
    c.t("activation_offload", False, "not used")
    return c


@rule("galore-")
def galore(rec):
    rid = rec["id"]
    s = rec["setup"]
    if rid.startswith("galore-s55"):
        mbs, ckpt = 1, False
        c = Case(rec, "full", "LLaMA-7B pre-training, 8-bit GaLore r1024 per-layer, 1 GPU, token batch 256 (bs 1 x 256), "
                 "no AC").model("galore-llama-7b")
        galore_common(c, 1, False, "'without activation checkpointing'")
        c.assumptions = [a if not a.startswith("micro_batch_size") else
                         "micro_batch_size 1: 'a token batch size of 256' = batch 1 x 256 tokens, the code's --max_length "
                         "default (the figure gives no split)" for a in c.assumptions]
        c.gpu("rtx-4090-24gb", "Fig. 4 is titled 'RTX 4090 Memory Comparison' (the paper's runs are otherwise on A100s)")
    else:
        mbs = s["micro_batch_size"]
        ckpt = "-ac" in rid
        c = Case(rec, "full", f"LLaMA-7B pre-training, 8-bit GaLore r1024 per-layer, 1 GPU, bs {mbs}, seq 256, "
                 f"{'AC' if ckpt else 'no AC'}").model("galore-llama-7b")
        galore_common(c, mbs, ckpt, "--activation_checkpointing" if ckpt else "no --activation_checkpointing")
        if ckpt:
            c.gpu("rtx-4090-24gb", "README: 'With activation checkpointing, you can maintain a batch size of 16 tested on "
                  "NVIDIA RTX 4090'")
        else:
            c.gpu("rtx-4090-24gb", "not stated for this script; the README's single-GPU claim names an RTX 4090 (the card "
                  "only sets the context allowance and the verdict)")
    c.t("optimizer", "galore_adamw_8bit", "galore_adamw8bit_per_layer: GaLore projection over bitsandbytes 8-bit Adam")
    c.t("optimizer_impl", "fused", "bitsandbytes' 8-bit Adam updates in place")
    c.t("galore_rank", 1024, "--rank 1024")
    c.t("galore_update_interval", 500, "--update_proj_gap 500")
    c.t("optimizer_in_backward", True, "'_per_layer': each layer is updated inside backward hooks, so full weight gradients "
        "are never all held")
    parallel_defaults(c, 1, 0, "--single_gpu", "no sharding")
    c.measure("device_total_bytes", "GiB", GALORE_COUNTER, note=GALORE_COUNTER_NOTE)
    training_defaults(c)
    return low_conf(c).done()


@rule("qgalore-")
def qgalore(rec):
    rid = rec["id"]
    s = rec["setup"]
    mbs = s["micro_batch_size"]
    ckpt = rid.endswith("-ac")
    q = "-qgalore-" in rid
    c = Case(rec, "full", f"LLaMA-7B pre-training, {'Q-GaLore (INT8 weights, INT4 projections)' if q else '8-bit GaLore'} "
             f"r1024 per-layer, 1 GPU, bs {mbs}, seq 256, {'AC' if ckpt else 'no AC'}").model("galore-llama-7b")
    galore_common(c, mbs, ckpt, "--activation_checkpointing" if ckpt else "no --activation_checkpointing")
    c.t("optimizer", "galore_adamw_8bit", "q_galore_adamw8bit_per_layer (GaLore over 8-bit Adam)" if q else
        "galore_adamw8bit_per_layer")
    c.t("optimizer_impl", "fused", "8-bit Adam updates in place")
    c.t("galore_rank", 1024, "--rank 1024")
    c.t("galore_update_interval", 500, "--update_proj_gap 500")
    c.t("optimizer_in_backward", True, "'_per_layer': updates inside backward hooks")
    if q:
        c.t("weight_quant", "int8", "--weight_quant --stochastic_round: QGaLoreLinear keeps the q/k/v/o/gate/up/down weights "
            "as uint8 codes with a scale and zero per group, re-quantized with stochastic rounding in each update")
        c.t("weight_quant_group_size", 256, "--weight_group_size default 256 (run_pretrain.py)")
        c.t("galore_proj_quant", True, "--proj_quant (--proj_bits 4, --proj_group_size 256 defaults): the projections as "
            "one-byte codes")
    c.gpu("rtx-a6000-48gb", "README: 'tested on a single A6000' (stated for the batch-16 checkpointed run, taken for all)")
    parallel_defaults(c, 1, 0, "single GPU", "no sharding")
    c.measure("device_total_bytes", "GiB", GALORE_COUNTER, note=GALORE_COUNTER_NOTE)
    training_defaults(c)
    return low_conf(c).done()


@rule("apollo-")
def apollo(rec):
    rid = rec["id"]
    if rid.startswith("apollo-fig2"):
        c = Case(rec, "full", "LLaMA-7B pre-training, AdamW, 8x A100-80GB DDP, bs 8, seq 256, no AC").model("galore-llama-7b")
        c.t("framework", "hf", "APOLLO's GaLore-derived pre-training code (transformers LLaMA, torchrun DDP)")
        c.t("micro_batch_size", 8, "'BS=8 OOM' in Figure 2 (per-GPU batch)")
        c.t("grad_accum_steps", 1, "not relevant to the peak")
        c.t("seq_len", 256, "not stated in the figure: the GaLore-derived C4 setup's --max_length 256")
        c.t("optimizer", "adamw", "AdamW (torch)")
        c.t("optimizer_impl", "foreach", "torch's default")
        c.t("checkpointing", "none", "the 7B multi-GPU script has no --activation_checkpointing")
        c.t("attention", "flash", "the GaLore-derived modeling_llama.py calls F.scaled_dot_product_attention(is_causal=True)")
        c.t("dropout", 0.0, "LLaMA config")
        c.t("loss", "eager", "cross-entropy over the full logits")
        c.t("precision", "bf16", "--dtype bfloat16: the model cast to bf16, no master copy")
        c.ft("method", "full", "pre-training from scratch")
        c.gpu("a100-80gb", "'8 A100-80GB GPUs' (caption)")
        parallel_defaults(c, 8, 0, "8 GPUs", "data parallel (DDP), no sharding")
        c.t("optimizer_in_backward", False, "not used")
        c.t("activation_offload", False, "not used")
        c.oom("Figure 2 marks AdamW at per-GPU batch 8 'OOM' (batch 4 runs)")
        training_defaults(c)
        return low_conf(c).done()
    c = Case(rec, "full", "LLaMA-7B pre-training, Q-APOLLO-Mini (rank 1, INT8 weights) per-layer, 1x A100, bs 1, "
             "seq 256").model("galore-llama-7b")
    galore_common(c, 1, False, "no --activation_checkpointing in the script")
    c.assumptions = [a if not a.startswith("grad_accum_steps") else
                     "grad_accum_steps 1: the script's accumulation is not stated; it does not change the peak of a "
                     "per-layer update" for a in c.assumptions]
    c.cfg["training"]["grad_accum_steps"] = 1
    c.t("optimizer", "apollo", "--optimizer q_apollo_per_layer: APOLLO-Mini, Adam moments in a rank-1 random projection "
        "with tensor-wise scaling (--scale_type tensor, --proj random)")
    c.t("optimizer_impl", "fused", "per-layer update in backward hooks")
    c.t("galore_rank", 1, "--rank 1 (APOLLO-Mini)")
    c.t("galore_update_interval", 200, "--update_proj_gap 200")
    c.t("optimizer_in_backward", True, "q_apollo_per_layer: updates inside backward hooks")
    c.t("weight_quant", "int8", "--weight_quant --stochastic_round: INT8 weights with a scale and zero per group (APOLLO's "
        "prepare_model_for_int8_training_apollo, derived from Q-GaLore's)")
    c.t("weight_quant_group_size", 128, "--weight_group_size 128")
    c.line("seq_len 256 is not stated in the script; main_pretrain.py's --max_length default (256, inherited from GaLore) is taken")
    c.flag("seq_from_default")
    c.gpu("a100-80gb", "README: 'tested on a single A100 GPU', size not stated (the card only sets the verdict)")
    parallel_defaults(c, 1, 0, "single GPU", "no sharding")
    c.measure("device_total_bytes", "GiB", "the script header says '12GB' (the README 'within 11GB'); " + GALORE_COUNTER,
              note=GALORE_COUNTER_NOTE)
    training_defaults(c)
    return low_conf(c).done()


@rule("badam-")
def badam(rec):
    rid = rec["id"]
    llama3 = "llama3" in rid
    name = "Llama-3-8B" if llama3 else "Llama-2-7B"
    c = Case(rec, "full", f"{name} BAdam (one of 32 layers trained at a time), 1x RTX 3090, bs 2 x ga 8, <= 1024 tokens "
             "(padded), AC, eager").model("llama-3-8b" if llama3 else "llama-2-7b")
    c.t("framework", "hf", "the README's llama-alpaca code (an early LLaMA-Factory, src/train_bash.py --finetuning_type "
        "block): transformers 4.35.2 (requirements.txt) under HF Seq2SeqTrainer, no DeepSpeed on one GPU")
    c.t("micro_batch_size", 2, "--per_device_train_batch_size 2 (the README's sample command)")
    c.t("grad_accum_steps", 8, "--gradient_accumulation_steps 8")
    c.t("seq_len", 1024, "alpaca_gpt4_en, each sample cut to max_source_length 512 + max_target_length 512 "
        "(llmtuner/hparams/data_args.py defaults, dsets/preprocess.py) and padded per batch by DataCollatorForSeq2Seq: "
        "1024 is the cap, the longest batch's length is not stated")
    c.flag("padded_seq_cap")
    c.t("checkpointing", "full", "Seq2SeqPeftTrainer.__init__ (tuner/sft/trainer.py) calls its own "
        "gradient_checkpointing_enable on the model: every decoder layer through torch.utils.checkpoint")
    c.t("checkpoint_impl", "reentrant", "that function passes no use_reentrant to torch.utils.checkpoint, whose default "
        "was reentrant (torch >= 2.1)")
    c.t("attention", "eager", "transformers 4.35.2's LlamaAttention has no sdpa path; no flash-attention flag in the command")
    c.t("dropout", 0.0, "Llama config")
    c.t("loss", "eager", "LlamaForCausalLM's cross-entropy over the full logits")
    c.t("logits_dtype", "fp32", "prepare_model_for_training (extras/misc.py) wraps lm_head in CastOutputToFloat for every "
        "finetuning_type but full, so the head's bf16 output is cast to fp32 before the loss")
    c.t("loss_shift_copy", "yes", "transformers 4.35's LlamaForCausalLM shifts the logits with a copy (shift_logits = "
        "logits[..., :-1, :].contiguous())")
    c.t("optimizer", "adamw", "not stated in the command: HF Trainer's default adamw_torch, wrapped by BlockOptimizer")
    c.t("optimizer_impl", "foreach", "torch's AdamW default for CUDA tensors")
    c.t("precision", "bf16_master", "sft/workflow.py casts the whole model to bf16 (model.to(torch.bfloat16)); "
        "BlockOptimizer (tuner/sft/block_optim.py update_trainable_params) keeps an fp32 copy of the active layer, "
        "turns its gradients into fp32 at the step (_grad_to_hp) and runs AdamW on the copy; --bf16 True adds no "
        "autocast to a bf16 model. memfit's bf16_master counts the active layer's gradients in fp32 throughout (bf16 "
        "during backward in BAdam: about 0.4 GB more in memfit's backward)")
    c.ft("method", "full", "finetuning_type block: full-parameter BAdam")
    c.ft("trainable_layers", 1, "block_prefix_list 'llama-7b': one decoder layer per block (32 blocks), embedding and "
         "lm_head never trained")
    c.ft("lowest_trainable_layer", 0, "--switch_mode random visits every layer; the run's peak is when layer 0 is "
         "active and backward runs through every layer")
    c.ft("train_embeddings", False, "not in any block")
    c.ft("train_head", False, "not in any block")
    c.gpu("rtx-3090-24gb", "'a single RTX3090'")
    parallel_defaults(c, 1, 0, "a single GPU", "no sharding")
    c.t("optimizer_in_backward", False, "BlockOptimizer.step runs after backward")
    c.t("activation_offload", False, "not used")
    c.measure("device_total_bytes", "GiB", "'Actual Memory Cost', the counter not named; the training code logs "
              "timings, not memory, so the figure was read outside the process (nvidia-smi, MiB / 1024 as GB) -> "
              "device_total_bytes, GiB",
              note="unknown counter: taken as nvidia-smi")
    c.line("the evaluation every 20 steps (--val_size 500, --per_device_eval_batch_size 2) runs forward only and needs "
           "less than a training step")
    training_defaults(c)
    return low_conf(c).done()


@rule("accelerate-fsdp2-bench-")
def accelerate_fsdp2_bench(rec):
    c = Case(rec, "full", "Qwen2.5-1.5B full, 8x H100, accelerate FSDP2 (bf16 mixed precision), bs 2, packed 128, "
             "no AC").model("qwen2.5-1.5b")
    c.t("framework", "hf", "benchmarks/fsdp2/utils.py: AutoModelForCausalLM.from_config in a plain loop prepared by "
        "accelerate (transformers' model code; no Trainer)")
    c.t("micro_batch_size", 2, "--batch_size default 2 (utils.py parse_args)")
    c.t("seq_len", 128, "--block_size default 128: tiny_shakespeare tokenized and grouped into 128-token blocks "
        "(group_texts), so every sequence is 128 tokens")
    c.t("grad_accum_steps", 1, "one backward per optimizer step (main.py train)")
    c.t("checkpointing", "none", "no activation checkpointing in the plugin or the loop")
    c.t("attention", "sdpa", "transformers' default attn_implementation for a model built from its config (Mar 2025)")
    c.t("dropout", 0.0, "Qwen2 attention_dropout 0.0")
    c.t("loss", "eager", "the model's own loss (labels from DataCollatorForLanguageModeling)")
    c.t("use_cache", "no", "model(**batch, use_cache=False)")
    c.t("optimizer", "adamw", "torch.optim.AdamW(model.parameters(), lr=3e-5)")
    c.t("optimizer_impl", "foreach", "AdamW with neither foreach nor fused: torch's foreach default on CUDA")
    c.t("precision", "bf16_fsdp", "the model built in fp32 (get_model: torch_dtype float32) and Accelerator("
        "mixed_precision='bf16'): FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=bf16, output_dtype=bf16) "
        "over fp32 shards, and torch.autocast")
    c.gpu("h100-sxm-80gb", "'results from running the benchmark on 8x H100 GPUs' (form factor not stated)")
    c.p("num_gpus", 8, "8x H100")
    c.p("zero_stage", 3, "FSDP2 fully_shard on each Qwen2DecoderLayer and the root, reshard_after_forward default True")
    c.p("fsdp_version", "2", "FullyShardedDataParallelPlugin(fsdp_version=2) (utils.py prepare_accelerate)")
    c.measure("peak_reserved_bytes", "MiB", "measure_utils.py MemoryTracker polls torch.cuda.memory_reserved() / (1024 * "
              "1024) every 10 ms on rank 0; the reserve never falls, so the plot's plateau (7,048 MiB, read between its "
              "6000 and 8000 gridlines to half a pixel, 16 MiB) is the run's peak -> peak_reserved_bytes")
    c.flag("screenshot_value")
    c.note("accelerate of March 2025 wrapped the decoder layers and the root (embedding, final norm and the tied head "
           "kept gathered through the step); the embedding / tail units came with accelerate 1.14 and would not apply "
           "to a tied head anyway")
    c.note("the same page's allocated plot polls memory_allocated every 10 ms: its top (about 4,430 MiB) is a lower "
           "bound of the allocated peak, whose short high points the poll misses, so it is not scored")
    training_defaults(c)
    return low_conf(c).done()


@rule("lora-s42-")
def lora_paper(rec):
    raise Skip("LoRA paper, GPT-3 175B totals (1.2 TB / 350 GB): OpenAI-internal runs whose GPU count, batch, sequence "
               "length, precision and parallelism are not stated")


@rule("hift-")
def hift(rec):
    raise Skip("HiFT README table: GPU model and count, batch size, sequence length and checkpointing are not stated (the "
               "full fine-tuning totals of 142-146 GB exceed any single GPU), and HiFT's one-group-at-a-time training has no "
               "memfit setting")


# ----------------------------------------------------------------------------- MeZO (Malladi et al., NeurIPS 2023), Table 22 / Figure 4

MEZO_SIZES = {"1p3b": "opt-1.3b", "2p7b": "opt-2.7b", "6p7b": "opt-6.7b", "13b": "opt-13b", "30b": "opt-30b",
              "66b": "opt-66b"}


@rule("mezo-")
def mezo(rec):
    rid = rec["id"]
    s = rec["setup"]
    parts = rid.split("-")
    size = parts[2].replace("opt", "")
    method = parts[3]
    if method == "mezo":
        return mezo_zeroth_order(rec, size)
    gpus = s["num_gpus"]
    is_oom = rec["measured"]["quantity"] == "oom"
    prefix = method == "prefixft"
    c = Case(rec, "peft" if prefix else "full", f"OPT-{size.upper().replace('P', '.')} {'prefix-tuning (5 tokens)' if prefix else 'full FT'}, "
             f"{gpus}x A100-80GB{' FSDP' if gpus > 1 else ''}, fp16 AMP, bs 1 (2 candidate sequences), ~400 tokens")
    c.model(MEZO_SIZES[size])
    c.t("framework", "hf", "MeZO's large_models/run.py: transformers OPTForCausalLM under HF Trainer")
    c.t("micro_batch_size", 2, "per-device batch size 1 (Appendix E.7), but MultiRC is trained with --train_as_classification: "
        "each example is scored against its 2 candidate answers, i.e. 2 sequences per step")
    c.t("grad_accum_steps", 1, "none")
    c.t("seq_len", 400, "MultiRC's average length ('average #tokens = 400', Section 3.4); batches are padded dynamically, "
        "so the peak step is longer than the average")
    c.flag("seq_from_average")
    c.t("optimizer", "adamw", "the Trainer's default AdamW (transformers of 2023: adamw_hf / adamw_torch)")
    c.t("optimizer_impl", "for_loop", "transformers' adamw_hf loops over parameters (the Trainer default before v4.32); "
        "under FSDP the optimizer steps the flat shards")
    c.t("checkpointing", "none", "'We did not turn on any advance memory-saving options, e.g., gradient checkpointing'")
    c.t("attention", "eager", "transformers' OPTAttention of 2023 (eager bmm + softmax)")
    c.t("dropout", 0.1, "OPT config dropout 0.1 (residual and embedding; attention_dropout 0.0, which memfit's single "
        "probability does not separate)")
    c.t("loss", "eager", "the cross-entropy over the candidate tokens' full logits")
    c.t("precision", "fp16_mixed", "--fp16: HF Trainer AMP over fp32 weights (the fp32 weights, gradients and AdamW states "
        "of full FT; prefix tuning keeps the fp32 frozen base)")
    if prefix:
        c.t("lora_base_dtype", "fp32", "the frozen OPT base is loaded in fp32 (no --load_float16 for prefix tuning) and "
            "autocast to fp16")
        c.ft("method", "prefix_tuning", "MeZO's prefix tuning (--prefix_tuning): trainable key/value prefixes in every layer")
        c.ft("num_virtual_tokens", 5, "--num_prefix 5")
        c.ft("prefix_projection", False, "--no_reparam: the prefixes are trained directly, no MLP reparameterization")
    else:
        c.ft("method", "full", "full fine-tuning (FT)")
    c.gpu("a100-80gb", "'Nvidia A100 GPUs (80GB)' (Section 3.4)")
    if gpus == 1:
        parallel_defaults(c, 1, 0, "one GPU", "no sharding")
    else:
        parallel_defaults(c, gpus, 3, f"{gpus} GPUs", "'For multi-GPU backpropagation, we use fully sharded data parallel "
                          "(FSDP) provided by PyTorch' (full shard)")
        c.p("fsdp_limit_all_gathers", False, "large_models/README: tested on torch 2.1.0.dev20230514 and transformers "
            "4.28.1; FSDP1's limit_all_gathers defaulted to False until pytorch/pytorch#104900 (merged 2023-07-11), and "
            "finetune_fsdp.sh passes no --fsdp_config to turn it on")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    if gpus > 1 and not prefix:
        c.note("a build that counts fp16 autocast copies of every weight under FSDP overstates them: full shard gathers "
               "one wrapped layer at a time, so only that layer's fp16 copies exist (the planner branch fixes the ZeRO-3 "
               "case)")
    c.note("MultiRC is padded per batch; the peak step runs at the longest pair of candidate sequences, above the "
           "400-token average used here")
    if is_oom:
        c.oom("inferred from Figure 4's 'largest OPT model that fits': the next OPT size up did not run 100 steps without an "
              "out-of-memory error on this many A100s")
    else:
        div = gpus if rec["measured"].get("per_gpu") is False else None
        c.measure("device_total_bytes", "GiB", "'We use Nvidia's nvidia-smi command to monitor the GPU memory usage' and "
                  "report the peak -> device_total_bytes; the 'GB' are nvidia-smi's MiB divided by 1024, i.e. GiB"
                  + (f"; the table gives the total over {gpus} GPUs, divided by {gpus} because FSDP full shard puts the same "
                     "load on every GPU" if div else ""), divisor=div)
    training_defaults(c)
    return low_conf(c).done()


def mezo_zeroth_order(rec, size):
    """Table 22's 'Zero-shot / MeZO' column: MeZO's own runs (the zero-shot row's memory is the same forward)."""
    gpus = rec["setup"]["num_gpus"]
    c = Case(rec, "full", f"OPT-{size.upper().replace('P', '.')} MeZO (zeroth-order), {gpus}x A100-80GB"
             f"{' (device_map auto)' if gpus > 1 else ''}, fp16 weights, bs 1 (2 candidate sequences), ~400 tokens")
    c.model(MEZO_SIZES[size])
    c.t("framework", "hf", "MeZO's large_models/run.py: transformers OPTForCausalLM under its Trainer subclass (zo_step)")
    c.t("optimizer", "mezo", "--trainer zo: MeZO's zo_step, two forward passes under torch.no_grad with the weights "
        "perturbed in place by seeded Gaussian noise (zo_perturb_parameters) and an in-place update (zo_update): no "
        "gradients, no optimizer state, nothing saved")
    c.t("optimizer_impl", "fused", "the update is in place, one parameter at a time")
    c.t("micro_batch_size", 2, "per-device batch size 1, with --train_as_classification: each example is scored against "
        "its 2 candidate answers, i.e. 2 sequences per forward")
    c.t("grad_accum_steps", 1, "none")
    c.t("seq_len", 400, "MultiRC's average length ('average #tokens = 400', Section 3.4); batches are padded dynamically")
    c.flag("seq_from_average")
    c.t("checkpointing", "none", "nothing is saved for backward, so there is nothing to recompute")
    c.t("attention", "eager", "transformers' OPTAttention of 2023 (eager bmm + softmax)")
    c.t("dropout", 0.0, "zo_forward puts the model in eval mode: no dropout")
    c.t("loss", "eager", "the cross-entropy over the candidate tokens' full logits")
    c.t("precision", "bf16", "--load_float16: the weights are fp16 and there is no AMP; memfit's pure 16-bit recipe "
        "'bf16' has the same bytes")
    c.ft("method", "full", "zeroth-order full-parameter fine-tuning")
    c.gpu("a100-80gb", "'Nvidia A100 GPUs (80GB)' (Section 3.4)")
    if gpus == 1:
        parallel_defaults(c, 1, 0, "one GPU", "no sharding")
    else:
        parallel_defaults(c, gpus, 0, f"{gpus} GPUs: run.py loads the model with device_map='auto' across them",
                          "no sharding")
        c.p("pipeline", gpus, "device_map='auto' puts the layers on the GPUs in turn (accelerate balances them by "
            "memory; memfit splits them evenly)")
        c.p("pipeline_schedule", "sequential", "naive model parallelism: one batch passes the GPUs in turn")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    div = gpus if rec["measured"].get("per_gpu") is False else None
    c.measure("device_total_bytes", "GiB", "'We use Nvidia's nvidia-smi command to monitor the GPU memory usage' and report "
              "the peak -> device_total_bytes; the 'GB' are nvidia-smi's MiB divided by 1024, i.e. GiB"
              + (f"; the table gives the total over {gpus} GPUs, divided by {gpus} (device_map splits the layers evenly "
                 "enough)" if div else ""), divisor=div)
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- TorchTitan paper (ICLR 2025) Tables 1-4

@rule("ttpaper-")
def ttpaper(rec):
    rid = rec["id"]
    s = rec["setup"]
    gpus = s["num_gpus"]
    if "405b" in rid:
        model, mbs, ga, ckpt = "llama-3.1-405b", 2, 16, "full"
    elif "70b" in rid:
        model, mbs, ga, ckpt = "llama-3.1-70b", 16, 1, "full"
    else:
        model, mbs, ga, ckpt = "llama-3.1-8b", 2, 1, "selective_op"
    c = Case(rec, "full", f"{rec['model'].split('/')[-1].split(' ')[0]} pre-training, {gpus}x H100 95GiB, "
             f"{s['fsdp']}{', ' + s['other'] if s.get('other') else ''}").model(model)
    c.t("framework", "torchtitan", "TorchTitan (the paper's own runs)")
    if "405b" in rid:
        c.t("micro_batch_size", 2, "local batch 32 split into pipeline micro-batches; the count is not stated, torchtitan's "
            "default (pipeline_parallel_microbatches unset = one per stage, 16) gives micro-batches of 2")
        c.t("grad_accum_steps", 16, "the 16 pipeline micro-batches of one step")
    else:
        c.t("micro_batch_size", mbs, f"'Local batch size {mbs}'" + (" (per FSDP rank: one TP group of 8 GPUs processes "
            "16 sequences)" if "70b" in rid else ""))
        c.t("grad_accum_steps", 1, "none")
    c.t("seq_len", 8192, "not printed in Tables 1-4: the torchtitan Llama 3.1 tomls of the time default to seq_len 8192")
    c.flag("seq_from_default")
    c.t("optimizer", "adamw", "torchtitan's AdamW")
    c.t("optimizer_impl", "foreach", "torchtitan of 2024: --optimizer.fused defaulted to False, so foreach")
    c.t("checkpointing", ckpt, "'Selective activation checkpointing' = torchtitan's op-level SAC (8B toml)" if ckpt ==
        "selective_op" else "'Full activation checkpointing'")
    c.t("attention", "flash", "F.scaled_dot_product_attention with is_causal (flash kernel)")
    c.t("dropout", 0.0, "no dropout")
    if "70b" in rid or "405b" in rid:
        c.t("loss", "loss_parallel", LOSS_PARALLEL_PAPER_WHY)
        c.note("the paper's runs compiled the loss with the model (torchtitan before pytorch/torchtitan#755); memfit "
               "takes loss_parallel's eager handlers, which hold four V-wide fp32 tensors in backward")
    else:
        c.t("loss", "eager", "cross-entropy over the full logits (upcast to fp32)")
    c.t("precision", "bf16_fsdp", "'Mixed precision training' = FSDP2 MixedPrecisionPolicy (bf16 params/compute, fp32 "
        "sharded master parameters, AdamW states and reduce)")
    c.ft("method", "full", "pre-training from scratch")
    fsdp = int(s["fsdp"].split(",")[1].strip().split("-")[0]) if "-way" in s["fsdp"] else gpus
    tp = 8 if ("70b" in rid or "405b" in rid) else 1
    pp = 16 if "405b" in rid else 1
    parallel_defaults(c, gpus, 3, f"{gpus} GPUs", f"FSDP2 (degree {fsdp}, full shard)")
    if tp > 1:
        c.p("tensor", tp, "TP degree 8")
        c.p("sequence_parallel", True, "torchtitan's tensor parallel plan shards the norms' activations over the sequence "
            "(SequenceParallel)")
    if pp > 1:
        c.p("pipeline", pp, "PP degree 16")
        if "interleaved" in rid:
            c.p("virtual_stages", 2, "Interleaved 1F1B: torchtitan's interleaved schedule with two stages per rank")
        c.p("gradient_sync", "last_micro_batch", "torch.distributed.pipelining runs every micro-batch's backward but the "
            "last with set_requires_gradient_sync(False) on an FSDP2 stage (stage.py, backward_maybe_with_nosync): "
            "unsharded fp32 gradients accumulate")
        c.p("reshard_after_forward", "never", "torchtitan's apply_fsdp: 'For PP, do not reshard after forward to avoid "
            "per-microbatch all-gathers' (and the schedule keeps the stage gathered across micro-batches)")
    other = str(s.get("other", ""))
    if "compile" in rid or ("torch.compile" in other and "no torch.compile" not in other):
        c.t("compile", "yes", "torch.compile, as the source states")
    else:
        c.t("norm_kernel", "eager", EAGER_NORM_WHY + " (the paper's runs of 2024)")
    if "Float8" in str(s["precision"]):
        c.t("float8", "tensorwise", "Float8 linears: torchtitan's float8 converter of the time (recipe_name unset: "
            "tensorwise scaling); the fp8 all-gather is an option the source does not state, so it is left off")
    if "asynctp" in rid or "AsyncTP" in str(s.get("other", "")):
        c.p("async_tp", True, "'AsyncTP': torchtitan's enable_async_tensor_parallel; torch's fused matmuls keep a "
            "symmetric-memory workspace outside the caching allocator (in nvidia-smi's total, not in the reserved peak "
            "measured here)")
        if c.cfg["training"].get("compile") != "yes":
            c.t("compile", "yes", "torchtitan's async TP is an Inductor pass: its config requires --training.compile "
                "with enable_async_tensor_parallel")
    c.gpu("h100-96gb", "'NVIDIA H100 GPUs with 95 GiB memory'; peak_reserved does not depend on the card")
    if "405b" in rid:
        c.note("with 16 pipeline stages, 1F1B keeps up to 16 micro-batches' stage inputs alive on the first stage (more "
               "with the interleaved schedule), and the last stage also holds the 128,256 x 16,384 output layer and its "
               "logits; torchtitan reports the maximum over ranks and the micro-batch count is not stated (16 assumed)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("peak_reserved_bytes", "GiB", "'Memory (GiB)': torchtitan logs torch.cuda.max_memory_reserved() in GiB (max "
              "across ranks for PP) -> peak_reserved_bytes")
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- Qwen-1 README 'Profiling of Memory and Speed'

QWEN_SIZES = {"1p8b": "qwen1-1.8b", "7b": "qwen1-7b", "14b": "qwen1-14b", "72b": "qwen1-72b"}
QWEN_COUNTER = ("the README gives 'memory (GB)' without naming the counter; finetune.py runs HF Trainer / DeepSpeed, "
                "which log no GPU memory per step, so the figure was read outside the process (nvidia-smi) -> "
                "device_total_bytes; 'G' read as the GB the text states (10^9 bytes), not GiB: the 7B full-parameter "
                "row's 162.0G over two A100-SXM4-80G is 81.0 per GPU, more than the 80 GiB (81,920 MiB) a card has, "
                "while 81.0 GB is 75.4 GiB")


@rule("qwen1-")
def qwen(rec):
    rid = rec["id"]
    s = rec["setup"]
    parts = rid.split("-")
    size = parts[1]
    model_key = QWEN_SIZES[size]
    gpus = s["num_gpus"]
    is_oom = rec["measured"]["quantity"] == "oom"
    emb = "-lora-emb-" in rid
    qlora = "-qlora-" in rid
    full = "-full-" in rid
    multinode = "2node" in rid
    # The README's OOM note ("OOM occurs on 4 A100-SXM4-80G GPUs both with LoRA (emb) fine-tuning and LoRA
    # fine-tuning without Deepspeed ZeRO 3") is read as both runs without ZeRO-3: the same README says trainable
    # embedding and output layers rule ZeRO-3 out ("if we have these parameters trainable, it is not available to
    # use ZeRO 3, and this is why we use ZeRO 2 in the script by default").
    zero3 = ("zero3" in rid and "nozero3" not in rid) or full
    seq = int(rid.split("seq")[1]) if "seq" in rid else 256
    kind = "full" if full else ("qlora" if qlora else "lora")
    label = ("full" if full else "Q-LoRA (GPTQ int4)" if qlora else "LoRA (emb)" if emb else "LoRA")
    c = Case(rec, kind, f"Qwen-{size.upper().replace('P', '.')} {label}, {gpus}x A100-SXM4-80G"
             f"{' ZeRO-3' if zero3 else (' ZeRO-2' if (multinode or qlora or is_oom) else '')}, bs 1 x ga 8, seq {seq}, AC, flash")
    c.model(model_key)
    deepspeed = full or qlora or multinode or zero3 or is_oom
    if deepspeed:
        c.t("framework", "deepspeed", "finetune.py under HF Trainer with a DeepSpeed config (finetune_ds.sh / "
            "finetune_lora_ds.sh / finetune_qlora_single_gpu.sh): the model runs inside the DeepSpeed engine")
    else:
        c.t("framework", "hf", "finetune_lora_single_gpu.sh: finetune.py under HF Trainer, no DeepSpeed")
    c.t("micro_batch_size", 1, "'We uniformly use a batch size of 1'")
    c.t("grad_accum_steps", 8, "'and gradient accumulation of 8'")
    c.t("seq_len", seq, "the profiled input length; finetune.py pads every sample to model_max_length, so the length is "
        "exact" if not is_oom else "the README does not say at which length the run failed; the shortest profiled length "
        "(256) makes this the most conservative out-of-memory check")
    c.t("checkpointing", "full", "--gradient_checkpointing True in every finetune script")
    c.t("attention", "flash", "'Flash attention 2 is applied' (Qwen's remote code with flash_attn)")
    c.t("dropout", 0.0, "Qwen config attn_dropout_prob and emb_dropout_prob 0.0")
    c.t("loss", "eager", "QWenLMHeadModel's CrossEntropyLoss on the full logits")
    c.t("loss_shift_copy", "yes", "QWenLMHeadModel.forward shifts the logits themselves: shift_logits = "
        "lm_logits[..., :-1, :].contiguous(), a copy of the 16-bit logits (Qwen/Qwen-7B modeling_qwen.py)")
    if deepspeed:
        c.t("logits_dtype", "compute", "modeling_qwen.py passes the 16-bit lm_head output to CrossEntropyLoss without "
            "upcasting, and under DeepSpeed the Trainer does not autocast")
    else:
        c.t("logits_dtype", "compute", "modeling_qwen.py does not upcast the logits (its shifted copy is 16-bit); HF "
            "Trainer's bf16 autocast runs cross_entropy in fp32 (autocast's fp32 op list), which the bf16_autocast "
            "recipe models: the loss reads an fp32 cast")
        c.note("Qwen's 151,936-token vocabulary makes the logits path the largest per-token cost: under autocast the bf16 "
               "logits, their fp32 copy for the loss, the fp32 log-softmax and its gradient coexist at the loss")
    c.note("nvidia-smi (taken as the counter) includes the CUDA context and everything the caching allocator keeps, "
           "including segments cached while the model was loaded and converted to bf16")
    if deepspeed:
        c.t("optimizer", "adamw", "the DeepSpeed configs' optimizer block (type AdamW)")
        c.t("optimizer_impl", "fused", "DeepSpeed's FusedAdam")
    else:
        c.t("optimizer", "adamw", "HF Trainer default adamw_torch (transformers >= 4.32)")
        c.t("optimizer_impl", "foreach_legacy", "adamw_torch: torch's foreach default, and the README's PyTorch 2.0 "
            "writes denom = torch._foreach_add(exp_avg_sq_sqrt, eps) out of place (in place from 2.1)")
    if qlora:
        c.t("precision", "fp16_master", "Q-LoRA scripts pass --fp16 with DeepSpeed: fp16 non-quantized weights and adapters, "
            "fp32 master copies and AdamW states of the adapters")
    elif deepspeed:
        c.t("precision", "bf16_master", "--bf16 with DeepSpeed: bf16 weights, fp32 master copies and AdamW states of the "
            "trained parameters")
    else:
        c.t("precision", "bf16_autocast", "--bf16: Qwen's remote code converts the model to bf16 at load (no torch_dtype "
            "given, bf16-capable GPU), and HF Trainer autocasts")
    if full:
        c.ft("method", "full", "full-parameter fine-tuning (finetune_ds.sh)")
    else:
        c.ft("method", "lora", "--use_lora")
        c.ft("lora_rank", 64, "finetune.py LoraArguments lora_r 64 (alpha 16)")
        c.ft("lora_targets", ["qkv", "o", "gate", "up", "down"], "lora_target_modules c_attn, c_proj, w1, w2: by PEFT's "
             "suffix match c_attn (fused q/k/v), attn.c_proj, w1, w2 and mlp.c_proj - every linear layer except lm_head")
        c.ft("lora_dropout", 0.05, "lora_dropout 0.05")
        c.ft("base_bits", 4 if qlora else 16, "Qwen-*-Chat-Int4: GPTQ int4 (auto-gptq)" if qlora else "bf16 base")
        if qlora:
            c.ft("quant_method", "gptq", "Qwen-*-Chat-Int4 checkpoints are GPTQ (auto-gptq)")
            c.ft("gptq_group_size", 128, "the Int4 checkpoints' quantization_config group_size 128")
            c.ft("gptq_kernel", "dequantize", "finetune.py loads them with GPTQConfig(bits=4, disable_exllama=True) "
                 "(QwenLM/Qwen issue #649 quotes it): auto-gptq's CUDA QuantLinear, which dequantizes each weight to "
                 "fp16 for inputs of 128 rows or more and keeps it for backward")
        if emb:
            c.ft("modules_to_save", ["embed", "head"], "LoRA (emb): finetune.py gives the base models "
                 "modules_to_save=['wte', 'lm_head'], full trainable copies of the embedding and the output layer")
    c.gpu("a100-sxm4-80gb", "'A100-SXM4-80G'")
    if gpus == 1:
        parallel_defaults(c, 1, 3 if full else (2 if qlora else 0), "one GPU",
                          "finetune_ds.sh's ZeRO-3 config on one GPU (nothing to partition)" if full else
                          ("ds_config_zero2.json on one GPU (nothing to partition)" if qlora else "no DeepSpeed"))
    elif multinode:
        parallel_defaults(c, 4, 2, "'two servers, each containing two A100-SXM4-80G GPUs'", "finetune_lora_ds.sh's default "
                          "ds_config_zero2.json (the README advises against ZeRO-3 across nodes)")
    elif is_oom:
        parallel_defaults(c, 4, 2, "4 A100-SXM4-80G", "'without Deepspeed ZeRO 3': finetune_lora_ds.sh's ZeRO-2 default" +
                          ("; LoRA (emb) cannot use ZeRO-3 ('if we have these parameters trainable, it is not available "
                           "to use ZeRO 3, and this is why we use ZeRO 2 in the script by default')" if emb else ""))
    else:
        parallel_defaults(c, gpus, 3, f"{gpus} A100-SXM4-80G", "DeepSpeed ZeRO-3 (stated for the 72B LoRA runs and the 7B "
                          "full-parameter runs)")
    if c.cfg["parallel"].get("zero_stage") == 3:
        hidden = c.cfg["model"]["hidden_size"]
        c.p("reduce_bucket_elements", hidden * hidden, f"finetune/ds_config_zero3.json: reduce_bucket_size \"auto\", which "
            f"HF Trainer fills with hidden_size squared ({hidden}^2; transformers integrations/deepspeed.py, "
            "trainer_config_finalize): ZeRO-3's contiguous gradient bucket")
    if c.cfg["parallel"].get("zero_stage") == 2:
        c.p("reduce_bucket_elements", 200_000_000, "finetune/ds_config_zero2.json: reduce_bucket_size 2e8")
        c.p("overlap_comm", True, "finetune/ds_config_zero2.json: overlap_comm true (two reduce buckets at every backward)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    if is_oom:
        c.oom("'Note that OOM occurs on 4 A100-SXM4-80G GPUs both with LoRA (emb) fine-tuning and LoRA fine-tuning without "
              "Deepspeed ZeRO 3'")
    else:
        div = gpus if rec["measured"].get("per_gpu") is False else None
        c.measure("device_total_bytes", "GB", QWEN_COUNTER + (f"; the multi-GPU rows are totals over the GPUs (the 7B "
                  f"full-parameter row's 139.2-162.0G exceed one 80 GB card, and the rows of a table are read alike), "
                  f"divided by {gpus} because ZeRO shards (or replicates) evenly" if div else ""),
                  note="unknown counter: taken as nvidia-smi (the scripts log no GPU memory)", divisor=div)
    if size == "1p8b" and full:
        # Research (QwenLM/Qwen history): the 1.8B rows came with e8e1596 (2023-11-30), when finetune.py passed
        # device_map="auto" to every run; transformers then turns on low_cpu_mem_usage, which raises under ZeRO-3
        # (the crash QwenLM/Qwen PR #833 reports for finetune_ds.sh, fixed in January 2024).
        c.flag("low_confidence")
        c.note("the 1.8B rows were added to the README (QwenLM/Qwen e8e1596, 2023-11-30) while finetune.py passed "
               "device_map='auto', which fails under ZeRO-3 (QwenLM/Qwen PR #833): the full-parameter run was not made with "
               "the committed script, and its real configuration (ZeRO-2 or ZeRO-3, buckets) is not stated")
        c.whatif("ZeRO-2 as every other single-GPU DeepSpeed script of the repository (ds_config_zero2.json: buckets 2e8, "
                 "overlap_comm)", parallel__zero_stage=2, parallel__reduce_bucket_elements=200_000_000,
                 parallel__overlap_comm=True)
    training_defaults(c)
    return low_conf(c).done()


# ----------------------------------------------------------------------------- ChatGLM-6B P-Tuning v2, ChatGLM3 finetune demo

@rule("chatglm6b-")
def chatglm6b(rec):
    rid = rec["id"]
    bits = 4 if "int4" in rid else (8 if "int8" in rid else 16)
    c = Case(rec, "peft", f"ChatGLM-6B P-Tuning v2 (128 prefix tokens), {'INT%d' % bits if bits < 16 else 'FP16'} base, "
             "bs 1 x ga 16, 64+64 tokens").model("chatglm-6b")
    c.t("framework", "hf", "ptuning/main.py: the ChatGLM remote-code model under HF Seq2SeqTrainer")
    c.t("micro_batch_size", 1, "train.sh per_device_train_batch_size 1")
    c.t("grad_accum_steps", 16, "train.sh gradient_accumulation_steps 16")
    c.t("seq_len", 128, "max_source_length 64 + max_target_length 64; main.py pads every training sample to 128")
    c.t("optimizer", "adamw", "HF Trainer default AdamW over the prefix encoder")
    c.t("optimizer_impl", "for_loop", "transformers' adamw_hf of early 2023 (the Trainer default before v4.32)")
    c.t("checkpointing", "none", "train.sh does not enable gradient checkpointing")
    c.t("attention", "eager", "ChatGLM-6B's remote code computes attention with matmuls and a softmax")
    c.t("dropout", 0.0, "ChatGLM-6B has no dropout in training by default")
    c.t("loss", "eager", "the model's cross-entropy over the full logits")
    c.t("precision", "bf16", "main.py runs model.half() and keeps only the prefix encoder in fp32; no autocast. memfit's "
        "pure 16-bit recipe 'bf16' has the same bytes as fp16")
    c.ft("method", "prefix_tuning", "P-Tuning v2 = deep prompt tuning: trainable key/value prefixes in every layer "
         "(ChatGLM's PrefixEncoder)")
    c.ft("num_virtual_tokens", 128, "PRE_SEQ_LEN=128")
    c.ft("prefix_projection", False, "ChatGLM's prefix_projection default False (an embedding of 128 x 2 x 28 x 4096)")
    c.ft("base_bits", bits, {4: "--quantization_bit 4", 8: "--quantization_bit 8", 16: "no quantization (FP16 row)"}[bits])
    if bits < 16:
        c.ft("quant_method", "chatglm", f"--quantization_bit {bits}: model.quantize({bits}), ChatGLM's own weight-only "
             "quantization (quantization.py QuantizedLinear: int8 or packed int4 with an fp16 scale per row; W8A16Linear "
             "saves its input with save_for_backward)")
    c.gpu("a100-80gb", "not stated; the card only sets the CUDA-context allowance (an Ampere card assumed)")
    parallel_defaults(c, 1, 0, "one GPU", "no sharding")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("device_total_bytes", "GiB", "'最低只需 6.7G 显存' / the hardware table's minimum GPU memory: no counter named; "
              "a minimum-VRAM requirement is read off nvidia-smi -> device_total_bytes; 'G'/'GB' read as GiB",
              note="unknown counter: a stated minimum GPU memory, taken as nvidia-smi")
    c.note("the figure is the authors' stated minimum GPU memory (the hardware table rounds to whole GB), not a logged peak")
    training_defaults(c)
    return low_conf(c).done()


@rule("chatglm3-")
def chatglm3(rec):
    rid = rec["id"]
    s = rec["setup"]
    method = "full" if "-sft-" in rid else ("prefix_tuning" if "ptuning" in rid else "lora")
    gpus = s["num_gpus"]
    mbs = s["micro_batch_size"]
    seq = 384 if method != "prefix_tuning" else 768
    c = Case(rec, {"full": "full", "lora": "lora", "prefix_tuning": "peft"}[method],
             f"ChatGLM3-6B {method}, {gpus}x GPU{' ZeRO-3' if gpus > 1 else ''}, bs {mbs}, <= {seq} tokens (padded)")
    c.model("chatglm3-6b")
    c.t("framework", "deepspeed" if gpus > 1 else "hf", "finetune_demo/finetune_hf.py under HF Seq2SeqTrainer" +
        (" with DeepSpeed ZeRO-3 (sft.yaml)" if gpus > 1 else ""))
    c.t("micro_batch_size", mbs, "per_device_train_batch_size in the default config of Jan 2024 (9484f82)")
    c.t("grad_accum_steps", 1, "not set in the configs")
    c.t("seq_len", seq, f"max_input_length + max_output_length of the default config ({seq}); AdvertiseGen samples padded "
        "to the longest in the batch, so this is a cap")
    c.flag("padded_seq_cap")
    c.t("optimizer", "adamw", "Seq2SeqTrainer default adamw_torch" + ("; under DeepSpeed the Trainer's optimizer steps the "
        "fp32 partitions" if gpus > 1 else ""))
    c.t("optimizer_impl", "foreach", "adamw_torch: torch's foreach default")
    c.t("checkpointing", "none", "not set in the configs")
    c.t("attention", "sdpa", "ChatGLM3's remote code calls torch's scaled_dot_product_attention (PyTorch 2)")
    c.t("dropout", 0.0, "ChatGLM3 config attention_dropout and hidden_dropout 0.0")
    c.t("loss", "eager", "the model's cross-entropy; ChatGLM3 upcasts lm_logits to fp32 before it")
    c.t("logits_dtype", "fp32", "modeling_chatglm.py: lm_logits.to(torch.float32) before the loss")
    c.t("precision", "bf16_master" if gpus > 1 else "bf16_autocast",
        "not stated (the README says the base dtype is not set): bf16 weights with the configs' bf16 Trainer flag" +
        (" under DeepSpeed (fp32 master and states)" if gpus > 1 else " (autocast), trainable parameters in fp32"))
    c.ft("method", method, {"full": "SFT (full fine-tuning)", "lora": "LoRA (PEFT)", "prefix_tuning": "PREFIX_TUNING (PEFT "
         "P-Tuning v2)"}[method])
    if method == "lora":
        c.ft("lora_rank", 8, "lora.yaml r 8 (alpha 32)")
        c.ft("lora_targets", ["qkv"], "PEFT's default target for ChatGLM: query_key_value (fused q/k/v)")
        c.ft("lora_dropout", 0.1, "lora.yaml lora_dropout 0.1")
        c.ft("base_bits", 16, "16-bit base")
    elif method == "prefix_tuning":
        c.ft("num_virtual_tokens", 64, "ptuning_v2.yaml num_virtual_tokens 64")
        c.ft("prefix_projection", False, "PEFT PrefixTuningConfig default")
    c.gpu("a100-80gb", "'tested only on Hopper and Ampere cards', which not stated; A100 80GB assumed (the card only sets "
          "the context allowance)")
    parallel_defaults(c, gpus, 3 if gpus > 1 else 0, f"{gpus} GPU(s)", "DeepSpeed ZeRO-3 ('4张显卡平均分配')" if gpus > 1
                      else "no sharding")
    if gpus > 1:
        c.p("reduce_bucket_elements", 4096 * 4096, "finetune_demo/configs/ds_zero_3.json: reduce_bucket_size \"auto\", "
            "which HF Trainer fills with hidden_size squared (4096^2; transformers integrations/deepspeed.py)")
    c.t("optimizer_in_backward", False, "not used")
    c.t("activation_offload", False, "not used")
    c.measure("device_total_bytes", "MiB", "'占用 48346MiB 显存': nvidia-smi's MiB per card -> device_total_bytes")
    c.note("the configs changed in Feb-Mar 2024 (LoRA batch 4, 256/512 tokens) while the README numbers stayed; which "
           "version was measured is uncertain")
    training_defaults(c)
    return low_conf(c).done()


# ============================================================================= the hand-written cases

HANDWRITTEN_FRAMEWORK = [
    # (id prefix, framework, justification)
    ("hf-", "hf", "transformers' Trainer (the HF 'Efficient Training on a Single GPU' page)"),
    ("tt-", "torchtune", "torchtune recipes"),
    ("lg-", "litgpt", "LitGPT / lit-gpt finetune scripts"),
    ("fg-", "deepspeed", "FastGECToR trains a transformers BERT inside the DeepSpeed engine (its 'GB' prints are "
                         "DeepSpeed's)"),
    ("ttitan-", "torchtitan", "torchtitan train.py"),
    ("peft-", None, None),
]


STABLE_EMBEDDING_WHY = ("measured before LitGPT's StableEmbedding swap (PR #1770, 2024-10-04), so the token "
                        "embedding is the model's own and no orphan gradient exists")


def migrate_handwritten(case):
    """Gives a hand-written case training.framework and training.loss (from the older chunked_loss switch)."""
    t = case["config"]["training"]
    a = case["assumptions"]
    if "framework" not in t:
        for prefix, fw, why in HANDWRITTEN_FRAMEWORK:
            if case["id"].startswith(prefix):
                if fw is None:  # PEFT docs: DeepSpeed ZeRO-3 runs vs accelerate FSDP / plain runs
                    zero = case["config"].get("parallel", {}).get("zero_stage", 0)
                    fsdp = "fsdp" in case["id"]
                    fw = "deepspeed" if zero and not fsdp else "hf"
                    why = ("PEFT's DeepSpeed example: transformers + PEFT under HF Trainer inside the DeepSpeed engine"
                           if fw == "deepspeed" else "transformers + PEFT under HF Trainer / accelerate")
                t["framework"] = fw
                a.append(f"framework {fw}: {why} (set when the implementation profiles were introduced)")
                break
    ft = t.get("finetune", {})
    if case["id"].startswith("lg-") and ft.get("base_bits", 16) < 16 and "stable_embedding" not in ft:
        ft["stable_embedding"] = "no"
        a.append(f"stable_embedding no: {STABLE_EMBEDDING_WHY}")
    par = case["config"].setdefault("parallel", {})
    if (case["id"].startswith("lg-rt-") and case["kind"] in ("lora", "qlora") and par.get("zero_stage", 0) >= 2
            and "fsdp_use_orig_params" not in par):
        par["fsdp_use_orig_params"] = True
        a.append("fsdp_use_orig_params true: Lightning Fabric's FSDPStrategy passes use_orig_params=True on torch >= 2.0 "
                 "and LitGPT wraps whole Blocks, so every unit mixes the frozen base with the LoRA weights (the mechanism "
                 "this case's discrepancy notes describe; set when memfit gained the field)")
    if case["id"] == "lg-hub-gemma2-9b-qlora" and t.get("attention") == "flash":
        t["attention"] = "eager"
        a[:] = [l for l in a if not l.startswith("attention flash:")]
        a.append("attention eager: LitGPT's CausalSelfAttention computes the scores itself when the config soft-caps "
                 "them, as Gemma 2's does (litgpt/model.py scaled_dot_product_attention: 'with softcapping we cannot "
                 "use SDPA': q @ k.mT, tanh soft-capping, an additive mask, softmax in fp32, then @ v) (corrected when "
                 "memfit gained soft-capping)")
    if case["id"] == "tt-l2-7b-qlora-1gpu" and "nf4_whole_tensor" not in t.get("finetune", {}):
        t["finetune"]["nf4_whole_tensor"] = True
        a.append("nf4_whole_tensor true: torchtune's QLoRA of early 2024 required torchao 0.1, whose NF4Tensor quantizes "
                 "each weight in one piece ((value - nf4).abs() on a numel x 16 tensor, torchao/dtypes/nf4tensor.py); "
                 "torchao PR #196 (2024-05-01) split it into 2^20-element chunks - the init-time reserved peak the "
                 "discrepancy notes describe (set when memfit gained the field)")
    if (case["id"].startswith(("lg-rt-", "lg-hub-")) and par.get("zero_stage", 0) >= 2 and t.get("grad_accum_steps", 1) > 1
            and "gradient_sync" not in par):
        par["gradient_sync"] = "last_micro_batch"
        a.append("gradient_sync last_micro_batch: LitGPT's finetune scripts wrap every micro-batch but the last in "
                 "fabric.no_backward_sync(model, enabled=is_accumulating), which under FSDPStrategy is FSDP's no_sync(): "
                 "the unsharded gradients accumulate until the last micro-batch (set when memfit gained the field)")
    if (case["id"].startswith("peft-") and "fsdp" in case["id"] and t.get("grad_accum_steps", 1) > 1
            and "gradient_sync" not in par):
        par["gradient_sync"] = "last_micro_batch"
        a.append("gradient_sync last_micro_batch: HF Trainer steps through accelerate's accumulate(), which enters the "
                 "FSDP model's no_sync() on every micro-batch but the last (GradientAccumulationPlugin.sync_each_batch "
                 "defaults to False) (set when memfit gained the field)")
    hw = case["config"].setdefault("hardware", {})
    if case["id"].startswith("hf-bertlarge-") and "zero_grad_set_to_none" not in t:
        t["zero_grad_set_to_none"] = False
        a.append("zero_grad_set_to_none false: the page's Trainer (transformers 4.2x) calls model.zero_grad() after each "
                 "step, which on the PyTorch 1.x of that page (its 1343 MiB context predates lazy loading) zeroes the "
                 "gradients in place (nn.Module.zero_grad set_to_none=False until PyTorch 2.0, pytorch/pytorch#92731): "
                 "they stay allocated through the next forward (set when memfit gained the field)")
    if case["id"].startswith("hf-bertlarge-") and "overhead_bytes" not in hw:
        # The page's own reading of the CUDA context on the same machine ('Model training anatomy' /
        # 'Efficient Training on a Single GPU': torch.ones((1, 1)).to("cuda") -> 1343 MB of nvml used memory).
        hw["overhead_bytes"] = 1343 * 2**20
        a[:] = [line.replace("memfit's default CUDA-context allowance for Volta (350 MiB) is used, not the 1343 MB the "
                             "page itself measured (see discrepancy notes)",
                             "its CUDA context as the page itself measures it (below)") for line in a]
        a.append("overhead_bytes 1343 MiB: the page measures the CUDA context alone (torch.ones((1, 1)).to('cuda'), "
                 "then nvml's used memory: 'GPU memory occupied: 1343 MB', 'the kernels alone take up 1.3GB'), an older "
                 "PyTorch/CUDA without lazy module loading; memfit's Volta default is 350 MiB")
        case["discrepancy_notes"] = [n for n in case.get("discrepancy_notes", []) if not n.startswith("CUDA context:")]
    if (case["id"].startswith("ttitan-") and not case["id"].startswith("ttitan-l31-8b-h200-")
            and t.get("compile") != "yes" and "norm_kernel" not in t):
        # The torchtitan paper's and the Dec 2024 benchmark's runs predate pytorch/torchtitan#985.
        t["norm_kernel"] = "eager"
        a.append("norm_kernel eager: " + EAGER_NORM_WHY + " (end-of-2024 runs; set when memfit's torchtitan profile "
                 "moved to nn.RMSNorm)")
    if (case["id"].startswith("ttitan-") and t.get("loss") == "eager" and par.get("tensor", 1) > 1
            and not case["id"].startswith("ttitan-l31-8b-h200-")):
        # The Dec 2024 benchmark (torchtitan 9dec370) sits between #755 and #1033: an eager loss, in loss_parallel.
        t["loss"] = "loss_parallel"
        a[:] = [line for line in a if not line.startswith("loss ")]
        a.append("loss loss_parallel: " + LOSS_PARALLEL_WHY + " (set when memfit gained loss_parallel)")
    if case["id"].startswith("ttitan-l31-8b-h200-") and t.get("loss") == "eager" and t.get("compile") == "yes":
        # Trainy's June 2025 runs (torchtitan e7c0cae, 2025-06-13) compile the loss with the model.
        t["loss"] = "compiled_ce"
        a[:] = [line for line in a if not line.startswith("loss ")]
        a.append("loss compiled_ce: " + COMPILED_LOSS_WHY.format(when="the benchmark's torchtitan is e7c0cae of "
                                                                  "2025-06-13") + " (set when memfit gained compiled_ce)")
        case["discrepancy_notes"] = [n for n in case.get("discrepancy_notes", [])
                                     if not n.startswith("torch.compile fuses elementwise ops")]
    if "chunked_loss" in t:
        chunked = t.pop("chunked_loss")
        loss = "chunked" if chunked else "eager"
        t["loss"] = loss
        for i, line in enumerate(a):
            if line.startswith("chunked_loss true"):
                a[i] = "loss chunked" + line[len("chunked_loss true"):]
            elif line.startswith("chunked_loss false"):
                a[i] = "loss eager" + line[len("chunked_loss false"):]
        if not any(line.startswith("loss ") for line in a):
            a.append(f"loss {loss}: the older chunked_loss switch was {str(chunked).lower()}"
                     + (" (see the loss line above)" if any(line.startswith("loss:") for line in a) else ""))
    return case


# ============================================================================= driver

FLAG_MEANINGS = {
    "padded_seq_cap": "dataset padded per batch to its longest sample; the documented cap is used, real length is shorter",
    "longest_sample_len": "dynamic padding; the length of the dataset's longest sample (documented) is used, where the peak occurs",
    "longest_sample_estimated": "dynamic padding without a cap; the longest sample's length is estimated (from another "
                                "tokenization or prompt of the same data), so the peak length is uncertain",
    "seq_from_average": "the source states only the average length of dynamically padded data; the average is used and "
                        "the peak step is longer",
    "torch_compile": "run used torch.compile (cases state it as training.compile)",
    "float8": "torchao Float8 linears, not modelled",
    "seq_from_default": "sequence length (or batch) taken from the framework's config default, not restated by the source",
    "screenshot_value": "value read off a GPU-memory plot",
    "low_confidence": "the measurement file marks the record low confidence",
    "unmodelled_op_sac": "unmodelled: torchtitan op-level selective activation checkpointing (mode 'selective', "
                         "selective_ac_option 'op'); memfit's 'selective' recomputes the attention core only, so the "
                         "closest setting is kept and the case is flagged",
    "unmodelled_active_bytes": "unmodelled: the source read active bytes (memory_stats active_bytes.all.peak), which "
                               "count freed blocks still waiting on another stream's events; memfit reports allocated "
                               "and reserved",
    "unmodelled_lisa_optimizer": "unmodelled: LISA's sampled layers train without optimizer state (the callback froze "
                                 "them before the optimizer was built)",
    "unmodelled_gpu": "unmodelled: the card is not in memfit's GPU table; its true name is kept (the lead adds cards), a "
                      "build without it runs the nearest card it has (accuracy.py PROVISIONAL_GPUS)",
    "unmodelled_alibi_bias": "unmodelled: an ALiBi bias of heads x T x T passed to every attention layer (Baichuan2-13B)",
    "unmodelled_layer_sac": "unmodelled: torchtitan's per-layer selective checkpointing (every second block checkpointed)",
    "unmodelled_use_cache_in_training": "unmodelled: use_cache stays on in training, so every layer's key/value cache is "
                                        "returned and kept with the outputs",
    "unmodelled_modules_to_save": "unmodelled: PEFT modules_to_save (full trainable copies of the embedding and lm_head)",
}

UNIT_READINGS_BY_SOURCE = {
    "Hugging Face transformers docs": "'MB' = MiB (pynvml used // 1024**2)",
    "DeepSpeed / FastGECToR, DeepSpeed gist": "'GB' = GiB (DeepSpeed's see_memory_usage divides by 2**30)",
    "LitGPT, lit-gpt tutorials": "'GB' = 1e9 bytes (lit-gpt prints max_memory_allocated / 1e9)",
    "torchtune README/tutorials of early 2024": "'GB' = 1e9 bytes; torchtune from mid-2024 (training/memory.py) and torchao's "
                                                "torchtune benchmark: GiB",
    "torchtitan, torchao tables": "GiB (torchtitan logs 'memory: X GiB'; torchao tables write 'GB' for it)",
    "ms-swift": "GiB (written 'GiB': max_memory_reserved / 2**30)",
    "fms-acceleration": "bytes",
    "Liger-Kernel": "'MB' = MiB (its callback divides by 2**20)",
    "llm.c": "MiB (printed 'MiB')",
    "ChatGLM3 finetune demo": "MiB (printed 'MiB', nvidia-smi)",
    "ChatGLM-6B, GaLore/Q-GaLore/APOLLO, MeZO, LLaMA-Factory": "'G'/'GB' read off nvidia-smi-style counters = GiB "
                                                            "(MiB / 1024); see each case",
    "Qwen-1": "'G' = the 'memory (GB)' its text states, 1e9 bytes: as GiB, the 7B full-parameter total (162.0G on two "
              "80 GB A100s) would exceed the cards",
    "LOMO, llama-recipes PR #41": "'GB' as written = 1e9 bytes (conversion not shown; GiB would be 7.4 % more)",
    "llama-recipes MemoryTrace": "'GB' = whole GiB (byte2gb = int(x / 2**30))",
}


def incoming_ids():
    ids = set()
    for p in INCOMING:
        with open(p) as f:
            ids |= {r["id"] for r in json.load(f)}
    return ids


PADDED_FLAGS = ("padded_seq_cap", "longest_sample_len", "longest_sample_estimated", "seq_from_average")


def dynamic_padding(case):
    """A case whose data is padded per batch (one of PADDED_FLAGS) runs micro-batches of varying length up to its
    seq_len: state it, unless the rule already did."""
    training = case["config"].setdefault("training", {})
    if "sequence_lengths" in training or not set(case.get("flags", [])) & set(PADDED_FLAGS):
        return case
    training["sequence_lengths"] = "varying"
    case.setdefault("assumptions", []).append(
        "sequence_lengths varying: the data is padded per batch (see the length flag), so each micro-batch is as long as "
        "its own longest sample, up to seq_len")
    return case


def build(records, doc):
    owned = incoming_ids()
    by_id = {r["id"]: r for r in records}
    cases = [migrate_handwritten(c) for c in doc["cases"] if c["id"] not in owned]
    skipped = [s for s in doc.get("skipped", []) if not (set(s["ids"]) & owned)]
    new_skips = {}
    for r in records:
        if r["id"] not in owned:
            continue
        for prefix, fn in RULES:
            if r["id"].startswith(prefix):
                try:
                    cases.append(fn(r))
                except Skip as s:
                    new_skips.setdefault(s.reason, []).append(r["id"])
                break
        else:
            raise ValueError(f"no rule for record {r['id']}")
    for reason, ids in new_skips.items():
        skipped.append({"ids": ids, "reason": reason})
    missing = set(by_id) - {c["id"] for c in cases} - {i for s in skipped for i in s["ids"]}
    if missing:
        raise ValueError(f"records without a case or skip: {sorted(missing)}")
    doc["cases"] = [dynamic_padding(c) for c in cases]
    doc["skipped"] = skipped
    fm = dict(doc.get("flag_meanings", {}))
    fm.update(FLAG_MEANINGS)
    used = {f for c in cases for f in c.get("flags", [])}
    doc["flag_meanings"] = {k: v for k, v in fm.items() if k in used or k in FLAG_MEANINGS}
    doc["unit_readings"] = UNIT_READINGS_BY_SOURCE
    doc["units"] = {"GB": 10**9, "GiB": 2**30, "MB": 10**6, "MiB": 2**20, "TB": 10**12, "TiB": 2**40, "bytes": 1}
    doc["about"] = ABOUT
    return doc


ABOUT = ("memfit configurations reproducing published GPU-memory measurements (docs/data/published_measurements.json). "
         "One case per measurement id, or a skip entry with its reason. Fields: config = the memfit configuration (passed "
         "with --config); quantity = the memfit result field compared with the measurement (max_memory_allocated -> "
         "peak_allocated_bytes, max_memory_reserved -> peak_reserved_bytes, nvidia-smi -> device_total_bytes; an unknown "
         "counter is decided per source from what the framework logs, with a quantity_note), or 'fits.verdict' for an "
         "out-of-memory record, whose check is that memfit's verdict on the stated card is does_not_fit; measured_unit = "
         "the unit the measured value is read in (each source's spelling resolved once, see unit_readings); "
         "measured_divisor = the GPU count a total over all GPUs is divided by, only where every GPU carries the same "
         "load; kind = full | lora | qlora (4-bit base) | peft (any other PEFT method); assumptions = one line per setting "
         "and why; flags = known reasons the run differs from what memfit can describe; discrepancy_notes = mechanisms "
         "that make memfit differ. Settings follow the source, or the framework's documented default where the source is "
         "silent; none was chosen to improve agreement. Every case states training.framework, training.precision and "
         "training.optimizer_impl explicitly, each with its own assumption line; flags named unmodelled_* mark a setting "
         "memfit cannot express (the closest one is kept). The cases of the records merged from the research branches "
         "are written by tools/accuracy/cases_incoming.py (rules per source); the first 112 records' cases are "
         "hand-written.")


def main():
    with open(MEASUREMENTS) as f:
        records = json.load(f)
    with open(CASES) as f:
        doc = json.load(f)
    doc = build(records, doc)
    ordered = {k: doc[k] for k in ("about", "units", "unit_readings", "flag_meanings", "cases", "skipped")}
    with open(CASES, "w") as f:
        json.dump(ordered, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n_skip = sum(len(s["ids"]) for s in doc["skipped"])
    print(f"cases_incoming.py: {len(doc['cases'])} cases, {n_skip} skipped records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
