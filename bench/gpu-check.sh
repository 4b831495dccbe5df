#!/usr/bin/env bash
# The GPU check (issue 17): one prepared script for a machine with one NVIDIA GPU, <= 8 minutes.
#
#   1. builds `lockstep` and the in-process CUDA tests against the machine's PyTorch LibTorch
#      (LOCKSTEP_TORCH_DIR, else python3 -c 'import torch;print(torch.utils.cmake_prefix_path)'),
#      and on a CUDA LibTorch the CUDA example plugin examples/plugins/fused_cuda (nvcc, against
#      the installed plugin SDK)
#   2. runs the test suite's CUDA-labelled tests (ctest -L cuda; with the plugin's kernels against
#      LibTorch's ops)
#   3. gpt2-124m on the GPU: fp32 vs tf32, bf16 vs bf16 + fused attention, bf16 vs bf16 + fused
#      AdamW, bf16 vs bf16 + CUDA graphs (four `lockstep compare`), fp16 with dynamic loss scaling and a 1-rank NCCL group
#      (two `lockstep run`), a determinism check (two runs, loss curves bitwise equal), and last,
#      so it never displaces those, bf16 vs bf16 + the fused_cuda plugin's kernels (a fifth compare)
#   4. prints tokens/s, MFU, P99, the SDPA backend and each verdict, and writes them as one
#      Markdown block ready for bench/RESULTS.md: OUT_DIR/gpu-check.md (also on stdout)
#
# Without a CUDA device it does 1 and 2 (the CUDA tests skip) and says "no CUDA device: skipping
# the GPU runs" (exit 0). The runs are sized for the budget: 30-step loss checks, REPEATS timing
# repeats of 10 steps per arm; a run is not started once LOCKSTEP_GPU_CHECK_BUDGET_S seconds have
# passed, and none may run past LOCKSTEP_GPU_CHECK_DEADLINE_S (it is killed: the report says which
# were skipped or cut). With 3 repeats a timing verdict is indicative only (the gate wants 5); the
# loss checks and the determinism check are the same as always.
#
# usage: bench/gpu-check.sh [OUT_DIR]     (default: BUILD_DIR/gpu-check)
# Environment:
#   LOCKSTEP_TORCH_DIR          a LibTorch (its CMake prefix); default: python3's torch
#   LOCKSTEP_GPU_BUILD_DIR      build folder (default ./build-gpu)
#   LOCKSTEP_NCCL_INCLUDE_DIR   a folder with nccl.h (default: the CUDA toolkit's, or pip's wheel)
#   LOCKSTEP_DEPS_PREFIX        extra CMAKE_PREFIX_PATH (TOML++, CLI11, nlohmann-json, SQLite,
#                               Eigen, GoogleTest) where the system has no Debian packages
#   LOCKSTEP_GPU_CHECK_BUDGET_S start no GPU run after this many seconds (default 390)
#   LOCKSTEP_GPU_CHECK_DEADLINE_S kill a GPU run still going at this many seconds (default 465)
#   LOCKSTEP_GPU_CHECK_REPEATS  timing repeats per arm (default 3)
# Exit: 0 checked (a timing verdict that fails is reported, not fatal); 1 a CUDA test failed, a
# loss check failed, a run crashed or the determinism check failed; 2 the build failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${LOCKSTEP_GPU_BUILD_DIR:-$ROOT/build-gpu}
OUT=${1:-$BUILD/gpu-check}
BUDGET_S=${LOCKSTEP_GPU_CHECK_BUDGET_S:-390}
DEADLINE_S=${LOCKSTEP_GPU_CHECK_DEADLINE_S:-465}
REPEATS=${LOCKSTEP_GPU_CHECK_REPEATS:-3}
STEPS=30
say() { printf 'gpu-check: %s\n' "$*" >&2; }
status=0

# --- 1. build -------------------------------------------------------------------------------------
torch_dir=${LOCKSTEP_TORCH_DIR:-}
if [ -z "$torch_dir" ] && command -v python3 >/dev/null; then
  torch_dir=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
fi
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_SANITIZED_TESTS=OFF)
if [ -n "$torch_dir" ]; then
  say "LibTorch: $torch_dir"
  cmake_args+=("-DLOCKSTEP_TORCH_DIR=$torch_dir")
  # pip's CUDA LibTorch ships no nccl.h; its nvidia-nccl wheel does.
  nccl_inc=${LOCKSTEP_NCCL_INCLUDE_DIR:-}
  if [ -z "$nccl_inc" ]; then
    site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null || true)
    if [ -n "$site" ] && [ -d "$site/nvidia" ]; then
      header=$(find "$site/nvidia" -name nccl.h -print -quit 2>/dev/null)
      [ -n "$header" ] && nccl_inc=$(dirname "$header")
    fi
  fi
  [ -n "$nccl_inc" ] && cmake_args+=("-DLOCKSTEP_NCCL_INCLUDE_DIR=$nccl_inc")
  nvcc=$(command -v nvcc || true)
  [ -z "$nvcc" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
  [ -n "$nvcc" ] && cmake_args+=("-DCUDAToolkit_ROOT=$(dirname "$(dirname "$nvcc")")")
  # The CUDA plugin's own CMake project finds nvcc through CUDACXX.
  [ -n "$nvcc" ] && [ -z "${CUDACXX:-}" ] && export CUDACXX=$nvcc
else
  say "no PyTorch found (python3 -c 'import torch'): building with the system LibTorch"
fi
[ -n "${LOCKSTEP_DEPS_PREFIX:-}" ] && cmake_args+=("-DCMAKE_PREFIX_PATH=$LOCKSTEP_DEPS_PREFIX")
command -v ninja >/dev/null && cmake_args+=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" "${cmake_args[@]}" >&2 || { say "cmake could not configure the build"; exit 2; }
fi
targets=(lockstep cuda_path_tests)
# A CUDA LibTorch: the CUDA example plugin (its kernel tests are in the build's test list).
cuda_plugin=""
if grep -q fused_cuda_kernels "$BUILD/tests/CTestTestfile.cmake" 2>/dev/null; then
  targets+=(fused_cuda_tests)
  cuda_plugin=$BUILD/examples/plugins/fused_cuda/libfused_cuda.so
fi
plugin_pid=""
if [ -n "$cuda_plugin" ]; then
  # Out of tree against the SDK, which the configured build installs (no lockstep binary needed):
  # alongside the main build (nvcc is mostly one process), for this GPU's architecture only.
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 || true)
  plugin_env=()
  [[ $arch =~ ^[0-9]+\.[0-9]+$ ]] && [ -z "${TORCH_CUDA_ARCH_LIST:-}" ] &&
    plugin_env=("TORCH_CUDA_ARCH_LIST=$arch")
  env "${plugin_env[@]}" "$ROOT/examples/plugins/build-example.sh" "$BUILD" fused_cuda \
    > "$BUILD/gpu-check-plugin.log" 2>&1 &
  plugin_pid=$!
else
  say "LibTorch without CUDA: the fused_cuda plugin is not built"
fi
if ! cmake --build "$BUILD" --target "${targets[@]}" --parallel "$(nproc)" >&2; then
  [ -n "$plugin_pid" ] && kill "$plugin_pid" 2>/dev/null
  say "build failed"
  exit 2
fi
if [ -n "$plugin_pid" ] && ! wait "$plugin_pid"; then
  cat "$BUILD/gpu-check-plugin.log" >&2
  say "the fused_cuda plugin did not build"
  exit 2
fi
build_s=$SECONDS
say "built in ${build_s} s"

# --- 2. the CUDA-labelled tests -------------------------------------------------------------------
if (cd "$BUILD" && ctest -L cuda --output-on-failure 2>&1 | tee "$BUILD/gpu-check-ctest.log" >&2); then
  tests="passed"
  grep -q "(Skipped)" "$BUILD/gpu-check-ctest.log" && tests="skipped (no CUDA device)"
else
  tests="FAILED"
  status=1
fi
say "CUDA-labelled tests: $tests"

if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
  echo "no CUDA device: skipping the GPU runs"
  exit "$status"
fi

# --- 3. the GPU runs ------------------------------------------------------------------------------
rm -rf "$OUT" && mkdir -p "$OUT"
LS=$BUILD/lockstep
on_gpu=(run.device=cuda model.preset=gpt2-124m)
policy=$OUT/policy.toml
printf '[gate]\nrepeats = %s\ntiming_steps = 10\nseeds = 1\n' "$REPEATS" > "$policy"
skipped=()

in_budget() {
  if [ "$SECONDS" -ge "$BUDGET_S" ]; then
    skipped+=("$1")
    say "over the ${BUDGET_S} s budget: skipping $1"
    return 1
  fi
}
# The seconds a run may take: up to the deadline.
left() { echo $((DEADLINE_S - SECONDS)); }
# After a run: exit 124/137 is the deadline's kill.
cut_short() {
  case $2 in 124 | 137) skipped+=("$1 (cut at the deadline)") ;; esac
}

# compare NAME BASELINE VARIANT [--set-variant k=v]...
compare() {
  local name=$1 base=$2 var=$3
  shift 3
  in_budget "$name" || return 0
  local sets=() kv
  for kv in "${on_gpu[@]}"; do sets+=(--set-baseline "$kv" --set-variant "$kv"); done
  say "compare $name"
  timeout --kill-after=5 "$(left)" "$LS" compare "$ROOT/$base" "$ROOT/$var" --steps "$STEPS" \
    --policy "$policy" --out "$OUT/$name" --no-history "${sets[@]}" "$@" > "$OUT/$name.log" 2>&1
  local code=$?
  say "compare $name: exit $code"
  cut_short "$name" "$code"
  case $code in 0 | 1) ;; *) status=1 ;; esac
}

# run NAME CONFIG [--set k=v]...
run() {
  local name=$1 cfg=$2
  shift 2
  in_budget "$name" || return 0
  local sets=() kv
  for kv in "${on_gpu[@]}"; do sets+=(--set "$kv"); done
  say "run $name"
  timeout --kill-after=5 "$(left)" "$LS" run "$ROOT/$cfg" --steps "$STEPS" --out "$OUT/$name" \
    --no-history --quiet "${sets[@]}" "$@" > "$OUT/$name.log" 2>&1
  local code=$?
  say "run $name: exit $code"
  cut_short "$name" "$code"
  [ $code -eq 0 ] || status=1
}

compare fp32_vs_tf32 configs/baseline.toml configs/variants/tf32.toml
compare bf16_vs_fused_attention configs/variants/bf16.toml configs/variants/bf16_fused_attention.toml
compare bf16_vs_fused_adamw configs/variants/bf16.toml configs/variants/bf16_fused_adamw.toml
compare bf16_vs_cuda_graphs configs/variants/bf16.toml configs/variants/bf16.toml \
  --set-variant run.cuda_graphs=true --set-variant run.name=bf16_cuda_graphs
run fp16_loss_scaling configs/variants/fp16.toml
run nccl_1rank configs/variants/bf16.toml --set parallel.backend=nccl
run determinism_a configs/variants/bf16_fused_attention.toml --export-losses "$OUT/determinism_a.loss"
run determinism_b configs/variants/bf16_fused_attention.toml --export-losses "$OUT/determinism_b.loss"
determinism="not run"
if [ -f "$OUT/determinism_a.loss" ] && [ -f "$OUT/determinism_b.loss" ]; then
  if cmp -s "$OUT/determinism_a.loss" "$OUT/determinism_b.loss"; then
    determinism="bitwise equal ($(wc -l < "$OUT/determinism_a.loss") steps, bf16 + fused attention)"
  else
    determinism="DIFFERENT: $(diff "$OUT/determinism_a.loss" "$OUT/determinism_b.loss" | head -n 2 | tr '\n' ' ')"
    status=1
  fi
fi
if [ -n "$cuda_plugin" ]; then
  compare bf16_vs_fused_cuda configs/variants/bf16.toml configs/variants/fused_cuda.toml \
    --set-variant "plugins.load=[\"$cuda_plugin\"]"
else
  skipped+=("bf16_vs_fused_cuda (no CUDA plugin built)")
fi

# --- 4. the Markdown block ------------------------------------------------------------------------
GPU_CHECK_OUT=$OUT GPU_CHECK_TESTS=$tests GPU_CHECK_DETERMINISM=$determinism \
GPU_CHECK_SKIPPED="${skipped[*]}" GPU_CHECK_BUILD_S=$build_s GPU_CHECK_WALL_S=$SECONDS \
GPU_CHECK_REPEATS=$REPEATS GPU_CHECK_STEPS=$STEPS python3 - > "$OUT/gpu-check.md" <<'PY'
import json, os, datetime
out = os.environ["GPU_CHECK_OUT"]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def num(x, fmt):
    return fmt.format(x) if isinstance(x, (int, float)) else "-"

def mfu(x):
    return num(x * 100 if isinstance(x, (int, float)) else x, "{:.1f}%") if x != "unknown" else "unknown"

env = {}
rows = []
for name, label in [("fp32_vs_tf32", "fp32 vs tf32"),
                    ("bf16_vs_fused_attention", "bf16 vs bf16 + fused attention"),
                    ("bf16_vs_fused_adamw", "bf16 vs bf16 + fused AdamW"),
                    ("bf16_vs_cuda_graphs", "bf16 vs bf16 + CUDA graphs"),
                    ("bf16_vs_fused_cuda", "bf16 vs bf16 + fused_cuda plugin (bias+GELU, LayerNorm)")]:
    r = load(os.path.join(out, name, "report.json"))
    if r is None:
        rows.append("| %s | not run (see %s.log) | | | | | | |" % (label, name))
        continue
    env = env or r.get("environment", {})
    b, v = r["baseline"], r["variant"]
    sdpa = "/".join(a.get("alignment_run", {}).get("environment", {}).get("sdpa_backend", "-")
                    for a in (b, v))
    d = r["delta"]["tokens_per_sec_pct"]
    a = r["alignment"]
    loss = "%s (diff %s)" % ("aligned" if a["aligned"] else "NOT ALIGNED", num(a.get("abs_diff"), "{:.1e}"))
    rows.append("| %s | %s / %s | %s (%s) | %s / %s | %s / %s | %s | %s | %s%s |" % (
        label, num(b["tokens_per_sec"], "{:,.0f}"), num(v["tokens_per_sec"], "{:,.0f}"),
        num(d["value"], "{:+.1f}%"), d["wording"], mfu(b["mfu"]), mfu(v["mfu"]),
        num(b["step_ms"]["p99"], "{:.1f}"), num(v["step_ms"]["p99"], "{:.1f}"), sdpa, loss,
        r["verdict"], " (indicative: %d repeats)" % r["repeats"] if r.get("too_few_repeats") else ""))

runs = []
for name, label in [("fp16_loss_scaling", "fp16, dynamic loss scaling"),
                    ("nccl_1rank", "bf16, 1-rank NCCL group")]:
    s = load(os.path.join(out, name, "summary.json"))
    if s is None:
        runs.append("| %s | not run or failed (see %s.log) | | | |" % (label, name))
        continue
    env = env or s.get("environment", {})
    e = s.get("environment", {})
    note = ("%d overflow skips; final loss %s" % (s.get("overflow_skips", 0), num(s.get("final_loss"), "{:.4f}"))
            if name.startswith("fp16") else
            "backend %s; comm %s of the step" % (e.get("comm_backend", "?"),
                                                  num(100 * s.get("phase_share", {}).get("comm", 0), "{:.1f}%")))
    runs.append("| %s | %s | %s | %s | %s |" % (label, num(s.get("tokens_per_sec"), "{:,.0f}"),
                                              mfu(s.get("mfu")), num(s.get("step_ms", {}).get("p99"), "{:.1f}"), note))

print("### GPU check: %s, %s" % (env.get("gpu", "unknown GPU"), datetime.date.today().isoformat()))
print()
print("`bench/gpu-check.sh` at commit %s: LibTorch %s, CUDA runtime %s, NVIDIA driver %s, NCCL %s; "
      "`gpt2-124m` (B 8 x T 1024), %s-step loss checks, %s timing repeats x 10 steps per arm. "
      "Build %s s, whole check %s s. CUDA-labelled tests: %s." % (
          env.get("git_commit", "?")[:12], env.get("libtorch", "?"), env.get("cuda_runtime", "?"),
          env.get("nvidia_driver", "?"), env.get("nccl", "?"), os.environ["GPU_CHECK_STEPS"],
          os.environ["GPU_CHECK_REPEATS"], os.environ["GPU_CHECK_BUILD_S"],
          os.environ["GPU_CHECK_WALL_S"], os.environ["GPU_CHECK_TESTS"]))
print()
print("| comparison | tokens/s (baseline / variant) | delta | MFU | P99 ms | SDPA backend | loss check | verdict |")
print("|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print()
print("| run | tokens/s | MFU | P99 ms | notes |")
print("|---|---|---|---|---|")
print("\n".join(runs))
print()
print("Determinism (two runs, same config and seed): %s." % os.environ["GPU_CHECK_DETERMINISM"])
if os.environ.get("GPU_CHECK_SKIPPED"):
    print("Not run or cut short (time budget): %s." % os.environ["GPU_CHECK_SKIPPED"])
PY
cat "$OUT/gpu-check.md"
say "done in ${SECONDS} s; the block is in $OUT/gpu-check.md"
exit "$status"
