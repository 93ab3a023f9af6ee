#!/usr/bin/env bash
# gpu_callgrind.sh - instructions a traced pair costs on a real GPU, by shared object, counted
# by valgrind's callgrind on the GPU machine (which has no profiler: this carries one there).
# Instruction counts do not move with the host's modes, which scatter the timed rows by more
# than the tracer costs (docs/PERFORMANCE.md, "Session 13").
#
# usage: bench/gpu_callgrind.sh carry DIR     on the build machine: copies valgrind (its
#                                             launcher binary, callgrind, the preload object and
#                                             the default suppressions) into DIR
#        bench/gpu_callgrind.sh BUNDLE [VG_DIR]   on the GPU machine: VG_DIR is carry's DIR
#                                             (default: valgrind on PATH)
# Environment: GMT_BENCH_OLD_LIB=PATH adds settings old-default and old-off (an older
# libgpumemtrace.so, counted in the same run); GMT_CG_PAIRS="N1 N2" (default "1000 3000";
# the async row runs batches of 500 pairs); GMT_CG_JOBS runs at once (default: the CPUs).
# Needs nvcc and python3. About 15 seconds on the H200 host.
#
# Rows: pair   one thread, cudaMalloc + cudaFree, 4-64 KiB (pairs.c "threads 1 N": the 16-thread
#              row's call, alone)
#       async  cudaMallocAsync + cudaFreeAsync, 64-320 KiB, from 32 frames, on a thread started
#              once main made the context (pairs.c "async-worker N": on the main thread, CUDA's
#              start-up would move the count by millions between runs).
# Settings: native; default; off (stacks off); cupti and cupti-off (GPUMEMTRACE_BACKEND=cupti);
# cupti-empty (an empty CUPTI callback: the driver's and CUPTI's dispatch alone); q-ctxdev,
# q-ctxcur, q-rtdev (native, asking cuCtxGetDevice, cuCtxGetCurrent or cudaGetDevice once a
# pair, as a tracer may: what the query costs); old-default, old-off.
# Columns: instructions a pair of the thread that made the pairs (start-up and exit cancel out
# in the difference of two runs), over native, and by object.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ ${1:-} == carry ]]; then
  dir=${2:?usage: gpu_callgrind.sh carry DIR}
  bin=$(command -v valgrind.bin || true)
  [[ -n $bin ]] || bin=$(command -v valgrind)
  lib=$(dirname "$(find /usr/libexec/valgrind /usr/lib/x86_64-linux-gnu/valgrind \
    -name 'callgrind-amd64-linux' -print -quit 2>/dev/null)")
  [[ -x $bin && -d $lib ]] || { echo "gpu_callgrind.sh: valgrind not found" >&2; exit 2; }
  # Debian's valgrind is a shell script around valgrind.bin; the binary finds its tools
  # through VALGRIND_LIB.
  file "$bin" | grep -q 'shell script' && bin=$bin.bin
  mkdir -p "$dir/lib"
  cp "$bin" "$dir/valgrind.bin"
  cp "$lib/callgrind-amd64-linux" "$lib/vgpreload_core-amd64-linux.so" "$lib/default.supp" \
    "$dir/lib/"
  echo "$dir"
  exit 0
fi
bundle=$(cd "${1:?usage: gpu_callgrind.sh BUNDLE [VG_DIR]}" && pwd)
lib="$bundle/lib/libgpumemtrace.so"
[[ -f $lib ]] || { echo "gpu_callgrind.sh: no $lib" >&2; exit 2; }
if [[ -n ${2:-} ]]; then
  vg=$(cd "$2" && pwd)/valgrind.bin
  export VALGRIND_LIB=$(cd "$2" && pwd)/lib
else
  vg=$(command -v valgrind || true)
fi
[[ -x $vg ]] || { echo "gpu_callgrind.sh: no valgrind (give carry's DIR)" >&2; exit 2; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "gpu_callgrind.sh: nvcc not found (set NVCC)" >&2; exit 2; }
cuda_home=${CUDA_HOME:-$(cd "$(dirname "$nvcc")/.." && pwd)}
old=${GMT_BENCH_OLD_LIB:-}
[[ -z $old || -f $old ]] || { echo "gpu_callgrind.sh: GMT_BENCH_OLD_LIB=$old is not a file" >&2; exit 2; }
read -r n1 n2 <<<"${GMT_CG_PAIRS:-1000 3000}"
((n2 > n1 && n1 > 0)) || { echo "gpu_callgrind.sh: GMT_CG_PAIRS wants N1 < N2" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$nvcc" -x c++ -O2 -cudart shared -o "$work/pairs" "$here/gpu/pairs.c" -ldl -lpthread || exit 1
# shellcheck source=bench/gpu/settings.sh
. "$here/gpu/settings.sh"
cupti_probe=""
if gmt_build_cupti_empty "$cuda_home" "$here/gpu/cupti_empty.c" "$work/cupti_empty.so"; then
  cupti_probe="$work/cupti_empty.so"
else
  echo "gpu_callgrind.sh: CUPTI probe not built: cupti-empty skipped" >&2
fi
export GPUMEMTRACE_OUTPUT="$work/r-%p.json" GPUMEMTRACE_LOG=quiet

setting_pre() { # setting -> the array pre (its environment)
  case $1 in
    cupti-empty) pre=(LD_PRELOAD="$cupti_probe") ;;
    q-*) pre=(PAIRS_QUERY="${1#q-}") ;;
    old-default) gmt_setting_env old ;;
    old-off) pre=(LD_PRELOAD="$old" GPUMEMTRACE_STACK_DEPTH=0) ;;
    *) gmt_setting_env "$1" ;;
  esac
}
settings="native default off cupti cupti-off"
[[ -n $cupti_probe ]] && settings="$settings cupti-empty"
[[ -n $old ]] && settings="$settings old-default old-off"
declare -A args=([pair]="threads 1" [async]="async-worker")
# A function only the pairs' thread runs (pairs.c), which tells it from main and the writer.
declare -A thread_fn=([pair]=descend [async]=nest)
rows="pair async"
row_settings() { # row -> its settings (the native queries belong to the pair row)
  echo "$settings"
  [[ $1 == pair ]] && echo q-ctxdev q-ctxcur q-rtdev
}

one() { # row setting pairs
  local f="$work/cg-$1-$2-$3" pre=()
  setting_pre "$2"
  env "${pre[@]}" "$vg" --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$f" "$work/pairs" ${args[$1]} "$3" >"$f.log" 2>&1
  # A run that ended early still leaves its counts: only one that printed its result counts.
  grep -q '^us_per_' "$f.log" || { echo "gpu_callgrind.sh: $1 $2 $3 failed:" \
    "$(grep -v '^==' "$f.log" | tail -2)" >&2; touch "$f.failed"; }
}
jobs_max=${GMT_CG_JOBS:-$(nproc 2>/dev/null || echo 4)}
for r in $rows; do
  for s in $(row_settings "$r"); do
    for n in "$n1" "$n2"; do
      while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n; done
      one "$r" "$s" "$n" &
    done
  done
done
wait

printf "%-6s %-12s %9s %8s %8s %8s %8s %8s %8s\n" row setting total added tracer libcuda \
  libc cudart cupti
declare -A base
obj() { # object name prefix -> its instructions a pair in $out
  awk -v k="$1" '$1 == "object" && index($2, k) == 1 {s += $3} END {print s + 0}' <<<"$out"
}
for r in $rows; do
  for s in $(row_settings "$r"); do
    if [[ -e $work/cg-$r-$s-$n1.failed || -e $work/cg-$r-$s-$n2.failed ]]; then
      printf "%-6s %-12s %9s\n" "$r" "$s" failed
      continue
    fi
    out=$(python3 "$here/callgrind_objects.py" --thread-fn "${thread_fn[$r]}" \
      "$work/cg-$r-$s-$n1" "$work/cg-$r-$s-$n2" \
      $((n2 - n1)) libgpumemtrace 2>&1) || { echo "$r $s: $out" >&2; continue; }
    echo "$out" | sed "s/^/$r $s /" >>"$work/all.txt"
    tot=$(awk '$1 == "total" {print $2}' <<<"$out")
    [[ $s == native ]] && base[$r]=$tot
    printf "%-6s %-12s %9d %8d %8d %8d %8d %8d %8d\n" "$r" "$s" "$tot" $((tot - ${base[$r]:-tot})) \
      "$(obj libgpumemtrace)" "$(obj libcuda)" "$(obj libc.so)" "$(obj libcudart)" "$(obj libcupti)"
  done
done
echo
echo "the tracer's functions (instructions a pair):"
grep ' function ' "$work/all.txt" | awk '$2 ~ /^(default|off)$/'
