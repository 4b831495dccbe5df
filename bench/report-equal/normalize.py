#!/usr/bin/env python3
"""report.json with its timings neutralized, for bench/report-equal.sh (issue 53).

    normalize.py norm REPORT.json OUT.json STRIPPED.txt [--root DIR] [--out-dir DIR]
    normalize.py diff A.json B.json          # field paths that differ; exit 0 when none
    normalize.py noise A.json B.json NA.json NB.json
                                             # two raw reports of one binary and their normalized
                                             # forms: the paths that differ, each "strip" or
                                             # "LEFT" (differs after normalizing too: exit 1)
    normalize.py table STRIPPED.txt NOISE.txt  # the stripped paths, each marked "differed" or
                                             # "equal-twice" between the two runs

Every value a timing decides (wall and step times, tokens/s, MFU, latency percentiles, the
timing checks' statistics and verdict words, phase shares, the operators' ranking, served
counts under a load) and every value that names the machine or the build (host, git commit
and branch) is replaced by the string "<timing>" (or "<build>"), keeping its key and its place:
the structure, the key order and every value of the math stay as written. Numbers are kept as
the report's own text (never re-printed), so "equal" means the same digits. The rules are
below, each with the reason; `norm` lists the paths it replaced into STRIPPED.txt.
Python 3 standard library only.
"""
import json
import re
import sys

TIMING = "<timing>"
BUILD = "<build>"

# Checks whose figures are timing statistics (training: harness/gate; serving: the serving gate).
# Their value, CI, p, MDE and detail text are the timing's. Their `name` and `passed` stay (the
# policy's bounds are wide: bench/report-equal/*.toml, so `passed` is the gate's logic, not the
# machine's). A training check's `verdict` stays too: with 2 repeats per arm it is "inconclusive"
# whatever the timings (no Mann-Whitney p can reach alpha), so it pins the verdict logic; a serving
# check's verdict word is the timing's (a t-test over window pairs: seen to change run to run).
TIMING_CHECKS = {"throughput", "p99 latency", "min speedup", "slo attainment", "capacity"}
TIMING_CHECK_FIELDS = {"detail", "p_value", "p_adjusted", "mde_pct", "value", "ci", "p"}
SERVING_TIMING_CHECK_FIELDS = TIMING_CHECK_FIELDS | {"verdict"}

ARM = r"(baseline|variant)"
# (regex over the path, what it is, reason). A path is keys joined by ".", list items as "[]";
# a match replaces the whole value (a subtree counts once).
RULES = [
    # ---- the whole comparison
    (r"wall_seconds", TIMING, "wall time of the comparison"),
    (r"(.*\.)?environment\.host", BUILD, "host name"),
    (r"(.*\.)?environment\.(git_commit|git_branch|git_dirty)", BUILD,
     "the binary's build (before and after differ by design)"),
    (r"(.*\.)?environment\.gloo_device_loop", TIMING,
     "Gloo's event loop leaves SCHED_IDLE when a collective waited over 50 ms"),
    # ---- training comparison (harness/compare/result_json.cpp)
    (ARM + r"\.(tokens_per_sec|tokens_per_sec_ci|tokens_per_sec_repeats|mfu|mfu_common)", TIMING,
     "tokens/s and MFU of the timing repeats"),
    (ARM + r"\.step_ms\.(p50|p95|p99|mean|tail)", TIMING, "step latency of the timing repeats"),
    (ARM + r"\.(phase_share|phase_ms)\.[^.]+", TIMING, "phase times of the timing repeats"),
    (ARM + r"\.bound", TIMING, "compute/input/comm-bound, from the phase shares"),
    (ARM + r"\.top_ops", TIMING, "operators ranked by measured self time"),
    (ARM + r"\.alignment_run\.(tokens_per_sec|mfu)", TIMING, "the alignment run's speed"),
    (ARM + r"\.alignment_run\.(step_ms|phase_ms_mean|phase_share)\.[^.]+", TIMING,
     "the alignment run's step and phase times"),
    (ARM + r"\.alignment_run\.bound", TIMING, "from the alignment run's phase shares"),
    (ARM + r"\.alignment_run\.top_ops", TIMING, "operators ranked by measured time"),
    (ARM + r"\.alignment_run\.peak_rss_bytes", TIMING,
     "the process's resident set (the OS's paging, not the tensors)"),
    (ARM + r"\.alignment_run\.peak_flops", TIMING, "the CPU's measured GEMM peak (calibrate)"),
    (ARM + r"\.alignment_run\.memory_per_rank\[\]\.peak_allocated_bytes", TIMING,
     "each rank's peak: on 2 ranks rank 1's moved by 8 bytes run to run (when Gloo's buffers are"
     " freed); rank 0's stays as the arm's peak_memory_bytes, and the memory check stays"),
    (r"common_peak\.flops", TIMING, "the CPU's measured GEMM peak (calibrate)"),
    (r"delta\.(tokens_per_sec_pct|mfu_pts|mfu_common_pts|p50_ms_pct|p99_ms_pct)", TIMING,
     "timing deltas with their CI, p, significance and wording"),
    (r"power\.(tokens_per_sec_mde_pct|p99_mde_pct|p50_mde_pct)", TIMING,
     "minimum detectable effects from the repeats' timing noise"),
    (r"breakdown\.phases\[\]\.(baseline_share|variant_share|baseline_ms|variant_ms)", TIMING,
     "phase times side by side"),
    (r"breakdown\.(ops|findings)", TIMING, "operators and findings from measured times"),
    (r"conformance\.seconds", TIMING, "how long the conformance check took"),
    (r"sequential\.looks\[\]\.(minutes|verdicts)", TIMING, "wall clock and timing verdicts per look"),
    # ---- serving comparison (kind = "serve")
    (r"service_speed\." + ARM + r"\.(median_tokens_per_sec|seconds)", TIMING,
     "the fixed set's batches, timed in turns"),
    (r"capacity\." + ARM, TIMING, "capacity searches: rates found by latency probes"),
    (ARM + r"\.figures\[\]\.(served|unserved|throughput_rps|tokens_per_sec|padding_share|"
     r"latency_ms|queue_wait_ms|service_ms|mean_batch|slo_attainment|goodput_rps)", TIMING,
     "what the service did under the load in wall time (offered and rejected stay)"),
    (ARM + r"\.tail", TIMING, "the slowest 1% of requests and where their time went"),
    (ARM + r"\.windows\[\]\.(p99_ms|slo_attainment|busy_tokens_per_sec|max_send_lag_ms)", TIMING,
     "each window's latency and pace"),
]
COMPILED = [(re.compile(p + r"\Z"), what, why) for p, what, why in RULES]

# Durations inside a text that is otherwise the math's: "(0.5 s)" in the kernel conformance
# check's detail.
TEXT_MASKS = [(re.compile(r"\(\d+(\.\d+)? s\)"), "(<timing> s)", "its duration in seconds")]


class Raw(str):
    """A JSON number or constant as the report wrote it."""


class Obj(list):
    """An object: [(key, value), ...] in the report's order."""


def load_wrapped(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=Obj, parse_float=Raw, parse_int=Raw,
                         parse_constant=Raw)


def dump(v, indent=0):
    pad = " " * (indent + 1)
    if isinstance(v, Obj):
        if not v:
            return "{}"
        items = [pad + json.dumps(k, ensure_ascii=False) + ": " + dump(x, indent + 1) for k, x in v]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(v, list):
        if not v:
            return "[]"
        return "[\n" + ",\n".join(pad + dump(x, indent + 1) for x in v) + "\n" + " " * indent + "]"
    if isinstance(v, Raw):
        return str(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    return json.dumps(v, ensure_ascii=False)


def get(obj, key):
    for k, x in obj:
        if k == key:
            return x
    return None


def normalize(v, path, stripped, subst, serving=False):
    if path == "" and isinstance(v, Obj):
        serving = get(v, "kind") == "serve"
    if isinstance(v, str) and not isinstance(v, Raw):
        for old, new in subst:
            if old in v:
                v = v.replace(old, new)
                stripped.add((generic(path) + " ~ " + new, "a path: the run's own folder or the tree's"))
    if path:
        for rx, what, why in COMPILED:
            if rx.match(path):
                stripped.add((path, why))
                return what
    if isinstance(v, Obj):
        out = Obj()
        for k, x in v:
            out.append((k, normalize(x, path + "." + k if path else k, stripped, subst, serving)))
        if path == "checks[]" or path.endswith(".checks[]"):
            name = get(v, "name")
            if name in TIMING_CHECKS:
                fields = SERVING_TIMING_CHECK_FIELDS if serving else TIMING_CHECK_FIELDS
                for i, (k, x) in enumerate(out):
                    if k in fields:
                        out[i] = (k, TIMING)
                        stripped.add(("checks[name=%s].%s" % (name, k), "a timing check's statistic"))
            else:
                for i, (k, x) in enumerate(out):
                    if k == "detail" and isinstance(x, str):
                        for rx, repl, why in TEXT_MASKS:
                            if rx.search(x):
                                x = rx.sub(repl, x)
                                stripped.add(("checks[name=%s].detail ~ %s" % (name, rx.pattern), why))
                        out[i] = (k, x)
        return out
    if isinstance(v, list):
        return [normalize(x, path + "[]", stripped, subst, serving) for x in v]
    return v


def leaves(v, path, out):
    """(path, text) of every leaf, list items by index (checks by name); an object's path also
    records its keys' order, a list's its length."""
    if isinstance(v, Obj):
        out.append((path + "{keys}", json.dumps([k for k, _ in v], ensure_ascii=False)))
        for k, x in v:
            leaves(x, path + "." + k if path else k, out)
    elif isinstance(v, list):
        out.append((path + "[len]", str(len(v))))
        named = path.split(".")[-1] == "checks"
        for i, x in enumerate(v):
            name = get(x, "name") if named and isinstance(x, Obj) else None
            leaves(x, "%s[%s]" % (path, "name=" + name if isinstance(name, str) else i), out)
    else:
        out.append((path, dump(v)))
    return out


def differing(a, b):
    la, lb = dict(leaves(a, "", [])), dict(leaves(b, "", []))
    return [p for p in sorted(set(la) | set(lb)) if la.get(p) != lb.get(p)]


def generic(path):
    return re.sub(r"\[\d+\]", "[]", path)


def main(argv):
    if len(argv) >= 5 and argv[1] == "norm":
        src, dst, stripped_file = argv[2], argv[3], argv[4]
        opts = dict(zip(argv[5::2], argv[6::2]))
        subst = []
        if opts.get("--out-dir"):
            subst.append((opts["--out-dir"].rstrip("/"), "<OUT>"))
        if opts.get("--root"):
            subst.append((opts["--root"].rstrip("/"), "<ROOT>"))
        stripped = set()
        norm = normalize(load_wrapped(src), "", stripped, subst)
        with open(dst, "w", encoding="utf-8") as f:
            f.write(dump(norm) + "\n")
        with open(stripped_file, "w", encoding="utf-8") as f:
            for p, why in sorted(stripped):
                f.write("%s\t%s\n" % (p, why))
        return 0
    if len(argv) == 4 and argv[1] == "diff":
        d = differing(load_wrapped(argv[2]), load_wrapped(argv[3]))
        for p in d:
            print(p)
        return 1 if d else 0
    if len(argv) == 4 and argv[1] == "table":
        # STRIPPED.txt of `norm` and the output of `noise`: each stripped path, whether it differed
        # between the two runs of one binary, and why it is stripped.
        with open(argv[3], encoding="utf-8") as f:
            seen = [line.split("\t", 1)[1].strip() for line in f if "\t" in line]
        with open(argv[2], encoding="utf-8") as f:
            for line in f:
                p, why = line.rstrip("\n").split("\t", 1)
                key = p.split(" ~ ")[0]
                hit = any(q == key or q.startswith((key + ".", key + "[", key + "{")) for q in seen)
                print("%s\t%s\t%s" % (p, "differed" if hit else "equal-twice", why))
        return 0
    if len(argv) == 6 and argv[1] == "noise":
        a, b = load_wrapped(argv[2]), load_wrapped(argv[3])
        na, nb = load_wrapped(argv[4]), load_wrapped(argv[5])
        left = set(generic(p) for p in differing(na, nb))
        for p in sorted(set(generic(p) for p in differing(a, b))):
            print("%s\t%s" % ("LEFT " if p in left else "strip", p))
        return 1 if left else 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
