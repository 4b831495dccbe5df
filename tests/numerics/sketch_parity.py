#!/usr/bin/env python3
"""The Python helper's CountSketch for tests/numerics/sketch_parity_test.cpp: writes fp32 tensors
(raw little-endian, t<i>.f32) and the sketch of two probe batches of them (batch 1: each tensor
times 0.5) as probe files, for the C++ sketch to reproduce bit for bit.

    PYTHONPATH=python sketch_parity.py OUT_DIR
"""
import os
import struct
import sys

import torch

import lockstep_trainer as lt

SIZES = [1000, 4093 * 3, 4093 * 70 + 17, 300000]  # below m, a multiple of m, past a 2^18 chunk (x2)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(7)
    tensors = [torch.randn(n, generator=g, dtype=torch.float32) * (10.0 ** (i - 2)) for i, n in enumerate(SIZES)]
    # Magnitudes from 2^-40 to 2^40 in the last one: fp64 sums of them round, so only the same
    # order of summation gives the same bits (with a narrow range the sums are exact in any order).
    wide = torch.randint(-40, 41, (SIZES[-1],), generator=g).to(torch.float32)
    tensors[-1] = tensors[-1] * torch.pow(2.0, wide)
    for i, t in enumerate(tensors):
        with open(os.path.join(out, "t%d.f32" % i), "wb") as f:
            f.write(struct.pack("<%df" % t.numel(), *t.tolist()))  # fp32 -> double -> fp32: exact
    rec = lt.ProbeRecorder([])
    for b, scale in ((0, 1.0), (1, 0.5)):
        rec.begin_forward(b)
        for t in tensors:
            rec.add("t", t * scale)
        rec.end_forward()
    names, sketches = rec.take()
    lt.write_probe(out, [0], names, [sketches])


if __name__ == "__main__":
    main()
