#!/usr/bin/env python3
"""A trainer that speaks Lockstep's metrics protocol, well or in one of the ways a real one goes
wrong (tests/e2e/external_test.cpp). No torch: its "loss" is a fixed function of seed and step, so
a test knows every value it must find in the run folder.

    protocol_trainer.py --seed S --steps N --metrics FILE [--loss-offset X]
                                                              (mode from $TRAINER_MODE)

MODE: ok | slow | exit_nonzero | malformed | missing_field | out_of_order | fewer_steps | stall |
      nan
"""
import argparse
import json
import os
import sys
import time


def loss_at(seed, step):
    return 4.0 / (1.0 + 0.1 * step) + (seed % 97) * 1e-3 + 1.0 / 3.0  # 1/3: not exact in binary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default=os.environ.get("TRAINER_MODE", "ok"))
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--loss-offset", type=float, default=0.0)  # a "kernel" that changes the math
    a = ap.parse_args()
    assert os.environ["LOCKSTEP_METRICS"] == a.metrics, "LOCKSTEP_METRICS differs from {metrics}"
    assert os.environ["LOCKSTEP_SEED"] == str(a.seed), "LOCKSTEP_SEED differs from {seed}"
    print("protocol_trainer: mode", a.mode, "cwd", os.getcwd(), "tag", os.environ.get("TRAINER_TAG", ""))
    sys.stdout.flush()
    with open(a.metrics, "w") as out:
        for step in range(1, a.steps + 1):
            line = {"step": step, "loss": loss_at(a.seed, step) + a.loss_offset, "step_ms": 1.0 + step % 3,
                    "tokens": 64, "lr": 1e-3, "forward_ms": 0.25, "peak_memory_bytes": 1000 * step,
                    "ignored_field": "a trainer may log more"}
            text = json.dumps(line)
            if a.mode == "malformed" and step == 3:
                text = text[: len(text) // 2]  # a torn line, then the next one
            if a.mode == "missing_field" and step == 2:
                del line["step_ms"]
                text = json.dumps(line)
            if a.mode == "out_of_order" and step == 3:
                line["step"] = 4
                text = json.dumps(line)
            if a.mode == "nan" and step == 4:
                line["loss"] = None
                text = json.dumps(line)
            out.write(text + "\n")
            out.flush()
            if a.mode == "exit_nonzero" and step == 3:
                print("protocol_trainer: CUDA error: an illegal memory access was encountered", file=sys.stderr)
                sys.exit(7)
            if a.mode == "fewer_steps" and step == a.steps - 2:
                return
            if a.mode == "stall" and step == 2:
                time.sleep(600)
            time.sleep(0.2 if a.mode == "slow" else 0.002)


if __name__ == "__main__":
    main()
