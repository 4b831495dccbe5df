#!/usr/bin/env bash
# The alignment rule's operating characteristics (issue 16): `lockstep compare` of the baseline
# against VARIANT at N seeds, one TSV line per seed with the verdict and the two ratios the rule
# judges, so the pass rate at any factor c can be read off the same runs:
#   ratio_check = |delta(check step)| / E(check step)
#   ratio_curve = mean |delta| over the curve window / mean E over it   (approximate knobs)
#   aligned at factor c  <=>  ratio_check <= c and ratio_curve <= c
# For an exact knob the ratios are against the tolerance instead (aligned <=> both < 1).
# With the envelope rule the function probe (docs/method.md "The function probe") is judged too:
#   probe_ratio = the largest d / E over its checkpoints and tensors, probe_at = where
#   aligned at factors (c, c_probe)  <=>  the above and probe_ratio <= c_probe
# Timing is cut to the minimum (1 repeat of 10 timed steps): only the alignment is measured here.
#
# usage: bench/alignment-power.sh LOCKSTEP BASELINE VARIANT FIRST_SEED N OUT.tsv [--set KEY=VALUE...]
#   --set applies to both arms (e.g. --set faults.logit_scale_drift=0.02 goes to the variant only
#   when given as --set-variant).
# e.g.   bench/alignment-power.sh build/lockstep configs/baseline.toml configs/variants/bf16.toml \
#          3001 20 /tmp/bf16.tsv
set -euo pipefail
lockstep=${1:?usage: alignment-power.sh LOCKSTEP BASELINE VARIANT FIRST_SEED N OUT.tsv [ARGS...]}
baseline=${2:?} variant=${3:?} first=${4:?} n=${5:?} out=${6:?}
shift 6
extra=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -s "$out" ] || printf 'seed\tverdict\trule\taligned\tabs_diff\tenvelope_at_check\tratio_check\tcurve_value\tcurve_scale\tratio_curve\tprobe_ratio\tprobe_at\n' > "$out"
for ((s = first; s < first + n; s++)); do
  dir=$work/c$s
  set +e
  "$lockstep" compare "$baseline" "$variant" --out "$dir" --no-history --repeats 1 \
    --set-baseline run.seed=$s --set-variant run.seed=$s \
    --set-baseline gate.timing_steps=10 --set-variant gate.timing_steps=10 \
    "${extra[@]}" > "$dir.out" 2> "$dir.err"
  rc=$?
  set -e
  if [ ! -f "$dir/report.json" ]; then
    echo "alignment-power: seed $s: no report (exit $rc): $(tail -n1 "$dir.err")" >&2
    continue
  fi
  python3 - "$dir/report.json" "$s" >> "$out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
a = r["alignment"]
num = lambda x: float("nan") if x is None else float(x)
if a["rule"] == "envelope":
    e = a["envelope"]
    check_scale = num(e["at_check"])
    curve_scale = num(a["curve"]["bound"]) / num(e["factor"])
else:  # tolerance: the ratios are against the tolerance
    check_scale = curve_scale = num(a["tolerance"])
ratio = lambda v, s: v / s if s > 0 else float("inf")
p = a.get("probe") or {}
probe = ["%.3f" % num(p["ratio_max"]), "%s@%s" % (p["at_tensor"], p["at_step"])] \
    if "ratio_max" in p else ["nan", "-"]
print("\t".join(str(x) for x in [
    sys.argv[2], r["verdict"], a["rule"], a["aligned"], "%.3e" % num(a["abs_diff"]),
    "%.3e" % check_scale, "%.3f" % ratio(num(a["abs_diff"]), check_scale),
    "%.3e" % num(a["curve"]["value"]), "%.3e" % curve_scale,
    "%.3f" % ratio(num(a["curve"]["value"]), curve_scale)] + probe))
EOF
  tail -n1 "$out" >&2
done
