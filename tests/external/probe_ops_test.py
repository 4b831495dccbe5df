#!/usr/bin/env python3
"""The helper's op records (python/lockstep_trainer/ops.py, docs/protocol.md "What a probe
records"), on real torch (the build's Python: ctest `python_probe_ops`): every spelling of the ops
is recorded once, named by module path and op, in forward order, with the sketch of the very tensor
the op returned; the forward's numbers do not change; nothing is recorded outside a probe forward,
inside paused(), or with ops off. Exit 0 when every check holds; each failure is printed.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "external"))
import lockstep_trainer as lt  # noqa: E402
from lockstep_trainer.sketch import salt_for  # noqa: E402
from inline_attention import Model  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


class Spellings(nn.Module):
    """No parameters: every op here is the module's own (an inline attention and norm)."""

    def forward(self, x):  # x (2, 3, 4)
        a = torch.matmul(x, x.transpose(-2, -1))   # matmul
        b = x @ x.transpose(-2, -1)                # matmul1 (Tensor.__matmul__)
        c = torch.bmm(x, x.transpose(1, 2))        # bmm
        d = x.bmm(x.transpose(1, 2))               # bmm1
        e = a.softmax(dim=-1)                      # softmax
        f = F.softmax(b, dim=-1)                   # softmax1 (calls Tensor.softmax: counted once)
        g = torch.softmax(c, dim=-1)               # softmax2
        h = F.log_softmax(d, dim=-1)               # log_softmax
        i = F.layer_norm(x, (4,))                  # layer_norm
        out = e + f + g + h + i.sum(-1, keepdim=True)
        if HAS_SDPA:
            out = out + F.scaled_dot_product_attention(x, x, x).sum(-1, keepdim=True)
        return out


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Spellings()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.inner(x) + self.inner(x)  # a module called twice: its ops counted on
        return torch.matmul(self.lin(x), x.transpose(-2, -1)) + y


def record(model, forward, x, ops=True, batch=0):
    leaves = [(n, m) for n, m in model.named_modules()
              if not list(m.children()) and list(m.parameters(recurse=False))]
    rec = lt.ProbeRecorder(leaves, ops_of=model if ops else None)
    with torch.no_grad():
        rec.begin_forward(batch)
        out = forward(x)
        rec.add("output", out)
        rec.end_forward()
    names, sketches = rec.take()
    rec.close()
    return names, sketches, out


def test_every_spelling_once_by_path_and_op():
    torch.manual_seed(0)
    model = Outer()
    x = torch.randn(2, 3, 4)
    names, _, _ = record(model, model, x)
    inner = ["matmul", "matmul1", "bmm", "bmm1", "softmax", "softmax1", "softmax2", "log_softmax",
             "layer_norm"] + (["scaled_dot_product_attention"] if HAS_SDPA else [])
    # The second call of `inner` continues its counts: matmul2, matmul3, bmm2, ...
    count = {}
    expect = []
    for _ in range(2):
        for n in inner:
            op = n.rstrip("0123456789")
            k = count.get(op, 0)
            count[op] = k + 1
            expect.append("inner." + (op if k == 0 else op + str(k)))
    # Then the Linear (a recorded leaf: its F.linear is no op of ours), the root's matmul, output.
    expect += ["lin.in", "lin", "matmul", "output"]
    check(names == expect, "names in forward order:\n  got    %s\n  expect %s" % (names, expect))


def test_sketch_is_the_op_output_and_forward_unchanged():
    torch.manual_seed(1)
    model = Model(vocab=17, T=8, d=12, layers=2, heads=3, logit_drift=0.0)
    x = torch.randint(17, (2, 8), generator=torch.Generator().manual_seed(2))
    names, sketches, out = record(model, model, x)
    with torch.no_grad():
        plain = model(x)
    check(torch.equal(out, plain), "the forward's output is bitwise the same with the op records")
    # The inline attention's ops sit between its v projection and its output projection's input.
    i = names.index("blocks.0.attn.v")
    check(names[i + 1: i + 5] == ["blocks.0.attn.matmul", "blocks.0.attn.softmax",
                                  "blocks.0.attn.matmul1", "blocks.0.attn.o.in"],
          "attention ops in order: %s" % names[i + 1: i + 5])
    # nn.LayerNorm is a recorded leaf: its F.layer_norm is not recorded a second time.
    check(not any(n.endswith("layer_norm") for n in names), "no layer_norm inside nn.LayerNorm: %s" % names)
    check(sum(n.endswith(".attn.softmax") for n in names) == 2, "one softmax per layer")
    # The softmax record is the sketch of the attention weights themselves.
    a = model.blocks[0].attn
    with torch.no_grad():
        h = model.embed(x) + model.position[:8]
        hn = model.blocks[0].norm1(h)
        B, T, C = hn.shape
        q, k, _ = (p(hn).view(B, T, 3, C // 3).transpose(1, 2) for p in (a.q, a.k, a.v))
        s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(4))
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        w = F.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
    j = names.index("blocks.0.attn.softmax")
    want = lt.count_sketch(w, salt_for(0, j)).tolist()
    check(sketches[j] == want, "blocks.0.attn.softmax's sketch is count_sketch(weights, salt(0, %d))" % j)
    # Deterministic: a second recording gives the same bits.
    names2, sketches2, _ = record(model, model, x)
    check(names2 == names and sketches2 == sketches, "the same forward records the same sketches")
    # ops off: the module records alone, as before.
    names3, _, _ = record(model, model, x, ops=False)
    check(names3 == [n for n in names if ".attn.matmul" not in n and ".attn.softmax" not in n],
          "ops=False records the modules only: %s" % names3)


def test_ops_inside_a_recorded_block_are_recorded():
    torch.manual_seed(5)
    model = Model(vocab=11, T=4, d=6, layers=1, heads=2, logit_drift=0.0)
    x = torch.randint(11, (1, 4), generator=torch.Generator().manual_seed(6))
    rec = lt.ProbeRecorder([("blocks.0", model.blocks[0])], ops_of=model)
    with torch.no_grad():
        rec.begin_forward(0)
        model(x)
        rec.end_forward()
    names = rec.names
    rec.close()
    # nn.LayerNorm is not recorded here (only the block is): its layer_norm op is.
    expect = ["blocks.0.norm1.layer_norm", "blocks.0.attn.matmul", "blocks.0.attn.softmax",
              "blocks.0.attn.matmul1", "blocks.0.norm2.layer_norm", "blocks.0.in", "blocks.0",
              "norm.layer_norm"]
    check(names == expect, "a recorded block's ops, then the block: %s" % names)


def test_nothing_outside_a_probe_forward():
    torch.manual_seed(3)
    model = Outer()
    x = torch.randn(2, 3, 4)
    leaves = [("lin", model.lin)]
    rec = lt.ProbeRecorder(leaves, ops_of=model)
    with torch.no_grad():
        model(x)  # no forward begun: nothing
        check(rec.names == [], "nothing recorded before begin_forward: %s" % rec.names)
        rec.begin_forward(0)
        with rec.paused():
            model(x)
        check(rec.names == [], "nothing recorded while paused: %s" % rec.names)
        torch.matmul(x, x.transpose(-2, -1))  # after the pause, recording again
        check(rec.names == ["matmul"], "recording resumes after paused(): %s" % rec.names)
        rec.end_forward()
        torch.matmul(x, x.transpose(-2, -1))
        check(rec.names == ["matmul"], "nothing recorded after end_forward: %s" % rec.names)
    rec.close()
    lt.record("x", x)  # outside a probe forward: a no-op
    check(lt.ProbeRecorder.active is None, "no recorder active after close")


def test_the_mismatch_is_named():
    torch.manual_seed(4)
    model = Outer()
    rec = lt.ProbeRecorder([], ops_of=model)
    x = torch.randn(2, 3, 4)
    with torch.no_grad():
        rec.begin_forward(0)
        torch.matmul(x, x.transpose(1, 2))
        rec.end_forward()
        rec.begin_forward(1)
        try:
            torch.bmm(x, x.transpose(1, 2))
            check(False, "a forward that records another op than the first raises")
        except RuntimeError as e:
            check("bmm" in str(e) and "matmul" in str(e), "the message names both: %s" % e)
        rec.end_forward()
    rec.close()


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
    print("torch %s, sdpa %s: %s" % (torch.__version__, HAS_SDPA, "FAILED" if failures else "ok"))
    sys.exit(1 if failures else 0)
