#!/usr/bin/env bash
# Runs timing-sensitive tests again and again while a second process keeps the other core busy,
# the situation `ctest --parallel 2` puts every test in (issue 13: a test that passes alone but
# fails under load is a flake). One test at a time (ctest -j1), N rounds; prints one line per round
# and test (pass/FAIL, seconds) and a summary; exit 1 if any run failed.
#
# usage: bench/load-check.sh BUILD_DIR N TEST [TEST...]     (ctest names, matched exactly)
# e.g.   bench/load-check.sh build 10 compare_stall_fails_p99 bisect_names_culprit
set -euo pipefail
build=${1:?usage: load-check.sh BUILD_DIR N TEST...}
rounds=${2:?usage: load-check.sh BUILD_DIR N TEST...}
shift 2
[ $# -gt 0 ] || { echo "load-check: name at least one test" >&2; exit 2; }
build=$(cd "$build" && pwd)

# The load: one busy-looping process (a single core's worth), for as long as the rounds run.
bash -c 'while :; do :; done' &
burner=$!
trap 'kill "$burner" 2>/dev/null || true' EXIT

failed=0
declare -A passes=() seconds=()
for ((i = 1; i <= rounds; i++)); do
  for t in "$@"; do
    start=$(date +%s.%N)
    if (cd "$build" && ctest -R "^${t}\$" -j1 --output-on-failure > "$build/load-check-$t-$i.log" 2>&1); then
      result=pass
      passes[$t]=$((${passes[$t]:-0} + 1))
      rm -f "$build/load-check-$t-$i.log"
    else
      result=FAIL
      failed=1
    fi
    s=$(echo "$(date +%s.%N) - $start" | bc)
    seconds[$t]="${seconds[$t]:-} $s"
    printf 'round %2d  %-32s %s  %6.1f s  load %s\n' "$i" "$t" "$result" "$s" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "summary ($rounds rounds, one busy process on the other core):"
for t in "$@"; do
  printf '  %-32s %2d/%d passed, seconds: %s\n' "$t" "${passes[$t]:-0}" "$rounds" "$(echo "${seconds[$t]}" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {printf "min %.0f, median %.0f, max %.0f", a[1], a[int((NR+1)/2)], a[NR]}')"
done
[ $failed -eq 0 ] || { echo "load-check: failures kept in $build/load-check-*.log"; exit 1; }
