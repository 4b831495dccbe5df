"""The noise envelope's weight noise (docs/method.md "Loss alignment: the noise envelope").

With LOCKSTEP_WEIGHT_NOISE = u > 0, each step computes with every weight matrix W (every
parameter of two or more dimensions) replaced by W * (1 + e), e ~ U(-u, u) drawn afresh per step
from (LOCKSTEP_NOISE_SEED, the run's seed, the step), and the optimizer updates the unperturbed W.
That is rounding-sized noise of the baseline's own math: the spread it causes in the loss is the
envelope an approximate change is judged against.
"""

import contextlib

import torch


@contextlib.contextmanager
def weight_noise(model, step, u=0.0, seed=0):
    """Forward and backward inside: W (1 + e); on exit W is restored, its gradient kept."""
    if u <= 0:
        yield
        return
    g = torch.Generator(device="cpu").manual_seed((seed * 1000003 + step) & 0x7FFFFFFFFFFFFFFF)
    saved = []
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() < 2:
                continue
            e = torch.rand(p.shape, generator=g, dtype=torch.float32).mul_(2 * u).sub_(u)
            saved.append((p, p.detach().clone()))
            p.mul_(1 + e.to(device=p.device, dtype=p.dtype))
    try:
        yield
    finally:
        with torch.no_grad():
            for p, w in saved:
                p.copy_(w)
