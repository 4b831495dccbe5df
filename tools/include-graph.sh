#!/usr/bin/env bash
# Checks Lockstep's layering on the folder-level include graph: a node is a component folder
# (harness/<sub>, harness itself for its loose files, workloads, variants, reports, reports/<sub>,
# include/lockstep; harness/main.cpp, the thin entry point, is a node of its own), an edge A -> B
# is any `#include "..."` in a file of A naming a file of B. Folder level because the rules are
# about components: at file level a loop between folders hides among harmless file edges, and
# one node per top folder would hide every loop inside harness/. tests/, bench/, fuzz/ and
# examples/ are consumers, not components: they may include any layer and are not scanned.
#
# The rules (docs/layout.md; issues 13 and 33):
#   1. Every folder is in a layer of LAYERS below, lowest first; a folder includes only folders in
#      its own layer or below (lower layers never include upper ones). A new folder must be added.
#   2. Layer 0 is the foundation: its folders include nothing from any other component
#      (harness/config, harness/stats, harness/util, harness/compat, the plugin SDK header).
#   3. No cycle, also among the folders of one layer.
#   4. Where LibTorch begins: a folder marked "-" in LAYERS' second column is torch-free. Its
#      files include no LibTorch header (<torch/...>, <ATen/...>, <c10/...>) and no folder marked
#      "T" (LibTorch inside). "~" marks a folder that holds both kinds of file (its torch-free
#      files are listed in cmake/sources.cmake's LOCKSTEP_CORE_SOURCES).
#
# usage: tools/include-graph.sh [-q] [SOURCE_ROOT]    (-q: print nothing when the rules hold)
# stdout: the edges ("FROM -> TO  (N includes)"), then "ok"; violations go to stderr, each with the
#         offending includes as file:line.
# exit:   0 the rules hold; 1 a rule is broken; 2 usage error
set -euo pipefail

# layer torch folders                                  # what they are
LAYERS='
0  -  harness/config harness/stats harness/util       # foundation: config, statistics, utilities
0  T  include/lockstep harness/compat                 # foundation: the plugin SDK, LibTorch shims
1  -  harness/vocab                                   # THE TORCH-FREE RUN VOCABULARY: records, observer, config sections, probe file, turn protocol
1  -  harness/registry harness/gate                   # the name catalog, the gate
2  -  harness/serve                                   # serving: load, batcher, figures, its gate
2  -  harness/gitref                                  # git refs checked out into temporary worktrees
1  ~  harness/dist                                    # process groups (rendezvous torch-free, c10d not)
2  ~  workloads                                       # the reference model and its data
3  ~  variants                                        # act on the model from outside
4  T  harness/kernels                                 # binds the catalog names to kernels
5  T  harness/train/hook harness/train/profile harness/train/faults  # step hooks: the interface, profile window, faults
5  T  harness/conformance                             # kernels checked against the exact math in fp64
6  T  harness/train                                   # the model step: data, forward, backward, reduce, update
7  T  harness/train/probe                             # the function probe, built on the model builder
7  T  harness/serve/model                             # the model as a service, serving runs, capacity
8  -  harness/runs harness/external                   # run folders, child runs, external trainers
9  -  harness/compare harness/diagnose harness/scale harness/history   # analyses of runs
10 -  reports reports/diagnose reports/history reports/scale           # renderers only
11 ~  harness harness/cli                             # runner, config sections, commands
12 ~  harness/main.cpp                                # the entry point
'
quiet=0
if [[ ${1:-} == -q ]]; then quiet=1; shift; fi
[[ $# -le 1 ]] || { echo "usage: $0 [-q] [SOURCE_ROOT]" >&2; exit 2; }
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
tops=(harness variants workloads reports include/lockstep)
for t in "${tops[@]}"; do [[ -d $t ]] || { echo "$0: no $root/$t" >&2; exit 2; }; done

# "file:line:text" for every quoted include (and <...> naming a project folder).
grep -rHnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' \
     --include='*.cu' --include='*.cuh' \
     '^[[:space:]]*#[[:space:]]*include[[:space:]]*("|<(harness|variants|workloads|reports|include|torch|ATen|c10)/)' \
     "${tops[@]}" |
awk -v layers="$LAYERS" -v quiet="$quiet" '
function component(path,   n, s) {  # the node a project file belongs to: its folder ("" = not ours)
  if (path == "harness/main.cpp") return path
  n = split(path, s, "/")
  if (s[1] != "harness" && s[1] != "variants" && s[1] != "workloads" && s[1] != "reports" &&
      s[1] != "include") return ""
  if (n < 2 || (s[1] == "include" && n < 3)) return ""
  sub(/\/[^\/]*$/, "", path)
  return path
}
function normalize(path,   n, s, i, k, out, o) {  # folds "." and ".." segments
  n = split(path, s, "/"); k = 0
  for (i = 1; i <= n; i++) {
    if (s[i] == "." || s[i] == "") continue
    if (s[i] == "..") { if (k > 0) k--; continue }
    out[++k] = s[i]
  }
  o = ""
  for (i = 1; i <= k; i++) o = o (i > 1 ? "/" : "") out[i]
  return o
}
function dirname(path) { sub(/\/[^\/]*$/, "", path); return path }
BEGIN {
  nl = split(layers, rows, "\n")
  for (r = 1; r <= nl; r++) {
    line = rows[r]; sub(/#.*/, "", line)
    nf = split(line, f, " ")
    for (i = 3; i <= nf; i++) { layer[f[i]] = f[1] + 0; kind[f[i]] = f[2] }
  }
}
{
  # $0 = file:line:#include "target"  (the file name holds no colon)
  file = $0; sub(/:.*/, "", file)
  rest = substr($0, length(file) + 2); ln = rest; sub(/:.*/, "", ln)
  target = rest; sub(/^[^"<]*["<]/, "", target); sub(/[">].*$/, "", target)
  from = component(file)
  if (target ~ /^(torch|ATen|c10)\//) {  # a LibTorch header: only where LibTorch may be
    if (kind[from] == "-") {
      printf "include-graph: %s is torch-free but includes LibTorch:\n      %s:%s: #include <%s>\n",
             from, file, ln, target > "/dev/stderr"
      torchbad = 1
    }
    next
  }
  if (target ~ /^(harness|variants|workloads|reports|include)\//) to = component(target)
  else {  # relative to the including file (none today; counted the same way if one appears)
    rel = normalize(dirname(file) "/" target)
    to = ((getline probe < rel) >= 0) ? component(rel) : ""
    close(rel)
  }
  if (to == "" || to == from) next
  key = from SUBSEP to
  if (!(key in count)) { edges[++ne] = key; out[from] = out[from] " " to }
  count[key]++
  where[key] = where[key] "\n      " file ":" ln ": #include \"" target "\""
  nodes[from] = 1; nodes[to] = 1
}
function visit(n,   k, m, i, tos, j, cyc, a, b) {  # depth-first; returns 1 when it printed a cycle
  color[n] = 1; stack[++depth] = n
  k = split(out[n], tos, " ")
  for (i = 1; i <= k; i++) {
    m = tos[i]
    if (color[m] == 1) {
      for (j = depth; stack[j] != m; j--) ;
      cyc = ""
      for (; j <= depth; j++) cyc = cyc stack[j] " -> "
      printf "include-graph: CYCLE: %s%s\n", cyc, m > "/dev/stderr"
      for (j = depth; stack[j] != m; j--) ;
      for (; j <= depth; j++) {
        a = stack[j]; b = (j < depth) ? stack[j + 1] : m
        printf "  %s -> %s:%s\n", a, b, where[a SUBSEP b] > "/dev/stderr"
      }
      return 1
    }
    if (color[m] == 0 && visit(m)) return 1
  }
  color[n] = 2; depth--
  return 0
}
END {
  bad = 0
  for (n in nodes) if (!(n in layer)) {
    printf "include-graph: %s is in no layer: add it to LAYERS in tools/include-graph.sh\n", n > "/dev/stderr"
    bad = 1
  }
  for (e = 1; e <= ne; e++) {
    split(edges[e], p, SUBSEP); a = p[1]; b = p[2]
    if (!(a in layer) || !(b in layer)) continue
    if (layer[a] == 0) {
      printf "include-graph: %s (layer 0, the foundation) includes another component, %s:%s\n",
             a, b, where[edges[e]] > "/dev/stderr"
      bad = 1
    } else if (layer[b] > layer[a]) {
      printf "include-graph: %s (layer %d) includes an upper layer, %s (layer %d):%s\n",
             a, layer[a], b, layer[b], where[edges[e]] > "/dev/stderr"
      bad = 1
    }
  }
  for (e = 1; e <= ne; e++) {
    split(edges[e], p, SUBSEP); a = p[1]; b = p[2]
    if (kind[a] == "-" && kind[b] == "T") {
      printf "include-graph: %s is torch-free but includes %s, which holds LibTorch:%s\n",
             a, b, where[edges[e]] > "/dev/stderr"
      bad = 1
    }
  }
  if (torchbad) bad = 1
  for (n in nodes) if (color[n] == 0 && visit(n)) { bad = 1; break }
  if (!quiet) {
    for (e = 1; e <= ne; e++) {
      split(edges[e], p, SUBSEP)
      printf "%-18s -> %-18s (%d include%s)\n", p[1], p[2], count[edges[e]],
             count[edges[e]] == 1 ? "" : "s" | "sort"
    }
    close("sort")
  }
  if (bad) { print "include-graph: FAILED (see above)" > "/dev/stderr"; exit 1 }
  if (!quiet) print "ok: no include cycle between folders; every include goes to its own layer or below; torch-free folders include no LibTorch"
}'
