#!/usr/bin/env bash
# probe_lib.sh - builds the probe library (core/probe.h) with the bundle's options and copies
# it to DIR/libgpumemtrace-probes.so (its run path the installed one, $ORIGIN); bench/gpu_probe.sh
# runs it on the GPU machine.
# usage: bench/probe_lib.sh DIR   (DIR: a bundle's lib/ folder, so its run path finds libdw)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:?usage: probe_lib.sh DIR}
build="$root/build-probe-bundle"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUMEMTRACE_BUILD_TESTS=OFF -DGMT_BUNDLE_RPATH=ON -DGPUMEMTRACE_PROBES=ON \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON >/dev/null
cmake --build "$build" --target gpumemtrace >/dev/null
cp "$build/src/libgpumemtrace.so" "$dest/libgpumemtrace-probes.so"
echo "$dest/libgpumemtrace-probes.so"
