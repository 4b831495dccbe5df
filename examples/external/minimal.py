# A minimal external trainer: fits y = 3x by SGD and reports every step to Lockstep.
import argparse, json, random, time

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, required=True)
ap.add_argument("--steps", type=int, required=True)
ap.add_argument("--metrics", required=True)
args = ap.parse_args()
rng, w = random.Random(args.seed), 0.0
with open(args.metrics, "w") as out:
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        xs = [rng.uniform(-1, 1) for _ in range(256)]  # this step's batch: 256 "tokens"
        loss = sum((w * x - 3 * x) ** 2 for x in xs) / len(xs)
        grad = sum(2 * (w * x - 3 * x) * x for x in xs) / len(xs)
        w -= 0.05 * grad
        step_ms = (time.perf_counter() - t0) * 1e3
        line = {"step": step, "loss": loss, "step_ms": step_ms, "tokens": len(xs)}
        out.write(json.dumps(line) + "\n")
        out.flush()  # Lockstep reads the file as it grows
