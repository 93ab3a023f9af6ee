#!/usr/bin/env bash
# Instructions per captured frame of one native walk, gmt_unwind against libunwind's
# unw_backtrace (per-thread cache), counted by valgrind's callgrind.
#
# usage: bench/unwind.sh [BUILD_DIR]
#
# bench_unwind walks DEPTH frames ITERS times; each walker runs under callgrind with N1 and N2
# iterations, and the difference of the two totals divided by N2-N1 is one walk with start-up,
# the first (cache-filling) walk and exit cancelled out. Per frame: that divided by DEPTH.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bin="$build/bench/bench_unwind"
command -v valgrind >/dev/null || { echo "unwind.sh: valgrind not found" >&2; exit 2; }
[[ -x $bin ]] || { echo "unwind.sh: build $build first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n1=1000 n2=3000

instr() { # walker depth iters -> total instructions
  local f="$out/cg-$1-$2-$3.out"
  valgrind --tool=callgrind --callgrind-out-file="$f" "$bin" "$1" "$2" "$3" >/dev/null 2>&1
  awk '/^totals:/ {print $2; exit}' "$f"
}

printf "%-6s %-10s %12s %12s\n" depth walker instr/walk instr/frame
for depth in 12 32 64; do
  for w in libunwind gmt; do
    a=$(instr "$w" "$depth" $n1)
    b=$(instr "$w" "$depth" $n2)
    awk -v d="$depth" -v w="$w" -v a="$a" -v b="$b" -v n=$((n2 - n1)) \
      'BEGIN {printf "%-6d %-10s %12.1f %12.1f\n", d, w, (b - a) / n, (b - a) / n / d}'
  done
done
