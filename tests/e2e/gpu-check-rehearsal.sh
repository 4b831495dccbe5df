#!/usr/bin/env bash
# bench/gpu-check.sh --rehearse (issues 36, 51): the GPU check's whole sequence on this CPU, against
# this build (the wheel build): its build step (tools/cuda-build.sh against the pinned wheel's
# LibTorch, which must find this build configured by exactly that invocation), then measure with
# the tiny preset: same commands, same parsing, same Markdown and JSON. Asserts that every item ran
# (the plugin excepted: no device here; the 1-rank group where the build has Gloo to stand in for
# NCCL), that each comparison's row carries figures and a verdict, that the determinism check
# compared two loss files, and that the JSON agrees with the Markdown.
#
# usage: gpu-check-rehearsal.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
root=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out  # the script empties its OUT_DIR first
code=0
LOCKSTEP_GPU_BUILD_DIR=$build "$root/bench/gpu-check.sh" --rehearse "$out" > "$tmp/stdout" 2> "$tmp/stderr" || code=$?
md=$out/gpu-check.md
fail() { echo "rehearsal: $*"; echo "--- stdout"; cat "$tmp/stdout"; echo "--- stderr"; tail -n 40 "$tmp/stderr"; exit 1; }
[ "$code" -eq 0 ] || fail "bench/gpu-check.sh --rehearse exited $code"
cmp -s "$md" "$tmp/stdout" || fail "stdout is not the Markdown block"
grep -q '^### GPU check rehearsal (CPU, tiny preset): ' "$md" || fail "no title line"
for label in "bf16 vs bf16 + fused attention" "bf16 vs bf16 + CUDA graphs" "bf16 vs bf16 + fused AdamW" "fp32 vs tf32"; do
  # | label | 1,234 / 1,230 | +0.3% (...) | ... | verdict |: figures, not an error note.
  label_re=${label//+/\\+}  # the labels' "+" is literal
  grep -Eq "^\| $label_re \| [0-9,]+ / [0-9,]+ \| [+-][0-9.]+% .*\| (pass|fail|inconclusive)" "$md" ||
    fail "no figures for '$label'"
done
grep -Eq '^\| fp16, dynamic loss scaling \| [0-9,]+ \|' "$md" || fail "no figures for the fp16 run"
grep -q 'cuda-build: .*configured with exactly this invocation' "$tmp/stderr" ||
  fail "the build step did not find this build configured by the wheel build's invocation"
if grep -q '^gloo=ON$' "$build/lockstep-build.txt"; then
  grep -Eq '^\| bf16, 1-rank NCCL group \| [0-9,]+ \| .*backend gloo' "$md" || fail "no figures for the 1-rank group"
else
  grep -q 'nccl_1rank (not run: this build has no Gloo' "$md" || fail "the 1-rank group's absence is not said"
fi
grep -q '^Determinism (two runs, same config and seed): bitwise equal (20 steps' "$md" || fail "determinism not checked"
grep -q 'bf16_vs_fused_cuda (not run: no CUDA plugin built)' "$md" || fail "the plugin's absence is not said"
grep -Eq '^Kernel conformance \(.*\): \*\*pass\*\*, [0-9]+ kernel\(s\), [0-9]+ checks' "$md" || fail "no kernel conformance line"
python3 - "$out/gpu-check.json" <<'PY' || fail "gpu-check.json disagrees"
import json, sys
j = json.load(open(sys.argv[1]))
names = [i["name"] for i in j["items"]]
want = ["bf16_vs_fused_attention", "bf16_vs_all_three", "bf16_vs_cuda_graphs", "fp16_loss_scaling", "bf16_vs_fused_adamw",
        "bf16_vs_fused_cuda", "kernel_conformance", "nccl_1rank", "fp32_vs_tf32", "determinism_a", "determinism_b", "determinism"]
assert names == want, names
fa = j["items"][0]
assert fa["aligned"] is True and fa["verdict"] in ("pass", "fail", "inconclusive"), fa
assert fa["probe_max_ratio"] is not None and fa["probe_max_ratio"] >= 0, fa  # the probe ran
assert all(x > 0 for x in fa["tokens_per_sec"]), fa
PY
echo "rehearsal: $(grep -c '^| ' "$md") table rows, every item ran; $(sed -n 's/.*measure \([0-9]*\) s.*/\1/p' "$md") s"
