#!/usr/bin/env bash
# The wheel build's LibTorch (issue 51): PyTorch's own wheel, pinned with its sha256 in wheels.lock,
# installed into the project venv (.venv, git-ignored), never into the system. The C++ wheel build
# (build-cuda/) is configured on that venv's torch.utils.cmake_prefix_path, exactly as a GPU machine's
# build is configured on its own venv's torch (bench/gpu-check.sh build), and the example trainers
# and Python benches run on the same venv: one LibTorch for Lockstep's C++ and the user's Python.
#
# usage: tools/torch-wheel.sh [prefix|python|site]
#   prefix   (default) set up if needed, then print torch's CMake prefix on stdout
#   python   set up if needed, then print the venv's python on stdout
#   site     set up if needed, then print the venv's site-packages on stdout
# Progress goes to stderr. Set-up is skipped when .venv was made from this very wheels.lock (a stamp
# holds the lock's sha256); a changed lock rebuilds the venv.
#
# Environment:
#   LOCKSTEP_VENV          the venv (default: .venv in the checkout)
#   LOCKSTEP_WHEEL_CACHE   where the wheels are downloaded to (default: .cache/wheels in the
#                          checkout); a file already there is used when its sha256 matches, so
#                          pointing several clones at one folder downloads each wheel once
#   LOCKSTEP_PYTHON        the interpreter the venv is made from (default: python3; CPython 3.11,
#                          the lock's wheels are cp311)
# Exit: 0, or 2 with one line on stderr (no CPython 3.11, a download or hash that failed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCK=$ROOT/wheels.lock
VENV=${LOCKSTEP_VENV:-$ROOT/.venv}
CACHE=${LOCKSTEP_WHEEL_CACHE:-$ROOT/.cache/wheels}
PY=${LOCKSTEP_PYTHON:-python3}
what=${1:-prefix}

say() { printf 'torch-wheel: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

stamp=$VENV/.lockstep-wheels-lock
want=$(sha256sum "$LOCK" | cut -d' ' -f1)

site() { "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

setup() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/python" ] && return 0
  command -v "$PY" >/dev/null || die "no $PY (the venv needs CPython 3.11: set LOCKSTEP_PYTHON)"
  local v
  v=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$v" = 3.11 ] || die "$PY is Python $v; wheels.lock pins cp311 wheels (set LOCKSTEP_PYTHON to a CPython 3.11)"
  mkdir -p "$CACHE"
  local t0=$SECONDS before after
  before=$(du -sk "$CACHE" | cut -f1)
  say "downloading wheels.lock's wheels into $CACHE (about 790 MB on a fresh machine)"
  # The platform and interpreter named, so that the files the lock's hashes pin are the ones chosen
  # whatever pip runs this; --require-hashes refuses any other file.
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
    --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 --abi none \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -r "$LOCK" -d "$CACHE" >&2 || die "could not download wheels.lock's wheels into $CACHE"
  after=$(du -sk "$CACHE" | cut -f1)
  say "downloaded $(((after - before) / 1024)) MiB in $((SECONDS - t0)) s ($((after / 1024)) MiB in the cache)"
  t0=$SECONDS
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "could not make the venv $VENV ($PY -m venv; on Debian: apt-get install python3-venv)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps \
    --require-hashes --find-links "$CACHE" -r "$LOCK" >&2 || die "could not install wheels.lock into $VENV"
  # The check that matters: the venv's torch imports (its CUDA libraries resolve: the toolkit's and
  # the three wheels') and is the pinned version.
  local got
  got=$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>&1 | tail -n 1) ||
    die "the venv's torch does not import: $got"
  case $got in 2.11.0*) ;; *) die "the venv's torch is $got, not wheels.lock's 2.11.0" ;; esac
  echo "$want" > "$stamp"
  say "venv $VENV: torch $got, installed in $((SECONDS - t0)) s"
}

setup
case $what in
  prefix) echo "$(site)/torch/share/cmake" ;;
  python) echo "$VENV/bin/python" ;;
  site) site ;;
  *) die "usage: tools/torch-wheel.sh [prefix|python|site]" ;;
esac
