"""Saved-tensor and allocator accounting for real framework code (torch 2.x, CPU).

Same counting rule as tools/validate/tracker.py (each storage counted once, storages of
parameters and buffers excluded), but it does not need the model code to be instrumented:

* module attribution: global forward pre/post hooks keep a stack of module names
  (``torch.nn.modules.module.register_module_forward_pre_hook``), so a save is attributed
  to the innermost module of any model, including third-party ones;
* op attribution: after forward the autograd graph is walked from the loss and every
  ``_saved_*`` attribute (and ``saved_tensors`` of custom Functions) is unpacked; the
  unpack hook then learns which backward node holds each packed tensor
  (``SoftmaxBackward0``, ``MmBackward0``, ``ScaledDotProductFlashAttentionForCpuBackward0``...).

Storages are keyed by ``untyped_storage().data_ptr()``; the bytes are ``nbytes()`` of the
storage (a saved view of a larger tensor keeps the whole storage alive).
"""

import contextlib
import re
import weakref

import torch

LAYER_RE = re.compile(r"(?:^|\.)(?:layers|h|layer|blocks)\.(\d+)(?:\.|$)")


class _Handle:
    """What pack gives autograd for a saved tensor: the graph node that saved it holds it, so it
    dies with that node (a weak reference to it tells whether autograd still keeps the tensor).
    It carries the tensor, detached: the storage, not the graph that made it, and for as long as
    autograd keeps the node (unpack gives it back; autograd restores its grad_fn)."""
    __slots__ = ("rid", "tensor", "__weakref__")

    def __init__(self, rid, tensor):
        self.rid = rid
        self.tensor = tensor


def storage_key(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


class SaveTracker:
    def __init__(self, modules, head_patterns=("lm_head", "output", "loss")):
        """modules: {prefix: nn.Module} to name (the model, a loss module ...)."""
        self.names = {}
        self.param_ptrs = {}
        for prefix, mod in modules.items():
            for n, m in mod.named_modules():
                self.names[id(m)] = (prefix + "." + n if n else prefix).strip(".")
            for n, p in mod.named_parameters(remove_duplicate=False):
                k, nb = storage_key(p)
                if nb:
                    self.param_ptrs[k] = prefix + "." + n
            for n, b in mod.named_buffers(remove_duplicate=False):
                k, nb = storage_key(b)
                if nb:
                    self.param_ptrs[k] = "buffer:" + prefix + "." + n
        self.param_shapes = {}
        for prefix, mod in modules.items():
            for n, p in mod.named_parameters():
                if p.dim() in (2, 3):  # a linear's weight, or a stack of experts' (Llama 4)
                    self.param_shapes.setdefault(tuple(p.shape), set()).add(p.dtype)
                    self.param_shapes.setdefault(tuple(p.shape[:-2]) + tuple(p.shape[-2:][::-1]), set()).add(p.dtype)
        self.head_patterns = head_patterns
        # the model wrappers above the output head ("" and, under PEFT, "base_model",
        # "base_model.model"): a save made directly in one of them (the loss computed in
        # LlamaForCausalLM.forward) belongs to the head
        self.top_names = {""}
        for n in self.names.values():
            parts = n.split(".")
            if parts[-1] in ("lm_head", "output"):
                self.top_names.update(".".join(parts[:i]) for i in range(len(parts)))
        self.stack = []
        self.types = []
        self.records = []
        self.handles = []      # record id -> weak reference to what autograd holds for it
        self.active = False
        self.region_override = None
        self._hooks = []
        self._walk_node = None

    # ------------------------------------------------------------------ hooks
    def _pre(self, module, args):
        if self.active:
            self.stack.append(self.names.get(id(module), type(module).__name__))
            self.types.append(type(module).__name__)

    def _post(self, module, args, out):
        if self.active and self.stack:
            self.stack.pop()
            self.types.pop()

    def pack(self, t):
        rid = len(self.records)
        handle = _Handle(rid, t.detach())
        self.handles.append(weakref.ref(handle))
        if not self.active:
            self.records.append(None)
            return handle
        ptr, nb = storage_key(t)
        module = self.stack[-1] if self.stack else ""
        owner = self.param_ptrs.get(ptr)
        region = self.region_override or self._region(module)
        m = LAYER_RE.search(module)
        self.records.append({
            "module": module,
            "module_type": self.types[-1] if self.types else "",
            "region": region,
            "layer": int(m.group(1)) if m else None,
            "shape": list(t.shape),
            "dtype": str(t.dtype).replace("torch.", ""),
            "tensor_bytes": t.numel() * t.element_size(),
            "storage_bytes": nb,
            "storage_ptr": ptr,
            "owner": owner,
            "requires_grad": bool(t.requires_grad),
            "nodes": [],
            "weight_copy": self._weight_copy(t) if owner is None else None,
        })
        return handle

    _VIEWISH = {"ToCopyBackward0", "TBackward0", "PermuteBackward0", "TransposeBackward0",
                "ViewBackward0", "ExpandBackward0", "UnsafeViewBackward0", "AliasBackward0",
                "ReshapeAliasBackward0"}

    def _weight_copy(self, t):
        """A dtype cast of a parameter (autocast's weight copy), saved by a matmul (a linear's 2-D
        weight, or a 3-D stack of experts that torch.bmm reads: Llama 4):
        'trainable' (the cast's graph leads to the parameter's AccumulateGrad) or
        'frozen' (no graph; a tensor shaped like a parameter of another dtype)."""
        if t.dtype not in (torch.bfloat16, torch.float16) or t.dim() not in (2, 3):
            return None
        fn, depth = t.grad_fn, 0
        while fn is not None and depth < 5:
            if fn.name().endswith("AccumulateGrad"):
                # a 3-D save is a weight copy only when the parameter is itself a 3-D stack (not
                # PEFT's 2-D expert factors viewed per expert, which memfit counts as activations)
                leaf = getattr(fn, "variable", None)
                if t.dim() == 3 and (leaf is None or leaf.dim() != 3):
                    return None
                return "trainable" if depth >= 1 else None
            if fn.name() not in self._VIEWISH:
                return None
            fn = fn.next_functions[0][0] if fn.next_functions else None
            depth += 1
        if t.grad_fn is None and not t.requires_grad:
            dts = self.param_shapes.get(tuple(t.shape))
            if dts and any(d != t.dtype for d in dts):
                return "frozen"
        return None

    def unpack(self, handle):
        # The handle holds the tensor for as long as autograd holds the handle: during backward it
        # is freed when autograd frees its saved variable (as without the hooks).
        if self._walk_node is not None and self.records[handle.rid] is not None:
            self.records[handle.rid]["nodes"].append(self._walk_node)
        return handle.tensor

    def _region(self, module):
        if module in self.top_names or any(p in module.split(".") for p in self.head_patterns):
            return "head"
        return "body"

    @contextlib.contextmanager
    def region(self, name):
        old = self.region_override
        self.region_override = name
        try:
            yield
        finally:
            self.region_override = old

    @contextlib.contextmanager
    def measuring(self):
        from torch.nn.modules import module as M
        self._hooks = [M.register_module_forward_pre_hook(self._pre),
                       M.register_module_forward_hook(self._post)]
        self.active = True
        try:
            with torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
                yield self
        finally:
            self.active = False
            self.stack = []
            self.types = []
            for h in self._hooks:
                h.remove()
            self._hooks = []

    # ------------------------------------------------------------------ graph walk
    def name_ops(self, roots):
        """Walk the autograd graph from roots (tensors) and record which backward node
        holds each saved tensor."""
        seen = set()
        todo = [r.grad_fn for r in roots if r is not None and r.grad_fn is not None]
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            self._walk_node = node.name()
            for attr in dir(node):
                if attr.startswith("_saved_") or attr == "saved_tensors":
                    try:
                        getattr(node, attr)
                    except Exception:
                        pass
            self._walk_node = None
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    todo.append(nxt)

    # ------------------------------------------------------------------ summaries
    def weight_copies(self):
        """Saved autocast weight copies, one per storage."""
        seen, out = set(), []
        for rid, r in enumerate(self.records):
            if r is not None and r.get("weight_copy") and r["storage_ptr"] not in seen and self.alive(rid):
                seen.add(r["storage_ptr"])
                out.append(r)
        return out

    def alive(self, rid):
        """Whether autograd still holds record rid: the node that saved it is alive."""
        return self.handles[rid]() is not None

    def counted(self):
        """One record per storage (the first save), parameters/buffers excluded, of the tensors
        autograd still holds: a tensor saved by a graph that died during forward (a result used
        only detached, e.g. PEFT DoRA's lora_B(lora_A(eye)) for its weight norm) is freed by
        autograd when the graph goes (and with it the handle holding it)."""
        seen, out = set(), []
        for rid, r in enumerate(self.records):
            if (r is None or r["owner"] is not None or r["storage_bytes"] == 0
                    or r.get("weight_copy")):
                continue
            if not self.alive(rid):
                continue
            if r["storage_ptr"] in seen:
                continue
            seen.add(r["storage_ptr"])
            out.append(r)
        return out
