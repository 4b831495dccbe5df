#!/usr/bin/env python3
"""bench/gpu-check.sh's report: the items run so far (OUT/items.tsv) and their report.json /
summary.json, as one Markdown block for bench/RESULTS.md (OUT/gpu-check.md, also on stdout) and
one JSON file (OUT/gpu-check.json). Called after every item, so a cut or crashed call still leaves
what it measured. The machine's versions come from the machine (nvidia-smi, python3's torch),
captured once into OUT/env.json, never only from reports: a run that failed still names its GPU."""
import datetime
import json
import os
import subprocess

out = os.environ["GPU_CHECK_OUT"]
rehearse = os.environ.get("GPU_CHECK_REHEARSE") == "1"

COMPARES = {
    "bf16_vs_fused_attention": "bf16 vs bf16 + fused attention",
    "bf16_vs_all_three": "bf16 vs bf16 + fused attention + fused AdamW + CUDA graphs",
    "bf16_vs_cuda_graphs": "bf16 vs bf16 + CUDA graphs",
    "bf16_vs_fused_adamw": "bf16 vs bf16 + fused AdamW",
    "bf16_vs_fused_cuda": "bf16 vs bf16 + fused_cuda plugin (bias+GELU, LayerNorm)",
    "fp32_vs_tf32": "fp32 vs tf32",
}
RUNS = {
    "fp16_loss_scaling": "fp16, dynamic loss scaling",
    "nccl_1rank": "bf16, 1-rank NCCL group",
}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_env():
    path = os.path.join(out, "env.json")
    env = load(path)
    if env is not None:
        return env
    env = {"date": datetime.date.today().isoformat()}
    smi = sh("nvidia-smi", "--query-gpu=name,driver_version,compute_cap,memory.total",
             "--format=csv,noheader")
    if smi:
        parts = [p.strip() for p in smi.splitlines()[0].split(",")]
        env.update(zip(["gpu", "nvidia_driver", "compute_capability", "gpu_memory"], parts))
    torch = sh("python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)").split()
    if len(torch) == 2:
        env["torch"], env["torch_cuda"] = torch
    env["git_commit"] = sh("git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                           "--short=12", "HEAD")
    with open(path, "w") as f:
        json.dump(env, f, indent=1)
    return env


def num(x, fmt):
    return fmt.format(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else "-"


def pct(x):
    return num(x * 100, "{:.1f}%") if isinstance(x, (int, float)) else "unknown"


items = []
with open(os.path.join(out, "items.tsv")) as f:
    for line in f:
        name, kind, code, secs, note = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
        items.append({"name": name, "kind": kind, "exit": code, "seconds": secs, "note": note})

env = machine_env()
report_env = {}
rows, runs, results, conformance = [], [], [], []
for it in items:
    name = it["name"]
    res = dict(it)
    if it["kind"] == "compare":
        r = load(os.path.join(out, name, "report.json"))
        label = COMPARES.get(name, name)
        if r is None:
            rows.append("| %s | %s | | | | | | |" % (label, it["note"] or "no report (see %s.log)" % name))
        else:
            report_env = report_env or r.get("environment", {})
            b, v = r["baseline"], r["variant"]
            sdpa = "/".join(a.get("alignment_run", {}).get("environment", {}).get("sdpa_backend", "-")
                            for a in (b, v))
            d = r["delta"]["tokens_per_sec_pct"]
            a = r["alignment"]
            probe = (a.get("probe") or {})
            loss = "%s (diff %s%s)" % ("aligned" if a["aligned"] else "NOT ALIGNED",
                                       num(a.get("abs_diff"), "{:.1e}"),
                                       ", probe ratio %s" % num(probe.get("ratio_max"), "{:.2f}")
                                       if isinstance(probe.get("ratio_max"), (int, float)) else "")
            rows.append("| %s | %s / %s | %s (%s) | %s / %s | %s / %s | %s | %s | %s%s |" % (
                label, num(b["tokens_per_sec"], "{:,.0f}"), num(v["tokens_per_sec"], "{:,.0f}"),
                num(d["value"], "{:+.1f}%"), d["wording"], pct(b["mfu"]), pct(v["mfu"]),
                num(b["step_ms"]["p99"], "{:.1f}"), num(v["step_ms"]["p99"], "{:.1f}"), sdpa, loss,
                r["verdict"], " (indicative: %d repeats)" % r["repeats"] if r.get("too_few_repeats") else ""))
            res.update(verdict=r["verdict"], aligned=a["aligned"], loss_abs_diff=a.get("abs_diff"),
                       probe_max_ratio=probe.get("ratio_max"),
                       tokens_per_sec=[b["tokens_per_sec"], v["tokens_per_sec"]],
                       tokens_per_sec_delta_pct=d["value"], mfu=[b["mfu"], v["mfu"]],
                       p99_ms=[b["step_ms"]["p99"], v["step_ms"]["p99"]], sdpa_backend=sdpa)
    elif it["kind"] == "run":
        s = load(os.path.join(out, name, "summary.json"))
        label = RUNS.get(name, name)
        if name.startswith("determinism"):
            pass
        elif s is None:
            runs.append("| %s | %s | | | |" % (label, it["note"] or "failed (see %s.log)" % name))
        else:
            e = s.get("environment", {})
            report_env = report_env or e
            if name.startswith("fp16"):
                note = "%d overflow skips; final loss %s" % (s.get("overflow_skips", 0),
                                                           num(s.get("final_loss"), "{:.4f}"))
            else:
                note = "backend %s; comm %s of the step" % (
                    e.get("comm_backend", "?"), num(100 * s.get("phase_share", {}).get("comm", 0), "{:.1f}%"))
            runs.append("| %s | %s | %s | %s | %s |" % (
                label, num(s.get("tokens_per_sec"), "{:,.0f}"), pct(s.get("mfu")),
                num(s.get("step_ms", {}).get("p99"), "{:.1f}"), note))
            res.update(tokens_per_sec=s.get("tokens_per_sec"), mfu=s.get("mfu"),
                       p99_ms=s.get("step_ms", {}).get("p99"), final_loss=s.get("final_loss"))
    elif it["kind"] == "conformance":
        c = load(os.path.join(out, name + ".json"))
        if c is None:
            conformance.append("Kernel conformance: %s." % (it["note"] or "no result (see %s.log)" % name))
        else:
            failed = [r for r in c.get("rows", []) if not r.get("passed", False)]
            conformance.append("Kernel conformance (%s): **%s**, %d kernel(s), %d checks in %s s on %s%s." % (
                ", ".join(str(k) for k in c.get("kernels", [])), "pass" if c["passed"] else "FAIL",
                len(c.get("kernels", [])), len(c.get("rows", [])), num(c.get("seconds"), "{:.1f}"),
                c.get("device", "?"),
                "" if not failed else "; first failure: %s %s %s" % (
                    failed[0].get("kernel", "?"), failed[0].get("case", "?"), failed[0].get("direction", "?"))))
            res.update(passed=c["passed"], checks=len(c.get("rows", [])), failed_checks=len(failed))
    results.append(res)

determinism = next((it["note"] for it in items if it["name"] == "determinism"), "not run")
title = "GPU check rehearsal (CPU, tiny preset)" if rehearse else "GPU check"
gpu = env.get("gpu") or report_env.get("gpu") or ("CPU" if rehearse else "no GPU seen")
lines = ["### %s: %s, %s" % (title, gpu, env["date"]), ""]
lines.append(
    "`bench/gpu-check.sh` at commit %s: PyTorch %s (CUDA %s), NVIDIA driver %s, LibTorch in the runs "
    "%s, NCCL %s; `%s`, %s-step loss checks, %s timing repeats x 10 steps per arm. Build %s s; "
    "measure %s s. CUDA-labelled tests: %s." % (
        env.get("git_commit", "?"), env.get("torch", "-"), env.get("torch_cuda", "-"),
        env.get("nvidia_driver", "-"), report_env.get("libtorch", "-"), report_env.get("nccl", "-"),
        "tiny" if rehearse else "gpt2-124m (B 8 x T 1024)", os.environ["GPU_CHECK_STEPS"],
        os.environ["GPU_CHECK_REPEATS"], os.environ.get("GPU_CHECK_BUILD_S", "?"),
        os.environ["GPU_CHECK_WALL_S"], os.environ["GPU_CHECK_TESTS"]))
lines += ["", "| comparison | tokens/s (baseline / variant) | delta | MFU | P99 ms | SDPA backend | loss check | verdict |",
          "|---|---|---|---|---|---|---|---|"] + rows
lines += ["", "| run | tokens/s | MFU | P99 ms | notes |", "|---|---|---|---|---|"] + runs
lines += [""] + conformance
lines += ["", "Determinism (two runs, same config and seed): %s." % determinism]
cut = ["%s (%s)" % (it["name"], it["note"]) for it in items
       if it["note"].startswith("cut") or it["note"].startswith("not run")]
if cut:
    lines.append("Not run or cut short: %s." % "; ".join(cut))
lines.append("Seconds per item: %s." % ", ".join("%s %s" % (it["name"], it["seconds"]) for it in items))
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "gpu-check.md"), "w") as f:
    f.write(text)
with open(os.path.join(out, "gpu-check.json"), "w") as f:
    json.dump({"environment": env, "run_environment": report_env, "items": results,
               "determinism": determinism}, f, indent=1)
print(text, end="")
