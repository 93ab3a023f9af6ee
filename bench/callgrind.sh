#!/usr/bin/env bash
# Instructions the tracer adds per cudaMalloc+cudaFree pair on the stand-in CUDA, counted by
# valgrind's callgrind (stable on a noisy shared machine), plus medians of wall time.
#
# usage: bench/callgrind.sh [BUILD_DIR] [WALL_REPEATS]
#   GMT_CALLGRIND_LIB=PATH traces with another libgpumemtrace.so (an older build) against
#   BUILD_DIR's bench and stand-in, so two libraries are compared on the same native figure.
#   GMT_CALLGRIND_BENCH=driver measures cuMemAlloc_v2+cuMemFree_v2 pairs instead
#   (bench_driver_pairs: the driver API called directly, as a program on the static cudart
#   does, so the driver wrappers record each call themselves with no runtime hook above).
#
# Instructions: bench_pairs runs with N1 and N2 pairs under callgrind for each setting; the
# difference of the two totals divided by N2-N1 is the cost of one pair with start-up and
# exit (report writing) cancelled out. "added" is that minus the native figure. The totals
# count every thread, so they include work that grows with wall time rather than with pairs
# (the writer thread's periodic sampling, a longer timeline in the exit report), and valgrind
# slows wall time down: the "caller" columns count the thread that made the pairs alone, the
# per-pair cost of the hooks themselves.
# Settings: native; traced with the default depth (32; the bench's stack is shallow, ~10
# frames); traced with GPUMEMTRACE_STACK_DEPTH=0 (stacks off).
# Wall: WALL_REPEATS interleaved runs of 200000 pairs (1 thread) per setting, median ns/pair.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-5}
case ${GMT_CALLGRIND_BENCH:-runtime} in
  runtime) bin="$build/bench/bench_pairs" ;;
  driver) bin="$build/bench/bench_driver_pairs" ;;
  *) echo "callgrind.sh: GMT_CALLGRIND_BENCH is runtime or driver" >&2; exit 2 ;;
esac
lib=${GMT_CALLGRIND_LIB:-$build/src/libgpumemtrace.so} # another build's library, same bench and stand-in
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$lib"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind not found" >&2; exit 2; }
[[ -x $bin && -f $lib ]] || { echo "callgrind.sh: build $build first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A small stand-in: valgrind cannot reserve the stand-in's default 256 GiB of address space.
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet
n1=2000 n2=6000
settings=(native default off)

run_setting() { # setting, then the command
  local s=$1
  shift
  case $s in
    native) "$@" ;;
    default) LD_PRELOAD="$lib" "$@" ;;
    off) LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=0 "$@" ;;
  esac
}

instr() { # setting pairs -> "total t1 t2 ...": all threads' instructions, then each thread's
  local f="$out/cg-$1-$2.out"
  run_setting "$1" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$f" \
    "$bin" 1 "$2" >/dev/null 2>&1
  local per=() t
  for t in "$f"-[0-9]*; do per+=("$(awk '/^totals:/ {print $2; exit}' "$t")"); done
  local sum=0 x
  for x in "${per[@]}"; do sum=$((sum + x)); done
  echo "$sum ${per[*]}"
}

# The thread that made the pairs: the one whose count grew most from N1 to N2 pairs (the
# program's main thread, the tracer's writer thread and the bench's worker are separate files).
calling_thread_growth() { # "total t1 t2 ..." of N1, then of N2 -> instructions of that thread
  local -a a=($1) b=($2)
  local best=0 i
  for ((i = 1; i < ${#b[@]}; i++)); do
    local d=$((b[i] - ${a[i]:-0}))
    ((d > best)) && best=$d
  done
  echo "$best"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -A ipp tpp wall
for s in "${settings[@]}"; do
  a=$(instr "$s" $n1)
  b=$(instr "$s" $n2)
  ipp[$s]=$(((${b%% *} - ${a%% *}) / (n2 - n1)))
  tpp[$s]=$(($(calling_thread_growth "$a" "$b") / (n2 - n1)))
done
for ((r = 0; r < reps; r++)); do
  for s in "${settings[@]}"; do
    v=$(run_setting "$s" "$bin" 1 200000)
    wall[$s]+="${v#ns_per_pair } "
  done
done
printf "%-10s %14s %14s %14s %14s %12s %12s\n" setting instr/pair added_instr \
  caller/pair caller_added ns/pair added_ns
for s in "${settings[@]}"; do
  m=$(echo ${wall[$s]} | tr ' ' '\n' | median)
  base=$(echo ${wall[native]} | tr ' ' '\n' | median)
  awk -v s="$s" -v i="${ipp[$s]}" -v n="${ipp[native]}" -v t="${tpp[$s]}" -v tn="${tpp[native]}" \
    -v m="$m" -v b="$base" \
    'BEGIN {printf "%-10s %14d %14d %14d %14d %12.1f %12.1f\n", s, i, i - n, t, t - tn, m, m - b}'
done
