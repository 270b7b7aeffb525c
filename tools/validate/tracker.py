"""Saved-tensor accounting for the memfit validation harness.

A Tracker is installed as the pack hook of
``torch.autograd.graph.saved_tensors_hooks`` while a model runs its forward
pass.  Every tensor that autograd saves for the backward pass goes through
``Tracker.pack``; the tracker records

* the tensor's own size (``numel * element_size``),
* the size of its underlying storage (``storage.nbytes()``), counted once per
  storage (keyed by the storage's ``data_ptr``),
* who saved it: the innermost module (forward pre/post hooks keep a stack of
  qualified module names) plus an optional op label that the model code sets
  with ``op("softmax")`` around functional code, and the region ("body" or
  "head") that the model code sets with ``region("head")``.

Storages that belong to parameters or buffers are excluded (they are counted
elsewhere, as parameters / buffers), but every save of them is still listed
in the debug output.

The model code imports ``op`` and ``region`` from here; they are no-ops when no
tracker is active, so the models can run without measurement too.
"""

import contextlib
import re

import torch

_ACTIVE = None  # the Tracker currently measuring, if any

_LAYER_RE = re.compile(r"^(?:.*\.)?layers\.(\d+)(?:\.(.*))?$")


def storage_of(t):
    """Return (data_ptr, nbytes, storage) of the storage under tensor t."""
    s = t.storage()  # TypedStorage in torch 1.13; .untyped_storage() later
    return s.data_ptr(), s.nbytes(), s


@contextlib.contextmanager
def op(label):
    """Label the functional ops run inside this block (e.g. "softmax")."""
    tr = _ACTIVE
    if tr is None or not tr.active:
        yield
        return
    tr.op_stack.append((len(tr.stack), label))
    try:
        yield
    finally:
        tr.op_stack.pop()


@contextlib.contextmanager
def region(name):
    """Attribute saves inside this block to a region ("body" or "head")."""
    tr = _ACTIVE
    if tr is None or not tr.active:
        yield
        return
    old = tr.region
    tr.region = name
    try:
        yield
    finally:
        tr.region = old


def register_shared(t, name):
    """Mark a tensor that several layers use (e.g. rotary cos/sin, the
    causal mask) so that its storage is attributed to `name`, outside any
    layer, whoever saves it first."""
    tr = _ACTIVE
    if tr is None or not tr.active or t is None or not isinstance(t, torch.Tensor):
        return
    ptr, nbytes, _ = storage_of(t)
    if nbytes:
        tr.shared_names[ptr] = name


def mark(name):
    """Drop a marker into the memory timeline (see measure.MemoryTimeline)."""
    tr = _ACTIVE
    if tr is not None and tr.active and tr.marker is not None:
        tr.marker(name)


def record_kept_alive(t, tag, layer=None):
    """Record a tensor that is kept alive for backward without being a saved
    tensor of an op (the inputs that a non-reentrant checkpoint holds)."""
    tr = _ACTIVE
    if tr is None or not tr.active or not isinstance(t, torch.Tensor):
        return
    tr._record(t, kind="kept", explicit_tag=tag, explicit_layer=layer)


class Tracker:
    def __init__(self, model, cuda_equivalent_layernorm=True):
        self.model = model
        self.param_ptrs = {}
        for name, p in model.named_parameters():
            ptr, nb, _ = storage_of(p)
            if nb:
                self.param_ptrs[ptr] = name
        self.buffer_ptrs = {}
        for name, b in model.named_buffers():
            ptr, nb, _ = storage_of(b)
            if nb:
                self.buffer_ptrs[ptr] = name
        self.records = []        # every save event (dicts)
        self.first = {}          # storage ptr -> index of first record
        self._keep = []          # keep storages alive: no address reuse
        self.stack = []          # qualified module names
        self.op_stack = []
        self.region = "body"
        self.active = False
        self.shared_names = {}
        self.cuda_ln = cuda_equivalent_layernorm
        self.marker = None
        self._hooks = []
        for name, m in model.named_modules():
            if name == "":
                continue
            self._hooks.append(m.register_forward_pre_hook(self._make_pre(name)))
            self._hooks.append(m.register_forward_hook(self._make_post(name)))

    # ------------------------------------------------------------ hooks
    def _make_pre(self, name):
        def pre(module, inputs):
            if self.active:
                self.stack.append((name, type(module).__name__))
        return pre

    def _make_post(self, name):
        def post(module, inputs, output):
            if self.active and self.stack and self.stack[-1][0] == name:
                self.stack.pop()
        return post

    def remove_hooks(self):
        for h in self._hooks:
            h.remove()
        self._hooks = []

    def pack(self, t):
        if self.active:
            self._record(t, kind="saved")
        return t

    @staticmethod
    def unpack(t):
        return t

    @contextlib.contextmanager
    def measuring(self):
        global _ACTIVE
        prev = _ACTIVE
        _ACTIVE = self
        self.active = True
        try:
            with torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
                yield self
        finally:
            self.active = False
            _ACTIVE = prev
            self.stack = []
            self.op_stack = []

    # ------------------------------------------------------------ recording
    def _where(self):
        module, mtype = self.stack[-1] if self.stack else ("", "")
        depth = len(self.stack)
        return module, mtype, "/".join(lbl for dep, lbl in self.op_stack if dep == depth)

    def _record(self, t, kind, explicit_tag=None, explicit_layer=None):
        ptr, sbytes, storage = storage_of(t)
        module, mtype, oplabel = self._where()
        if explicit_tag is not None:
            oplabel = explicit_tag
        owner = None
        if ptr in self.param_ptrs:
            owner = "parameter:" + self.param_ptrs[ptr]
        elif ptr in self.buffer_ptrs:
            owner = "buffer:" + self.buffer_ptrs[ptr]
        layer, local = None, module
        m = _LAYER_RE.match(module)
        if m:
            layer = int(m.group(1))
            local = m.group(2) or ""
        if explicit_layer is not None:
            layer = explicit_layer
        if ptr in self.shared_names:
            layer, local = None, "shared:" + self.shared_names[ptr]
        tag = ":".join(x for x in (local, oplabel) if x)
        tbytes = t.numel() * t.element_size()
        cuda_bytes, cuda_note = self._cuda_equivalent(t, sbytes, mtype, oplabel, owner)
        first = owner is None and sbytes > 0 and ptr not in self.first
        rec = {
            "kind": kind,
            "region": self.region,
            "module": module,
            "module_type": mtype,
            "op": oplabel,
            "layer": layer,
            "tag": tag,
            "shape": list(t.shape),
            "dtype": str(t.dtype).replace("torch.", ""),
            "tensor_bytes": tbytes,
            "storage_bytes": sbytes,
            "cuda_bytes": cuda_bytes,
            "cuda_note": cuda_note,
            "storage_ptr": ptr,
            "is_view": t._base is not None,
            "requires_grad": bool(t.requires_grad),
            "owner": owner,
            "counted": first,
        }
        if first:
            self.first[ptr] = len(self.records)
            self._keep.append(storage)
        elif owner is None and sbytes > 0:
            rec["first_saved_by"] = self.records[self.first[ptr]]["tag"]
            rec["first_saved_layer"] = self.records[self.first[ptr]]["layer"]
        self.records.append(rec)

    def _cuda_equivalent(self, t, sbytes, mtype, oplabel, owner):
        """Bytes this save would hold with a current PyTorch on a GPU, or
        None if it would not be saved (or not on the GPU) there.  Each rule
        fixes one difference of torch 1.13 on CPU that was measured:"""
        if owner is not None or not self.cuda_ln:
            return sbytes, None
        # 1. torch 1.13's MeanBackward1 saves its input (x**2 in RMSNorm);
        #    newer versions save only sizes (mean_backward(grad, sym_sizes..)).
        if oplabel.split("/")[-1] == "mean":
            return None, "not saved by torch >= 2 (mean saves only sizes)"
        # 2. the CPU layer_norm kernel keeps mean/rstd in the input dtype;
        #    the CUDA kernel keeps them in float32.
        if (mtype == "LayerNorm" and t.dtype in (torch.bfloat16, torch.float16)
                and t.dim() >= 1 and t.shape[-1] == 1):
            return sbytes * 2, "CUDA keeps LayerNorm mean/rstd in float32"
        # 3. Python scalars become 0-dim wrapped-number tensors (float64 or
        #    int64) that stay on the CPU even for CUDA ops.
        if t.dim() == 0 and t.dtype in (torch.float64, torch.int64):
            return None, "wrapped Python scalar, stays on the CPU"
        return sbytes, None

    # ------------------------------------------------------------ summaries
    def counted(self, region=None, field="storage_bytes"):
        """Records that count: one per storage, parameters/buffers excluded.
        For field="cuda_bytes", records not saved on CUDA are skipped before
        deduplicating, so a later save of the same storage still counts."""
        if field != "cuda_bytes":
            return [r for r in self.records if r["counted"] and (region is None or r["region"] == region)]
        seen, out = set(), []
        for r in self.records:
            if r["owner"] is not None or r["cuda_bytes"] is None or r["storage_bytes"] == 0:
                continue
            if r["storage_ptr"] in seen:
                continue
            seen.add(r["storage_ptr"])
            if region is None or r["region"] == region:
                out.append(r)
        return out

    def total(self, region=None, field="storage_bytes"):
        return sum(r[field] for r in self.counted(region, field))

    def tensor_view_total(self, region=None):
        """Sum of numel*element_size over distinct saved tensors (same
        storage, shape and dtype saved twice counts once), non-parameter."""
        seen = set()
        tot = 0
        for r in self.records:
            if r["owner"] is not None or (region is not None and r["region"] != region):
                continue
            key = (r["storage_ptr"], tuple(r["shape"]), r["dtype"])
            if key in seen:
                continue
            seen.add(key)
            tot += r["tensor_bytes"]
        return tot

    def per_layer(self, field="storage_bytes"):
        layers = {}
        outside = {}
        for r in self.counted(None, field):
            if r["layer"] is None:
                key = r["region"] + ":" + (r["tag"] or "(top)")
                outside[key] = outside.get(key, 0) + r[field]
            else:
                d = layers.setdefault(r["layer"], {})
                d[r["tag"]] = d.get(r["tag"], 0) + r[field]
        out = []
        for i in sorted(layers):
            out.append({"layer": i, "total": sum(layers[i].values()), "ops": layers[i]})
        return {"layers": out, "outside_layers": outside}
