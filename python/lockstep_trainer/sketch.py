"""The function probe's CountSketch, bit for bit the one Lockstep computes in C++
(harness/train/probe/probe.cpp; the format: docs/protocol.md "Probe files").

A recorded tensor x (any dtype, flattened row-major to n elements) is kept as m = 4093 fp64
buckets. Element i = r*m + c goes to bucket c with sign u_r, where
    salt = splitmix64((batch << 40) | (index + 1))      index: the tensor's place in the forward
    u_r  = -1 if splitmix64(salt ^ r) >> 63 else +1      r = 0 .. n // m
so the sketch of the (R, m) view is u^T X: computed in fp64 on x's device, in row chunks of
16 rows on a CPU and 2**26 elements on a GPU, then the tail (the last n % m elements, row R).
The sketch is linear: ||S(a) - S(b)|| estimates ||a - b|| between any two runs.
"""

import contextlib
import json
import os
import struct

import torch

from .ops import ModulePath, OpMode

BUCKETS = 4093  # m: a prime, so no structure of period below m folds onto few buckets
_M64 = (1 << 64) - 1


def splitmix64(z):
    """splitmix64 on a Python int (mod 2**64), as harness/util/splitmix.h."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _signed(c):
    return c - (1 << 64) if c >= 1 << 63 else c


def _srl(x, k):  # logical shift right of int64 tensors holding uint64 bits
    return (x >> k) & ((1 << (64 - k)) - 1)


def signs(salt, count):
    """u_0 .. u_{count-1} as an fp64 tensor of +-1 (vectorized splitmix64 over int64 bits)."""
    z = torch.arange(count, dtype=torch.int64) ^ _signed(salt)
    z = z + _signed(0x9E3779B97F4A7C15)
    z = (z ^ _srl(z, 30)) * _signed(0xBF58476D1CE4E5B9)
    z = (z ^ _srl(z, 27)) * _signed(0x94D049BB133111EB)
    z = z ^ _srl(z, 31)
    return torch.where(z < 0, -1.0, 1.0).to(torch.float64)  # top bit set: -1


def salt_for(batch, index):
    return splitmix64(((batch << 40) | (index + 1)) & _M64)


def count_sketch(t, salt, out=None, cache=None):
    """Adds the sketch of `t` with `salt` into `out` (m fp64 buckets on t's device); returns it.
    `cache`: a SketchCache kept across calls (a recorder's), so that a probe's many tensors reuse
    their signs and one conversion buffer instead of building them per call; the same bits."""
    m = BUCKETS
    cache = cache if cache is not None else SketchCache()
    with torch.no_grad():
        x = t.detach().contiguous().view(-1)  # (n), as the module saw it
        n = x.numel()
        rows, tail = divmod(n, m)
        if out is None:
            out = torch.zeros(m, dtype=torch.float64, device=x.device)
        u = cache.signs(salt, rows + 1, x.device)
        # On a CPU, chunks of 16 rows (512 KiB of fp64) converted into one reused buffer that
        # stays in cache for the product: a third faster than 2**18-element chunks, same bits.
        chunk = (1 << 16) if x.device.type == "cpu" else (1 << 26)
        chunk_rows = max(1, chunk // m)
        buf = cache.buffer(min(chunk_rows, rows) * m, x.device)
        for r0 in range(0, rows, chunk_rows):
            nr = min(chunk_rows, rows - r0)
            block = buf.narrow(0, 0, nr * m).copy_(x.narrow(0, r0 * m, nr * m)).view(nr, m)
            out.addmv_(block.t(), u.narrow(0, r0, nr))  # (m) += X^T u
        if tail > 0:
            out.narrow(0, 0, tail).add_(x.narrow(0, rows * m, tail).to(torch.float64) * u.narrow(0, rows, 1))
    return out


class SketchCache:
    """What count_sketch builds that does not depend on the tensor's values: the signs of each
    (salt, rows) (a probe sketches the same tensors at every checkpoint: the same salts), and the
    fp64 buffer the row chunks are converted into (one per device, grown as needed). At
    gpt2-124m's shapes this halves the sketch's fixed cost per tensor (bench/probe_ops_cost.py)."""

    def __init__(self):
        self._signs, self._buffers = {}, {}

    def signs(self, salt, count, device):
        key = (salt, count, str(device))
        u = self._signs.get(key)
        if u is None:
            u = self._signs[key] = signs(salt, count).to(device)
        return u

    def buffer(self, numel, device):
        key = str(device)
        b = self._buffers.get(key)
        if b is None or b.numel() < numel:
            b = self._buffers[key] = torch.empty(max(numel, 1), dtype=torch.float64, device=device)
        return b


class ProbeRecorder:
    """Sketches what named modules receive and return, forward after forward.

    Each forward of a probe batch records, in the order the modules finish, every floating-point
    input of a module ("NAME.in", "NAME.in1", ...) then its output ("NAME"; a tuple's first
    tensor), with ops_of the outputs of the ops in ops.OPS as they return ("PATH.OP"), and what
    the forward returns ("output", Session.run_probe). Batch b
    adds into the same sketches with salts of its own (the sketch of the batches concatenated).
    """

    active = None  # the recorder of the forward in progress (record() adds to it)

    def __init__(self, modules, ops_of=None):
        """ops_of: a model whose forwards also record ops (lockstep_trainer/ops.py), named by
        the path of the module of `ops_of` they run in; None: modules and record() only."""
        self._handles = []
        self.names, self._sketches = [], []
        self._batch, self._next, self._active = 0, 0, False
        self._cache = SketchCache()
        pairs = list(modules.items() if isinstance(modules, dict) else modules)
        for name, module in pairs:
            self._handles.append(module.register_forward_hook(self._hook(name)))
        # An op inside a recorded module without submodules (F.layer_norm in nn.LayerNorm) is
        # that module's output, recorded already; inside a recorded block, ops are its insides.
        leaves = [m for _, m in pairs if not list(m.children())]
        self._paths = ModulePath(ops_of, skip=leaves) if ops_of is not None else None
        self._mode = None

    def _hook(self, name):
        def hook(module, inputs, output):
            if not self._active:
                return
            k = 0
            for x in inputs:  # floating-point tensors only (token ids say nothing of the math)
                if torch.is_tensor(x) and x.is_floating_point():
                    self.add(name + (".in" if k == 0 else ".in%d" % k), x)
                    k += 1
            if isinstance(output, (tuple, list)):
                output = next((o for o in output if torch.is_tensor(o)), None)
            if torch.is_tensor(output) and output.is_floating_point():
                self.add(name, output)
        return hook

    def begin_forward(self, batch):
        self._batch, self._next, self._active = batch, 0, True
        ProbeRecorder.active = self
        if self._paths is not None:
            self._paths.reset()
            self._enter_ops()

    def end_forward(self):
        self._exit_ops()
        self._active = False
        ProbeRecorder.active = None

    def _enter_ops(self):
        if self._paths is not None and self._mode is None:
            self._mode = OpMode(self)
            self._mode.__enter__()

    def _exit_ops(self):
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None

    def add_op(self, op, out):
        """An op of OPS returned `out` (OpMode): recorded as PATH.OP when a forward is on."""
        if self._active and torch.is_tensor(out) and out.is_floating_point():
            name = self._paths.name_for(op)
            if name is not None:
                self.add(name, out)

    @contextlib.contextmanager
    def paused(self):
        """Nothing is recorded inside (no hook, no record(), no op mode): for a call the probe
        must not see, a torch.compile'd graph say (it runs no Python side effects anyway)."""
        was, self._active = self._active, False
        ProbeRecorder.active = None
        had_mode = self._mode is not None
        self._exit_ops()
        try:
            yield
        finally:
            if had_mode:
                self._enter_ops()
            self._active = was
            ProbeRecorder.active = self if was else None

    def add(self, name, t):
        if self._next == len(self._sketches):
            if self._batch > 0:
                raise RuntimeError("probe: batch %d records more tensors than batch 0" % self._batch)
            self.names.append(name)
            self._sketches.append(None)
        elif self.names[self._next] != name:
            raise RuntimeError("probe: tensor %d is %s in this forward and %s in the first"
                               % (self._next, name, self.names[self._next]))
        i = self._next
        self._sketches[i] = count_sketch(t, salt_for(self._batch, i), self._sketches[i], self._cache)
        self._next += 1

    def take(self):
        """(names, sketches as lists of floats) since the last take()."""
        out = [s.cpu().tolist() for s in self._sketches]
        names = self.names
        self.names, self._sketches = [], []
        return names, out

    def close(self):
        self._exit_ops()
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._paths is not None:
            self._paths.close()


def record(name, tensor):
    """Sketches `tensor` as `name` when a probe forward is in progress; nothing otherwise (free in
    training). For what no module returns: attention logits computed inline, say. Call it in the
    same order with the same names in every forward."""
    rec = ProbeRecorder.active
    if rec is not None:
        rec.add(name, tensor)


def write_probe(folder, steps, tensors, sketches, buckets=BUCKETS):
    """probe.bin (little-endian float64, [step][tensor][bucket]) then probe.json, its index."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "probe.bin"), "wb") as f:
        for per_step in sketches:
            for sk in per_step:
                if len(sk) != buckets:
                    raise ValueError("a sketch has %d buckets, not %d" % (len(sk), buckets))
                f.write(struct.pack("<%dd" % buckets, *sk))
    with open(os.path.join(folder, "probe.json"), "w") as f:
        json.dump({"steps": list(steps), "tensors": list(tensors), "buckets": buckets}, f)
        f.write("\n")
