#!/usr/bin/env python3
"""The peer of bench/host_work_bench.cpp (issue 52): the same GPT step in PyTorch eager, driven
from Python on the same LibTorch, at the same shapes, written the way a plain fast trainer would
(nanoGPT's habits: gradients set to None rather than zeroed, one autocast region around the
forward and the loss, torch's default AdamW with decay on matrices only, the loss and the
gradient norm read once per step, after it). LibTorch 1.13's default AdamW on the CPU reads each
parameter's step count (one sync per parameter); foreach=True reads it twice, so the default stays.

  python3 bench/host_work_eager.py DTYPE [TIMED_STEPS] [COUNTED_STEPS]   (DTYPE: fp32 | bf16)

Prints one JSON object: ms_per_step (median over TIMED_STEPS after 10 warm-up steps) and, over
COUNTED_STEPS under the autograd profiler, aten operators per step (every aten::* event, nested
ones included, as RecordFunction reports them to LibTorch's profiler in C++ too), syncs per step
(aten::_local_scalar_dense), allocations per step (the profiler's memory records of LibTorch's
CPU allocator, profile_memory=True: every allocation of at least one byte, inside an operator or
not) and the operators by name.
"""
import collections
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

B, T, C, L, H, V = 1, 64, 64, 12, 4, 512
LR, BETAS, WD = 3e-3, (0.9, 0.95), 0.1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.attn_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).tril())

    def attn(self, x):
        q, k, v = self.c_attn(x).split(C, dim=2)  # each (B, T, C)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))  # (B, H, T, T)
        att = att.masked_fill(~self.mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.attn_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block() for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.register_buffer("pos", torch.arange(T))

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(self.pos)  # (B, T, C)
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # (B, T, V), tied head
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


def main():
    dtype = sys.argv[1]
    timed = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    counted = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    assert dtype in ("fp32", "bf16"), dtype
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    model = GPT()
    params = list(model.parameters())
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD},
                             {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=BETAS)
    gen = torch.Generator().manual_seed(1)

    def step():
        tokens = torch.randint(0, V, (B, T + 1), generator=gen)  # (B, T+1)
        x, y = tokens[:, :-1], tokens[:, 1:]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = model(x, y)
        loss.backward()
        norm = torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item(), norm.item()  # after the step: the step's only reads

    for _ in range(10):
        step()
    ms = []
    for _ in range(timed):
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    ops = collections.Counter()
    with torch.autograd.profiler.profile(profile_memory=True) as prof:
        for _ in range(counted):
            step()
    for e in prof.function_events:
        if e.name.startswith("aten::"):
            ops[e.name] += 1
    # The allocator's records (function_events folds those inside an operator into its usage).
    allocs = sum(1 for e in prof.kineto_results.events() if e.name() == "[memory]" and e.nbytes() > 0)
    print(json.dumps({
        "dtype": dtype, "torch": torch.__version__,
        "ms_per_step": ms[len(ms) // 2],
        "ops_per_step": sum(ops.values()) / counted,
        "syncs_per_step": ops["aten::_local_scalar_dense"] / counted,
        "allocs_per_step": allocs / counted,
        "ops": {k: v / counted for k, v in ops.most_common()},
    }))


if __name__ == "__main__":
    main()
