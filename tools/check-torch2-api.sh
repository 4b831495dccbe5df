#!/usr/bin/env bash
# Compiles Lockstep's sources with -fsyntax-only against LibTorch 2.x headers, so API drift between
# Debian 12's LibTorch 1.13 (what we build with) and 2.x (what GPU users build with) fails the tests
# on a CPU-only machine. Three passes:
#
#   cuda    EVERY source (any .cu file, and the in-process CUDA tests) with -DLOCKSTEP_WITH_CUDA
#           -DUSE_C10D_NCCL, against Debian trixie's libtorch-cuda-dev 2.6 (the real CUDA LibTorch
#           headers: c10/cuda, ATen/cuda, ProcessGroupNCCL.hpp, Kineto) and the CUDA toolkit's
#           headers (cuda_runtime, nccl.h): what a CUDA build compiles.
#   cpu     the sources that include LibTorch and test a CUDA define (all of them when the cuda
#           pass cannot run), against trixie's libtorch-dev 2.6 (CPU): the CPU side of those
#           defines; the other LibTorch sources are the same code in the cuda pass, 2.6 too.
#   newest  the same, against the newest libtorch-dev Debian has (forky: 2.14, as C++20), for the
#           API drift after 2.6 (GPU machines run newer LibTorch than 2.6).
#
# A source that includes no LibTorch header compiles to the same thing whatever LibTorch is around,
# and the build has compiled it: the CPU passes skip it, and the cuda pass compiles it only when it
# (or a project header it includes) tests a CUDA define (LOCKSTEP_WITH_CUDA, USE_C10D_NCCL,
# USE_CUDA, __CUDACC__); one that does not compiles to the same thing with or without them. The packages are fetched with `apt-get download` through a temporary sources list
# that reuses this machine's own Debian mirror with only the suite changed, unpacked with `dpkg -x`
# (never installed) and kept in CACHE_DIR. Sources are compiled in batches (see below).
#
# usage: tools/check-torch2-api.sh CACHE_DIR [SOURCE_ROOT]
# Environment: LOCKSTEP_TORCH2_SUITE (default trixie; "none" skips the cpu and cuda passes: the suite
# sets it, since the wheel build (build-cuda/, PyTorch 2.11.0+cu130) compiles and links every source
# and the .cu for real, so only the newest pass covers what no real build does),
# LOCKSTEP_TORCH_NEWEST_SUITE (default forky; "none" skips that pass), CUDA_HOME (default
# /usr/local/cuda).
# Exit: 0 all passes compiled; 1 a source failed (each failure printed); 77 every pass that could
# run compiled, but there is no CUDA toolkit here, so the cuda pass could not (ctest: skipped).
set -euo pipefail

cache=${1:?usage: check-torch2-api.sh CACHE_DIR [SOURCE_ROOT]}
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
suite=${LOCKSTEP_TORCH2_SUITE:-trixie}
newest_suite=${LOCKSTEP_TORCH_NEWEST_SUITE:-forky}
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

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

# fetch NAME SUITE PACKAGES...: unpacks the packages of SUITE (main and contrib) into
# $cache/root-NAME, once.
fetch() {
  local name=$1 from=$2
  shift 2
  local dest=$cache/root-$name
  [ -f "$dest/.complete" ] && return 0
  local uri
  uri=$(mirror_uri | head -n1 || true)
  [ -n "$uri" ] || { echo "check-torch2-api: no Debian mirror found in this machine's apt sources" >&2; return 1; }
  local apt_dir=$cache/apt-$from
  if [ ! -f "$apt_dir/.updated" ]; then
    rm -rf "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $from main contrib" > "$apt_dir/sources.list"
    apt-get "${apt_opts[@]/@@/$apt_dir}" update -qq
    touch "$apt_dir/.updated"
  fi
  rm -rf "$dest" "$cache/debs-$name" && mkdir -p "$dest" "$cache/debs-$name"
  (cd "$cache/debs-$name" && apt-get "${apt_opts[@]/@@/$apt_dir}" download "$@" >/dev/null)
  local deb
  for deb in "$cache/debs-$name"/*.deb; do dpkg -x "$deb" "$dest"; done
  touch "$dest/.complete"
}
apt_opts=(-o Dir::Etc::SourceList=@@/sources.list -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists=@@/lists -o Dir::Cache=@@/cache -o Debug::NoLocking=1
          -o APT::Sandbox::User=root)

version_of() {  # LibTorch's version in an unpacked root, e.g. "2.6" (2.9+: in headeronly/)
  local inc=$1/usr/include/torch f files=()
  for f in "$inc/csrc/api/include/torch/version.h" "$inc/headeronly/version.h"; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  awk '/define TORCH_VERSION_MAJOR/{ma=$3} /define TORCH_VERSION_MINOR/{mi=$3} END{if(ma!="") print ma "." mi}' \
    "${files[@]}" 2>/dev/null || true
}

# --- sources ------------------------------------------------------------------------------------
# The example plugins too: the plugin header and its examples must build against 2.x.
mapfile -t sources < <(cd "$root" && find harness workloads variants reports examples/plugins -name '*.cpp' | sort)
# ... and the in-process CUDA tests bench/gpu-check.sh builds on a GPU machine (cuda pass only).
cuda_tests=(tests/numerics/cuda_path_test.cpp tests/numerics/fused_cuda_test.cpp)
mapfile -t cu_sources < <(cd "$root" && find harness workloads variants reports examples -name '*.cu' 2>/dev/null | sort)

# reaches PATTERN MEMO FILE: whether FILE matches the extended regex PATTERN, itself or through the
# project's own includes; MEMO names the associative array that caches the answers for PATTERN.
# shellcheck disable=SC2004  # seen is an associative array (a nameref): [$f] is a key
reaches() {
  local pattern=$1 f=$3
  local -n seen=$2
  [ -n "${seen[$f]:-}" ] && { [ "${seen[$f]}" = 1 ]; return; }
  seen[$f]=0  # cycles end here
  if grep -qE "$pattern" "$root/$f"; then
    seen[$f]=1
    return 0
  fi
  local inc
  while read -r inc; do
    [ -f "$root/$inc" ] || continue
    if reaches "$pattern" "$2" "$inc"; then
      seen[$f]=1
      return 0
    fi
  done < <(sed -n -e 's/^#include "\([^"]*\)".*/\1/p' -e 's|^#include <\(lockstep/[^>]*\)>.*|include/\1|p' "$root/$f")
  return 1
}
# Whether a file reaches a LibTorch header; whether it tests a CUDA define.
# shellcheck disable=SC2034  # used through reaches' nameref
declare -A reaches_torch_memo=() tests_cuda_memo=()
reaches_torch() { reaches '^#include <(torch|ATen|c10)/' reaches_torch_memo "$1"; }
tests_cuda_define() { reaches 'LOCKSTEP_WITH_CUDA|USE_C10D_NCCL|USE_CUDA|__CUDACC__' tests_cuda_memo "$1"; }
torch_sources=()
for f in "${sources[@]}"; do reaches_torch "$f" && torch_sources+=("$f"); done

# The cuda pass: every LibTorch source and test, and the LibTorch-free sources that test a CUDA
# define (the others compile exactly as the build compiled them).
cuda_sources=()
n_free_skipped=0
for f in "${sources[@]}"; do
  if reaches_torch "$f" || tests_cuda_define "$f"; then
    cuda_sources+=("$f")
  else
    n_free_skipped=$((n_free_skipped + 1))
  fi
done

# --- passes -------------------------------------------------------------------------------------
# (The checkout's path goes into a define and through a flag string below: no spaces in it.)
common=(-std=c++17 -w -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_C10D_GLOO "-DLOCKSTEP_SOURCE_DIR=\"$root\""
        -DLOCKSTEP_TORCH_VERSION=\"2.x\" -I"$root" -I"$root/include" -isystem /usr/include/eigen3)
declare -A pass_flags=() pass_label=()
passes=()
cuda_skipped=""

if [ "$suite" != none ]; then
  fetch cpu "$suite" libtorch-dev libgloo-dev
  inc=$cache/root-cpu/usr/include
  pass_flags[cpu]="-isystem $inc -isystem $inc/torch/csrc/api/include"
  pass_label[cpu]="LibTorch $(version_of "$cache/root-cpu") (CPU) from $suite"
  passes+=(cpu)
fi

if [ "$suite" = none ]; then
  echo "the cpu and cuda passes: not run (LOCKSTEP_TORCH2_SUITE=none: the wheel build compiles and links every source against PyTorch 2.11's CUDA LibTorch)"
elif [ -f "$cuda/include/cuda_runtime.h" ] && [ -f "$cuda/include/nccl.h" ]; then
  fetch cuda "$suite" libtorch-cuda-dev libgloo-dev
  inc=$cache/root-cuda/usr/include
  pass_flags[cuda]="-DLOCKSTEP_WITH_CUDA -DUSE_C10D_NCCL -DUSE_CUDA -isystem $inc -isystem $inc/torch/csrc/api/include -isystem $cuda/include"
  pass_label[cuda]="LibTorch $(version_of "$cache/root-cuda") (CUDA) from $suite, CUDA headers from $cuda"
  passes+=(cuda)
else
  cuda_skipped="no CUDA toolkit with nccl.h at $cuda (set CUDA_HOME)"
fi

if [ "$newest_suite" != none ]; then
  fetch newest "$newest_suite" libtorch-dev libgloo-dev
  inc=$cache/root-newest/usr/include
  pass_flags[newest]="-isystem $inc -isystem $inc/torch/csrc/api/include"
  # LibTorch 2.14 and later require C++20 (CMakeLists.txt builds with it for them too).
  newest_version=$(version_of "$cache/root-newest")
  major=${newest_version%%.*} minor=${newest_version#*.}
  if [ "${major:-0}" -gt 2 ] 2>/dev/null || { [ "${major:-0}" -eq 2 ] && [ "${minor:-0}" -ge 14 ]; } 2>/dev/null; then
    pass_flags[newest]="-std=c++20 ${pass_flags[newest]}"
  fi
  pass_label[newest]="LibTorch $(version_of "$cache/root-newest") (CPU) from $newest_suite"
  passes+=(newest)
fi

has_pass() { [[ " ${passes[*]} " == *" $1 "* ]]; }  # whether pass $1 runs here

# Canaries: each pass really sees its headers (not the system's 1.13, not the CPU package). They
# compile at once (the cuda one parses ProcessGroupNCCL.hpp: most of the 14 s they took in turn).
status=0
work=$cache/work
rm -rf "$work" && mkdir -p "$work"
canary_pids=()
for p in "${passes[@]}"; do
  canary=$work/canary-$p.cpp
  printf '#include <torch/version.h>\nstatic_assert(TORCH_VERSION_MAJOR >= 2, "not the 2.x headers");\n' > "$canary"
  [ "$p" = cuda ] && printf '#include <c10/cuda/impl/cuda_cmake_macros.h>\n#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>\n' >> "$canary"
  # shellcheck disable=SC2086
  g++ "${common[@]}" ${pass_flags[$p]} -fsyntax-only "$canary" 2> "$work/canary-$p.err" &
  canary_pids+=("$!")
done
for i in "${!passes[@]}"; do
  p=${passes[$i]}
  wait "${canary_pids[$i]}" ||
    { cat "$work/canary-$p.err" >&2
      echo "check-torch2-api: the $p pass does not see its own headers (${pass_label[$p]})" >&2; exit 1; }
  echo "pass $p: ${pass_label[$p]}"
done

# Batches, not one compilation per source. A -fsyntax-only run of one LibTorch source spends ~20 s
# parsing LibTorch and well under a second on the source itself (measured here: the 28 LibTorch
# sources take 170 s one by one, 11 s as one batch), so each batch is one file that includes its
# sources, compiled once. A batch that fails is split in two and each half compiled again, down to
# single sources: an error is always reported against the one source that has it, compiled alone.
# A batch that fails only because two of its sources clash when included together (two
# anonymous-namespace helpers of one name) ends in sources that each compile alone: it passes, and
# the output says which batch had to be split. One LibTorch batch per pass, "lib": the project's
# LibTorch sources, the example plugins (each defines lockstep_plugin_init: in a batch each
# plugin's is renamed by a define around its sources; their helpers live in namespaces of their
# own) and, in the cuda pass, the in-process CUDA tests. It parses LibTorch once per pass
# (measured here, packages cached, the whole script: 6 LibTorch batches 117 s wall and 205 s of
# CPU; one per pass 82 s and 119 s).
# Then the LibTorch-free sources (cuda pass) by folder.
batch_of() {  # file -> batch label
  local f=$1
  case "$f" in
    examples/plugins/* | tests/*) echo lib ;;
    *) if [ -n "${is_torch[$f]:-}" ]; then echo lib; else echo "free-$(dirname "$f" | tr / -)"; fi ;;
  esac
}
declare -A is_torch=()
for f in "${torch_sources[@]}"; do is_torch[$f]=1; done

# The cpu pass: with the cuda pass (LibTorch 2.6 too) beside it, only the LibTorch sources that
# test a CUDA define: the others are the same code in both passes, against the same LibTorch
# version, and the cuda pass compiles them. Without a cuda pass, every LibTorch source.
cpu_sources=()
for f in "${torch_sources[@]}"; do
  if ! has_pass cuda || tests_cuda_define "$f"; then cpu_sources+=("$f"); fi
done

jobs_file=$work/jobs
n_jobs=0
for p in "${passes[@]}"; do
  declare -A members=()
  files=("${torch_sources[@]}")
  [ "$p" = cpu ] && files=("${cpu_sources[@]}")
  [ "$p" = cuda ] && files=("${cuda_sources[@]}" "${cuda_tests[@]}")
  for f in "${files[@]}"; do
    b=$(batch_of "$f")
    members[$b]="${members[$b]:-} $f"
    n_jobs=$((n_jobs + 1))
  done
  # LibTorch batches first: they are the long ones.
  for b in "${!members[@]}"; do
    case "$b" in free-*) rank=1 ;; *) rank=0 ;; esac
    echo "$rank $p $b${members[$b]}"
  done
  unset members
done > "$jobs_file.unsorted"
# CUDA sources (kernels of plugins): one nvcc job each, against the CUDA LibTorch headers, started
# first, beside the LibTorch batches (nvcc takes ~25 s on one core; after them it ran alone).
if has_pass cuda; then
  for f in "${cu_sources[@]}"; do
    echo "-1 cuda nvcc $f" >> "$jobs_file.unsorted"
    n_jobs=$((n_jobs + 1))
  done
fi
sort -k1,1n "$jobs_file.unsorted" | cut -d' ' -f2- > "$jobs_file"

CUDA_DIR=$cuda
export work root CUDA_DIR
# shellcheck disable=SC2317  # run by xargs through bash -c
check_batch() {  # depth pass label file... (flags come from the environment); 1 if any fails
  local depth=$1 p=$2 label=$3 flags_var="FLAGS_$2"
  shift 3
  local unit
  unit=$(mktemp "$work/$p-$label-XXXXXX.cpp")
  local log=${unit%.cpp}.err
  if [ "$label" = nvcc ]; then
    # shellcheck disable=SC2086
    (cd "$root" && "$CUDA_DIR/bin/nvcc" -std=c++17 -w ${!flags_var} -I"$root" -c "$1" -o /dev/null) \
      2> "$log" && return 0
    echo "$p $1 $log" >> "$work/failed"
    return 1
  fi
  if [ $# -eq 1 ]; then
    # shellcheck disable=SC2086
    (cd "$root" && g++ ${COMMON} ${!flags_var} -fsyntax-only "$1") 2> "$log" && return 0
    echo "$p $1 $log" >> "$work/failed"
    return 1
  fi
  local f name
  for f in "$@"; do
    case "$f" in
      examples/plugins/*/*)
        name=${f#examples/plugins/}
        name=$(printf '%s' "${name%%/*}" | tr -c 'A-Za-z0-9_' _)
        printf '#define lockstep_plugin_init lockstep_plugin_init_%s\n#include "%s"\n#undef lockstep_plugin_init\n' \
          "$name" "$f" ;;
      *) printf '#include "%s"\n' "$f" ;;
    esac
  done > "$unit"
  # shellcheck disable=SC2086
  (cd "$root" && g++ ${COMMON} ${!flags_var} -fsyntax-only "$unit") 2> "$log" && return 0
  local half=$(($# / 2)) bad=0
  check_batch $((depth + 1)) "$p" "$label" "${@:1:half}" || bad=1
  check_batch $((depth + 1)) "$p" "$label" "${@:half+1}" || bad=1
  [ "$bad" -eq 0 ] && [ "$depth" -eq 0 ] && echo "$p $label: $# sources clash when compiled together; each compiled alone" >> "$work/split"
  return "$bad"
}
export -f check_batch
COMMON="${common[*]}"
export COMMON
for p in "${passes[@]}"; do export "FLAGS_$p=${pass_flags[$p]}"; done
# shellcheck disable=SC2016  # expanded by the inner bash
xargs -P "$(nproc)" -L 1 bash -c 'check_batch 0 "$@" || true' _ < "$jobs_file"

[ -f "$work/split" ] && sort "$work/split"
if [ -f "$work/failed" ]; then
  status=1
  while read -r p f log; do
    echo "FAIL ($p: ${pass_label[$p]}): $f"
    head -n 25 "$log"
  done < <(sort "$work/failed")
fi

if [ $status -eq 0 ]; then
  cpu_what="the ${#cpu_sources[@]} LibTorch sources that test a CUDA define in the cpu pass"
  has_pass cuda || cpu_what="${#cpu_sources[@]} LibTorch sources in the cpu pass"
  has_pass cpu || cpu_what="no cpu pass"
  newest_what=", ${#torch_sources[@]} in the newest"
  has_pass newest || newest_what=""
  echo "all compiled: ${#cuda_sources[@]} sources and ${#cuda_tests[@]} tests in the cuda pass${cuda_skipped:+ (not run)} ($n_free_skipped LibTorch-free sources test no CUDA define: compiled by the build), $cpu_what$newest_what, ${#cu_sources[@]} .cu ($n_jobs source compilations in $(wc -l < "$jobs_file") batches)"
fi
[ $status -ne 0 ] && exit 1
if [ -n "$cuda_skipped" ]; then
  echo "check-torch2-api: the cuda pass did not run: $cuda_skipped"
  exit 77
fi
exit 0
