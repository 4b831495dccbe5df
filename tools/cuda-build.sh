#!/usr/bin/env bash
# The wheel build's CMake invocation (issue 51), in one place: `./lockstep` runs it here against
# the pinned wheel's LibTorch (build-cuda/, tools/torch-wheel.sh), `bench/gpu-check.sh build` runs
# it on a GPU machine against that machine's own torch, and `bench/gpu-check.sh build --rehearse`
# runs it here again as part of the suite. What differs between the machines is only the LibTorch
# prefix, and the kit (the Debian packages a machine that is not Debian lacks, bench/gpu-kit.sh).
#
# usage: tools/cuda-build.sh BUILD_DIR TORCH_CMAKE_PREFIX [TARGET...]
#   Configures BUILD_DIR (when it has no CMakeCache.txt, or was configured with other arguments),
#   then builds TARGET... (default: everything). The arguments used are written to
#   BUILD_DIR/lockstep-cmake-args, one a line. TARGET "none": configure only.
# Environment:
#   CUDACXX                    nvcc (default: nvcc on PATH, else $CUDA_HOME or /usr/local/cuda's)
#   TORCH_CUDA_ARCH_LIST       default "9.0+PTX": sm_90 (H100, H200) and PTX for what comes after
#   LOCKSTEP_NCCL_INCLUDE_DIR  a folder with nccl.h (default: the toolkit's, else pip's nvidia-nccl)
#   LOCKSTEP_GPU_KIT           a kit folder with .deb files (bench/gpu-kit.sh); unpacked into
#                              BUILD_DIR/kit-root and used for what the system lacks
#   LOCKSTEP_CUDA_BUILD_JOBS   build jobs (default: nproc)
#   LOCKSTEP_CUDA_BUILD_SAME=1 BUILD_DIR must already be configured with exactly these arguments
#                              (the GPU check's rehearsal: its build step is the wheel build's own);
#                              otherwise exit 2 showing the difference
#   LOCKSTEP_TEST_PYTHON       the Python the tests run trainers with (default: the one whose
#                              torch TORCH_CMAKE_PREFIX is: PREFIX/../../../../../bin/python3, a venv's
#                              or the system's)
# Exit: 0 built; 2 with one line on stderr: no nvcc, cmake could not configure, the build failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf 'cuda-build: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

[ $# -ge 2 ] || die "usage: tools/cuda-build.sh BUILD_DIR TORCH_CMAKE_PREFIX [TARGET...]"
BUILD=$1
TORCH_PREFIX=$2
shift 2
targets=("$@")

nvcc=${CUDACXX:-$(command -v nvcc || true)}
[ -z "$nvcc" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -n "$nvcc" ] || die "no nvcc (the wheel build compiles CUDA: install the CUDA toolkit or set CUDACXX)"
cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)
export CUDACXX=$nvcc
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0+PTX}

# nccl.h: the toolkit's, else the one pip's nvidia-nccl wheel ships beside torch (a GPU machine's
# venv). LibTorch ships none; without one there is no NCCL backend.
nccl_inc=${LOCKSTEP_NCCL_INCLUDE_DIR:-}
if [ -z "$nccl_inc" ] && [ ! -f "$cuda_root/include/nccl.h" ]; then
  site=$(cd "$TORCH_PREFIX/../../.." 2>/dev/null && pwd || true)
  if [ -n "$site" ] && [ -d "$site/nvidia" ]; then
    header=$(find "$site/nvidia" -name nccl.h -print -quit 2>/dev/null || true)
    [ -n "$header" ] && nccl_inc=$(dirname "$header")
  fi
fi

args=(-DCMAKE_BUILD_TYPE=Release "-DLOCKSTEP_TORCH_DIR=$TORCH_PREFIX" "-DCUDAToolkit_ROOT=$cuda_root"
  "-DCMAKE_CUDA_COMPILER=$nvcc"
  # The ASan copy of the LibTorch-free core tests runs in the Debian build; here it would only
  # compile the same sources again.
  -DLOCKSTEP_SANITIZED_TESTS=OFF)
[ -n "$nccl_inc" ] && args+=("-DLOCKSTEP_NCCL_INCLUDE_DIR=$nccl_inc")
# The Python whose torch this LibTorch is (site-packages/torch/share/cmake is 6 folders below its
# prefix): the suite's trainers run on the same LibTorch as the binary.
py=${LOCKSTEP_TEST_PYTHON:-}
if [ -z "$py" ]; then
  up=$(cd "$TORCH_PREFIX/../../../../../.." 2>/dev/null && pwd || true)
  [ -n "$up" ] && [ -x "$up/bin/python3" ] && py=$up/bin/python3
fi
[ -n "$py" ] && args+=("-DLOCKSTEP_TEST_PYTHON=$py")
# The checks that read only the sources (torch2_api_syntax, include_graph, the shell lint) run in
# the Debian build of the same tree; here they would read the same files again.
args+=(-DLOCKSTEP_SOURCE_CHECKS=OFF)

kit=${LOCKSTEP_GPU_KIT:-}
if [ -n "$kit" ] && ls "$kit"/*.deb >/dev/null 2>&1; then
  kit_root=$("$ROOT/bench/gpu-kit.sh" --unpack "$kit" "$BUILD/kit-root") || die "could not unpack the kit $kit"
  lib=$kit_root/usr/lib/x86_64-linux-gnu
  args+=("-DCMAKE_PREFIX_PATH=$kit_root/usr" "-DLOCKSTEP_GTEST_SOURCE_DIR=$kit_root/usr/src/googletest"
    "-DLOCKSTEP_EXTRA_INCLUDE_DIR=$kit_root/usr/include"
    "-DSQLite3_INCLUDE_DIR=$kit_root/usr/include" "-DSQLite3_LIBRARY=$lib/libsqlite3.so"
    "-DOPENSSL_ROOT_DIR=$kit_root/usr" "-DOPENSSL_INCLUDE_DIR=$kit_root/usr/include"
    "-DOPENSSL_CRYPTO_LIBRARY=$lib/libcrypto.so")
  say "kit unpacked in $kit_root"
fi
# 8 cores or more: one file a job beats unity batches.
[ "$(nproc)" -ge 8 ] && args+=(-DLOCKSTEP_UNITY_BUILD=OFF)
command -v ninja >/dev/null && args+=(-G Ninja)

mkdir -p "$BUILD"
want=$(printf '%s\n' "${args[@]}" "TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST")
if [ "${LOCKSTEP_CUDA_BUILD_SAME:-0}" = 1 ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ] || [ "$(cat "$BUILD/lockstep-cmake-args" 2>/dev/null)" != "$want" ]; then
    diff <(cat "$BUILD/lockstep-cmake-args" 2>/dev/null) <(printf '%s\n' "$want") >&2 || true
    die "$BUILD was not configured with this invocation (< the build's, > this one's)"
  fi
  say "$BUILD: configured with exactly this invocation"
fi
if [ ! -f "$BUILD/CMakeCache.txt" ] || [ "$(cat "$BUILD/lockstep-cmake-args" 2>/dev/null)" != "$want" ]; then
  rm -f "$BUILD/CMakeCache.txt"
  say "configuring $BUILD on $TORCH_PREFIX (CUDA $cuda_root, arch $TORCH_CUDA_ARCH_LIST)"
  cmake -S "$ROOT" -B "$BUILD" "${args[@]}" > "$BUILD/cmake-configure.log" 2>&1 ||
    { tail -n 30 "$BUILD/cmake-configure.log" >&2; die "cmake could not configure $BUILD"; }
  printf '%s\n' "$want" > "$BUILD/lockstep-cmake-args"
fi

[ "${targets[*]:-}" = none ] && exit 0
build=(cmake --build "$BUILD" --parallel "${LOCKSTEP_CUDA_BUILD_JOBS:-$(nproc)}")
[ ${#targets[@]} -gt 0 ] && build+=(--target "${targets[@]}")
"${build[@]}" >&2 || die "the build in $BUILD failed"
