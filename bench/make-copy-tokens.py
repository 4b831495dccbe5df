#!/usr/bin/env python3
# A token file (`data.source = "tokens"`, raw uint16) where attention carries the information:
# token i copies token i - LAG, except with probability EPS it is uniform over the vocabulary.
# Used to ask whether the alignment rule sees `logit_scale_drift` on a workload where attention
# matters but the data is not text (bench/RESULTS.md, "Loss alignment").
# usage: bench/make-copy-tokens.py LAG EPS OUT.bin [N_TOKENS=1048576] [VOCAB=512] [SEED=7]
import random
import struct
import sys

lag, eps, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 20
vocab = int(sys.argv[5]) if len(sys.argv) > 5 else 512
rng = random.Random(int(sys.argv[6]) if len(sys.argv) > 6 else 7)
x = [rng.randrange(vocab) for _ in range(lag)]
for i in range(lag, n):
    x.append(rng.randrange(vocab) if rng.random() < eps else x[i - lag])
with open(out, "wb") as f:
    f.write(struct.pack("<%dH" % n, *x))
