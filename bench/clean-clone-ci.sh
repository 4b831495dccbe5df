#!/usr/bin/env bash
# Runs CI as CI runs it: a fresh clone of a commit in a new folder, `bash .ci/run` with CI=true and
# no standard input, N times in a row (issue 13: "5 consecutive clean-clone .ci/run runs"). Prints
# one line per run (commit, exit status, wall time, build and ctest time, tests passed, the
# 1-minute load average at the end) and keeps each run's whole log. Stops at the first failing run
# unless --keep-going. Each run clones the repository's main branch as it is when that run starts,
# so commits made while the runs go on are picked up by the next run (the commit is printed).
#
# usage: bench/clean-clone-ci.sh [--keep-going] [--ref REF] N [WORK_DIR]
#   WORK_DIR (default /tmp/lockstep-clean-ci) holds the clones and run-K.log; each clone is
#   removed after its run (its log stays).
set -euo pipefail
keep_going=0
ref=main
while [ $# -gt 0 ]; do
  case "$1" in
    --keep-going) keep_going=1; shift ;;
    --ref) ref=${2:?--ref needs a ref}; shift 2 ;;
    *) break ;;
  esac
done
runs=${1:?usage: clean-clone-ci.sh [--keep-going] [--ref REF] N [WORK_DIR]}
work=${2:-/tmp/lockstep-clean-ci}
repo=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
mkdir -p "$work"
work=$(cd "$work" && pwd)

failed=0
for ((k = 1; k <= runs; k++)); do
  clone=$work/clone-$k
  log=$work/run-$k.log
  rm -rf "$clone"
  git clone -q --branch "$ref" "$repo" "$clone"
  commit=$(git -C "$clone" rev-parse --short HEAD)
  start=$(date +%s)
  # ctest's own timing lines give the test phase; the rest (set-up and build) is the difference.
  set +e
  (cd "$clone" && CI=true bash .ci/run < /dev/null > "$log" 2>&1)
  rc=$?
  set -e
  wall=$(( $(date +%s) - start ))
  ctest_s=$(sed -n 's/^Total Test time (real) = *\([0-9.]*\) sec.*/\1/p' "$log" | tail -n1)
  summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n1 || true)
  printf 'run %d  commit %s  exit %d  wall %dm%02ds  ctest %ss  build+setup %ss  %s  load %s\n' \
    "$k" "$commit" "$rc" $((wall / 60)) $((wall % 60)) "${ctest_s:-?}" \
    "$(awk -v w="$wall" -v c="${ctest_s:-0}" 'BEGIN{printf "%.0f", w - c}')" \
    "${summary:-no ctest summary}" "$(cut -d' ' -f1 /proc/loadavg)"
  rm -rf "$clone"
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "clean-clone-ci: run $k failed; its log: $log" >&2
    [ "$keep_going" -eq 1 ] || exit 1
  fi
done
exit "$failed"
