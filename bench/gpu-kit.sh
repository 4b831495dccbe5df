#!/usr/bin/env bash
# The GPU kit (issue 36): the Debian packages Lockstep's build needs besides LibTorch, downloaded on
# a Debian 12 machine (`apt-get download`: never installed here) into a folder git ignores, to
# travel with the checkout to a GPU machine that is not Debian and can install nothing.
# `bench/gpu-check.sh build` unpacks them there with `dpkg -x` into a private prefix (its build
# folder's kit-root/) and points CMake at it: header-only libraries (TOML++, CLI11, nlohmann-json,
# Eigen), GoogleTest's sources (built by the build itself, with its compiler and LibTorch's C++ ABI
# flag), SQLite and OpenSSL's libcrypto (shared libraries, found through the binary's RPATH: they
# load in Lockstep's processes only, never next to the wheel's Python), and Gloo's headers (used
# only when the LibTorch has none of its own).
#
# usage: bench/gpu-kit.sh [KIT_DIR]        (default: .gpu-kit in the checkout)
#        bench/gpu-kit.sh --unpack KIT_DIR DEST
# Prints the kit's folder and size on stdout; progress on stderr. Exit 0, or 1 when a package could
# not be downloaded. --unpack (tools/cuda-build.sh, on the GPU machine) extracts every package but
# libgloo-dev (its Gloo is not the wheel's revision: CMakeLists.txt "Gloo") into DEST, once (a
# .complete mark), with dpkg-deb, or ar + tar in Python where there is no dpkg, and prints DEST.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "${1:-}" = --unpack ]; then
  kit=${2:?usage: bench/gpu-kit.sh --unpack KIT_DIR DEST}
  dest=${3:?usage: bench/gpu-kit.sh --unpack KIT_DIR DEST}
  [ -f "$dest/.complete" ] && { echo "$dest"; exit 0; }
  rm -rf "$dest" && mkdir -p "$dest"
  for deb in "$kit"/*.deb; do
    case $(basename "$deb") in libgloo-dev_*) continue ;; esac
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$dest"
    else
      python3 - "$deb" "$dest" <<'PY'
import sys, tarfile, io
deb, dest = sys.argv[1], sys.argv[2]
data = open(deb, "rb").read()
assert data[:8] == b"!<arch>\n", deb
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(dest)
    pos += 60 + size + (size & 1)
PY
    fi
  done
  touch "$dest/.complete"
  echo "$dest"
  exit 0
fi
KIT=${1:-$ROOT/.gpu-kit}
# Debian 12 names. The -dev packages hold headers and CMake files; libsqlite3-0 and libssl3 the
# shared libraries those -dev packages' .so links point to.
PACKAGES=(libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libeigen3-dev googletest
  libsqlite3-dev libsqlite3-0 libssl-dev libssl3 libgloo-dev)

say() { printf 'gpu-kit: %s\n' "$*" >&2; }
command -v apt-get >/dev/null || { say "needs a Debian machine (apt-get download)"; exit 1; }

mkdir -p "$KIT"
KIT=$(cd "$KIT" && pwd)
rm -f "$KIT"/*.deb
# apt-get download as root writes through the _apt user unless the folder is its own.
if ! (cd "$KIT" && apt-get download "${PACKAGES[@]}" >/dev/null 2>"$KIT/download.log"); then
  say "apt-get download failed; updating the package lists once"
  apt-get update >/dev/null 2>&1 || true
  (cd "$KIT" && apt-get download "${PACKAGES[@]}" >/dev/null 2>"$KIT/download.log") ||
    { cat "$KIT/download.log" >&2; say "could not download: ${PACKAGES[*]}"; exit 1; }
fi
n=$(find "$KIT" -maxdepth 1 -name '*.deb' | wc -l)
[ "$n" -eq "${#PACKAGES[@]}" ] || { say "expected ${#PACKAGES[@]} packages, got $n"; exit 1; }
# What the kit holds, for the preflight and the notes.
# shellcheck disable=SC2016 # dpkg-deb's format, not the shell's
(cd "$KIT" && for f in *.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$f"; done) > "$KIT/MANIFEST"
size=$(du -sk "$KIT" | awk '{print $1}')
say "${#PACKAGES[@]} packages, $((size / 1024)) MiB ($size KiB) in $KIT"
echo "$KIT $size KiB"
