#!/usr/bin/env bash
# Added cost per traced cudaMalloc+cudaFree pair on the stand-in with a deep stack (FRAMES
# nested calls, default 80), at GPUMEMTRACE_STACK_DEPTH 0 (stacks off), 16, 32 and 64: what
# native unwinding costs per captured frame. Interleaved repetitions, medians.
# usage: bench/depth.sh [BUILD_DIR] [REPEATS] [FRAMES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-7}
frames=${3:-80}
bin="$build/bench/bench_pairs"
lib="$build/src/libgpumemtrace.so"
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$lib"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet
export LD_LIBRARY_PATH="$build/tests/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A res=()
for ((r = 0; r < reps; r++)); do
  for s in native 0 16 32 64; do
    if [ "$s" = native ]; then
      v=$("$bin" 1 100000 4096 "$frames")
    else
      v=$(LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=$s "$bin" 1 100000 4096 "$frames")
    fi
    res[$s]+="${v#ns_per_pair } "
  done
done
base=$(echo "${res[native]}" | tr ' ' '\n' | grep . | median)
printf "%-10s %10s %10s  (frames above the loop: %s, %s repetitions)\n" depth ns/pair added "$frames" "$reps"
for s in native 0 16 32 64; do
  m=$(echo "${res[$s]}" | tr ' ' '\n' | grep . | median)
  printf "%-10s %10.1f %10.1f\n" "$s" "$m" "$(echo "$m - $base" | bc -l)"
done
