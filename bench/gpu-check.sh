#!/usr/bin/env bash
# The GPU check (issues 17, 36): two calls on a machine with one NVIDIA GPU, each within 5 minutes,
# the second right after the first (a lent machine cools 30 s after a call; the build folder
# stays on it between the two):
#
#   bench/gpu-check.sh build      preflight (printed first; stops with one line on a mismatch), then
#                                 the wheel build's own CMake invocation (tools/cuda-build.sh, the
#                                 one `./lockstep` makes of build-cuda/ on every commit) against the
#                                 machine's own torch (torch.utils.cmake_prefix_path), with the kit
#                                 for what that machine lacks (bench/gpu-kit.sh made it on a Debian
#                                 machine; it travels as .gpu-kit/), the CUDA example plugin out of
#                                 tree, and the CUDA-labelled tests (ctest -L cuda)
#   bench/gpu-check.sh measure    gpt2-124m on the GPU, in this order: bf16 vs bf16 + fused attention
#                                 (with its function probe), bf16 vs bf16 + fused attention + fused
#                                 AdamW + CUDA graphs, bf16 vs bf16 + CUDA graphs, fp16 with
#                                 dynamic loss scaling, bf16 vs bf16 + fused AdamW, bf16 vs bf16 +
#                                 the fused_cuda plugin, a 1-rank NCCL group, fp32 vs tf32; then a
#                                 determinism check (two runs, loss curves bitwise equal) if time is
#                                 left. Each item has its own deadline and leaves no process behind.
#   bench/gpu-check.sh preflight  the preflight alone
#   bench/gpu-check.sh --rehearse the same sequence on a CPU machine: the build step's very
#                                 commands against the pinned wheel (wheels.lock, tools/torch-wheel.sh)
#                                 in LOCKSTEP_GPU_BUILD_DIR (default ./build-cuda), then measure with
#                                 the tiny preset: same commands, same parsing, same Markdown (the
#                                 GPU-only knobs become their CPU neighbours: no CUDA graphs, bf16
#                                 for fp16, gloo for nccl where the build has Gloo; the plugin is
#                                 skipped). The CUDA-labelled tests are left to the suite, which runs
#                                 them in that same build. A test of the wheel build's suite runs it
#                                 on every commit.
#
# Results, partial ones too, are written as they come: OUT_DIR/gpu-check.md (a Markdown block for
# bench/RESULTS.md, also printed on stdout at the end) and OUT_DIR/gpu-check.json.
#
# usage: bench/gpu-check.sh build|measure|preflight [--rehearse] [OUT_DIR]
#        bench/gpu-check.sh --rehearse [OUT_DIR]
# The guide: docs/gpu.md.
# Environment:
#   LOCKSTEP_TORCH_DIR          a LibTorch (its CMake prefix); default: python3's torch
#   LOCKSTEP_GPU_BUILD_DIR      build folder (default ./build-gpu; ./build-cuda when rehearsing)
#   LOCKSTEP_GPU_KIT            the kit's folder (default ./.gpu-kit)
#   LOCKSTEP_NCCL_INCLUDE_DIR   a folder with nccl.h (default: the CUDA toolkit's, or pip's wheel)
#   LOCKSTEP_GPU_BUILD_TARGETS  build these targets only ("none": configure only)
#   LOCKSTEP_GPU_MEASURE_S      the measure call's budget in seconds (default 290)
#   LOCKSTEP_GPU_CHECK_REPEATS  timing repeats per arm (default 3)
#   CUDA_VISIBLE_DEVICES        default 0: one GPU, named
# Exit: 0 checked (a gate verdict that fails is a result, reported); 1 a CUDA test failed, a run
# crashed or was cut at its deadline, or the determinism check failed; 2 the build failed;
# 3 the preflight found a mismatch (a missing tool, CUDA versions that differ).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf 'gpu-check: %s\n' "$*" >&2; }

cmd=""
rehearse=0
out_arg=""
for a in "$@"; do
  case $a in
    build | measure | preflight) cmd=$a ;;
    --rehearse) rehearse=1 ;;
    -h | --help) sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) out_arg=$a ;;
  esac
done
[ -z "$cmd" ] && [ $rehearse -eq 1 ] && cmd=all
[ -z "$cmd" ] && { say "usage: bench/gpu-check.sh build|measure|preflight [--rehearse] [OUT_DIR]"; exit 3; }

if [ $rehearse -eq 1 ]; then
  BUILD=${LOCKSTEP_GPU_BUILD_DIR:-$ROOT/build-cuda}
else
  BUILD=${LOCKSTEP_GPU_BUILD_DIR:-$ROOT/build-gpu}
fi
OUT=${out_arg:-$BUILD/gpu-check}
KIT=${LOCKSTEP_GPU_KIT:-$ROOT/.gpu-kit}
MEASURE_S=${LOCKSTEP_GPU_MEASURE_S:-290}
REPEATS=${LOCKSTEP_GPU_CHECK_REPEATS:-3}
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}

# --- preflight ------------------------------------------------------------------------------------
torch_dir=${LOCKSTEP_TORCH_DIR:-}
torch_cuda=""
preflight() {
  local bad=()
  if [ $rehearse -eq 1 ]; then
    say "preflight: rehearsal on the CPU: the pinned wheel's LibTorch, the build in $BUILD, the tiny preset"
    [ -z "$torch_dir" ] && torch_dir=$("$ROOT/tools/torch-wheel.sh" prefix)
    [ -n "$torch_dir" ] || bad+=("the pinned wheel's LibTorch (tools/torch-wheel.sh)")
    command -v python3 >/dev/null || bad+=("python3 (renders the Markdown)")
  else
    if command -v nvidia-smi >/dev/null; then
      say "preflight: GPU: $(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>&1 | head -n 1)"
    else
      say "preflight: no nvidia-smi"
    fi
    local py
    py=$(python3 -c 'import torch, sys; print(torch.__version__, torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI, torch.utils.cmake_prefix_path, torch.cuda.is_available(), sep="|")' 2>/dev/null || true)
    if [ -n "$py" ]; then
      IFS='|' read -r tv torch_cuda abi tdir avail <<< "$py"
      say "preflight: PyTorch $tv (CUDA $torch_cuda, _GLIBCXX_USE_CXX11_ABI=$abi, cuda available: $avail)"
      [ -z "$torch_dir" ] && torch_dir=$tdir
    else
      say "preflight: python3 has no torch"
    fi
    [ -n "$torch_dir" ] || bad+=("a LibTorch (python3 -c 'import torch' or LOCKSTEP_TORCH_DIR)")
    local nvcc
    nvcc=$(command -v nvcc || true)
    [ -z "$nvcc" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
    if [ -n "$nvcc" ]; then
      local nv
      nv=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
      say "preflight: nvcc $nv ($nvcc)"
      export CUDACXX=${CUDACXX:-$nvcc}
      if [ -n "$torch_cuda" ] && [ "$torch_cuda" != None ] && [ "${nv%%.*}" != "${torch_cuda%%.*}" ]; then
        bad+=("the CUDA toolkit (nvcc $nv) and PyTorch's CUDA ($torch_cuda) differ in major version")
      fi
    else
      say "preflight: no nvcc"
      [ -n "$torch_cuda" ] && [ "$torch_cuda" != None ] && bad+=("nvcc (a CUDA LibTorch's CMake needs the toolkit)")
    fi
    if command -v cmake >/dev/null; then say "preflight: $(cmake --version | head -n 1)"; else bad+=("cmake"); fi
    if command -v ninja >/dev/null; then say "preflight: ninja $(ninja --version)"; else say "preflight: no ninja (make)"; fi
    if command -v c++ >/dev/null; then say "preflight: $(c++ --version | head -n 1)"; else bad+=("a C++ compiler (c++)"); fi
    say "preflight: $(ldd --version 2>&1 | head -n 1); $(nproc) cores"
    if [ -n "$torch_dir" ]; then
      local inc=$torch_dir/../../include
      if [ -d "$inc/gloo" ]; then say "preflight: LibTorch ships Gloo's headers"
      else say "preflight: LibTorch has no Gloo headers: no gloo backend in this build (NCCL only)"; fi
    fi
    if ls "$KIT"/*.deb >/dev/null 2>&1; then
      say "preflight: kit: $(find "$KIT" -name '*.deb' | wc -l) packages, $(du -sk "$KIT" | awk '{print $1}') KiB"
    elif ! command -v dpkg-query >/dev/null; then
      bad+=("the kit ($KIT): run bench/gpu-kit.sh on a Debian machine and carry .gpu-kit")
    else
      say "preflight: no kit: using this Debian system's packages"
    fi
  fi
  if [ ${#bad[@]} -gt 0 ]; then
    local b
    for b in "${bad[@]}"; do echo "gpu-check: preflight: missing or mismatched: $b" >&2; done
    return 3
  fi
  say "preflight: ok"
}

# --- build: the wheel build's CMake invocation (tools/cuda-build.sh), on this machine's torch ----
build() {
  # LOCKSTEP_GPU_BUILD_TARGETS: other targets (build-system names or object files), "none" to
  # configure only. By default what the CUDA tests and the measure call need, not the whole suite.
  local targets=(lockstep cuda_path_tests)
  [ -n "${LOCKSTEP_GPU_BUILD_TARGETS:-}" ] && read -r -a targets <<< "$LOCKSTEP_GPU_BUILD_TARGETS"
  local kit=""
  ls "$KIT"/*.deb >/dev/null 2>&1 && kit=$KIT
  if [ $rehearse -eq 0 ]; then
    # This GPU's own architecture only (checked: 9.0 gives only sm_90 + compute_90), so the build
    # takes less of the budget; the wheel build here compiles for 9.0+PTX.
    local arch
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 || true)
    [[ $arch =~ ^[0-9]+\.[0-9]+$ ]] && export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$arch+PTX}
  fi
  # The rehearsal runs inside the wheel build's own suite: its build step must find that build
  # configured by this very invocation (nothing reconfigured under the running tests).
  LOCKSTEP_CUDA_BUILD_SAME=$rehearse LOCKSTEP_GPU_KIT=$kit \
    "$ROOT/tools/cuda-build.sh" "$BUILD" "$torch_dir" "${targets[@]}" || return 2
  [ -n "${LOCKSTEP_GPU_BUILD_TARGETS:-}" ] && return 0
  # The rehearsal leaves the plugin to the suite's plugin_fused_cuda_build (the same script, the same
  # folder: it must not run twice at once).
  if [ $rehearse -eq 0 ] && grep -q fused_cuda_kernels "$BUILD/tests/CTestTestfile.cmake" 2>/dev/null; then
    cmake --build "$BUILD" --target fused_cuda_tests --parallel "$(nproc)" >&2 || { say "build failed"; return 2; }
    # Out of tree against the installed plugin SDK (the suite's plugin_fused_cuda_build does the
    # same in the wheel build).
    if ! "$ROOT/examples/plugins/build-example.sh" "$BUILD" fused_cuda > "$BUILD/gpu-check-plugin.log" 2>&1; then
      tail -n 30 "$BUILD/gpu-check-plugin.log" >&2
      say "the fused_cuda plugin did not build"
      return 2
    fi
  fi
  say "built in ${SECONDS} s"
}

cuda_tests() {
  if (cd "$BUILD" && timeout --kill-after=5 240 ctest -L cuda --output-on-failure 2>&1 | tee "$BUILD/gpu-check-ctest.log" >&2); then
    say "CUDA-labelled tests: passed$(grep -q '(Skipped)' "$BUILD/gpu-check-ctest.log" && echo ' (some skipped: no CUDA device)')"
    echo passed > "$BUILD/gpu-check-tests"
  else
    say "CUDA-labelled tests: FAILED"
    echo FAILED > "$BUILD/gpu-check-tests"
    return 1
  fi
}

# --- measure --------------------------------------------------------------------------------------
status=0
# Each item: name, its deadline in seconds, the command. Results append to $OUT/items.tsv as they
# come (name, kind, exit code, seconds, note) and the report is rendered again after each.
LS=""
dev=()
policy=""
started=0
check_id=""
left() { echo $((MEASURE_S - (SECONDS - started))); }

record() {  # NAME KIND CODE SECONDS NOTE
  printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$OUT/items.tsv"
  render > /dev/null
}

# item NAME KIND CAP_S CMD...: runs CMD in its own process group under a deadline of
# min(CAP_S, what is left); kills the whole group at the deadline.
item() {
  local name=$1 kind=$2 cap=$3
  shift 3
  local budget
  budget=$(left)
  [ "$budget" -gt "$cap" ] && budget=$cap
  if [ "$budget" -lt 10 ]; then
    say "$name: not run (the measure budget is spent)"
    record "$name" "$kind" skipped 0 "not run: the ${MEASURE_S} s budget was spent"
    return 0
  fi
  say "$name (deadline ${budget} s)"
  local t0=$SECONDS code
  # timeout signals its whole process group: the child runs too (and die with their parent).
  timeout --kill-after=5 "$budget" "$@" > "$OUT/$name.log" 2>&1
  code=$?
  local took=$((SECONDS - t0)) note=""
  case $code in
    0) ;;
    1) case $kind in
         compare) note="the gate failed (a result)" ;;
         conformance) note="a kernel failed its conformance check (a result)" ;;
         *) status=1 ;;
       esac ;;
    124 | 137) note="cut at its ${budget} s deadline"; status=1 ;;
    *) note="exit $code: $(grep -v '^\s*$' "$OUT/$name.log" | tail -n 1 | cut -c1-160)"; status=1 ;;
  esac
  say "$name: exit $code in ${took} s${note:+ ($note)}"
  record "$name" "$kind" "$code" "$took" "$note"
}

compare() {  # NAME CAP BASELINE VARIANT [--set-variant k=v]...
  local name=$1 cap=$2 base=$3 var=$4
  shift 4
  local sets=() kv
  for kv in "${dev[@]}"; do sets+=(--set-baseline "$kv" --set-variant "$kv"); done
  item "$name" compare "$cap" "$LS" compare "$ROOT/$base" "$ROOT/$var" --steps "$STEPS" \
    --policy "${ITEM_POLICY:-$policy}" --out "$OUT/$name" --no-history --force "${sets[@]}" "$@"
}

run() {  # NAME CAP CONFIG [--set k=v]...
  local name=$1 cap=$2 cfg=$3
  shift 3
  local sets=() kv
  for kv in "${dev[@]}"; do sets+=(--set "$kv"); done
  item "$name" run "$cap" "$LS" run "$ROOT/$cfg" --steps "$STEPS" --out "$OUT/$name" \
    --no-history --quiet "${sets[@]}" "$@"
}

measure() {
  rm -rf "$OUT" && mkdir -p "$OUT"
  : > "$OUT/items.tsv"
  LS=$BUILD/lockstep
  check_id=$$-$RANDOM
  export LOCKSTEP_GPU_CHECK_ID=$check_id  # marks this call's processes (the left-behind check)
  [ -x "$LS" ] || { say "no $LS: run 'bench/gpu-check.sh build' first"; return 2; }
  started=$SECONDS
  if [ $rehearse -eq 1 ]; then
    dev=(run.device=cpu model.preset=tiny)
    STEPS=${LOCKSTEP_GPU_CHECK_STEPS:-20}
  else
    dev=(run.device=cuda model.preset=gpt2-124m)
    STEPS=${LOCKSTEP_GPU_CHECK_STEPS:-30}
  fi
  policy=$OUT/policy.toml
  printf '[gate]\nrepeats = %s\ntiming_steps = 10\nseeds = 1\n' "$REPEATS" > "$policy"
  local graphs=(--set-variant run.cuda_graphs=true) fp16=configs/variants/fp16.toml nccl=nccl adamw=()
  if [ $rehearse -eq 1 ]; then
    graphs=() fp16=configs/variants/bf16.toml nccl=gloo adamw=(--set-variant optim.impl=adamw)
    # A build without Gloo (the wheel build) has no CPU group to stand in for NCCL.
    grep -q '^gloo=ON$' "$BUILD/lockstep-build.txt" 2>/dev/null || nccl=""
  fi
  compare bf16_vs_fused_attention 150 configs/variants/bf16.toml configs/variants/bf16_fused_attention.toml
  # The three together (issue 52's MFU goal, >= 45% on an H100/H200): fused attention, fused AdamW
  # and CUDA graphs on one variant, against bf16. Speed only (alignment "none": no envelope runs
  # or probe, which would not fit the call): each knob's alignment is judged by its own item.
  local fused_adamw=(--set-variant optim.impl=fused)
  [ $rehearse -eq 1 ] && fused_adamw=("${adamw[@]}")
  { cat "$policy"; echo 'alignment = "none"'; } > "$OUT/policy-speed.toml"
  ITEM_POLICY=$OUT/policy-speed.toml compare bf16_vs_all_three 60 configs/variants/bf16.toml configs/variants/bf16_fused_attention.toml \
    "${fused_adamw[@]}" "${graphs[@]}" --set-variant run.name=bf16_all_three
  compare bf16_vs_cuda_graphs 60 configs/variants/bf16.toml configs/variants/bf16.toml \
    "${graphs[@]}" --set-variant run.name=bf16_cuda_graphs
  run fp16_loss_scaling 30 "$fp16"
  compare bf16_vs_fused_adamw 60 configs/variants/bf16.toml configs/variants/bf16_fused_adamw.toml \
    "${adamw[@]}"
  local plugin=$BUILD/examples/plugins/fused_cuda/libfused_cuda.so
  if [ $rehearse -eq 0 ] && [ -f "$plugin" ]; then
    compare bf16_vs_fused_cuda 60 configs/variants/bf16.toml configs/variants/fused_cuda.toml \
      --set-variant "plugins.load=[\"$plugin\"]"
  else
    record bf16_vs_fused_cuda compare skipped 0 "not run: no CUDA plugin built"
  fi
  # Kernel conformance (issue 35) on the device: the fused_cuda plugin's kernels and LibTorch's
  # fused attention against their slots' exact math (the rehearsal: fused attention on the CPU).
  local csets=() kv
  for kv in "${dev[@]}"; do csets+=(--set "$kv"); done
  if [ $rehearse -eq 0 ] && [ -f "$plugin" ]; then
    item kernel_conformance conformance 60 "$LS" conformance "$ROOT/configs/variants/fused_cuda.toml" \
      "${csets[@]}" --set "plugins.load=[\"$plugin\"]" --set attention.impl=fused \
      --json "$OUT/kernel_conformance.json"
  else
    item kernel_conformance conformance 60 "$LS" conformance \
      "$ROOT/configs/variants/bf16_fused_attention.toml" "${csets[@]}" \
      --json "$OUT/kernel_conformance.json"
  fi
  if [ -n "$nccl" ]; then
    run nccl_1rank 30 configs/variants/bf16.toml --set parallel.backend=$nccl
  else
    record nccl_1rank run skipped 0 "not run: this build has no Gloo to stand in for NCCL on the CPU"
  fi
  compare fp32_vs_tf32 60 configs/baseline.toml configs/variants/tf32.toml
  # The loss curves only (--no-envelope: no perturbed runs); a golden file's "#" lines are its
  # header (docs/golden.md), the same for both runs on one machine.
  run determinism_a 30 configs/variants/bf16_fused_attention.toml --export-losses "$OUT/determinism_a.loss" --no-envelope
  run determinism_b 30 configs/variants/bf16_fused_attention.toml --export-losses "$OUT/determinism_b.loss" --no-envelope
  if [ -f "$OUT/determinism_a.loss" ] && [ -f "$OUT/determinism_b.loss" ]; then
    if cmp -s "$OUT/determinism_a.loss" "$OUT/determinism_b.loss"; then
      record determinism check 0 0 "bitwise equal ($(grep -vc '^#' "$OUT/determinism_a.loss") steps, bf16 + fused attention)"
    else
      record determinism check 1 0 "DIFFERENT: $(diff "$OUT/determinism_a.loss" "$OUT/determinism_b.loss" | sed -n 2p)"
      status=1
    fi
  fi
  # Nothing of ours may outlive the call (the children die with their parents; this is the check):
  # a process of this build's lockstep whose environment carries this call's mark.
  local left_behind="" f pid
  while read -r f; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    # (a process may end between the two reads: its cmdline is gone, and it is not left behind)
    { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -q "^$LS " && left_behind+=" $pid"
  done < <(grep -l -a "LOCKSTEP_GPU_CHECK_ID=$check_id" /proc/[0-9]*/environ 2>/dev/null)
  if [ -n "$left_behind" ]; then
    say "processes left behind:$left_behind"
    status=1
  fi
  render
}

render() {
  GPU_CHECK_OUT=$OUT GPU_CHECK_TESTS=$(cat "$BUILD/gpu-check-tests" 2>/dev/null || echo "not run") \
  GPU_CHECK_WALL_S=$((SECONDS - started)) GPU_CHECK_REPEATS=$REPEATS GPU_CHECK_STEPS=$STEPS \
  GPU_CHECK_REHEARSE=$rehearse GPU_CHECK_BUILD_S=$(cat "$BUILD/gpu-check-build-s" 2>/dev/null || echo "?") \
  python3 "$ROOT/bench/gpu_check_report.py"
}

case $cmd in
  preflight) preflight; exit $? ;;
  build)
    preflight || exit 3
    build || exit 2
    echo "$SECONDS" > "$BUILD/gpu-check-build-s"
    [ -n "${LOCKSTEP_GPU_BUILD_TARGETS:-}" ] && exit 0
    cuda_tests || exit 1
    exit 0
    ;;
  measure)
    [ $rehearse -eq 1 ] && { preflight || exit 3; }
    measure
    code=$?
    [ $code -eq 2 ] && exit 2
    exit $status
    ;;
  all)
    preflight || exit 3
    build || exit 2
    measure
    exit $status
    ;;
esac
