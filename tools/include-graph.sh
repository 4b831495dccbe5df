#!/usr/bin/env bash
# Prints the folder-level include graph of Lockstep's sources (harness/, variants/, workloads/,
# reports/) and checks it has no cycle: a folder that includes another must not be included back,
# directly or through others. A file's folder is its directory (harness/runner.cpp is in
# `harness`, harness/train/trainer.cpp in `harness/train`); harness/main.cpp, the binary's thin
# entry point, sits above everything and is left out.
#
# usage: tools/include-graph.sh [SOURCE_ROOT]
# stdout: one "FROM -> TO  (N includes)" line per edge, then the folders in dependency order
# exit:   0 without cycles; 1 with one (tsort names the folders in the loop on stderr)
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

edges=$(grep -rHo --include='*.h' --include='*.cpp' --include='*.cu' \
          '^#include "\(harness\|variants\|workloads\|reports\)/[^"]*"' \
          harness variants workloads reports |
        grep -v '^harness/main\.cpp:' |
        sed -E 's|^([^:]*)/[^/:]*:#include "(.*)/[^/]*"$|\1 \2|' |
        awk '$1 != $2' | sort | uniq -c | awk '{print $2, $3, $1}')

echo "$edges" | awk '{printf "%-18s -> %-18s (%d include%s)\n", $1, $2, $3, $3 == 1 ? "" : "s"}'
echo
echo "dependency order (a folder before the folders it includes):"
if order=$(echo "$edges" | awk '{print $1, $2}' | tsort 2>/tmp/include-graph.$$); then
  echo "$order" | sed 's/^/  /'
  rm -f /tmp/include-graph.$$
  echo "no cycles"
else
  cat /tmp/include-graph.$$ >&2
  rm -f /tmp/include-graph.$$
  echo "CYCLE (see stderr)"
  exit 1
fi
