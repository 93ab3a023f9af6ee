#!/usr/bin/env bash
# Instructions of the live table alone (bench/bench_table.c), counted by callgrind.
#
# usage: bench/table_callgrind.sh [BUILD_DIR]
#
# pair: one remove + one insert on 64 recycled keys, (I(60000) - I(20000)) / 40000, start-up
#       cancelled out. fill: one insert while filling to 1M live (growth and migration
#       included), (I(0 pairs, 1M) - I(0 pairs, 500k)) / 500000.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bin="$build/bench/bench_table"
command -v valgrind >/dev/null || { echo "table_callgrind.sh: valgrind not found" >&2; exit 2; }
[[ -x $bin ]] || { echo "table_callgrind.sh: build $build first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
instr() { # args -> total instructions
  local f="$out/cg-$1-$2.out"
  valgrind --tool=callgrind --callgrind-out-file="$f" "$bin" "$@" >"$f.txt" 2>/dev/null
  awk '/^totals:/ {print $2; exit}' "$f"
}
a=$(instr 20000 64)
b=$(instr 60000 64)
echo "pair (64 live): $(((b - a) / 40000)) instructions   [$(cat "$out/cg-60000-64.out.txt")]"
a=$(instr 0 500000)
b=$(instr 0 1000000)
echo "fill (to 1M):   $(((b - a) / 500000)) instructions per insert   [$(cat "$out/cg-0-1000000.out.txt")]"
