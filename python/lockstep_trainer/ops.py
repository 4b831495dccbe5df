"""The probe sees ops, not only modules (docs/protocol.md "What a probe records").

Attention and normalization written inline are calls of torch functions, not modules: no module
hook sees the attention scores of `softmax(q @ k.transpose(-2, -1) * scale)`. In a probe forward
the helper therefore also records the outputs of the ops they are made of, through a
TorchFunctionMode (torch 1.13 and 2.x):

    matmul        torch.matmul, Tensor.matmul, the @ operator (Tensor.__matmul__, __rmatmul__)
    bmm           torch.bmm, Tensor.bmm
    softmax       torch.softmax, Tensor.softmax, F.softmax
    log_softmax   torch.log_softmax, Tensor.log_softmax, F.log_softmax
    layer_norm    torch.layer_norm, F.layer_norm
    scaled_dot_product_attention   F.scaled_dot_product_attention (PyTorch 2.x)

each named by the path of the module it runs in and the op: `blocks.0.attn.matmul`, then
`blocks.0.attn.matmul1`, `blocks.0.attn.matmul2` for that module's later calls in the same forward
(as a module's inputs are `.in`, `.in1`); an op outside every module (a function of the model
called directly) is named by the op alone. Recorded in forward order, between the modules'
records. An op inside a recorded module without submodules (F.layer_norm inside nn.LayerNorm,
when the default leaf modules are recorded) is that module's output and is not recorded again
(inside a recorded block, the ops are recorded: they are its insides), and an op called
inside another recorded op (F.softmax calls Tensor.softmax) counts once: the mode is off while an
op runs. The recording only reads the outputs: the forward computes exactly what it computes
without it.
"""

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


def _op_table():
    table = {}
    T = torch.Tensor
    for name, fns in (
        ("matmul", (torch.matmul, T.matmul, T.__matmul__, getattr(T, "__rmatmul__", None))),
        ("bmm", (torch.bmm, T.bmm)),
        ("softmax", (torch.softmax, T.softmax, F.softmax)),
        ("log_softmax", (torch.log_softmax, T.log_softmax, F.log_softmax)),
        ("layer_norm", (torch.layer_norm, F.layer_norm)),
        ("scaled_dot_product_attention", (getattr(F, "scaled_dot_product_attention", None),)),
    ):
        for fn in fns:
            if fn is not None:
                table[fn] = name
    return table


OPS = _op_table()  # function -> the op's name in the record


class ModulePath:
    """The path of the module running now (forward pre- and post-hooks on every module of a
    model keep a stack), and how often each op ran in each module this forward."""

    def __init__(self, model, skip=()):
        self._names = {id(m): n for n, m in model.named_modules()} if model is not None else {}
        self._skip = set(id(m) for m in skip)  # modules whose ops are not recorded
        self._stack, self._counts, self._handles = [], {}, []
        if model is not None:
            for _, m in model.named_modules():
                self._handles.append(m.register_forward_pre_hook(self._push))
                self._handles.append(m.register_forward_hook(self._pop))

    def _push(self, module, inputs):
        self._stack.append(module)

    def _pop(self, module, inputs, output):
        if self._stack and self._stack[-1] is module:
            self._stack.pop()

    def reset(self):
        self._stack, self._counts = [], {}

    def name_for(self, op):
        """The record's name for `op` called now, or None when its module's output is recorded."""
        module = self._stack[-1] if self._stack else None
        if module is not None and id(module) in self._skip:
            return None
        path = self._names.get(id(module), "") if module is not None else ""
        base = path + "." + op if path else op
        k = self._counts.get(base, 0)
        self._counts[base] = k + 1
        return base if k == 0 else base + str(k)

    def close(self):
        for h in self._handles:
            h.remove()
        self._handles = []


class OpMode(TorchFunctionMode):
    """Records the floating-point output of each op in OPS through `recorder.add_op`."""

    def __init__(self, recorder):
        super().__init__()
        self._recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))  # the mode is off inside: nested ops are not seen
        op = OPS.get(func)
        if op is not None:
            self._recorder.add_op(op, out)
        return out
