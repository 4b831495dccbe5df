#!/usr/bin/env bash
# The timing gate's operating characteristics (issue 16): real `lockstep compare` runs of the
# shipped baseline against a variant that differs only by a timing fault, interleaved by scenario
# (aa, slow5, stall2, aa, slow5, ...) so machine drift hits every scenario alike. One TSV line per
# trial: the exit code, each timing check's verdict, the deltas, the repeats per arm the verdict
# used, the sequential looks and the comparison's minutes, so false-alarm and detection rates and
# the minutes to a verdict can be read off the same runs, with how the pairs ran (interleave), the
# tokens/s CI and the minimum detectable effect.
#   aa      the baseline against itself (a name change only): any timing "fail" is a false alarm
#   slow5   faults.slowdown_pct = 5: busy time of 5% of each step; detected = throughput "fail"
#   stall2  faults.stall_every = 50, stall_ms = 20: 2% of the steps take ~one step longer (the
#           P99 of 950 pooled steps is then a stalled step); detected = p99 latency "fail"
#
# usage: bench/timing-oc.sh LOCKSTEP N OUT.tsv SCENARIOS [COMPARE ARGS...]
#   SCENARIOS: comma-separated, e.g. aa,slow5,stall2. COMPARE ARGS go to every comparison, e.g.
#   --repeats auto, or --set-variant gate.max_slowdown_pct=2 (the policy is the variant's [gate]).
# Run it on an otherwise idle machine: what it measures is the machine's own noise.
# e.g.   bench/timing-oc.sh build/lockstep 20 /tmp/oc.tsv aa,slow5,stall2
set -euo pipefail
lockstep=${1:?usage: timing-oc.sh LOCKSTEP N OUT.tsv SCENARIOS [COMPARE ARGS...]}
n=${2:?} out=${3:?} scenarios=${4:?}
shift 4
extra=("$@")
IFS=, read -r -a kinds <<< "$scenarios"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -s "$out" ] || printf 'scenario\ttrial\targs\texit\tthroughput\tp99\ttokens_pct\tp99_pct\trepeats\tlooks\tstopped\tminutes\tinterleave\ttokens_ci\ttokens_mde\n' > "$out"
for ((t = 1; t <= n; t++)); do
  for k in "${kinds[@]}"; do
    case "$k" in
      aa) fault=(--set-variant run.name=aa) ;;
      slow5) fault=(--set-variant faults.slowdown_pct=5) ;;
      stall2) fault=(--set-variant faults.stall_every=50 --set-variant faults.stall_ms=20) ;;
      *) echo "timing-oc: unknown scenario $k (aa, slow5, stall2)" >&2; exit 2 ;;
    esac
    dir=$work/$k-$t
    set +e
    (cd "$root" && "$lockstep" compare configs/baseline.toml configs/baseline.toml --out "$dir" \
      --no-history "${fault[@]}" "${extra[@]}" > "$dir.out" 2> "$dir.err")
    rc=$?
    set -e
    if [ ! -f "$dir/report.json" ]; then
      echo "timing-oc: $k trial $t: no report (exit $rc): $(tail -n1 "$dir.err")" >&2
      continue
    fi
    python3 - "$dir/report.json" "$k" "$t" "${extra[*]:-}" "$rc" >> "$out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
k, t, args, rc = sys.argv[2:6]
v = {c["name"]: c["verdict"] for c in r["checks"]}
def num(x):
    return "" if x is None else f"{x:.3f}"
seq = r.get("sequential") or {}
print("\t".join([k, t, args or "-", rc, v.get("throughput", "-"), v.get("p99 latency", "-"),
                 num(r["delta"]["tokens_per_sec_pct"]["value"]), num(r["delta"]["p99_ms_pct"]["value"]),
                 str(r["repeats"]), str(len(seq.get("looks", []))) if seq else "-",
                 seq.get("stopped", "-") if seq else "-", f"{r['wall_seconds'] / 60:.2f}",
                 r.get("interleave", "-"),
                 "[%s, %s]" % tuple(num(x) for x in r["delta"]["tokens_per_sec_pct"]["ci"]),
                 num((r.get("power") or {}).get("tokens_per_sec_mde_pct"))]))
EOF
    tail -n1 "$out" >&2
  done
done
