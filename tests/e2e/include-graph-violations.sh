#!/usr/bin/env bash
# The negative control of the include_graph test (issue 33): tools/include-graph.sh must fail, and
# name the offending line, on each kind of violation planted in a copy of the tree, and pass the
# unmodified copy. Without this, a rule the awk silently stopped checking would leave
# include_graph green forever.
#
# usage: include-graph-violations.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fresh() {  # a pristine copy of the scanned folders and the script
  rm -rf "$tmp/tree"
  mkdir -p "$tmp/tree"
  cp -r "$src"/harness "$src"/variants "$src"/workloads "$src"/reports "$src"/include "$src"/tools "$tmp/tree/"
}
# expect CASE WANT_RC PATTERN: runs the checker on the planted copy, checks exit code and message
expect() {
  local name=$1 want=$2 pattern=$3 rc=0
  "$tmp/tree/tools/include-graph.sh" -q "$tmp/tree" > "$tmp/out" 2> "$tmp/err" || rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, want $want"; cat "$tmp/err"; fails=1; return
  fi
  if [[ -n $pattern ]] && ! grep -qE -- "$pattern" "$tmp/err"; then
    echo "FAIL $name: stderr lacks /$pattern/:"; cat "$tmp/err"; fails=1; return
  fi
  echo "ok   $name (exit $rc)"
}
plant() {  # plant FILE LINE: prepend an include line to FILE
  local f=$tmp/tree/$1
  [[ -f $f ]] || { echo "FAIL: $1 does not exist in the tree (update this test)"; exit 1; }
  printf '%s\n' "$2" | cat - "$f" > "$f.new" && mv "$f.new" "$f"
}

fresh
expect "the real tree" 0 ""

fresh
plant harness/vocab/records.h '#include "reports/report.h"'
expect "upward include (vocab -> reports)" 1 'harness/vocab \(layer 1\) includes an upper layer, reports'

fresh
plant harness/compare/plan.h '#include <torch/torch.h>'
expect "LibTorch header in a torch-free folder" 1 'harness/compare is torch-free but includes LibTorch'

fresh
plant harness/runs/summary.h '#include "harness/train/trainer.h"'
expect "torch-free folder includes a LibTorch folder" 1 'harness/runs is torch-free but includes harness/train,'

fresh
plant harness/config/schema.h '#include "harness/vocab/records.h"'
expect "foundation includes another component" 1 'harness/config \(layer 0, the foundation\)'

fresh
mkdir -p "$tmp/tree/harness/newthing"
printf '#pragma once\n#include "harness/vocab/records.h"\n' > "$tmp/tree/harness/newthing/x.h"
expect "a folder in no layer" 1 'harness/newthing is in no layer'

fresh  # two folders of one layer including each other: only the cycle rule sees it
plant harness/registry/catalog.h '#include "harness/gate/gate.h"'
plant harness/gate/gate.h '#include "harness/registry/catalog.h"'
expect "a cycle inside one layer" 1 'CYCLE: harness/(gate|registry) -> harness/(gate|registry)'

exit $fails
