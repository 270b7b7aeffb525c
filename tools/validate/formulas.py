"""Paper formulas for the saved-activation bytes of the models in models.py.

Derived by hand from the op sequences (see README.md) and checked against the
measurements by test_validate.py.  Each function returns a list of terms
(label, formula, bytes) so the derivation can be printed and compared term
by term with `measure.py --explain`.

Symbols: B micro-batch, T sequence, d hidden, h heads, hd head dim,
D = h*hd, ff intermediate (expert) size, V vocab, E experts, k top-k,
r LoRA rank, s bytes per element of the model dtype (4 fp32, 2 bf16),
ls bytes per LayerNorm mean/rstd element (4 on CUDA; s on CPU in torch 1.13).

variant="cuda": what current PyTorch saves on a GPU (the harness's
*_cuda numbers); variant="cpu113": what torch 1.13 saves on the CPU (the raw
numbers).  The two differ only by: RMSNorm's mean saving x**2 (1.13 only),
LayerNorm mean/rstd dtype in bf16, and 8-byte wrapped Python scalars (CPU).

Scope: the "steady state" block (layer >= 1; with LoRA, layer 0 saves less
because its input does not require grad), dropout_impl "cuda", the default
loss (shift_labels).  MoE: the total over experts only depends on
sum(tokens) = B*T*k, so it is exact whatever the routing.
"""

ELT = {"fp32": 4, "bf16": 2}


def _dims(cfg):
    m, t = cfg["model"], cfg["training"]
    h = m["num_attention_heads"]
    hd = m.get("head_dim") or m["hidden_size"] // h
    ft = t.get("finetune") or {"method": "full"}
    lora = ft.get("method") == "lora"
    return dict(B=t["micro_batch_size"], T=t["seq_len"], d=m["hidden_size"], h=h, hd=hd, D=h * hd,
                ff=m["intermediate_size"], V=m["vocab_size"], s=ELT[t["precision"]],
                p=float(t.get("dropout") or 0.0), L=m["num_hidden_layers"],
                E=m.get("num_experts") or 0, k=m.get("num_experts_per_tok") or 0,
                ffe=m.get("moe_intermediate_size") or m["intermediate_size"],
                lora=lora, r=int(ft.get("lora_rank") or 0), lp=float(ft.get("lora_dropout") or 0.0),
                targets=set(ft.get("lora_targets") or []) if lora else set(),
                gpt2=(m.get("norm") == "layernorm"), rms=(m.get("norm") == "rmsnorm"),
                gated=(m.get("mlp") == "gated"), tied=bool(m.get("tie_word_embeddings")),
                rotary=(m.get("position_embedding") == "rotary"),
                learned=(m.get("position_embedding") == "learned"))


def _norm(x, name, variant, frozen):
    B, T, d, s = x["B"], x["T"], x["d"], x["s"]
    cpu = variant == "cpu113"
    if not x["rms"]:
        ls = s if cpu else 4
        return [(name + " LayerNorm input", "s*B*T*d", s * B * T * d),
                (name + " LayerNorm mean+rstd", "2*ls*B*T", 2 * ls * B * T)]
    t = [(name + " RMSNorm input upcast to fp32 (saved by pow and mul)", "4*B*T*d", 4 * B * T * d),
         (name + " RMSNorm rsqrt", "4*B*T", 4 * B * T)]
    if cpu:
        t.append((name + " RMSNorm mean input x**2 (torch 1.13 only)", "4*B*T*d", 4 * B * T * d))
    if not frozen:
        t.append((name + " RMSNorm normalised x (saved by weight*x)", "s*B*T*d", s * B * T * d))
    return t


def _lora_inputs(x, names, width, label, variant, shared_ok=True):
    """Saved by LoRA adapters on `names`, all fed the same input of `width`."""
    B, T, s, r = x["B"], x["T"], x["s"], x["r"]
    cpu = variant == "cpu113"
    t = []
    if not names:
        return t
    if x["lp"] > 0:
        for n in names:
            t.append(("lora %s dropout mask (bool)" % n, "B*T*%s" % label, B * T * width))
            t.append(("lora %s A input (dropped)" % n, "s*B*T*%s" % label, s * B * T * width))
    else:
        t.append(("lora %s A input (shared)" % "/".join(names), "s*B*T*%s" % label, s * B * T * width))
    for n in names:
        t.append(("lora %s B input" % n, "s*B*T*r", s * B * T * r))
        if cpu:
            t.append(("lora %s scaling (wrapped scalar, CPU)" % n, "8", 8))
    return t


def block_terms(cfg, variant="cuda"):
    x = _dims(cfg)
    B, T, d, h, D, s, p = x["B"], x["T"], x["d"], x["h"], x["D"], x["s"], x["p"]
    ff = x["ff"]
    lora, tg = x["lora"], x["targets"]
    cpu = variant == "cpu113"
    t = []
    t += _norm(x, "attn", variant, frozen=lora)
    # q/k/v projections
    if not lora:
        t.append(("q/k/v projection input (norm output)", "s*B*T*d", s * B * T * d))
    else:
        t += _lora_inputs(x, [n for n in ("q", "k", "v") if n in tg], d, "d", variant)
    t.append(("QK^T matmul: q and repeated k as contiguous copies", "2*s*B*T*D", 2 * s * B * T * D))
    if x["gpt2"]:
        t.append(("scale divisor (0-dim tensor)", "s", s))
        t.append(("softmax output (model dtype)", "s*B*h*T^2", s * B * h * T * T))
    else:
        if cpu:
            t.append(("scaling (wrapped scalar, CPU)", "8", 8))
        t.append(("softmax output (float32)", "4*B*h*T^2", 4 * B * h * T * T))
    if p > 0:
        t.append(("attention dropout mask (bool)", "B*h*T^2", B * h * T * T))
        t.append(("dropped probabilities (PV matmul input)", "s*B*h*T^2", s * B * h * T * T))
    elif not x["gpt2"] and s != 4:
        t.append(("probabilities cast back to model dtype (PV matmul input)", "s*B*h*T^2", s * B * h * T * T))
    t.append(("PV matmul: repeated v as a contiguous copy", "s*B*T*D", s * B * T * D))
    if not lora:
        t.append(("o projection input", "s*B*T*D", s * B * T * D))
    else:
        t += _lora_inputs(x, ["o"] if "o" in tg else [], D, "D", variant)
    if x["gpt2"] and p > 0:
        t.append(("attention residual dropout mask (bool)", "B*T*d", B * T * d))
    t += _norm(x, "mlp", variant, frozen=lora)
    if x["E"] > 1:
        t += _moe_terms(x, variant)
    elif x["gated"]:
        if not lora:
            t.append(("gate/up projection input", "s*B*T*d", s * B * T * d))
            t.append(("act input, act output, up output, product (down input)", "4*s*B*T*ff",
                      4 * s * B * T * ff))
        else:
            t += _lora_inputs(x, [n for n in ("gate", "up") if n in tg], d, "d", variant)
            t.append(("act input, act output, up output", "3*s*B*T*ff", 3 * s * B * T * ff))
            t += _lora_inputs(x, ["down"] if "down" in tg else [], ff, "ff", variant)
    else:
        if not lora:
            t.append(("up projection input", "s*B*T*d", s * B * T * d))
            t.append(("GELU input, down projection input", "2*s*B*T*ff", 2 * s * B * T * ff))
        else:
            t += _lora_inputs(x, ["up"] if "up" in tg else [], d, "d", variant)
            t.append(("GELU input", "s*B*T*ff", s * B * T * ff))
            t += _lora_inputs(x, ["down"] if "down" in tg else [], ff, "ff", variant)
        if p > 0:
            t.append(("MLP residual dropout mask (bool)", "B*T*d", B * T * d))
    return t


def _moe_terms(x, variant):
    B, T, d, s, E, k, ff = x["B"], x["T"], x["d"], x["s"], x["E"], x["k"], x["ffe"]
    frozen = x["lora"]  # experts and router frozen under LoRA (targets q/k/v/o only)
    n = B * T * k
    t = []
    if not frozen:
        t.append(("router input (norm output)", "s*B*T*d", s * B * T * d))
    t.append(("router softmax output (float32)", "4*B*T*E", 4 * B * T * E))
    t.append(("topk indices (int64)", "8*B*T*k", 8 * B * T * k))
    t.append(("renormalisation: topk values + their sum (float32)", "4*B*T*k + 4*B*T", 4 * B * T * k + 4 * B * T))
    t.append(("torch.where(expert_mask) output, (n_e,2) int64 per expert", "16*B*T*k", 16 * n))
    if not frozen:
        t.append(("expert input (gathered)", "s*B*T*k*d", s * n * d))
        t.append(("expert act in/out, up out, product", "4*s*B*T*k*ff", 4 * s * n * ff))
    else:
        t.append(("expert act in/out, up out", "3*s*B*T*k*ff", 3 * s * n * ff))
    t.append(("combine: expert output, routing weight, index_add source", "s*B*T*k*(2d+1)", s * n * (2 * d + 1)))
    return t


def outside_terms(cfg, variant="cuda"):
    """Body bytes outside the blocks (no checkpointing)."""
    x = _dims(cfg)
    B, T, d, s, hd = x["B"], x["T"], x["d"], x["s"], x["hd"]
    lora = x["lora"]
    t = []
    if not lora:
        t.append(("token ids (embedding backward, int64)", "8*B*T", 8 * B * T))
        if x["learned"]:
            t.append(("position ids (int64, shape (1,T))", "8*T", 8 * T))
        if x["gpt2"] and x["p"] > 0:
            t.append(("embedding dropout mask (bool)", "B*T*d", B * T * d))
    if x["rotary"]:
        t.append(("rotary cos and sin, shared by all layers", "2*s*T*hd", 2 * s * T * hd))
    t += _norm(x, "final", variant, frozen=lora)
    return t


def head_terms(cfg, variant="cuda"):
    x = _dims(cfg)
    B, T, d, s, V = x["B"], x["T"], x["d"], x["s"], x["V"]
    t = []
    if not x["lora"]:
        t.append(("head matmul input (final norm output)", "s*B*T*d", s * B * T * d))
    t.append(("log_softmax output (float32), also saved by nll_loss", "4*B*T*V", 4 * B * T * V))
    if B == 1:
        # labels[..., 1:] of the padded (1, T+1) labels is already contiguous:
        # .contiguous() returns the view, which keeps the whole storage.
        t.append(("shifted labels (int64; B=1: a view of the padded (1,T+1) storage)", "8*(T+1)", 8 * (T + 1)))
    else:
        t.append(("shifted labels (int64)", "8*B*T", 8 * B * T))
    t.append(("nll_loss total_weight (0-dim float32)", "4", 4))
    return t


def checkpoint_terms(cfg, variant="cuda"):
    """Body bytes alive at the end of forward with full checkpointing."""
    x = _dims(cfg)
    B, T, d, s, L = x["B"], x["T"], x["d"], x["s"], x["L"]
    t = [tt for tt in outside_terms(cfg, variant)]
    t.append(("block inputs kept by checkpoint", "L*s*B*T*d", L * s * B * T * d))
    if not x["gpt2"]:
        t.append(("additive causal mask (checkpoint argument)", "s*T^2", s * T * T))
    return t


def total(terms):
    return sum(b for _, _, b in terms)


def expected(cfg, variant="cuda"):
    ck = (cfg["training"].get("checkpointing") or "none") == "full"
    L = cfg["model"]["num_hidden_layers"]
    blk = total(block_terms(cfg, variant))
    body = total(checkpoint_terms(cfg, variant)) if ck else total(outside_terms(cfg, variant)) + L * blk
    return {"block": blk, "body": body, "head": total(head_terms(cfg, variant))}


def render(cfg, variant="cuda"):
    out = []
    ck = (cfg["training"].get("checkpointing") or "none") == "full"
    body = (("body with full checkpointing (alive at end of forward)", checkpoint_terms(cfg, variant)) if ck
            else ("outside blocks", outside_terms(cfg, variant)))
    for title, terms in (("block" + (" (alive during its recompute)" if ck else ""), block_terms(cfg, variant)),
                         body, ("head", head_terms(cfg, variant))):
        out.append("%s:" % title)
        for label, f, b in terms:
            out.append("  %-62s %-22s %10d" % (label, f, b))
        out.append("  %-62s %-22s %10d" % ("total", "", total(terms)))
    return "\n".join(out)


if __name__ == "__main__":
    import json
    import sys
    with open(sys.argv[1]) as fh:
        c = json.load(fh)
    print(render(c, sys.argv[2] if len(sys.argv) > 2 else "cuda"))
