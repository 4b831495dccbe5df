#!/usr/bin/env python3
"""A trainer that speaks Lockstep's trainer protocol 2 through python/lockstep_trainer, well or in
one of the ways a real one goes wrong (tests/e2e/external_protocol_test.cpp). Its "loss" is the
fixed function of protocol_trainer.py, plus the weight noise's effect when asked; its "weights"
at step s are a vector the probe sketches.

    protocol2_trainer.py --seed S --steps N --metrics FILE [--loss-offset X] [--probe-drift D]
        $TRAINER_MODE: ok | hold_turn | die_holding_turn | bad_probe | bad_hello
        $TRAINER_SUPPORTS: what the hello announces (default "turns,noise,probe")
        $TRAINER_COMPUTE: the compute dtype the hello declares (Session(compute=...); default none)
        $TRAINER_AUTOCAST: bf16 (fp16 too on torch 2.x): a tiny forward under CPU autocast each
                           step, inside weight_noise, which the helper observes (loss unused)
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import lockstep_trainer as lt  # noqa: E402
import torch  # noqa: E402


def loss_at(seed, step):
    return 4.0 / (1.0 + 0.1 * step) + (seed % 97) * 1e-3 + 1.0 / 3.0


def weights(seed, step):  # what a checkpoint holds: 5000 numbers, a function of seed and step
    return torch.arange(5000, dtype=torch.float32) * (1.0 / (step + seed % 7 + 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--loss-offset", type=float, default=0.0)
    ap.add_argument("--probe-drift", type=float, default=0.0)  # the "kernel" scales its output
    a = ap.parse_args()
    mode = os.environ.get("TRAINER_MODE", "ok")
    supports = [c for c in os.environ.get("TRAINER_SUPPORTS", "turns,noise,probe").split(",") if c]
    ls = lt.Session(supports=supports, compute=os.environ.get("TRAINER_COMPUTE") or None)
    autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(os.environ.get("TRAINER_AUTOCAST", ""))
    layer = torch.nn.Linear(4, 4)

    if ls.probe_mode:
        steps, sketches = [], []
        for path in ls.probe_checkpoints:
            step = int(os.path.basename(path)[5:])
            w = torch.load(path)
            if ls.noise > 0:  # the noise of that step, as training would apply it
                g = torch.Generator().manual_seed(ls.noise_seed * 1000003 + step)
                w = w * (1 + (torch.rand(w.shape, generator=g) * 2 - 1) * ls.noise)
            out = w * (1 + a.probe_drift)
            per_tensor = []
            for i, t in enumerate((w, out)):
                sk = None
                for b in range(ls.probe_batches):
                    sk = lt.count_sketch(t, lt.sketch.salt_for(b, i), sk)
                per_tensor.append(sk.tolist())
            steps.append(step)
            sketches.append(per_tensor)
        lt.write_probe(ls.probe_out, steps, ["layer.in", "layer"], sketches)
        if mode == "bad_probe":  # a torn probe.bin under a complete index
            with open(os.path.join(ls.probe_out, "probe.bin"), "r+b") as f:
                f.truncate(1000)
        return

    with ls.metrics(a.metrics) as out:
        if mode == "bad_hello":
            out._f.seek(0)
            out._f.truncate()
            out._f.write('{"lockstep": {"protocol": "two"}}\n')
        for step in range(1, a.steps + 1):
            ls.turn().wait()
            t0 = time.perf_counter()
            time.sleep(0.003)
            loss = loss_at(a.seed, step) + a.loss_offset
            if autocast is not None:
                with ls.weight_noise(layer, step), torch.autocast("cpu", dtype=autocast):
                    layer(torch.ones(1, 4))
            if ls.noise > 0:  # the noise moves the loss by about u, a different way per noise seed
                g = torch.Generator().manual_seed(ls.noise_seed * 1000003 + step)
                loss += float(torch.rand(1, generator=g)) * 2 * ls.noise - ls.noise
            if ls.turn().active and step == 3:
                if mode == "hold_turn":  # keeps the turn: never hands it back
                    time.sleep(600)
                if mode == "die_holding_turn":
                    os._exit(9)
            out.step(step=step, loss=loss, step_ms=(time.perf_counter() - t0) * 1e3, tokens=64)
            ls.turn().hand_over()
            ls.checkpoint(step, lambda path: torch.save(weights(a.seed, step), path))


if __name__ == "__main__":
    main()
