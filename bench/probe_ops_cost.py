#!/usr/bin/env python3
"""The probe's cost beyond its forwards (issue 54): one probe forward of
examples/external/inline_attention.py's model at gpt2-124m's shapes (d 768, 12 layers, 12 heads,
V 50257, T 1024, batch 1; fp32, no grad, 1 thread as the example trainers run), timed three ways,
interleaved round by round so machine load hits each alike:
  plain     the forward alone
  modules   with the helper's module records (leaf modules with parameters, and the output)
  ops       with the module records and the op records (the default of Session.run_probe)
Prints the median seconds of each and the probe's time beyond the forward, (t - plain) / plain.
    PYTHONPATH=python python3 bench/probe_ops_cost.py [--seq 1024] [--rounds 3]
"""
import argparse
import os
import statistics
import sys
import time

import torch

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "python"))
sys.path.insert(0, os.path.join(root, "examples", "external"))
import lockstep_trainer as lt  # noqa: E402
from inline_attention import Model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model(a.vocab, a.seq, a.d_model, a.layers, a.heads, 0.0).eval()
    x = torch.randint(a.vocab, (1, a.seq), generator=torch.Generator().manual_seed(1))
    leaves = [(n, m) for n, m in model.named_modules()
              if not list(m.children()) and list(m.parameters(recurse=False))]
    recorders = {"plain": None, "modules": lt.ProbeRecorder(leaves),
                 "ops": lt.ProbeRecorder(leaves, ops_of=model)}
    times = {k: [] for k in recorders}
    counts = {}
    with torch.no_grad():
        model(x)  # warm-up
        for _ in range(a.rounds):
            for k, rec in recorders.items():
                t0 = time.perf_counter()
                if rec is not None:
                    rec.begin_forward(0)
                out = model(x)
                if rec is not None:
                    rec.add("output", out)
                    rec.end_forward()
                times[k].append(time.perf_counter() - t0)
                if rec is not None:
                    counts[k] = (len(rec.names), sum(1 for _ in rec.names))
    med = {k: statistics.median(v) for k, v in times.items()}
    print("shape: d %d, %d layers, %d heads, V %d, T %d, batch 1, %d thread(s), torch %s; load %s"
          % (a.d_model, a.layers, a.heads, a.vocab, a.seq, a.threads, torch.__version__,
             " ".join("%.2f" % l for l in os.getloadavg())))
    for k in recorders:
        extra = "" if k == "plain" else "  tensors %d  beyond the forward %+.1f%%" % (
            counts[k][0], 100 * (med[k] - med["plain"]) / med["plain"])
        print("%-8s median %.3f s  (%s)%s" % (k, med[k], ", ".join("%.3f" % t for t in times[k]), extra))
    print("op records alone: %+.1f%% of the forward"
          % (100 * (med["ops"] - med["modules"]) / med["plain"]))


if __name__ == "__main__":
    main()
