#!/usr/bin/env bash
# The probe sees ops (issue 54): examples/external/inline_attention.py, a trainer whose attention
# is written inline as ops and whose probe names nothing (no lt.record), gated by a real
# `lockstep compare` per seed, interleaved by scenario so machine drift hits both alike:
#   inline_bf16    inline.toml against inline-bf16.toml: aligned = "loss alignment" pass
#   inline_drift   inline.toml against inline-bf16-drift.toml (scores x 1.02): rejected = "loss
#                  alignment" fail, with the probe's largest ratio and the tensor it is at, and
#                  the largest ratio over the module records alone (what the probe saw before)
# Seeds 3000 + trial. Alignment cells: 2 timing repeats under tests/external/values_only_policy.toml
# (the alignment verdict does not depend on them). One TSV line per trial.
# usage: [TRIAL_OFFSET=K] bench/probe-ops.sh LOCKSTEP N OUT.tsv [SCENARIOS]
set -euo pipefail
lockstep=$(realpath "${1:?usage: probe-ops.sh LOCKSTEP N OUT.tsv [SCENARIOS]}")
n=${2:?} out=${3:?} scenarios=${4:-inline_bf16,inline_drift}
IFS=, read -r -a kinds <<< "$scenarios"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $lockstep in  # the trainer's Python on the binary's own LibTorch (as protocol-gate.sh)
  */build-cuda/*) venv_python=$("$root/tools/torch-wheel.sh" python)
                  export PATH="${venv_python%/*}:$PATH" ;;
  *) export PATH="/usr/bin:/bin:$PATH" ;;
esac
[ -s "$out" ] || printf 'scenario\ttrial\tseed\texit\talignment\tenvelope_inside\tprobe\tratio_max\tat_tensor\tfirst_outside\tmodule_ratio_max\tminutes\n' > "$out"
first=$((${TRIAL_OFFSET:-0} + 1)) last=$((${TRIAL_OFFSET:-0} + n))
for ((t = first; t <= last; t++)); do
  for k in "${kinds[@]}"; do
    seed=$((3000 + t))
    case "$k" in
      inline_bf16) variant=examples/external/inline-bf16.toml ;;
      inline_drift) variant=examples/external/inline-bf16-drift.toml ;;
      *) echo "probe-ops: unknown scenario $k" >&2; exit 2 ;;
    esac
    dir=$work/$k-$t
    set +e
    (cd "$root" && "$lockstep" compare examples/external/inline.toml "$variant" \
      --set-baseline "run.seed=$seed" --set-variant "run.seed=$seed" --repeats 2 \
      --policy tests/external/values_only_policy.toml --out "$dir" --no-history > "$dir.out" 2> "$dir.err")
    rc=$?
    set -e
    if [ ! -f "$dir/report.json" ]; then
      echo "probe-ops: $k trial $t: no report (exit $rc): $(tail -n1 "$dir.err")" >&2
      continue
    fi
    python3 - "$dir/report.json" "$k" "$t" "$seed" "$rc" >> "$out" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
op = re.compile(r"(^|\.)(matmul|bmm|softmax|log_softmax|layer_norm|scaled_dot_product_attention)[0-9]*$")
k, t, seed, rc = sys.argv[2:6]
a = r["alignment"]
v = {c["name"]: c["verdict"] for c in r["checks"]}
p = a.get("probe") or {}
env = a.get("envelope") or {}
# The largest ratio over the module records (and the output): what the probe saw before issue 54.
mod = [max(row[i] for row in p["ratio"]) for i, t in enumerate(p.get("tensors", [])) if not op.search(t)]
print("\t".join([k, t, seed, rc, v.get("loss alignment", "-"), str(env.get("inside", "-")).lower(),
                 "-" if "passed" not in p else ("pass" if p["passed"] else "fail"),
                 "%.3f" % p["ratio_max"] if p.get("ratio_max") is not None else "-",
                 p.get("at_tensor") or "-", (p.get("first_outside") or {}).get("tensor", "-"),
                 "%.3f" % max(mod) if mod else "-",
                 "%.2f" % (r["wall_seconds"] / 60)]))
PY
    tail -n1 "$out" >&2
  done
done
