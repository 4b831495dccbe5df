#!/usr/bin/env python3
"""A short nanoGPT-style training run that reports to Lockstep as an external trainer.

A GPT (token + position embeddings, pre-LayerNorm blocks of causal self-attention and a GELU MLP,
weight-tied head) trained with AdamW, linear warmup then cosine decay, on a synthetic Markov
stream that is a pure function of the seed. One JSON line per step goes to --metrics, in
Lockstep's metrics protocol (docs/extending.md "An external trainer"): step, loss, step_ms, tokens, and the
optional grad_norm, lr and phase times.

    python3 train.py --seed 1234 --steps 60 --metrics m.jsonl [--dtype fp32|bf16]

--dtype bf16 runs forward and backward under CPU autocast (master weights and AdamW stay fp32),
the optimization examples/external/bf16.toml gates. Debian's python3-torch (1.13) is enough.

It speaks Lockstep's trainer protocol 2 through the helper in python/lockstep_trainer (found next
to this repository, or installed): it takes turns with its peer in timing runs, computes with the
noise envelope's weight noise when asked, and writes checkpoints and function-probe sketches, so
its comparisons get the same gate as Lockstep's own trainer (docs/protocol.md). --logit-drift D
plants a bug for the gate to find: attention logits scaled by 1 + D.

Two optimizations that only PyTorch 2.x has (examples/external/compile.toml and sdpa.toml; run them
on the project venv's torch 2.11, `./lockstep cuda compare ...` puts it first in PATH):
--compile runs the training forward and backward through torch.compile (Inductor; on the CPU it
generates and compiles C++), and the probe judges the compiled function's logits (the tensors
inside come from an eager forward: a compiled graph runs no hooks); --attention sdpa computes
attention with F.scaled_dot_product_attention (on the CPU, PyTorch's flash kernel) instead of the
explicit softmax(q k^T) v, so the scores are never stored (a probe forward computes them for the
probe alone, from the kernel's own q and k).
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


def compiling():
    """Whether torch.compile is tracing this code (PyTorch 2.x): the probe's recording (Python side
    effects) stays out of compiled graphs."""
    return hasattr(torch, "compiler") and torch.compiler.is_compiling()


class Block(nn.Module):
    def __init__(self, d, heads, logit_drift=0.0, name="block", sdpa=False):
        super().__init__()
        self.heads, self.logit_scale, self.name, self.sdpa = heads, 1.0 + logit_drift, name, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)  # (B, T, C) each
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        scale = self.logit_scale / math.sqrt(C // self.heads)
        if self.sdpa:  # one fused kernel: softmax(q k^T * scale, causal) v, the scores never stored
            if lt.ProbeRecorder.active is not None:  # a probe forward: the scores the kernel
                lt.record(self.name + ".attn_logits", (q @ k.transpose(-2, -1)) * scale)  # softmaxes
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))
        att = (q @ k.transpose(-2, -1)) * scale  # (B, H, T, T)
        if not compiling():  # the probe sees the scores (no-op in training)
            lt.record(self.name + ".attn_logits", att)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, T, d, layers, heads, logit_drift=0.0, sdpa=False):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, heads, logit_drift, "blocks.%d" % i, sdpa) for i in range(layers))
        self.ln = nn.LayerNorm(d)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "out.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def logits(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.ln(x) @ self.tok.weight.t()  # (B, T, V), tied head

    def forward(self, idx, targets):
        logits = self.logits(idx)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def markov_batch(succ, g, B, T):
    """B sequences of T+1 tokens: each token's successor is one of `fanout` drawn with p ~ 2^-k."""
    V, fanout = succ.shape
    probs = torch.tensor([2.0 ** -k for k in range(fanout)])
    seq = torch.empty(B, T + 1, dtype=torch.long)
    seq[:, 0] = torch.randint(V, (B,), generator=g)
    for t in range(T):
        pick = torch.multinomial(probs.expand(B, fanout), 1, generator=g).squeeze(1)
        seq[:, t + 1] = succ[seq[:, t], pick]
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--metrics", default=os.environ.get("LOCKSTEP_METRICS", "metrics.jsonl"))
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--logit-drift", type=float, default=0.0)
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (PyTorch 2.x: Inductor)")
    ap.add_argument("--attention", choices=["math", "sdpa"], default="math",
                    help="sdpa: F.scaled_dot_product_attention (PyTorch 2.x) instead of the explicit scores")
    ap.add_argument("--slowdown-pct", type=float, default=0.0,
                    help="a planted slowdown made of real work: GEMMs for this percent of the step's time")
    args = ap.parse_args()
    # The hello declares the dtype the step computes in: it sets the noise envelope's u.
    ls = lt.Session(supports=("turns", "noise", "probe"), compute=args.dtype)
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.dtype == "bf16")  # noqa: E731

    torch.set_num_threads(1)  # a fixed thread count: part of determinism
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    if (args.compile or args.attention == "sdpa") and not hasattr(torch, "compile"):
        sys.exit("train.py: --compile and --attention sdpa need PyTorch 2.x; this is torch %s "
                 "(run on the project venv: ./lockstep cuda ...)" % torch.__version__)
    model = GPT(args.vocab, args.seq, args.d_model, args.layers, args.heads, args.logit_drift,
                sdpa=args.attention == "sdpa")
    # The same parameters, one compiled callable over them: training and the probe both call it.
    step_model = torch.compile(model) if args.compile else model
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(args.seed)
    succ = torch.randint(args.vocab, (args.vocab, 4), generator=g)  # the data's Markov chain
    warmup, min_lr = max(1, args.steps // 10), args.lr / 10

    if ls.probe_mode:  # forwards at the baseline's checkpoints, on batches no step has seen
        probe_g = torch.Generator().manual_seed(args.seed + 1_000_003)
        batches = [markov_batch(succ, probe_g, args.batch, args.seq)[0] for _ in range(ls.probe_batches)]
        # Compiled, the probe judges what the compiled function returns, the logits. A compiled
        # graph runs no Python side effects (module hooks, lt.record), so the tensors inside come
        # from an eager forward at the same weights first, and the recording pauses meanwhile.
        compiled = torch.compile(model.logits) if args.compile else None
        def forward(x):
            with autocast():
                eager = model.logits(x)  # (B, T, V)
                if compiled is None:
                    return eager
                rec, lt.ProbeRecorder.active = lt.ProbeRecorder.active, None
                rec._active = False
                try:
                    return compiled(x)
                finally:
                    rec._active, lt.ProbeRecorder.active = True, rec
        # ops=False: this trainer names its attention tensors itself (lt.record), the same in
        # every arm, where the helper's op records would differ between the explicit attention
        # (matmul, softmax, matmul) and sdpa.toml's fused one (docs/protocol.md "What a probe records").
        ls.run_probe(model, load=lambda path: model.load_state_dict(torch.load(path)),
                     forward=forward, batches=batches, ops=False)
        return

    with ls.metrics(args.metrics) as out:
        for step in range(1, args.steps + 1):
            ls.turn().wait()  # timing runs take turns with their peer: the clock starts after
            t0 = time.perf_counter()
            x, y = markov_batch(succ, g, args.batch, args.seq)
            t1 = time.perf_counter()
            with ls.weight_noise(model, step):  # W (1 + e) for the forward and backward only
                with autocast():
                    loss = step_model(x, y)
                t2 = time.perf_counter()
                loss.backward()
            t3 = time.perf_counter()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
            progress = max(0.0, (step - warmup) / max(1, args.steps - warmup))
            lr = args.lr * step / warmup if step <= warmup else min_lr + 0.5 * (args.lr - min_lr) * (1 + math.cos(math.pi * progress))
            for group in opt.param_groups:
                group["lr"] = lr
            opt.step()
            opt.zero_grad(set_to_none=True)
            value = loss.item()
            if args.slowdown_pct > 0:  # the planted slowdown: real arithmetic, its result unused
                until = time.perf_counter() + (time.perf_counter() - t0) * args.slowdown_pct / 100
                a = torch.ones(64, 64)
                while time.perf_counter() < until:
                    a = (a @ a).clamp_(-1, 1)
            t4 = time.perf_counter()
            out.step(step=step, loss=value, step_ms=(t4 - t0) * 1e3, tokens=args.batch * args.seq,
                     grad_norm=grad_norm, lr=lr, data_ms=(t1 - t0) * 1e3, forward_ms=(t2 - t1) * 1e3,
                     backward_ms=(t3 - t2) * 1e3, optimizer_ms=(t4 - t3) * 1e3)
            ls.turn().hand_over()
            ls.checkpoint(step, lambda path: torch.save(model.state_dict(), path))


if __name__ == "__main__":
    main()
