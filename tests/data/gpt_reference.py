#!/usr/bin/python3
"""Reference values for tests/numerics/numerics_test.cpp: a GPT written again, independently
of Lockstep.

This is not Lockstep's model code: every piece (embeddings, LayerNorm, causal attention, exact
GELU, tied head, cross-entropy, AdamW) is written out here from its definition with plain tensor
ops, in float64. Only the shapes and parameter names follow workloads/gpt.h, so that the C++ test
can load the weights by name.

What it writes (gpt_reference.pt, a dict for torch.save / torch::pickle_load):
  hp.<key>            the shape (int64) and AdamW hyper-parameters (float64), 0-d tensors
  x, y                token ids and targets, (B, T) int64
  weight.<name>       the initial weights, float32 (so Lockstep's fp32 model starts from exactly them)
  logits              (B, T, V) float64, from the float32 weights cast to float64
  loss                () float64, mean cross-entropy
  grad.<name>         d loss / d weight, float64
  updated.<name>      the weights after one AdamW step (decay on matrices and embeddings only)

The weights are not Lockstep's init (N(0, 0.02), LayerNorm 1/0, zero biases): LayerNorm gains
and every bias are random too, so a kernel that drops one of them shows.

Debian's python3-torch (1.13), on purpose: the independent reference both builds are checked
against, on another LibTorch than the wheel build's (the example trainers and the benches run on
each build's own: tests/e2e/cli_util.h build_python_first).

Regenerate (Debian 12: apt-get install python3-torch), from the repository root:
  /usr/bin/python3 tests/data/gpt_reference.py tests/data/gpt_reference.pt
The output is deterministic for a given torch version (written with torch 1.13.1).
"""
import math
import sys

import torch

B, T, C, L, H, V = 2, 8, 32, 2, 2, 64
LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 1e-2, 0.9, 0.95, 1e-8, 0.1
LN_EPS = 1e-5
SEED = 20261130


def make_weights(gen):
    """Parameter name -> float32 tensor, in workloads/gpt.h's naming."""
    def normal(shape, std):
        return torch.randn(shape, generator=gen, dtype=torch.float32) * std

    w = {"wte.weight": normal((V, C), 0.02), "wpe.weight": normal((T, C), 0.02)}
    proj_std = 0.02 / math.sqrt(2 * L)
    for i in range(L):
        p = f"h.{i}."
        w[p + "ln_1.weight"] = 1.0 + normal((C,), 0.1)
        w[p + "ln_1.bias"] = normal((C,), 0.02)
        w[p + "attn.c_attn.weight"] = normal((3 * C, C), 0.02)
        w[p + "attn.c_attn.bias"] = normal((3 * C,), 0.02)
        w[p + "attn.c_proj.weight"] = normal((C, C), proj_std)
        w[p + "attn.c_proj.bias"] = normal((C,), 0.02)
        w[p + "ln_2.weight"] = 1.0 + normal((C,), 0.1)
        w[p + "ln_2.bias"] = normal((C,), 0.02)
        w[p + "mlp.c_fc.weight"] = normal((4 * C, C), 0.02)
        w[p + "mlp.c_fc.bias"] = normal((4 * C,), 0.02)
        w[p + "mlp.c_proj.weight"] = normal((C, 4 * C), proj_std)
        w[p + "mlp.c_proj.bias"] = normal((C,), 0.02)
    w["ln_f.weight"] = 1.0 + normal((C,), 0.1)
    w["ln_f.bias"] = normal((C,), 0.02)
    return w


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased, as LayerNorm
    return (x - mu) / torch.sqrt(var + LN_EPS) * g + b


def linear(x, w, b):
    return x @ w.t() + b


def gelu(x):  # exact (erf) GELU
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def attention(x, p):
    qkv = linear(x, p["attn.c_attn.weight"], p["attn.c_attn.bias"])  # (B, T, 3C)
    q, k, v = qkv.split(C, dim=2)
    hd = C // H
    q, k, v = (t.reshape(B, T, H, hd).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)  # (B, H, T, T)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.exp(scores - scores.amax(-1, keepdim=True))
    probs = probs / probs.sum(-1, keepdim=True)
    y = (probs @ v).transpose(1, 2).reshape(B, T, C)
    return linear(y, p["attn.c_proj.weight"], p["attn.c_proj.bias"])


def forward(w, x):
    h = w["wte.weight"][x] + w["wpe.weight"][torch.arange(T)]  # (B, T, C)
    for i in range(L):
        p = {k[len(f"h.{i}."):]: t for k, t in w.items() if k.startswith(f"h.{i}.")}
        h = h + attention(layer_norm(h, p["ln_1.weight"], p["ln_1.bias"]), p)
        m = layer_norm(h, p["ln_2.weight"], p["ln_2.bias"])
        h = h + linear(gelu(linear(m, p["mlp.c_fc.weight"], p["mlp.c_fc.bias"])),
                       p["mlp.c_proj.weight"], p["mlp.c_proj.bias"])
    h = layer_norm(h, w["ln_f.weight"], w["ln_f.bias"])
    return h @ w["wte.weight"].t()  # (B, T, V), head tied to wte


def cross_entropy(logits, y):
    z = logits.reshape(-1, V)
    lse = z.amax(-1) + torch.log(torch.exp(z - z.amax(-1, keepdim=True)).sum(-1))
    return (lse - z.gather(1, y.reshape(-1, 1)).squeeze(1)).mean()


def adamw_step(w, g):
    """One AdamW update (t = 1), written out: decoupled decay on matrices and embeddings only."""
    out = {}
    bc1, bc2 = 1 - BETA1, 1 - BETA2
    for k, p in w.items():
        m = (1 - BETA1) * g[k]
        v = (1 - BETA2) * g[k] * g[k]
        decayed = p - LR * WEIGHT_DECAY * p if p.dim() >= 2 else p
        out[k] = decayed - (LR / bc1) * m / (torch.sqrt(v) / math.sqrt(bc2) + EPS)
    return out


def self_check(w, x, y, logits, loss, g, updated):
    """The written-out pieces against torch's own modules (a check of this script, not of Lockstep)."""
    import torch.nn.functional as F
    with torch.no_grad():
        h = w["wte.weight"][x] + w["wpe.weight"][torch.arange(T)]
        ln = F.layer_norm(h, (C,), w["h.0.ln_1.weight"], w["h.0.ln_1.bias"], eps=LN_EPS)
        assert torch.allclose(ln, layer_norm(h, w["h.0.ln_1.weight"], w["h.0.ln_1.bias"]),
                              rtol=0, atol=1e-12)
        assert torch.allclose(F.gelu(h), gelu(h), rtol=0, atol=1e-12)
        ce = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        assert abs(ce.item() - loss.item()) < 1e-12
    params = {k: t.detach().clone().requires_grad_(True) for k, t in w.items()}
    opt = torch.optim.AdamW(
        [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": WEIGHT_DECAY},
         {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}],
        lr=LR, betas=(BETA1, BETA2), eps=EPS)
    for k, p in params.items():
        p.grad = g[k].clone()
    opt.step()
    for k, p in params.items():
        assert torch.allclose(p.detach(), updated[k], rtol=0, atol=1e-12), k


def main(path):
    gen = torch.Generator().manual_seed(SEED)
    w32 = make_weights(gen)
    x = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
    y = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
    w = {k: t.to(torch.float64).requires_grad_(True) for k, t in w32.items()}
    logits = forward(w, x)
    loss = cross_entropy(logits, y)
    grads = torch.autograd.grad(loss, list(w.values()))
    g = dict(zip(w.keys(), grads))
    with torch.no_grad():
        updated = adamw_step({k: t.detach() for k, t in w.items()}, g)
    self_check({k: t.detach() for k, t in w.items()}, x, y, logits.detach(), loss.detach(), g,
               updated)
    out = {f"hp.{k}": torch.tensor(v, dtype=torch.float64 if isinstance(v, float) else torch.int64)
           for k, v in dict(
        batch=B, seq_len=T, d_model=C, n_layers=L, n_heads=H, vocab_size=V, lr=LR, beta1=BETA1,
        beta2=BETA2, eps=EPS, weight_decay=WEIGHT_DECAY).items()}
    out.update(x=x, y=y, logits=logits.detach(), loss=loss.detach())
    for k in w:
        out[f"weight.{k}"] = w32[k]
        out[f"grad.{k}"] = g[k]
        out[f"updated.{k}"] = updated[k]
    torch.save(out, path)
    print(f"{path}: loss {loss.item():.12f}, {len(w)} parameters", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpt_reference.pt")
