"""Model builders for the memfit validation harness (PyTorch, CPU).

Written from scratch after the structure of Hugging Face transformers'
GPT-2, LLaMA and Mixtral modeling files and PEFT's LoRA layers: each module
performs the same tensor operations in the same order as its HF counterpart
(so autograd saves the same tensors), without HF's generality (no KV cache,
no padding masks, no SDPA/flash paths: eager attention only).

Families (one builder each): build_gpt2, build_llama, build_mixtral;
apply_lora wraps target projections of any of them.  build_model(cfg) picks
the family from the memfit configuration.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from tracker import op, region, register_shared, record_kept_alive, mark

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


# ---------------------------------------------------------------- helpers
class Dropout(nn.Module):
    """Dropout whose saved tensors match the CUDA kernel.

    torch 1.13 on CPU implements F.dropout as ``input * noise`` and saves the
    float noise tensor (input dtype, e.g. 4 bytes/element in fp32); on CUDA it
    uses the fused native_dropout kernel, which saves a bool mask (1
    byte/element).  impl="cuda" calls torch.native_dropout on CPU, which saves
    the same bool mask as CUDA; impl="cpu" uses F.dropout as CPU training
    would."""

    def __init__(self, p, impl="cuda"):
        super().__init__()
        self.p = float(p)
        self.impl = impl

    def forward(self, x):
        if not self.training or self.p <= 0.0:
            return x
        if self.impl == "cuda":
            return torch.native_dropout(x, self.p, True)[0]
        return F.dropout(x, self.p, True)

    def extra_repr(self):
        return "p=%g, impl=%s" % (self.p, self.impl)


class Activation(nn.Module):
    def __init__(self, name):
        super().__init__()
        if name not in ("gelu", "silu"):
            raise ValueError("hidden_act must be gelu or silu, got %r" % name)
        self.name = name

    def forward(self, x):
        # HF "gelu" is the exact (erf) GELU; GeluBackward saves its input.
        # HF "silu": SiluBackward saves its input.
        return F.gelu(x) if self.name == "gelu" else F.silu(x)


class RMSNorm(nn.Module):
    """LLaMA RMSNorm, same op sequence as HF's LlamaRMSNorm."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        in_dtype = x.dtype
        x = x.to(torch.float32)                      # copy only when bf16
        sq = x.pow(2)                                # pow saves x (fp32)
        with op("mean"):
            var = sq.mean(-1, keepdim=True)          # torch 1.13 saves x**2 here (newer: nothing)
        x = x * torch.rsqrt(var + self.eps)          # rsqrt saves its output; mul saves x and rsqrt
        return self.weight * x.to(in_dtype)          # mul saves the normalised x (in_dtype)


def make_norm(kind, d, eps):
    if kind == "layernorm":
        return nn.LayerNorm(d, eps=eps)
    if kind == "rmsnorm":
        return RMSNorm(d, eps=eps)
    raise ValueError("norm must be layernorm or rmsnorm, got %r" % kind)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class RotaryEmbedding(nn.Module):
    """Computes cos/sin in the forward, as HF's LlamaRotaryEmbedding does."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        freqs = (inv @ pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def repeat_kv(x, n_rep):
    """(B, kvh, T, hd) -> (B, kvh*n_rep, T, hd), as HF's repeat_kv."""
    if n_rep == 1:
        return x
    b, kvh, t, hd = x.shape
    return x[:, :, None, :, :].expand(b, kvh, n_rep, t, hd).reshape(b, kvh * n_rep, t, hd)


# ---------------------------------------------------------------- attention
class Attention(nn.Module):
    """style="gpt2": HF GPT2Attention eager path (scale by division by a 0-dim
    tensor, torch.where with the per-layer bool `bias` buffer, softmax in the
    model dtype).  style="llama": HF eager_attention_forward (multiply by the
    scaling, additive float mask, softmax in float32 then cast back)."""

    def __init__(self, m, style, dropout, dropout_impl):
        super().__init__()
        d = m["hidden_size"]
        self.h = m["num_attention_heads"]
        self.kvh = m.get("num_key_value_heads") or self.h
        self.hd = m.get("head_dim") or d // self.h
        if self.h % self.kvh:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        self.style = style
        self.rotary = m.get("position_embedding") == "rotary"
        bias = bool(m.get("attention_bias", False))
        self.fused = bool(m.get("fused_qkv", False))
        if self.fused:
            self.c_attn = nn.Linear(d, (self.h + 2 * self.kvh) * self.hd, bias=bias)
        else:
            self.q_proj = nn.Linear(d, self.h * self.hd, bias=bias)
            self.k_proj = nn.Linear(d, self.kvh * self.hd, bias=bias)
            self.v_proj = nn.Linear(d, self.kvh * self.hd, bias=bias)
        self.o_proj = nn.Linear(self.h * self.hd, d, bias=bias)
        self.attn_dropout = Dropout(dropout, dropout_impl)
        # GPT-2 applies resid_dropout to the attention output; LLaMA does not.
        self.resid_dropout = Dropout(dropout if style == "gpt2" else 0.0, dropout_impl)
        if style == "gpt2":
            n = m.get("max_position_embeddings") or 1024
            self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n),
                                 persistent=False)

    def forward(self, x, cos=None, sin=None, mask=None):
        b, t, _ = x.shape
        if self.fused:
            qkv = self.c_attn(x)
            q, k, v = qkv.split([self.h * self.hd, self.kvh * self.hd, self.kvh * self.hd], dim=2)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(b, t, self.h, self.hd).transpose(1, 2)
        k = k.view(b, t, self.kvh, self.hd).transpose(1, 2)
        v = v.view(b, t, self.kvh, self.hd).transpose(1, 2)
        if self.rotary:
            with op("rotary"):
                c, s = cos.unsqueeze(1), sin.unsqueeze(1)
                q = (q * c) + (rotate_half(q) * s)
                k = (k * c) + (rotate_half(k) * s)
        with op("repeat_kv"):
            k = repeat_kv(k, self.h // self.kvh)
            v = repeat_kv(v, self.h // self.kvh)
        if self.style == "gpt2":
            with op("qk_matmul"):
                w = torch.matmul(q, k.transpose(-1, -2))
            with op("scale"):
                w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
            with op("causal_mask"):
                cm = self.bias[:, :, :t, :t]
                w = torch.where(cm, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
            with op("softmax"):
                w = F.softmax(w, dim=-1).type(v.dtype)
        else:
            with op("qk_matmul"):
                w = torch.matmul(q, k.transpose(2, 3)) * (self.hd ** -0.5)
            with op("causal_mask"):
                w = w + mask
            with op("softmax"):
                w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = self.attn_dropout(w)
        with op("pv_matmul"):
            out = torch.matmul(w, v)
        with op("merge_heads"):
            out = out.transpose(1, 2).contiguous().reshape(b, t, self.h * self.hd)
        return self.resid_dropout(self.o_proj(out))


# ---------------------------------------------------------------- MLPs
class PlainMLP(nn.Module):
    """GPT-2 MLP: up (c_fc) -> act -> down (c_proj) -> resid dropout."""

    def __init__(self, d, ff, act, bias, dropout, dropout_impl):
        super().__init__()
        self.up_proj = nn.Linear(d, ff, bias=bias)
        self.act = Activation(act)
        self.down_proj = nn.Linear(ff, d, bias=bias)
        self.dropout = Dropout(dropout, dropout_impl)

    def forward(self, x):
        return self.dropout(self.down_proj(self.act(self.up_proj(x))))


class GatedMLP(nn.Module):
    """LLaMA MLP: down(act(gate(x)) * up(x))."""

    def __init__(self, d, ff, act, bias):
        super().__init__()
        self.gate_proj = nn.Linear(d, ff, bias=bias)
        self.up_proj = nn.Linear(d, ff, bias=bias)
        self.down_proj = nn.Linear(ff, d, bias=bias)
        self.act = Activation(act)

    def forward(self, x):
        g = self.act(self.gate_proj(x))
        u = self.up_proj(x)
        with op("gate_mul"):
            p = g * u
        return self.down_proj(p)


class SparseMoE(nn.Module):
    """Mixtral sparse MoE block: router + E gated experts, top-k routing
    (softmax in float32, topk, renormalise), dispatch with index_select and
    combine with index_add_, as HF's MixtralSparseMoeBlock."""

    def __init__(self, d, ff, act, n_exp, top_k, bias):
        super().__init__()
        self.n_exp, self.top_k = n_exp, top_k
        self.gate = nn.Linear(d, n_exp, bias=False)
        self.experts = nn.ModuleList([GatedMLP(d, ff, act, bias) for _ in range(n_exp)])
        self.last_tokens_per_expert = None

    def forward(self, x):
        b, t, d = x.shape
        hs = x.view(-1, d)
        router_logits = self.gate(hs)
        with op("routing"):
            rw = F.softmax(router_logits, dim=1, dtype=torch.float)
            rw, sel = torch.topk(rw, self.top_k, dim=-1)
            rw /= rw.sum(dim=-1, keepdim=True)
            rw = rw.to(hs.dtype)
        out = torch.zeros((b * t, d), dtype=hs.dtype, device=hs.device)
        expert_mask = F.one_hot(sel, num_classes=self.n_exp).permute(2, 1, 0)
        counts = []
        for e in range(self.n_exp):
            idx, top_x = torch.where(expert_mask[e])
            counts.append(int(top_x.numel()))
            with op("dispatch"):
                cur = hs.index_select(0, top_x)
            y = self.experts[e](cur)
            with op("combine"):
                y = y * rw[top_x, idx, None]
                out.index_add_(0, top_x, y.to(hs.dtype))
        self.last_tokens_per_expert = counts
        return out.reshape(b, t, d)


# ---------------------------------------------------------------- blocks
class Block(nn.Module):
    def __init__(self, m, style, dropout, dropout_impl):
        super().__init__()
        d = m["hidden_size"]
        eps = m.get("layer_norm_eps", 1e-5 if m["norm"] == "layernorm" else 1e-6)
        self.input_layernorm = make_norm(m["norm"], d, eps)
        self.self_attn = Attention(m, style, dropout, dropout_impl)
        self.post_attention_layernorm = make_norm(m["norm"], d, eps)
        n_exp = m.get("num_experts") or 0
        if n_exp > 1:
            ff = m.get("moe_intermediate_size") or m["intermediate_size"]
            self.mlp = SparseMoE(d, ff, m["hidden_act"], n_exp, m.get("num_experts_per_tok") or 2,
                                 bool(m.get("mlp_bias", False)))
        elif m["mlp"] == "gated":
            self.mlp = GatedMLP(d, m["intermediate_size"], m["hidden_act"], bool(m.get("mlp_bias", False)))
        else:
            self.mlp = PlainMLP(d, m["intermediate_size"], m["hidden_act"], bool(m.get("mlp_bias", False)),
                                dropout if style == "gpt2" else 0.0, dropout_impl)

    def forward(self, x, cos=None, sin=None, mask=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class CausalLM(nn.Module):
    def __init__(self, m, style, dropout, dropout_impl, loss_impl="shift_labels"):
        super().__init__()
        d, v = m["hidden_size"], m["vocab_size"]
        self.style = style
        self.pos_kind = m.get("position_embedding", "none")
        self.embed_tokens = nn.Embedding(v, d)
        if self.pos_kind == "learned":
            self.embed_positions = nn.Embedding(m["max_position_embeddings"], d)
        self.embed_dropout = Dropout(dropout if style == "gpt2" else 0.0, dropout_impl)
        self.layers = nn.ModuleList([Block(m, style, dropout, dropout_impl) for _ in range(m["num_hidden_layers"])])
        eps = m.get("layer_norm_eps", 1e-5 if m["norm"] == "layernorm" else 1e-6)
        self.norm = make_norm(m["norm"], d, eps)
        self.tied = bool(m.get("tie_word_embeddings", False))
        if not self.tied:
            self.lm_head = nn.Linear(d, v, bias=False)
        if self.pos_kind == "rotary":
            hd = m.get("head_dim") or d // m["num_attention_heads"]
            self.rotary_emb = RotaryEmbedding(hd, m.get("rope_theta", 10000.0))
        self.vocab_size = v
        self.loss_impl = loss_impl
        self.checkpointing = False
        self.last_logits_info = None

    def head_weight(self):
        return self.embed_tokens.weight if self.tied else self.lm_head.weight

    def _block(self, i, blk, h, cos, sin, mask):
        if not self.checkpointing:
            return blk(h, cos, sin, mask)
        # What a non-reentrant checkpoint keeps alive for backward: its
        # inputs (closed over by the unpack hook).  Saves inside the block
        # go to the checkpoint's own hooks, not to the tracker.
        for name, tns in (("hidden_states", h), ("cos", cos), ("sin", sin), ("mask", mask)):
            record_kept_alive(tns, "checkpoint_input." + name, layer=i)
        return torch.utils.checkpoint.checkpoint(blk, h, cos, sin, mask, use_reentrant=False)

    def forward(self, input_ids, labels):
        b, t = input_ids.shape
        h = self.embed_tokens(input_ids)
        position_ids = torch.arange(t, dtype=torch.long).unsqueeze(0)
        if self.pos_kind == "learned":
            h = h + self.embed_positions(position_ids)
        h = self.embed_dropout(h)
        cos = sin = mask = None
        if self.pos_kind == "rotary":
            cos, sin = self.rotary_emb(h, position_ids)
            register_shared(cos, "rotary_cos")
            register_shared(sin, "rotary_sin")
        if self.style != "gpt2":
            # additive causal mask, built once per forward as HF does
            mask = torch.full((t, t), torch.finfo(h.dtype).min, dtype=h.dtype).triu(1)[None, None]
            register_shared(mask, "causal_mask")
        for i, blk in enumerate(self.layers):
            h = self._block(i, blk, h, cos, sin, mask)
        h = self.norm(h)
        mark("head_start")
        with region("head"):
            with op("lm_head"):
                logits = F.linear(h, self.head_weight()) if self.tied else self.lm_head(h)
            loss = self.loss(logits, labels)
            del logits
        mark("head_end")
        return loss

    def loss(self, logits, labels):
        """HF ForCausalLMLoss: upcast, shift, cross-entropy (mean)."""
        with op("upcast"):
            lf = logits.float()
        info = {"logits_bytes": logits.numel() * logits.element_size(),
                "logits_dtype": str(logits.dtype).replace("torch.", ""),
                "fp32_upcast_bytes": 0 if lf.data_ptr() == logits.data_ptr() else lf.numel() * 4}
        if self.loss_impl == "shift_logits":
            # transformers <= 4.45: slice the logits and copy them
            with op("shift_logits"):
                lf = lf[..., :-1, :].contiguous()
                tgt = labels[..., 1:].contiguous()
            info["shift_copy_bytes"] = lf.numel() * 4
        else:
            # transformers >= 4.46: pad the labels instead of copying logits
            with op("shift_labels"):
                tgt = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        with op("cross_entropy"):
            loss = F.cross_entropy(lf.view(-1, self.vocab_size), tgt.view(-1), ignore_index=-100)
        self.last_logits_info = info
        return loss


# ---------------------------------------------------------------- LoRA
class LoRALinear(nn.Module):
    """PEFT-style LoRA: result = base(x) + B(A(dropout(x))) * alpha/r."""

    def __init__(self, base, r, alpha, dropout, dropout_impl):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.lora_dropout = Dropout(dropout, dropout_impl)
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        with op("lora_scale_add"):
            return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


LORA_NAMES = {
    "q": ("q_proj",), "k": ("k_proj",), "v": ("v_proj",), "o": ("o_proj",),
    "gate": ("gate_proj",), "up": ("up_proj",), "down": ("down_proj",),
}


def apply_lora(model, ft, dropout_impl):
    """Freeze every parameter and wrap the target projections."""
    r = int(ft["lora_rank"])
    alpha = float(ft.get("lora_alpha", 2 * r))
    p = float(ft.get("lora_dropout", 0.0))
    targets = ft.get("lora_targets") or ["q", "v"]
    for prm in model.parameters():
        prm.requires_grad_(False)
    wanted = set()
    for tg in targets:
        if tg not in LORA_NAMES:
            raise ValueError("unknown lora target %r" % tg)
        wanted.update(LORA_NAMES[tg])
    fused_qkv = any(tg in targets for tg in ("q", "k", "v"))
    n = 0
    for mod in list(model.modules()):
        for cname, child in list(mod.named_children()):
            hit = cname in wanted or (cname == "c_attn" and fused_qkv)
            if hit and isinstance(child, nn.Linear):
                setattr(mod, cname, LoRALinear(child, r, alpha, p, dropout_impl))
                n += 1
    if n == 0:
        raise ValueError("no LoRA target found for %r" % (targets,))
    return n


# ---------------------------------------------------------------- builders
def _common(cfg):
    m, tr = cfg["model"], cfg["training"]
    return m, float(tr.get("dropout", 0.0) or 0.0), tr.get("dropout_impl", "cuda"), tr.get("loss_impl", "shift_labels")


def build_gpt2(cfg):
    """GPT-2 style: learned positions, pre-LayerNorm, biases, plain GELU MLP,
    dropout on embeddings, attention probabilities and residual branches."""
    m, p, impl, loss_impl = _common(cfg)
    return CausalLM(m, "gpt2", p, impl, loss_impl)


def build_llama(cfg):
    """LLaMA style: RMSNorm, rotary, GQA with repeat_kv, SwiGLU, no biases,
    attention dropout only."""
    m, p, impl, loss_impl = _common(cfg)
    return CausalLM(m, "llama", p, impl, loss_impl)


def build_mixtral(cfg):
    """Mixtral style: LLaMA attention + sparse MoE MLP."""
    m, p, impl, loss_impl = _common(cfg)
    if (m.get("num_experts") or 0) < 2:
        raise ValueError("mixtral family needs num_experts >= 2")
    return CausalLM(m, "llama", p, impl, loss_impl)


def family_of(cfg):
    m = cfg["model"]
    fam = m.get("family")
    if fam:
        return fam
    if (m.get("num_experts") or 0) > 1:
        return "mixtral"
    if m.get("position_embedding") == "learned" or m.get("norm") == "layernorm":
        return "gpt2"
    return "llama"


BUILDERS = {"gpt2": build_gpt2, "llama": build_llama, "mixtral": build_mixtral}


def build_model(cfg, seed=0):
    """Build, cast and (for LoRA) wrap a model; returns it in train mode."""
    torch.manual_seed(seed)
    tr = cfg["training"]
    model = BUILDERS[family_of(cfg)](cfg)
    ft = tr.get("finetune") or {"method": "full"}
    if ft.get("method", "full") == "lora":
        apply_lora(model, ft, tr.get("dropout_impl", "cuda"))
    elif ft.get("method", "full") != "full":
        raise ValueError("finetune.method must be full or lora")
    model.to(DTYPES[tr.get("precision", "fp32")])
    model.checkpointing = tr.get("checkpointing", "none") == "full"
    model.train()
    return model
