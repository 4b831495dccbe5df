"""The session: what Lockstep asks of this run (its LOCKSTEP_* environment) and what the trainer
announced it supports (docs/protocol.md). Every capability the trainer did not announce, and
every variable Lockstep did not set, leaves the run exactly as it was.
"""

import json
import math
import os

import torch

from .noise import weight_noise
from .sketch import ProbeRecorder, splitmix64, write_probe
from .turn import Turn

PROTOCOL = 2
CAPABILITIES = ("turns", "noise", "probe")
# The compute dtypes a hello may declare ("compute"): the noise envelope's u is the declared one's
# unit roundoff (docs/protocol.md "The compute dtype").
COMPUTES = ("fp32", "tf32", "bf16", "fp16")
_DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def _compiling():
    """True while torch.compile traces (the observer then records nothing)."""
    for mod in ("compiler", "_dynamo"):
        f = getattr(getattr(torch, mod, None), "is_compiling", None)
        if f is not None:
            return bool(f())
    return False


def autocast_compute():
    """The name of the autocast dtype in effect now ("bf16", "fp16", "fp32"), or None."""
    get = getattr(torch, "get_autocast_dtype", None)  # torch >= 2.4
    for dev in ("cuda", "cpu"):
        if get is not None:
            on, dtype = torch.is_autocast_enabled(dev), lambda: get(dev)
        elif dev == "cuda":
            on, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype
        else:
            on, dtype = torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype
        if on:
            return _DTYPE_NAMES.get(dtype())
    return None


def _steps(value):
    return [int(s) for s in value.split(",") if s.strip()] if value else []


def checkpoint_step(path):
    """The step of a checkpoint path named step-NNNNNNNN (Lockstep's naming)."""
    base = os.path.basename(os.path.normpath(path))
    if not base.startswith("step-") or not base[5:].isdigit():
        raise ValueError("%s: a probe checkpoint is named step-NNNNNNNN" % path)
    return int(base[5:])


class Metrics:
    """The metrics file: the hello line first, then one JSON line per step, flushed each time."""

    def __init__(self, session, path):
        self._session = session
        self._f = open(path, "w")
        self._f.write(json.dumps(session.hello()) + "\n")
        self._f.flush()

    def step(self, step, loss, step_ms, tokens, **extra):
        loss = float(loss)
        line = {"step": step, "loss": loss if math.isfinite(loss) else None,
                "step_ms": step_ms, "tokens": tokens}
        seen = self._session.take_observed_compute()
        if seen:
            line["observed_compute"] = seen  # once: what the helper saw, not what was declared
        for k, v in extra.items():
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            line[k] = v
        self._f.write(json.dumps(line) + "\n")
        self._f.flush()

    def close(self):
        if self._f:
            self._session.finish()
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Session:
    def __init__(self, supports=CAPABILITIES, env=None, compute=None):
        env = os.environ if env is None else env
        unknown = set(supports) - set(CAPABILITIES)
        if unknown:
            raise ValueError("unknown capabilities: %s" % ", ".join(sorted(unknown)))
        if compute is not None and compute not in COMPUTES:
            raise ValueError("compute must be one of %s, got %r" % (", ".join(COMPUTES), compute))
        # The dtype the trainer computes in, declared in the hello: it sets the noise envelope's u.
        # Not declared, the helper watches the model's forward (weight_noise) for an autocast
        # dtype and reports what it saw on a step line, "observed_compute": shown, never used.
        self.compute = compute
        self._observed, self._observed_sent, self._watched = None, False, set()
        self.supports = tuple(c for c in CAPABILITIES if c in supports)
        self.seed = int(env.get("LOCKSTEP_SEED", "0") or 0)
        self._turn = Turn() if "turns" in self.supports else Turn(fd=-1)
        noise = "noise" in self.supports
        self.noise = float(env.get("LOCKSTEP_WEIGHT_NOISE", "0") or 0) if noise else 0.0
        self.noise_seed = int(env.get("LOCKSTEP_NOISE_SEED", "0") or 0) if noise else 0
        probe = "probe" in self.supports
        self.checkpoint_steps = set(_steps(env.get("LOCKSTEP_CHECKPOINT_STEPS"))) if probe else set()
        self.checkpoint_dir = env.get("LOCKSTEP_CHECKPOINT_DIR", "") if probe else ""
        self.probe_out = env.get("LOCKSTEP_PROBE_OUT", "") if probe else ""
        paths = env.get("LOCKSTEP_PROBE_CHECKPOINTS", "") if probe else ""
        self.probe_checkpoints = [p for p in paths.split(",") if p]
        self.probe_batches = int(env.get("LOCKSTEP_PROBE_BATCHES", "2") or 2)

    def hello(self):
        hello = {"protocol": PROTOCOL, "supports": list(self.supports)}
        if self.compute:
            hello["compute"] = self.compute
        return {"lockstep": hello}

    # -- compute ----------------------------------------------------------------------------------
    def _watch(self, model):
        """Without a declared compute: a forward pre-hook on the model that notes the autocast
        dtype in effect (read only: the forward's inputs and math are untouched)."""
        if self.compute or id(model) in self._watched or not hasattr(model, "register_forward_pre_hook"):
            return
        self._watched.add(id(model))

        def observe(module, inputs):
            if self._observed is None and not _compiling():
                self._observed = autocast_compute()

        model.register_forward_pre_hook(observe)

    def take_observed_compute(self):
        """What the helper saw the step compute in, the first time it is asked after seeing it."""
        if self._observed is None or self._observed_sent:
            return None
        self._observed_sent = True
        return self._observed

    def metrics(self, path=None):
        return Metrics(self, path or os.environ.get("LOCKSTEP_METRICS", "metrics.jsonl"))

    # -- turns ------------------------------------------------------------------------------------
    def turn(self):
        """`with session.turn():` around one step: waits for the turn, hands it back after."""
        return self._turn

    def finish(self):
        """After the last step (Metrics.close calls it): the peer's last step ends first."""
        if self._turn.active:
            self._turn.finish()

    # -- noise ------------------------------------------------------------------------------------
    def weight_noise(self, model, step):
        """Forward and backward inside compute with W (1 + e); the update sees W."""
        self._watch(model)
        seed = splitmix64(splitmix64(self.seed) ^ self.noise_seed) & 0x7FFFFFFFFFFFFFFF
        return weight_noise(model, step, self.noise, seed)

    # -- probe ------------------------------------------------------------------------------------
    def checkpoint(self, step, save):
        """Calls save(path) at the steps Lockstep names; path is CHECKPOINT_DIR/step-NNNNNNNN."""
        if step not in self.checkpoint_steps or not self.checkpoint_dir:
            return None
        os.makedirs(self.checkpoint_dir, exist_ok=True)
        path = os.path.join(self.checkpoint_dir, "step-%08d" % step)
        save(path + ".tmp")
        os.replace(path + ".tmp", path)  # a checkpoint is complete or absent
        return path

    @property
    def probe_mode(self):
        return bool(self.probe_out)

    def run_probe(self, model, load, forward, batches, modules=None, ops=True):
        """The probe run: at each checkpoint, load(path); then forward(batch) for each fixed
        batch (no grad, under the weight noise of that step), sketching `modules` (a dict or
        (name, module) pairs; default: every leaf module with parameters), with ops=True the
        outputs of the ops attention and normalization are made of (matmul, bmm, softmax,
        log_softmax, layer_norm, scaled_dot_product_attention: lockstep_trainer/ops.py, named
        PATH.OP by the module of `model` they run in), and what forward returns ("output").
        Writes LOCKSTEP_PROBE_OUT/probe.json and probe.bin."""
        if modules is None:
            modules = [(n, m) for n, m in model.named_modules()
                       if not list(m.children()) and list(m.parameters(recurse=False))]
        rec = ProbeRecorder(modules, ops_of=model if ops else None)
        steps, sketches, names = [], [], []
        try:
            with torch.no_grad():
                for path in self.probe_checkpoints:
                    step = checkpoint_step(path)
                    load(path)
                    with self.weight_noise(model, step):
                        for b, batch in enumerate(list(batches)[: self.probe_batches]):
                            rec.begin_forward(b)
                            out = forward(batch)
                            if torch.is_tensor(out):  # the logits, say: what the model returns
                                rec.add("output", out)
                            rec.end_forward()
                    names, per_tensor = rec.take()
                    steps.append(step)
                    sketches.append(per_tensor)
        finally:
            rec.close()
        write_probe(self.probe_out, steps, names, sketches)


