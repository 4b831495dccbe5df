#!/usr/bin/env bash
# The serving gate's error rates (issue 37): real `lockstep compare` runs on two serving configs,
# the default policy (5 window pairs), interleaved by scenario so machine drift hits every
# scenario alike. One TSV line per trial.
#   serve_aa      configs/serve/baseline.toml against itself: any timing "fail" is a false alarm
#   serve_slow5   the same service with faults.slowdown_pct = 5 (busy work after every batch, 5% of
#                 its time): detected = "throughput" fail
#   serve_bigger  baseline vs configs/serve/bigger_batch.toml: rejected = exit 1 ("p99 latency")
#   serve_lanes   baseline vs configs/serve/two_lanes.toml: P99 of each arm against the SLO
# Windows are serve.duration_s long (default here 3 s, the peak from 1 s to 2 s: set WINDOW_S).
#
# KEEP=DIR keeps each trial's report.json as DIR/SCENARIO-TRIAL.json (the per-window figures).
#
# usage: [WINDOW_S=S] [TRIAL_OFFSET=K] [PAUSE_FILE=F] [KEEP=DIR] bench/serve-gate.sh LOCKSTEP N OUT.tsv SCENARIOS
set -euo pipefail
lockstep=$(realpath "${1:?usage: serve-gate.sh LOCKSTEP N OUT.tsv SCENARIOS}")
n=${2:?} out=${3:?} scenarios=${4:?}
IFS=, read -r -a kinds <<< "$scenarios"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
w=${WINDOW_S:-3}
peak_start=$(python3 -c "print($w / 3)") peak_len=$(python3 -c "print($w / 3)")
both=()
for kv in "serve.duration_s=$w" "serve.peak_start_s=$peak_start" "serve.peak_duration_s=$peak_len"; do
  both+=(--set-baseline "$kv" --set-variant "$kv")
done

[ -s "$out" ] || printf 'scenario\ttrial\texit\tp99\tp99_pct\tthroughput\tthroughput_pct\tslo\tsame_math\tbase_p99_ms\tvar_p99_ms\tbase_within\tvar_within\tminutes\tload1\n' > "$out"
first=$((${TRIAL_OFFSET:-0} + 1)) last=$((${TRIAL_OFFSET:-0} + n))
for ((t = first; t <= last; t++)); do
  for k in "${kinds[@]}"; do
    while [ -n "${PAUSE_FILE:-}" ] && [ -e "$PAUSE_FILE" ]; do sleep 5; done
    case "$k" in
      serve_aa) args=(configs/serve/baseline.toml configs/serve/baseline.toml --set-variant run.name=aa) ;;
      serve_slow5) args=(configs/serve/baseline.toml configs/serve/baseline.toml --set-variant faults.slowdown_pct=5) ;;
      serve_bigger) args=(configs/serve/baseline.toml configs/serve/bigger_batch.toml) ;;
      serve_lanes) args=(configs/serve/baseline.toml configs/serve/two_lanes.toml) ;;
      *) echo "serve-gate: unknown scenario $k" >&2; exit 2 ;;
    esac
    dir=$work/$k-$t
    load1=$(cut -d' ' -f1 /proc/loadavg)  # the machine's 1-min load as the trial starts
    set +e
    (cd "$root" && "$lockstep" compare "${args[@]}" "${both[@]}" --set-baseline "run.seed=$((5000 + t))" \
      --set-variant "run.seed=$((5000 + t))" --out "$dir" --no-history > "$dir.out" 2> "$dir.err")
    rc=$?
    set -e
    if [ ! -f "$dir/report.json" ]; then
      echo "serve-gate: $k trial $t: no report (exit $rc): $(tail -n1 "$dir.err")" >&2
      continue
    fi
    [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP" && cp "$dir/report.json" "$KEEP/$k-$t.json"; }
    python3 - "$dir/report.json" "$k" "$t" "$rc" "$load1" >> "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k, t, rc, load1 = sys.argv[2:6]
c = {x["name"]: x for x in r["checks"]}
def num(x, f="{:.3f}"):
    return "" if x is None else f.format(x)
b, v = r["baseline"]["figures"][0], r["variant"]["figures"][0]
print("\t".join([k, t, rc, c["p99 latency"]["verdict"], num(c["p99 latency"]["value"]),
                 c["throughput"]["verdict"], num(c["throughput"]["value"]),
                 c["slo attainment"]["verdict"], c["same math"]["verdict"],
                 num(b["latency_ms"]["p99"]["ms"], "{:.1f}"), num(v["latency_ms"]["p99"]["ms"], "{:.1f}"),
                 num(b["slo_attainment"], "{:.4f}"), num(v["slo_attainment"], "{:.4f}"),
                 f"{r['wall_seconds'] / 60:.2f}", load1]))
PY
    tail -n1 "$out" >&2
  done
done
