#!/usr/bin/env bash
# Added cost per traced cudaMalloc+cudaFree pair with and without GPUMEMTRACE_STATE, on the
# stand-in runtime (docs/PERFORMANCE.md, "State file").
# usage: bench/state.sh [BUILD_DIR] [REPEATS] [STATE_DIR]
# Interleaves native, traced (state in memory) and traced with a state file in STATE_DIR
# (default /dev/shm), stacks off and at depth 32, and prints median ns/pair. (No callgrind
# figure: the stand-in driver reserves 256 GiB of address space, more than valgrind allows.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-7}
sdir=${3:-/dev/shm}
bin="$build/bench/bench_pairs"
lib="$build/src/libgpumemtrace.so"
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$lib"
out=$(mktemp -d)
trap 'rm -rf "$out" "$sdir"/gmt-bench-*' EXIT
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
settings="native mem0 file0 mem32 file32"
run() {
  case $1 in
    native) "$bin" 1 200000 ;;
    mem0) LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=0 "$bin" 1 200000 ;;
    file0) LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=0 GPUMEMTRACE_STATE="$sdir/gmt-bench-%p" \
      "$bin" 1 200000 ;;
    mem32) LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=32 "$bin" 1 200000 ;;
    file32) LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=32 GPUMEMTRACE_STATE="$sdir/gmt-bench-%p" \
      "$bin" 1 200000 ;;
  esac
}
declare -A res=()
for ((r = 0; r < reps; r++)); do
  for s in $settings; do
    v=$(run "$s")
    res[$s]+="${v#ns_per_pair } "
  done
done
base=$(echo ${res[native]} | tr ' ' '\n' | median)
printf "%-8s %12s %12s\n" setting ns/pair added
for s in $settings; do
  m=$(echo ${res[$s]} | tr ' ' '\n' | median)
  awk -v s="$s" -v m="$m" -v b="$base" 'BEGIN {printf "%-8s %12.1f %12.1f\n", s, m, m - b}'
done
