#!/usr/bin/env bash
# The gate's power for the arms that lacked it (issue 34): an external trainer speaking protocol 2
# (examples/external/train.py on python/lockstep_trainer) and 2-rank arms (Gloo), each a real
# `lockstep compare` with the default policy, interleaved by scenario so machine drift hits every
# scenario alike. One TSV line per trial.
#   ext_aa         examples/external/baseline.toml against itself: any timing "fail" is a false alarm
#   ext_slow5      the same trainer with --slowdown-pct 5 (GEMMs for 5% of each step's time, inside
#                  the step): detected = throughput "fail"
#   ext_slow2      the same with --slowdown-pct 2 (issue 54: 2% on every arm)
#   ext_bf16       examples/external/bf16.toml at seed 3000 + trial: aligned = "loss alignment" pass
#   ext_bf16drift  bf16 with attention logits x 1.02: rejected = "loss alignment" fail
#   ddp_aa         configs/ddp2.toml against itself (2 ranks, turns rank by rank)
#   ddp_slow5      ddp2 against ddp2 with faults.slowdown_pct = 5 on every rank
#   ddp_slow2      the same with faults.slowdown_pct = 2
#   ddp_zero2      ddp2 against configs/variants/zero2.toml: the report's tokens/s MDE
# Column loop_restored: timing runs whose Gloo event loop left SCHED_IDLE (harness/dist/comm.cpp);
# then the repeats per arm the verdict used and, with --repeats auto, where the sequence stopped.
#
# PAUSE_FILE=F: while F exists, wait before the next trial (a shared dev machine holds the bench
# between trials, never during one).
# usage: [TRIAL_OFFSET=K] [PAUSE_FILE=F] bench/protocol-gate.sh LOCKSTEP N OUT.tsv SCENARIOS [COMPARE ARGS...]
# e.g.   bench/protocol-gate.sh build/lockstep 20 /tmp/pg.tsv ext_aa,ext_slow5
set -euo pipefail
lockstep=$(realpath "${1:?usage: protocol-gate.sh LOCKSTEP N OUT.tsv SCENARIOS [COMPARE ARGS...]}")
n=${2:?} out=${3:?} scenarios=${4:?}
shift 4
extra=("$@")
IFS=, read -r -a kinds <<< "$scenarios"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The trainer's Python on the binary's own LibTorch: the project venv's (torch 2.11, the same wheel)
# for the wheel build's binary, Debian's python3 (python3-torch 1.13) for the Debian build's.
case $lockstep in
  */build-cuda/*) venv_python=$("$root/tools/torch-wheel.sh" python)
                  export PATH="${venv_python%/*}:$PATH" ;;
  *) export PATH="/usr/bin:/bin:$PATH" ;;
esac

# A variant of the example trainer: its command with extra flags (workdir stays the example's).
ext_variant() {  # NAME DTYPE FLAGS...
  local name=$1 dtype=$2
  shift 2
  local flags=""
  for f in "$@"; do flags+=", \"$f\""; done
  cat > "$work/$name.toml" <<EOF
extends = "$root/examples/external/baseline.toml"
[external]
workdir = "$root/examples/external"
command = ["python3", "train.py", "--seed", "{seed}", "--steps", "{steps}", "--metrics", "{metrics}",
           "--dtype", "$dtype"$flags]
$( [ "$dtype" = bf16 ] && printf '[precision]\ncompute = "bf16"\n[gate]\nalignment = "approximate"\n' )
EOF
  echo "$work/$name.toml"
}
slow5=$(ext_variant slow5 fp32 --slowdown-pct 5)
slow2=$(ext_variant slow2 fp32 --slowdown-pct 2)
drift=$(ext_variant drift bf16 --logit-drift 0.02)

[ -s "$out" ] || printf 'scenario\ttrial\texit\talignment\trule\tprobe\tthroughput\tp99\ttokens_pct\ttokens_mde\tinterleave\tminutes\tloop_restored\trepeats\tstopped\n' > "$out"
# TRIAL_OFFSET: number the trials (and seed the bf16 cells) from TRIAL_OFFSET + 1, to extend a TSV.
first=$((${TRIAL_OFFSET:-0} + 1)) last=$((${TRIAL_OFFSET:-0} + n))
for ((t = first; t <= last; t++)); do
  for k in "${kinds[@]}"; do
    while [ -n "${PAUSE_FILE:-}" ] && [ -e "$PAUSE_FILE" ]; do sleep 5; done
    seed=$((3000 + t))
    case "$k" in
      ext_aa) args=(examples/external/baseline.toml examples/external/baseline.toml --set-variant run.name=aa) ;;
      ext_slow5) args=(examples/external/baseline.toml "$slow5") ;;
      ext_slow2) args=(examples/external/baseline.toml "$slow2") ;;
      # Alignment cells: 2 timing repeats (the alignment verdict does not depend on them; a
      # rejected variant is never timed).
      ext_bf16) args=(examples/external/baseline.toml examples/external/bf16.toml --set-baseline "run.seed=$seed" --set-variant "run.seed=$seed" --repeats 2) ;;
      ext_bf16drift) args=(examples/external/baseline.toml "$drift" --set-baseline "run.seed=$seed" --set-variant "run.seed=$seed" --repeats 2) ;;
      ddp_aa) args=(configs/ddp2.toml configs/ddp2.toml --set-variant run.name=aa) ;;
      ddp_slow5) args=(configs/ddp2.toml configs/ddp2.toml --set-variant faults.slowdown_pct=5) ;;
      ddp_slow2) args=(configs/ddp2.toml configs/ddp2.toml --set-variant faults.slowdown_pct=2) ;;
      ddp_zero2) args=(configs/ddp2.toml configs/variants/zero2.toml) ;;
      *) echo "protocol-gate: unknown scenario $k" >&2; exit 2 ;;
    esac
    dir=$work/$k-$t
    set +e
    (cd "$root" && "$lockstep" compare "${args[@]}" --out "$dir" --no-history "${extra[@]}" \
      > "$dir.out" 2> "$dir.err")
    rc=$?
    set -e
    if [ ! -f "$dir/report.json" ]; then
      echo "protocol-gate: $k trial $t: no report (exit $rc): $(tail -n1 "$dir.err")" >&2
      continue
    fi
    python3 - "$dir/report.json" "$k" "$t" "$rc" >> "$out" <<'EOF'
import glob, json, os, sys
r = json.load(open(sys.argv[1]))
# Timing runs whose Gloo event loop went back from SCHED_IDLE to SCHED_OTHER (harness/dist/comm.cpp).
restored = 0
for f in glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "arms", "timing", "*", "summary.json")):
    env = json.load(open(f)).get("environment", {})
    restored += env.get("gloo_device_loop", "").startswith("SCHED_OTHER")
k, t, rc = sys.argv[2:5]
v = {c["name"]: c["verdict"] for c in r["checks"]}
def num(x):
    return "" if x is None else f"{x:.3f}"
a = r["alignment"]
probe = a.get("probe") or {}
pr = "-" if "passed" not in probe else ("pass" if probe["passed"] else "fail")
print("\t".join([k, t, rc, v.get("loss alignment", "-"), a.get("rule") or "-", pr,
                 v.get("throughput", "-"), v.get("p99 latency", "-"),
                 num(r["delta"]["tokens_per_sec_pct"]["value"]),
                 num((r.get("power") or {}).get("tokens_per_sec_mde_pct")),
                 r.get("interleave", "-"), f"{r['wall_seconds'] / 60:.2f}", str(restored),
                 str(r.get("repeats", "-")), (r.get("sequential") or {}).get("stopped") or "-"]))
EOF
    tail -n1 "$out" >&2
  done
done
