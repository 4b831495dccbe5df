#!/usr/bin/env bash
# Builds an example plugin out of tree, the way a team builds its own: install Lockstep's plugin
# SDK (the header and the CMake package LockstepPlugin) from a Lockstep build, then configure and
# build the plugin against that install only.
#
# usage: examples/plugins/build-example.sh LOCKSTEP_BUILD_DIR EXAMPLE_NAME
#   -> LOCKSTEP_BUILD_DIR/examples/plugins/EXAMPLE_NAME/lib<EXAMPLE_NAME>.so
set -euo pipefail
build=$(cd "${1:?usage: build-example.sh LOCKSTEP_BUILD_DIR EXAMPLE_NAME}" && pwd)
name=${2:?usage: build-example.sh LOCKSTEP_BUILD_DIR EXAMPLE_NAME}
here=$(cd "$(dirname "$0")" && pwd)
sdk=$build/plugin-sdk
out=$build/examples/plugins/$name

cmake --install "$build" --prefix "$sdk" --component plugin_sdk >/dev/null
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f "$out/CMakeCache.txt" ] || cmake -S "$here/$name" -B "$out" "${gen[@]}" \
  -DCMAKE_PREFIX_PATH="$sdk" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out" >&2
ls "$out/lib$name.so"
