#!/usr/bin/env bash
# Compiles every Lockstep source with -fsyntax-only against LibTorch 2.x headers, so API drift
# between Debian 12's LibTorch 1.13 (what we build with) and 2.x (what GPU users build with) fails
# the tests on a CPU-only machine.
#
# The 2.x headers are Debian trixie's libtorch-dev (2.6), fetched with `apt-get download` through
# a temporary sources list that reuses this machine's own Debian mirror with only the suite
# changed, and unpacked with `dpkg -x` (never installed). A second pass adds the CUDA toolkit's
# headers (when present) to check the CUDA/NCCL code paths too.
#
# usage: tools/check-torch2-api.sh CACHE_DIR [SOURCE_ROOT]
set -euo pipefail

cache=${1:?usage: check-torch2-api.sh CACHE_DIR [SOURCE_ROOT]}
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
suite=${LOCKSTEP_TORCH2_SUITE:-trixie}
inc=$cache/root/usr/include
mkdir -p "$cache"

# The machine's own Debian mirror (deb822 .sources or classic sources.list), never a hard-coded host.
mirror_uri() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^URIs:/{u=$2} /^Suites:/{for(i=2;i<=NF;i++) if ($i !~ /security|updates|backports/) s=1}
         /^$/{if(u&&s){print u; exit} u="";s=0} END{if(u&&s) print u}' "$f" | grep -v security | head -n1
  done
  grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | awk '{print $2}' | head -n1 || true
}

if [ ! -f "$inc/torch/torch.h" ] || [ ! -d "$inc/gloo" ]; then
  uri=$(mirror_uri | head -n1 || true)
  [ -n "$uri" ] || { echo "check-torch2-api: no Debian mirror found in this machine's apt sources" >&2; exit 1; }
  apt_dir=$cache/apt
  rm -rf "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$cache/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" > "$apt_dir/sources.list"
  opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o Debug::NoLocking=1
        -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" update -qq
  (cd "$cache/debs" && apt-get "${opts[@]}" download libtorch-dev libgloo-dev >/dev/null)
  for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$cache/root"; done
fi
vh=$inc/torch/csrc/api/include/torch/version.h
version=$(awk '/define TORCH_VERSION_MAJOR/{ma=$3} /define TORCH_VERSION_MINOR/{mi=$3} END{if(ma!="") print ma "." mi}' "$vh" 2>/dev/null || true)
echo "LibTorch headers: ${version:-unknown} from $suite"

# The example plugins too: the plugin header and its examples must build against 2.x.
mapfile -t sources < <(cd "$root" && find harness workloads variants reports examples/plugins -name '*.cpp' | sort)
common=(-std=c++17 -fsyntax-only -w -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_C10D_GLOO -DLOCKSTEP_SOURCE_DIR=\"$root\"
        -DLOCKSTEP_TORCH_VERSION=\"2.x\" -I"$root" -I"$root/include" -isystem "$inc" -isystem "$inc/torch/csrc/api/include" -isystem /usr/include/eigen3)

# check LABEL EXTRA_FLAGS... -- FILES...: compiles the files in parallel, prints each failure.
check() {
  local label=$1; shift
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  [ $# -gt 0 ] || return 0
  local log=$cache/errors-$label
  rm -rf "$log" && mkdir -p "$log"
  printf '%s\n' "$@" | (cd "$root" && xargs -P "$(nproc)" -I{} sh -c \
    'g++ "$@" {} 2> "'"$log"'/$(echo {} | tr / _).err" || echo {} >> "'"$log"'/failed"' sh "${common[@]}" "${flags[@]}")
  [ -f "$log/failed" ] || return 0
  local f
  while read -r f; do
    echo "FAIL ($label): $f"
    head -n 25 "$log/$(echo "$f" | tr / _).err"
  done < "$log/failed"
  return 1
}

# Canary: the include paths really resolve to the 2.x headers (not the system's 1.13).
printf '#include <torch/version.h>\nstatic_assert(TORCH_VERSION_MAJOR >= 2, "not the 2.x headers");\n' > "$cache/canary.cpp"
g++ "${common[@]}" "$cache/canary.cpp" || { echo "check-torch2-api: the 2.x headers are not the ones being used" >&2; exit 1; }

status=0
check "cpu" -- "${sources[@]}" || status=1
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$cuda/include/cuda_runtime.h" ]; then
  # The CPU package lacks this build-generated header; a CUDA build's copy has just these lines.
  mkdir -p "$cache/stub/c10/cuda/impl"
  printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$cache/stub/c10/cuda/impl/cuda_cmake_macros.h"
  mapfile -t cuda_sources < <(cd "$root" && grep -lE 'LOCKSTEP_WITH_CUDA|LOCKSTEP_HAVE_NCCL|compat::cuda_' "${sources[@]}")
  check "cuda+nccl" -DLOCKSTEP_WITH_CUDA -DUSE_C10D_NCCL -DUSE_CUDA -isystem "$cache/stub" -isystem "$cuda/include" -- "${cuda_sources[@]}" || status=1
else
  echo "no CUDA toolkit at $cuda: CUDA/NCCL paths not checked"
fi
[ $status -eq 0 ] && echo "all ${#sources[@]} sources compile against LibTorch ${version:-2.x} headers"
exit $status
