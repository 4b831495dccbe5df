#!/usr/bin/env bash
# Gating a pull request of your own trainer in one command (`lockstep compare CONFIG --base-ref
# REF --head-ref REF`, docs/ci.md "A trainer repository"): this script makes a throwaway git
# repository (mktemp -d) holding examples/external/train.py and a config, commits a base and three
# heads on top of it, and gates each head against the base:
#
#   same-math  a refactor that keeps the math          expected: pass   (exit 0)
#   slower     every step N% slower (default 5)        expected: fail   (exit 1, throughput)
#   bf16       switches to bf16 without declaring it   expected: fail   (exit 1, loss alignment)
#
# usage: examples/external/pr-gate-demo.sh [LOCKSTEP]
#   LOCKSTEP  the lockstep binary or wrapper (default: the ./lockstep wrapper next to this repository)
# environment:
#   PR_GATE_DEMO_SLOWDOWN_PCT  the slower head's slowdown in percent (default 5; the suite's
#                              registration uses a gross one so that a loaded machine cannot flake it)
#   PR_GATE_DEMO_MAX_SLOWDOWN_PCT, PR_GATE_DEMO_MAX_P99_PCT  the config's [gate] bounds (default 2
#                              and 25; the suite loosens them with the gross slowdown)
#   PR_GATE_DEMO_KEEP=1        keep the throwaway folder (its reports) and print where it is
# stdout: one line per head (head, expected, exit, verdict, minutes, the failed checks), then the
#         history both commits of each comparison were recorded in. Progress goes to stderr.
# exit:   0 when every head got the expected verdict, 1 when one did not, 2 on a usage error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lockstep=${1:-$root/lockstep}
slowdown=${PR_GATE_DEMO_SLOWDOWN_PCT:-5}
max_slowdown=${PR_GATE_DEMO_MAX_SLOWDOWN_PCT:-2.0}
max_p99=${PR_GATE_DEMO_MAX_P99_PCT:-25.0}
[[ -x $lockstep ]] || { echo "pr-gate-demo: $lockstep is not executable" >&2; exit 2; }
[[ $slowdown =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "pr-gate-demo: PR_GATE_DEMO_SLOWDOWN_PCT=$slowdown is not a number" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pr-gate-demo.XXXXXX")
if [[ ${PR_GATE_DEMO_KEEP:-0} == 1 ]]; then
  trap 'echo "pr-gate-demo: kept $work" >&2' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
repo=$work/trainer
history=$work/history.sqlite

git_() { git -C "$repo" -c user.name="PR gate demo" -c user.email=demo@example.invalid "$@"; }

# ---- the trainer repository -------------------------------------------------------------------
git init -q "$repo"
git_ checkout -q -b main
cp "$here/train.py" "$repo/train.py"
cat > "$repo/train.toml" <<TOML
# The team's trainer as a Lockstep arm: the command runs in this file's folder, in each checkout.
[run]
steps = 60
warmup_steps = 5

[external]
command = ["python3", "train.py", "--seed", "{seed}", "--steps", "{steps}", "--metrics", "{metrics}"]
flops_per_token = 698880.0  # train.py's default shape (examples/external/baseline.toml)

[gate]
max_slowdown_pct = $max_slowdown  # tokens/s may not fall significantly by more
max_p99_regression_pct = $max_p99  # a short run's tail is noisy: only a gross change counts
tolerance = 1e-5  # the same math is the same bits in a deterministic trainer (the default 5e-4
                  # is for kernels that sum in another order; bf16 moves this loss by ~3e-4)
TOML
git_ add train.py train.toml
git_ commit -q -m "The trainer and its Lockstep config"

# Each head is one commit on a branch of its own from main.
head_commit() {  # NAME MESSAGE SED-EXPRESSION
  git_ checkout -q -b "$1" main
  sed -i "$3" "$repo/train.py"
  git_ diff --quiet && { echo "pr-gate-demo: the edit for $1 changed nothing" >&2; exit 1; }
  git_ commit -q -am "$2"
}
head_commit same-math "Refactor: name the step's clock" \
  's/^            t0 = time.perf_counter()$/            t0 = step_start = time.perf_counter()/'
head_commit slower "Log more per step (${slowdown}% slower)" \
  "s/\"--slowdown-pct\", type=float, default=0.0,/\"--slowdown-pct\", type=float, default=${slowdown},/"
head_commit bf16 "Train in bf16 autocast (not declared)" \
  's/choices=\["fp32", "bf16"\], default="fp32"/choices=["fp32", "bf16"], default="bf16"/'
git_ checkout -q main

# train.py finds python/lockstep_trainer (the trainer protocol 2 helper) through PYTHONPATH here:
# the throwaway repository holds only the trainer.
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}

# ---- the gate, one head at a time ---------------------------------------------------------------
status=0
printf '%-10s %-8s %-4s %-7s %-7s %s\n' head expected exit verdict minutes "failed checks"
for spec in same-math:0 slower:1 bf16:1; do
  head=${spec%%:*} expected=${spec##*:}
  echo "pr-gate-demo: gating $head against main" >&2
  start=$(date +%s.%N)
  set +e
  "$lockstep" compare "$repo/train.toml" --base-ref main --head-ref "$head" \
    --out "$work/$head" --history "$history" > "$work/$head.log" 2>&1
  code=$?
  set -e
  minutes=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", (e - s) / 60 }')
  verdict=-
  failed=-
  if [[ -f $work/$head/report.json ]]; then
    verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/$head/report.json")
    failed=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(", ".join(c["name"] for c in r["checks"] if not c["passed"]) or "-")' "$work/$head/report.json")
  fi
  [[ $code == 1 || $code == 0 ]] || tail -n 5 "$work/$head.log" >&2
  printf '%-10s %-8s %-4s %-7s %-7s %s\n' "$head" "exit $expected" "$code" "$verdict" "$minutes" "$failed"
  [[ $code == "$expected" ]] || status=1
  # The failing head must fail for the reason the demo plants.
  case $head in
    slower) [[ $failed == *throughput* ]] || status=1 ;;
    bf16) [[ $failed == *"loss alignment"* ]] || status=1 ;;
  esac
done

echo
echo "history (each comparison recorded both commits' runs and the comparison):"
"$lockstep" history list --history "$history"
# No worktree is left behind: the repository knows only its own working tree.
if [[ $(git_ worktree list | wc -l) != 1 ]]; then
  echo "pr-gate-demo: worktrees left behind:" >&2
  git_ worktree list >&2
  status=1
fi
exit $status
