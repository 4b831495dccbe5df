#!/usr/bin/env bash
# Proves that a change did not touch the math: trains the same short runs (fixed configs and
# seeds) with two lockstep binaries and compares every step's loss, local loss, gradient norm,
# per-unit gradient norms and comm bytes as text (bitwise: JSON doubles are printed round-trip).
# Same machine, same LibTorch; times are not compared.
#
#   tools/same-math.sh BEFORE_BINARY AFTER_BINARY [WORK_DIR]
#
# Runs (40 steps each, the reference `tiny` model): fp32; grad_accum 2; bf16; skip_outlier_z with
# z_loss; every step-point fault at once (lr spike, corrupt batch, grad blow-up, weight noise);
# ZeRO-3 on 1 rank and on 2 ranks over Gloo; bf16 with the envelope's weight noise; bf16 ZeRO-1 on
# 2 ranks; a resume from a checkpoint. Exit 0 when every value
# is equal.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
before=$(realpath "$1") after=$(realpath "$2")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${3:-$(mktemp -d)}
mkdir -p "$work"
cd "$root"

base=configs/baseline.toml
runs=(
  "fp32|$base|"
  "accum2|$base|data.grad_accum=2"
  "bf16|configs/variants/bf16.toml|"
  "bf16accum2|configs/variants/bf16.toml|data.grad_accum=2"
  "outlier_zloss|$base|stability.skip_outlier_z=3 stability.z_loss=1e-4"
  "faults|$base|faults.lr_spike_at=12 faults.corrupt_batch_at=15 faults.grad_blowup_at=20 faults.weight_rounding_noise=1e-3"
  "zero3x1|configs/variants/zero3.toml|parallel.world_size=1"
  "zero3x2|configs/variants/zero3.toml|parallel.world_size=2"
  "zero3bf16x2|configs/variants/zero3.toml|parallel.world_size=2 precision.compute=bf16 data.grad_accum=2"
  "bf16noise|configs/variants/bf16.toml|faults.weight_rounding_noise=1e-3 data.grad_accum=2"
  "bf16zero1x2|configs/ddp2.toml|precision.compute=bf16 parallel.zero_stage=1 data.grad_accum=2"
)
# SAME_MATH_SKIP="zero3x2 zero3bf16x2 ...": runs to leave out (the wheel build has no Gloo: 2 ranks on a CPU
# cannot run there).

fields() {  # the math of every step, one line per step and rank
  python3 - "$@" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(os.path.join(sys.argv[1], "metrics*.jsonl"))):
    for line in open(f):
        r = json.loads(line)
        keep = {k: r.get(k) for k in ("step", "rank", "loss", "local_loss", "grad_norm",
                                       "unit_grad_norms", "comm_bytes", "lr", "skipped",
                                       "batch_hash")}
        print(os.path.basename(f), json.dumps(keep, sort_keys=True))
PY
}

status=0
run_one() {  # name bin out config sets...
  local name=$1 bin=$2 out=$3 cfg=$4; shift 4
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  "$bin" run "$cfg" --steps 40 --out "$out" --no-history --quiet "${sets[@]}" >/dev/null 2>"$out.log" \
    || { echo "same-math: $name failed with $bin (log: $out.log)" >&2; return 1; }
}
for spec in "${runs[@]}"; do
  IFS='|' read -r name cfg sets <<<"$spec"
  case " ${SAME_MATH_SKIP:-} " in *" $name "*) echo "same-math: $name: skipped" >&2; continue ;; esac
  # shellcheck disable=SC2086
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    rm -rf "$work/$name.$side"
    run_one "$name" "$bin" "$work/$name.$side" "$cfg" $sets || status=1
  done
  if cmp -s <(fields "$work/$name.before") <(fields "$work/$name.after") \
      && [ -s "$work/$name.before/metrics.jsonl" ]; then
    echo "same-math: $name: $(fields "$work/$name.after" | wc -l) step records bitwise equal" >&2
  else
    echo "same-math: $name: DIFFERENT (diff <(...) in $work)" >&2
    status=1
  fi
done

# A resume: 40 steps with a checkpoint every 10, stopped after 20, resumed to 40.
for side in before after; do
  bin=$before; [ "$side" = after ] && bin=$after
  d="$work/resume.$side"; rm -rf "$d"
  run_one resume "$bin" "$d" "$base" checkpoint.every=10 || status=1
  "$bin" run "$base" --steps 40 --stop-after 20 --out "$d.r" --no-history --quiet \
    --set checkpoint.every=10 >/dev/null 2>>"$d.log" || status=1
  "$bin" run --resume "$d.r" --quiet --no-history >/dev/null 2>>"$d.log" || status=1
done
if cmp -s <(fields "$work/resume.before.r") <(fields "$work/resume.after.r"); then
  echo "same-math: resume: $(fields "$work/resume.after.r" | wc -l) step records bitwise equal" >&2
else
  echo "same-math: resume: DIFFERENT" >&2; status=1
fi
exit $status
