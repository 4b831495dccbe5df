#!/usr/bin/env bash
# Behaviour unchanged by a refactor (issue 53): report.json equal, apart from timings, for a
# fixed-seed compare of each kind, before and after. Five short compares (cwd = the source tree,
# --no-history), each report.json normalized by bench/report-equal/normalize.py: every value a
# timing decides (wall and step times, tokens/s, MFU, latency, phase shares, operator rankings,
# the timing checks' statistics and verdict words, a service's served counts under load) and the
# host and build names become "<timing>"/"<build>" in place; losses, alignment, checks, configs,
# statuses, failures, key order and the numbers' own digits stay.
#   exact        configs/baseline.toml vs configs/variants/fused_attention.toml (class exact)
#   approximate  configs/baseline.toml vs configs/variants/bf16.toml (noise envelope)
#   zero         configs/ddp2.toml vs configs/variants/zero2.toml (2 ranks, Gloo on loopback)
#   external     examples/external/baseline.toml vs bf16.toml (train.py on Debian's python3-torch)
#   serving      configs/serve/baseline.toml vs two_lanes.toml (1 s windows)
# Training kinds: 30 steps, 2 timing repeats of 10 steps (bench/report-equal/policy.toml: timing
# bounds no measurement crosses, so the verdict is the math's). About 4-5 minutes a pass on 2 cores.
#
# record runs every compare twice with the same binary: OUT_DIR/<kind>.json (normalized, the first
# run), OUT_DIR/raw/<kind>{,.again}/ (the compares' folders and logs), OUT_DIR/stripped.txt (each
# stripped path: kind, path, "differed" or "equal-twice" between the two runs, why), and fails when
# the two runs differ anywhere the normalizer keeps (noise it would miss).
# diff runs them once with another binary (folders in $REPORT_EQUAL_WORK, default a temp folder,
# kept when something differs) and compares the normalized JSONs byte for byte; exit 0 only when
# all five are equal, else prints each differing field path and exits 1.
#
# renormalize normalizes a recorded set again (after a change to normalize.py), without running.
#
# usage: bench/report-equal.sh record LOCKSTEP_BINARY OUT_DIR
#        bench/report-equal.sh diff   LOCKSTEP_BINARY BEFORE_DIR
#        bench/report-equal.sh renormalize - OUT_DIR
#        [KINDS=exact,approximate,zero,external,serving] (a subset, e.g. to rerun one)
set -euo pipefail
usage="usage: report-equal.sh record LOCKSTEP_BINARY OUT_DIR | diff LOCKSTEP_BINARY BEFORE_DIR"
usage+=" | renormalize - OUT_DIR"
cmd=${1:?$usage} lockstep=${2:?$usage} dir=${3:?$usage}
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/bench/report-equal
norm=(python3 "$here/normalize.py")
IFS=, read -r -a kinds <<< "${KINDS:-exact,approximate,zero,external,serving}"
if [ "$cmd" != renormalize ]; then
  lockstep=$(realpath "$lockstep")
  [ -x "$lockstep" ] || { echo "report-equal: $lockstep is not an executable" >&2; exit 2; }
fi
# The external trainer's Python on the binary's own LibTorch (bench/protocol-gate.sh): the wheel
# build's venv for build-cuda/, Debian's python3 (python3-torch 1.13) otherwise.
case $lockstep in
  */build-cuda/*) venv_python=$("$root/tools/torch-wheel.sh" python)
                  export PATH="${venv_python%/*}:$PATH" ;;
  *) export PATH="/usr/bin:/bin:$PATH" ;;
esac

kind_args() {  # KIND: the compare's arguments
  local training=(--steps 30 --repeats 2 --policy bench/report-equal/policy.toml)
  case $1 in
    exact) args=(configs/baseline.toml configs/variants/fused_attention.toml "${training[@]}") ;;
    approximate) args=(configs/baseline.toml configs/variants/bf16.toml "${training[@]}") ;;
    zero) args=(configs/ddp2.toml configs/variants/zero2.toml --steps 30 --repeats 2
                --policy bench/report-equal/zero_policy.toml) ;;
    external) args=(examples/external/baseline.toml examples/external/bf16.toml "${training[@]}") ;;
    serving)
      args=(configs/serve/baseline.toml configs/serve/two_lanes.toml --repeats 2
            --policy bench/report-equal/policy.toml)
      for kv in serve.duration_s=1.0 serve.peak_start_s=0.3 serve.peak_duration_s=0.4 \
                serve.drain_s=1.0 serve.speed_pairs=2; do
        args+=(--set-baseline "$kv" --set-variant "$kv")
      done ;;
    *) echo "report-equal: unknown kind $1" >&2; exit 2 ;;
  esac
}

# normalize FOLDER NORMALIZED STRIPPED: FOLDER/report.json, its timings neutralized.
normalize() {
  "${norm[@]}" norm "$1/report.json" "$2" "$3" --root "$root" --out-dir "$1"
}

# run_one KIND FOLDER NORMALIZED STRIPPED: one compare into FOLDER (log FOLDER.log), normalized.
run_one() {
  local kind=$1 out=$2 json=$3 stripped=$4 start rc
  kind_args "$kind"
  start=$SECONDS
  set +e
  (cd "$root" && "$lockstep" compare "${args[@]}" --out "$out" --no-history > "$out.log" 2>&1)
  rc=$?
  set -e
  echo "report-equal: $kind: exit $rc in $((SECONDS - start)) s ($out)" >&2
  if [ ! -s "$out/report.json" ]; then
    echo "report-equal: $kind: no report.json (exit $rc); the log's end:" >&2
    tail -n 20 "$out.log" >&2
    return 1
  fi
  normalize "$out" "$json" "$stripped"
}

# settle DIR: the recorded set's two runs of each kind normalized again (after a normalizer change),
# checked against each other, and DIR/stripped.txt; returns 1 when they differ where it keeps.
settle() {
  local dir=$1 kind raw noisy=0
  : > "$dir/stripped.txt"
  for kind in "${kinds[@]}"; do
    raw=$dir/raw/$kind
    normalize "$raw" "$dir/$kind.json" "$raw.stripped"
    normalize "$raw.again" "$raw.again.json" "$raw.again.stripped"
    # What differs between two runs of one binary is timing noise: all of it must be stripped.
    if ! "${norm[@]}" noise "$raw/report.json" "$raw.again/report.json" "$dir/$kind.json" \
         "$raw.again.json" > "$raw.noise"; then
      echo "report-equal: $kind: two runs of one binary differ where the normalizer keeps:" >&2
      grep '^LEFT' "$raw.noise" >&2
      noisy=1
    fi
    sort -u "$raw.stripped" "$raw.again.stripped" > "$raw.stripped.both"
    "${norm[@]}" table "$raw.stripped.both" "$raw.noise" | sed "s/^/$kind\t/" >> "$dir/stripped.txt"
  done
  echo "report-equal: $(cut -f 2 "$dir/stripped.txt" | sort -u | wc -l) distinct paths stripped," \
       "$(grep -c $'\tdiffered\t' "$dir/stripped.txt" || true) (kind, path) pairs differed" \
       "between two runs: $dir/stripped.txt" >&2
  [ "$noisy" = 0 ]
}

case $cmd in
  record)
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
      echo "report-equal: $dir is not empty" >&2
      exit 2
    fi
    mkdir -p "$dir/raw"
    dir=$(realpath "$dir")
    echo "report-equal: recording with $lockstep ($("$lockstep" --version)) into $dir" >&2
    for kind in "${kinds[@]}"; do
      run_one "$kind" "$dir/raw/$kind" "$dir/$kind.json" "$dir/raw/$kind.stripped"
      run_one "$kind" "$dir/raw/$kind.again" "$dir/raw/$kind.again.json" "$dir/raw/$kind.again.stripped"
    done
    settle "$dir"
    ;;
  renormalize)
    settle "$(realpath "$dir")"
    ;;
  diff)
    before=$(realpath "$dir")
    work=${REPORT_EQUAL_WORK:-$(mktemp -d /tmp/report-equal.XXXXXX)}
    mkdir -p "$work"
    echo "report-equal: $lockstep ($("$lockstep" --version)) against $before, in $work" >&2
    differ=()
    for kind in "${kinds[@]}"; do
      [ -s "$before/$kind.json" ] || { echo "report-equal: no $before/$kind.json" >&2; exit 2; }
      if ! run_one "$kind" "$work/$kind" "$work/$kind.json" "$work/$kind.stripped"; then
        differ+=("$kind")
        continue
      fi
      if cmp -s "$before/$kind.json" "$work/$kind.json"; then
        echo "report-equal: $kind: equal" >&2
      else
        echo "report-equal: $kind: DIFFERS; fields (before $before/$kind.json, after $work/$kind.json):"
        "${norm[@]}" diff "$before/$kind.json" "$work/$kind.json" | sed 's/^/  /' || true
        differ+=("$kind")
      fi
    done
    if [ "${#differ[@]}" -gt 0 ]; then
      echo "report-equal: NOT equal: ${differ[*]} (folders kept in $work)"
      exit 1
    fi
    echo "report-equal: all ${#kinds[@]} equal"
    [ -n "${REPORT_EQUAL_WORK:-}" ] || rm -rf "$work"
    ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
