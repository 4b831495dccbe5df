#!/usr/bin/env python3
"""Re-judge the serving gate's "slo attainment" both ways from kept report.json files (issue 54).

  points  the statistic before issue 54: variant - baseline attainment per window pair
  odds    the statistic since: the log odds ratio of a miss per pair, ln(odds variant / odds
          baseline), odds = (missed + 1/2) / (within + 1/2)

Each: one-sided paired t over the window pairs at alpha (default 0.05). pass = the whole 90%
interval on the allowed side (or every pair equal), fail = p < alpha UNADJUSTED (the gate
Holm-adjusts with two other checks, which can only turn a fail here into inconclusive there).
Prints one line per file and the counts; the gate's own verdict from the file beside them.

usage: bench/serve-attainment-rejudge.py REPORT.json...   (bench/serve-gate.sh KEEP=DIR keeps them)
"""
import json
import math
import sys

# Student's t 95% quantiles, df 1..12 (the gate takes gate.repeats window pairs, default 5).
T95 = [6.3138, 2.9200, 2.3534, 2.1318, 2.0150, 1.9432, 1.8946, 1.8595, 1.8331, 1.8125, 1.7959,
       1.7823]


def one_sided(d):
    """'pass' when the mean is significantly below 0, 'fail' above, else 'inconclusive'."""
    n = len(d)
    if n < 2 or n - 1 > len(T95):
        return "inconclusive"
    m = sum(d) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1))
    if sd == 0:
        return "fail" if m > 0 else "pass"
    half = T95[n - 2] * sd / math.sqrt(n)
    return "fail" if m - half > 0 else "pass" if m + half <= 0 else "inconclusive"


def main(paths):
    counts = {}
    for path in paths:
        r = json.load(open(path))
        b, v = r["baseline"]["windows"], r["variant"]["windows"]
        # Failing direction as "greater": fewer points within, more misses.
        points = [wb["slo_attainment"] - wv["slo_attainment"] for wb, wv in zip(b, v)]
        def log_odds(w):
            miss = (1 - w["slo_attainment"]) * w["requests"]
            return math.log((miss + 0.5) / (w["requests"] - miss + 0.5))
        odds = [log_odds(wv) - log_odds(wb) for wb, wv in zip(b, v)]
        gate = next(c["verdict"] for c in r["checks"] if c["name"] == "slo attainment")
        old, new = one_sided(points), one_sided(odds)
        key = (old, new)
        counts[key] = counts.get(key, 0) + 1
        shares = lambda ws: " ".join("%.4f" % w["slo_attainment"] for w in ws)
        print(f"{path}\tbase {shares(b)}\tvar {shares(v)}\tpoints {old}\todds {new}\tgate {gate}")
    for (old, new), k in sorted(counts.items()):
        print(f"points {old:12s} odds {new:12s} {k}")


if __name__ == "__main__":
    main(sys.argv[1:])
