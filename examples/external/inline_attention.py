#!/usr/bin/env python3
"""A small GPT whose attention is written inline, as ops, and that names nothing for the probe.

Another trainer than train.py, adopted from docs/protocol.md alone: separate q, k, v projections,
scores = torch.matmul(q, k^T) * scale, a causal mask, F.softmax, torch.matmul with v, a ReLU MLP,
an untied head; 3 layers, d 48, 3 heads, T 24, V 96, on a stream of phrases (16 fixed phrases of
6 tokens drawn from the seed, 10% of the tokens replaced at random), AdamW at a constant rate
after a warmup. Its probe calls `run_probe` with the defaults and no `lt.record`: the attention
scores are recorded only because the helper records ops (`blocks.0.attn.softmax`, ...).

    python3 inline_attention.py --seed 1234 --steps 40 --metrics m.jsonl [--dtype fp32|bf16]
                                [--logit-drift D]

--dtype bf16 runs forward and backward under CPU autocast (master weights and AdamW stay fp32).
--logit-drift D plants a bug: the attention scores multiplied by 1 + D (scale (1 + D) / sqrt(16)).
examples/external/inline.toml and inline-bf16.toml run it as Lockstep arms.
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import lockstep_trainer as lt  # noqa: E402  (the repository's copy, else an installed one)


class Attention(nn.Module):
    def __init__(self, d, heads, logit_drift):
        super().__init__()
        self.heads, self.scale = heads, (1.0 + logit_drift) / math.sqrt(d // heads)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for p in (self.q, self.k, self.v))  # (B, H, T, hd)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # (B, H, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        weights = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        y = torch.matmul(weights, v).transpose(1, 2).reshape(B, T, C)
        return self.o(y)


class Block(nn.Module):
    def __init__(self, d, heads, logit_drift):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, logit_drift)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.down(F.relu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, vocab, T, d, layers, heads, logit_drift):
        super().__init__()
        self.embed, self.position = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(T, d))
        self.blocks = nn.ModuleList(Block(d, heads, logit_drift) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        nn.init.normal_(self.position, 0.0, 0.02)

    def forward(self, idx):  # (B, T) -> logits (B, T, V)
        x = self.embed(idx) + self.position[: idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def phrase_batch(phrases, g, B, T, vocab):
    """B sequences of T+1 tokens: phrases picked at random, back to back, 10% of tokens noise."""
    P, L = phrases.shape
    n = (T + 1 + L - 1) // L + 1
    pick = torch.randint(P, (B, n), generator=g)
    seq = phrases[pick].view(B, n * L)
    offset = int(torch.randint(L, (1,), generator=g))
    seq = seq[:, offset: offset + T + 1].clone()
    noise = torch.rand(B, T + 1, generator=g) < 0.1
    seq[noise] = torch.randint(vocab, (int(noise.sum()),), generator=g)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--metrics", default=os.environ.get("LOCKSTEP_METRICS", "metrics.jsonl"))
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=24)
    ap.add_argument("--d-model", type=int, default=48)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=96)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--logit-drift", type=float, default=0.0)
    args = ap.parse_args()
    ls = lt.Session(supports=("turns", "noise", "probe"))
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.dtype == "bf16")  # noqa: E731

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    model = Model(args.vocab, args.seq, args.d_model, args.layers, args.heads, args.logit_drift)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    g = torch.Generator().manual_seed(args.seed)
    phrases = torch.randint(args.vocab, (16, 6), generator=g)

    if ls.probe_mode:  # batches of their own generator: no training step sees them
        probe_g = torch.Generator().manual_seed(args.seed + 7_000_001)
        batches = [phrase_batch(phrases, probe_g, args.batch, args.seq, args.vocab)[0]
                   for _ in range(ls.probe_batches)]

        def forward(x):
            with autocast():
                return model(x)
        ls.run_probe(model, load=lambda path: model.load_state_dict(torch.load(path)),
                     forward=forward, batches=batches)
        return

    warmup = max(1, args.steps // 8)
    with ls.metrics(args.metrics) as out:
        for step in range(1, args.steps + 1):
            ls.turn().wait()
            t0 = time.perf_counter()
            x, y = phrase_batch(phrases, g, args.batch, args.seq, args.vocab)
            for group in opt.param_groups:
                group["lr"] = args.lr * min(1.0, step / warmup)
            with ls.weight_noise(model, step):
                with autocast():
                    logits = model(x)
                loss = F.cross_entropy(logits.float().view(-1, args.vocab), y.view(-1))
                loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            value = loss.item()
            out.step(step=step, loss=value, step_ms=(time.perf_counter() - t0) * 1e3,
                     tokens=args.batch * args.seq)
            ls.turn().hand_over()
            ls.checkpoint(step, lambda path: torch.save(model.state_dict(), path))


if __name__ == "__main__":
    main()
