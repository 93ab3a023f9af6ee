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
# Profile-guided as the bundle is (scripts/bundle.sh: GMT_BUNDLE_PGO, GMT_BUNDLE_TRAIN), so
# that the probes time the code the bundle ships.
train=${GMT_BUNDLE_TRAIN:-$root/build}
pgo=${GMT_BUNDLE_PGO:-auto}
if [[ $pgo == auto ]]; then
  [[ -x $train/bench/bench_async_pairs && -f $train/standin/libcudart.so ]] && pgo=1 || pgo=0
fi
if [[ $pgo == 1 ]]; then
  bash "$root/scripts/pgo.sh" "$build" "$train" gpumemtrace -- "${opts[@]}"
else
  cmake -S "$root" -B "$build" -G Ninja "${opts[@]}" -DGPUMEMTRACE_PGO= >/dev/null
  cmake --build "$build" --target gpumemtrace >/dev/null
fi
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
