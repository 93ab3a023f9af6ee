#!/usr/bin/env bash
# probe_lib.sh - builds the probe library (core/probe.h) with the bundle's options and copies
# it to DIR/libgpumemtrace-probes.so (its run path the installed one, $ORIGIN); bench/gpu_probe.sh
# runs it on the GPU machine.
# usage: bench/probe_lib.sh DIR   (DIR: a bundle's lib/ folder, so its run path finds libdw)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:?usage: probe_lib.sh DIR}
build="$root/build-probe-bundle"
opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEMTRACE_BUILD_TESTS=OFF -DGMT_BUNDLE_RPATH=ON
  -DGPUMEMTRACE_PROBES=ON -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON)
# Profile-guided as the bundle is (scripts/pgo.sh: GMT_BUNDLE_PGO, GMT_BUNDLE_TRAIN), so that
# the probes time the code the bundle ships.
bash "$root/scripts/pgo.sh" "$build" "${GMT_BUNDLE_TRAIN:-$root/build}" gpumemtrace -- "${opts[@]}"
# Its run path is $ORIGIN: DIR must hold the libraries it needs beyond libc (a bundle's lib/
# does). Carried alone, it loads nowhere that lacks them, and a preload that fails to load
# leaves the program untraced with one line of the loader's on stderr (session 14, run 3).
missing=()
while read -r need; do
  case $need in libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) ;;
    *) [[ -e $dest/$need ]] || missing+=("$need") ;;
  esac
done < <(readelf -d "$build/src/libgpumemtrace.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if ((${#missing[@]})); then
  echo "probe_lib.sh: $dest lacks ${missing[*]}, which the probe library loads from beside it" >&2
  exit 2
fi
cp "$build/src/libgpumemtrace.so" "$dest/libgpumemtrace-probes.so"
echo "$dest/libgpumemtrace-probes.so"
