#!/usr/bin/env bash
# The wheel build links CUDA and compiles its .cu files (issue 51): `ldd` on the binary resolves
# libtorch_cuda.so, libc10_cuda.so and libnccl.so.2, and `cuobjdump --list-elf` on the CUDA example
# plugin lists an sm_90 image (and --list-ptx its PTX). The negative controls: the same checks fail
# on a binary and a shared library of this build that link no CUDA and hold no device code.
#
# usage: cuda-links.sh LOCKSTEP_BIN FUSED_CUDA_SO CPU_BIN CPU_SO PYTHON [LIBTORCH_SO...]
#   LIBTORCH_SO: more of the build's libraries that link LibTorch, checked for one LibTorch
# cuobjdump: on PATH, in the CUDA toolkit, else the nvidia-cuda-cuobjdump wheel in PYTHON's venv
# (wheels.lock: the toolkit on the CI machines has none).
set -euo pipefail
bin=$1 plugin=$2 cpu_bin=$3 cpu_so=$4 python=$5
shift 5
cuobjdump=$(command -v cuobjdump || true)
[ -z "$cuobjdump" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" ] && cuobjdump=${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump
if [ -z "$cuobjdump" ] && [ -n "$python" ]; then
  for c in "$(dirname "$(dirname "$python")")"/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump; do
    [ -x "$c" ] && cuobjdump=$c
  done
fi
[ -n "$cuobjdump" ] || { echo "FAIL: no cuobjdump (PATH, \$CUDA_HOME/bin, or the venv's nvidia-cuda-cuobjdump)"; exit 1; }

links_cuda() {  # BIN: every CUDA library resolved (not "not found")
  local out lib ok=0
  out=$(ldd "$1")
  for lib in libtorch_cuda.so libc10_cuda.so libnccl.so.2; do
    if ! grep -Eq "^\s*$lib => /" <<< "$out"; then
      echo "  $1: $lib $(grep -E "^\s*$lib" <<< "$out" | sed 's/^\s*//' || echo 'not linked')"
      ok=1
    fi
  done
  return $ok
}
has_sm90() {  # SO: an sm_90 ELF image and a compute_90 PTX
  "$cuobjdump" --list-elf "$1" 2>/dev/null | grep -q 'sm_90' &&
    "$cuobjdump" --list-ptx "$1" 2>/dev/null | grep -q 'sm_90\|compute_90'
}

fail=0
if links_cuda "$bin"; then
  echo "ok: $bin links $(ldd "$bin" | grep -Eo 'lib(torch_cuda|c10_cuda|nccl)\.so[.0-9]*' | sort -u | tr '\n' ' ')"
else
  echo "FAIL: $bin does not link every CUDA library"; fail=1
fi
if has_sm90 "$plugin"; then
  echo "ok: $plugin: $("$cuobjdump" --list-elf "$plugin" | wc -l) ELF image(s), $("$cuobjdump" --list-elf "$plugin" | grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' ')+ PTX"
else
  echo "FAIL: $plugin holds no sm_90 image with PTX (cuobjdump --list-elf / --list-ptx)"; fail=1
fi
# libstdc++ ahead of libtorch.so in the binary's lookup order (6c98b15): pip's libtorch.so exports
# std::filesystem functions of its own, and a binary that loads it first binds to them (with it
# reversed, a compare with a probe crashed with SIGSEGV in remove_all: bench/RESULTS.md).
order=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -nE '^(libstdc\+\+\.so\.6|libtorch\.so)$' | cut -d: -f2 | tr '\n' ' ')
if [ "${order%% *}" = libstdc++.so.6 ]; then
  echo "ok: $bin loads libstdc++.so.6 before libtorch.so ($order)"
else
  echo "FAIL: $bin's NEEDED order is '$order': libtorch.so's std::filesystem would win"; fail=1
fi
# One LibTorch per process: every libc10*/libtorch* the binary and the plugin load comes from one
# folder (a system LibTorch beside the wheel once gave the test plugins Debian's libc10.so.1.13).
for f in "$bin" "$plugin" "$@"; do
  dirs=$(ldd "$f" | sed -n 's/^\s*lib\(c10\|torch\)[^ ]* => \(\/[^ ]*\)\/[^/ ]* .*/\2/p' | sort -u)
  if [ "$(wc -l <<< "$dirs")" -eq 1 ]; then
    echo "ok: $f loads LibTorch from one folder ($dirs)"
  else
    echo "FAIL: $f loads LibTorch libraries from several folders: $(tr '\n' ' ' <<< "$dirs")"; fail=1
  fi
done
# Negative controls: the checks can fail.
if links_cuda "$cpu_bin" > /dev/null; then echo "FAIL: the link check passed on $cpu_bin, which links no CUDA"; fail=1; fi
if has_sm90 "$cpu_so"; then echo "FAIL: the device-code check passed on $cpu_so, which has none"; fail=1; fi
exit $fail
