#!/usr/bin/env bash
# Added cost per traced cudaMalloc+cudaFree pair on the stand-in runtime.
# usage: bench/run.sh [BUILD_DIR] [REPEATS]
# For each thread count (1, 8) and tracer setting (native, stacks off, depth 16, depth 32)
# runs bench_pairs REPEATS times, interleaving the settings so that machine noise hits them
# alike, and prints the median ns/pair, the added ns/pair against native and the ratio.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-7}
bin="$build/bench/bench_pairs"
lib="$build/src/libgpumemtrace.so"
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$lib"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf "%-8s %-12s %12s %12s %8s\n" threads setting ns/pair added ratio
for threads in 1 8; do
  pairs=$(( threads == 1 ? 200000 : 50000 ))
  declare -A res=()
  for ((r = 0; r < reps; r++)); do
    for setting in native off d16 d32; do
      case $setting in
        native) v=$("$bin" "$threads" "$pairs") ;;
        off) v=$(LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=0 "$bin" "$threads" "$pairs") ;;
        d16) v=$(LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=16 "$bin" "$threads" "$pairs") ;;
        d32) v=$(LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=32 "$bin" "$threads" "$pairs") ;;
      esac
      res[$setting]+="${v#ns_per_pair } "
    done
  done
  base=$(echo ${res[native]} | tr ' ' '\n' | median)
  for setting in native off d16 d32; do
    m=$(echo ${res[$setting]} | tr ' ' '\n' | median)
    awk -v t="$threads" -v s="$setting" -v m="$m" -v b="$base" \
      'BEGIN {printf "%-8s %-12s %12.1f %12.1f %8.2f\n", t, s, m, m - b, m / b}'
  done
  unset res
done
