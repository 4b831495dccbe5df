"""Lockstep's trainer protocol v2 for PyTorch trainers (docs/protocol.md).

A trainer announces what it supports on a hello line, then uses exactly that:

    import lockstep_trainer as lt

    ls = lt.Session(supports=("turns", "noise", "probe"),   # reads the LOCKSTEP_* environment
                    compute="bf16")                          # the dtype it computes in: sets u
    if ls.probe_mode:                                        # a probe run: forwards only
        ls.run_probe(model, load=load_checkpoint, batches=probe_batches, modules=model.blocks)
        return
    with ls.metrics(args.metrics) as out:                    # writes the hello line first
        for step in range(1, steps + 1):
            with ls.turn():                                  # waits for the turn; hands it back
                t0 = time.perf_counter()
                x, y = batch()
                with ls.weight_noise(model, step):           # forward/backward on W (1 + e)
                    loss = model(x, y); loss.backward()
                opt.step(); opt.zero_grad()                  # updates the unperturbed W
                out.step(step=step, loss=loss.item(), step_ms=..., tokens=...)
            ls.checkpoint(step, lambda path: torch.save(state(), path))

Without Lockstep's environment every call is a no-op (the trainer runs as before). Nothing here
needs more than the standard library and torch.
"""

from .protocol import PROTOCOL, Session, Metrics
from .sketch import BUCKETS, count_sketch, splitmix64, ProbeRecorder, record, write_probe
from .turn import Turn
from .noise import weight_noise
from .ops import OPS

__all__ = ["PROTOCOL", "Session", "Metrics", "Turn", "weight_noise", "BUCKETS", "count_sketch",
           "splitmix64", "ProbeRecorder", "record", "write_probe", "OPS"]
