#!/usr/bin/env bash
# Fuzzes config loading for SECONDS: builds fuzz/config_fuzz.cpp with clang++ and libFuzzer +
# ASan + UBSan (the config sources only, no LibTorch) into build/fuzz/, runs it on a copy of the
# seed corpus fuzz/corpus/config/, prints the exec count, and exits non-zero on any crash.
# Usage: fuzz/run-config-fuzz.sh SECONDS        (CXX=clang++-NN to pick another clang)
set -euo pipefail

secs=${1:?usage: $0 SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/fuzz
cxx=${CXX:-$(command -v clang++-14 || command -v clang++)}

# The config loader, the registry, and the .cpp of every header the registry includes (schema.cpp
# and each section's owner, all torch-free), so a newly registered section is picked up.
sources=(harness/config/config.cpp harness/sections.cpp variants/precision_traits.cpp
         $(sed -n 's|^#include "\(.*\)\.h"$|\1.cpp|p' "$root/harness/sections.cpp"))

mkdir -p "$out"
# Known upstream UB, excluded from UBSan so the run can go on to find anything else: toml++ 3.3's
# is_non_ascii_horizontal_whitespace() reaches TOML_UNREACHABLE for most non-ASCII code points
# (e.g. "seed = é"; marzer/tomlplusplus#295, fixed by #305). Drop this once toml++ has the fix.
printf '[undefined]\nfun:*is_non_ascii_horizontal_whitespace*\n' > "$out/ubsan-ignore.txt"
echo "building $out/config_fuzz with $cxx"
"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -fsanitize-ignorelist="$out/ubsan-ignore.txt" \
  -I"$root" "${sources[@]/#/$root/}" "$root/fuzz/config_fuzz.cpp" -o "$out/config_fuzz"

# Work on a copy, so the checked-in seeds stay small; crashes land in $out/crash-*.
rm -rf "$out/corpus"
cp -r "$root/fuzz/corpus/config" "$out/corpus"
rm -f "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*

# Full log in $out/fuzz.log; on screen only progress (pulse lines) and findings.
set +e
"$out/config_fuzz" "$out/corpus" -max_total_time="$secs" -max_len=4096 -timeout=10 \
  -artifact_prefix="$out/" -print_final_stats=1 2>&1 | tee "$out/fuzz.log" |
  grep --line-buffered -E 'INITED|pulse|DONE|Done|ERROR|SUMMARY|FINDING|runtime error|Test unit written'
rc=${PIPESTATUS[0]}
set -e

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -1)
echo "config fuzz: ${execs:-?} execs in ${secs}s, $(grep -o 'cov: [0-9]* ft: [0-9]*' "$out/fuzz.log" | tail -1), exit $rc"
[ "$rc" -eq 0 ] || echo "config fuzz: FAILED (see $out/fuzz.log); reproduce: $out/config_fuzz $out/crash-*" >&2
exit "$rc"
